/// Why a wire parser rejected its input. Parsers throw these and never trap on network bytes.
public enum RTPParseError: Error, Equatable, Sendable {
    /// Fewer bytes than the structure needs.
    case truncated
    /// Version field is not 2.
    case badVersion
    /// A length or count field points past the end of the data.
    case badLength
    /// Padding count is zero or larger than the payload.
    case badPadding
    /// A header-extension element is malformed.
    case badExtension
    /// A payload descriptor or payload header is malformed.
    case badPayload
}

/// Why a serializer could not write into caller storage.
public enum RTPWriteError: Error, Equatable, Sendable {
    /// The caller's buffer cannot hold the bytes; nothing useful was written.
    case bufferTooSmall(needed: Int, available: Int)
    /// A field value does not fit its wire encoding.
    case valueOutOfRange
    /// A packet pubbot does not interpret (kept as `.unknown`) cannot be written back.
    case unsupported
}
