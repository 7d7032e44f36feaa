/* svc.pub: the VICTORY-like publisher. Data messages to a multicast group on an absolute schedule, from
 * fixed values, a GPS on a serial line or pty (svc.nmea feeds one) or a UDP INS feed; optionally software
 * TX timestamps, and the SOAP management endpoint (svc_server.c) embedded in a thread.
 * Messages are "VICTORY-like": the real schemas are not public, so they live in their own namespace. */
#include "svc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/errqueue.h>
#include <linux/net_tstamp.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

enum { SRC_SYNTHETIC, SRC_NMEA, SRC_INS };
enum { READ_CANONICAL, READ_BYTE, READ_BLOCK };

typedef struct {
    char group[64], iface[64], device[256];
    int port, kind, source, read_mode, ins_port;
    speed_t speed; /* of the GPS line */
    double rate_hz, duration_s;
    int fd, in_fd;
    svc_shared sh;
    svc_mgmt mgmt;
    int mgmt_on;
    pthread_t reader, mgmt_thread;
    int reader_on;
    volatile int reader_stop;
    /* reader results */
    uint64_t reader_reads, reader_bytes, reader_cpu_ns, sentences_ok, sentences_bad, ins_datagrams;
    /* publisher results */
    uint64_t sent, send_errors, skipped_disabled, payload_bytes;
    svc_samples build_ns, send_ns, lag_ns;
    uint64_t t0, t_end;
    uint64_t checksum;
    /* software TX timestamps (SO_TIMESTAMPING): when the kernel handed each message to the device */
    int tx_on; /* asked for */
    char tx_unsupported[256]; /* why there are none (empty: the kernel gave them) */
    uint64_t tx_id, tx_stamps; /* messages sent on the stamped socket; stamps read back */
    uint64_t tx_built[256]; /* built time of message id % 256, to pair a stamp with its message */
    svc_samples tx_ns; /* built -> software TX stamp */
} pub_state;

static const bk_param pub_params[] = {
    {"group", BK_STR, 0, 0, "239.255.0.5", NULL, NULL, "multicast group (IPv4)"},
    {"port", BK_INT, 1, 65535, "15000", NULL, NULL, "UDP port of the group"},
    {"iface_addr", BK_STR, 0, 0, "127.0.0.1", NULL, NULL, "address of the interface to send on (IP_MULTICAST_IF)"},
    {"rate_hz", BK_FLOAT, 0.01, 100000, "10", NULL, "Hz", "messages per second, on an absolute schedule"},
    {"duration_s", BK_FLOAT, 0.05, 604800, "10", NULL, "s", "how long to publish"},
    {"message", BK_ENUM, 0, 0, "position", "position,orientation,dot,raw", NULL,
     "data message: Position, Orientation, DirectionOfTravel, or a 64 B raw datagram (no XML)"},
    {"source", BK_ENUM, 0, 0, "synthetic", "synthetic,nmea,ins", NULL,
     "synthetic: fixed values (as in the study); nmea: a GPS on `device`; ins: a UDP feed on `ins_port`"},
    {"device", BK_STR, 0, 0, "", NULL, NULL, "serial device or pty of the GPS (source=nmea)"},
    {"baud", BK_INT, 1200, 921600, "4800", NULL, "bit/s", "source=nmea: line rate of the GPS (8N1; NMEA 0183: 4800)"},
    {"read_mode", BK_ENUM, 0, 0, "canonical", "canonical,byte,block", NULL,
     "how the GPS is read: a line per read, a byte per read, or blocks of up to 255 bytes"},
    {"ins_port", BK_INT, 0, 65535, "0", NULL, NULL, "UDP port of the INS feed on iface_addr (source=ins)"},
    {"mgmt_port", BK_INT, 0, 65535, "0", NULL, NULL, "serve the SOAP management interface on this TCP port (0: off)"},
    {"tx_timestamp", BK_INT, 0, 1, "0", NULL, NULL,
     "1: software TX timestamps (SO_TIMESTAMPING): time from a message built to the kernel handing it to the device"},
    {0},
};

static const bk_metric pub_metrics[] = {
    {"achieved_rate_hz", "Hz", true, BK_VALUE, -1, 1, "messages sent per second of the run"},
    {"build_p50_ns", "ns", false, BK_VALUE, -1, 1, "median time to build one message"},
    {"send_p50_ns", "ns", false, BK_VALUE, -1, 1, "median time of one sendto"},
    {"lag_p99_ns", "ns", false, BK_VALUE, -1, 1, "99th percentile of wake-up lag behind the schedule"},
    {"reader_cpu_ns_per_s", "ns/s", false, BK_VALUE, -1, 1, "CPU time of the sensor reader per second"},
    {0},
};

static void *pub_reader(void *arg)
{
    pub_state *s = arg;
    char line[512];
    size_t have = 0;
    char buf[512];
    /* Blocking reads, no poll: the wake-ups counted are the read mode's own (the study's cost). The
     * publisher ends this thread with SIGUSR1, which interrupts the read (no SA_RESTART). */
    while (!s->reader_stop && !svc_stop) {
        if (s->source == SRC_INS) {
            ssize_t r = recv(s->in_fd, buf, sizeof buf - 1, 0);
            s->reader_reads++;
            if (r <= 0)
                continue;
            buf[r] = 0;
            s->reader_bytes += (uint64_t)r;
            double h, pi, ro;
            if (sscanf(buf, "INS %lf %lf %lf", &h, &pi, &ro) == 3) {
                pthread_mutex_lock(&s->sh.mu);
                s->sh.fix.heading_deg = h;
                s->sh.fix.pitch_deg = pi;
                s->sh.fix.roll_deg = ro;
                pthread_mutex_unlock(&s->sh.mu);
                s->ins_datagrams++;
            } else
                s->sentences_bad++;
            continue;
        }
        size_t want = s->read_mode == READ_BYTE ? 1 : sizeof buf - 1;
        ssize_t r = read(s->in_fd, buf, want);
        s->reader_reads++;
        if (r <= 0) {
            if (r == 0 || (errno != EAGAIN && errno != EINTR))
                usleep(100000); /* the writer closed (EIO on a pty): wait for it, do not spin */
            continue;
        }
        s->reader_bytes += (uint64_t)r;
        for (ssize_t i = 0; i < r; i++) {
            char c = buf[i];
            if (c == '\n' || c == '\r') {
                if (have) {
                    line[have] = 0;
                    svc_fix f;
                    pthread_mutex_lock(&s->sh.mu);
                    f = s->sh.fix;
                    pthread_mutex_unlock(&s->sh.mu);
                    int u = svc_nmea_apply(line, &f);
                    if (u < 0)
                        s->sentences_bad++;
                    else {
                        s->sentences_ok++;
                        if (u == 0) {
                            pthread_mutex_lock(&s->sh.mu);
                            s->sh.fix = f;
                            pthread_mutex_unlock(&s->sh.mu);
                        }
                    }
                }
                have = 0;
            } else if (have < sizeof line - 1)
                line[have++] = c;
            else
                have = 0; /* overlong: not NMEA (82 chars max) */
        }
    }
    s->reader_cpu_ns = bk_clock_ns(CLOCK_THREAD_CPUTIME_ID);
    return NULL;
}

static int open_gps(bk_ctx *ctx, pub_state *s)
{
    s->in_fd = open(s->device, O_RDONLY | O_NOCTTY | O_CLOEXEC);
    if (s->in_fd < 0)
        return bk_fail(ctx, "cannot open GPS device '%s': %s", s->device, strerror(errno));
    struct termios t;
    if (tcgetattr(s->in_fd, &t) != 0)
        return bk_fail(ctx, "'%s' is not a serial device or pty: %s", s->device, strerror(errno));
    svc_serial_8n1(&t, s->speed);
    t.c_lflag &= ~(tcflag_t)(ECHO | ECHONL | ECHOE | ISIG | IEXTEN);
    t.c_iflag &= ~(tcflag_t)(IXON | IXOFF | ICRNL | INLCR | IGNCR | ISTRIP | INPCK);
    if (s->read_mode == READ_CANONICAL)
        t.c_lflag |= ICANON; /* the line discipline assembles lines: one wake-up per sentence */
    else {
        t.c_lflag &= ~(tcflag_t)ICANON;
        t.c_cc[VMIN] = s->read_mode == READ_BYTE ? 1 : 255; /* block: up to 255 bytes ... */
        t.c_cc[VTIME] = s->read_mode == READ_BYTE ? 0 : 1; /* ... or 100 ms of silence */
    }
    if (tcsetattr(s->in_fd, TCSANOW, &t) != 0)
        return bk_fail(ctx, "cannot set the read mode of '%s': %s", s->device, strerror(errno));
    return 0;
}

static void on_wake(int sig) { (void)sig; }

static void *pub_mgmt_thread(void *arg)
{
    pub_state *s = arg;
    svc_mgmt_loop(&s->mgmt, &s->sh, &s->reader_stop);
    return NULL;
}

static void pub_fini(void *state)
{
    pub_state *s = state;
    if (!s)
        return;
    if (s->fd >= 0)
        close(s->fd);
    if (s->in_fd >= 0)
        close(s->in_fd);
    svc_samples_free(&s->build_ns);
    svc_samples_free(&s->send_ns);
    svc_samples_free(&s->lag_ns);
    svc_samples_free(&s->tx_ns);
    svc_samples_free(&s->mgmt.service_ns);
}

static int pub_init(bk_ctx *ctx, void **state)
{
    pub_state *s = bk_run_state(ctx, state, sizeof *s);
    if (!s)
        return -1;
    s->fd = s->in_fd = -1;
    snprintf(s->group, sizeof s->group, "%s", bk_arg_str(ctx, "group"));
    snprintf(s->iface, sizeof s->iface, "%s", bk_arg_str(ctx, "iface_addr"));
    snprintf(s->device, sizeof s->device, "%s", bk_arg_str(ctx, "device"));
    s->port = (int)bk_arg_int(ctx, "port");
    s->rate_hz = bk_arg_float(ctx, "rate_hz");
    s->duration_s = bk_arg_float(ctx, "duration_s");
    svc_enum_choice("position,orientation,dot,raw", bk_arg_str(ctx, "message"), &s->kind);
    svc_enum_choice("synthetic,nmea,ins", bk_arg_str(ctx, "source"), &s->source);
    svc_enum_choice("canonical,byte,block", bk_arg_str(ctx, "read_mode"), &s->read_mode);
    s->ins_port = (int)bk_arg_int(ctx, "ins_port");
    s->speed = svc_baud_speed((int)bk_arg_int(ctx, "baud"));
    if (!s->speed)
        return bk_fail(ctx, "baud=%d: not a termios rate (1200, 2400, 4800, 9600, 19200, 38400, 57600, 115200, ...)",
                       (int)bk_arg_int(ctx, "baud"));
    pthread_mutex_init(&s->sh.mu, NULL);
    s->sh.enabled = 1;
    /* The study's hard-coded values: a fixed position, heading and course. */
    s->sh.fix = (svc_fix){.lat_deg = 42.5133,
                          .lon_deg = -83.0261,
                          .alt_m = 190.0,
                          .heading_deg = 87.5,
                          .pitch_deg = 1.25,
                          .roll_deg = -0.5,
                          .course_deg = 87.0,
                          .speed_mps = 12.5,
                          .fix = 1};
    struct sockaddr_in probe;
    if (svc_dest_addr(s->group, s->port, &probe) != 0 || !IN_MULTICAST(ntohl(probe.sin_addr.s_addr)))
        return bk_fail(ctx, "group '%s' is not an IPv4 multicast address (224.0.0.0/4)", s->group);
    s->fd = svc_mcast_sender(s->iface, 1);
    if (s->fd < 0)
        return bk_fail(ctx, "cannot set up multicast on interface %s: %s", s->iface, strerror(errno));
    s->tx_on = (int)bk_arg_int(ctx, "tx_timestamp");
    if (s->tx_on) {
        int flags = SOF_TIMESTAMPING_TX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE | SOF_TIMESTAMPING_OPT_ID |
                    SOF_TIMESTAMPING_OPT_TSONLY;
        if (setsockopt(s->fd, SOL_SOCKET, SO_TIMESTAMPING, &flags, sizeof flags) != 0)
            snprintf(s->tx_unsupported, sizeof s->tx_unsupported, "SO_TIMESTAMPING refused: %s", strerror(errno));
    }
    if (s->source == SRC_NMEA) {
        if (!s->device[0])
            return bk_fail(ctx, "source=nmea needs device=PATH (a serial device or the pty of svc.nmea)");
        if (open_gps(ctx, s) != 0)
            return -1;
    } else if (s->source == SRC_INS) {
        if (!s->ins_port)
            return bk_fail(ctx, "source=ins needs ins_port=PORT");
        s->in_fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)s->ins_port)};
        inet_pton(AF_INET, s->iface, &sa.sin_addr);
        if (s->in_fd < 0 || bind(s->in_fd, (struct sockaddr *)&sa, sizeof sa) != 0)
            return bk_fail(ctx, "cannot bind the INS feed port %s:%d: %s", s->iface, s->ins_port, strerror(errno));
    }
    int mport = (int)bk_arg_int(ctx, "mgmt_port");
    if (mport) {
        snprintf(s->mgmt.bind_addr, sizeof s->mgmt.bind_addr, "%s", s->iface);
        s->mgmt.port = mport;
        s->mgmt.keepalive = s->mgmt.nodelay = 1;
        svc_mgmt_defaults(&s->mgmt);
        s->mgmt.duration_s = s->duration_s + 1;
        s->mgmt_on = 1;
    }
    return 0;
}

/* Reads the software TX stamps queued on the socket's error queue (MSG_ERRQUEUE), each paired with its
 * message by the id the kernel counts (OPT_ID). The stamp is CLOCK_REALTIME; the message times are
 * CLOCK_MONOTONIC, so it is moved by the offset between the two read now (constant unless the clock steps). */
static void tx_drain(pub_state *s, int wait_ms)
{
    for (;;) {
        if (wait_ms) {
            struct pollfd pf = {.fd = s->fd, .events = 0};
            if (poll(&pf, 1, wait_ms) <= 0 || !(pf.revents & POLLERR))
                return;
        }
        char data[64], ctl[512];
        struct iovec iov = {.iov_base = data, .iov_len = sizeof data};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
        if (recvmsg(s->fd, &mh, MSG_ERRQUEUE | MSG_DONTWAIT) < 0)
            return;
        struct timespec ts = {0};
        uint32_t id = 0;
        int have_ts = 0, have_id = 0;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_TIMESTAMPING) {
                memcpy(&ts, CMSG_DATA(c), sizeof ts); /* [0] is the software stamp */
                have_ts = ts.tv_sec || ts.tv_nsec;
            } else if ((c->cmsg_level == SOL_IP && c->cmsg_type == IP_RECVERR) ||
                       (c->cmsg_level == SOL_IPV6 && c->cmsg_type == IPV6_RECVERR)) {
                struct sock_extended_err ee;
                memcpy(&ee, CMSG_DATA(c), sizeof ee);
                if (ee.ee_origin == SO_EE_ORIGIN_TIMESTAMPING) {
                    id = ee.ee_data;
                    have_id = 1;
                }
            }
        }
        if (!have_ts || !have_id || id >= s->tx_id || s->tx_id - id > 256)
            continue; /* not ours to pair (too old for the ring) */
        struct timespec rt, mono;
        clock_gettime(CLOCK_REALTIME, &rt);
        clock_gettime(CLOCK_MONOTONIC, &mono);
        int64_t off = ((int64_t)rt.tv_sec - mono.tv_sec) * 1000000000LL + (rt.tv_nsec - mono.tv_nsec);
        int64_t tx_mono = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec - off;
        uint64_t built = s->tx_built[id % 256];
        s->tx_stamps++;
        svc_push(&s->tx_ns, tx_mono > (int64_t)built ? (uint64_t)(tx_mono - (int64_t)built) : 0);
    }
}

static int pub_serve(bk_ctx *ctx, void *state)
{
    pub_state *s = state;
    svc_install_stop();
    svc_tight_timers();
    s->sh.start_ns = svc_now();
    if (s->in_fd >= 0) {
        struct sigaction sa = {0};
        sa.sa_handler = on_wake; /* no SA_RESTART: a blocked read returns EINTR */
        sigemptyset(&sa.sa_mask);
        sigaction(SIGUSR1, &sa, NULL);
        if (pthread_create(&s->reader, NULL, pub_reader, s) != 0)
            return bk_fail(ctx, "cannot start the sensor reader thread");
        s->reader_on = 1;
    }
    if (s->mgmt_on && pthread_create(&s->mgmt_thread, NULL, pub_mgmt_thread, s) != 0)
        return bk_fail(ctx, "cannot start the management thread");
    struct sockaddr_in to;
    svc_dest_addr(s->group, s->port, &to);
    char buf[2048];
    uint64_t period = (uint64_t)(1e9 / s->rate_hz);
    uint64_t n_total = (uint64_t)floor(s->duration_s * s->rate_hz + 1e-9);
    fprintf(stderr, "svc.pub: ready, sending to %s:%d\n", s->group, s->port);
    fflush(stderr);
    s->t0 = svc_now() + 1000000; /* first message 1 ms from now */
    uint64_t seq = 0;
    for (uint64_t i = 0; i < n_total && !svc_stop; i++) {
        uint64_t due = s->t0 + (uint64_t)((double)i * 1e9 / s->rate_hz);
        svc_sleep_until(due);
        if (svc_stop)
            break;
        uint64_t woke = svc_now();
        svc_push(&s->lag_ns, woke > due ? woke - due : 0);
        if (!s->sh.enabled) {
            s->skipped_disabled++;
            continue;
        }
        svc_fix f;
        pthread_mutex_lock(&s->sh.mu);
        f = s->sh.fix;
        pthread_mutex_unlock(&s->sh.mu);
        size_t at;
        int len = svc_build_message(buf, sizeof buf, s->kind, seq, &f, &at);
        uint64_t built = svc_now();
        if (len < 0)
            return bk_fail(ctx, "message does not fit its buffer");
        svc_patch_stamp(buf, at, built);
        if (s->tx_on && !s->tx_unsupported[0])
            s->tx_built[s->tx_id % 256] = built;
        ssize_t r = sendto(s->fd, buf, (size_t)len, 0, (struct sockaddr *)&to, sizeof to);
        uint64_t sent = svc_now();
        svc_push(&s->build_ns, built - woke);
        svc_push(&s->send_ns, sent - built);
        if (s->tx_on && !s->tx_unsupported[0] && r == len) {
            s->tx_id++; /* the kernel's OPT_ID counts sends that went out */
            tx_drain(s, 0);
        }
        if (r == len) {
            s->sent++;
            s->sh.messages_sent = s->sent;
            s->payload_bytes += (uint64_t)len;
            s->checksum = bk_fnv1a(s->checksum ? s->checksum : BK_FNV_OFFSET, &seq, sizeof seq);
        } else if (s->send_errors++ == 0)
            bk_info_str(ctx, "first_send_error", strerror(errno));
        seq++;
    }
    (void)period;
    s->t_end = svc_now();
    if (s->tx_on && !s->tx_unsupported[0]) {
        tx_drain(s, 50); /* stamps of the last messages (a NIC may stamp after sendto returned) */
        if (s->tx_id && !s->tx_stamps)
            snprintf(s->tx_unsupported, sizeof s->tx_unsupported,
                     "the kernel gave no software TX timestamp for %llu messages on %s (driver without "
                     "skb_tx_timestamp)",
                     (unsigned long long)s->tx_id, s->iface);
    }
    s->reader_stop = 1;
    if (s->reader_on) {
        /* interrupt its blocking read until it has seen the flag */
        while (pthread_tryjoin_np(s->reader, NULL) == EBUSY) {
            pthread_kill(s->reader, SIGUSR1);
            usleep(1000);
        }
    }
    if (s->mgmt_on)
        pthread_join(s->mgmt_thread, NULL);
    return 0;
}

static int pub_verify(bk_ctx *ctx, void *state)
{
    pub_state *s = state;
    double secs = (double)(s->t_end - s->t0) / 1e9;
    bk_set_value(ctx, "achieved_rate_hz", secs > 0 ? (double)s->sent / fmax(secs, s->duration_s) : 0);
    bk_set_value(ctx, "build_p50_ns", svc_percentile(&s->build_ns, 50));
    bk_set_value(ctx, "send_p50_ns", svc_percentile(&s->send_ns, 50));
    bk_set_value(ctx, "lag_p99_ns", svc_percentile(&s->lag_ns, 99));
    if (s->reader_on)
        bk_set_value(ctx, "reader_cpu_ns_per_s", secs > 0 ? (double)s->reader_cpu_ns / secs : 0);
    else
        bk_skip_metric(ctx, "reader_cpu_ns_per_s", "no sensor: source=synthetic");
    bk_set_checksum(ctx, s->checksum);
    if (s->sent == 0 && !svc_stop && s->skipped_disabled == 0)
        return bk_fail(ctx, "no message was sent (%llu send errors)", (unsigned long long)s->send_errors);
    return 0;
}

static void pub_json(void *state, bk_json *j)
{
    pub_state *s = state;
    svc_json_begin(j, "pub");
    bk_json_kv_str(j, "message_kind", svc_kind_names[s->kind]);
    bk_json_kv_num(j, "target_rate_hz", s->rate_hz);
    bk_json_kv_uint(j, "duration_ns", s->t_end - s->t0);
    bk_json_kv_uint(j, "sent", s->sent);
    bk_json_kv_uint(j, "send_errors", s->send_errors);
    bk_json_kv_uint(j, "skipped_disabled", s->skipped_disabled);
    bk_json_kv_uint(j, "payload_bytes", s->payload_bytes);
    svc_json_summary(j, "build_ns", &s->build_ns);
    svc_json_summary(j, "send_ns", &s->send_ns);
    svc_json_summary(j, "schedule_lag_ns", &s->lag_ns);
    bk_json_key(j, "tx_timestamp");
    if (!s->tx_on)
        bk_json_null(j);
    else {
        bk_json_begin_object(j);
        bk_json_kv_bool(j, "supported", !s->tx_unsupported[0]);
        bk_json_kv_str(j, "reason", s->tx_unsupported[0] ? s->tx_unsupported : NULL);
        bk_json_kv_uint(j, "stamps", s->tx_stamps);
        svc_json_summary(j, "built_to_tx_ns", &s->tx_ns);
        bk_json_end_object(j);
    }
    bk_json_key(j, "reader");
    if (!s->reader_on)
        bk_json_null(j);
    else {
        bk_json_begin_object(j);
        bk_json_kv_str(j, "source", s->source == SRC_NMEA ? "nmea" : "ins");
        bk_json_kv_str(j, "read_mode",
                       s->source == SRC_NMEA ? (const char *[]){"canonical", "byte", "block"}[s->read_mode] : NULL);
        bk_json_kv_uint(j, "reads", s->reader_reads);
        bk_json_kv_uint(j, "bytes", s->reader_bytes);
        bk_json_kv_uint(j, "cpu_ns", s->reader_cpu_ns);
        bk_json_kv_uint(j, "sentences_ok", s->sentences_ok);
        bk_json_kv_uint(j, "sentences_bad", s->sentences_bad);
        bk_json_kv_uint(j, "ins_datagrams", s->ins_datagrams);
        bk_json_end_object(j);
    }
    bk_json_key_object(j, "last_fix");
    bk_json_kv_num(j, "latitude_deg", s->sh.fix.lat_deg);
    bk_json_kv_num(j, "longitude_deg", s->sh.fix.lon_deg);
    bk_json_kv_num(j, "heading_deg", s->sh.fix.heading_deg);
    bk_json_end_object(j);
    bk_json_key(j, "mgmt");
    if (s->mgmt_on)
        svc_mgmt_json(&s->mgmt, j);
    else
        bk_json_null(j);
    bk_json_end_object(j);
}

const bk_kernel bk_svc_pub = {
    .name = "svc.pub",
    .family = "svc",
    .summary = "VICTORY-like publisher: XML data messages to a multicast group on an absolute schedule",
    .params = pub_params,
    .metrics = pub_metrics,
    .init = pub_init,
    .verify = pub_verify,
    .fini = pub_fini,
    .serve = pub_serve,
    .serve_json = pub_json,
};
