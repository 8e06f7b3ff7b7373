internal import CLinuxNet

/// Secure random bytes from the kernel.
public enum SecureRandom {
    public static func bytes(_ n: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: n)
        let rc = out.withUnsafeMutableBytes { clinux_random($0.baseAddress, n) }
        if rc != 0 {
            var g = SystemRandomNumberGenerator()
            for i in 0..<n { out[i] = UInt8.random(in: 0...255, using: &g) }
        }
        return out
    }

    public static func uint32() -> UInt32 {
        let b = bytes(4)
        return UInt32(b[0]) << 24 | UInt32(b[1]) << 16 | UInt32(b[2]) << 8 | UInt32(b[3])
    }
}
