// Baselines for `pubbot-bench`, in plain C, compiled in this package so the Swift figures are
// compared side by side in the same run on the same machine (see the Performance article).
#ifndef PUBBOT_CBENCHBASELINE_H
#define PUBBOT_CBENCHBASELINE_H
#include <stddef.h>
#include <stdint.h>

/// A minimal VP8 packetizer: for each frame, split into about-equal payloads of at most
/// max_payload bytes (descriptor included), copy the RTP header template, patch sequence
/// number, timestamp and marker, write a 4-byte VP8 descriptor (X, S on the first packet,
/// 15-bit picture ID) and copy the payload into consecutive slots of slot_size bytes
/// (wrapping after slot_count), recording each packet's length. Returns the number of packets.
size_t cbench_packetize(const uint8_t *const *frames, const size_t *sizes, size_t frame_count,
                        const uint8_t *header, size_t header_len, size_t max_payload,
                        uint8_t *slots, size_t slot_size, size_t slot_count, int32_t *lengths, uint16_t *seq, uint16_t *picture_id);

/// A minimal VP9 packetizer (RFC 9628, flexible mode as pubbot sends it): about-equal split,
/// a 5-byte descriptor (I with 15-bit picture ID, L, F, B/E, one P_DIFF) on inter frames, every
/// `key_every`-th frame a key frame with the scalability structure (5 bytes) in its first packet.
size_t cbench_packetize_vp9(const uint8_t *const *frames, const size_t *sizes, size_t frame_count,
                            const uint8_t *header, size_t header_len, size_t max_payload,
                            uint8_t *slots, size_t slot_size, size_t slot_count, int32_t *lengths, uint16_t *seq, uint16_t *picture_id,
                            size_t key_every);

/// A minimal AV1 packetizer (AOM RTP payload format, W = 0 as pubbot sends it): walks each
/// temporal unit's OBUs (header, LEB128 size), drops temporal delimiters, and fills payloads of
/// at most max_payload bytes greedily: the aggregation header, then each OBU element (header with
/// the size flag cleared, payload) behind its LEB128 length, an OBU that does not fit fragmented
/// (Y, then Z on the next packet; a fragment of fewer than 64 bytes waits for the next packet).
/// Header copied and patched as above. Returns the number of packets.
size_t cbench_packetize_av1(const uint8_t *const *frames, const size_t *sizes, size_t frame_count,
                            const uint8_t *header, size_t header_len, size_t max_payload,
                            uint8_t *slots, size_t slot_size, size_t slot_count, int32_t *lengths, uint16_t *seq);

/// A minimal RFC 6184 (mode 1) packetizer over Annex B access units: for each NAL unit found by
/// its start code, one packet when it fits (consecutive small units aggregated into a STAP-A),
/// else FU-A fragments of about equal size; header copied and patched as above. Returns the
/// number of packets.
size_t cbench_packetize_h264(const uint8_t *const *frames, const size_t *sizes, size_t frame_count,
                             const uint8_t *header, size_t header_len, size_t max_payload,
                             uint8_t *slots, size_t slot_size, size_t slot_count, int32_t *lengths, uint16_t *seq);

/// Direct libsrtp2: creates an outbound session (suite 0 = AES-CM-128-HMAC-SHA1-80,
/// 1 = AEAD-AES-128-GCM) with key||salt, then protects `count` packets of `len` bytes in
/// place, cycling through `slot_count` slots and writing a fresh sequence number into each
/// before its call (as the Swift loop does). Returns 0 or the libsrtp2 error.
int cbench_srtp_protect(int suite, const unsigned char *key, uint8_t *slots, size_t slot_size, size_t slot_count,
                        int len, size_t count);

/// One `sendto` per datagram of `len` bytes to dst (a sockaddr of dst_len bytes); returns how
/// many were accepted by the kernel.
size_t cbench_sendto_each(int fd, const void *dst, unsigned dst_len, const uint8_t *buf, size_t len, size_t count);
#endif
