// A fleet of pion/webrtc v3 publisher bots (Debian's golang-github-pion-webrtc.v3-dev, 3.1.56)
// in one process, for the send-path comparison with pubbot's `load --whip` bots: each bot is a
// PeerConnection publishing one VP8 layer and Opus to a WHIP endpoint, as pion's
// play-from-disk example publishes — TrackLocalStaticSample (pion packetizes and protects),
// the frames of an IVF file read once and looped every 1/fps, and 20 ms Opus frames from
// pubbot's replay loop (`audio.opusframes`: "PBOPUS01", then a little-endian 16-bit length
// before each frame). pion's default interceptors (NACK responder, sender/receiver reports,
// transport-wide sequence numbers), DTLS-SRTP, the loopback candidate included. Built offline
// by scripts/setup like pion_whip.go.
//
// Prints one JSON line when every bot has stopped:
//
//	{"event":"bots","bots":N,"connected":C,"failed":F,"videoFrames":N,"audioFrames":N}
package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/interceptor"
	"github.com/pion/webrtc"
	"github.com/pion/webrtc/pkg/media"
	"github.com/pion/webrtc/pkg/media/ivfreader"
)

var (
	whipURL  = flag.String("whip", "", "the WHIP endpoint's URL")
	bots     = flag.Int("bots", 10, "publisher bots")
	duration = flag.Duration("duration", 20*time.Second, "from the first bot's start to every bot's end (as pubbot load --duration)")
	ramp     = flag.Duration("ramp", 5*time.Second, "bots start evenly over this time")
	ivfPath  = flag.String("ivf", "Media/replay/1-640x360.ivf", "the VP8 layer (IVF) every bot sends")
	opusPath = flag.String("opus", "Media/replay/audio.opusframes", "the Opus frames every bot sends")

	connected, failed, videoFrames, audioFrames atomic.Int64
)

// The IVF file's frames and their rate.
func readIVF(path string) ([][]byte, time.Duration, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	r, h, err := ivfreader.NewWith(f)
	if err != nil {
		return nil, 0, err
	}
	if h.FourCC != "VP80" {
		return nil, 0, fmt.Errorf("%s holds %s, not VP8", path, h.FourCC)
	}
	var frames [][]byte
	for {
		frame, _, err := r.ParseNextFrame()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, 0, err
		}
		frames = append(frames, frame)
	}
	if len(frames) == 0 || h.TimebaseNumerator == 0 {
		return nil, 0, fmt.Errorf("%s has no frames", path)
	}
	// pubbot's IVF header: timebase denominator = fps, numerator 1.
	interval := time.Duration(float64(time.Second) * float64(h.TimebaseNumerator) / float64(h.TimebaseDenominator))
	return frames, interval, nil
}

func readOpusFrames(path string) ([][]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(b, []byte("PBOPUS01")) {
		return nil, fmt.Errorf("%s is not an opusframes file", path)
	}
	var frames [][]byte
	for i := 8; i+2 <= len(b); {
		n := int(binary.LittleEndian.Uint16(b[i:]))
		if n == 0 || i+2+n > len(b) {
			return nil, fmt.Errorf("%s is truncated", path)
		}
		frames = append(frames, b[i+2:i+2+n])
		i += 2 + n
	}
	return frames, nil
}

func newAPI() (*webrtc.API, error) {
	m := &webrtc.MediaEngine{}
	if err := m.RegisterDefaultCodecs(); err != nil {
		return nil, err
	}
	i := &interceptor.Registry{}
	if err := webrtc.RegisterDefaultInterceptors(m, i); err != nil {
		return nil, err
	}
	s := webrtc.SettingEngine{}
	s.SetIncludeLoopbackCandidate(true)
	s.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP4})
	return webrtc.NewAPI(webrtc.WithMediaEngine(m), webrtc.WithInterceptorRegistry(i), webrtc.WithSettingEngine(s)), nil
}

// One bot: offer with every candidate gathered, POST it, send once connected until the fleet's
// end, DELETE the session.
func bot(a *webrtc.API, video [][]byte, interval time.Duration, audio [][]byte, until time.Time) error {
	pc, err := a.NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		return err
	}
	defer pc.Close()
	vt, err := webrtc.NewTrackLocalStaticSample(webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeVP8}, "video", "pion")
	if err != nil {
		return err
	}
	at, err := webrtc.NewTrackLocalStaticSample(webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeOpus}, "audio", "pion")
	if err != nil {
		return err
	}
	for _, t := range []webrtc.TrackLocal{at, vt} {
		s, err := pc.AddTransceiverFromTrack(t, webrtc.RTPTransceiverInit{Direction: webrtc.RTPTransceiverDirectionSendonly})
		if err != nil {
			return err
		}
		// Read RTCP so the interceptors (NACK responder, reports) run, as the example does.
		go func(r *webrtc.RTPSender) {
			buf := make([]byte, 1500)
			for {
				if _, _, err := r.Read(buf); err != nil {
					return
				}
			}
		}(s.Sender())
	}
	up := make(chan struct{})
	var once sync.Once
	pc.OnICEConnectionStateChange(func(s webrtc.ICEConnectionState) {
		if s == webrtc.ICEConnectionStateConnected {
			once.Do(func() { close(up) })
		}
	})
	offer, err := pc.CreateOffer(nil)
	if err != nil {
		return err
	}
	gathered := webrtc.GatheringCompletePromise(pc)
	if err := pc.SetLocalDescription(offer); err != nil {
		return err
	}
	<-gathered
	resp, err := http.Post(*whipURL, "application/sdp", strings.NewReader(pc.LocalDescription().SDP))
	if err != nil {
		return err
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("WHIP answered %d", resp.StatusCode)
	}
	location := resp.Header.Get("Location")
	if err := pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: string(answer)}); err != nil {
		return err
	}
	select {
	case <-up:
	case <-time.After(10 * time.Second):
		return errors.New("ICE did not connect in 10 s")
	}
	connected.Add(1)
	end := time.After(time.Until(until))
	vtick, atick := time.NewTicker(interval), time.NewTicker(20*time.Millisecond)
	defer vtick.Stop()
	defer atick.Stop()
	vi, ai := 0, 0
	for {
		select {
		case <-vtick.C:
			if err := vt.WriteSample(media.Sample{Data: video[vi], Duration: interval}); err != nil {
				return err
			}
			vi = (vi + 1) % len(video)
			videoFrames.Add(1)
		case <-atick.C:
			if err := at.WriteSample(media.Sample{Data: audio[ai], Duration: 20 * time.Millisecond}); err != nil {
				return err
			}
			ai = (ai + 1) % len(audio)
			audioFrames.Add(1)
		case <-end:
			if location != "" {
				u := location
				if strings.HasPrefix(u, "/") {
					base := *whipURL
					if k := strings.Index(base[len("http://"):], "/"); k >= 0 {
						base = base[:len("http://")+k]
					}
					u = base + location
				}
				if req, err := http.NewRequest(http.MethodDelete, u, nil); err == nil {
					if r, err := http.DefaultClient.Do(req); err == nil {
						r.Body.Close()
					}
				}
			}
			return nil
		}
	}
}

func main() {
	flag.Parse()
	if *whipURL == "" || *bots < 1 {
		fmt.Fprintln(os.Stderr, "Usage: pion_bots -whip URL [-bots N] [-duration D] [-ramp D] [-ivf FILE] [-opus FILE]")
		os.Exit(64)
	}
	video, interval, err := readIVF(*ivfPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(2)
	}
	audio, err := readOpusFrames(*opusPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(2)
	}
	a, err := newAPI()
	if err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(2)
	}
	var wg sync.WaitGroup
	step := *ramp / time.Duration(*bots)
	until := time.Now().Add(*duration)
	for k := 0; k < *bots; k++ {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			time.Sleep(step * time.Duration(k))
			if err := bot(a, video, interval, audio, until); err != nil {
				failed.Add(1)
				fmt.Fprintf(os.Stderr, "bot %d: %v\n", k, err)
			}
		}(k)
	}
	wg.Wait()
	b, _ := json.Marshal(map[string]interface{}{
		"event": "bots", "bots": *bots, "connected": connected.Load(), "failed": failed.Load(),
		"videoFrames": videoFrames.Load(), "audioFrames": audioFrames.Load(),
	})
	fmt.Println(string(b))
}
