/* What every service role shares (svc.h): one clock, the stop flag, timer slack and SCHED_FIFO, growable
 * sample arrays with their percentile summary, the VICTORY-like message format and the multicast sockets.
 * Nothing here calls into a role or into the management endpoint. */
#include "svc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

volatile sig_atomic_t svc_stop;
const char *const svc_kind_names[SVC_KINDS] = {"Position", "Orientation", "DirectionOfTravel", "Raw"};

uint64_t svc_now(void) { return bk_clock_ns(CLOCK_MONOTONIC); }

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

void svc_json_begin(bk_json *j, const char *role)
{
    bk_json_begin_object(j);
    bk_json_kv_int(j, "schema", SVC_SCHEMA);
    bk_json_kv_str(j, "role", role);
}

void svc_json_summary(bk_json *j, const char *key, svc_samples *s)
{
    bk_json_key_object(j, key);
    bk_json_kv_uint(j, "count", s->total);
    bk_json_kv_num(j, "mean", s->total ? s->sum / (double)s->total : NAN);
    static const char *keys[] = {"p50", "p90", "p99", "p999"};
    static const double qs[] = {50, 90, 99, 99.9};
    for (int i = 0; i < 4; i++) {
        bk_json_kv_num(j, keys[i], svc_percentile(s, qs[i]));
    }
    bk_json_kv_num(j, "max", s->total ? (double)s->max_seen : NAN);
    if (s->total > s->n) { /* the percentiles come from a reservoir of this many samples */
        bk_json_kv_uint(j, "kept", s->n);
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

/* Closes a socket that could not be set up and returns -1 with errno `err`, the cause (close may change errno). */
static int close_failed(int fd, int err)
{
    close(fd);
    errno = err;
    return -1;
}

int svc_mcast_sender(const char *iface_addr, int ttl)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct in_addr ifa;
    if (inet_pton(AF_INET, iface_addr, &ifa) != 1)
        return close_failed(fd, EINVAL);
    unsigned char t = (unsigned char)ttl, loop = 1;
    if (setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &ifa, sizeof ifa) < 0 ||
        setsockopt(fd, IPPROTO_IP, IP_MULTICAST_TTL, &t, sizeof t) < 0 ||
        setsockopt(fd, IPPROTO_IP, IP_MULTICAST_LOOP, &loop, sizeof loop) < 0)
        return close_failed(fd, errno);
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
    if (inet_pton(AF_INET, group, &mreq.imr_multiaddr) != 1 || inet_pton(AF_INET, iface_addr, &mreq.imr_interface) != 1)
        return close_failed(fd, EINVAL);
    sa.sin_addr = mreq.imr_multiaddr;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof one) < 0 ||
        (rcvbuf_bytes > 0 && setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf_bytes, sizeof rcvbuf_bytes) < 0) ||
        bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
        setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mreq, sizeof mreq) < 0)
        return close_failed(fd, errno);
    return fd;
}

int svc_dest_addr(const char *group, int port, struct sockaddr_in *sa)
{
    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)port);
    return inet_pton(AF_INET, group, &sa->sin_addr) == 1 ? 0 : -1;
}

const char *svc_enum_choice(const char *choices, const char *v, int *idx)
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

const char *svc_expat_reason(void)
{
#if BK_HAVE_EXPAT
    return NULL;
#else
    return "built without expat (install libexpat1-dev and rebuild)";
#endif
}
