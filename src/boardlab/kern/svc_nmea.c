/* svc.nmea: a GPS feeder. NMEA GGA/RMC/GSA/GSV 1 Hz bursts on a pty (or a serial device), paced byte by
 * byte at the real baud rate, for the publisher's sensor reader (svc.pub source=nmea). */
#include "svc.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

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
    nmea_state *s = bk_run_state(ctx, state, sizeof *s);
    if (!s)
        return -1;
    s->master = s->slave_fd = -1;
    s->baud = (int)bk_arg_int(ctx, "baud");
    s->duration_s = bk_arg_float(ctx, "duration_s");
    s->start_delay_s = bk_arg_float(ctx, "start_delay_s");
    snprintf(s->link, sizeof s->link, "%s", bk_arg_str(ctx, "link"));
    snprintf(s->device, sizeof s->device, "%s", bk_arg_str(ctx, "device"));
    speed_t speed = svc_baud_speed(s->baud);
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
            svc_serial_8n1(&t, speed);
            if (tcsetattr(s->master, TCSANOW, &t) != 0)
                return bk_fail(ctx, "cannot set '%s' to %d 8N1: %s", s->device, s->baud, strerror(errno));
        }
        snprintf(s->slave, sizeof s->slave, "%s", s->device);
        return 0;
    }
    s->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (s->master < 0 || grantpt(s->master) != 0 || unlockpt(s->master) != 0 ||
        ptsname_r(s->master, s->slave, sizeof s->slave) != 0)
        return bk_unsupported(ctx, "no pseudo-terminal available: %s", strerror(errno));
    /* Keep the slave open ourselves, echo off: a reader that comes and goes does not hang the line up,
     * and nothing is echoed back into the master. */
    s->slave_fd = open(s->slave, O_RDWR | O_NOCTTY | O_CLOEXEC);
    struct termios t;
    if (s->slave_fd < 0 || tcgetattr(s->slave_fd, &t) != 0)
        return bk_fail(ctx, "cannot open the pty slave %s: %s", s->slave, strerror(errno));
    t.c_lflag &= ~(tcflag_t)(ECHO | ECHONL | ECHOE | ISIG);
    svc_serial_8n1(&t, speed ? speed : B4800); /* a pty ignores the speed: the pacing is ours */
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
}

static void fmt_coord(char *out, size_t cap, double deg, int lon)
{
    double a = fabs(deg);
    int d = (int)a;
    snprintf(out, cap, lon ? "%03d%07.4f,%c" : "%02d%07.4f,%c", d, (a - d) * 60.0,
             lon ? (deg < 0 ? 'W' : 'E') : (deg < 0 ? 'S' : 'N'));
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
    n += (size_t)svc_nmea_sentence(out + n, cap - n, body);
    snprintf(body, sizeof body, "GPRMC,%02u%02u%02u.00,A,%s,%s,024.3,087.0,241126,007.1,W", hh, mm, ss, la, lo);
    n += (size_t)svc_nmea_sentence(out + n, cap - n, body);
    n += (size_t)svc_nmea_sentence(out + n, cap - n, "GPGSA,A,3,04,05,09,12,17,20,24,25,,,,,1.6,0.9,1.3");
    n += (size_t)svc_nmea_sentence(out + n, cap - n,
                                   "GPGSV,3,1,12,04,45,098,42,05,32,274,39,09,18,041,36,12,67,181,45");
    n += (size_t)svc_nmea_sentence(out + n, cap - n,
                                   "GPGSV,3,2,12,17,12,312,31,20,54,133,44,24,08,205,28,25,71,030,46");
    n += (size_t)svc_nmea_sentence(out + n, cap - n,
                                   "GPGSV,3,3,12,28,22,250,33,29,05,088,25,31,39,158,40,32,15,345,30");
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
    svc_json_begin(j, "nmea");
    bk_json_kv_str(j, "pty", s->slave);
    bk_json_kv_int(j, "baud", s->baud);
    bk_json_kv_num(j, "nominal_bytes_per_s", s->baud / 10.0);
    bk_json_kv_uint(j, "bytes", s->bytes);
    bk_json_kv_uint(j, "dropped_bytes", s->dropped);
    bk_json_kv_uint(j, "bursts", s->bursts);
    bk_json_kv_uint(j, "sentences", s->sentences);
    bk_json_kv_uint(j, "duration_ns", s->t_end > s->t0 ? s->t_end - s->t0 : 0);
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
