#define _GNU_SOURCE
#include <netinet/tcp.h>
#include <poll.h>
#include "CLinuxNet.h"
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef SOL_UDP
#define SOL_UDP 17
#endif

_Static_assert(sizeof(struct sockaddr_in6) <= sizeof(((clinux_addr *)0)->storage), "sockaddr_in6 fits");
_Static_assert(sizeof(struct sockaddr_in) <= sizeof(((clinux_addr *)0)->storage), "sockaddr_in fits");

int clinux_resolve(const char *host, int port, int family, clinux_addr *out) {
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = family == 4 ? AF_INET : AF_UNSPEC;
    hints.ai_socktype = SOCK_DGRAM;
    char service[16];
    snprintf(service, sizeof(service), "%d", port);
    int rc = getaddrinfo(host, service, &hints, &res);
    if (rc != 0 || res == NULL) return rc == EAI_SYSTEM ? -errno : -EINVAL;
    if (res->ai_addrlen > sizeof(out->storage)) { freeaddrinfo(res); return -EAFNOSUPPORT; }
    memset(out, 0, sizeof(*out));
    memcpy(out->storage, res->ai_addr, res->ai_addrlen);
    out->length = (uint32_t)res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

int clinux_addr_family(const clinux_addr *addr) { return ((const struct sockaddr *)addr->storage)->sa_family; }

int clinux_addr_port(const clinux_addr *addr) {
    const struct sockaddr *sa = (const struct sockaddr *)addr->storage;
    if (sa->sa_family == AF_INET) return ntohs(((const struct sockaddr_in *)sa)->sin_port);
    if (sa->sa_family == AF_INET6) return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
    return -1;
}

int clinux_addr_from_ip(const uint8_t *ip, int ip_length, int port, clinux_addr *out) {
    if (port < 0 || port > 65535) return -EINVAL;
    memset(out, 0, sizeof(*out));
    if (ip_length == 4) {
        struct sockaddr_in *a = (struct sockaddr_in *)out->storage;
        a->sin_family = AF_INET;
        a->sin_port = htons((uint16_t)port);
        memcpy(&a->sin_addr, ip, 4);
        out->length = sizeof(*a);
        return 0;
    }
    if (ip_length == 16) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)out->storage;
        a->sin6_family = AF_INET6;
        a->sin6_port = htons((uint16_t)port);
        memcpy(&a->sin6_addr, ip, 16);
        out->length = sizeof(*a);
        return 0;
    }
    return -EINVAL;
}

int clinux_addr_v4_mapped(const clinux_addr *addr, clinux_addr *out) {
    const struct sockaddr *sa = (const struct sockaddr *)addr->storage;
    if (sa->sa_family != AF_INET) { *out = *addr; return 0; }
    const struct sockaddr_in *v4 = (const struct sockaddr_in *)sa;
    memset(out, 0, sizeof(*out));
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)out->storage;
    a->sin6_family = AF_INET6;
    a->sin6_port = v4->sin_port;
    a->sin6_addr.s6_addr[10] = 0xff;
    a->sin6_addr.s6_addr[11] = 0xff;
    memcpy(&a->sin6_addr.s6_addr[12], &v4->sin_addr, 4);
    out->length = sizeof(*a);
    return 1;
}

/* ::ffff:a.b.c.d (an IPv4 peer on a dual-stack socket, RFC 4291 §2.5.5.2) → a.b.c.d, so one
   peer has one address whichever socket it reached. */
static void unmap_v4(clinux_addr *addr) {
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)addr->storage;
    if (a->sin6_family != AF_INET6 || !IN6_IS_ADDR_V4MAPPED(&a->sin6_addr)) return;
    struct sockaddr_in v4;
    memset(&v4, 0, sizeof(v4));
    v4.sin_family = AF_INET;
    v4.sin_port = a->sin6_port;
    memcpy(&v4.sin_addr, &a->sin6_addr.s6_addr[12], 4);
    memset(addr->storage, 0, sizeof(addr->storage));
    memcpy(addr->storage, &v4, sizeof(v4));
    addr->length = sizeof(v4);
}

int clinux_addr_ip(const clinux_addr *addr, uint8_t *ip) {
    const struct sockaddr *sa = (const struct sockaddr *)addr->storage;
    if (sa->sa_family == AF_INET) { memcpy(ip, &((const struct sockaddr_in *)sa)->sin_addr, 4); return 4; }
    if (sa->sa_family == AF_INET6) { memcpy(ip, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16); return 16; }
    return -EAFNOSUPPORT;
}

int clinux_addr_set_port(clinux_addr *addr, int port) {
    struct sockaddr *sa = (struct sockaddr *)addr->storage;
    if (sa->sa_family == AF_INET) { ((struct sockaddr_in *)sa)->sin_port = htons((uint16_t)port); return 0; }
    if (sa->sa_family == AF_INET6) { ((struct sockaddr_in6 *)sa)->sin6_port = htons((uint16_t)port); return 0; }
    return -EAFNOSUPPORT;
}

int clinux_format(const clinux_addr *addr, char *buf, size_t cap) {
    const struct sockaddr *sa = (const struct sockaddr *)addr->storage;
    char host[INET6_ADDRSTRLEN] = "?";
    if (sa->sa_family == AF_INET) {
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, host, sizeof(host));
        return snprintf(buf, cap, "%s:%d", host, clinux_addr_port(addr));
    }
    if (sa->sa_family == AF_INET6) {
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, host, sizeof(host));
        return snprintf(buf, cap, "[%s]:%d", host, clinux_addr_port(addr));
    }
    return snprintf(buf, cap, "?");
}

/* Drops what IP_RECVERR queued (ICMP errors), so the socket does not stay readable. */
static void drain_error_queue(int fd) {
    char buf[256], control[512];
    for (int i = 0; i < 64; i++) {
        struct iovec iov = {.iov_base = buf, .iov_len = sizeof(buf)};
        struct msghdr m;
        memset(&m, 0, sizeof(m));
        m.msg_iov = &iov;
        m.msg_iovlen = 1;
        m.msg_control = control;
        m.msg_controllen = sizeof(control);
        if (recvmsg(fd, &m, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) break;
    }
}

int clinux_udp_open(int family, int rcvbuf, int sndbuf) {
    int fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    /* ICMP errors (port unreachable) reach an unconnected socket only with RECVERR: they then
       surface as ECONNREFUSED on the next call, and are counted rather than lost. */
    int one = 1, zero = 0;
    if (family == AF_INET6) {
        setsockopt(fd, IPPROTO_IPV6, IPV6_RECVERR, &one, sizeof(one));
        /* Dual-stack when bound to [::] (RFC 3493 §5.3), whatever net.ipv6.bindv6only says:
           IPv4 peers arrive as ::ffff:a.b.c.d (made plain IPv4 again by clinux_recvmmsg). */
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
        setsockopt(fd, IPPROTO_IP, IP_RECVERR, &one, sizeof(one));
    } else {
        setsockopt(fd, IPPROTO_IP, IP_RECVERR, &one, sizeof(one));
    }
    if (rcvbuf > 0 && setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)) != 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    if (sndbuf > 0 && setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof(sndbuf)) != 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
    return fd;
}

int clinux_bind(int fd, const clinux_addr *addr) {
    /* Only for a fixed port (a quick restart of a receiver): with SO_REUSEADDR set, an
       ephemeral bind (port 0) may be handed a port another such socket already holds, and two
       publishers would then share one source address. */
    int one = 1;
    if (clinux_addr_port(addr) != 0) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (const struct sockaddr *)addr->storage, addr->length) != 0) return -errno;
    return 0;
}

int clinux_local_addr(int fd, clinux_addr *out) {
    socklen_t len = sizeof(out->storage);
    if (getsockname(fd, (struct sockaddr *)out->storage, &len) != 0) return -errno;
    out->length = len;
    return 0;
}

int clinux_close(int fd) { return close(fd) == 0 ? 0 : -errno; }

int clinux_tcp_connect(const clinux_addr *dst, int timeout_ms) {
    int family = ((const struct sockaddr *)dst->storage)->sa_family;
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return -errno;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (const struct sockaddr *)dst->storage, dst->length) != 0) {
        if (errno != EINPROGRESS) { int e = errno; close(fd); return -e; }
        struct pollfd p = { .fd = fd, .events = POLLOUT };
        int r = poll(&p, 1, timeout_ms);
        if (r <= 0) { close(fd); return r == 0 ? -ETIMEDOUT : -errno; }
        int err = 0; socklen_t len = sizeof err;
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err != 0) { close(fd); return -err; }
    }
    return fd;
}

long clinux_tcp_write(int fd, const void *buf, size_t len) {
    ssize_t n = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) return (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -errno;
    return n;
}

long clinux_tcp_read(int fd, void *buf, size_t cap) {
    ssize_t n = recv(fd, buf, cap, MSG_DONTWAIT);
    if (n < 0) return (errno == EAGAIN || errno == EWOULDBLOCK) ? -EAGAIN : -errno;
    return n; /* 0: closed by the peer */
}

int clinux_route_source(const clinux_addr *dst, clinux_addr *out) {
    int family = ((const struct sockaddr *)dst->storage)->sa_family;
    int fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    /* connect() on UDP sends nothing: it only asks the routing table for the source address. */
    int rc = connect(fd, (const struct sockaddr *)dst->storage, dst->length) == 0 ? clinux_local_addr(fd, out) : -errno;
    close(fd);
    return rc;
}

/* Sends m prepared messages with as many sendmmsg calls as it takes; message k carries count[k]
   datagrams (1 each when count is NULL). Returns the datagrams sent, or -errno when none were. */
static __thread int refusals;

int clinux_take_refusals(void) {
    int r = refusals;
    refusals = 0;
    return r;
}

static int send_messages(int fd, struct mmsghdr *msgs, int m, const int *count) {
    int done = 0, sent = 0, retries = 0;
    while (done < m) {
        int rc = sendmmsg(fd, msgs + done, (unsigned)(m - done), 0);
        if (rc < 0) {
            if (errno == EINTR) continue;
            int e = errno;
            if (e == ECONNREFUSED) {
                drain_error_queue(fd);
                /* An ICMP port unreachable for an earlier datagram (IP_RECVERR reports it on the
                   socket's next call, RFC 1122 4.1.3.3 / ip(7)): not these datagrams' fate. A
                   check to a dead candidate must not take the next check to a live one with it
                   (it did: a Chromium answer's loopback candidate refused every retransmission
                   that followed it in the same turn). Counted (clinux_take_refusals), then sent. */
                if (retries++ < 4) { refusals++; continue; }
            }
            return sent > 0 ? sent : -e;
        }
        for (int k = done; k < done + rc; k++) sent += count ? count[k] : 1;
        done += rc;
    }
    return sent;
}


/* The source address of a datagram sent from a wildcard-bound socket (RFC 8445 §5.1.1.1: a host
   candidate per interface, one socket): IP_PKTINFO's ipi_spec_dst for IPv4 (also on a dual-stack
   socket, whose IPv4 sends go through the IPv4 path, ip(7)), IPV6_PKTINFO for IPv6 (ipv6(7)).
   The kernel then sends from that address as a socket bound to it would. Writes one cmsg at
   `at` (room: CLINUX_SOURCE_CMSG bytes) and returns its space, 0 for no source. */
#define CLINUX_SOURCE_CMSG CMSG_SPACE(sizeof(struct in6_pktinfo))
static size_t source_cmsg(struct cmsghdr *cm, const clinux_addr *src) {
    if (!src || src->length == 0) return 0;
    const struct sockaddr *sa = (const struct sockaddr *)src->storage;
    if (sa->sa_family == AF_INET) {
        struct in_pktinfo info;
        memset(&info, 0, sizeof(info));
        info.ipi_spec_dst = ((const struct sockaddr_in *)sa)->sin_addr;
        cm->cmsg_level = IPPROTO_IP;
        cm->cmsg_type = IP_PKTINFO;
        cm->cmsg_len = CMSG_LEN(sizeof(info));
        memcpy(CMSG_DATA(cm), &info, sizeof(info));
        return CMSG_SPACE(sizeof(info));
    }
    struct in6_pktinfo info;
    memset(&info, 0, sizeof(info));
    info.ipi6_addr = ((const struct sockaddr_in6 *)sa)->sin6_addr;
    cm->cmsg_level = IPPROTO_IPV6;
    cm->cmsg_type = IPV6_PKTINFO;
    cm->cmsg_len = CMSG_LEN(sizeof(info));
    memcpy(CMSG_DATA(cm), &info, sizeof(info));
    return CMSG_SPACE(sizeof(info));
}

int clinux_enable_pktinfo(int fd) {
    int one = 1;
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0) return -errno;
    /* IPv4 datagrams (also those a dual-stack socket hears) report their destination by
       IP_PKTINFO, IPv6 ones by IPV6_PKTINFO (RFC 3542 §6.1). */
    if (setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one)) != 0 && ss.ss_family == AF_INET) return -errno;
    if (ss.ss_family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof(one)) != 0) return -errno;
    return 0;
}

int clinux_sendmmsg(int fd, const clinux_addr *dst, const clinux_addr *src, void *const *bufs, const uint32_t *lens, int n) {
    if (n <= 0) return 0;
    if (n > 64) n = 64;
    struct mmsghdr msgs[64];
    struct iovec iovs[64];
    /* One source cmsg serves every message (the kernel only reads it). */
    union { char buf[CLINUX_SOURCE_CMSG]; struct cmsghdr align; } control;
    memset(&control, 0, sizeof(control));
    size_t controllen = source_cmsg(&control.align, src);
    for (int i = 0; i < n; i++) {
        iovs[i].iov_base = bufs[i];
        iovs[i].iov_len = lens[i];
        memset(&msgs[i], 0, sizeof(msgs[i]));
        msgs[i].msg_hdr.msg_iov = &iovs[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
        if (dst) {
            msgs[i].msg_hdr.msg_name = (void *)dst->storage;
            msgs[i].msg_hdr.msg_namelen = dst->length;
        }
        if (controllen) {
            msgs[i].msg_hdr.msg_control = control.buf;
            msgs[i].msg_hdr.msg_controllen = controllen;
        }
    }
    return send_messages(fd, msgs, n, NULL);
}

int clinux_sendmmsg_gso(int fd, const clinux_addr *dst, const clinux_addr *src, void *const *bufs, const uint32_t *lens, int n) {
    if (n <= 0) return 0;
    if (n > 64) n = 64;
    struct mmsghdr msgs[64];
    struct iovec iovs[64];
    int count[64];
    union { char buf[CMSG_SPACE(sizeof(uint16_t)) + CLINUX_SOURCE_CMSG]; struct cmsghdr align; } control[64];
    int m = 0;
    for (int i = 0; i < n; ) {
        /* A run: datagrams of one size, then at most one shorter one (the kernel's rule for
           UDP_SEGMENT, udp(7): every segment gso_size bytes but the last), within 64 KB — a
           frame's packets [1139, 1138] are one message of two segments. */
        int j = i + 1;
        uint32_t total = lens[i];
        while (j < n && lens[i] > 0 && lens[j] == lens[i] && total + lens[j] <= 65000) { total += lens[j]; j++; }
        if (j < n && lens[j] > 0 && lens[j] < lens[i] && total + lens[j] <= 65000) j++; /* an empty one would vanish */
        memset(&msgs[m], 0, sizeof(msgs[m]));
        count[m] = j - i;
        for (int k = i; k < j; k++) { iovs[k].iov_base = bufs[k]; iovs[k].iov_len = lens[k]; }
        msgs[m].msg_hdr.msg_iov = &iovs[i];
        msgs[m].msg_hdr.msg_iovlen = (size_t)(j - i);
        if (dst) {
            msgs[m].msg_hdr.msg_name = (void *)dst->storage;
            msgs[m].msg_hdr.msg_namelen = dst->length;
        }
        size_t used = 0;
        memset(control[m].buf, 0, sizeof(control[m].buf));
        if (j - i >= 2) {
            uint16_t segment = (uint16_t)lens[i];
            struct cmsghdr *cm = &control[m].align;
            cm->cmsg_level = SOL_UDP;
            cm->cmsg_type = UDP_SEGMENT;
            cm->cmsg_len = CMSG_LEN(sizeof(uint16_t));
            memcpy(CMSG_DATA(cm), &segment, sizeof(segment));
            used = CMSG_SPACE(sizeof(uint16_t));
        }
        used += source_cmsg((struct cmsghdr *)(control[m].buf + used), src);
        if (used) {
            msgs[m].msg_hdr.msg_control = control[m].buf;
            msgs[m].msg_hdr.msg_controllen = used;
        }
        m++;
        i = j;
    }
    return send_messages(fd, msgs, m, count);
}

int clinux_send_gso(int fd, const clinux_addr *dst, const void *buf, uint32_t len, uint16_t segment) {
    struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
    char control[CMSG_SPACE(sizeof(uint16_t))];
    memset(control, 0, sizeof(control));
    struct msghdr msg;
    memset(&msg, 0, sizeof(msg));
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (dst) {
        msg.msg_name = (void *)dst->storage;
        msg.msg_namelen = dst->length;
    }
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
    cm->cmsg_level = SOL_UDP;
    cm->cmsg_type = UDP_SEGMENT;
    cm->cmsg_len = CMSG_LEN(sizeof(uint16_t));
    memcpy(CMSG_DATA(cm), &segment, sizeof(segment));
    for (;;) {
        ssize_t rc = sendmsg(fd, &msg, 0);
        if (rc < 0 && errno == EINTR) continue;
        return rc < 0 ? -errno : (int)rc;
    }
}

int clinux_gso_supported(int fd) {
    int size = 0;
    socklen_t len = sizeof(size);
    return getsockopt(fd, SOL_UDP, UDP_SEGMENT, &size, &len) == 0;
}

int clinux_enable_rx_timestamps(int fd) {
    int on = 1;
    return setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof(on)) == 0 ? 0 : -errno;
}

int clinux_recvmmsg(int fd, void *const *bufs, uint32_t capacity, uint32_t *lens, clinux_addr *froms, clinux_addr *locals, int64_t *arrivals, int n) {
    if (n <= 0) return 0;
    if (n > 64) n = 64;
    struct mmsghdr msgs[64];
    struct iovec iovs[64];
    /* room for one SCM_TIMESTAMPNS per datagram */
    union { char buf[CMSG_SPACE(sizeof(struct timespec)) + CMSG_SPACE(sizeof(struct in6_pktinfo))]; struct cmsghdr align; } control[64];
    for (int i = 0; i < n; i++) {
        iovs[i].iov_base = bufs[i];
        iovs[i].iov_len = capacity;
        memset(&msgs[i], 0, sizeof(msgs[i]));
        msgs[i].msg_hdr.msg_iov = &iovs[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
        if (froms) {
            msgs[i].msg_hdr.msg_name = froms[i].storage;
            msgs[i].msg_hdr.msg_namelen = sizeof(froms[i].storage);
        }
        if (arrivals || locals) {
            msgs[i].msg_hdr.msg_control = control[i].buf;
            msgs[i].msg_hdr.msg_controllen = sizeof(control[i].buf);
        }
    }
    for (;;) {
        int rc = recvmmsg(fd, msgs, (unsigned)n, MSG_DONTWAIT, NULL);
        if (rc < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
            int e = errno;
            drain_error_queue(fd);
            return -e;
        }
        /* The kernel stamps with CLOCK_REALTIME; the caller's clock is CLOCK_MONOTONIC: shift by
           their difference now (a step of the wall clock between arrival and now shifts it too;
           the caller clamps). */
        int64_t shift = 0;
        if (arrivals) {
            struct timespec mono, real;
            clock_gettime(CLOCK_MONOTONIC, &mono);
            clock_gettime(CLOCK_REALTIME, &real);
            shift = ((int64_t)mono.tv_sec - (int64_t)real.tv_sec) * 1000000000 + ((int64_t)mono.tv_nsec - (int64_t)real.tv_nsec);
        }
        for (int i = 0; i < rc; i++) {
            /* a datagram longer than the buffer is truncated: report its real size (> capacity) */
            lens[i] = (msgs[i].msg_hdr.msg_flags & MSG_TRUNC) ? capacity + 1 : msgs[i].msg_len;
            if (froms) {
                froms[i].length = msgs[i].msg_hdr.msg_namelen;
                if (froms[i].length > sizeof(froms[i].storage)) froms[i].length = sizeof(froms[i].storage);
                unmap_v4(&froms[i]);
            }
            if (arrivals) arrivals[i] = 0;
            if (locals) locals[i].length = 0;
            if (arrivals || locals) {
                for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msgs[i].msg_hdr); cm; cm = CMSG_NXTHDR(&msgs[i].msg_hdr, cm)) {
                    if (arrivals && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_TIMESTAMPNS) {
                        struct timespec ts;
                        memcpy(&ts, CMSG_DATA(cm), sizeof(ts));
                        int64_t ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec + shift;
                        arrivals[i] = ns / 1000;
                    } else if (locals && cm->cmsg_level == IPPROTO_IP && cm->cmsg_type == IP_PKTINFO) {
                        /* the header's destination address (ip(7)): the candidate it was sent to */
                        struct in_pktinfo info;
                        memcpy(&info, CMSG_DATA(cm), sizeof(info));
                        struct sockaddr_in a;
                        memset(&a, 0, sizeof(a));
                        a.sin_family = AF_INET;
                        a.sin_addr = info.ipi_addr;
                        memset(locals[i].storage, 0, sizeof(locals[i].storage));
                        memcpy(locals[i].storage, &a, sizeof(a));
                        locals[i].length = sizeof(a);
                    } else if (locals && cm->cmsg_level == IPPROTO_IPV6 && cm->cmsg_type == IPV6_PKTINFO) {
                        struct in6_pktinfo info;
                        memcpy(&info, CMSG_DATA(cm), sizeof(info));
                        struct sockaddr_in6 a;
                        memset(&a, 0, sizeof(a));
                        a.sin6_family = AF_INET6;
                        a.sin6_addr = info.ipi6_addr;
                        memset(locals[i].storage, 0, sizeof(locals[i].storage));
                        memcpy(locals[i].storage, &a, sizeof(a));
                        locals[i].length = sizeof(a);
                        unmap_v4(&locals[i]);
                    }
                }
            }
        }
        return rc;
    }
}

int clinux_wait_readable(int fd_a, int fd_b, int64_t timeout_us) {
    struct pollfd pfd[2] = {{.fd = fd_a, .events = POLLIN}, {.fd = fd_b, .events = POLLIN}};
    struct timespec ts, *tsp = NULL;
    if (timeout_us >= 0) {
        ts.tv_sec = timeout_us / 1000000;
        ts.tv_nsec = (timeout_us % 1000000) * 1000;
        tsp = &ts;
    }
    int rc = ppoll(pfd, fd_b >= 0 ? 2 : 1, tsp, NULL);
    if (rc < 0) return errno == EINTR ? 0 : -errno;
    int mask = 0;
    if (pfd[0].revents & (POLLIN | POLLERR)) mask |= 1;
    if (fd_b >= 0 && (pfd[1].revents & POLLIN)) mask |= 2;
    return mask;
}

int clinux_wait_many(const int *fds, uint8_t *ready, int n, int64_t timeout_us) {
    enum { chunk = 256 };
    struct pollfd stack[chunk];
    struct pollfd *pfd = n <= chunk ? stack : malloc(sizeof(struct pollfd) * (size_t)n);
    if (!pfd) return -ENOMEM;
    for (int i = 0; i < n; i++) { pfd[i].fd = fds[i]; pfd[i].events = POLLIN; pfd[i].revents = 0; }
    struct timespec ts, *tsp = NULL;
    if (timeout_us >= 0) {
        ts.tv_sec = timeout_us / 1000000;
        ts.tv_nsec = (timeout_us % 1000000) * 1000;
        tsp = &ts;
    }
    int rc = ppoll(pfd, (nfds_t)n, tsp, NULL);
    if (rc < 0) rc = errno == EINTR ? 0 : -errno;
    for (int i = 0; i < n; i++) ready[i] = rc > 0 && (pfd[i].revents & (POLLIN | POLLERR)) ? 1 : 0;
    if (pfd != stack) free(pfd);
    return rc;
}

int clinux_epoll_create(void) {
    int fd = epoll_create1(EPOLL_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

int clinux_epoll_ctl(int epfd, int fd, uint64_t tag, int add) {
    struct epoll_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.events = EPOLLIN;
    ev.data.u64 = tag;
    return epoll_ctl(epfd, add ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, fd, &ev) == 0 ? 0 : -errno;
}

int clinux_epoll_wait(int epfd, uint64_t *tags, int max, int64_t timeout_us) {
    enum { chunk = 256 };
    struct epoll_event evs[chunk];
    if (max > chunk) max = chunk;
    int rc;
#ifdef SYS_epoll_pwait2
    struct timespec ts = {.tv_sec = timeout_us / 1000000, .tv_nsec = (timeout_us % 1000000) * 1000};
    rc = (int)syscall(SYS_epoll_pwait2, epfd, evs, max, timeout_us < 0 ? NULL : &ts, NULL, 0);
    if (rc < 0 && errno == ENOSYS)
#endif
        rc = epoll_wait(epfd, evs, max, timeout_us < 0 ? -1 : (int)((timeout_us + 999) / 1000));
    if (rc < 0) return errno == EINTR ? 0 : -errno;
    for (int i = 0; i < rc; i++) tags[i] = evs[i].data.u64;
    return rc;
}

int clinux_eventfd_open(void) {
    int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    return fd < 0 ? -errno : fd;
}
int clinux_eventfd_signal(int fd) {
    uint64_t one = 1;
    return write(fd, &one, sizeof(one)) == sizeof(one) ? 0 : -errno;
}
int clinux_eventfd_drain(int fd) {
    uint64_t v;
    return read(fd, &v, sizeof(v)) == sizeof(v) ? 0 : -errno;
}

int64_t clinux_thread_cpu_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t clinux_monotonic_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}
int64_t clinux_realtime_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}
void clinux_sleep_until_us(int64_t deadline_us) {
    struct timespec ts = {.tv_sec = deadline_us / 1000000, .tv_nsec = (deadline_us % 1000000) * 1000};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {}
}
int clinux_random(void *buf, size_t len) {
    size_t got = 0;
    while (got < len) {
        ssize_t rc = getrandom((char *)buf + got, len - got, 0);
        if (rc < 0) { if (errno == EINTR) continue; return -errno; }
        got += (size_t)rc;
    }
    return 0;
}
int clinux_isatty(int fd) { return isatty(fd); }

int clinux_interfaces(clinux_interface *out, int max) {
    struct ifaddrs *list = NULL;
    if (getifaddrs(&list) != 0) return -errno;
    int n = 0;
    for (struct ifaddrs *i = list; i != NULL && n < max; i = i->ifa_next) {
        if (i->ifa_addr == NULL) continue;
        int fam = i->ifa_addr->sa_family;
        if (fam != AF_INET && fam != AF_INET6) continue;
        clinux_interface *o = &out[n++];
        memset(o, 0, sizeof *o);
        strncpy(o->name, i->ifa_name, sizeof o->name - 1);
        if (fam == AF_INET) {
            o->family = 4;
            memcpy(o->ip, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, 4);
        } else {
            o->family = 6;
            memcpy(o->ip, &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr, 16);
        }
        o->flags = ((i->ifa_flags & IFF_LOOPBACK) ? 1 : 0) | ((i->ifa_flags & IFF_UP) ? 2 : 0);
    }
    freeifaddrs(list);
    return n;
}

#include <malloc.h>
/* Hands the heap's free pages back to the kernel (glibc keeps freed memory in its arenas: after
   a burst of sessions is released, RSS would otherwise stay at its peak). */
void clinux_release_free_memory(void) { malloc_trim(0); }
