public import SRTP
import Platform

extension SRTPKey {
    /// A fresh random key for one run, from the OS's secure random source (drivers only: the
    /// SRTP module itself draws nothing).
    public static func random(suite: SRTPSuite) -> SRTPKey {
        SRTPKey(suite: suite, material: SecureRandom.bytes(suite.keyLength))
    }
}
