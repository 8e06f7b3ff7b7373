// Small Linux networking helpers Swift cannot call comfortably: batched UDP I/O (sendmmsg /
// recvmmsg), cmsg handling, UDP GSO, eventfd and ppoll. All functions return -errno on failure.
#ifndef PUBBOT_CLINUXNET_H
#define PUBBOT_CLINUXNET_H
#include <stdint.h>
#include <stddef.h>

typedef struct {
    /* A struct sockaddr_in or sockaddr_in6 (the only families pubbot speaks): 28 bytes, not a
       128-byte sockaddr_storage, so an address is cheap to copy (the receive path moves one per
       datagram; at 128 bytes each copy was a memmove call: 6 % of a 500-publisher receiver). */
    uint8_t storage[28];
    uint32_t length;      /* socklen_t */
} clinux_addr;

/// Resolves "host" (numeric or name) and port into an address. Returns 0 or -errno / -EAI.
/* family: 0 any (getaddrinfo's order, RFC 6724), 4 IPv4 only. */
int clinux_resolve(const char *host, int port, int family, clinux_addr *out);
/// Formats an address as "host:port" ("[v6]:port") into buf.
int clinux_format(const clinux_addr *addr, char *buf, size_t cap);
int clinux_addr_family(const clinux_addr *addr);
int clinux_addr_port(const clinux_addr *addr);
/// Builds an address from raw IP bytes (4: IPv4, 16: IPv6) and a port, with no resolver and no
/// text. Returns 0, or -EINVAL for another length or port.
int clinux_addr_from_ip(const uint8_t *ip, int ip_length, int port, clinux_addr *out);
/// Copies the address's IP bytes into `ip` (room for 16). Returns 4, 16, or -EAFNOSUPPORT.
int clinux_addr_ip(const clinux_addr *addr, uint8_t *ip);
/* An IPv4 address as IPv4-mapped IPv6 (for a dual-stack socket); others copied. 1 when mapped. */
int clinux_addr_v4_mapped(const clinux_addr *addr, clinux_addr *out);
/// The same address with another port (0, or -EAFNOSUPPORT).
int clinux_addr_set_port(clinux_addr *addr, int port);

/// The machine's interface addresses (getifaddrs): up to `max` entries of interface name (16
/// bytes), family (4 or 6), address bytes (16), flags (bit 0 loopback, bit 1 up). Returns the
/// count, or -errno.
typedef struct { char name[16]; int family; uint8_t ip[16]; int flags; } clinux_interface;
int clinux_interfaces(clinux_interface *out, int max);

/// Opens a non-blocking UDP socket of the address's family, with the requested buffer sizes.
int clinux_udp_open(int family, int rcvbuf, int sndbuf);
int clinux_bind(int fd, const clinux_addr *addr);
int clinux_local_addr(int fd, clinux_addr *out);
int clinux_close(int fd);
/// A TCP connection to dst (non-blocking afterwards, TCP_NODELAY), waiting at most timeout_ms
/// for the handshake. Returns the fd or -errno.
int clinux_tcp_connect(const clinux_addr *dst, int timeout_ms);
/// Non-blocking send: bytes written (0 when the buffer is full) or -errno.
long clinux_tcp_write(int fd, const void *buf, size_t len);
/// Non-blocking recv: bytes read, 0 when the peer closed, -EAGAIN when nothing waits, or -errno.
long clinux_tcp_read(int fd, void *buf, size_t cap);
/// The source address the kernel would use to reach dst (a UDP connect; nothing is sent).
int clinux_route_source(const clinux_addr *dst, clinux_addr *out);

/// Sends n datagrams to dst in as few sendmmsg calls as possible (n <= 64); from src when given
/// (a socket bound to the wildcard address: IP_PKTINFO / IPV6_PKTINFO), else as the kernel routes.
/// Returns the number sent (may be < n on EAGAIN) or -errno when none could be sent.
int clinux_sendmmsg(int fd, const clinux_addr *dst, const clinux_addr *src, void *const *bufs, const uint32_t *lens, int n);
/// ICMP refusals (ECONNREFUSED) of earlier datagrams that the sends since the last call met and
/// went past (this thread's); the caller reports them as the socket's receive would have.
int clinux_take_refusals(void);
/// Sends one buffer of equal-sized segments with UDP_SEGMENT (GSO). Returns bytes sent or -errno.
/// As clinux_sendmmsg, but each run of equal-size datagrams (plus at most one shorter one at its
/// end, ≤ 64 KB) goes as one UDP GSO message (UDP_SEGMENT): the kernel splits it into the same
/// datagrams with one trip through the stack. Returns datagrams sent or -errno.
int clinux_sendmmsg_gso(int fd, const clinux_addr *dst, const clinux_addr *src, void *const *bufs, const uint32_t *lens, int n);
int clinux_send_gso(int fd, const clinux_addr *dst, const void *buf, uint32_t len, uint16_t segment);
/// Whether this kernel accepts UDP_SEGMENT on this socket.
int clinux_gso_supported(int fd);

/// Receives up to n datagrams without blocking. lens[i] get the sizes, froms[i] the senders
/// (froms may be NULL). With `arrivals` (may be NULL) on a socket with receive timestamps on,
/// arrivals[i] gets when the kernel took datagram i in, on CLOCK_MONOTONIC in µs (0 when the
/// kernel attached none). Returns the count (0 when nothing is waiting) or -errno.
int clinux_recvmmsg(int fd, void *const *bufs, uint32_t capacity, uint32_t *lens, clinux_addr *froms, clinux_addr *locals, int64_t *arrivals, int n);
/// Has receives report each datagram's destination address (the `locals` of clinux_recvmmsg,
/// port 0; length 0 when the kernel gave none): IP_PKTINFO, and IPV6_RECVPKTINFO on IPv6.
int clinux_enable_pktinfo(int fd);
/// Asks the kernel to stamp each received datagram with its arrival time (SO_TIMESTAMPNS).
/// Returns 0 or -errno.
int clinux_enable_rx_timestamps(int fd);

/// Waits until fd_a or fd_b (-1 to ignore) is readable or timeout_us elapses (negative: forever).
/// Returns a bitmask: 1 = fd_a readable, 2 = fd_b readable, 0 = timeout; or -errno.
int clinux_wait_readable(int fd_a, int fd_b, int64_t timeout_us);

/// Waits until any of n fds is readable (or in error) or timeout_us elapses; ready[i] is set to 1
/// for each readable fd. Returns how many are ready, 0 on timeout, or -errno.
int clinux_wait_many(const int *fds, uint8_t *ready, int n, int64_t timeout_us);

/// epoll for fleets: only the ready sockets come back, however many are registered.
int clinux_epoll_create(void);
/// Registers fd for input with `tag` returned on readiness (add = 1) or removes it (add = 0).
int clinux_epoll_ctl(int epfd, int fd, uint64_t tag, int add);
/// Waits up to timeout_us (microsecond resolution where the kernel has epoll_pwait2) and
/// writes up to max ready tags. Returns how many, 0 on timeout, or -errno.
int clinux_epoll_wait(int epfd, uint64_t *tags, int max, int64_t timeout_us);

int clinux_eventfd_open(void);
int clinux_eventfd_signal(int fd);
int clinux_eventfd_drain(int fd);

/// Monotonic clock in microseconds.
int64_t clinux_monotonic_us(void);
/// glibc malloc_trim(0): free heap pages returned to the kernel.
void clinux_release_free_memory(void);
/// CPU time of the calling thread, microseconds.
int64_t clinux_thread_cpu_us(void);
/// Wall clock in microseconds since the Unix epoch.
int64_t clinux_realtime_us(void);
/// Sleeps until the monotonic clock reaches deadline_us.
void clinux_sleep_until_us(int64_t deadline_us);
/// Fills buf with cryptographically secure random bytes. Returns 0 or -errno.
int clinux_random(void *buf, size_t len);
/// Whether fd is a terminal.
int clinux_isatty(int fd);
#endif
