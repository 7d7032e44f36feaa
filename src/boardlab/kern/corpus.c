/* The deterministic sensor-like corpus (see corpus.h for its shape and guarantees).
 *
 * Each stream is generated record by record (a block of telemetry frames, one log line, one image row, a block
 * of random bytes) into a small staging buffer, and the corpus copies from the streams segment by segment. So
 * the bytes never depend on how a caller chunks its reads, and a prefix of a corpus is a shorter corpus.
 * Everything is integer arithmetic on splitmix64 numbers, with explicit little-endian byte order, so a board
 * and a workstation generate the same bytes. */
#include "corpus.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const part_names[BK_CORPUS_PARTS] = {"telemetry", "logs", "image", "random"};

/* ---- the mix ---- */

int bk_corpus_parse_mix(const char *spec, unsigned pct[BK_CORPUS_PARTS], char *why, size_t why_len)
{
    bool seen[BK_CORPUS_PARTS] = {false};
    unsigned sum = 0;
    memset(pct, 0, sizeof(unsigned) * BK_CORPUS_PARTS);
    const char *p = spec;
    if (!*p) {
        snprintf(why, why_len, "it is empty");
        return -1;
    }
    for (;;) {
        const char *eq = strchr(p, '=');
        const char *comma = strchr(p, ',');
        if (!eq || (comma && comma < eq)) {
            snprintf(why, why_len, "'%.*s' is not NAME=PERCENT", (int)(comma ? comma - p : (long)strlen(p)), p);
            return -1;
        }
        int part = -1;
        for (int i = 0; i < BK_CORPUS_PARTS; i++)
            if ((size_t)(eq - p) == strlen(part_names[i]) && strncmp(p, part_names[i], (size_t)(eq - p)) == 0)
                part = i;
        if (part < 0) {
            snprintf(why, why_len, "unknown stream '%.*s'", (int)(eq - p), p);
            return -1;
        }
        if (seen[part]) {
            snprintf(why, why_len, "'%s' is given twice", part_names[part]);
            return -1;
        }
        seen[part] = true;
        /* Digits only: strtoul would accept signs and spaces. */
        const char *d = eq + 1;
        unsigned v = 0;
        int ndig = 0;
        for (; *d >= '0' && *d <= '9'; d++, ndig++)
            if ((v = v * 10 + (unsigned)(*d - '0')) > 100)
                break;
        if (ndig == 0 || v > 100 || (*d && *d != ',')) {
            snprintf(why, why_len, "the percentage of '%s' is not an integer from 0 to 100", part_names[part]);
            return -1;
        }
        pct[part] = v;
        sum += v;
        if (!*d)
            break;
        p = d + 1;
    }
    if (sum != 100) {
        snprintf(why, why_len, "the percentages sum to %u, not 100", sum);
        return -1;
    }
    return 0;
}

/* ---- integer helpers ---- */

/* Floor division by 2^k for signed values, without relying on how >> treats negative numbers. */
static int64_t shr_floor(int64_t v, int k) { return v >= 0 ? v >> k : -((-v - 1) >> k) - 1; }

static int32_t clamp(int32_t v, int32_t lo, int32_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Uniform in [0, n) (n small: the modulo bias of a 64-bit draw is negligible). */
static uint32_t rand_below(uint64_t *rng, uint32_t n) { return (uint32_t)(bk_rand_next(rng) % n); }

static int32_t rand_range(uint64_t *rng, int32_t lo, int32_t hi)
{
    return lo + (int32_t)rand_below(rng, (uint32_t)(hi - lo + 1));
}

#define SINE_BITS 12
#define SINE_N (1 << SINE_BITS)
#define SINE_ONE 16384 /* the table's amplitude (Q14) */

/* One period of sin in Q14, by rotating a Q30 vector 2*pi/4096 per step with exact integer arithmetic (the
 * constants are round(2^30 cos(2 pi/4096)) and round(2^30 sin(2 pi/4096))): no libm, so the same everywhere. */
static void make_sine(int16_t *t)
{
    const int64_t c = 1073740561, s = 1647099;
    int64_t x = (int64_t)1 << 30, y = 0;
    for (int i = 0; i < SINE_N; i++) {
        t[i] = (int16_t)shr_floor(y + (1 << 15), 16);
        int64_t nx = shr_floor(x * c - y * s + (1LL << 29), 30);
        int64_t ny = shr_floor(x * s + y * c + (1LL << 29), 30);
        x = nx;
        y = ny;
    }
}

/* ---- telemetry: int16 frames of TM_CH channels ---- */

#define TM_CH 8
#define TM_WAVES 3
#define TM_FRAMES_PER_RECORD 256

typedef struct {
    uint32_t phase[TM_WAVES], step[TM_WAVES]; /* phase accumulators: the top 12 bits index the sine table */
    int32_t amp[TM_WAVES];
    int32_t offset;
    int64_t drift_q16, trend_q16; /* slow random walk plus a linear trend, in 1/65536 LSB */
    uint32_t noise; /* triangular noise of +-noise LSB */
} tm_chan;

typedef struct {
    uint64_t rng;
    uint16_t seq;
    uint32_t frame;
    tm_chan ch[TM_CH];
} tm_gen;

/* Period in frames -> phase step. */
static uint32_t period_step(uint64_t *rng, uint32_t frames)
{
    uint32_t f = frames * (uint32_t)rand_range(rng, 80, 120) / 100;
    return (uint32_t)(0x100000000ULL / (f ? f : 1));
}

static void tm_init(tm_gen *g, uint64_t seed)
{
    g->rng = seed;
    /* Channel 0 is a frame counter; the others are sensors of the kind a small satellite samples: amplitudes
     * and periods in frames of the orbit wave, a mid wave and a fast wave, offset, noise. */
    static const struct {
        int32_t amp[TM_WAVES];
        uint32_t period[TM_WAVES];
        int32_t offset;
        uint32_t noise;
    } kinds[TM_CH] = {
        {{0, 0, 0}, {1, 1, 1}, 0, 0}, /* sequence counter */
        {{900, 40, 0}, {5400, 600, 1}, 2300, 1}, /* board temperature, 0.01 C */
        {{350, 60, 8}, {5400, 900, 120}, 7400, 2}, /* battery voltage, mV */
        {{12000, 500, 20}, {5400, 300, 60}, 0, 4}, /* magnetometer x, nT/4 */
        {{11000, 450, 20}, {5400, 280, 70}, 0, 4}, /* magnetometer y */
        {{200, 60, 25}, {900, 150, 45}, 0, 6}, /* gyro rate */
        {{4000, 300, 0}, {5400, 300, 1}, 4200, 2}, /* sun sensor */
        {{150, 80, 40}, {700, 137, 40}, 600, 12}, /* payload current, mA */
    };
    for (int c = 0; c < TM_CH; c++) {
        tm_chan *ch = &g->ch[c];
        for (int w = 0; w < TM_WAVES; w++) {
            ch->amp[w] = kinds[c].amp[w] * rand_range(&g->rng, 50, 150) / 100;
            ch->step[w] = period_step(&g->rng, kinds[c].period[w]);
            ch->phase[w] = (uint32_t)bk_rand_next(&g->rng);
        }
        ch->offset = kinds[c].offset + rand_range(&g->rng, -100, 100);
        ch->noise = kinds[c].noise;
        ch->trend_q16 = rand_range(&g->rng, -40, 40);
    }
    g->seq = (uint16_t)bk_rand_next(&g->rng);
}

static size_t tm_record(tm_gen *g, const int16_t *sine, unsigned char *out)
{
    unsigned char *p = out;
    for (int f = 0; f < TM_FRAMES_PER_RECORD; f++, g->frame++) {
        uint64_t r = bk_rand_next(&g->rng), r2 = bk_rand_next(&g->rng);
        bool step_walk = (g->frame & 255) == 0; /* the random walk moves every 256 frames */
        int32_t v = g->seq++;
        for (int c = 0; c < TM_CH; c++) {
            tm_chan *ch = &g->ch[c];
            if (c > 0) {
                int64_t acc = 0;
                for (int w = 0; w < TM_WAVES; w++) {
                    acc += (int64_t)ch->amp[w] * sine[ch->phase[w] >> (32 - SINE_BITS)];
                    ch->phase[w] += ch->step[w];
                }
                ch->drift_q16 += ch->trend_q16;
                if (step_walk)
                    ch->drift_q16 += (int64_t)rand_range(&g->rng, -3, 3) << 16;
                uint32_t m = 2 * ch->noise + 1;
                /* Two 8-bit draws per channel from r and r2: a triangular distribution, like summed noise. */
                int32_t noise = ch->noise ? (int32_t)((r >> (8 * c)) & 255) % (int32_t)m +
                                                (int32_t)((r2 >> (8 * c)) & 255) % (int32_t)m - 2 * (int32_t)ch->noise
                                          : 0;
                v = clamp((int32_t)(ch->offset + shr_floor(acc, 14) + shr_floor(ch->drift_q16, 16) + noise / 2), -32768,
                          32767);
            }
            uint16_t u = (uint16_t)v;
            *p++ = (unsigned char)(u & 255);
            *p++ = (unsigned char)(u >> 8);
        }
    }
    return (size_t)(p - out);
}

/* ---- logs: syslog-like lines with ISO timestamps ---- */

typedef struct {
    uint64_t rng;
    uint64_t ms; /* Unix time in ms */
    uint32_t pid[8];
    uint32_t seq_down, seq_up, block, files;
    int32_t batt_mv, temp_cc, soc_pm;
    int mode;
} log_gen;

enum { SS_EPS, SS_ADCS, SS_COMMS, SS_MAG, SS_GPS, SS_THERMAL, SS_KERNEL, SS_CDH };
static const char *const ss_names[8] = {"eps",         "adcs",    "comms",  "payload-mag",
                                        "payload-gps", "thermal", "kernel", "cdh"};

static void log_init(log_gen *g, uint64_t seed)
{
    g->rng = seed;
    /* Somewhere in 2024, as a mission log would be. */
    uint64_t day_s = rand_below(&g->rng, 300u * 86400u);
    g->ms = (1704067200ULL + day_s) * 1000ULL + rand_below(&g->rng, 1000);
    for (int i = 0; i < 8; i++)
        g->pid[i] = i == SS_KERNEL ? 0 : 180 + rand_below(&g->rng, 1800);
    g->seq_down = rand_below(&g->rng, 60000);
    g->seq_up = rand_below(&g->rng, 60000);
    g->block = rand_below(&g->rng, 100000);
    g->files = rand_below(&g->rng, 1u << 20);
    g->batt_mv = 7400;
    g->temp_cc = 2300;
    g->soc_pm = 800;
}

/* Civil date from days since 1970-01-01 (proleptic Gregorian; H. Hinnant's days_from_civil inverse). */
static void civil_from_days(int64_t z, int *y, unsigned *m, unsigned *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int)((int64_t)yoe + era * 400 + (*m <= 2));
}

/* A signed fixed-point number with 3 decimals, as "%s%d.%03d" arguments (evaluates v several times). */
#define FX3(v)                                                                                                         \
    ((v) < 0 ? "-" : ""), (int)(((v) < 0 ? -(int64_t)(v) : (int64_t)(v)) / 1000),                                      \
        (int)(((v) < 0 ? -(int64_t)(v) : (int64_t)(v)) % 1000)

static size_t log_line(log_gen *g, char *out, size_t cap)
{
    uint64_t *r = &g->rng;
    /* Mostly steady traffic, sometimes a burst of lines within a few milliseconds. */
    bool burst = rand_below(r, 8) == 0;
    g->ms += burst ? rand_below(r, 3) : 20 + rand_below(r, 400);
    uint64_t s = g->ms / 1000;
    int y;
    unsigned mo, d;
    civil_from_days((int64_t)(s / 86400), &y, &mo, &d);
    unsigned sod = (unsigned)(s % 86400);
    int n = snprintf(out, cap, "%04d-%02u-%02uT%02u:%02u:%02u.%03uZ andesite-obc ", y, mo, d, sod / 3600, sod / 60 % 60,
                     sod % 60, (unsigned)(g->ms % 1000));
    /* The slowly varying values the messages report. */
    g->batt_mv = clamp(g->batt_mv + rand_range(r, -4, 4), 6600, 8300);
    g->temp_cc = clamp(g->temp_cc + rand_range(r, -6, 6), -1500, 6000);
    g->soc_pm = clamp(g->soc_pm + rand_range(r, -1, 1), 200, 1000);
    static const char *const modes[] = {"detumble", "sun-pointing", "nadir", "safe", "science"};
    static const char *const zones[] = {"obc", "battery", "radio", "payload", "panel-x", "panel-y"};
    static const char *const tasks[] = {"adcs_loop", "beacon", "fs_sync", "mag_sample", "gps_poll", "hk_collect"};
    /* Template weights: housekeeping dominates, warnings and errors are rare. */
    static const unsigned weights[] = {14, 10, 12, 10, 2, 12, 3, 10, 6, 8, 2, 2, 6, 3, 6};
    enum { NT = sizeof weights / sizeof weights[0] };
    unsigned total = 0;
    for (int i = 0; i < NT; i++)
        total += weights[i];
    unsigned pick = rand_below(r, total), t = 0;
    while (pick >= weights[t])
        pick -= weights[t++];
    /* Every template's numbers, drawn one statement at a time: the order in which a compiler evaluates function
     * arguments is unspecified, so no draw may happen inside the snprintf calls. */
    static const int32_t ranges[NT][4][2] = {
        {{-900, 1400}},
        {{0, 5}, {0, 5200}, {0, 480}},
        {{-1000, 1000}, {-1000, 1000}, {-1000, 1000}},
        {{0, 5}, {-90000, 90000}, {0, 1023}},
        {{0, 4}},
        {{0, 7}, {-120, -70}, {1, 25}, {0, 9}},
        {{0, 0}},
        {{0, 2}, {-48000, 48000}, {-48000, 48000}, {-48000, 48000}},
        {{-51600, 51600}, {-180000, 180000}, {400000, 419999}, {4, 11}},
        {{0, 5}, {-3000, 3000}},
        {{0, 999}},
        {{0, 5}, {1, 250}},
        {{0, 299}, {0, 199}, {0, 149}, {40, 59}},
        {{0, 1}, {0, 4999}},
        {{1, 128}, {0, 1}, {1, 40}},
    };
    int32_t v[4];
    for (int i = 0; i < 4; i++)
        v[i] = ranges[t][i][0] == ranges[t][i][1] ? ranges[t][i][0] : rand_range(r, ranges[t][i][0], ranges[t][i][1]);
    char *p = out + n;
    size_t left = cap - (size_t)n;
#define HDR(ss) ss_names[ss], g->pid[ss]
    switch (t) {
    case 0:
        n = snprintf(p, left, "%s[%u]: INFO battery v_mv=%d i_ma=%d soc=%d.%d%% temp_c=%s%d.%03d\n", HDR(SS_EPS),
                     g->batt_mv, v[0], g->soc_pm / 10, g->soc_pm % 10, FX3(g->temp_cc * 10));
        break;
    case 1:
        n = snprintf(p, left, "%s[%u]: DEBUG solar panel %d: v_mv=%d i_ma=%d\n", HDR(SS_EPS), v[0], v[1], v[2]);
        break;
    case 2:
        n = snprintf(p, left, "%s[%u]: DEBUG gyro rate x=%s%d.%03d y=%s%d.%03d z=%s%d.%03d deg/s\n", HDR(SS_ADCS),
                     FX3(v[0]), FX3(v[1]), FX3(v[2]));
        break;
    case 3:
        n = snprintf(p, left, "%s[%u]: INFO sun sensor %d: angle=%s%d.%03d deg intensity=%d\n", HDR(SS_ADCS), v[0],
                     FX3(v[1]), v[2]);
        break;
    case 4: {
        int from = g->mode;
        g->mode = v[0];
        n = snprintf(p, left, "%s[%u]: NOTICE mode change %s -> %s\n", HDR(SS_ADCS), modes[from], modes[g->mode]);
        break;
    }
    case 5:
        n = snprintf(p, left, "%s[%u]: INFO downlink frame seq=%u len=%d rssi=%d dBm snr=%d.%d dB\n", HDR(SS_COMMS),
                     g->seq_down & 0xffff, 64 + 32 * v[0], v[1], v[2], v[3]);
        g->seq_down++;
        break;
    case 6:
        n = snprintf(p, left, "%s[%u]: WARNING crc error on uplink frame seq=%u, requesting retransmit\n",
                     HDR(SS_COMMS), g->seq_up & 0xffff);
        g->seq_up++;
        break;
    case 7:
        n = snprintf(p, left, "%s[%u]: INFO sample block %u: %d samples, mean=(%d,%d,%d) nT\n", HDR(SS_MAG), g->block,
                     1000 + 24 * v[0], v[1], v[2], v[3]);
        g->block++;
        break;
    case 8:
        n = snprintf(p, left, "%s[%u]: INFO fix lat=%s%d.%03d lon=%s%d.%03d alt=%s%d.%03d km sats=%d\n", HDR(SS_GPS),
                     FX3(v[0]), FX3(v[1]), FX3(v[2]), v[3]);
        break;
    case 9: {
        int32_t tz = g->temp_cc * 10 + v[1];
        n = snprintf(p, left, "%s[%u]: INFO zone %s temp=%s%d.%03d C heater=%s\n", HDR(SS_THERMAL), zones[v[0]],
                     FX3(tz), tz < 5000 ? "on" : "off");
        break;
    }
    case 10: {
        uint64_t up = g->ms - 1704067200000ULL;
        n = snprintf(p, left, "kernel: [%6u.%06u] mmcblk0: error -110 sending status command, retrying\n",
                     (unsigned)(up / 1000 % 1000000), (unsigned)(up % 1000) * 1000 + (unsigned)v[0]);
        break;
    }
    case 11:
        n = snprintf(p, left, "%s[%u]: ERR watchdog: task %s missed deadline by %d ms\n", HDR(SS_CDH), tasks[v[0]],
                     v[1]);
        break;
    case 12:
        n = snprintf(p, left, "%s[%u]: DEBUG scheduler: %d tasks, load %d.%02d %d.%02d %d.%02d\n", HDR(SS_CDH), v[3],
                     v[0] / 100, v[0] % 100, v[1] / 100, v[1] % 100, v[2] / 100, v[2] % 100);
        break;
    case 13:
        n = snprintf(p, left, "%s[%u]: NOTICE link %s, %d frames queued\n", HDR(SS_COMMS), v[0] ? "acquired" : "lost",
                     v[1]);
        break;
    default:
        n = snprintf(p, left, "%s[%u]: INFO wrote %d bytes to /data/%s/%08x.bin in %d ms\n", HDR(SS_CDH), 512 * v[0],
                     ss_names[SS_MAG + v[1]], g->files, v[2]);
        g->files++;
        break;
    }
#undef HDR
    return (size_t)(p - out) + (size_t)n;
}

#define LOG_RECORD 4096

static size_t log_record(log_gen *g, unsigned char *out)
{
    /* Whole lines until the record holds at least LOG_RECORD bytes; a line is far shorter than the slack. */
    size_t len = 0;
    while (len < LOG_RECORD)
        len += log_line(g, (char *)out + len, 2 * LOG_RECORD - len);
    return len;
}

/* ---- image: 8-bit frames like an Earth-observing camera's ---- */

#define IMG_W 640
#define IMG_H 480
#define IMG_RECTS 3

typedef struct {
    uint64_t rng;
    int row;
    int32_t base, gx_q8, gy_q8;
    int16_t horizon[IMG_W]; /* first row of the Earth in each column */
    uint32_t fx, fy, phase; /* the Earth's texture: a plane wave through the sine table */
    int32_t tex_amp;
    struct {
        int x0, y0, x1, y1;
        int32_t value;
    } rect[IMG_RECTS]; /* parts of the spacecraft in view: flat areas with sharp edges */
} img_gen;

static void img_new_frame(img_gen *g)
{
    uint64_t *r = &g->rng;
    g->base = rand_range(r, 20, 60);
    g->gx_q8 = rand_range(r, -24, 24);
    g->gy_q8 = rand_range(r, -24, 24);
    int32_t h0 = rand_range(r, IMG_H / 5, 4 * IMG_H / 5), slope_q8 = rand_range(r, -96, 96);
    for (int x = 0; x < IMG_W; x++)
        g->horizon[x] = (int16_t)clamp(h0 + (int32_t)shr_floor((int64_t)slope_q8 * (x - IMG_W / 2), 8), 0, IMG_H);
    g->fx = (uint32_t)rand_range(r, 1, 12);
    g->fy = (uint32_t)rand_range(r, 1, 12);
    g->phase = rand_below(r, SINE_N);
    g->tex_amp = rand_range(r, 10, 40);
    for (int i = 0; i < IMG_RECTS; i++) {
        g->rect[i].x0 = rand_range(r, 0, IMG_W - 40);
        g->rect[i].y0 = rand_range(r, 0, IMG_H - 40);
        g->rect[i].x1 = g->rect[i].x0 + rand_range(r, 16, 200);
        g->rect[i].y1 = g->rect[i].y0 + rand_range(r, 16, 120);
        g->rect[i].value = rand_range(r, 60, 230);
    }
}

static size_t img_record(img_gen *g, const int16_t *sine, unsigned char *out)
{
    if (g->row == 0)
        img_new_frame(g);
    int y = g->row;
    uint64_t bits = 0;
    int nbits = 0;
    for (int x = 0; x < IMG_W; x++) {
        if (nbits < 13) {
            bits = bk_rand_next(&g->rng);
            nbits = 64;
        }
        int32_t noise = (int32_t)(bits & 7) - 3; /* sensor noise, +-3 */
        bool star = ((bits >> 3) & 1023) == 0; /* 1 in 1024 pixels of dark sky is a star */
        bits >>= 13;
        nbits -= 13;
        int32_t v = g->base + (int32_t)shr_floor((int64_t)g->gx_q8 * x + (int64_t)g->gy_q8 * y, 8);
        if (y >= g->horizon[x]) {
            /* The Earth: brighter, with clouds/terrain as two plane waves. */
            uint32_t a = (g->fx * (uint32_t)x + g->fy * (uint32_t)y + g->phase) & (SINE_N - 1);
            uint32_t b = (3 * g->fy * (uint32_t)x - 2 * g->fx * (uint32_t)y) & (SINE_N - 1);
            v += 90 + (g->tex_amp * (sine[a] + sine[b] / 2)) / SINE_ONE;
        } else if (star) {
            v = 200 + (int32_t)(bits & 63);
        }
        for (int i = 0; i < IMG_RECTS; i++)
            if (x >= g->rect[i].x0 && x < g->rect[i].x1 && y >= g->rect[i].y0 && y < g->rect[i].y1)
                v = g->rect[i].value + (x - g->rect[i].x0) / 16;
        out[x] = (unsigned char)clamp(v + noise, 0, 255);
    }
    g->row = (g->row + 1) % IMG_H;
    return IMG_W;
}

/* ---- random: an already compressed or encrypted payload ---- */

#define RND_RECORD 4096

static size_t rnd_record(uint64_t *rng, unsigned char *out)
{
    for (size_t i = 0; i < RND_RECORD; i += 8) {
        uint64_t v = bk_rand_next(rng);
        for (int b = 0; b < 8; b++)
            out[i + (size_t)b] = (unsigned char)(v >> (8 * b));
    }
    return RND_RECORD;
}

/* ---- the corpus: streams interleaved in segments ---- */

#define STAGE_BYTES (2 * LOG_RECORD + 64) /* the largest record: telemetry 4096, logs < 8192, image 640 */

typedef struct {
    unsigned char buf[STAGE_BYTES];
    size_t pos, len;
} stage;

struct bk_corpus {
    unsigned pct[BK_CORPUS_PARTS];
    uint64_t segments[BK_CORPUS_PARTS]; /* segments given to each stream so far */
    uint64_t nsegments;
    int cur;
    size_t seg_left;
    stage st[BK_CORPUS_PARTS];
    tm_gen tm;
    log_gen log;
    img_gen img;
    uint64_t rnd;
    int16_t sine[SINE_N];
};

bk_corpus *bk_corpus_new(const unsigned pct[BK_CORPUS_PARTS], uint64_t seed)
{
    bk_corpus *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    memcpy(c->pct, pct, sizeof c->pct);
    make_sine(c->sine);
    /* One independent generator per stream, so one stream's bytes do not depend on the mix. */
    uint64_t s = seed ^ 0x626f6172646c6162ULL; /* "boardlab" */
    uint64_t seeds[BK_CORPUS_PARTS];
    for (int i = 0; i < BK_CORPUS_PARTS; i++)
        seeds[i] = bk_rand_next(&s);
    tm_init(&c->tm, seeds[BK_CORPUS_TELEMETRY]);
    log_init(&c->log, seeds[BK_CORPUS_LOGS]);
    c->img.rng = seeds[BK_CORPUS_IMAGE];
    c->rnd = seeds[BK_CORPUS_RANDOM];
    return c;
}

void bk_corpus_free(bk_corpus *c) { free(c); }

static void refill(bk_corpus *c, int part)
{
    stage *s = &c->st[part];
    switch (part) {
    case BK_CORPUS_TELEMETRY: s->len = tm_record(&c->tm, c->sine, s->buf); break;
    case BK_CORPUS_LOGS: s->len = log_record(&c->log, s->buf); break;
    case BK_CORPUS_IMAGE: s->len = img_record(&c->img, c->sine, s->buf); break;
    default: s->len = rnd_record(&c->rnd, s->buf); break;
    }
    s->pos = 0;
}

/* The next segment goes to the stream furthest behind its share (ties to the first): over any run of segments
 * each stream's count stays within one segment of its share, so even a small corpus has the mix. */
static int next_part(bk_corpus *c)
{
    int best = -1;
    int64_t best_deficit = 0;
    for (int i = 0; i < BK_CORPUS_PARTS; i++) {
        if (!c->pct[i])
            continue;
        int64_t deficit = (int64_t)c->pct[i] * (int64_t)(c->nsegments + 1) - 100 * (int64_t)c->segments[i];
        if (best < 0 || deficit > best_deficit)
            best = i, best_deficit = deficit;
    }
    c->segments[best]++;
    c->nsegments++;
    return best;
}

void bk_corpus_read(bk_corpus *c, unsigned char *out, size_t n)
{
    while (n) {
        if (!c->seg_left) {
            c->cur = next_part(c);
            c->seg_left = BK_CORPUS_SEGMENT;
        }
        stage *s = &c->st[c->cur];
        if (s->pos == s->len)
            refill(c, c->cur);
        size_t k = s->len - s->pos;
        if (k > c->seg_left)
            k = c->seg_left;
        if (k > n)
            k = n;
        memcpy(out, s->buf + s->pos, k);
        s->pos += k;
        c->seg_left -= k;
        out += k;
        n -= k;
    }
}

/* ---- for kernels ---- */

static int load_file(bk_ctx *ctx, const char *path, unsigned char **data, size_t *n)
{
    /* O_NONBLOCK: a FIFO opens at once (and is refused below) instead of blocking until a writer comes;
     * it changes nothing for the regular file read afterwards. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return bk_bad_input(ctx,
                            "parameter 'input': cannot open '%s': %s (give an existing, readable file, or leave "
                            "input empty for the generated corpus)",
                            path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return bk_bad_input(ctx,
                            "parameter 'input': '%s' is not a regular file (a FIFO, device or directory); give a "
                            "regular file",
                            path);
    }
    if (st.st_size == 0 || (double)st.st_size > BK_CORPUS_MAX_BYTES) {
        close(fd);
        return bk_bad_input(ctx, "parameter 'input': '%s' has %lld bytes; it needs 1 byte to 1 GiB", path,
                            (long long)st.st_size);
    }
    size_t size = (size_t)st.st_size, got = 0;
    unsigned char *buf = bk_alloc(size);
    if (!buf) {
        close(fd);
        return bk_fail(ctx, "out of memory reading '%s' (%zu bytes)", path, size);
    }
    while (got < size) {
        ssize_t r = read(fd, buf + got, size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            int e = r < 0 ? errno : 0;
            close(fd);
            free(buf);
            return bk_fail(ctx, "parameter 'input': reading '%s' failed: %s", path,
                           e ? strerror(e) : "the file shrank while being read");
        }
        got += (size_t)r;
    }
    close(fd);
    bk_info_str(ctx, "corpus", path);
    bk_info_num(ctx, "corpus_bytes", (double)size);
    *data = buf;
    *n = size;
    return 0;
}

int bk_corpus_load(bk_ctx *ctx, unsigned char **data, size_t *n)
{
    const char *path = bk_arg_str(ctx, "input");
    if (path[0])
        return load_file(ctx, path, data, n);
    const char *mix = bk_arg_str(ctx, "mix");
    unsigned pct[BK_CORPUS_PARTS];
    char why[160];
    if (bk_corpus_parse_mix(mix, pct, why, sizeof why) != 0)
        return bk_fail(ctx,
                       "parameter 'mix'='%s': %s; expected NAME=PERCENT,... with NAME in " BK_CORPUS_PART_NAMES
                       " and integer percentages summing to 100, e.g. '" BK_CORPUS_DEFAULT_MIX "'",
                       mix, why);
    size_t size = (size_t)bk_arg_int(ctx, "bytes");
    uint64_t seed = (uint64_t)bk_arg_int(ctx, "seed");
    unsigned char *buf = bk_alloc(size);
    bk_corpus *c = bk_corpus_new(pct, seed);
    if (!buf || !c) {
        free(buf);
        bk_corpus_free(c);
        return bk_fail(ctx, "out of memory generating a corpus of %zu bytes (lower 'bytes')", size);
    }
    bk_corpus_read(c, buf, size);
    bk_corpus_free(c);
    bk_info_str(ctx, "corpus", "generated");
    bk_info_str(ctx, "corpus_mix", mix);
    bk_info_num(ctx, "corpus_seed", (double)seed);
    bk_info_num(ctx, "corpus_bytes", (double)size);
    *data = buf;
    *n = size;
    return 0;
}
