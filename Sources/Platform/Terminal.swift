internal import CLinuxNet

/// Terminal detection for progress output.
public enum Terminal {
    public static func isTTY(_ fd: Int32) -> Bool { clinux_isatty(fd) != 0 }
}
