internal import COpus

/// libopus encoder: 48 kHz mono, 20 ms frames, VOIP application, in-band FEC on.
public final class OpusAudioEncoder {
    static let sampleRate = 48_000
    public static let frameSamples = 960
    let encoder: OpaquePointer
    public let bitrate: Int

    public init(bitrate: Int = 32_000, inbandFEC: Bool = true, expectedLossPercent: Int = 10) throws(CodecError) {
        var err: Int32 = 0
        guard let e = opus_encoder_create(Int32(Self.sampleRate), 1, copus_application_voip(), &err), err == copus_ok() else {
            throw CodecError("opus_encoder_create", code: err)
        }
        encoder = e
        self.bitrate = bitrate
        _ = copus_set_bitrate(e, Int32(bitrate))
        _ = copus_set_inband_fec(e, inbandFEC ? 1 : 0)
        // FEC is only produced when the encoder expects loss.
        _ = copus_set_packet_loss_perc(e, Int32(expectedLossPercent))
        _ = copus_set_complexity(e, 5)
        _ = copus_set_dtx(e, 0)
        _ = copus_set_signal_voice(e)
    }

    deinit { opus_encoder_destroy(encoder) }

    /// Encodes one 20 ms frame (960 samples) into `out` (resized to the packet).
    public func encode(_ pcm: [Int16], into out: inout [UInt8]) throws(CodecError) {
        precondition(pcm.count >= Self.frameSamples, "one 20 ms frame is 960 samples")
        if out.count < 1500 { out = [UInt8](repeating: 0, count: 1500) }
        let n = pcm.withUnsafeBufferPointer { p in
            out.withUnsafeMutableBufferPointer { o in
                opus_encode(encoder, p.baseAddress!, Int32(Self.frameSamples), o.baseAddress!, Int32(o.count))
            }
        }
        guard n > 0 else { throw CodecError("opus_encode", code: n) }
        out.removeSubrange(Int(n)...)
    }
}

/// libopus decoder: 48 kHz mono.
public final class OpusAudioDecoder {
    let decoder: OpaquePointer
    var pcm = [Int16](repeating: 0, count: 5760)

    public init() throws(CodecError) {
        var err: Int32 = 0
        guard let d = opus_decoder_create(48_000, 1, &err), err == copus_ok() else { throw CodecError("opus_decoder_create", code: err) }
        decoder = d
    }

    deinit { opus_decoder_destroy(decoder) }

    /// Decodes one packet; returns the number of samples and their peak absolute level.
    public func decode(_ packet: [UInt8]) throws(CodecError) -> (samples: Int, peak: Int) {
        let n = packet.withUnsafeBufferPointer { p in
            pcm.withUnsafeMutableBufferPointer { o in
                opus_decode(decoder, p.baseAddress, Int32(p.count), o.baseAddress!, Int32(o.count), 0)
            }
        }
        guard n >= 0 else { throw CodecError("opus_decode", code: n) }
        var peak = 0
        for i in 0..<Int(n) { peak = max(peak, abs(Int(pcm[i]))) }
        return (Int(n), peak)
    }
}
