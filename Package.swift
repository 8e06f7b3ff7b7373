// swift-tools-version:6.0
import PackageDescription

// pubbot: a headless test-publisher bot for real-time video.
// No package dependencies: the C libraries come in as system-library targets.
// The hot paths (packetizer, arena, send loop; the receiver's per-datagram path and the fleet's
// loops): no dynamic exclusivity checks in release builds (measured by `scripts/bench`: they
// cost ~10 % of a packet; 2 % of a 500-publisher receiver by perf; debug builds keep them).
//
// On x86-64 the hot modules' loops (and the bench's C loops) start on 32-byte boundaries and no
// branch crosses or ends on one: H.264's start-code scan measured 0.85× or 0.92× its C loop as
// unrelated code moved it (its loop starting mid-way through a 32-byte window or not); branches
// kept within windows alone still left 0.83–0.91×; with loops aligned too, 0.93–0.95× with and
// without 80 bytes of code moved ahead of it (`pubbot-bench packetize`, this machine's Xeon).
#if arch(x86_64)
    let branchAlignment = ["-Xllvm", "-x86-branches-within-32B-boundaries", "-Xllvm", "-align-loops=32"]
    let cBranchAlignment: [CSetting] = [
        .unsafeFlags(["-mbranches-within-32B-boundaries", "-falign-loops=32"], .when(configuration: .release))
    ]
#else
    let branchAlignment: [String] = []
    let cBranchAlignment: [CSetting] = []
#endif
let hot: [SwiftSetting] = [.unsafeFlags(["-enforce-exclusivity=unchecked"] + branchAlignment, .when(configuration: .release))]
// The SDP parser is optimized in debug builds too: the hostile-SDP tests push ~30 000 mutated
// offers and answers through it, 42 s of CPU unoptimized, 12 s optimized (bounds and overflow
// checks stay; the code tested is the code shipped).
let optimizedInTests: [SwiftSetting] = [.unsafeFlags(["-O"], .when(configuration: .debug))]

let package = Package(
    name: "pubbot",
    products: [
        .executable(name: "pubbot", targets: ["pubbot"]),
        .executable(name: "pubbot-bench", targets: ["pubbot-bench"])
    ],
    targets: [
        .systemLibrary(name: "CVPX", pkgConfig: "vpx", providers: [.apt(["libvpx-dev"])]),
        .systemLibrary(name: "COpus", pkgConfig: "opus", providers: [.apt(["libopus-dev"])]),
        // Cisco's openh264 (H.264 Constrained Baseline encoder and decoder, as Chrome uses).
        .systemLibrary(name: "COpenH264", pkgConfig: "openh264", providers: [.apt(["libopenh264-dev"])]),
        // libaom (AV1 encoder and decoder, real-time mode as libwebrtc uses it).
        .systemLibrary(name: "CAOM", pkgConfig: "aom", providers: [.apt(["libaom-dev"])]),
        // libyuv (no pkg-config file in Debian): the scaler libwebrtc uses for capture adaptation and
        // for comparing frames of different sizes.
        .systemLibrary(name: "CYUV", providers: [.apt(["libyuv-dev"])]),
        .systemLibrary(name: "CSRTP", pkgConfig: "libsrtp2", providers: [.apt(["libsrtp2-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .target(name: "CLinuxNet"),
        // Test-only: interposes malloc to count allocations per thread (see its header).
        .target(name: "CAllocCounter"),

        // The OS at the edge: clocks, threads and locks, secure random, terminal, process vitals.
        // Only drivers import it; the sessions get `now` passed in.
        .target(name: "Platform", dependencies: ["CLinuxNet"]),
        .target(name: "RTPCore", swiftSettings: hot),
        // OpenSSL's libcrypto for what is not SRTP: HMAC-SHA1 (STUN integrity), MD5, SHA-256.
        .target(name: "Crypto", dependencies: ["COpenSSL"]),
        // DTLS-SRTP (RFC 5764) over memory buffers: certificate, handshake, SRTP key export.
        .target(name: "DTLS", dependencies: ["COpenSSL", "SRTP"]),
        // WebRTC offer/answer: a general SDP document, the WHIP offer, what an answer decided.
        .target(name: "Signalling", dependencies: ["ICE"], swiftSettings: optimizedInTests),
        // One WebRTC transport, sans-IO: ICE and DTLS behind one socket (RFC 7983 demux).
        .target(name: "WebRTC", dependencies: ["ICE", "DTLS", "RTPCore", "Net", "SRTP"]),
        // The HTTP exchange of WHIP (RFC 9725) and WHEP, both directions, through libcurl: POST the
        // offer, the answer and Location back, DELETE; one clear message per failure.
        .target(name: "HTTPSignaling", dependencies: ["CCurl"]),
        // ICE (RFC 8445) agent, sans-IO: candidates, checks, nomination, consent (RFC 7675).
        .target(name: "ICE", dependencies: ["RTPCore"]),
        .target(name: "Stats"),
        .target(name: "Impairment", dependencies: ["RTPCore"]),
        .target(name: "Congestion", dependencies: ["RTPCore"], swiftSettings: hot),
        .target(name: "Preflight"),
        // Optimized in debug builds too: the live picture-quality measurement (PSNR and SSIM of
        // every decoded frame, the source drawn again) is per-pixel work the embedded receivers of
        // the integration tests do; unoptimized, it starved a pre-flight beside the other tests.
        .target(
            name: "MediaCodecs", dependencies: ["CVPX", "COpus", "COpenH264", "CAOM", "CYUV", "RTPCore"], swiftSettings: optimizedInTests),
        // Addresses and packet buffers (the arena the send path fills, the batch `recvmmsg` fills):
        // values the sessions hold; no socket is opened here.
        .target(name: "Net", dependencies: ["CLinuxNet"], swiftSettings: hot),
        // SRTP/SRTCP (RFC 3711, RFC 7714): keys and in-place protection, the transforms here on
        // OpenSSL's AES-CTR, AES-GCM and HMAC-SHA1 (libsrtp2 stays as the judge in SRTPTests and
        // the benchmark's baseline: Debian builds it on NSS, a cipher context per packet).
        .target(name: "SRTP", dependencies: ["COpenSSL", "RTPCore"], swiftSettings: hot),
        // The drivers' network edge: UDP sockets (sendmmsg/recvmmsg, GSO), TCP and TLS streams to
        // TURN servers, the machine's interfaces, random SRTP keys. Re-exports Net and SRTP.
        .target(
            name: "Transport", dependencies: ["Net", "SRTP", "CLinuxNet", "COpenSSL", "RTPCore", "ICE", "Platform"], swiftSettings: hot),
        // The publisher session, sans-IO: frames, datagrams and time in; datagrams, events and
        // deadlines out. No clock, thread, socket or OS random can be imported here.
        .target(
            name: "PublisherCore",
            dependencies: [
                "RTPCore", "MediaCodecs", "Net", "SRTP", "Stats", "Congestion", "WebRTC", "ICE", "DTLS", "Signalling", "Impairment"
            ],
            swiftSettings: hot),
        // Its drivers: the media and network threads of one publisher, the mailbox between them,
        // the socket side. Re-exports PublisherCore.
        .target(
            name: "PublisherEngine",
            dependencies: [
                "PublisherCore", "Platform", "RTPCore", "MediaCodecs", "Transport", "Stats", "Congestion", "WebRTC", "ICE", "Impairment",
                "Net"
            ],
            swiftSettings: hot),
        // The receiver session, sans-IO: the router's side of each publisher (SRTP, demux,
        // transport-cc, NACK, PLI, reports; the ICE-lite/DTLS endpoint of WHIP publishers) and the
        // subscriber behind it (reassembly, decoding, stamps), with the link emulators.
        .target(
            name: "Receiver",
            dependencies: ["RTPCore", "MediaCodecs", "Net", "SRTP", "Stats", "Impairment", "Congestion", "WebRTC", "ICE", "DTLS", "Crypto"],
            swiftSettings: hot),
        // Its driver: the receive thread, its socket and clock. Re-exports Receiver.
        .target(
            name: "ReceiverEngine",
            dependencies: [
                "Receiver", "Platform", "RTPCore", "MediaCodecs", "Transport", "Stats", "Impairment", "Congestion", "WebRTC", "ICE", "DTLS",
                "Crypto"
            ],
            swiftSettings: hot),
        // The pre-flight's driver: a real publisher (and the embedded receiver) sampled into the
        // sans-IO `PreflightProbe`, the verdict, the audio-only phase.
        .target(name: "PreflightRunner", dependencies: ["Platform", "Preflight", "PublisherEngine", "ReceiverEngine", "Simulation"]),
        // `pubbot load`: many replay bots (whole publisher sessions) on a few event loops.
        .target(
            name: "Fleet",
            dependencies: [
                "Platform", "PublisherEngine", "ReceiverEngine", "Transport", "MediaCodecs", "Stats", "WebRTCClient", "DTLS", "WebRTC",
                "RTPCore", "ICE"
            ],
            swiftSettings: hot),
        // The publisher and receiver sessions connected in virtual time (`pubbot simulate`, scenario tests).
        .target(name: "Simulation", dependencies: ["PublisherCore", "Receiver", "MediaCodecs", "Net", "SRTP", "Stats", "RTPCore"]),
        // A WebRTC client's set-up drivers: a WHIP publish (socket and candidates, the offer POSTed,
        // the answer applied), a WHEP subscription and the per-path connectivity check.
        .target(
            name: "WebRTCClient",
            dependencies: [
                "HTTPSignaling", "Signalling", "WebRTC", "ICE", "DTLS", "Crypto", "Transport", "PublisherEngine", "RTPCore", "Platform",
                "MediaCodecs", "ReceiverEngine"
            ]),
        // pubbot's small HTTP/1.1 server (metrics, the WHIP endpoint of `receive --whip-listen`).
        .target(name: "HTTPServer", dependencies: ["Platform", "COpenSSL"]),
        // `receive --whip-listen`: the WHIP endpoint in front of the receiver.
        .target(name: "WHIPEndpoint", dependencies: ["ReceiverEngine", "HTTPServer", "Signalling", "DTLS", "ICE", "RTPCore", "Platform"]),
        .target(
            name: "BotCLI",
            dependencies: [
                "HTTPSignaling", "WHIPEndpoint", "HTTPServer", "WebRTCClient", "DTLS", "Platform", "Fleet", "PreflightRunner",
                "PublisherEngine",
                "ReceiverEngine", "Simulation", "Transport", "Stats", "RTPCore", "MediaCodecs", "Impairment", "Congestion", "Preflight",
                "ICE", "Signalling", "WebRTC"
            ],
            // Output schemas, beside the code that emits them.
            exclude: ["stats.schema.json", "preflight.schema.json", "load-report.schema.json"]),
        .executableTarget(name: "pubbot", dependencies: ["BotCLI"]),
        // Benchmarks (`scripts/bench`): the hot path against C baselines compiled here, with
        // allocations counted by the interposed malloc.
        .target(
            name: "CBenchBaseline", dependencies: ["CSRTP"],
            cSettings: cBranchAlignment),
        .target(
            name: "Bench",
            dependencies: [
                "Platform", "CBenchBaseline", "RTPCore", "Transport", "MediaCodecs", "PublisherEngine", "Stats", "DTLS", "Fleet"
            ],
            swiftSettings: hot),
        .executableTarget(name: "pubbot-bench", dependencies: ["Bench", "CAllocCounter", "RTPCore"]),

        .testTarget(name: "RTPCoreTests", dependencies: ["RTPCore"]),
        .testTarget(name: "SRTPTests", dependencies: ["SRTP", "CSRTP", "Transport"]),
        .testTarget(name: "StatsTests", dependencies: ["Stats"]),
        .testTarget(name: "STUNTests", dependencies: ["RTPCore", "ICE", "Crypto"]),
        .testTarget(name: "ICETests", dependencies: ["ICE", "RTPCore", "Crypto"]),
        .testTarget(name: "DTLSTests", dependencies: ["DTLS", "Transport", "RTPCore"]),
        .testTarget(name: "HTTPSignalingTests", dependencies: ["HTTPSignaling", "Platform"]),
        .testTarget(name: "SignallingTests", dependencies: ["Signalling", "ICE", "RTPCore"]),
        // Shared by the test targets: loopback clients and helpers (no product code).
        .target(name: "TestSupport", dependencies: ["Platform"], path: "Tests/TestSupport"),
        .testTarget(name: "HTTPServerTests", dependencies: ["HTTPServer", "WHIPEndpoint", "Platform", "TestSupport"]),
        .testTarget(name: "WebRTCTests", dependencies: ["WebRTC", "ICE", "DTLS", "RTPCore", "Transport", "Crypto"]),
        .testTarget(name: "ImpairmentTests", dependencies: ["Impairment", "RTPCore"]),
        .testTarget(name: "PreflightTests", dependencies: ["Preflight"]),
        .testTarget(name: "CongestionTests", dependencies: ["Congestion", "Impairment", "RTPCore", "Preflight"]),
        .testTarget(name: "MediaCodecsTests", dependencies: ["MediaCodecs", "RTPCore"]),
        .testTarget(name: "TransportTests", dependencies: ["Platform", "Transport", "RTPCore"]),
        .testTarget(
            name: "PublisherEngineTests",
            dependencies: [
                "Platform", "PublisherEngine", "PublisherCore", "WebRTC", "ICE", "DTLS", "Crypto", "Transport", "RTPCore", "MediaCodecs",
                "Stats", "CAllocCounter", "Congestion", "Impairment", "Net"
            ]),
        .testTarget(
            name: "ReceiverEngineTests",
            dependencies: [
                "Platform", "ReceiverEngine", "Receiver", "Transport", "RTPCore", "MediaCodecs", "ICE", "DTLS", "WebRTC", "Crypto"
            ]),
        .testTarget(name: "BotCLITests", dependencies: ["BotCLI"]),
        .testTarget(
            name: "WebRTCClientTests",
            dependencies: ["WebRTCClient", "Signalling", "PublisherEngine", "MediaCodecs", "ICE", "Transport", "RTPCore"]),
        .testTarget(
            name: "IntegrationTests",
            dependencies: ["DTLS", "ICE", "Crypto", "Platform", "PublisherEngine", "ReceiverEngine", "Transport", "BotCLI", "TestSupport"]
        ),
        .testTarget(
            name: "SimulationTests",
            dependencies: [
                "Simulation", "Preflight", "PreflightRunner", "PublisherEngine", "ReceiverEngine", "MediaCodecs", "Transport",
                "Impairment", "Stats"
            ])
    ]
)

// Every import is internal unless it says `public import` (SE-0409): a module's public API
// names exactly the modules it exposes.
for target in package.targets where target.type != .system {
    target.swiftSettings = (target.swiftSettings ?? []) + [.enableUpcomingFeature("InternalImportsByDefault")]
}
