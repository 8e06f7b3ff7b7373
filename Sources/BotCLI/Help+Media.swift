/// `pubbot help media`: what follows its usage line.
extension Help {
    static let mediaDetails = """


        Encodes the synthetic video (each simulcast layer) and audio once with the project's own
        VP8 (or H.264, VP9) and Opus encoders into DIR (default Media/replay, Media/replay-h264):
        manifest.txt, one IVF file per layer and the Opus frames. Load bots replay these loops.

        Options:
          --out DIR                 where to write (default Media/replay, Media/replay-h264)
          --codec vp8|h264|vp9|av1  the video codec of the loops (default vp8)
          --seconds N               loop length (default 4)
          --keyframe-interval D     a key frame every D (default 1s; PLIs are answered at the next one)
          --layers LADDER           simulcast ladder (default 640x360 + 320x180, the usual load-test
                                    publisher; e.g. 1280x720@30:2500k,640x360@30:500k,320x180@30:150k)
          --fps N                   frame rate (default 30)

        media export writes the synthetic source itself (what pubbot encodes, stamps included) as
        YUV4MPEG2 — for Chromium's fake camera (--use-file-for-fake-video-capture=FILE), ffmpeg or
        another sender. pubbot's receiver measures what they send against the source drawn at the
        decoded size: a true figure while they send the exported size; a sender that scales it
        down sends its own downscale, which pubbot does not draw (the figure is then too low).
          --y4m FILE                where to write
          --content easy|natural|hard
                                    the scene (default natural; as publish --content)
          --size WxH                picture size (default 1280x720)
          --seconds N               length (default 10; 1…600)
          --fps N                   frame rate (default 30)
        """
}
