/// A libvpx or libopus call failed: the operation and the library's code/message.
public struct CodecError: Error, CustomStringConvertible, Sendable {
    public var operation: String
    public var code: Int32
    public var message: String

    public init(_ operation: String, code: Int32, message: String = "") {
        self.operation = operation
        self.code = code
        self.message = message
    }

    public var description: String { "\(operation) failed (code \(code))\(message.isEmpty ? "" : ": \(message)")" }
}
