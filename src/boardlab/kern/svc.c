/* Service roles of the vehicle-services study: a VICTORY-like publisher (svc.pub), subscriber (svc.sub, and
 * the DirectionOfTravel service built on it) and a GPS feeder paced at the real baud rate (svc.nmea).
 * Messages are "VICTORY-like": the real schemas are not public, so they live in their own namespace. */
#include "svc.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/errqueue.h>
#include <linux/net_tstamp.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#if BK_HAVE_EXPAT
#include <expat.h>
#endif
#if BK_HAVE_LIBXML2
#include <libxml/parser.h>
#endif

/* ---- common ---- */

volatile sig_atomic_t svc_stop;
const char *const svc_kind_names[SVC_KINDS] = {"Position", "Orientation", "DirectionOfTravel", "Raw"};

uint64_t svc_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

void svc_sleep_until(uint64_t t_ns)
{
    struct timespec ts = {.tv_sec = (time_t)(t_ns / 1000000000ULL), .tv_nsec = (long)(t_ns % 1000000000ULL)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR && !svc_stop)
        ;
}

static void on_stop(int sig)
{
    (void)sig;
    svc_stop = 1;
}

void svc_install_stop(void)
{
    struct sigaction sa = {0};
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN); /* a peer closing a connection is an error to count, not a death */
}

void svc_tight_timers(void) { prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0); }

int svc_rt_priority(int priority)
{
    struct sched_param sp = {.sched_priority = priority};
    return sched_setscheduler(0, SCHED_FIFO, &sp) == 0 ? 0 : errno;
}

void svc_push(svc_samples *s, uint64_t x)
{
    s->total++;
    s->sum += (double)x;
    if (x > s->max_seen)
        s->max_seen = x;
    if (s->n == SVC_SAMPLES_MAX) { /* reservoir: sample i replaces a kept one with probability MAX / i */
        uint64_t r = bk_rand_next(&s->rng) % s->total;
        if (r < SVC_SAMPLES_MAX)
            s->v[r] = x;
        return;
    }
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 1024;
        if (cap > SVC_SAMPLES_MAX)
            cap = SVC_SAMPLES_MAX;
        uint64_t *v = realloc(s->v, cap * sizeof *v);
        if (!v)
            return; /* out of memory: the sample is lost, the count shows it */
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = x;
}

void svc_samples_free(svc_samples *s)
{
    free(s->v);
    *s = (svc_samples){0};
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

double svc_percentile(svc_samples *s, double q)
{
    if (!s->n)
        return NAN;
    qsort(s->v, s->n, sizeof *s->v, cmp_u64);
    size_t rank = (size_t)ceil(q / 100.0 * (double)s->n); /* nearest rank */
    return (double)s->v[rank ? rank - 1 : 0];
}

void svc_json_summary(bk_json *j, const char *key, svc_samples *s)
{
    bk_json_key(j, key);
    bk_json_begin_object(j);
    bk_json_key(j, "count");
    bk_json_uint(j, s->total);
    bk_json_key(j, "mean");
    bk_json_num(j, s->total ? s->sum / (double)s->total : NAN);
    static const char *keys[] = {"p50", "p90", "p99", "p999"};
    static const double qs[] = {50, 90, 99, 99.9};
    for (int i = 0; i < 4; i++) {
        bk_json_key(j, keys[i]);
        bk_json_num(j, svc_percentile(s, qs[i]));
    }
    bk_json_key(j, "max");
    bk_json_num(j, s->total ? (double)s->max_seen : NAN);
    if (s->total > s->n) { /* the percentiles come from a reservoir of this many samples */
        bk_json_key(j, "kept");
        bk_json_uint(j, s->n);
    }
    bk_json_end_object(j);
}

int svc_build_message(char *buf, size_t cap, int kind, uint64_t seq, const svc_fix *f, size_t *stamp_at)
{
    if (kind == SVC_RAW) { /* 64 bytes: seq and stamp in text, for the raw-UDP comparison with sockperf */
        int n = snprintf(buf, cap, "R %020llu %020llu", (unsigned long long)seq, 0ULL);
        if (n < 0 || (size_t)n >= cap || cap < 64)
            return -1;
        memset(buf + n, ' ', 64 - (size_t)n);
        *stamp_at = 23;
        return 64;
    }
    int n = snprintf(buf, cap,
                     "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                     "<vdm:DataMessage xmlns:vdm=\"" SVC_NS "\" kind=\"%s\" seq=\"%llu\" sentNs=\"%020llu\">",
                     svc_kind_names[kind], (unsigned long long)seq, 0ULL);
    if (n < 0 || (size_t)n >= cap)
        return -1;
    char *z = strstr(buf, "sentNs=\"");
    *stamp_at = (size_t)(z - buf) + 8;
    int m;
    if (kind == SVC_POSITION)
        m = snprintf(buf + n, cap - (size_t)n,
                     "<vdm:Position><vdm:LatitudeDeg>%.7f</vdm:LatitudeDeg><vdm:LongitudeDeg>%.7f</vdm:LongitudeDeg>"
                     "<vdm:AltitudeM>%.2f</vdm:AltitudeM><vdm:Fix>%d</vdm:Fix></vdm:Position></vdm:DataMessage>\n",
                     f->lat_deg, f->lon_deg, f->alt_m, f->fix);
    else if (kind == SVC_ORIENTATION)
        m = snprintf(buf + n, cap - (size_t)n,
                     "<vdm:Orientation><vdm:HeadingDeg>%.3f</vdm:HeadingDeg><vdm:PitchDeg>%.3f</vdm:PitchDeg>"
                     "<vdm:RollDeg>%.3f</vdm:RollDeg></vdm:Orientation></vdm:DataMessage>\n",
                     f->heading_deg, f->pitch_deg, f->roll_deg);
    else
        m = snprintf(buf + n, cap - (size_t)n,
                     "<vdm:DirectionOfTravel><vdm:CourseDeg>%.3f</vdm:CourseDeg><vdm:SpeedMps>%.3f</vdm:SpeedMps>"
                     "</vdm:DirectionOfTravel></vdm:DataMessage>\n",
                     f->course_deg, f->speed_mps);
    if (m < 0 || (size_t)(n + m) >= cap)
        return -1;
    return n + m;
}

void svc_patch_stamp(char *buf, size_t stamp_at, uint64_t ns)
{
    char d[21];
    snprintf(d, sizeof d, "%020llu", (unsigned long long)ns);
    memcpy(buf + stamp_at, d, 20);
}

int svc_mcast_sender(const char *iface_addr, int ttl)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct in_addr ifa;
    if (inet_pton(AF_INET, iface_addr, &ifa) != 1) {
        close(fd);
        errno = EINVAL;
        return -1;
    }
    unsigned char t = (unsigned char)ttl, loop = 1;
    if (setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &ifa, sizeof ifa) < 0 ||
        setsockopt(fd, IPPROTO_IP, IP_MULTICAST_TTL, &t, sizeof t) < 0 ||
        setsockopt(fd, IPPROTO_IP, IP_MULTICAST_LOOP, &loop, sizeof loop) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

int svc_mcast_receiver(const char *group, int port, const char *iface_addr, int rcvbuf_bytes)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int one = 1;
    struct ip_mreq mreq;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, group, &mreq.imr_multiaddr) != 1 || inet_pton(AF_INET, iface_addr, &mreq.imr_interface) != 1) {
        close(fd);
        errno = EINVAL;
        return -1;
    }
    sa.sin_addr = mreq.imr_multiaddr;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof one) < 0 ||
        (rcvbuf_bytes > 0 && setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf_bytes, sizeof rcvbuf_bytes) < 0) ||
        bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
        setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mreq, sizeof mreq) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

static int dest_addr(const char *group, int port, struct sockaddr_in *sa)
{
    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)port);
    return inet_pton(AF_INET, group, &sa->sin_addr) == 1 ? 0 : -1;
}

/* ---- NMEA 0183 ---- */

static unsigned nmea_checksum(const char *body, size_t n)
{
    unsigned c = 0;
    for (size_t i = 0; i < n; i++)
        c ^= (unsigned char)body[i];
    return c;
}

/* "$BODY*CS\r\n" from BODY; returns the length. */
static int nmea_sentence(char *out, size_t cap, const char *body)
{
    return snprintf(out, cap, "$%s*%02X\r\n", body, nmea_checksum(body, strlen(body)));
}

/* Checks "$...*CS" and returns 0 when the checksum matches. */
static int nmea_valid(const char *line)
{
    const char *star = strchr(line, '*');
    if (line[0] != '$' || !star || !isxdigit((unsigned char)star[1]) || !isxdigit((unsigned char)star[2]))
        return -1;
    unsigned want = (unsigned)strtoul((char[]){star[1], star[2], 0}, NULL, 16);
    return nmea_checksum(line + 1, (size_t)(star - line - 1)) == want ? 0 : -1;
}

static double nmea_deg(const char *v, const char *hemi)
{
    double x = atof(v);
    double deg = floor(x / 100.0);
    double d = deg + (x - deg * 100.0) / 60.0;
    return (*hemi == 'S' || *hemi == 'W') ? -d : d;
}

/* Updates the fix from GGA (position, altitude, fix quality) and RMC (course, speed). 0 when used. */
static int nmea_apply(const char *line, svc_fix *f)
{
    if (nmea_valid(line) != 0)
        return -1;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", line);
    char *fld[20] = {0};
    int n = 0;
    for (char *p = buf; n < 20 && p;) {
        fld[n++] = p;
        char *c = strpbrk(p, ",*");
        if (!c)
            break;
        *c = 0;
        p = c + 1;
    }
    if (n >= 10 && strcmp(fld[0] + 3, "GGA") == 0) {
        f->lat_deg = nmea_deg(fld[2], fld[3]);
        f->lon_deg = nmea_deg(fld[4], fld[5]);
        f->fix = atoi(fld[6]);
        f->alt_m = atof(fld[9]);
        return 0;
    }
    if (n >= 9 && strcmp(fld[0] + 3, "RMC") == 0) {
        f->speed_mps = atof(fld[7]) * 0.514444;
        f->course_deg = atof(fld[8]);
        return 0;
    }
    return 1; /* valid but not used (GSA, GSV) */
}

/* ---- svc.pub ---- */

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
    int tx_on;                 /* asked for */
    char tx_unsupported[256];  /* why there are none (empty: the kernel gave them) */
    uint64_t tx_id, tx_stamps; /* messages sent on the stamped socket; stamps read back */
    uint64_t tx_built[256];    /* built time of message id % 256, to pair a stamp with its message */
    svc_samples tx_ns;         /* built -> software TX stamp */
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
                    int u = nmea_apply(line, &f);
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
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    s->reader_cpu_ns = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
    return NULL;
}

/* The termios speed of a baud rate; 0 when termios has none. */
static speed_t baud_speed(int baud)
{
    switch (baud) {
    case 1200: return B1200;
    case 2400: return B2400;
    case 4800: return B4800;
    case 9600: return B9600;
    case 19200: return B19200;
    case 38400: return B38400;
    case 57600: return B57600;
    case 115200: return B115200;
    case 230400: return B230400;
    case 460800: return B460800;
    case 921600: return B921600;
    default: return 0;
    }
}

/* A serial line as a GPS uses it: `baud` 8N1, no flow control, modem lines ignored, no output
 * processing (NMEA lines end in CR LF already: ONLCR would make that CR CR LF). A pty takes the same
 * settings and ignores the speed, so a pty pair stands in for a UART in the tests. */
static void serial_8n1(struct termios *t, speed_t speed)
{
    cfsetispeed(t, speed);
    cfsetospeed(t, speed);
    t->c_cflag &= ~(tcflag_t)(CSIZE | PARENB | CSTOPB | CRTSCTS);
    t->c_cflag |= CS8 | CREAD | CLOCAL;
    t->c_oflag &= ~(tcflag_t)OPOST;
}

static int open_gps(bk_ctx *ctx, pub_state *s)
{
    s->in_fd = open(s->device, O_RDONLY | O_NOCTTY | O_CLOEXEC);
    if (s->in_fd < 0)
        return bk_fail(ctx, "cannot open GPS device '%s': %s", s->device, strerror(errno));
    struct termios t;
    if (tcgetattr(s->in_fd, &t) != 0)
        return bk_fail(ctx, "'%s' is not a serial device or pty: %s", s->device, strerror(errno));
    serial_8n1(&t, s->speed);
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
    free(s);
}

static const char *enum_choice(const char *choices, const char *v, int *idx)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", choices);
    int i = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save), i++)
        if (strcmp(t, v) == 0) {
            *idx = i;
            return v;
        }
    *idx = 0;
    return NULL;
}

static int pub_init(bk_ctx *ctx, void **state)
{
    pub_state *s = calloc(1, sizeof *s);
    if (!s)
        return bk_fail(ctx, "out of memory");
    *state = s;
    s->fd = s->in_fd = -1;
    snprintf(s->group, sizeof s->group, "%s", bk_arg_str(ctx, "group"));
    snprintf(s->iface, sizeof s->iface, "%s", bk_arg_str(ctx, "iface_addr"));
    snprintf(s->device, sizeof s->device, "%s", bk_arg_str(ctx, "device"));
    s->port = (int)bk_arg_int(ctx, "port");
    s->rate_hz = bk_arg_float(ctx, "rate_hz");
    s->duration_s = bk_arg_float(ctx, "duration_s");
    enum_choice("position,orientation,dot,raw", bk_arg_str(ctx, "message"), &s->kind);
    enum_choice("synthetic,nmea,ins", bk_arg_str(ctx, "source"), &s->source);
    enum_choice("canonical,byte,block", bk_arg_str(ctx, "read_mode"), &s->read_mode);
    s->ins_port = (int)bk_arg_int(ctx, "ins_port");
    s->speed = baud_speed((int)bk_arg_int(ctx, "baud"));
    if (!s->speed)
        return bk_fail(ctx, "baud=%d: not a termios rate (1200, 2400, 4800, 9600, 19200, 38400, 57600, 115200, ...)",
                       (int)bk_arg_int(ctx, "baud"));
    pthread_mutex_init(&s->sh.mu, NULL);
    s->sh.enabled = 1;
    /* The study's hard-coded values: a fixed position, heading and course. */
    s->sh.fix = (svc_fix){.lat_deg = 42.5133, .lon_deg = -83.0261, .alt_m = 190.0, .heading_deg = 87.5,
                          .pitch_deg = 1.25, .roll_deg = -0.5, .course_deg = 87.0, .speed_mps = 12.5, .fix = 1};
    struct sockaddr_in probe;
    if (dest_addr(s->group, s->port, &probe) != 0 || !IN_MULTICAST(ntohl(probe.sin_addr.s_addr)))
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
    dest_addr(s->group, s->port, &to);
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
                     "skb_tx_timestamp)", (unsigned long long)s->tx_id, s->iface);
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
    bk_json_begin_object(j);
    bk_json_key(j, "schema");
    bk_json_int(j, SVC_SCHEMA);
    bk_json_key(j, "role");
    bk_json_str(j, "pub");
    bk_json_key(j, "message_kind");
    bk_json_str(j, svc_kind_names[s->kind]);
    bk_json_key(j, "target_rate_hz");
    bk_json_num(j, s->rate_hz);
    bk_json_key(j, "duration_ns");
    bk_json_uint(j, s->t_end - s->t0);
    bk_json_key(j, "sent");
    bk_json_uint(j, s->sent);
    bk_json_key(j, "send_errors");
    bk_json_uint(j, s->send_errors);
    bk_json_key(j, "skipped_disabled");
    bk_json_uint(j, s->skipped_disabled);
    bk_json_key(j, "payload_bytes");
    bk_json_uint(j, s->payload_bytes);
    svc_json_summary(j, "build_ns", &s->build_ns);
    svc_json_summary(j, "send_ns", &s->send_ns);
    svc_json_summary(j, "schedule_lag_ns", &s->lag_ns);
    bk_json_key(j, "tx_timestamp");
    if (!s->tx_on)
        bk_json_null(j);
    else {
        bk_json_begin_object(j);
        bk_json_key(j, "supported");
        bk_json_bool(j, !s->tx_unsupported[0]);
        bk_json_key(j, "reason");
        bk_json_str(j, s->tx_unsupported[0] ? s->tx_unsupported : NULL);
        bk_json_key(j, "stamps");
        bk_json_uint(j, s->tx_stamps);
        svc_json_summary(j, "built_to_tx_ns", &s->tx_ns);
        bk_json_end_object(j);
    }
    bk_json_key(j, "reader");
    if (!s->reader_on)
        bk_json_null(j);
    else {
        bk_json_begin_object(j);
        bk_json_key(j, "source");
        bk_json_str(j, s->source == SRC_NMEA ? "nmea" : "ins");
        bk_json_key(j, "read_mode");
        bk_json_str(j, s->source == SRC_NMEA ? (const char *[]){"canonical", "byte", "block"}[s->read_mode] : NULL);
        bk_json_key(j, "reads");
        bk_json_uint(j, s->reader_reads);
        bk_json_key(j, "bytes");
        bk_json_uint(j, s->reader_bytes);
        bk_json_key(j, "cpu_ns");
        bk_json_uint(j, s->reader_cpu_ns);
        bk_json_key(j, "sentences_ok");
        bk_json_uint(j, s->sentences_ok);
        bk_json_key(j, "sentences_bad");
        bk_json_uint(j, s->sentences_bad);
        bk_json_key(j, "ins_datagrams");
        bk_json_uint(j, s->ins_datagrams);
        bk_json_end_object(j);
    }
    bk_json_key(j, "last_fix");
    bk_json_begin_object(j);
    bk_json_key(j, "latitude_deg");
    bk_json_num(j, s->sh.fix.lat_deg);
    bk_json_key(j, "longitude_deg");
    bk_json_num(j, s->sh.fix.lon_deg);
    bk_json_key(j, "heading_deg");
    bk_json_num(j, s->sh.fix.heading_deg);
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

/* ---- svc.sub (and the DirectionOfTravel service) ---- */

/* Sequence numbers are tracked in a fixed window (a ring of SEQ_WINDOW bits per kind, 128 KiB): a seq
 * within SEQ_WINDOW of the highest seen is checked for loss, duplication and reordering; one farther off (a
 * sender that restarted, a corrupt or hostile datagram) is a jump, counted and otherwise ignored, unless the
 * next message continues from it (within SEQ_RESYNC): tracking then restarts there, and the gap is counted as
 * a resync, not as lost messages. Memory and work per message stay bounded whatever seq a sender puts in. */
#define SEQ_WINDOW (1u << 20)
#define SEQ_RESYNC 64

typedef struct {
    uint64_t first, max, unique; /* of the current segment (since the start or the last resync) */
    uint64_t lost_before;        /* lost in earlier segments */
    uint64_t jumps, resyncs;     /* datagrams beyond the window; jumps the next message confirmed */
    uint64_t candidate;          /* seq of the last jump, a resync if the next message follows it */
    int any, have_candidate;
    uint8_t *seen; /* SEQ_WINDOW bits, bit seq % SEQ_WINDOW */
} seq_track;

typedef struct {
    char group[64], iface[64], out_group[64];
    int port, out_port, parser, publish_dot, rcvbuf;
    int64_t stall_ms, expect;
    double duration_s;
    int fd, out_fd;
    seq_track trk[SVC_KINDS];
    uint64_t received, bad, duplicates, reordered, dot_sent;
    uint32_t ovfl_drops;
    svc_samples latency_ns, parse_ns;
    int rcvbuf_actual;
    uint64_t t0, t_end, checksum;
    /* parse state */
    int kind;
    uint64_t seq, sent_ns;
    char field[32];
    char text[64];
    size_t text_n;
    svc_fix fix;
    int have_pos, have_ori, have_prev;
    svc_fix prev;
    uint64_t prev_ns;
    void *xml_ctx; /* the expat parser or libxml2 context, to stop at a DOCTYPE */
} sub_state;

static const bk_param sub_params[] = {
    {"group", BK_STR, 0, 0, "239.255.0.5", NULL, NULL, "multicast group to join (IGMP)"},
    {"port", BK_INT, 1, 65535, "15000", NULL, NULL, "UDP port of the group"},
    {"iface_addr", BK_STR, 0, 0, "127.0.0.1", NULL, NULL, "address of the interface to join on"},
    {"duration_s", BK_FLOAT, 0.05, 604800, "10", NULL, "s", "how long to listen"},
    {"parser", BK_ENUM, 0, 0, "expat", "expat,raw,libxml2", NULL,
     "expat or libxml2 (SAX2): parse the XML message; raw: the 64 B datagram"},
    {"rcvbuf_bytes", BK_INT, 0, 64 * 1048576.0, "0", NULL, "bytes", "SO_RCVBUF (0: the system default)"},
    {"stall_ms", BK_INT, 0, 600000, "0", NULL, "ms", "sleep this long after joining before reading (forces drops)"},
    {"expect", BK_INT, 0, 1e12, "0", NULL, NULL, "stop after this many messages (0: run for duration_s)"},
    {"publish_dot", BK_INT, 0, 1, "0", NULL, NULL,
     "1: the DirectionOfTravel service: from Position + Orientation publish DirectionOfTravel"},
    {"out_group", BK_STR, 0, 0, "239.255.0.6", NULL, NULL, "group the DirectionOfTravel messages go to"},
    {"out_port", BK_INT, 1, 65535, "15001", NULL, NULL, "port the DirectionOfTravel messages go to"},
    {0},
};

static const bk_metric sub_metrics[] = {
    {"latency_p50_ns", "ns", false, BK_VALUE, -1, 1, "median one-way latency (send stamp to receive)"},
    {"latency_p99_ns", "ns", false, BK_VALUE, -1, 1, "99th percentile one-way latency"},
    {"received_per_s", "1/s", true, BK_VALUE, -1, 1, "messages received per second"},
    {"lost", "messages", false, BK_VALUE, -1, 1, "sequence numbers never received"},
    {0},
};

static int seq_bit(const seq_track *t, uint64_t seq) { return t->seen[seq % SEQ_WINDOW / 8] >> (seq % 8) & 1; }

static void seq_clear(seq_track *t, uint64_t from, uint64_t to) /* bits of seqs from..to inclusive */
{
    for (uint64_t q = from; q <= to && q % 8; q++)
        t->seen[q % SEQ_WINDOW / 8] &= (uint8_t)~(1u << (q % 8));
    uint64_t q = (from + 7) / 8 * 8;
    for (; q + 8 <= to + 1 && q % SEQ_WINDOW; q += 8) /* whole bytes up to the ring's end */
        t->seen[q % SEQ_WINDOW / 8] = 0;
    if (q + 8 <= to + 1) { /* the rest of the whole bytes, from the ring's start */
        size_t bytes = (size_t)((to + 1 - q) / 8);
        memset(t->seen, 0, bytes);
        q += bytes * 8;
    }
    for (; q <= to; q++)
        t->seen[q % SEQ_WINDOW / 8] &= (uint8_t)~(1u << (q % 8));
}

static void seq_restart(seq_track *t, uint64_t seq)
{
    if (t->any)
        t->lost_before += t->max - t->first + 1 - t->unique;
    memset(t->seen, 0, SEQ_WINDOW / 8);
    t->any = 1;
    t->first = t->max = seq;
    t->unique = 0;
}

static uint64_t seq_lost(const seq_track *t) { return t->lost_before + (t->any ? t->max - t->first + 1 - t->unique : 0); }

static int track(seq_track *t, uint64_t seq, uint64_t *dup, uint64_t *reord)
{
    if (!t->seen && !(t->seen = calloc(SEQ_WINDOW / 8, 1)))
        return -1;
    if (!t->any)
        seq_restart(t, seq);
    int ahead = seq > t->max && seq - t->max < SEQ_WINDOW;
    int behind = seq <= t->max && t->max - seq < SEQ_WINDOW;
    if (!ahead && !behind) {
        if (t->have_candidate && seq > t->candidate && seq - t->candidate <= SEQ_RESYNC) {
            uint64_t c = t->candidate;
            t->resyncs++;
            t->have_candidate = 0;
            seq_restart(t, c);
            t->seen[c % SEQ_WINDOW / 8] |= (uint8_t)(1u << (c % 8));
            t->unique = 1;
            return track(t, seq, dup, reord);
        }
        t->jumps++;
        t->candidate = seq;
        t->have_candidate = 1;
        return 0;
    }
    t->have_candidate = 0;
    if (seq < t->first) { /* sent before the first one received, arrived after it */
        (*reord)++;
        return 0;
    }
    if (ahead) {
        seq_clear(t, t->max + 1, seq);
        t->max = seq;
    } else if (seq_bit(t, seq)) {
        (*dup)++;
        return 0;
    } else if (seq < t->max)
        (*reord)++;
    t->seen[seq % SEQ_WINDOW / 8] |= (uint8_t)(1u << (seq % 8));
    t->unique++;
    return 0;
}

/* What both parsers (expat, libxml2) report, in our namespace: an attribute of DataMessage, an element's
 * start and end with its text. */
static void on_data_attr(sub_state *s, const char *name, const char *value)
{
    if (strcmp(name, "kind") == 0)
        for (int k = 0; k < SVC_RAW; k++)
            if (strcmp(value, svc_kind_names[k]) == 0)
                s->kind = k;
    if (strcmp(name, "seq") == 0)
        s->seq = strtoull(value, NULL, 10);
    if (strcmp(name, "sentNs") == 0)
        s->sent_ns = strtoull(value, NULL, 10);
}

static void on_text(sub_state *s, const char *t, int len)
{
    for (int i = 0; i < len && s->text_n < sizeof s->text - 1; i++)
        s->text[s->text_n++] = t[i];
}

static void on_end(sub_state *s, const char *l)
{
    if (!s->text_n)
        return;
    s->text[s->text_n] = 0;
    double v = atof(s->text);
    svc_fix *f = &s->fix;
    if (!strcmp(l, "LatitudeDeg"))
        f->lat_deg = v;
    else if (!strcmp(l, "LongitudeDeg"))
        f->lon_deg = v;
    else if (!strcmp(l, "AltitudeM"))
        f->alt_m = v;
    else if (!strcmp(l, "HeadingDeg"))
        f->heading_deg = v;
    else if (!strcmp(l, "PitchDeg"))
        f->pitch_deg = v;
    else if (!strcmp(l, "RollDeg"))
        f->roll_deg = v;
    else if (!strcmp(l, "CourseDeg"))
        f->course_deg = v;
    else if (!strcmp(l, "SpeedMps"))
        f->speed_mps = v;
    s->text_n = 0;
}

#if BK_HAVE_EXPAT
static const char *local_name(const char *name)
{
    /* names arrive as "namespace|local"; anything outside our namespace is foreign */
    size_t n = strlen(SVC_NS);
    if (strncmp(name, SVC_NS, n) != 0 || name[n] != '|')
        return NULL;
    return name + n + 1;
}

static void XMLCALL x_start(void *ud, const XML_Char *name, const XML_Char **atts)
{
    sub_state *s = ud;
    const char *l = local_name(name);
    s->text_n = 0;
    if (!l)
        return;
    if (strcmp(l, "DataMessage") == 0)
        for (int i = 0; atts[i]; i += 2)
            on_data_attr(s, atts[i], atts[i + 1]);
}

static void XMLCALL x_text(void *ud, const XML_Char *t, int len) { on_text(ud, t, len); }

/* A data message has no DOCTYPE: one is refused before its entities are read (an expansion bomb of 725
 * bytes costs expat half a second before its amplification limit stops it). */
static void XMLCALL x_doctype(void *ud, const XML_Char *n, const XML_Char *sys, const XML_Char *pub, int internal)
{
    (void)n, (void)sys, (void)pub, (void)internal;
    sub_state *s = ud;
    s->kind = -1;
    XML_StopParser((XML_Parser)s->xml_ctx, XML_FALSE);
}

static void XMLCALL x_end(void *ud, const XML_Char *name)
{
    const char *l = local_name(name);
    if (l)
        on_end(ud, l);
}
#endif

#if BK_HAVE_LIBXML2
/* libxml2's SAX2 interface: the same events as expat's, with the namespace URI apart */
static void lx_start(void *ud, const xmlChar *local, const xmlChar *prefix, const xmlChar *uri, int nns,
                     const xmlChar **nss, int nattr, int ndef, const xmlChar **attrs)
{
    (void)prefix, (void)nns, (void)nss, (void)ndef;
    sub_state *s = ud;
    s->text_n = 0;
    if (!uri || strcmp((const char *)uri, SVC_NS) != 0 || strcmp((const char *)local, "DataMessage") != 0)
        return;
    for (int i = 0; i < nattr; i++) { /* localname, prefix, URI, value, end: the value is not terminated */
        const xmlChar **a = attrs + 5 * i;
        char v[32];
        size_t n = (size_t)(a[4] - a[3]);
        if (n >= sizeof v)
            n = sizeof v - 1;
        memcpy(v, a[3], n);
        v[n] = 0;
        on_data_attr(s, (const char *)a[0], v);
    }
}

static void lx_end(void *ud, const xmlChar *local, const xmlChar *prefix, const xmlChar *uri)
{
    (void)prefix;
    if (uri && strcmp((const char *)uri, SVC_NS) == 0)
        on_end(ud, (const char *)local);
}

static void lx_text(void *ud, const xmlChar *t, int len) { on_text(ud, (const char *)t, len); }

static void lx_doctype(void *ud, const xmlChar *name, const xmlChar *ext, const xmlChar *sys) /* as x_doctype */
{
    (void)name, (void)ext, (void)sys;
    sub_state *s = ud;
    s->kind = -1;
    xmlStopParser((xmlParserCtxtPtr)s->xml_ctx);
}
#endif

const char *svc_expat_reason(void)
{
#if BK_HAVE_EXPAT
    return NULL;
#else
    return "built without expat (install libexpat1-dev and rebuild)";
#endif
}

static int sub_init(bk_ctx *ctx, void **state)
{
    sub_state *s = calloc(1, sizeof *s);
    if (!s)
        return bk_fail(ctx, "out of memory");
    *state = s;
    s->fd = s->out_fd = -1;
    snprintf(s->group, sizeof s->group, "%s", bk_arg_str(ctx, "group"));
    snprintf(s->iface, sizeof s->iface, "%s", bk_arg_str(ctx, "iface_addr"));
    snprintf(s->out_group, sizeof s->out_group, "%s", bk_arg_str(ctx, "out_group"));
    s->port = (int)bk_arg_int(ctx, "port");
    s->out_port = (int)bk_arg_int(ctx, "out_port");
    s->duration_s = bk_arg_float(ctx, "duration_s");
    enum_choice("expat,raw,libxml2", bk_arg_str(ctx, "parser"), &s->parser);
#if !BK_HAVE_LIBXML2
    if (s->parser == 2)
        return bk_unsupported(ctx, "parser=libxml2: built without libxml2 (install libxml2-dev and rebuild)");
#endif
    s->rcvbuf = (int)bk_arg_int(ctx, "rcvbuf_bytes");
    s->stall_ms = bk_arg_int(ctx, "stall_ms");
    s->expect = bk_arg_int(ctx, "expect");
    s->publish_dot = (int)bk_arg_int(ctx, "publish_dot");
    s->fd = svc_mcast_receiver(s->group, s->port, s->iface, s->rcvbuf);
    if (s->fd < 0)
        return bk_fail(ctx, "cannot join %s:%d on %s: %s", s->group, s->port, s->iface, strerror(errno));
    socklen_t sl = sizeof s->rcvbuf_actual;
    getsockopt(s->fd, SOL_SOCKET, SO_RCVBUF, &s->rcvbuf_actual, &sl);
    if (s->publish_dot && (s->out_fd = svc_mcast_sender(s->iface, 1)) < 0)
        return bk_fail(ctx, "cannot set up multicast sending on %s: %s", s->iface, strerror(errno));
    return 0;
}

static void sub_fini(void *state)
{
    sub_state *s = state;
    if (!s)
        return;
    if (s->fd >= 0)
        close(s->fd);
    if (s->out_fd >= 0)
        close(s->out_fd);
    for (int k = 0; k < SVC_KINDS; k++)
        free(s->trk[k].seen);
    svc_samples_free(&s->latency_ns);
    svc_samples_free(&s->parse_ns);
    free(s);
}

/* The DirectionOfTravel service: course over ground from consecutive positions when the vehicle moves,
 * the INS heading otherwise; speed from distance over time. */
static void publish_dot(sub_state *s, const struct sockaddr_in *to, uint64_t now)
{
    svc_fix d = s->fix;
    if (s->have_prev && now > s->prev_ns) {
        double lat1 = s->prev.lat_deg * M_PI / 180, lat2 = d.lat_deg * M_PI / 180;
        double dlon = (d.lon_deg - s->prev.lon_deg) * M_PI / 180;
        double y = sin(dlon) * cos(lat2), x = cos(lat1) * sin(lat2) - sin(lat1) * cos(lat2) * cos(dlon);
        double dist = 6371000.0 * acos(fmin(1.0, sin(lat1) * sin(lat2) + cos(lat1) * cos(lat2) * cos(dlon)));
        d.speed_mps = dist / ((double)(now - s->prev_ns) / 1e9);
        d.course_deg = dist > 0.01 ? fmod(atan2(y, x) * 180 / M_PI + 360, 360) : d.heading_deg;
    } else
        d.course_deg = d.heading_deg;
    s->prev = s->fix;
    s->prev_ns = now;
    s->have_prev = 1;
    char buf[1024];
    size_t at;
    int len = svc_build_message(buf, sizeof buf, SVC_DOT, s->dot_sent, &d, &at);
    if (len > 0) {
        svc_patch_stamp(buf, at, svc_now());
        if (sendto(s->out_fd, buf, (size_t)len, 0, (const struct sockaddr *)to, sizeof *to) == len)
            s->dot_sent++;
    }
}

static int sub_serve(bk_ctx *ctx, void *state)
{
    sub_state *s = state;
    svc_install_stop();
#if BK_HAVE_EXPAT
    XML_Parser xp = s->parser == 0 ? XML_ParserCreateNS(NULL, '|') : NULL;
#endif
#if BK_HAVE_LIBXML2
    xmlParserCtxtPtr lx = NULL;
    if (s->parser == 2) {
        static xmlSAXHandler sax;
        memset(&sax, 0, sizeof sax);
        sax.initialized = XML_SAX2_MAGIC;
        sax.startElementNs = lx_start;
        sax.endElementNs = lx_end;
        sax.characters = lx_text;
        sax.internalSubset = lx_doctype;
        lx = xmlCreatePushParserCtxt(&sax, s, NULL, 0, NULL);
        if (!lx)
            return bk_fail(ctx, "cannot create a libxml2 parser");
        xmlCtxtUseOptions(lx, XML_PARSE_NONET | XML_PARSE_NOBLANKS);
        s->xml_ctx = lx;
    }
#endif
    struct sockaddr_in to;
    dest_addr(s->out_group, s->out_port, &to);
    fprintf(stderr, "svc.sub: ready, joined %s:%d\n", s->group, s->port);
    fflush(stderr);
    s->t0 = svc_now();
    uint64_t deadline = s->t0 + (uint64_t)(s->duration_s * 1e9);
    struct timeval rto = {.tv_sec = 0, .tv_usec = 50000};
    setsockopt(s->fd, SOL_SOCKET, SO_RCVTIMEO, &rto, sizeof rto);
    if (s->stall_ms)
        svc_sleep_until(s->t0 + (uint64_t)s->stall_ms * 1000000ULL);
    char buf[4096], cbuf[256];
    while (!svc_stop && svc_now() < deadline && !(s->expect && s->received >= (uint64_t)s->expect)) {
        /* one blocking recvmsg per message (no poll first: one syscall less on the latency path); the
         * receive timeout (below) brings the loop back to check the deadline and the stop flag */
        struct iovec iov = {.iov_base = buf, .iov_len = sizeof buf - 1};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
        ssize_t r = recvmsg(s->fd, &mh, 0);
        uint64_t now = svc_now();
        if (r <= 0)
            continue;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL)
                memcpy(&s->ovfl_drops, CMSG_DATA(c), sizeof s->ovfl_drops);
        s->received++;
        buf[r] = 0;
        s->kind = -1;
        s->sent_ns = 0;
        if (s->parser == 1) {
            unsigned long long seq, ns;
            if (r == 64 && sscanf(buf, "R %llu %llu", &seq, &ns) == 2) {
                s->kind = SVC_RAW;
                s->seq = seq;
                s->sent_ns = ns;
            }
        }
#if BK_HAVE_LIBXML2
        else if (s->parser == 2) {
            /* one context for the run, reset per message (as the expat parser is) */
            xmlCtxtResetPush(lx, NULL, 0, NULL, NULL);
            if (xmlParseChunk(lx, buf, (int)r, 1) != 0 || !lx->wellFormed)
                s->kind = -1;
        }
#endif
#if BK_HAVE_EXPAT
        else {
            XML_ParserReset(xp, NULL);
            XML_SetUserData(xp, s);
            XML_SetElementHandler(xp, x_start, x_end);
            XML_SetCharacterDataHandler(xp, x_text);
            XML_SetStartDoctypeDeclHandler(xp, x_doctype);
            s->xml_ctx = xp;
            if (XML_Parse(xp, buf, (int)r, 1) != XML_STATUS_OK)
                s->kind = -1;
        }
#endif
        uint64_t parsed = svc_now();
        if (s->kind < 0 || !s->sent_ns) {
            s->bad++;
            continue;
        }
        svc_push(&s->parse_ns, parsed - now);
        svc_push(&s->latency_ns, now > s->sent_ns ? now - s->sent_ns : 0);
        track(&s->trk[s->kind], s->seq, &s->duplicates, &s->reordered);
        s->checksum = bk_fnv1a(s->checksum ? s->checksum : BK_FNV_OFFSET, &s->seq, sizeof s->seq);
        if (s->kind == SVC_POSITION)
            s->have_pos = 1;
        if (s->kind == SVC_ORIENTATION)
            s->have_ori = 1;
        if (s->publish_dot && s->kind == SVC_POSITION && s->have_ori)
            publish_dot(s, &to, now);
    }
    s->t_end = svc_now();
#if BK_HAVE_EXPAT
    if (xp)
        XML_ParserFree(xp);
#endif
#if BK_HAVE_LIBXML2
    if (lx)
        xmlFreeParserCtxt(lx);
#endif
    (void)ctx;
    return 0;
}

static uint64_t sub_lost(const sub_state *s)
{
    uint64_t lost = 0;
    for (int k = 0; k < SVC_KINDS; k++)
        lost += seq_lost(&s->trk[k]);
    return lost;
}

static int sub_verify(bk_ctx *ctx, void *state)
{
    sub_state *s = state;
    double secs = (double)(s->t_end - s->t0) / 1e9;
    bk_set_value(ctx, "latency_p50_ns", svc_percentile(&s->latency_ns, 50));
    bk_set_value(ctx, "latency_p99_ns", svc_percentile(&s->latency_ns, 99));
    bk_set_value(ctx, "received_per_s", secs > 0 ? (double)s->received / secs : 0);
    bk_set_value(ctx, "lost", (double)sub_lost(s));
    bk_set_checksum(ctx, s->checksum);
    if (!s->latency_ns.n)
        bk_skip_metric(ctx, "latency_p50_ns", "no message received"), bk_skip_metric(ctx, "latency_p99_ns", "no message received");
    return 0;
}

static void sub_json(void *state, bk_json *j)
{
    sub_state *s = state;
    bk_json_begin_object(j);
    bk_json_key(j, "schema");
    bk_json_int(j, SVC_SCHEMA);
    bk_json_key(j, "role");
    bk_json_str(j, s->publish_dot ? "dot" : "sub");
    bk_json_key(j, "duration_ns");
    bk_json_uint(j, s->t_end - s->t0);
    bk_json_key(j, "received");
    bk_json_uint(j, s->received);
    bk_json_key(j, "bad");
    bk_json_uint(j, s->bad);
    bk_json_key(j, "lost");
    bk_json_uint(j, sub_lost(s));
    bk_json_key(j, "duplicates");
    bk_json_uint(j, s->duplicates);
    bk_json_key(j, "reordered");
    bk_json_uint(j, s->reordered);
    uint64_t jumps = 0, resyncs = 0;
    for (int k = 0; k < SVC_KINDS; k++)
        jumps += s->trk[k].jumps, resyncs += s->trk[k].resyncs;
    bk_json_key(j, "seq_jumps"); /* datagrams whose seq lay beyond the tracking window: anomalies */
    bk_json_uint(j, jumps);
    bk_json_key(j, "seq_resyncs");
    bk_json_uint(j, resyncs);
    bk_json_key(j, "seq_window");
    bk_json_uint(j, SEQ_WINDOW);
    bk_json_key(j, "socket_overflow_drops");
    bk_json_uint(j, s->ovfl_drops);
    bk_json_key(j, "parser");
    bk_json_str(j, s->parser == 0 ? "expat" : s->parser == 1 ? "raw" : "libxml2");
    bk_json_key(j, "last_fix"); /* what the parser read last: its values, not only its stamps */
    bk_json_begin_object(j);
    bk_json_key(j, "latitude_deg");
    bk_json_num(j, s->fix.lat_deg);
    bk_json_key(j, "longitude_deg");
    bk_json_num(j, s->fix.lon_deg);
    bk_json_key(j, "altitude_m");
    bk_json_num(j, s->fix.alt_m);
    bk_json_end_object(j);
    bk_json_key(j, "rcvbuf_bytes");
    bk_json_int(j, s->rcvbuf_actual);
    bk_json_key(j, "by_kind");
    bk_json_begin_object(j);
    for (int k = 0; k < SVC_KINDS; k++)
        if (s->trk[k].any) {
            bk_json_key(j, svc_kind_names[k]);
            bk_json_begin_object(j);
            bk_json_key(j, "unique");
            bk_json_uint(j, s->trk[k].unique);
            bk_json_key(j, "first_seq");
            bk_json_uint(j, s->trk[k].first);
            bk_json_key(j, "max_seq");
            bk_json_uint(j, s->trk[k].max);
            bk_json_key(j, "seq_jumps");
            bk_json_uint(j, s->trk[k].jumps);
            bk_json_key(j, "seq_resyncs");
            bk_json_uint(j, s->trk[k].resyncs);
            bk_json_end_object(j);
        }
    bk_json_end_object(j);
    bk_json_key(j, "dot_sent");
    bk_json_uint(j, s->dot_sent);
    svc_json_summary(j, "oneway_latency_ns", &s->latency_ns);
    svc_json_summary(j, "parse_ns", &s->parse_ns);
    bk_json_end_object(j);
}

const bk_kernel bk_svc_sub = {
    .name = "svc.sub",
    .family = "svc",
    .summary = "VICTORY-like subscriber: joins the group, parses with expat; one-way latency, loss, drops",
    .params = sub_params,
    .metrics = sub_metrics,
    .supported = svc_expat_reason,
    .init = sub_init,
    .verify = sub_verify,
    .fini = sub_fini,
    .serve = sub_serve,
    .serve_json = sub_json,
};

/* ---- svc.nmea: a GPS on a pty, paced at the real baud rate ---- */

typedef struct {
    int baud;
    double duration_s, start_delay_s;
    char link[512], device[256], slave[256];
    int master, slave_fd, linked;
    uint64_t bytes, dropped, bursts, sentences;
    uint64_t burst_span_ns, burst_span_bytes; /* sum over bursts of (last - first byte) and (bytes - 1) */
    svc_samples lag_ns;
    uint64_t t0, t_end, checksum;
} nmea_state;

static const bk_param nmea_params[] = {
    {"baud", BK_INT, 300, 921600, "4800", NULL, "bit/s", "line rate; 8N1 framing makes it baud/10 bytes per second"},
    {"duration_s", BK_FLOAT, 0.05, 604800, "10", NULL, "s", "how long to feed"},
    {"start_delay_s", BK_FLOAT, 0, 60, "0.3", NULL, "s", "wait before the first burst (lets a reader open the pty)"},
    {"device", BK_STR, 0, 0, "", NULL, NULL, "write to this serial device instead of a new pty"},
    {"link", BK_STR, 0, 0, "", NULL, NULL, "also make this path a symlink to the pty slave (removed at the end)"},
    {0},
};

static const bk_metric nmea_metrics[] = {
    {"paced_bytes_per_s", "B/s", true, BK_VALUE, -1, 1, "bytes per second within bursts (baud/10 when exact)"},
    {"lag_p99_ns", "ns", false, BK_VALUE, -1, 1, "99th percentile of byte write lag behind the schedule"},
    {0},
};

static int nmea_init(bk_ctx *ctx, void **state)
{
    nmea_state *s = calloc(1, sizeof *s);
    if (!s)
        return bk_fail(ctx, "out of memory");
    *state = s;
    s->master = s->slave_fd = -1;
    s->baud = (int)bk_arg_int(ctx, "baud");
    s->duration_s = bk_arg_float(ctx, "duration_s");
    s->start_delay_s = bk_arg_float(ctx, "start_delay_s");
    snprintf(s->link, sizeof s->link, "%s", bk_arg_str(ctx, "link"));
    snprintf(s->device, sizeof s->device, "%s", bk_arg_str(ctx, "device"));
    speed_t speed = baud_speed(s->baud);
    if (s->device[0]) {
        /* a real UART (or one side of a pty pair): set the line to baud 8N1, raw; the UART then also
         * paces the bytes itself. A path that is no terminal (a FIFO, a file) is written as it is. */
        s->master = open(s->device, O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
        if (s->master < 0)
            return bk_fail(ctx, "cannot open '%s': %s", s->device, strerror(errno));
        struct termios t;
        if (tcgetattr(s->master, &t) == 0) {
            if (!speed)
                return bk_fail(ctx, "baud=%d: not a termios rate for the serial device '%s'", s->baud, s->device);
            serial_8n1(&t, speed);
            if (tcsetattr(s->master, TCSANOW, &t) != 0)
                return bk_fail(ctx, "cannot set '%s' to %d 8N1: %s", s->device, s->baud, strerror(errno));
        }
        snprintf(s->slave, sizeof s->slave, "%s", s->device);
        return 0;
    }
    s->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (s->master < 0 || grantpt(s->master) != 0 || unlockpt(s->master) != 0 || ptsname_r(s->master, s->slave, sizeof s->slave) != 0)
        return bk_unsupported(ctx, "no pseudo-terminal available: %s", strerror(errno));
    /* Keep the slave open ourselves, echo off: a reader that comes and goes does not hang the line up,
     * and nothing is echoed back into the master. */
    s->slave_fd = open(s->slave, O_RDWR | O_NOCTTY | O_CLOEXEC);
    struct termios t;
    if (s->slave_fd < 0 || tcgetattr(s->slave_fd, &t) != 0)
        return bk_fail(ctx, "cannot open the pty slave %s: %s", s->slave, strerror(errno));
    t.c_lflag &= ~(tcflag_t)(ECHO | ECHONL | ECHOE | ISIG);
    serial_8n1(&t, speed ? speed : B4800); /* a pty ignores the speed: the pacing is ours */
    tcsetattr(s->slave_fd, TCSANOW, &t);
    fcntl(s->master, F_SETFL, fcntl(s->master, F_GETFL) | O_NONBLOCK);
    if (s->link[0]) {
        unlink(s->link); /* a link left by a killed feeder */
        if (symlink(s->slave, s->link) != 0)
            return bk_fail(ctx, "cannot create the link '%s': %s", s->link, strerror(errno));
        s->linked = 1;
    }
    return 0;
}

static void nmea_fini(void *state)
{
    nmea_state *s = state;
    if (!s)
        return;
    if (s->linked)
        unlink(s->link);
    if (s->master >= 0)
        close(s->master);
    if (s->slave_fd >= 0)
        close(s->slave_fd);
    svc_samples_free(&s->lag_ns);
    free(s);
}

static void fmt_coord(char *out, size_t cap, double deg, int lon)
{
    double a = fabs(deg);
    int d = (int)a;
    snprintf(out, cap, lon ? "%03d%07.4f,%c" : "%02d%07.4f,%c", d, (a - d) * 60.0, lon ? (deg < 0 ? 'W' : 'E') : (deg < 0 ? 'S' : 'N'));
}

/* One second's burst, as a Garmin GPS 16x sends by default: GGA, RMC, GSA and three GSV sentences. */
static size_t nmea_burst(char *out, size_t cap, uint64_t k)
{
    double lat = 42.5133 + (double)k * 1e-5, lon = -83.0261 + (double)k * 1.2e-5;
    unsigned hh = (unsigned)(k / 3600 % 24), mm = (unsigned)(k / 60 % 60), ss = (unsigned)(k % 60);
    char la[32], lo[32], body[128];
    fmt_coord(la, sizeof la, lat, 0);
    fmt_coord(lo, sizeof lo, lon, 1);
    size_t n = 0;
    snprintf(body, sizeof body, "GPGGA,%02u%02u%02u.00,%s,%s,1,08,0.9,190.4,M,-34.0,M,,", hh, mm, ss, la, lo);
    n += (size_t)nmea_sentence(out + n, cap - n, body);
    snprintf(body, sizeof body, "GPRMC,%02u%02u%02u.00,A,%s,%s,024.3,087.0,241126,007.1,W", hh, mm, ss, la, lo);
    n += (size_t)nmea_sentence(out + n, cap - n, body);
    n += (size_t)nmea_sentence(out + n, cap - n, "GPGSA,A,3,04,05,09,12,17,20,24,25,,,,,1.6,0.9,1.3");
    n += (size_t)nmea_sentence(out + n, cap - n, "GPGSV,3,1,12,04,45,098,42,05,32,274,39,09,18,041,36,12,67,181,45");
    n += (size_t)nmea_sentence(out + n, cap - n, "GPGSV,3,2,12,17,12,312,31,20,54,133,44,24,08,205,28,25,71,030,46");
    n += (size_t)nmea_sentence(out + n, cap - n, "GPGSV,3,3,12,28,22,250,33,29,05,088,25,31,39,158,40,32,15,345,30");
    return n;
}

static int nmea_serve(bk_ctx *ctx, void *state)
{
    nmea_state *s = state;
    (void)ctx;
    svc_install_stop();
    svc_tight_timers();
    fprintf(stderr, "svc.nmea: ready, pty %s\n", s->slave);
    fflush(stderr);
    uint64_t char_ns = (uint64_t)(10e9 / s->baud); /* 8N1: start + 8 data + stop bits */
    s->t0 = svc_now() + (uint64_t)(s->start_delay_s * 1e9);
    uint64_t end = s->t0 + (uint64_t)(s->duration_s * 1e9);
    char burst[1024];
    for (uint64_t k = 0; !svc_stop; k++) {
        uint64_t tb = s->t0 + k * 1000000000ULL;
        if (tb >= end)
            break;
        size_t n = nmea_burst(burst, sizeof burst, k);
        s->checksum = bk_fnv1a(s->checksum ? s->checksum : BK_FNV_OFFSET, burst, n);
        uint64_t first = 0, last = 0;
        for (size_t i = 0; i < n && !svc_stop; i++) {
            uint64_t due = tb + i * char_ns;
            svc_sleep_until(due);
            uint64_t now = svc_now();
            svc_push(&s->lag_ns, now - due);
            if (write(s->master, burst + i, 1) == 1) {
                s->bytes++;
                if (!first)
                    first = now;
                last = now;
            } else
                s->dropped++; /* nobody reads and the pty buffer is full */
            if (burst[i] == '\n')
                s->sentences++;
        }
        if (last > first) {
            s->burst_span_ns += last - first;
            s->burst_span_bytes += n - 1;
        }
        s->bursts++;
        svc_sleep_until(tb + 1000000000ULL < end ? tb + 1000000000ULL : end);
    }
    s->t_end = svc_now();
    return 0;
}

static int nmea_verify(bk_ctx *ctx, void *state)
{
    nmea_state *s = state;
    if (s->burst_span_ns)
        bk_set_value(ctx, "paced_bytes_per_s", (double)s->burst_span_bytes * 1e9 / (double)s->burst_span_ns);
    else
        bk_skip_metric(ctx, "paced_bytes_per_s", "no complete burst was written");
    bk_set_value(ctx, "lag_p99_ns", svc_percentile(&s->lag_ns, 99));
    bk_set_checksum(ctx, s->checksum);
    return 0;
}

static void nmea_json(void *state, bk_json *j)
{
    nmea_state *s = state;
    bk_json_begin_object(j);
    bk_json_key(j, "schema");
    bk_json_int(j, SVC_SCHEMA);
    bk_json_key(j, "role");
    bk_json_str(j, "nmea");
    bk_json_key(j, "pty");
    bk_json_str(j, s->slave);
    bk_json_key(j, "baud");
    bk_json_int(j, s->baud);
    bk_json_key(j, "nominal_bytes_per_s");
    bk_json_num(j, s->baud / 10.0);
    bk_json_key(j, "bytes");
    bk_json_uint(j, s->bytes);
    bk_json_key(j, "dropped_bytes");
    bk_json_uint(j, s->dropped);
    bk_json_key(j, "bursts");
    bk_json_uint(j, s->bursts);
    bk_json_key(j, "sentences");
    bk_json_uint(j, s->sentences);
    bk_json_key(j, "duration_ns");
    bk_json_uint(j, s->t_end > s->t0 ? s->t_end - s->t0 : 0);
    svc_json_summary(j, "byte_lag_ns", &s->lag_ns);
    bk_json_end_object(j);
}

const bk_kernel bk_svc_nmea = {
    .name = "svc.nmea",
    .family = "svc",
    .summary = "GPS feeder: NMEA GGA/RMC/GSA/GSV 1 Hz bursts on a pty, paced byte by byte at the baud rate",
    .params = nmea_params,
    .metrics = nmea_metrics,
    .init = nmea_init,
    .verify = nmea_verify,
    .fini = nmea_fini,
    .serve = nmea_serve,
    .serve_json = nmea_json,
};
