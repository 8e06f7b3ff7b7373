#define _GNU_SOURCE
#include "CBenchBaseline.h"
#include <string.h>
#include <sys/socket.h>
#include <srtp2/srtp.h>
#include "../CSRTP/shim.h" /* the same session setup as SRTPSession; only the protect loop is timed */

/* `total` bytes in `n` parts, as RTPCore's PayloadSplit: every part but the last ceil(total / n),
   the last the rest; where that leaves the last empty, the first total % n parts one byte larger.
   Worked out once per frame; split_size is then a compare or two per packet. */
typedef struct { size_t n, base, larger_until, last; } split_t;
static inline split_t split_make(size_t total, size_t n) {
    if (n <= 1) return (split_t){1, total, 0, total};
    size_t full = (total + n - 1) / n;
    if (total > (n - 1) * full) return (split_t){n, full, 0, total - (n - 1) * full};
    return (split_t){n, total / n, total % n, total / n};
}
static inline size_t split_size(const split_t *s, size_t i) { return i + 1 == s->n ? s->last : s->base + (i < s->larger_until ? 1 : 0); }

size_t cbench_packetize(const uint8_t *const *frames, const size_t *sizes, size_t frame_count,
                        const uint8_t *header, size_t header_len, size_t max_payload,
                        uint8_t *slots, size_t slot_size, size_t slot_count, int32_t *lengths, uint16_t *seq, uint16_t *picture_id) {
    size_t written = 0, slot = 0;
    uint32_t ts = 0;
    for (size_t f = 0; f < frame_count; f++) {
        const uint8_t *frame = frames[f];
        size_t len = sizes[f], room = max_payload - 4;
        size_t n = (len + room - 1) / room;
        if (n == 0) n = 1;
        size_t off = 0;
        split_t sp = split_make(len, n);
        ts += 3000;
        for (size_t i = 0; i < n; i++) {
            uint8_t *p = slots + slot * slot_size;
            memcpy(p, header, header_len);
            p[1] = (uint8_t)((p[1] & 0x7f) | (i + 1 == n ? 0x80 : 0));
            p[2] = (uint8_t)(*seq >> 8); p[3] = (uint8_t)*seq;
            p[4] = (uint8_t)(ts >> 24); p[5] = (uint8_t)(ts >> 16); p[6] = (uint8_t)(ts >> 8); p[7] = (uint8_t)ts;
            uint8_t *d = p + header_len;
            d[0] = (uint8_t)(0x80 | (i == 0 ? 0x10 : 0));
            d[1] = 0x80;
            d[2] = (uint8_t)(0x80 | (*picture_id >> 8));
            d[3] = (uint8_t)*picture_id;
            size_t size = split_size(&sp, i);
            memcpy(d + 4, frame + off, size);
            lengths[slot] = (int32_t)(header_len + 4 + size);
            off += size;
            (*seq)++;
            written++;
            if (++slot == slot_count) slot = 0;
        }
        *picture_id = (uint16_t)((*picture_id + 1) & 0x7fff);
    }
    return written;
}

size_t cbench_packetize_vp9(const uint8_t *const *frames, const size_t *sizes, size_t frame_count,
                            const uint8_t *header, size_t header_len, size_t max_payload,
                            uint8_t *slots, size_t slot_size, size_t slot_count, int32_t *lengths, uint16_t *seq, uint16_t *picture_id,
                            size_t key_every) {
    size_t written = 0, slot = 0;
    uint32_t ts = 0;
    for (size_t f = 0; f < frame_count; f++) {
        int key = key_every && f % key_every == 0;
        size_t hdr = key ? 4 : 5, ss = key ? 5 : 0;
        size_t room = max_payload - hdr, total = sizes[f] + ss;
        size_t n = (total + room - 1) / room;
        if (n == 0) n = 1;
        size_t off = 0;
        split_t sp = split_make(total, n);
        ts += 3000;
        for (size_t i = 0; i < n; i++) {
            uint8_t *p = slots + slot * slot_size;
            memcpy(p, header, header_len);
            p[1] = (uint8_t)((p[1] & 0x7f) | (i + 1 == n ? 0x80 : 0));
            p[2] = (uint8_t)(*seq >> 8); p[3] = (uint8_t)*seq;
            p[4] = (uint8_t)(ts >> 24); p[5] = (uint8_t)(ts >> 16); p[6] = (uint8_t)(ts >> 8); p[7] = (uint8_t)ts;
            uint8_t *d = p + header_len;
            size_t o = 0;
            d[o++] = (uint8_t)(0xb0 | (key ? 0 : 0x40) | (i == 0 ? 0x08 : 0) | (i + 1 == n ? 0x04 : 0) | (key && i == 0 ? 0x02 : 0));
            d[o++] = (uint8_t)(0x80 | (*picture_id >> 8));
            d[o++] = (uint8_t)*picture_id;
            d[o++] = 0;
            if (!key) d[o++] = 2;
            size_t share = split_size(&sp, i), bytes = share;
            if (key && i == 0) {
                d[o++] = 0x10; d[o++] = 0x05; d[o++] = 0x00; d[o++] = 0x02; d[o++] = 0xd0;
                bytes = share - ss;
            }
            memcpy(d + o, frames[f] + off, bytes);
            lengths[slot] = (int32_t)(header_len + o + bytes);
            off += bytes;
            (*seq)++;
            written++;
            if (++slot == slot_count) slot = 0;
        }
        *picture_id = (uint16_t)((*picture_id + 1) & 0x7fff);
    }
    return written;
}

static size_t leb_size(size_t v) { size_t n = 1; while (v >>= 7) n++; return n; }
static size_t leb_write(uint8_t *d, size_t v) {
    size_t n = 0;
    do { uint8_t b = v & 0x7f; v >>= 7; d[n++] = v ? (b | 0x80) : b; } while (v);
    return n;
}

/* The next OBU at or after `at` that is sent (not a temporal delimiter): its header offset and
   size, payload range. Returns 0 at the end. */
static int next_obu(const uint8_t *b, size_t len, size_t at, size_t *hdr, size_t *hsz, size_t *ps, size_t *pe) {
    while (at < len) {
        uint8_t h = b[at];
        size_t hs = (h & 4) ? 2 : 1, s = at + hs, size = 0, shift = 0;
        while (s < len) { uint8_t x = b[s++]; size |= (size_t)(x & 0x7f) << shift; shift += 7; if (!(x & 0x80)) break; }
        size_t end = s + size;
        if (((h >> 3) & 15) != 2) { *hdr = at; *hsz = hs; *ps = s; *pe = end; return 1; }
        at = end;
    }
    return 0;
}

size_t cbench_packetize_av1(const uint8_t *const *frames, const size_t *sizes, size_t frame_count,
                            const uint8_t *header, size_t header_len, size_t max_payload,
                            uint8_t *slots, size_t slot_size, size_t slot_count, int32_t *lengths, uint16_t *seq) {
    size_t written = 0, slot = 0;
    uint32_t ts = 0;
    for (size_t f = 0; f < frame_count; f++) {
        const uint8_t *b = frames[f];
        size_t len = sizes[f], room = max_payload - 1;
        size_t hdr, hsz, ps, pe, consumed = 0;
        int have = next_obu(b, len, 0, &hdr, &hsz, &ps, &pe);
        ts += 3000;
        uint8_t *first = NULL;
        while (have) {
            uint8_t *p = slots + slot * slot_size;
            memcpy(p, header, header_len);
            p[1] &= 0x7f;
            p[2] = (uint8_t)(*seq >> 8); p[3] = (uint8_t)*seq;
            p[4] = (uint8_t)(ts >> 24); p[5] = (uint8_t)(ts >> 16); p[6] = (uint8_t)(ts >> 8); p[7] = (uint8_t)ts;
            uint8_t *d = p + header_len;
            size_t o = 1, left = room;
            int z = consumed > 0, y = 0;
            if (!first) first = p;
            while (have) {
                size_t size = hsz + (pe - ps), rest = size - consumed, whole = leb_size(rest) + rest, part = rest;
                if (whole > left) {
                    part = left - 1;
                    if (part > 0 && leb_size(part) > 1) part = left - leb_size(part);
                    if (part < 1 || (left != room && part < 64)) break;
                    y = 1;
                }
                o += leb_write(d + o, part);
                size_t i = consumed, end = consumed + part;
                for (; i < end && i < hsz; i++) d[o++] = i == 0 ? (uint8_t)(b[hdr] & ~2) : b[hdr + 1];
                if (i < end) { memcpy(d + o, b + ps + (i - hsz), end - i); o += end - i; }
                if (y) { consumed += part; break; }
                left -= whole;
                consumed = 0;
                have = next_obu(b, len, pe, &hdr, &hsz, &ps, &pe);
            }
            d[0] = (uint8_t)((z ? 0x80 : 0) | (y ? 0x40 : 0) | (written == 0 && f == 0 ? 0x08 : 0));
            lengths[slot] = (int32_t)(header_len + o);
            (*seq)++;
            written++;
            if (!have) p[1] |= 0x80;
            if (++slot == slot_count) slot = 0;
        }
    }
    return written;
}

/* The NAL unit after the first start code at or after `from`: [*start, *end), trailing zeros
   excluded. Returns 0 when there is none. */
static int next_nal(const uint8_t *b, size_t len, size_t from, size_t *start, size_t *end) {
    size_t i = from;
    while (i + 2 < len && !(b[i] == 0 && b[i + 1] == 0 && b[i + 2] == 1)) i++;
    if (i + 2 >= len) return 0;
    *start = i + 3;
    i = *start;
    size_t e = len;
    while (i + 2 < len) {
        if (b[i + 2] > 1) i += 3;
        else if (b[i] == 0 && b[i + 1] == 0 && b[i + 2] == 1) { e = i; break; }
        else i++;
    }
    while (e > *start && b[e - 1] == 0) e--;
    *end = e;
    return e > *start;
}

static uint8_t *h264_packet(uint8_t *slots, size_t slot_size, size_t *slot, size_t slot_count, const uint8_t *header,
                            size_t header_len, uint16_t *seq, uint32_t ts) {
    uint8_t *p = slots + *slot * slot_size;
    memcpy(p, header, header_len);
    p[1] &= 0x7f;
    p[2] = (uint8_t)(*seq >> 8); p[3] = (uint8_t)*seq;
    p[4] = (uint8_t)(ts >> 24); p[5] = (uint8_t)(ts >> 16); p[6] = (uint8_t)(ts >> 8); p[7] = (uint8_t)ts;
    (*seq)++;
    return p;
}

size_t cbench_packetize_h264(const uint8_t *const *frames, const size_t *sizes, size_t frame_count,
                             const uint8_t *header, size_t header_len, size_t max_payload,
                             uint8_t *slots, size_t slot_size, size_t slot_count, int32_t *lengths, uint16_t *seq) {
    size_t written = 0, slot = 0;
    uint32_t ts = 0;
    for (size_t f = 0; f < frame_count; f++) {
        const uint8_t *b = frames[f];
        size_t len = sizes[f], s, e, cursor = 0;
        uint8_t *last = NULL;
        ts += 3000;
        while (next_nal(b, len, cursor, &s, &e)) {
            size_t n = e - s;
            uint8_t *p = h264_packet(slots, slot_size, &slot, slot_count, header, header_len, seq, ts);
            uint8_t *d = p + header_len;
            if (n > max_payload) {
                size_t payload = n - 1, per = max_payload - 2, count = (payload + per - 1) / per;
                size_t off = s + 1;
                split_t sp = split_make(payload, count);
                for (size_t i = 0; i < count; i++) {
                    if (i > 0) { p = h264_packet(slots, slot_size, &slot, slot_count, header, header_len, seq, ts); d = p + header_len; }
                    size_t size = split_size(&sp, i);
                    d[0] = (uint8_t)((b[s] & 0xe0) | 28);
                    d[1] = (uint8_t)((i == 0 ? 0x80 : 0) | (i + 1 == count ? 0x40 : 0) | (b[s] & 0x1f));
                    memcpy(d + 2, b + off, size);
                    off += size;
                    lengths[slot] = (int32_t)(header_len + 2 + size);
                    last = p;
                    written++;
                    if (++slot == slot_count) slot = 0;
                }
                cursor = e;
                continue;
            }
            /* STAP-A while the next units fit too. */
            size_t used = 1 + 2 + n, units = 1, end = e, s2, e2;
            while (next_nal(b, len, end, &s2, &e2) && used + 2 + (e2 - s2) <= max_payload) { used += 2 + (e2 - s2); end = e2; units++; }
            if (units == 1) {
                memcpy(d, b + s, n);
                lengths[slot] = (int32_t)(header_len + n);
            } else {
                size_t at = s - 3, o = 1;
                uint8_t nri = 0;
                while (next_nal(b, len, at, &s2, &e2) && e2 <= end) {
                    d[o] = (uint8_t)((e2 - s2) >> 8); d[o + 1] = (uint8_t)(e2 - s2);
                    memcpy(d + o + 2, b + s2, e2 - s2);
                    if ((b[s2] & 0x60) > nri) nri = b[s2] & 0x60;
                    o += 2 + (e2 - s2);
                    at = e2;
                }
                d[0] = (uint8_t)(nri | 24);
                lengths[slot] = (int32_t)(header_len + o);
            }
            cursor = end;
            last = p;
            written++;
            if (++slot == slot_count) slot = 0;
        }
        if (last) last[1] |= 0x80;
    }
    return written;
}

int cbench_srtp_protect(int suite, const unsigned char *key, uint8_t *slots, size_t slot_size, size_t slot_count,
                        int len, size_t count) {
    srtp_t session;
    static srtp_err_status_t init = srtp_err_status_fail;
    if (init != srtp_err_status_ok) init = srtp_init();
    if (init != srtp_err_status_ok) return (int)init;
    srtp_err_status_t st = csrtp_create(&session, suite, 0, key, 1024);
    if (st != srtp_err_status_ok) return (int)st;
    uint16_t seq = 1;
    for (size_t i = 0; i < count; i++) {
        uint8_t *p = slots + (i % slot_count) * slot_size;
        p[2] = (uint8_t)(seq >> 8); p[3] = (uint8_t)seq;
        seq++;
        int l = len;
        st = srtp_protect(session, p, &l);
        if (st != srtp_err_status_ok) { srtp_dealloc(session); return (int)st; }
    }
    srtp_dealloc(session);
    return 0;
}

size_t cbench_sendto_each(int fd, const void *dst, unsigned dst_len, const uint8_t *buf, size_t len, size_t count) {
    size_t ok = 0;
    for (size_t i = 0; i < count; i++)
        if (sendto(fd, buf, len, MSG_DONTWAIT, (const struct sockaddr *)dst, (socklen_t)dst_len) == (ssize_t)len) ok++;
    return ok;
}
