/* MiBench-style telecommunication kernels (Guthaus et al. 2001, "telecomm" category): crc32, adpcm, fft.
 *
 * crc32: the CRC-32 of IEEE 802.3 (reflected, polynomial 0xEDB88320, initial value and final XOR all ones),
 *   byte-at-a-time from a 256-entry table (Sarwate 1988), as MiBench's crc_32.c.
 * adpcm: IMA/DVI ADPCM (IMA Digital Audio Doc-Pac, "Recommended practices for enhancing digital audio
 *   compatibility", 1992): 16-bit PCM to 4-bit codes and back, two codes per byte with the first sample in
 *   the high nibble as MiBench's rawcaudio/rawdaudio; the input is a synthetic voice.
 * fft: MiBench's FFT test: a sum of random sinusoids, transformed forward and back with an iterative
 *   radix-2 complex FFT (Cooley & Tukey 1965). */
#include "core.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ================================ crc32 ================================ */

#define CRC32_POLY 0xedb88320u /* 0x04C11DB7 bit-reversed: the register shifts right */

typedef struct {
    size_t n;
    uint8_t *data;
    uint32_t table[256];
    uint32_t crc;
} crc_state;

static const bk_param crc_params[] = {
    {"bytes", BK_INT, 1, 1073741824, "1M", NULL, "B", "buffer checksummed per rep"},
    {"seed", BK_INT, 0, 4294967295.0, "1", NULL, "", "seed of the buffer"},
    {0},
};

static const bk_metric crc_metrics[] = {
    {"mb_s", "MB/s", true, BK_RATE, -1, 1e-6, "MB checksummed per second"},
    {0},
};

/* Entry b is the register after shifting the byte b through eight steps of the bitwise algorithm. */
static void crc32_make_table(uint32_t t[256])
{
    for (uint32_t b = 0; b < 256; b++) {
        uint32_t c = b;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? CRC32_POLY ^ (c >> 1) : c >> 1;
        t[b] = c;
    }
}

static uint32_t crc32_table(const uint32_t t[256], const uint8_t *p, size_t n)
{
    uint32_t crc = 0xffffffffu;
    for (size_t i = 0; i < n; i++)
        crc = t[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
    return ~crc;
}

/* The definition, one bit at a time: the independent check of the table-driven result. */
static uint32_t crc32_bitwise(const uint8_t *p, size_t n)
{
    uint32_t crc = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++)
            crc = (crc >> 1) ^ (CRC32_POLY & (0u - (crc & 1)));
    }
    return ~crc;
}

static int crc_init(bk_ctx *ctx, void **state)
{
    crc_state *s = bk_run_state(ctx, state, sizeof *s);
    if (!s)
        return -1;
    s->n = (size_t)bk_arg_int(ctx, "bytes");
    s->data = bk_run_alloc(ctx, s->n, "the buffer");
    if (!s->data)
        return -1;
    bk_rand_bytes(s->data, s->n, (uint64_t)bk_arg_int(ctx, "seed"));
    crc32_make_table(s->table);
    bk_set_amount(ctx, "mb_s", (double)s->n);
    return 0;
}

static int crc_run(bk_ctx *ctx, void *state, uint64_t reps)
{
    (void)ctx;
    crc_state *s = state;
    for (uint64_t r = 0; r < reps; r++)
        s->crc = crc32_table(s->table, s->data, s->n);
    return 0;
}

static void crc_corrupt(void *state) { ((crc_state *)state)->crc ^= 0x00010000u; }

static int crc_verify(bk_ctx *ctx, void *state)
{
    crc_state *s = state;
    /* The catalogue's check value (CRC32("123456789") = 0xCBF43926) and a few more well-known ones. */
    static const struct {
        const char *msg;
        uint32_t crc;
    } v[] = {
        {"123456789", 0xcbf43926u},
        {"", 0x00000000u},
        {"a", 0xe8b7be43u},
        {"abc", 0x352441c2u},
        {"The quick brown fox jumps over the lazy dog", 0x414fa339u},
    };
    int nkat = (int)(sizeof v / sizeof v[0]);
    for (int i = 0; i < nkat; i++) {
        const uint8_t *m = (const uint8_t *)v[i].msg;
        uint32_t t = crc32_table(s->table, m, strlen(v[i].msg)), b = crc32_bitwise(m, strlen(v[i].msg));
        if (t != v[i].crc || b != v[i].crc) {
            bk_info_str(ctx, "kat", "fail");
            return bk_fail(ctx, "crc32 known answer \"%s\": table gives %08x, bitwise %08x, expected %08x", v[i].msg, t,
                           b, v[i].crc);
        }
    }
    bk_info_str(ctx, "kat", "pass");
    bk_info_num(ctx, "kat_vectors", nkat);
    bk_info_num(ctx, "check_value", crc32_table(s->table, (const uint8_t *)"123456789", 9));
    bk_set_checksum(ctx, s->crc);
    uint32_t want = crc32_bitwise(s->data, s->n);
    if (s->crc != want)
        return bk_fail(ctx, "crc32: the benchmarked CRC %08x of the buffer differs from the bitwise CRC %08x", s->crc,
                       want);
    return 0;
}

const bk_kernel bk_mibench_crc32 = {
    .name = "mibench.crc32",
    .family = "mibench",
    .summary = "MiBench CRC32: IEEE 802.3 CRC-32, table-driven a byte at a time",
    .params = crc_params,
    .metrics = crc_metrics,
    .init = crc_init,
    .run = crc_run,
    .corrupt = crc_corrupt,
    .verify = crc_verify,
};

/* ================================ adpcm ================================ */

/* The IMA step sizes (89, about 10% apart) and the index change for each 3-bit magnitude. */
static const int16_t ima_step[89] = {
    7,    8,     9,     10,    11,    12,    13,    14,    16,    17,    19,    21,    23,    25,    28,
    31,   34,    37,    41,    45,    50,    55,    60,    66,    73,    80,    88,    97,    107,   118,
    130,  143,   157,   173,   190,   209,   230,   253,   279,   307,   337,   371,   408,   449,   494,
    544,  598,   658,   724,   796,   876,   963,   1060,  1166,  1282,  1411,  1552,  1707,  1878,  2066,
    2272, 2499,  2749,  3024,  3327,  3660,  4026,  4428,  4871,  5358,  5894,  6484,  7132,  7845,  8630,
    9493, 10442, 11487, 12635, 13899, 15289, 16818, 18500, 20350, 22385, 24623, 27086, 29794, 32767,
};
static const int8_t ima_index[16] = {-1, -1, -1, -1, 2, 4, 6, 8, -1, -1, -1, -1, 2, 4, 6, 8};

/* SNR of decode(encode(x)) that a working codec clears with margin on this voice: measured 25-30 dB on
 * the default 256k samples and at least 15 dB on the 8192 samples (about a second) allowed at least, over
 * 300 seeds; a codec with a wrong sign, step or index rule falls far below. */
#define ADPCM_MIN_SNR_DB 10.0

static inline int clamp16(int v) { return v > 32767 ? 32767 : v < -32768 ? -32768 : v; }
static inline int clamp_index(int i) { return i < 0 ? 0 : i > 88 ? 88 : i; }

/* The encoder quantizes the difference from its own prediction in three binary steps of the step size
 * and updates the prediction exactly as the decoder will, so that both track the same value. */
static void adpcm_encode(const int16_t *in, uint8_t *out, size_t n)
{
    int pred = 0, index = 0, step = ima_step[0];
    uint8_t high = 0;
    for (size_t i = 0; i < n; i++) {
        int diff = in[i] - pred, code = 0;
        if (diff < 0) {
            code = 8;
            diff = -diff;
        }
        int vpdiff = step >> 3;
        if (diff >= step) {
            code |= 4;
            diff -= step;
            vpdiff += step;
        }
        if (diff >= step >> 1) {
            code |= 2;
            diff -= step >> 1;
            vpdiff += step >> 1;
        }
        if (diff >= step >> 2) {
            code |= 1;
            vpdiff += step >> 2;
        }
        pred = clamp16(code & 8 ? pred - vpdiff : pred + vpdiff);
        index = clamp_index(index + ima_index[code]);
        step = ima_step[index];
        if (i & 1)
            out[i / 2] = (uint8_t)(high | code);
        else
            high = (uint8_t)(code << 4);
    }
    if (n & 1)
        out[n / 2] = high;
}

static void adpcm_decode(const uint8_t *in, int16_t *out, size_t n)
{
    int pred = 0, index = 0, step = ima_step[0];
    for (size_t i = 0; i < n; i++) {
        int code = i & 1 ? in[i / 2] & 0x0f : in[i / 2] >> 4;
        int vpdiff = step >> 3;
        if (code & 4)
            vpdiff += step;
        if (code & 2)
            vpdiff += step >> 1;
        if (code & 1)
            vpdiff += step >> 2;
        pred = clamp16(code & 8 ? pred - vpdiff : pred + vpdiff);
        index = clamp_index(index + ima_index[code]);
        step = ima_step[index];
        out[i] = (int16_t)pred;
    }
}

/* The recommended practice's formulation, one code per sample: code = the magnitude of the difference
 * in quarter steps (capped at 7) with the sign bit; the reconstructed difference is (code + 1/2) step / 4
 * computed with the shifts the standard prescribes. Returns the codes and the decoder's expected output. */
static void adpcm_reference(const int16_t *in, size_t n, uint8_t *codes, int16_t *recon)
{
    int pred = 0, index = 0;
    for (size_t i = 0; i < n; i++) {
        int step = ima_step[index], diff = in[i] - pred;
        int sign = diff < 0 ? 8 : 0, mag = diff < 0 ? -diff : diff, code = 0;
        for (int bit = 2; bit >= 0; bit--) { /* 4, 2, 1: compare with step, step/2, step/4 */
            int part = step >> (2 - bit);
            if (mag >= part) {
                code |= 1 << bit;
                mag -= part;
            }
        }
        int dq = (step >> 3) + (code & 4 ? step : 0) + (code & 2 ? step >> 1 : 0) + (code & 1 ? step >> 2 : 0);
        pred = clamp16(sign ? pred - dq : pred + dq);
        index = clamp_index(index + ima_index[code]);
        codes[i] = (uint8_t)(code | sign);
        recon[i] = (int16_t)pred;
    }
}

/* Worked by hand from the tables (pred 0, index 0 at the start):
 *   0:    diff 0, step 7                         -> code 0, pred 0,   index 0
 *   20:   diff 20 >= 7, 13 >= 3, 10 >= 1         -> code 7, pred 0 + (0+7+3+1) = 11, index 8 (step 16)
 *   60:   diff 49 >= 16, 33 >= 8, 25 >= 4        -> code 7, pred 11 + (2+16+8+4) = 41, index 16 (step 34)
 *   200:  diff 159 >= 34, 125 >= 17, 108 >= 8    -> code 7, pred 41 + 63 = 104, index 24 (step 73)
 *   180:  diff 76 >= 73, 3 < 36, 3 < 18          -> code 4, pred 104 + (9+73) = 186, index 26 (step 88)
 *   -100: diff -286: 286 >= 88, 198 >= 44, 154 >= 22 -> code 15, pred 186 - 165 = 21, index 34
 * and so on through saturation at both ends of the 16-bit range. */
static const int16_t adpcm_kat_in[12] = {0, 20, 60, 200, 180, -100, -1500, 3000, 32767, 32767, -32768, 5};
static const uint8_t adpcm_kat_codes[6] = {0x07, 0x77, 0x4f, 0xf7, 0x77, 0xf0};
static const int16_t adpcm_kat_out[12] = {0, 11, 41, 104, 186, 21, -334, 431, 2073, 5593, -1955, -877};

typedef struct {
    size_t n;
    int16_t *pcm;
    uint8_t *code;
    int16_t *out;
} adpcm_state;

static const bk_param adpcm_params[] = {
    {"samples", BK_INT, 8192, 268435456, "256k", NULL, "samples", "16-bit samples encoded and decoded per rep"},
    {"sample_rate_hz", BK_INT, 8000, 48000, "8000", NULL, "Hz", "sample rate of the synthetic voice (MiBench: 8000)"},
    {"seed", BK_INT, 0, 4294967295.0, "1", NULL, "", "seed of the voice"},
    {0},
};

static const char *const adpcm_phases[] = {"encode", "decode", NULL};

static const bk_metric adpcm_metrics[] = {
    {"samples_per_s", "samples/s", true, BK_RATE, -1, 1.0, "samples encoded and decoded back per second"},
    {"encode_samples_per_s", "samples/s", true, BK_RATE, 0, 1.0, "encoding alone"},
    {"decode_samples_per_s", "samples/s", true, BK_RATE, 1, 1.0, "decoding alone"},
    {0},
};

/* A voice, made as a formant synthesizer makes it (Klatt 1980, much simplified): a glottal pulse train
 * at a gliding pitch, low-passed to the falling spectrum of real voicing (about -6 dB per octave), excites
 * three two-pole resonators tuned to a vowel's formants (Peterson & Barney 1952 averages), under a
 * per-syllable amplitude envelope; pauses and fricatives are noise. Integer arithmetic after the
 * coefficients, so every board gets the same samples. */
/* One pass of the synthesizer: returns the peak magnitude of the raw signal; when x is given, also
 * writes the signal scaled so that this peak becomes `target` (the level does not depend on the rate). */
static int64_t adpcm_voice_pass(int16_t *x, size_t n, int fs, uint64_t seed, int64_t peak, int64_t target)
{
    static const int formants[7][3] = {
        {730, 1090, 2440}, {270, 2290, 3010}, {300, 870, 2240},  {530, 1840, 2480},
        {570, 840, 2410},  {660, 1720, 2410}, {490, 1350, 1690},
    };
    static const int bandwidth[3] = {70, 100, 140};
    static const int gain[3] = {16, 8, 5}; /* in sixteenths */
    uint64_t rng = seed;
    int64_t y1[3] = {0}, y2[3] = {0}, glottis = 0, top = 1;
    /* The glottal low-pass pole, 0.9 at 8 kHz, placed at the same frequency for other rates. */
    int64_t pole = llround(exp(-2 * M_PI * 134.0 / fs) * 4096);
    for (size_t pos = 0; pos < n;) {
        size_t len = (size_t)fs * (120 + bk_rand_next(&rng) % 200) / 1000;
        if (len > n - pos)
            len = n - pos;
        int kind = (int)(bk_rand_next(&rng) % 10); /* 0-1 pause, 2 fricative, else voiced */
        const int *f = formants[bk_rand_next(&rng) % 7];
        int64_t c1[3], c2[3];
        for (int k = 0; k < 3; k++) {
            double r = exp(-M_PI * bandwidth[k] / fs), theta = 2 * M_PI * f[k] / fs;
            bool usable = f[k] < 0.45 * fs;
            c1[k] = usable ? llround(2 * r * cos(theta) * 16384) : 0;
            c2[k] = usable ? llround(r * r * 16384) : 0;
        }
        int f0_start = 90 + (int)(bk_rand_next(&rng) % 110);
        int f0_end = f0_start * (80 + (int)(bk_rand_next(&rng) % 40)) / 100;
        int loud = 80 + (int)(bk_rand_next(&rng) % 176); /* out of 256 */
        int countdown = 0;
        size_t ramp = len / 4 ? len / 4 : 1;
        for (size_t j = 0; j < len; j++) {
            int64_t pulse = 0;
            if (kind >= 3 && --countdown <= 0) {
                int f0 = f0_start + (int)((int64_t)(f0_end - f0_start) * (int64_t)j / (int64_t)len);
                countdown = fs / f0;
                pulse = 1200;
            }
            glottis = glottis * pole / 4096 + pulse;
            int64_t voice = 0;
            for (int k = 0; k < 3; k++) {
                int64_t y = (c1[k] * y1[k] - c2[k] * y2[k]) / 16384 + glottis;
                y2[k] = y1[k];
                y1[k] = y;
                voice += y * gain[k] / 16;
            }
            size_t edge = j < len - j ? j : len - j;
            int64_t env = edge < ramp ? (int64_t)(256 * edge / ramp) : 256; /* attack and release */
            int64_t noise = (int64_t)(bk_rand_next(&rng) % 201) - 100;
            if (kind == 2)
                noise *= 8;
            int64_t v = kind <= 1 ? noise / 4 : voice * env / 256 * loud / 256 + noise * env / 256;
            if (v > top || -v > top)
                top = v > 0 ? v : -v;
            if (x) {
                int64_t scaled = v * target / peak;
                x[pos + j] = (int16_t)(scaled > 32767 ? 32767 : scaled < -32768 ? -32768 : scaled);
            }
        }
        pos += len;
    }
    return top;
}

/* Peaks at about -3 dBFS, like a recording made with some headroom. */
static void adpcm_make_voice(int16_t *x, size_t n, int fs, uint64_t seed)
{
    int64_t peak = adpcm_voice_pass(NULL, n, fs, seed, 1, 1);
    adpcm_voice_pass(x, n, fs, seed, peak, 23000);
}

static int adpcm_init(bk_ctx *ctx, void **state)
{
    adpcm_state *s = bk_run_state(ctx, state, sizeof *s);
    if (!s)
        return -1;
    size_t n = s->n = (size_t)bk_arg_int(ctx, "samples");
    s->pcm = bk_run_alloc(ctx, n * sizeof *s->pcm, "the samples");
    s->code = bk_run_alloc(ctx, (n + 1) / 2, "the codes");
    s->out = bk_run_alloc(ctx, n * sizeof *s->out, "the decoded samples");
    if (!s->pcm || !s->code || !s->out)
        return -1;
    adpcm_make_voice(s->pcm, n, (int)bk_arg_int(ctx, "sample_rate_hz"), (uint64_t)bk_arg_int(ctx, "seed"));
    bk_set_amount(ctx, "samples_per_s", (double)s->n);
    bk_set_amount(ctx, "encode_samples_per_s", (double)s->n);
    bk_set_amount(ctx, "decode_samples_per_s", (double)s->n);
    return 0;
}

static int adpcm_run(bk_ctx *ctx, void *state, uint64_t reps)
{
    adpcm_state *s = state;
    for (uint64_t r = 0; r < reps; r++) {
        bk_phase_begin(ctx, 0);
        adpcm_encode(s->pcm, s->code, s->n);
        bk_phase_end(ctx, 0);
        bk_phase_begin(ctx, 1);
        adpcm_decode(s->code, s->out, s->n);
        bk_phase_end(ctx, 1);
    }
    return 0;
}

static void adpcm_corrupt(void *state)
{
    adpcm_state *s = state;
    s->out[s->n / 2] ^= 0x0100;
}

static int adpcm_verify(bk_ctx *ctx, void *state)
{
    adpcm_state *s = state;
    uint8_t codes[6];
    int16_t out[12];
    adpcm_encode(adpcm_kat_in, codes, 12);
    adpcm_decode(adpcm_kat_codes, out, 12);
    bool kat = memcmp(codes, adpcm_kat_codes, sizeof codes) == 0 && memcmp(out, adpcm_kat_out, sizeof out) == 0;
    bk_info_str(ctx, "kat", kat ? "pass" : "fail");
    if (!kat)
        return bk_fail(ctx, "adpcm known answer: the 12-sample hand-worked example encodes or decodes differently");
    /* The benchmarked codes and output against the reference formulation, sample by sample. */
    uint8_t *ref_code = malloc(s->n);
    int16_t *ref_out = malloc(s->n * sizeof *ref_out);
    if (!ref_code || !ref_out) {
        free(ref_code);
        free(ref_out);
        return bk_fail(ctx, "out of memory in verification");
    }
    adpcm_reference(s->pcm, s->n, ref_code, ref_out);
    int rc = 0;
    double signal = 0, noise = 0;
    for (size_t i = 0; i < s->n && rc == 0; i++) {
        int code = i & 1 ? s->code[i / 2] & 0x0f : s->code[i / 2] >> 4;
        if (code != ref_code[i])
            rc = bk_fail(ctx, "adpcm: sample %zu encodes to %d, the reference gives %d", i, code, ref_code[i]);
        else if (s->out[i] != ref_out[i])
            rc = bk_fail(ctx, "adpcm: sample %zu decodes to %d, the encoder's reconstruction is %d", i, s->out[i],
                         ref_out[i]);
        double e = (double)s->pcm[i] - s->out[i];
        signal += (double)s->pcm[i] * s->pcm[i];
        noise += e * e;
    }
    free(ref_code);
    free(ref_out);
    double snr = noise > 0 ? 10 * log10(signal / noise) : INFINITY;
    bk_info_num(ctx, "snr_db", isfinite(snr) ? snr : 999);
    if (rc == 0 && !(snr >= ADPCM_MIN_SNR_DB))
        rc = bk_fail(ctx, "adpcm: decode(encode(x)) has an SNR of %.1f dB, below the %.0f dB a working codec reaches",
                     snr, ADPCM_MIN_SNR_DB);
    uint64_t h = bk_fnv1a(BK_FNV_OFFSET, s->code, (s->n + 1) / 2);
    bk_set_checksum(ctx, bk_fnv1a(h, s->out, s->n * sizeof *s->out));
    return rc;
}

const bk_kernel bk_mibench_adpcm = {
    .name = "mibench.adpcm",
    .family = "mibench",
    .summary = "MiBench adpcm: IMA ADPCM encoding and decoding of 16-bit voice",
    .params = adpcm_params,
    .metrics = adpcm_metrics,
    .phases = adpcm_phases,
    .init = adpcm_init,
    .run = adpcm_run,
    .corrupt = adpcm_corrupt,
    .verify = adpcm_verify,
};

/* ================================ fft ================================ */

typedef struct {
    size_t n;
    unsigned logn;
    int waves;
    double *xr, *xi; /* the input signal (real) */
    double *fr, *fi; /* its transform */
    double *yr, *yi; /* the inverse transform of that: the input again */
    double *cosw, *sinw; /* cos, sin of 2 pi k / n for k < n / 2 */
    uint32_t *rev; /* bit-reversal permutation */
    double *freq; /* each wave's frequency in cycles per window */
} fft_state;

static const bk_param fft_params[] = {
    {"points", BK_INT, 16, 4194304, "4096", NULL, "points",
     "transform length, a power of two (MiBench small: 4096, large: 32768)"},
    {"waves", BK_INT, 1, 64, "4", NULL, "waves", "random sinusoids summed into the input (MiBench: 4 small, 8 large)"},
    {"seed", BK_INT, 0, 4294967295.0, "1", NULL, "", "seed of the amplitudes, frequencies and phases"},
    {0},
};

static const char *const fft_phases[] = {"forward", "inverse", NULL};

static const bk_metric fft_metrics[] = {
    {"mflops", "MFLOPS", true, BK_RATE, -1, 1e-6,
     "forward plus inverse transform, counted as 5 N log2 N flops each (the usual FFT convention)"},
    {"forward_mflops", "MFLOPS", true, BK_RATE, 0, 1e-6, "forward transform alone"},
    {"inverse_mflops", "MFLOPS", true, BK_RATE, 1, 1e-6, "inverse transform alone"},
    {0},
};

/* Out of place: scatter into bit-reversed order, then log2 n passes of butterflies. The forward
 * transform uses e^(-2 pi i k/n); the inverse e^(+2 pi i k/n) and a 1/n scale. */
static void fft_transform(const fft_state *s, const double *inr, const double *ini, double *outr, double *outi,
                          bool inverse)
{
    size_t n = s->n;
    for (size_t i = 0; i < n; i++) {
        outr[s->rev[i]] = inr[i];
        outi[s->rev[i]] = ini[i];
    }
    double sign = inverse ? 1.0 : -1.0;
    for (size_t half = 1, stride = n / 2; half < n; half *= 2, stride /= 2)
        for (size_t start = 0; start < n; start += 2 * half)
            for (size_t j = 0; j < half; j++) {
                double wr = s->cosw[j * stride], wi = sign * s->sinw[j * stride];
                size_t a = start + j, b = a + half;
                double tr = wr * outr[b] - wi * outi[b];
                double ti = wr * outi[b] + wi * outr[b];
                outr[b] = outr[a] - tr;
                outi[b] = outi[a] - ti;
                outr[a] += tr;
                outi[a] += ti;
            }
    if (inverse) {
        double scale = 1.0 / (double)n;
        for (size_t i = 0; i < n; i++) {
            outr[i] *= scale;
            outi[i] *= scale;
        }
    }
}

static int fft_init(bk_ctx *ctx, void **state)
{
    size_t n = (size_t)bk_arg_int(ctx, "points");
    if (n & (n - 1))
        return bk_fail(ctx, "parameter 'points'=%zu is not a power of two: use e.g. 4096 or 32768", n);
    fft_state *s = bk_run_state(ctx, state, sizeof *s);
    if (!s)
        return -1;
    s->n = n;
    while (((size_t)1 << s->logn) < n)
        s->logn++;
    s->waves = (int)bk_arg_int(ctx, "waves");
    double **arrays[] = {&s->xr, &s->xi, &s->fr, &s->fi, &s->yr, &s->yi};
    bool ok = true;
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
        ok = ok && (*arrays[i] = bk_run_alloc(ctx, n * sizeof(double), "the points")) != NULL;
    s->cosw = bk_run_alloc(ctx, n / 2 * sizeof(double), "the twiddles");
    s->sinw = bk_run_alloc(ctx, n / 2 * sizeof(double), "the twiddles");
    s->rev = bk_run_alloc(ctx, n * sizeof *s->rev, "the bit reversal");
    s->freq = bk_run_alloc(ctx, (size_t)s->waves * sizeof *s->freq, "the waves");
    if (!ok || !s->cosw || !s->sinw || !s->rev || !s->freq)
        return -1;
    for (size_t k = 0; k < n / 2; k++) {
        s->cosw[k] = cos(2 * M_PI * (double)k / (double)n);
        s->sinw[k] = sin(2 * M_PI * (double)k / (double)n);
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t r = 0;
        for (unsigned b = 0; b < s->logn; b++)
            r |= (uint32_t)((i >> b) & 1) << (s->logn - 1 - b);
        s->rev[i] = r;
    }
    /* Like MiBench's test: random amplitudes below 1000 and random frequencies, sines or cosines (here a
     * random phase), summed; frequencies fall between bins, so every bin carries some energy. */
    uint64_t rng = (uint64_t)bk_arg_int(ctx, "seed");
    for (int w = 0; w < s->waves; w++) {
        double amp = 1 + 999 * bk_rand_unit(&rng);
        double freq = 0.5 + ((double)n / 2 - 1) * bk_rand_unit(&rng);
        double phase = 2 * M_PI * bk_rand_unit(&rng);
        s->freq[w] = freq;
        for (size_t t = 0; t < n; t++)
            s->xr[t] += amp * sin(2 * M_PI * freq * (double)t / (double)n + phase);
    }
    double flops = 5.0 * (double)n * s->logn;
    bk_set_amount(ctx, "mflops", 2 * flops);
    bk_set_amount(ctx, "forward_mflops", flops);
    bk_set_amount(ctx, "inverse_mflops", flops);
    return 0;
}

static int fft_run(bk_ctx *ctx, void *state, uint64_t reps)
{
    fft_state *s = state;
    for (uint64_t r = 0; r < reps; r++) {
        bk_phase_begin(ctx, 0);
        fft_transform(s, s->xr, s->xi, s->fr, s->fi, false);
        bk_phase_end(ctx, 0);
        bk_phase_begin(ctx, 1);
        fft_transform(s, s->fr, s->fi, s->yr, s->yi, true);
        bk_phase_end(ctx, 1);
    }
    return 0;
}

static void fft_corrupt(void *state)
{
    fft_state *s = state;
    s->fr[0] = s->fr[0] * 1.01 + 1.0;
}

/* A cosine at bin k0 must transform to n/2 at bins k0 and n - k0 and (numerically) nothing elsewhere. */
static int fft_check_single_tone(bk_ctx *ctx, const fft_state *s, double *tr, double *ti, double *fr, double *fi)
{
    size_t n = s->n, k0 = n / 4 + 1;
    for (size_t t = 0; t < n; t++) {
        tr[t] = cos(2 * M_PI * (double)(k0 * t % n) / (double)n);
        ti[t] = 0;
    }
    fft_transform(s, tr, ti, fr, fi, false);
    double tol = 1e-9 * (double)n;
    for (size_t k = 0; k < n; k++) {
        double want = k == k0 || k == n - k0 ? (double)n / 2 : 0;
        if (fabs(fr[k] - want) > tol || fabs(fi[k]) > tol)
            return bk_fail(ctx, "fft known transform: a cosine at bin %zu gives %g%+gi at bin %zu, expected %g", k0,
                           fr[k], fi[k], k, want);
    }
    return 0;
}

static int fft_verify(bk_ctx *ctx, void *state)
{
    fft_state *s = state;
    size_t n = s->n;
    double *c = calloc(n, sizeof *c), *sn = calloc(n, sizeof *sn), *tr = calloc(n, sizeof *tr),
           *ti = calloc(n, sizeof *ti);
    if (!c || !sn || !tr || !ti) {
        free(c), free(sn), free(tr), free(ti);
        return bk_fail(ctx, "out of memory in verification");
    }
    int rc = fft_check_single_tone(ctx, s, tr, ti, c, sn);
    bk_info_str(ctx, "kat", rc == 0 ? "pass" : "fail");

    /* The benchmarked spectrum against a direct DFT, X_k = sum x_t e^(-2 pi i k t / n), at bin 0, the
     * Nyquist bin, the bins nearest each wave and 32 bins spread over the range. The twiddles here come
     * straight from cos/sin of the full circle, not from the transform's table. */
    double l1 = 0, maxabs = 0;
    for (size_t t = 0; t < n; t++) {
        l1 += fabs(s->xr[t]);
        maxabs = fabs(s->xr[t]) > maxabs ? fabs(s->xr[t]) : maxabs;
        c[t] = cos(2 * M_PI * (double)t / (double)n);
        sn[t] = sin(2 * M_PI * (double)t / (double)n);
    }
    size_t bins[2 + 64 + 32], nbins = 0;
    bins[nbins++] = 0;
    bins[nbins++] = n / 2;
    for (int w = 0; w < s->waves; w++)
        bins[nbins++] = (size_t)llround(s->freq[w]) % n;
    for (size_t i = 0; i < 32; i++)
        bins[nbins++] = (i * (n / 32) + i) % n;
    double worst = 0;
    for (size_t b = 0; b < nbins && rc == 0; b++) {
        size_t k = bins[b], idx = 0;
        double re = 0, im = 0;
        for (size_t t = 0; t < n; t++) {
            re += s->xr[t] * c[idx];
            im -= s->xr[t] * sn[idx];
            idx += k;
            if (idx >= n)
                idx -= n;
        }
        double err = hypot(s->fr[k] - re, s->fi[k] - im);
        worst = err > worst ? err : worst;
        if (err > 1e-9 * l1)
            rc = bk_fail(ctx, "fft: bin %zu of the transform is %g%+gi, a direct DFT gives %g%+gi", k, s->fr[k],
                         s->fi[k], re, im);
    }
    bk_info_num(ctx, "dft_max_rel_error", worst / (l1 > 0 ? l1 : 1));
    /* The inverse of the transform is the input again. */
    double rt = 0;
    for (size_t t = 0; t < n; t++) {
        double e = fmax(fabs(s->yr[t] - s->xr[t]), fabs(s->yi[t] - s->xi[t]));
        rt = e > rt ? e : rt;
    }
    bk_info_num(ctx, "roundtrip_max_rel_error", rt / (maxabs > 0 ? maxabs : 1));
    if (rc == 0 && !(rt <= 1e-9 * maxabs))
        rc = bk_fail(ctx, "fft: inverse(forward(x)) differs from x by up to %g (signal peak %g)", rt, maxabs);
    free(c), free(sn), free(tr), free(ti);
    uint64_t h = bk_fnv1a(BK_FNV_OFFSET, s->fr, n * sizeof(double));
    bk_set_checksum(ctx, bk_fnv1a(h, s->fi, n * sizeof(double)));
    return rc;
}

const bk_kernel bk_mibench_fft = {
    .name = "mibench.fft",
    .family = "mibench",
    .summary = "MiBench FFT: forward and inverse radix-2 complex FFT of a sum of random sinusoids",
    .params = fft_params,
    .metrics = fft_metrics,
    .phases = fft_phases,
    .init = fft_init,
    .run = fft_run,
    .corrupt = fft_corrupt,
    .verify = fft_verify,
};
