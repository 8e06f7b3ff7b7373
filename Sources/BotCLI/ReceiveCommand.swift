#if canImport(Glibc)
    import HTTPSignaling
    import Glibc
#endif
import ReceiverEngine
import MediaCodecs
import Transport
import Stats
import RTPCore
import Signalling
import Platform
import WHIPEndpoint
import HTTPServer
import DTLS
import ICE
import WebRTCClient

/// `pubbot receive`: decrypt, reassemble, decode and report.
enum ReceiveCommand {
    static let spec = OptionSpec(options: [
        "listen": .value, "key": .value, "sdp": .value, "srtp-suite": .value, "duration": .value, "json": .flag,
        "impair": .value, "downlink-impair": .value, "stats": .value, "stats-interval": .value, "prefer": .value,
        "no-decode": .flag, "max-publishers": .value, "decode-publishers": .value,
        "whip-listen": .value, "token": .value, "whep": .value, "ice-interface": .repeated, "strict": .flag, "no-ipv6": .flag,
        "ice-server": .repeated, "turn-username": .value, "turn-credential": .value, "ice-restart-at": .repeated,
        "tls-cert": .value, "tls-key": .value, "ca-file": .value, "ice-recover-after": .value, "ice-policy": .value,
        "no-trickle": .flag, "dump-frames": .value, "content": .value, "capture-size": .value
    ])

    static func run(_ args: ArraySlice<String>) throws(UsageError) -> Int32 {
        let o = try ParsedOptions.parse(args, spec: spec, command: "receive")
        if o.helpRequested { Output.out(Help.help("receive")! + "\n"); return 0 }
        Output.stdoutIsStats = o.value("stats") == "-"
        return execute(try plan(o))
    }

    /// How the media arrives.
    enum Mode {
        /// One SDES stream (or a fleet's) on `--listen`, keyed by `--key` or `--sdp`.
        case sdes
        /// A WHIP endpoint: each publisher's keys from its DTLS handshake.
        /// `iceServers`: announced to every publisher in the 201's `Link` headers (RFC 9725 §4.6).
        case whipListen(token: String?, iceServers: [ICEServerLink])
        /// A WHEP subscriber: the server's keys from DTLS, its numbers from its answer.
        case whep(WHIPOptions)
    }

    /// What the command line asks for, validated: nothing is opened yet but the stats output.
    struct Plan {
        var mode: Mode
        var config: ReceiverConfig
        var duration: Int64?
        var stats: (SubscriberStatsStream, Int64)?
        var json: Bool
        var whep: WHIPOptions? { if case let .whep(w) = mode { w } else { nil } }
        /// `--ice-restart-at` with --whep: when to restart the subscription's ICE (µs, in order).
        var iceRestarts: [Int64] = []
        /// `--ice-recover-after` with --whep: restart when the server's path is silent this long.
        var iceRecoverAfter: Int64?
        /// `--tls-cert`/`--tls-key` with --whip-listen: the endpoint serves HTTPS.
        var tls: TLSServerContext?
        /// `--dump-frames DIR`: the measured frames' files.
        var dumps: FrameDumps?
        var isWHIPListen: Bool { if case .whipListen = mode { true } else { false } }
    }

    static func plan(_ o: ParsedOptions) throws(UsageError) -> Plan {
        let (mode, key, listenText) = try modeAndKey(o)
        let whipListen = o.value("whip-listen") != nil
        let listen = try CommonOptions.address(listenText, option: whipListen ? "whip-listen" : "listen")
        let duration = try o.value("duration").map { d throws(UsageError) in try ValueParsers.duration(d, option: "duration") }
        var rc = try receiverConfig(o, listen: listen, key: key)
        var whep: WHIPOptions?
        if case let .whep(w) = mode {
            whep = w
            // Everything from the server arrives over the subscriber's downlink: emulated before
            // the transport sees it (the server's retransmissions and ICE/DTLS cross it too).
            rc.impairment = rc.downlinkImpairment
            rc.downlinkImpairment = nil
            rc.decodedPublishers = Int.max
        }
        let dumps = try o.value("dump-frames").map { d throws(UsageError) in try frameDumps(d, decoding: rc.decodeVideo) }
        if let dumps { rc.frameSinks = { ssrc in dumps.sink(ssrc: ssrc) } }
        let stats = try CommonOptions.statsWriter(o).map { (SubscriberStatsStream($0.0, viaServer: whep != nil), $0.1) }
        var plan = Plan(mode: mode, config: rc, duration: duration, stats: stats, json: o.has("json"))
        plan.dumps = dumps
        for r in o.all("ice-restart-at") {
            guard plan.whep != nil else {
                throw UsageError("--ice-restart-at needs --whep URL (the restart is a PATCH to the WHEP session, RFC 9725 §4.3.3)")
            }
            let at = try ValueParsers.duration(r, option: "ice-restart-at")
            guard at > 0 else { throw UsageError("--ice-restart-at must be after the start") }
            if let d = duration, at >= d { throw UsageError("--ice-restart-at \(r) is not before the run's end (--duration)") }
            plan.iceRestarts.append(at)
        }
        plan.iceRestarts.sort()
        if o.value("ice-recover-after") != nil && plan.whep == nil {
            throw UsageError("--ice-recover-after needs --whep URL (the restart is a PATCH to the WHEP session, RFC 9725 §4.3.3)")
        }
        plan.iceRecoverAfter = try CommonOptions.iceRecoverAfter(o, whip: plan.whep != nil)
        plan.tls = try tlsContext(o, listen: listen)
        if o.value("ca-file") != nil {
            guard plan.whep != nil else {
                throw UsageError("--ca-file needs --whep URL (the CA the WHEP server's certificate is checked with)")
            }
            try CommonOptions.caFile(o)
        }
        return plan
    }

    /// `--dump-frames DIR`: the directory made if missing (one level), refused when it cannot be
    /// written or nothing is decoded.
    static func frameDumps(_ dir: String, decoding: Bool) throws(UsageError) -> FrameDumps {
        guard decoding else { throw UsageError("--dump-frames needs decoded frames (not with --no-decode)") }
        guard !dir.isEmpty else { throw UsageError("invalid --dump-frames '' (a directory)") }
        if mkdir(dir, 0o755) != 0 && errno != EEXIST {
            throw UsageError("--dump-frames \(dir): \(String(cString: strerror(errno)))")
        }
        guard access(dir, W_OK) == 0 else { throw UsageError("--dump-frames \(dir): not a writable directory") }
        return FrameDumps(directory: dir)
    }

    /// `--tls-cert FILE --tls-key FILE` (PEM) with --whip-listen: HTTPS (OpenSSL, TLS 1.2+). A
    /// token over plain HTTP on an address other hosts reach crosses the network in clear: said.
    static func tlsContext(_ o: ParsedOptions, listen: SocketAddress) throws(UsageError) -> TLSServerContext? {
        let cert = o.value("tls-cert"), key = o.value("tls-key")
        guard cert != nil || key != nil else {
            if o.value("whip-listen") != nil, o.value("token") != nil || getenv("PUBBOT_WHIP_TOKEN") != nil,
                !listen.host.hasPrefix("127."), listen.host != "::1"
            {
                Output.err(
                    "warning: --token over plain HTTP on \(listen.host): the bearer token crosses the network in clear "
                        + "(serve HTTPS with --tls-cert FILE --tls-key FILE)\n")
            }
            return nil
        }
        guard o.value("whip-listen") != nil else { throw UsageError("--tls-cert and --tls-key go with --whip-listen HOST:PORT") }
        guard let cert, let key else { throw UsageError("--tls-cert and --tls-key go together (the certificate and its key, PEM)") }
        do { return try TLSServerContext(certificateFile: cert, keyFile: key) } catch { throw UsageError("--tls-cert/--tls-key: \(error)") }
    }

    /// The mode, the SRTP key (SDES; a placeholder where DTLS gives the keys) and where to listen.
    static func modeAndKey(_ o: ParsedOptions) throws(UsageError) -> (Mode, SRTPKey, String) {
        func env(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }
        if let url = o.value("whep") {
            for flag in ["key", "sdp", "listen", "srtp-suite", "whip-listen", "impair", "prefer", "max-publishers", "decode-publishers"]
            where o.value(flag) != nil {
                throw UsageError(
                    "--\(flag) does not apply to --whep (a subscriber to one server session; its downlink is --downlink-impair)")
            }
            guard url.lowercased().hasPrefix("http://") || url.lowercased().hasPrefix("https://"), url.count > 8 else {
                throw UsageError("invalid --whep '\(SignalingClient.redacted(url))' (an http:// or https:// URL of a WHEP endpoint)")
            }
            var w = WHIPOptions(endpoint: url, token: o.value("token") ?? env("PUBBOT_WHEP_TOKEN"))
            w.interfaces = o.all("ice-interface")
            w.strict = o.has("strict")
            // The subscriber's own STUN/TURN servers: asked from the receive socket before the
            // offer (server-reflexive candidates; a relayed one over UDP TURN, RFC 8656).
            for text in o.all("ice-server") {
                do { w.iceServers.append(try ICEServerURL.parse(text)) } catch { throw UsageError("invalid --ice-server \(error)") }
            }
            try CommonOptions.noIPv6(o, urls: [url], iceServers: w.iceServers)
            w.turnUsername = o.value("turn-username")
            w.turnCredential = o.value("turn-credential") ?? env("PUBBOT_TURN_CREDENTIAL")
            w.trickle = !o.has("no-trickle")
            if let p = o.value("ice-policy") {
                guard let policy = WHIPOptions.Policy(rawValue: p), policy == .all || policy == .relay else {
                    throw UsageError("invalid --ice-policy '\(p)' for --whep (all or relay)")
                }
                w.policy = policy
            }
            let turn = w.iceServers.filter(\.isTURN)
            if !turn.isEmpty && (w.turnUsername == nil || w.turnCredential == nil) {
                throw UsageError("a turn: --ice-server needs --turn-username and --turn-credential (or PUBBOT_TURN_CREDENTIAL)")
            }
            if turn.contains(where: { $0.transport != .udp }) {
                throw UsageError("--whep relays over UDP TURN only (turn:HOST:PORT), not TCP or TLS")
            }
            if w.policy == .relay && turn.isEmpty { throw UsageError("--ice-policy relay needs a --ice-server turn:HOST:PORT") }
            return (.whep(w), .random(suite: .gcm), "0.0.0.0:0") // WHEPReceiver.open binds toward the server
        }
        if o.value("ice-interface") != nil { throw UsageError("--ice-interface needs --whep URL") }
        if o.has("strict") { throw UsageError("--strict needs --whep URL") }
        if o.has("no-ipv6") {
            throw UsageError("--no-ipv6 needs --whep URL (an endpoint's family is its listening address: --whip-listen 0.0.0.0:PORT)")
        }
        if let whipListen = o.value("whip-listen") {
            for flag in ["key", "sdp", "listen", "srtp-suite"] where o.value(flag) != nil {
                throw UsageError("--\(flag) is for SDES receiving; --whip-listen negotiates ICE, DTLS and keys per publisher")
            }
            // The STUN/TURN servers the endpoint announces (RFC 9725 §4.6), TURN ones with the
            // long-term credentials given (sent to each publisher in the 201, never printed).
            var servers: [ICEServerLink] = []
            let user = o.value("turn-username"), credential = o.value("turn-credential") ?? env("PUBBOT_TURN_CREDENTIAL")
            for text in o.all("ice-server") {
                let u: ICEServerURL
                do { u = try ICEServerURL.parse(text) } catch { throw UsageError("invalid --ice-server \(error)") }
                if u.isTURN {
                    guard let user, let credential else {
                        throw UsageError("a turn: --ice-server needs --turn-username and --turn-credential (or PUBBOT_TURN_CREDENTIAL)")
                    }
                    servers.append(ICEServerLink(url: text, username: user, credential: credential))
                } else {
                    servers.append(ICEServerLink(url: text))
                }
            }
            return (
                .whipListen(token: o.value("token") ?? env("PUBBOT_WHIP_TOKEN"), iceServers: servers), .random(suite: .gcm), whipListen
            )
        }
        for flag in ["ice-server", "turn-username", "turn-credential"] where o.value(flag) != nil {
            throw UsageError("--\(flag) needs --whip-listen HOST:PORT (the servers it announces) or --whep URL (the subscriber's own)")
        }
        if o.value("ice-policy") != nil { throw UsageError("--ice-policy needs --whep URL") }
        if o.has("no-trickle") { throw UsageError("--no-trickle needs --whep URL") }
        if o.value("token") != nil { throw UsageError("--token needs --whip-listen HOST:PORT or --whep URL") }
        guard let path = o.value("sdp") else {
            guard o.value("key") != nil else { throw UsageError("missing --key B64 or --sdp FILE (the publisher's SRTP key)") }
            let key = try CommonOptions.key(o, suite: try CommonOptions.suite(o))
            guard let listen = o.value("listen") else { throw UsageError("missing --listen HOST:PORT") }
            return (.sdes, key, listen)
        }
        if o.value("key") != nil { throw UsageError("give either --key or --sdp, not both") }
        guard let text = readFile(path) else { throw UsageError("cannot read the SDP file '\(path)'") }
        let sd: SessionDescription
        do { sd = try SessionDescription.parse(text) } catch { throw UsageError("invalid SDP '\(path)': \(error)") }
        guard let crypto = sd.media.first(where: { $0.crypto != nil })?.crypto else {
            throw UsageError("the SDP '\(path)' has no a=crypto line")
        }
        guard let suite = SRTPSuite(sdesName: crypto.suite) else {
            throw UsageError("the SDP uses the unsupported SRTP suite \(crypto.suite)")
        }
        let key: SRTPKey
        do { key = try SRTPKey(base64: crypto.inlineKey, suite: suite) } catch { throw UsageError("the SDP's key is invalid: \(error)") }
        return (.sdes, key, o.value("listen") ?? (sd.address.contains(":") ? "[\(sd.address)]" : sd.address) + ":\(sd.media[0].port)")
    }

    /// The receiver's limits, decoding, emulated links and layer preference from the options.
    static func receiverConfig(_ o: ParsedOptions, listen: SocketAddress, key: SRTPKey) throws(UsageError) -> ReceiverConfig {
        var rc = ReceiverConfig(listen: listen, key: key)
        // One port serves a whole fleet of publishers (`pubbot load --to`), each by its source address.
        rc.maxPublishers =
            try o.value("max-publishers").map { m throws(UsageError) in
                guard let n = Int(m), (1...20_000).contains(n) else { throw UsageError("invalid --max-publishers '\(m)' (1…20000)") }
                return n
            } ?? 1024
        rc.maxStreams = rc.maxPublishers * 8
        rc.decodeVideo = !o.has("no-decode")
        if let t = o.value("content") { rc.sourceContent = try ValueParsers.content(t) }
        if let t = o.value("capture-size") {
            let (w, h) = try ValueParsers.size(t, option: "--capture-size", width: 16...4096, height: 16...2304)
            guard w * h <= PictureQuality.maxSamples else { throw UsageError("invalid --capture-size '\(t)' (at most 4096x2304 samples)") }
            rc.captureSize = (w, h)
        }
        rc.decodedPublishers =
            try o.value("decode-publishers").map { d throws(UsageError) in
                if d == "all" { return Int.max }
                guard let n = Int(d), n >= 0 else { throw UsageError("invalid --decode-publishers '\(d)' (a count or all)") }
                return n
            } ?? 4
        rc.impairment = try o.value("impair").map { t throws(UsageError) in try ValueParsers.impairment(t, option: "impair") }
        if let pref = o.value("prefer") {
            // 360p or 360p@15: the simulcast stream by height, the temporal layers by frame rate.
            let parts = pref.split(separator: "@")
            let h = parts.first.map { String($0.lowercased().filter { $0 != "p" }) }
            guard parts.count <= 2, let text = h, let height = Int(text), height >= 16, height <= 4320 else {
                throw UsageError("invalid --prefer '\(pref)' (e.g. 360p or 360p@15)")
            }
            rc.preferredHeight = height
            if parts.count == 2 {
                guard let fps = Int(parts[1]), fps >= 1, fps <= 60 else {
                    throw UsageError("invalid frame rate in --prefer '\(pref)' (e.g. 360p@15)")
                }
                rc.preferredFrameRate = fps
            }
        }
        rc.downlinkImpairment = try o.value("downlink-impair").map { t throws(UsageError) in
            try ValueParsers.impairment(t, option: "downlink-impair")
        }
        return rc
    }

    /// What runs while receiving: the receiver, and the WHIP endpoint or WHEP session around it.
    struct Running {
        var receiver: ReceiverEngine
        var endpoint: WHIPEndpoint?
        var whep: WHEPSubscription?
    }

    /// Receives until the duration ends, Ctrl-C or the WHEP session fails, and reports: 0, 130
    /// (interrupted) or 2 (nothing arrived, the key does not match, a peer or the machine failed).
    static func execute(_ plan: Plan) -> Int32 {
        var plan = plan
        let running: Running
        do { running = try start(&plan) } catch {
            Output.err("Error: \(error)\n")
            return 2
        }
        defer { running.endpoint?.stop() }
        defer { running.whep?.end() }
        let receiver = running.receiver
        if let whep = running.whep {
            Output.err(
                "WHEP session \(SignalingClient.redacted(whep.resource.resourceURL)) (media on UDP \(Self.mediaSocket(receiver.localAddress))); Ctrl-C to stop\n"
            )
            Output.deviations(whep.resource)
        } else if plan.isWHIPListen {
            Output.err(
                "WHIP endpoint \(plan.tls == nil ? "http" : "https")://\(urlHost(plan.config.listen.host)):\(receiver.localAddress.port)/whip (media on UDP \(Self.mediaSocket(receiver.localAddress))); Ctrl-C to stop\n"
            )
        } else {
            Output.err("listening on \(receiver.localAddress); Ctrl-C to stop\n")
        }
        let whep = running.whep
        let resource = whep?.spec.resource ?? ""
        var watchInterfaces: (@Sendable () -> (what: String, candidates: [ICECandidate])?)?
        if let whep { watchInterfaces = { whep.interfaceChange() } }
        let restarts = ICERestarts(
            whep != nil ? plan.iceRestarts : [], recoverAfter: whep != nil ? plan.iceRecoverAfter : nil,
            consentAge: { receiver.snapshot().webrtcPublishers.first?.transport?.consentAgeMicros },
            interfaceChange: watchInterfaces,
            request: { whep.map { $0.requestICERestart() } ?? .failure(WHIPConnectError("no WHEP session")) },
            apply: { r in
                receiver.restartPublisher(
                    resource: resource, local: r.local, remote: r.remote, candidates: r.remoteCandidates, localCandidates: r.localCandidates
                )
            },
            stopped: { Signals.isInterrupted },
            recovery: { receiver.snapshot().webrtcPublishers.first?.transport?.lastRestartRecoveryMicros.map { Int($0 / 1000) } })
        let watch = Watch(plan: plan, receiver: receiver, whep: running.whep != nil)
        watch.run()
        restarts.finish()
        let interrupted = Signals.isInterrupted
        receiver.stop()
        receiver.wait()
        Output.endProgress()
        if let e = plan.dumps?.finish() { Output.err("warning: --dump-frames: \(e)\n") }
        let deleteError = running.whep?.end()
        let r = receiver.snapshot()
        plan.stats?.0.emit(r, final: true) // the run's averages, with BYE events
        if plan.json {
            var doc = summaryJSON(r, running)
            if !plan.iceRestarts.isEmpty || plan.iceRecoverAfter != nil || !restarts.outcomes.value.isEmpty, case let .object(f) = doc {
                doc = .object(f + [("iceRestarts", .array(restarts.outcomes.value.map(\.json)))])
            }
            Output.out(doc.serialized(pretty: true) + "\n")
        } else if watch.whepFailure == nil || !r.streams.isEmpty {
            Output.out(table(r))
            if let endpoint = running.endpoint { Output.out(endpointText(endpoint, r)) }
            if let whep = running.whep { Output.out(whepText(whep, r)) }
        }
        if let e = deleteError { Output.err("warning: the WHEP session was not ended on the server: \(e)\n") }
        if let f = watch.whepFailure {
            Output.err("Error: WHEP: \(f)\n")
            return 2
        }
        if r.keyMismatchSuspected {
            if !watch.warned { Output.err("Error: \(r.keyMismatchMessage)\n") }
            return 2
        }
        if interrupted { return 130 }
        if r.packetsAccepted == 0 {
            Output.err("Error: \(nothingReceived(r, whep: running.whep != nil, seconds: Double(plan.duration ?? 0) / 1e6))\n")
            return 2
        }
        return 0
    }

    /// Why nothing was received: a WHEP transport that never connected (with its ICE and DTLS
    /// states), one that connected and carried no media, or no publisher at all.
    static func nothingReceived(_ r: ReceiverSnapshot, whep: Bool, seconds: Double) -> String {
        let within = seconds > 0 ? " in the run's \(Units.fixed(seconds, 1)) s" : ""
        guard whep else { return "nothing was received\(within)" }
        if let t = r.webrtcPublishers.first?.transport, t.srtpCipher == nil {
            return "WHEP: the WebRTC transport never connected\(within) (ICE \(t.iceState.rawValue), DTLS \(t.dtlsState.rawValue)): "
                + "nothing was received — with a longer --duration ICE says why when its checks run out"
        }
        if r.webrtcPublishers.first?.transport == nil {
            return "WHEP: the WebRTC transport never started\(within): nothing was received"
        }
        return "WHEP: connected, but the server sent no media\(within)"
    }

    /// Opens the receiver: subscribed to the WHEP server, behind a WHIP endpoint, or alone.
    static func start(_ plan: inout Plan) throws -> Running {
        if let w = plan.whep {
            // Bound toward the server, the subscription offered from it, the receiver started.
            let (r, subscription) = try WHEPReceiver.open(w, config: plan.config)
            return Running(receiver: r, whep: subscription)
        }
        guard case let .whipListen(token, iceServers) = plan.mode else {
            let r = try ReceiverEngine(config: plan.config)
            r.start()
            return Running(receiver: r)
        }
        // The media socket takes the same port number as the HTTP endpoint (UDP and TCP apart).
        // A wildcard offers every usable address of its family — both families for `[::]`, whose
        // socket is dual-stack (RFC 3493 §5.3) — and a numeric address itself.
        let listen = plan.config.listen
        // A wildcard's loopback addresses go last (the lowest priority): a publisher on this
        // same host bound to 127.0.0.1 cannot reach the interface's address (Linux drops a
        // loopback source on it), and a reply from the unbound socket leaves from the kernel's
        // choice of source, so that publisher connects through the loopback candidate.
        let ips: [[UInt8]]
        switch listen.host {
        case "0.0.0.0":
            let all = LocalInterfaces.hostAddresses(includeLoopback: true, ipv6: false)
            ips = all.filter { !$0.isLoopback }.map(\.ip) + all.filter(\.isLoopback).map(\.ip)
        case "::":
            let all = LocalInterfaces.hostAddresses(includeLoopback: true, ipv6: true)
            ips = all.filter { !$0.isLoopback }.map(\.ip) + all.filter(\.isLoopback).map(\.ip)
        default: ips = STUNAddress.parseIP(Substring(listen.host)).map { [$0] } ?? []
        }
        guard !ips.isEmpty else { throw NoCandidate(host: listen.host) }
        let certificate = try DTLSCertificate()
        plan.config.webrtc = WebRTCListenConfig(
            certificate: certificate, locals: ips.map { STUNAddress(ip: $0, port: UInt16(listen.port)) })
        // Port 0: the kernel gives the media socket (UDP) a port and the endpoint (TCP) takes the
        // same number — which another process may hold on TCP: then another UDP port is tried.
        var attempt = 0
        while true {
            let r = try ReceiverEngine(config: plan.config)
            let port = r.localAddress.port
            // Distinct priorities, IPv6 first (RFC 8421 §4: a dual-stack agent prefers IPv6; RFC
            // 8445 §5.1.2.1: a multihomed agent's candidates have unique local preferences).
            func loopback(_ ip: [UInt8]) -> Bool { ip.count == 4 ? ip[0] == 127 : ip == [UInt8](repeating: 0, count: 15) + [1] }
            let routable = ips.filter { !loopback($0) }, local = ips.filter(loopback)
            let ordered =
                routable.filter { $0.count == 16 } + routable.filter { $0.count == 4 } + local.filter { $0.count == 16 }
                + local.filter { $0.count == 4 }
            let candidates = ordered.enumerated().map { i, ip in
                ICECandidate.host(STUNAddress(ip: ip, port: UInt16(port)), localPreference: 65_535 - UInt32(i))
            }
            do {
                let endpoint = try WHIPEndpoint(
                    receiver: r, host: listen.host, port: port, token: token, certificate: certificate, candidates: candidates,
                    maxSessions: plan.config.maxPublishers, iceServers: iceServers.map { ($0.url, $0.username, $0.credential) },
                    tls: plan.tls)
                r.start()
                return Running(receiver: r, endpoint: endpoint)
            } catch {
                attempt += 1
                guard listen.port == 0, attempt < 20, error.description.contains("in use") else { throw error }
            }
        }
    }

    /// The media socket as the banner says it: a wildcard one serves every interface's address.
    static func mediaSocket(_ a: SocketAddress) -> String {
        a.isWildcard ? "port \(a.port) of each interface's address" : a.description
    }

    struct NoCandidate: Error, CustomStringConvertible {
        var host: String
        var description: String { "no address to offer as an ICE candidate for \(host) (no usable interface has one)" }
    }

    /// A host as a URL writes it: IPv6 in brackets (RFC 3986 §3.2.2).
    static func urlHost(_ host: String) -> String { host.contains(":") ? "[\(host)]" : host }

    static func readFile(_ path: String, limit: Int = 1 << 20) -> String? {
        guard let f = fopen(path, "r") else { return nil }
        defer { fclose(f) }
        var data = [UInt8]()
        var buf = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = fread(&buf, 1, buf.count, f)
            if n <= 0 { break }
            data += buf[0..<n]
            if data.count > limit { return nil }
        }
        return String(decoding: data, as: UTF8.self)
    }
}
