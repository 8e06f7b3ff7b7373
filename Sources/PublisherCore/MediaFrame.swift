public import MediaCodecs

/// One encoded frame for the session to send: what the encoders (or replay loops) hand it,
/// across the media thread's mailbox in a driver or directly in virtual time.
public enum MediaFrame: Sendable {
    case video(EncodedVideoFrame)
    case audio(EncodedAudioFrame)
}
