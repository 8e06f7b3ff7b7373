// A WHIP and WHEP endpoint on pion/webrtc v3 (Debian's golang-github-pion-webrtc.v3-dev,
// 3.1.56) for pubbot's interop tests: pion is strict about what it can attribute — an RTP stream
// it cannot map to a track (no a=ssrc, no MID+RID) is dropped ("Incoming unhandled RTP ssrc(…),
// OnTrack will not be fired"). Built offline by scripts/setup (GO111MODULE=off, GOPATH with
// Debian's Go sources). 127.0.0.1, port 0; prints "LISTENING <port>", then one JSON line per event:
//
//	{"event":"track","kind":"audio|video","rid":"…","ssrc":N,"codec":"…"}   when OnTrack fires
//	{"event":"stats","tracks":[{"kind":…,"rid":…,"ssrc":…,"packets":N,"bytes":N}]}  at DELETE
//	{"event":"whep-stats","id":"…","room":"…","audio":N,"video":N,"pli":N}  at a WHEP session's DELETE
//	{"event":"trickle","id":"…","candidates":N,"types":["relay"],"end":true|false}   a trickle PATCH applied
//	{"event":"restart","id":"…","ufrag":"…"}                        an ICE restart by PATCH applied
//
// A session's URL takes PATCH as RFC 9725 §4.3 says: trickle (candidates added with
// AddICECandidate, 204) and ICE restart (new ufrag/pwd: the offer applied again with them, which
// restarts pion's ICE; 200 with pion's new credentials and candidates, a new ETag), with the
// strong ETag of the 201, 428 without If-Match, 412 on a stale one, 415 for another type. GET
// is a 204 (§4.1); OPTIONS on /whip and /whep answers a CORS preflight with Accept-Post (§4.2).
//
// As a WHEP endpoint (POST /whep, a recvonly offer) it forwards what the room's WHIP publisher
// sends: its audio and the video layer -forward-rid (or its only one), with the publisher's
// extensions stripped, as pion's broadcast example does. A room is the path after /whip/ or
// /whep/ in a POST (POST /whip/3, POST /whep/3; none: the room ""), and the publisher a room's
// subscribers get is the first to send it tracks: one stream per WHEP URL, as a WHEP endpoint
// plays one (WHEP §1). Later publishers in a room are received and counted, never mixed into its
// subscribers' tracks (two publishers' packets in one track are two streams' sequence numbers and
// pictures interleaved). When the forwarded publisher leaves, the room waits for a new one. A subscriber that connects gets a key frame asked
// for it; its own PLIs go to the publisher too, except in the 500 ms after that join request
// (the key frame is already on its way: a subscriber asks as soon as its first frame is not
// one, and forwarding that too cost the publisher two PLIs per subscriber). The
// whep-stats counts are the packets pion wrote to that subscriber while it was connected.
// Exits after -limit seconds or when its parent goes away.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/pion/interceptor"
	"github.com/pion/interceptor/pkg/nack"
	"github.com/pion/rtcp"
	"github.com/pion/rtp"
	"github.com/pion/sdp"
	"github.com/pion/webrtc"
)

// A WHEP subscriber: its own local tracks, and what was written to them while connected.
type subscriber struct {
	id           string
	ice          *iceState
	room         *room
	pc           *webrtc.PeerConnection
	audio, video *webrtc.TrackLocalStaticRTP
	mu           sync.Mutex
	connected    bool
	sentAudio    int
	sentVideo    int
	plis         int
	joinPLI      time.Time
	// Join order: a subscriber keeps its fan-out worker (its packets stay in order).
	order int
}

var (
	forwardRID = flag.String("forward-rid", "f", "the simulcast layer WHEP subscribers get")
	// -counter-offer: every WHEP POST is answered 406 with pion's own offer (draft-ietf-wish-whep-04).
	counterOffer = flag.Bool("counter-offer", false, "answer WHEP POSTs with 406 and pion's own offer, the answer taken by PATCH")
	subMu        sync.Mutex
	subscribers  = map[string]*subscriber{}
	roomsMu      sync.Mutex
	rooms        = map[string]*room{}
)

// A room: the publisher whose media its subscribers get, the SSRC of the forwarded layer (for
// PLI), and its subscribers.
type room struct {
	name        string
	mu          sync.Mutex
	publisher   *session
	publisherPC *webrtc.PeerConnection
	forwarded   uint32
	subscribers map[string]*subscriber
}

func roomNamed(name string) *room {
	roomsMu.Lock()
	defer roomsMu.Unlock()
	r := rooms[name]
	if r == nil {
		r = &room{name: name, subscribers: map[string]*subscriber{}}
		rooms[name] = r
	}
	return r
}

// claim makes s the room's forwarded publisher unless another one is; true when s is it.
func (r *room) claim(s *session, pc *webrtc.PeerConnection) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.publisher == nil {
		r.publisher, r.publisherPC, r.forwarded = s, pc, 0
	}
	return r.publisher == s
}

// release: the forwarded publisher s left; the next one to send tracks takes the room.
func (r *room) release(s *session) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.publisher == s {
		r.publisher, r.publisherPC, r.forwarded = nil, nil, 0
	}
}

// askKeyFrame sends the room's publisher a PLI for the forwarded layer.
func (r *room) askKeyFrame() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.publisherPC != nil && r.forwarded != 0 {
		r.publisherPC.WriteRTCP([]rtcp.Packet{&rtcp.PictureLossIndication{MediaSSRC: r.forwarded}})
	}
}

// One forwarded packet for a fan-out worker: the packet and the subscribers it goes to.
type fanJob struct {
	kind webrtc.RTPCodecType
	p    *rtp.Packet
	subs []*subscriber
}

// Fan-out workers: each writes a packet to its share of the subscribers (the one that joined
// k-th to worker k mod n, so one subscriber's packets stay in order), apart from the goroutine reading the
// publisher — as LiveKit's SFU fans out to many down tracks in parallel (utils.ParallelExec).
// Written one after another from the read loop, 1 000 SRTP writes per packet held each next
// packet of the publisher's in the socket for ~10 ms: its transport-cc arrival times read as
// a queue, and the publisher's estimate fell to 30-90 kbit/s at 1 000 subscribers.
var fanOut []chan fanJob

func startFanOut(workers int) {
	fanOut = make([]chan fanJob, workers)
	for w := range fanOut {
		ch := make(chan fanJob, 4096)
		fanOut[w] = ch
		go func(w int) {
			for j := range ch {
				for _, sub := range j.subs {
					if sub.order%len(fanOut) == w {
						writeTo(sub, j.kind, j.p)
					}
				}
			}
		}(w)
	}
}

func forward(r *room, kind webrtc.RTPCodecType, p *rtp.Packet) {
	p.Header.Extension = false
	p.Header.Extensions = nil
	p.Header.ExtensionProfile = 0
	r.mu.Lock()
	subs := make([]*subscriber, 0, len(r.subscribers))
	for _, s := range r.subscribers {
		subs = append(subs, s)
	}
	r.mu.Unlock()
	for w := range fanOut {
		fanOut[w] <- fanJob{kind, p, subs}
	}
}

func writeTo(s *subscriber, kind webrtc.RTPCodecType, p *rtp.Packet) {
	s.mu.Lock()
	ok := s.connected
	s.mu.Unlock()
	if !ok {
		return
	}
	c := *p
	var err error
	if kind == webrtc.RTPCodecTypeAudio {
		err = s.audio.WriteRTP(&c)
	} else {
		err = s.video.WriteRTP(&c)
	}
	if err == nil {
		s.mu.Lock()
		if kind == webrtc.RTPCodecTypeAudio {
			s.sentAudio++
		} else {
			s.sentVideo++
		}
		s.mu.Unlock()
	}
}

// answerOffer applies the offer, answers it with every candidate gathered (no trickle), and on
// failure answers the HTTP request with the error (false).
func answerOffer(w http.ResponseWriter, pc *webrtc.PeerConnection, offer []byte) bool {
	if err := pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeOffer, SDP: string(offer)}); err != nil {
		http.Error(w, "offer: "+err.Error(), 400)
		return false
	}
	answer, err := pc.CreateAnswer(nil)
	if err != nil {
		http.Error(w, "answer: "+err.Error(), 400)
		return false
	}
	gathered := webrtc.GatheringCompletePromise(pc)
	if err := pc.SetLocalDescription(answer); err != nil {
		http.Error(w, err.Error(), 500)
		return false
	}
	<-gathered
	return true
}

func whep(w http.ResponseWriter, r *http.Request, a *webrtc.API, rm *room) {
	offer, _ := io.ReadAll(r.Body)
	pc, err := a.NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	audio, _ := webrtc.NewTrackLocalStaticRTP(webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeOpus, ClockRate: 48000, Channels: 2}, "audio", "pion")
	video, _ := webrtc.NewTrackLocalStaticRTP(webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeVP8, ClockRate: 90000}, "video", "pion")
	s := &subscriber{pc: pc, audio: audio, video: video, room: rm}
	for _, t := range []*webrtc.TrackLocalStaticRTP{audio, video} {
		var sender *webrtc.RTPSender
		if *counterOffer {
			// Its own offer: sendonly sections (a WHEP server's, draft-ietf-wish-whep-04).
			tr, err := pc.AddTransceiverFromTrack(t, webrtc.RTPTransceiverInit{Direction: webrtc.RTPTransceiverDirectionSendonly})
			if err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			sender = tr.Sender()
		} else if sender, err = pc.AddTrack(t); err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		isVideo := t == video
		go func() {
			for {
				pkts, _, err := sender.ReadRTCP()
				if err != nil {
					return
				}
				for _, p := range pkts {
					switch p.(type) {
					case *rtcp.PictureLossIndication, *rtcp.FullIntraRequest:
						if !isVideo {
							continue
						}
						s.mu.Lock()
						s.plis++
						covered := time.Since(s.joinPLI) < 500*time.Millisecond
						s.mu.Unlock()
						if covered {
							continue
						}
						rm.askKeyFrame()
					}
				}
			}
		}()
	}
	pc.OnConnectionStateChange(func(st webrtc.PeerConnectionState) {
		s.mu.Lock()
		s.connected = st == webrtc.PeerConnectionStateConnected
		s.mu.Unlock()
		if st == webrtc.PeerConnectionStateConnected {
			// A key frame for the new subscriber.
			s.mu.Lock()
			s.joinPLI = time.Now()
			s.mu.Unlock()
			rm.askKeyFrame()
		}
	})
	if *counterOffer {
		// The subscriber's offer is not taken: pion's own goes back with 406 and the subscriber
		// answers it by PATCH (draft-ietf-wish-whep-04).
		own, err := pc.CreateOffer(nil)
		if err != nil {
			http.Error(w, "offer: "+err.Error(), 500)
			return
		}
		gathered := webrtc.GatheringCompletePromise(pc)
		if err := pc.SetLocalDescription(own); err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		<-gathered
	} else if !answerOffer(w, pc, offer) {
		return
	}
	smu.Lock()
	next++
	s.id = fmt.Sprint(next)
	s.order = next
	s.ice = newICEState(s.id, string(offer))
	s.ice.awaitingAnswer = *counterOffer
	smu.Unlock()
	subMu.Lock()
	subscribers[s.id] = s
	subMu.Unlock()
	rm.mu.Lock()
	rm.subscribers[s.id] = s
	rm.mu.Unlock()
	w.Header().Set("Content-Type", "application/sdp")
	w.Header().Set("Location", "/whep/"+s.id)
	announce(w)
	w.Header().Set("ETag", s.ice.etag)
	if *counterOffer {
		w.WriteHeader(406)
	} else {
		w.WriteHeader(201)
	}
	io.WriteString(w, pc.LocalDescription().SDP)
}

type trackCount struct {
	Kind    string `json:"kind"`
	RID     string `json:"rid"`
	SSRC    uint32 `json:"ssrc"`
	Packets int    `json:"packets"`
	Bytes   int    `json:"bytes"`
}

type session struct {
	pc     *webrtc.PeerConnection
	ice    *iceState
	room   *room
	mu     sync.Mutex
	tracks []*trackCount
}

var (
	out      sync.Mutex
	sessions = map[string]*session{}
	smu      sync.Mutex
	next     = 0
)

func emit(v interface{}) {
	b, _ := json.Marshal(v)
	out.Lock()
	fmt.Println(string(b))
	out.Unlock()
}

// linkServer is the STUN/TURN server the 201s announce (-link, RFC 9725 §4.6), if any.
var linkServer, linkUser, linkCredential string

// announce adds the Link header of -link to a 201.
func announce(w http.ResponseWriter) {
	if linkServer == "" {
		return
	}
	v := "<" + linkServer + ">; rel=\"ice-server\""
	if linkUser != "" {
		v += "; username=\"" + linkUser + "\"; credential=\"" + linkCredential + "\"; credential-type=\"password\""
	}
	w.Header().Add("Link", v)
}

func api(loopback bool) (*webrtc.API, error) {
	m := &webrtc.MediaEngine{}
	if err := m.RegisterDefaultCodecs(); err != nil {
		return nil, err
	}
	// AV1 is not among pion v3's default codecs, but pion reads and writes its payload format
	// (pkg codecs: AV1Payloader, AV1Packet): registered here with its RTX, the feedback its
	// defaults give every video codec.
	fb := []webrtc.RTCPFeedback{{Type: "goog-remb"}, {Type: "ccm", Parameter: "fir"}, {Type: "nack"}, {Type: "nack", Parameter: "pli"}}
	for _, c := range []webrtc.RTPCodecParameters{
		{RTPCodecCapability: webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeAV1, ClockRate: 90000, RTCPFeedback: fb}, PayloadType: 45},
		{RTPCodecCapability: webrtc.RTPCodecCapability{MimeType: "video/rtx", ClockRate: 90000, SDPFmtpLine: "apt=45"}, PayloadType: 46},
	} {
		if err := m.RegisterCodec(c, webrtc.RTPCodecTypeVideo); err != nil {
			return nil, err
		}
	}
	// What simulcast by RID needs (pion's simulcast example registers the same).
	for _, uri := range []string{sdp.SDESMidURI, sdp.SDESRTPStreamIDURI, "urn:ietf:params:rtp-hdrext:sdes:repaired-rtp-stream-id"} {
		if err := m.RegisterHeaderExtension(webrtc.RTPHeaderExtensionCapability{URI: uri}, webrtc.RTPCodecTypeVideo); err != nil {
			return nil, err
		}
	}
	if err := m.RegisterHeaderExtension(webrtc.RTPHeaderExtensionCapability{URI: sdp.SDESMidURI}, webrtc.RTPCodecTypeAudio); err != nil {
		return nil, err
	}
	// pion's default interceptors (webrtc.RegisterDefaultInterceptors), but a NACK history of 256
	// packets per sent video stream where the default keeps 1024, each in a 1460-byte buffer
	// (interceptor/pkg/nack): at 1 000 WHEP subscribers that was about 1.6 GB held for
	// retransmissions by the end of a minute (gctrace: 1.1 GB live at 48 s), against 650 MB with
	// 256. 256 packets is over a second of a 2.5 Mbit/s layer, several seconds of the 180p layer
	// a load test forwards.
	i := &interceptor.Registry{}
	generator, err := nack.NewGeneratorInterceptor()
	if err != nil {
		return nil, err
	}
	responder, err := nack.NewResponderInterceptor(nack.ResponderSize(256))
	if err != nil {
		return nil, err
	}
	m.RegisterFeedback(webrtc.RTCPFeedback{Type: "nack"}, webrtc.RTPCodecTypeVideo)
	m.RegisterFeedback(webrtc.RTCPFeedback{Type: "nack", Parameter: "pli"}, webrtc.RTPCodecTypeVideo)
	i.Add(responder)
	i.Add(generator)
	if err := webrtc.ConfigureRTCPReports(i); err != nil {
		return nil, err
	}
	if err := webrtc.ConfigureTWCCSender(m, i); err != nil {
		return nil, err
	}
	// pion gathers no loopback candidates unless told (-loopback: a same-host test over ::1).
	se := webrtc.SettingEngine{}
	se.SetIncludeLoopbackCandidate(loopback)
	return webrtc.NewAPI(webrtc.WithMediaEngine(m), webrtc.WithInterceptorRegistry(i), webrtc.WithSettingEngine(se)), nil
}

func whip(w http.ResponseWriter, r *http.Request, a *webrtc.API, rm *room) {
	offer, _ := io.ReadAll(r.Body)
	pc, err := a.NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	s := &session{pc: pc, room: rm}
	pc.OnTrack(func(t *webrtc.TrackRemote, _ *webrtc.RTPReceiver) {
		c := &trackCount{Kind: t.Kind().String(), RID: t.RID(), SSRC: uint32(t.SSRC())}
		s.mu.Lock()
		s.tracks = append(s.tracks, c)
		s.mu.Unlock()
		emit(map[string]interface{}{"event": "track", "kind": c.Kind, "rid": c.RID, "ssrc": c.SSRC, "codec": t.Codec().MimeType})
		forwardThis := (t.Kind() == webrtc.RTPCodecTypeAudio || t.RID() == "" || t.RID() == *forwardRID) && rm.claim(s, pc)
		if forwardThis && t.Kind() == webrtc.RTPCodecTypeVideo {
			rm.mu.Lock()
			rm.forwarded = uint32(t.SSRC())
			rm.mu.Unlock()
		}
		buf := make([]byte, 1500)
		for {
			n, _, err := t.Read(buf)
			if err != nil {
				return
			}
			s.mu.Lock()
			c.Packets++
			c.Bytes += n
			s.mu.Unlock()
			if forwardThis {
				// The fan-out outlives this read: the packet gets bytes of its own.
				p := &rtp.Packet{}
				if p.Unmarshal(append([]byte(nil), buf[:n]...)) == nil {
					forward(rm, t.Kind(), p)
				}
			}
		}
	})
	if !answerOffer(w, pc, offer) {
		return
	}
	smu.Lock()
	next++
	id := fmt.Sprint(next)
	s.ice = newICEState(id, string(offer))
	sessions[id] = s
	smu.Unlock()
	w.Header().Set("Content-Type", "application/sdp")
	w.Header().Set("Location", "/whip/"+id)
	announce(w)
	w.Header().Set("ETag", s.ice.etag)
	w.WriteHeader(201)
	io.WriteString(w, pc.LocalDescription().SDP)
}

// iceState is what a session's PATCHes (RFC 9725 §4.3) need: the offer as last applied, the
// client's current ICE credentials, and the strong entity-tag of the ICE session.
type iceState struct {
	mu       sync.Mutex
	offer    string
	ufrag    string
	etag     string
	restarts int
	id       string
	// A counter-offer went with a 406: the next PATCH carries the subscriber's answer.
	awaitingAnswer bool
}

func newICEState(id, offer string) *iceState {
	return &iceState{offer: offer, ufrag: sdpAttribute(offer, "ice-ufrag"), etag: fmt.Sprintf("\"%s-0\"", id), id: id}
}

// sdpAttribute is the first a=NAME:value of an SDP or SDP fragment.
func sdpAttribute(text, name string) string {
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.HasPrefix(line, "a="+name+":") {
			return line[len("a="+name+":"):]
		}
	}
	return ""
}

// patch answers a PATCH on a session (RFC 9725 §4.3.1): an application/trickle-ice-sdpfrag
// (RFC 8840) or 415; If-Match required (428) and current (412, "*" always matching). New
// credentials are a restart (§4.3.3): the stored offer applied again with them and the
// fragment's candidates (pion restarts its ICE when the remote credentials change), answered
// 200 with pion's new ufrag, pwd and candidates and a new ETag. The same credentials are a
// trickle (§4.3.2): each candidate added, 204 without a body or ETag.
func patch(w http.ResponseWriter, r *http.Request, pc *webrtc.PeerConnection, st *iceState) {
	if strings.HasPrefix(strings.ToLower(r.Header.Get("Content-Type")), "application/sdp") {
		answerPatch(w, r, pc, st)
		return
	}
	if !strings.HasPrefix(strings.ToLower(r.Header.Get("Content-Type")), "application/trickle-ice-sdpfrag") {
		http.Error(w, "PATCH takes application/trickle-ice-sdpfrag", 415)
		return
	}
	body, _ := io.ReadAll(r.Body)
	frag := string(body)
	st.mu.Lock()
	defer st.mu.Unlock()
	match := r.Header.Get("If-Match")
	if match == "" {
		http.Error(w, "If-Match required", 428)
		return
	}
	if match != "*" && match != "\"*\"" && match != st.etag {
		http.Error(w, "stale entity-tag", 412)
		return
	}
	ufrag, pwd := sdpAttribute(frag, "ice-ufrag"), sdpAttribute(frag, "ice-pwd")
	var candidates []string
	for _, line := range strings.Split(frag, "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.HasPrefix(line, "a=candidate:") {
			candidates = append(candidates, line[2:])
		}
	}
	if ufrag != "" && ufrag != st.ufrag {
		if pwd == "" {
			http.Error(w, "a restart needs a=ice-pwd", 400)
			return
		}
		// The offer with the new credentials and the fragment's candidates in place of the old.
		var lines []string
		for _, line := range strings.Split(st.offer, "\n") {
			line = strings.TrimRight(line, "\r")
			switch {
			case strings.HasPrefix(line, "a=ice-ufrag:"):
				line = "a=ice-ufrag:" + ufrag
			case strings.HasPrefix(line, "a=ice-pwd:"):
				line = "a=ice-pwd:" + pwd
			case strings.HasPrefix(line, "a=candidate:"), strings.HasPrefix(line, "a=end-of-candidates"):
				continue
			}
			if line != "" {
				lines = append(lines, line)
			}
		}
		offer := strings.Join(lines, "\r\n") + "\r\n"
		for _, c := range candidates {
			offer = strings.Replace(offer, "a=mid:0\r\n", "a=mid:0\r\na="+c+"\r\n", 1)
		}
		if err := pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeOffer, SDP: offer}); err != nil {
			http.Error(w, "restart: "+err.Error(), 400)
			return
		}
		answer, err := pc.CreateAnswer(nil)
		if err != nil {
			http.Error(w, "restart: "+err.Error(), 500)
			return
		}
		gathered := webrtc.GatheringCompletePromise(pc)
		if err := pc.SetLocalDescription(answer); err != nil {
			http.Error(w, "restart: "+err.Error(), 500)
			return
		}
		<-gathered
		local := pc.LocalDescription().SDP
		st.offer, st.ufrag = offer, ufrag
		st.restarts++
		st.etag = fmt.Sprintf("\"%s-%d\"", st.id, st.restarts)
		out := "a=ice-ufrag:" + sdpAttribute(local, "ice-ufrag") + "\r\na=ice-pwd:" + sdpAttribute(local, "ice-pwd") + "\r\n"
		mline := "m=audio 9 UDP/TLS/RTP/SAVPF 0"
		for _, line := range strings.Split(local, "\n") {
			if strings.HasPrefix(line, "m=") {
				mline = strings.TrimRight(line, "\r")
				break
			}
		}
		out += mline + "\r\na=mid:" + sdpAttribute(local, "mid") + "\r\n"
		for _, line := range strings.Split(local, "\n") {
			line = strings.TrimRight(line, "\r")
			if strings.HasPrefix(line, "a=candidate:") && !strings.Contains(out, line+"\r\n") {
				out += line + "\r\n"
			}
		}
		out += "a=end-of-candidates\r\n"
		emit(map[string]interface{}{"event": "restart", "id": st.id, "ufrag": ufrag})
		w.Header().Set("Content-Type", "application/trickle-ice-sdpfrag")
		w.Header().Set("ETag", st.etag)
		w.WriteHeader(200)
		io.WriteString(w, out)
		return
	}
	added := 0
	types := []string{}
	for _, c := range candidates {
		if pc.AddICECandidate(webrtc.ICECandidateInit{Candidate: c}) == nil {
			added++
			// "typ host|srflx|prflx|relay" (RFC 8839 §5.1): what pion took, by kind.
			if f := strings.Fields(c); len(f) > 7 && f[6] == "typ" {
				types = append(types, f[7])
			}
		}
	}
	emit(map[string]interface{}{"event": "trickle", "id": st.id, "candidates": added, "types": types, "end": strings.Contains(frag, "a=end-of-candidates")})
	w.WriteHeader(204)
}

// answerPatch takes a subscriber's answer to the counter-offer (draft-ietf-wish-whep-04): once,
// If-Match the 406's entity-tag when given, 204. The answer's ICE and DTLS roles are pion's
// checks on the subscriber: it must be a full agent (no ice-lite) and setup:active or passive.
func answerPatch(w http.ResponseWriter, r *http.Request, pc *webrtc.PeerConnection, st *iceState) {
	body, _ := io.ReadAll(r.Body)
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.awaitingAnswer {
		http.Error(w, "no counter-offer awaits an answer", 409)
		return
	}
	if m := r.Header.Get("If-Match"); m != "" && m != st.etag && m != "*" && m != "\"*\"" {
		http.Error(w, "stale entity-tag", 412)
		return
	}
	answer := string(body)
	if err := pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: answer}); err != nil {
		emit(map[string]interface{}{"event": "counter-answer", "id": st.id, "error": err.Error()})
		http.Error(w, "answer: "+err.Error(), 400)
		return
	}
	st.awaitingAnswer = false
	st.ufrag = sdpAttribute(answer, "ice-ufrag")
	candidates := 0
	for _, line := range strings.Split(answer, "\n") {
		if strings.HasPrefix(line, "a=candidate:") {
			candidates++
		}
	}
	emit(map[string]interface{}{"event": "counter-answer", "id": st.id, "candidates": candidates, "lite": strings.Contains(answer, "a=ice-lite"), "setup": sdpAttribute(answer, "setup")})
	w.WriteHeader(204)
}

// resource answers what is not a POST on a session's URL: PATCH (trickle, restart), GET (no
// representation, RFC 9725 §4.1), OPTIONS; DELETE is the caller's.
func resource(w http.ResponseWriter, r *http.Request, pc *webrtc.PeerConnection, st *iceState) bool {
	switch r.Method {
	case "PATCH":
		patch(w, r, pc, st)
	case "GET":
		w.WriteHeader(204)
	case "OPTIONS":
		w.Header().Set("Allow", "PATCH, DELETE, OPTIONS")
		w.Header().Set("Accept-Patch", "application/trickle-ice-sdpfrag")
		w.WriteHeader(204)
	case "DELETE":
		return false
	default:
		http.Error(w, "PATCH or DELETE", 405)
	}
	return true
}

// collection answers what is not a POST on /whip or /whep: GET (§4.1), OPTIONS with CORS and
// Accept-Post (§4.2), 405 otherwise. True when it answered.
func collection(w http.ResponseWriter, r *http.Request) bool {
	switch r.Method {
	case "POST":
		return false
	case "GET":
		w.WriteHeader(204)
	case "OPTIONS":
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Header().Set("Access-Control-Allow-Methods", "POST, PATCH, DELETE, OPTIONS")
		w.Header().Set("Access-Control-Allow-Headers", "Authorization, Content-Type, If-Match")
		w.Header().Set("Access-Control-Expose-Headers", "Location, ETag, Link")
		w.Header().Set("Accept-Post", "application/sdp")
		w.WriteHeader(204)
	default:
		http.Error(w, "POST an offer", 405)
	}
	return true
}

func main() {
	limit := flag.Float64("limit", 120, "seconds before exiting")
	listen := flag.String("listen", "127.0.0.1:0", "the HTTP address (a namespace's address to be reached over its veth)")
	loopback := flag.Bool("loopback", false, "offer loopback candidates too (127.0.0.1, ::1)")
	flag.StringVar(&linkServer, "link", "", "a STUN/TURN URL every 201 announces in a Link header (RFC 9725 §4.6)")
	flag.StringVar(&linkUser, "link-username", "", "the -link TURN server's username")
	flag.StringVar(&linkCredential, "link-credential", "", "the -link TURN server's credential")
	flag.Parse()
	// Go's collector at GOGC=400 unless GOGC says otherwise. At 1 000 WHEP subscribers pion holds
	// about 500 MB live (each subscriber's NACK history, contexts, buffers); at the default 100
	// the fan-out workers, which allocate per write, were made to assist each marking and stalled
	// 200-500 ms: one freeze for half the subscribers in a 60 s run (gctrace: marks of 190-400 ms).
	// At 400, on the same run: no freeze, the heap under 3 GB.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	startFanOut(2 * runtime.GOMAXPROCS(0))
	a, err := api(*loopback)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	parent := os.Getppid()
	go func() {
		start := time.Now()
		for os.Getppid() == parent && time.Since(start).Seconds() < *limit {
			time.Sleep(200 * time.Millisecond)
		}
		os.Exit(0)
	}()
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	http.HandleFunc("/whip", func(w http.ResponseWriter, r *http.Request) {
		if collection(w, r) {
			return
		}
		whip(w, r, a, roomNamed(""))
	})
	http.HandleFunc("/whep", func(w http.ResponseWriter, r *http.Request) {
		if collection(w, r) {
			return
		}
		whep(w, r, a, roomNamed(""))
	})
	// POST /whep/ROOM subscribes in a room; DELETE /whep/ID (the Location) ends a session.
	http.HandleFunc("/whep/", func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Path[len("/whep/"):]
		if r.Method == "POST" {
			whep(w, r, a, roomNamed(id))
			return
		}
		if r.Method != "DELETE" {
			subMu.Lock()
			s := subscribers[id]
			subMu.Unlock()
			if s == nil {
				http.Error(w, "no such session", 404)
				return
			}
			resource(w, r, s.pc, s.ice)
			return
		}
		subMu.Lock()
		s := subscribers[id]
		delete(subscribers, id)
		subMu.Unlock()
		if s == nil {
			http.Error(w, "no such session", 404)
			return
		}
		s.room.mu.Lock()
		delete(s.room.subscribers, id)
		s.room.mu.Unlock()
		s.mu.Lock()
		emit(map[string]interface{}{"event": "whep-stats", "id": id, "room": s.room.name, "audio": s.sentAudio, "video": s.sentVideo, "pli": s.plis})
		s.mu.Unlock()
		s.pc.Close()
		w.WriteHeader(200)
	})
	// POST /whip/ROOM publishes in a room; DELETE /whip/ID (the Location) ends a session.
	http.HandleFunc("/whip/", func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Path[len("/whip/"):]
		if r.Method == "POST" {
			whip(w, r, a, roomNamed(id))
			return
		}
		if r.Method != "DELETE" {
			smu.Lock()
			s := sessions[id]
			smu.Unlock()
			if s == nil {
				http.Error(w, "no such session", 404)
				return
			}
			resource(w, r, s.pc, s.ice)
			return
		}
		smu.Lock()
		s := sessions[id]
		delete(sessions, id)
		smu.Unlock()
		if s == nil {
			http.Error(w, "no such session", 404)
			return
		}
		// What the publisher sent before its DELETE may still wait in pion's socket buffer or
		// its read loops (a loaded machine): count until nothing more arrives for 200 ms (at
		// most 2 s), then report.
		total := func() int {
			s.mu.Lock()
			defer s.mu.Unlock()
			n := 0
			for _, t := range s.tracks {
				n += t.Packets
			}
			return n
		}
		for last, quiet, waited := total(), 0, 0; quiet < 4 && waited < 40; waited++ {
			time.Sleep(50 * time.Millisecond)
			if n := total(); n != last {
				last, quiet = n, 0
			} else {
				quiet++
			}
		}
		s.room.release(s)
		s.mu.Lock()
		tracks := append([]*trackCount(nil), s.tracks...)
		emit(map[string]interface{}{"event": "stats", "tracks": tracks})
		s.mu.Unlock()
		s.pc.Close()
		w.WriteHeader(200)
	})
	fmt.Printf("LISTENING %d\n", l.Addr().(*net.TCPAddr).Port)
	http.Serve(l, nil)
}
