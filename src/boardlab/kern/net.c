/* io.net: TCP stream, paced UDP stream and TCP request/response against a boardlab-kern sink.
 *
 * The peer is a sink: by default this kernel forks one on `sink_addr` (loopback, or an address inside a
 * network namespace a condition made) pinned to `sink_cpu`; with `peer=HOST:PORT` it uses one started
 * elsewhere with `boardlab-kern net-sink --listen HOST:PORT` (another board). Every session starts on a TCP
 * control connection (hello: kind and message size) and ends with the sink's report (bytes and datagrams
 * received, UDP jitter and reordering, its CPU time), which the client checks against what it sent.
 *
 *   tcp_stream: one rep is one send of msg_bytes through the chosen send path (its goodput counts the bytes
 *       the sink acknowledged during the iteration, so what the socket's buffer took is not taken for the link):
 *       write, sendfile (from a memfd), splice (memfd -> pipe -> socket), msg_zerocopy (SO_ZEROCOPY, with
 *       SO_EE_CODE_ZEROCOPY_COPIED counted from the error queue), uring_zc (io_uring send_zc with
 *       IORING_SEND_ZC_REPORT_USAGE). Whether the kernel copied anyway is recorded: on loopback and veth
 *       it always does (Documentation/networking/msg_zerocopy.rst).
 *   udp_stream: one rep is one datagram of udp_bytes carrying (magic, sequence, send time), paced at
 *       rate_bit_s; the sink counts loss, reordering and the RFC 3550 interarrival jitter
 *       (J += (|D| - J) / 16 over transit-time differences).
 *   tcp_rr: one rep is one transaction: msg_bytes out, the same back; a latency histogram.
 */
#include "core.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/errqueue.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <linux/sockios.h>
#include <time.h>
#include <unistd.h>

#if BK_HAVE_LIBURING
#include <liburing.h>
/* Kernel ABI (include/uapi/linux/io_uring.h, 6.2+) that liburing 2.3's own copy of the header predates. */
#ifndef IORING_SEND_ZC_REPORT_USAGE
#define IORING_SEND_ZC_REPORT_USAGE (1U << 3)
#endif
#ifndef IORING_NOTIF_USAGE_ZC_COPIED
#define IORING_NOTIF_USAGE_ZC_COPIED (1U << 31)
#endif
#endif

#include "iohist.h"
#include "net.h"

#define NET_MAGIC 0x626c2d6e65742d31ULL
#define UDP_MAGIC 0x626c2d7564702d31ULL
#define ZC_BUFS 8

enum { KIND_STREAM = 1, KIND_RR = 2, KIND_UDP = 3 };

typedef struct {
    uint64_t magic;
    uint32_t kind, msg_bytes;
} hello_msg;

typedef struct {
    uint64_t magic, sent_datagrams;
} udp_end_msg;

typedef struct {
    uint64_t magic;
    uint64_t bytes, datagrams, reordered, max_seq_plus1, bad;
    uint64_t cpu_ns;
    double jitter_ns;
} report_msg;

typedef struct {
    uint64_t magic, seq, send_ns;
} udp_hdr;

/* ================================================================================================
 * The sink
 * ================================================================================================ */

static void sink_udp_packet(report_msg *rep, const udp_hdr *h, ssize_t len, uint64_t now, double *last_transit,
                            bool *have_transit)
{
    if (len < (ssize_t)sizeof *h || h->magic != UDP_MAGIC) {
        rep->bad++;
        return;
    }
    rep->datagrams++;
    rep->bytes += (uint64_t)len;
    if (h->seq + 1 < rep->max_seq_plus1)
        rep->reordered++;
    else
        rep->max_seq_plus1 = h->seq + 1;
    /* RFC 3550 A.8: the clocks' offset cancels in the difference of successive transit times. */
    double transit = (double)now - (double)h->send_ns;
    if (*have_transit) {
        double d = transit - *last_transit;
        rep->jitter_ns += ((d < 0 ? -d : d) - rep->jitter_ns) / 16.0;
    }
    *last_transit = transit;
    *have_transit = true;
}

/* One session on an accepted control connection. */
static void sink_session(int conn, int udp)
{
    hello_msg hello;
    if (bk_read_full(conn, &hello, sizeof hello) != 1 || hello.magic != NET_MAGIC)
        return;
    report_msg rep = {.magic = NET_MAGIC};
    uint64_t cpu0 = bk_clock_ns(CLOCK_PROCESS_CPUTIME_ID);
    size_t bufsz = hello.msg_bytes > 65536 ? hello.msg_bytes : 65536;
    char *buf = malloc(bufsz);
    if (!buf)
        return;
    if (hello.kind == KIND_STREAM) {
        for (;;) {
            ssize_t r = read(conn, buf, bufsz);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                break;
            rep.bytes += (uint64_t)r;
        }
    } else if (hello.kind == KIND_RR) {
        while (bk_read_full(conn, buf, hello.msg_bytes) == 1) {
            rep.bytes += hello.msg_bytes;
            if (bk_write_full(conn, buf, hello.msg_bytes) != 0)
                break;
        }
    } else if (hello.kind == KIND_UDP && udp >= 0) {
        double last = 0;
        bool have = false;
        udp_end_msg end = {0};
        bool ended = false;
        /* Drain stale datagrams of an earlier session first. */
        while (recv(udp, buf, bufsz, MSG_DONTWAIT) > 0)
            ;
        /* Confirm readiness, so the client does not send before the socket is drained. */
        uint64_t ready = NET_MAGIC;
        if (bk_write_full(conn, &ready, sizeof ready) != 0) {
            free(buf);
            return;
        }
        for (;;) {
            struct pollfd pf[2] = {{.fd = udp, .events = POLLIN}, {.fd = conn, .events = ended ? 0 : POLLIN}};
            int n = poll(pf, 2, ended ? 100 : 10000);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break; /* after the end message, 100 ms of silence closes the session */
            if (pf[0].revents & POLLIN) {
                for (;;) {
                    ssize_t r = recv(udp, buf, bufsz, MSG_DONTWAIT);
                    if (r < 0)
                        break;
                    sink_udp_packet(&rep, (const udp_hdr *)buf, r, bk_now_ns(), &last, &have);
                }
            }
            if (!ended && (pf[1].revents & (POLLIN | POLLHUP))) {
                if (bk_read_full(conn, &end, sizeof end) != 1)
                    break;
                ended = true;
                if (rep.datagrams >= end.sent_datagrams)
                    break;
            }
        }
    }
    rep.cpu_ns = bk_clock_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
    bk_write_full(conn, &rep, sizeof rep);
    free(buf);
}

static void sink_serve(int lfd, int udp, bool once)
{
    for (;;) {
        int conn = accept(lfd, NULL, NULL);
        if (conn < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        int one = 1;
        setsockopt(conn, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        sink_session(conn, udp);
        close(conn);
        if (once)
            return;
    }
}

/* Parses "HOST:PORT" (IPv4 or [IPv6]:PORT) into a sockaddr. */
static int parse_addr(const char *text, struct sockaddr_storage *ss, socklen_t *len)
{
    char host[256];
    const char *colon = strrchr(text, ':');
    if (!colon || colon == text)
        return -1;
    size_t hl = (size_t)(colon - text);
    if (text[0] == '[' && hl >= 2 && text[hl - 1] == ']')
        snprintf(host, sizeof host, "%.*s", (int)(hl - 2), text + 1);
    else
        snprintf(host, sizeof host, "%.*s", (int)hl, text);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_flags = AI_NUMERICHOST}, *ai = NULL;
    if (getaddrinfo(host, colon + 1, &hints, &ai) != 0 || !ai)
        return -1;
    memcpy(ss, ai->ai_addr, ai->ai_addrlen);
    *len = ai->ai_addrlen;
    freeaddrinfo(ai);
    return 0;
}

/* A TCP listener and a UDP socket on the same address and port (port 0: the kernel picks one). */
static int sink_sockets(const char *addr, int *lfd, int *udp, char *bound, size_t blen, int rcvbuf)
{
    struct sockaddr_storage ss;
    socklen_t len;
    if (parse_addr(addr, &ss, &len) != 0)
        return -1;
    *lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(*lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (*lfd < 0 || bind(*lfd, (struct sockaddr *)&ss, len) != 0 || listen(*lfd, 4) != 0)
        return -1;
    getsockname(*lfd, (struct sockaddr *)&ss, &len);
    *udp = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    /* SO_RCVBUFFORCE (root) goes past net.core.rmem_max for this socket only; SO_RCVBUF is capped by it. */
    if (rcvbuf > 0 && setsockopt(*udp, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf) != 0)
        setsockopt(*udp, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    if (*udp < 0 || bind(*udp, (struct sockaddr *)&ss, len) != 0)
        return -1;
    char host[128] = "?";
    int port = 0;
    if (ss.ss_family == AF_INET) {
        inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, host, sizeof host);
        port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
        snprintf(bound, blen, "%s:%d", host, port);
    } else {
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, host, sizeof host);
        port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
        snprintf(bound, blen, "[%s]:%d", host, port);
    }
    return 0;
}

int bk_net_sink_main(int argc, char **argv)
{
    const char *listen_at = NULL;
    bool once = false;
    int cpu = -1, rcvbuf = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--listen") == 0 && i + 1 < argc)
            listen_at = argv[++i];
        else if (strcmp(argv[i], "--once") == 0)
            once = true;
        else if (strcmp(argv[i], "--cpu") == 0 && i + 1 < argc)
            cpu = atoi(argv[++i]);
        else if (strcmp(argv[i], "--rcvbuf") == 0 && i + 1 < argc)
            rcvbuf = atoi(argv[++i]);
        else {
            fprintf(stderr,
                    "usage: boardlab-kern net-sink --listen HOST:PORT [--once] [--cpu N] [--rcvbuf BYTES]\n"
                    "  serves io.net sessions (TCP and UDP on the same port) until killed, or one with --once\n");
            return 2;
        }
    }
    if (!listen_at) {
        fprintf(stderr, "boardlab-kern net-sink: --listen HOST:PORT is required (port 0: any free port)\n");
        return 2;
    }
    if (cpu >= 0 && bk_pin_thread_to_cpu(cpu) != 0) {
        fprintf(stderr, "boardlab-kern net-sink: cannot pin to CPU %d\n", cpu);
        return 1;
    }
    int lfd, udp;
    char bound[160];
    if (sink_sockets(listen_at, &lfd, &udp, bound, sizeof bound, rcvbuf) != 0) {
        fprintf(stderr, "boardlab-kern net-sink: cannot listen on %s: %s\n", listen_at, strerror(errno));
        return 1;
    }
    printf("listening %s\n", bound);
    fflush(stdout);
    signal(SIGPIPE, SIG_IGN);
    sink_serve(lfd, udp, once);
    return 0;
}

/* ================================================================================================
 * The client: the io.net kernel
 * ================================================================================================ */

typedef enum { M_TCP, M_UDP, M_RR } net_mode;
typedef enum { P_WRITE, P_SENDFILE, P_SPLICE, P_ZEROCOPY, P_URING_ZC } send_path;

typedef struct {
    net_mode mode;
    send_path path;
    size_t msg;
    double rate_bit_s;
    int ctl, udp; /* control/data TCP socket; UDP socket */
    pid_t sink_pid;
    char *buf;
    int memfd, pipefd[2];
    uint64_t sent_bytes, sent_msgs, seq, tx_ns0, rr_bad;
    uint64_t pace_ns0, pace_bytes, last_run_end_ns;
    uint64_t cpu_ns_run, cpu_t0;
    uint64_t last_reps;
    bk_hist hist;
    /* msg_zerocopy bookkeeping */
    uint32_t zc_next_id, zc_done_hi;
    bool zc_any_done;
    uint64_t zc_completions, zc_copied;
    uint64_t buf_id[ZC_BUFS];
    bool corrupted;
#if BK_HAVE_URING_SEND_ZC
    struct io_uring ring;
    bool ring_ok;
#endif
} net_state;

static const bk_param net_params[] = {
    {"mode", BK_ENUM, 0, 0, "tcp_stream", "tcp_stream,udp_stream,tcp_rr", NULL,
     "tcp_stream: bulk TCP; udp_stream: paced datagrams with sequence numbers; tcp_rr: request/response"},
    {"send_path", BK_ENUM, 0, 0, "write", "write,sendfile,splice,msg_zerocopy,uring_zc", NULL,
     "tcp_stream's send call: write, sendfile, splice, send MSG_ZEROCOPY, io_uring send_zc"},
    {"msg_bytes", BK_INT, 1, 16777216, "128k", NULL, "bytes", "bytes per send (tcp_stream) or per request (tcp_rr)"},
    {"udp_bytes", BK_INT, 32, 65507, "1400", NULL, "bytes", "datagram payload (udp_stream)"},
    {"rate_bit_s", BK_FLOAT, 0, 1e12, "100e6", NULL, "bit/s", "udp_stream's offered rate (payload bits); 0 = unpaced"},
    {"peer", BK_STR, 0, 0, "", NULL, NULL,
     "HOST:PORT of a running `boardlab-kern net-sink`; empty: fork a sink on sink_addr for this run"},
    {"sink_addr", BK_STR, 0, 0, "127.0.0.1:0", NULL, NULL,
     "where the forked sink listens (port 0: any free port); e.g. a namespace peer's address"},
    {"sink_cpu", BK_INT, -1, 4095, "-1", NULL, NULL, "CPU the forked sink is pinned to; -1 = not pinned"},
    {"sockbuf_bytes", BK_INT, 0, 1073741824.0, "0", NULL, "bytes",
     "SO_SNDBUF/SO_RCVBUF on both ends; 0 = the system's default"},
    {0},
};

static const bk_metric net_metrics[] = {
    {"goodput_bit_s", "bit/s", true, BK_RATE, -1, 8.0,
     "payload bits per second: the sink acknowledged (tcp_stream), sent (udp_stream)"},
    {"transactions_s", "1/s", true, BK_RATE, -1, 1.0, "tcp_rr: request/response pairs per second"},
    {"received_bit_s", "bit/s", true, BK_VALUE, -1, 1.0, "payload bits the sink received per second of sending"},
    {"loss_percent", "%", false, BK_VALUE, -1, 1.0, "udp_stream: datagrams sent but never received, percent"},
    {"jitter_ns", "ns", false, BK_VALUE, -1, 1.0, "udp_stream: RFC 3550 interarrival jitter at the sink"},
    {"latency_p50_ns", "ns", false, BK_VALUE, -1, 1.0, "tcp_rr: median transaction latency"},
    {"latency_p99_ns", "ns", false, BK_VALUE, -1, 1.0, "tcp_rr: 99th percentile transaction latency"},
    {"latency_p999_ns", "ns", false, BK_VALUE, -1, 1.0, "tcp_rr: 99.9th percentile transaction latency"},
    {"cpu_ns_per_byte_sender", "ns/B", false, BK_VALUE, -1, 1.0, "sender thread CPU time per payload byte"},
    {"cpu_ns_per_byte_receiver", "ns/B", false, BK_VALUE, -1, 1.0, "sink process CPU time per payload byte"},
    {0},
};

static const char *path_names[] = {"write", "sendfile", "splice", "msg_zerocopy", "uring_zc"};

static int connect_to(bk_ctx *ctx, const char *addr, int type)
{
    struct sockaddr_storage ss;
    socklen_t len;
    if (parse_addr(addr, &ss, &len) != 0)
        return bk_fail(ctx, "peer '%s' is not HOST:PORT with a numeric host", addr);
    int fd = socket(ss.ss_family, type | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return bk_fail(ctx, "socket: %s", strerror(errno));
    for (int attempt = 0; connect(fd, (struct sockaddr *)&ss, len) != 0; attempt++) {
        if (attempt > 50 || errno != ECONNREFUSED) {
            int e = errno;
            close(fd);
            return bk_fail(ctx, "cannot connect to the sink at %s: %s", addr, strerror(e));
        }
        usleep(20000);
    }
    return fd;
}

/* Collects MSG_ZEROCOPY completions from the error queue; blocks until `want_id` is done if asked. */
static int zc_reap(bk_ctx *ctx, net_state *s, bool block, uint32_t want_id)
{
    for (;;) {
        if (s->zc_any_done && (int32_t)(s->zc_done_hi - want_id) >= 0)
            return 0;
        char control[128];
        struct msghdr msg = {.msg_control = control, .msg_controllen = sizeof control};
        ssize_t r = recvmsg(s->ctl, &msg, MSG_ERRQUEUE | MSG_DONTWAIT);
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!block)
                return 0;
            struct pollfd pf = {.fd = s->ctl, .events = 0};
            poll(&pf, 1, 100);
            continue;
        }
        if (r < 0)
            return bk_fail(ctx, "MSG_ERRQUEUE: %s", strerror(errno));
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
            struct sock_extended_err *ee = (struct sock_extended_err *)CMSG_DATA(cm);
            if (ee->ee_errno != 0 || ee->ee_origin != SO_EE_ORIGIN_ZEROCOPY)
                continue;
            uint32_t n = ee->ee_data - ee->ee_info + 1;
            s->zc_completions += n;
            if (ee->ee_code & SO_EE_CODE_ZEROCOPY_COPIED)
                s->zc_copied += n;
            if (!s->zc_any_done || (int32_t)(ee->ee_data - s->zc_done_hi) > 0)
                s->zc_done_hi = ee->ee_data;
            s->zc_any_done = true;
        }
    }
}

static int send_one(bk_ctx *ctx, net_state *s)
{
    size_t n = s->msg;
    switch (s->path) {
    case P_WRITE:
        if (bk_write_full(s->ctl, s->buf, n) != 0)
            return bk_fail(ctx, "write to the sink: %s", strerror(errno));
        return 0;
    case P_SENDFILE: {
        off_t off = 0;
        while ((size_t)off < n) {
            ssize_t w = sendfile(s->ctl, s->memfd, &off, n - (size_t)off);
            if (w <= 0)
                return bk_fail(ctx, "sendfile: %s", w < 0 ? strerror(errno) : "no progress");
        }
        return 0;
    }
    case P_SPLICE: {
        loff_t off = 0;
        size_t left = n;
        while (left) {
            ssize_t in = splice(s->memfd, &off, s->pipefd[1], NULL, left, SPLICE_F_MOVE);
            if (in <= 0)
                return bk_fail(ctx, "splice file->pipe: %s", in < 0 ? strerror(errno) : "no progress");
            for (ssize_t moved = 0; moved < in;) {
                ssize_t out = splice(s->pipefd[0], NULL, s->ctl, NULL, (size_t)(in - moved), SPLICE_F_MOVE);
                if (out <= 0)
                    return bk_fail(ctx, "splice pipe->socket: %s", out < 0 ? strerror(errno) : "no progress");
                moved += out;
            }
            left -= (size_t)in;
        }
        return 0;
    }
    case P_ZEROCOPY: {
        /* ZC_BUFS buffers in turn: one is reused only when the kernel has released it. */
        int b = (int)(s->sent_msgs % ZC_BUFS);
        if (s->sent_msgs >= ZC_BUFS && zc_reap(ctx, s, true, (uint32_t)s->buf_id[b]) != 0)
            return -1;
        char *p = s->buf + (size_t)b * n;
        size_t left = n;
        while (left) {
            ssize_t w = send(s->ctl, p + (n - left), left, MSG_ZEROCOPY);
            if (w < 0 && errno == ENOBUFS) {
                if (zc_reap(ctx, s, true, s->zc_next_id - 1) != 0)
                    return -1;
                continue;
            }
            if (w <= 0)
                return bk_fail(ctx, "send MSG_ZEROCOPY: %s", w < 0 ? strerror(errno) : "no progress");
            s->buf_id[b] = s->zc_next_id++; /* each successful call gets the next completion id */
            left -= (size_t)w;
        }
        return zc_reap(ctx, s, false, 0);
    }
    case P_URING_ZC: {
#if BK_HAVE_URING_SEND_ZC
        struct io_uring_sqe *sqe = io_uring_get_sqe(&s->ring);
        io_uring_prep_send_zc(sqe, s->ctl, s->buf, n, MSG_WAITALL, IORING_SEND_ZC_REPORT_USAGE);
        io_uring_submit(&s->ring);
        /* The send's completion, then its notification (the buffer is free again). */
        bool sent = false, notified = false;
        while (!sent || !notified) {
            struct io_uring_cqe *cqe;
            int rc = io_uring_wait_cqe(&s->ring, &cqe);
            if (rc < 0)
                return bk_fail(ctx, "io_uring_wait_cqe: %s", strerror(-rc));
            if (cqe->flags & IORING_CQE_F_NOTIF) {
                notified = true;
                s->zc_completions++;
                if ((uint32_t)cqe->res & IORING_NOTIF_USAGE_ZC_COPIED)
                    s->zc_copied++;
            } else {
                if (cqe->res != (int)n) {
                    int res = cqe->res;
                    io_uring_cqe_seen(&s->ring, cqe);
                    return bk_fail(ctx, "io_uring send_zc: %s", res < 0 ? strerror(-res) : "short send");
                }
                sent = true;
                if (!(cqe->flags & IORING_CQE_F_MORE))
                    notified = true; /* no notification will follow */
            }
            io_uring_cqe_seen(&s->ring, cqe);
        }
        return 0;
#else
        return bk_fail(ctx, "uring_zc: built without io_uring send_zc");
#endif
    }
    }
    return -1;
}

static const char *net_supported_path(send_path p)
{
#if !BK_HAVE_URING_SEND_ZC
    if (p == P_URING_ZC)
        return "send_path=uring_zc: built without liburing's io_uring_prep_send_zc (install liburing-dev >= 2.3)";
#endif
    (void)p;
    return NULL;
}

static int net_init(bk_ctx *ctx, void **state)
{
    net_state *s = bk_run_state(ctx, state, sizeof *s);
    if (!s)
        return -1;
    s->ctl = s->udp = s->memfd = s->pipefd[0] = s->pipefd[1] = -1;
    s->sink_pid = -1;
    bk_hist_init(&s->hist);
    const char *mode = bk_arg_str(ctx, "mode");
    s->mode = strcmp(mode, "tcp_stream") == 0 ? M_TCP : strcmp(mode, "udp_stream") == 0 ? M_UDP : M_RR;
    const char *path = bk_arg_str(ctx, "send_path");
    for (int i = 0; i < 5; i++)
        if (strcmp(path, path_names[i]) == 0)
            s->path = (send_path)i;
    if (s->mode != M_TCP && s->path != P_WRITE)
        return bk_fail(ctx, "send_path=%s applies to mode=tcp_stream only", path);
    const char *why = net_supported_path(s->path);
    if (why)
        return bk_unsupported(ctx, "%s", why);
    s->msg = (size_t)(s->mode == M_UDP ? bk_arg_int(ctx, "udp_bytes") : bk_arg_int(ctx, "msg_bytes"));
    if (s->mode == M_UDP && s->msg < sizeof(udp_hdr))
        return bk_fail(ctx, "udp_bytes must hold the %zu-byte sequence header", sizeof(udp_hdr));
    s->rate_bit_s = bk_arg_float(ctx, "rate_bit_s");
    int sockbuf = (int)bk_arg_int(ctx, "sockbuf_bytes");
    signal(SIGPIPE, SIG_IGN);
    if (s->mode == M_UDP)
        prctl(PR_SET_TIMERSLACK, 1000UL); /* pacing sleeps wake within 1 us of their due time */

    char peer[160];
    const char *given = bk_arg_str(ctx, "peer");
    if (given[0])
        snprintf(peer, sizeof peer, "%s", given);
    else {
        int lfd, udp;
        if (sink_sockets(bk_arg_str(ctx, "sink_addr"), &lfd, &udp, peer, sizeof peer, sockbuf) != 0)
            return bk_fail(ctx, "cannot open the sink's sockets on sink_addr=%s: %s", bk_arg_str(ctx, "sink_addr"),
                           strerror(errno));
        int sink_cpu = (int)bk_arg_int(ctx, "sink_cpu");
        pid_t parent = getpid();
        s->sink_pid = fork();
        if (s->sink_pid < 0)
            return bk_fail(ctx, "fork of the sink: %s", strerror(errno));
        if (s->sink_pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the run */
            if (getppid() != parent)
                _exit(1);
            if (sink_cpu >= 0) {
                cpu_set_t set;
                CPU_ZERO(&set);
                CPU_SET(sink_cpu, &set);
                if (sched_setaffinity(0, sizeof set, &set) != 0)
                    _exit(3);
            }
            sink_serve(lfd, udp, true);
            _exit(0);
        }
        close(lfd);
        close(udp);
        bk_info_num(ctx, "sink_pid", s->sink_pid);
        bk_info_num(ctx, "sink_cpu", sink_cpu);
    }
    bk_info_str(ctx, "peer", peer);
    s->ctl = connect_to(ctx, peer, SOCK_STREAM);
    if (s->ctl < 0)
        return -1;
    int one = 1;
    if (s->mode == M_RR)
        setsockopt(s->ctl, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (sockbuf > 0) {
        setsockopt(s->ctl, SOL_SOCKET, SO_SNDBUF, &sockbuf, sizeof sockbuf);
        setsockopt(s->ctl, SOL_SOCKET, SO_RCVBUF, &sockbuf, sizeof sockbuf);
    }
    hello_msg hello = {NET_MAGIC,
                       s->mode == M_TCP  ? KIND_STREAM
                       : s->mode == M_RR ? KIND_RR
                                         : KIND_UDP,
                       (uint32_t)s->msg};
    if (bk_write_full(s->ctl, &hello, sizeof hello) != 0)
        return bk_fail(ctx, "the sink at %s closed the session: %s", peer, strerror(errno));

    size_t nbufs = s->path == P_ZEROCOPY ? ZC_BUFS : 1;
    s->buf = bk_alloc(s->msg * nbufs);
    if (!s->buf)
        return bk_fail(ctx, "cannot allocate %zu bytes", s->msg * nbufs);
    uint64_t st = NET_MAGIC;
    for (size_t i = 0; i + 8 <= s->msg * nbufs; i += 8) {
        uint64_t v = bk_rand_next(&st);
        memcpy(s->buf + i, &v, 8);
    }
    if (s->path == P_SENDFILE || s->path == P_SPLICE) {
        /* The file's data lives in memory only: nothing is written where the user did not say. */
        s->memfd = memfd_create("boardlab-net", MFD_CLOEXEC);
        if (s->memfd < 0 || bk_write_full(s->memfd, s->buf, s->msg) != 0)
            return bk_fail(ctx, "memfd for %s: %s", path, strerror(errno));
        if (s->path == P_SPLICE) {
            if (pipe2(s->pipefd, O_CLOEXEC) != 0)
                return bk_fail(ctx, "pipe: %s", strerror(errno));
            fcntl(s->pipefd[1], F_SETPIPE_SZ, (int)(s->msg < 1048576 ? s->msg : 1048576));
        }
    }
    if (s->path == P_ZEROCOPY && setsockopt(s->ctl, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof one) != 0)
        return bk_unsupported(ctx, "send_path=msg_zerocopy: SO_ZEROCOPY refused: %s", strerror(errno));
#if BK_HAVE_URING_SEND_ZC
    if (s->path == P_URING_ZC) {
        int rc = io_uring_queue_init(8, &s->ring, 0);
        if (rc == -EPERM || rc == -EACCES)
            return bk_unsupported(ctx,
                                  "io_uring denied (io_uring_setup: %s): kernel.io_uring_disabled or a "
                                  "seccomp filter forbids it",
                                  strerror(-rc));
        if (rc < 0)
            return bk_unsupported(ctx, "io_uring unavailable: %s", strerror(-rc));
        s->ring_ok = true;
    }
#endif
    if (s->mode == M_UDP) {
        uint64_t ready;
        if (bk_read_full(s->ctl, &ready, sizeof ready) != 1 || ready != NET_MAGIC)
            return bk_fail(ctx, "the sink did not confirm the UDP session");
        s->udp = connect_to(ctx, peer, SOCK_DGRAM);
        if (s->udp < 0)
            return -1;
        if (sockbuf > 0)
            setsockopt(s->udp, SOL_SOCKET, SO_SNDBUF, &sockbuf, sizeof sockbuf);
    }
    bk_info_str(ctx, "send_path", s->mode == M_TCP ? path_names[s->path] : "write");
    if (s->mode == M_RR) {
        bk_skip_metric(ctx, "goodput_bit_s", "tcp_rr reports transactions_s");
        bk_set_amount(ctx, "transactions_s", 1.0);
    } else {
        bk_skip_metric(ctx, "transactions_s", "only tcp_rr has transactions");
        bk_set_amount(ctx, "goodput_bit_s", (double)s->msg);
    }
    if (s->mode != M_UDP) {
        bk_skip_metric(ctx, "loss_percent", "only udp_stream counts loss");
        bk_skip_metric(ctx, "jitter_ns", "only udp_stream measures jitter");
    }
    if (s->mode != M_RR) {
        bk_skip_metric(ctx, "latency_p50_ns", "only tcp_rr measures transaction latency");
        bk_skip_metric(ctx, "latency_p99_ns", "only tcp_rr measures transaction latency");
        bk_skip_metric(ctx, "latency_p999_ns", "only tcp_rr measures transaction latency");
    }
    return 0;
}

/* Sleeps until the datagram's due time (from the bytes sent so far, so errors do not accumulate); no spinning,
 * so the sender's CPU time per byte stays the cost of sending. Timer slack is set to 1 us in init. */
static void pace(net_state *s)
{
    if (s->rate_bit_s <= 0)
        return;
    uint64_t now = bk_now_ns();
    if (!s->pace_ns0)
        s->pace_ns0 = now;
    uint64_t due = s->pace_ns0 + (uint64_t)((double)s->pace_bytes * 8.0 * 1e9 / s->rate_bit_s);
    if (due > now) {
        struct timespec ts = {.tv_sec = (time_t)((due - now) / 1000000000ULL),
                              .tv_nsec = (long)((due - now) % 1000000000ULL)};
        nanosleep(&ts, NULL);
    }
    s->pace_bytes += s->msg;
}

/* Bytes written to the TCP socket that the sink has not acknowledged yet (SIOCOUTQ: write_seq - snd_una). */
static int unacked_bytes(const net_state *s)
{
    int n = 0;
    return ioctl(s->ctl, SIOCOUTQ, &n) == 0 ? n : -1;
}

static int net_run(bk_ctx *ctx, void *state, uint64_t reps)
{
    net_state *s = state;
    int unacked0 = s->mode == M_TCP ? unacked_bytes(s) : -1;
    if (reps != s->last_reps) {
        bk_hist_init(&s->hist);
        s->last_reps = reps;
    }
    uint64_t c0 = bk_clock_ns(CLOCK_THREAD_CPUTIME_ID);
    if (!s->tx_ns0)
        s->tx_ns0 = bk_now_ns();
    /* The pacing clock stops between timed iterations: the gap earns no credit for a burst. */
    if (s->pace_ns0 && s->last_run_end_ns)
        s->pace_ns0 += bk_now_ns() - s->last_run_end_ns;
    for (uint64_t r = 0; r < reps; r++) {
        if (s->mode == M_TCP) {
            if (send_one(ctx, s) != 0)
                return -1;
        } else if (s->mode == M_RR) {
            uint64_t t0 = bk_now_ns();
            memcpy(s->buf, &s->sent_msgs, s->msg < 8 ? s->msg : 8);
            if (bk_write_full(s->ctl, s->buf, s->msg) != 0 || bk_read_full(s->ctl, s->buf, s->msg) != 1)
                return bk_fail(ctx, "transaction %llu: the sink closed the connection",
                               (unsigned long long)s->sent_msgs);
            uint64_t back = 0;
            memcpy(&back, s->buf, s->msg < 8 ? s->msg : 8);
            if (s->msg >= 8 && back != s->sent_msgs)
                s->rr_bad++;
            bk_hist_add(&s->hist, bk_now_ns() - t0);
        } else {
            pace(s);
            udp_hdr h = {UDP_MAGIC, s->seq++, bk_now_ns()};
            memcpy(s->buf, &h, sizeof h);
            ssize_t w = send(s->udp, s->buf, s->msg, 0);
            if (w < 0 && errno != ENOBUFS && errno != ECONNREFUSED)
                return bk_fail(ctx, "send datagram: %s", strerror(errno));
        }
        s->sent_msgs++;
        s->sent_bytes += s->msg;
    }
    s->cpu_ns_run += bk_clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
    /* A send() returns once the data is in the socket's buffer, and the buffer frees in steps of up to half
     * its size: a short iteration would be timed by those steps (alternately a free buffer at memory speed
     * and a whole step at the link's), and a path drained by a pause takes an iteration at memory speed.
     * What the sink acknowledged during the iteration is what crossed the link in its time. */
    int unacked1 = s->mode == M_TCP ? unacked_bytes(s) : -1;
    if (unacked0 >= 0 && unacked1 >= 0)
        bk_set_iteration_amount(ctx, "goodput_bit_s", (double)(reps * s->msg) + unacked0 - unacked1);
    s->last_run_end_ns = bk_now_ns();
    return 0;
}

static void net_corrupt(void *state) { ((net_state *)state)->corrupted = true; }

static int net_verify(bk_ctx *ctx, void *state)
{
    net_state *s = state;
    uint64_t tx_ns = bk_now_ns() - s->tx_ns0;
    if (s->mode == M_TCP && s->path == P_ZEROCOPY)
        zc_reap(ctx, s, true, s->zc_next_id - 1);
    if (s->mode == M_UDP) {
        udp_end_msg end = {NET_MAGIC, s->seq};
        if (bk_write_full(s->ctl, &end, sizeof end) != 0)
            return bk_fail(ctx, "the sink closed the control connection early");
    } else
        shutdown(s->ctl, SHUT_WR);
    report_msg rep;
    if (bk_read_full(s->ctl, &rep, sizeof rep) != 1 || rep.magic != NET_MAGIC)
        return bk_fail(ctx, "no report from the sink");
    if (s->corrupted)
        rep.bytes ^= 1; /* as if a byte had gone missing on the way */
    bk_info_num(ctx, "sent_bytes", (double)s->sent_bytes);
    bk_info_num(ctx, "received_bytes", (double)rep.bytes);
    double secs = (double)tx_ns * 1e-9;
    if (s->sent_bytes)
        bk_set_value(ctx, "cpu_ns_per_byte_sender", (double)s->cpu_ns_run / (double)s->sent_bytes);
    if (rep.bytes)
        bk_set_value(ctx, "cpu_ns_per_byte_receiver", (double)rep.cpu_ns / (double)rep.bytes);
    bk_set_value(ctx, "received_bit_s", secs > 0 ? (double)rep.bytes * 8.0 / secs : 0);
    if (s->mode == M_TCP || s->mode == M_RR) {
        if (s->path == P_ZEROCOPY || s->path == P_URING_ZC) {
            bk_info_num(ctx, "zerocopy_completions", (double)s->zc_completions);
            bk_info_num(ctx, "zerocopy_copied", (double)s->zc_copied);
            bk_info_str(ctx, "kernel_copied",
                        s->zc_completions == 0              ? "unknown (no completion reported)"
                        : s->zc_copied == s->zc_completions ? "yes: every send was copied (loopback/veth always copy)"
                        : s->zc_copied                      ? "partly"
                                                            : "no");
        } else
            bk_info_str(ctx, "kernel_copied",
                        s->path == P_WRITE ? "yes: write copies by design" : "not reported by sendfile/splice");
        if (s->mode == M_RR) {
            bk_set_value(ctx, "latency_p50_ns", bk_hist_quantile(&s->hist, 0.5));
            bk_set_value(ctx, "latency_p99_ns", bk_hist_quantile(&s->hist, 0.99));
            bk_set_value(ctx, "latency_p999_ns", bk_hist_quantile(&s->hist, 0.999));
            bk_info_num(ctx, "latency_samples", (double)s->hist.count);
            if (s->rr_bad)
                return bk_fail(ctx, "%llu replies did not echo their request", (unsigned long long)s->rr_bad);
        }
        bk_set_checksum(ctx, rep.bytes);
        if (rep.bytes != s->sent_bytes)
            return bk_fail(ctx, "the sink received %llu bytes of the %llu sent", (unsigned long long)rep.bytes,
                           (unsigned long long)s->sent_bytes);
        return 0;
    }
    /* UDP */
    uint64_t lost = s->seq > rep.datagrams ? s->seq - rep.datagrams : 0;
    bk_set_value(ctx, "loss_percent", s->seq ? 100.0 * (double)lost / (double)s->seq : 0);
    bk_set_value(ctx, "jitter_ns", rep.jitter_ns);
    bk_info_num(ctx, "sent_datagrams", (double)s->seq);
    bk_info_num(ctx, "received_datagrams", (double)rep.datagrams);
    bk_info_num(ctx, "lost_datagrams", (double)lost);
    bk_info_num(ctx, "reordered_datagrams", (double)rep.reordered);
    bk_info_num(ctx, "offered_rate_bit_s", s->rate_bit_s);
    bk_set_checksum(ctx, rep.datagrams);
    if (rep.bad)
        return bk_fail(ctx, "the sink received %llu datagrams that were not ours", (unsigned long long)rep.bad);
    if (rep.datagrams > s->seq || rep.max_seq_plus1 > s->seq || s->corrupted)
        return bk_fail(ctx, "the sink counted %llu datagrams up to sequence %llu, but %llu were sent",
                       (unsigned long long)rep.datagrams, (unsigned long long)rep.max_seq_plus1,
                       (unsigned long long)s->seq);
    return 0;
}

static void net_fini(void *state)
{
    net_state *s = state;
#if BK_HAVE_URING_SEND_ZC
    if (s->ring_ok)
        io_uring_queue_exit(&s->ring);
#endif
    int fds[] = {s->ctl, s->udp, s->memfd, s->pipefd[0], s->pipefd[1]};
    for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    if (s->sink_pid > 0) {
        /* The sink ends its one session when the connection closes; give it a moment, then make sure. */
        for (int i = 0; i < 50 && waitpid(s->sink_pid, NULL, WNOHANG) == 0; i++)
            usleep(10000);
        if (waitpid(s->sink_pid, NULL, WNOHANG) == 0) {
            kill(s->sink_pid, SIGKILL);
            waitpid(s->sink_pid, NULL, 0);
        }
    }
    free(s->buf);
}

const bk_kernel bk_io_net = {
    .name = "io.net",
    .family = "io",
    .summary = "TCP stream (write/sendfile/splice/MSG_ZEROCOPY/io_uring zc), paced UDP, TCP request/response",
    .params = net_params,
    .metrics = net_metrics,
    .init = net_init,
    .run = net_run,
    .corrupt = net_corrupt,
    .verify = net_verify,
    .fini = net_fini,
    .calibrate_on_wall = true,
    /* A TCP iteration must span many acknowledgements and more than the buffer's release steps (see net_run):
     * one calibrated during slow start at the 1 ms default could be a single 64 KiB send. */
    .min_iteration_ms = 10,
};
