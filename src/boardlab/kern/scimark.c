/* scimark: SciMark 2.0 (R. Pozo and B. Miller, NIST; math.nist.gov/scimark2) as boardlab kernels.
 *
 * The five kernels compute what SciMark computes, on SciMark's own inputs, and count flops as SciMark
 * counts them, so their MFLOPS compare with SciMark's:
 *   fft     (5N-2) log2(N) + 2(N+1) per forward+inverse pair of N complex points (SciMark counts the
 *           pair, not each transform)
 *   sor     (N-1)^2 * 6 per sweep of successive over-relaxation (omega 1.25) over an N x N grid,
 *           in place in row order (what SciMark calls Jacobi SOR)
 *   mc      4 per sample of the Monte Carlo integration of pi
 *   sparse  2 nz' per multiply y = A x in compressed-row storage, nz' = (nz / N) * N the stored nonzeros
 *   lu      2N^3/3 per LU factorization with partial pivoting (the copy of A before each one is timed,
 *           as SciMark times it, but not counted)
 * Inputs come from SciMark's generator (a lagged subtractive one, Random.c) seeded with 101010 and drawn
 * in SciMark's order (fft, sor, sparse, lu); Monte Carlo reseeds its own with 113 at each integration.
 *
 * SciMark doubles a kernel's cycle count until it runs 2 s. Here the core calibrates reps instead, and a
 * rep groups SciMark cycles into about 4 Mflop (small) or 128 Mflop (large), so that every phase of the
 * composite is timed far above the clock's resolution. One deviation, for verification: a SOR rep starts
 * again from SciMark's grid (a timed copy of N^2 doubles per 68 sweeps small, 21 large: within
 * 1-3% of SciMark's speed, the noise of that measurement), so that verify can recompute the result.
 */
#include "core.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SM_PI 3.1415926535897932
#define SM_SEED 101010 /* SciMark's RANDOM_SEED */
#define SM_MC_SEED 113 /* MonteCarlo.c reseeds with this at every integration */
#define SM_MC_SAMPLES (1u << 20) /* samples per Monte Carlo rep: ~4 Mflop */
#define SM_SOR_OMEGA 1.25

/* ---- SciMark's random numbers (Random.c: Knuth's subtractive generator, 17 lags, modulus 2^31-1) ---- */

#define SM_M1 2147483647 /* 2^31 - 1 */
#define SM_M2 65536 /* 2^16: the seed is spread with 16-bit halves so that 32-bit products never overflow */

typedef struct {
    int32_t m[17];
    int i, j;
} sm_rng;

static void sm_rng_seed(sm_rng *r, int32_t seed)
{
    int32_t s = seed < 0 ? -seed : seed;
    if (s % 2 == 0)
        s--;
    const int32_t k0 = 9069 % SM_M2, k1 = 9069 / SM_M2;
    int32_t j0 = s % SM_M2, j1 = s / SM_M2;
    for (int n = 0; n < 17; n++) {
        int32_t t = j0 * k0;
        j1 = (t / SM_M2 + j0 * k1 + j1 * k0) % (SM_M2 / 2);
        j0 = t % SM_M2;
        r->m[n] = j0 + SM_M2 * j1;
    }
    r->i = 4;
    r->j = 16;
}

/* A double in [0, 1): m[i] - m[j] mod (2^31 - 1), scaled. */
static inline double sm_rng_next(sm_rng *r)
{
    int32_t k = r->m[r->i] - r->m[r->j];
    if (k < 0)
        k += SM_M1;
    r->m[r->j] = k;
    r->i = r->i == 0 ? 16 : r->i - 1;
    r->j = r->j == 0 ? 16 : r->j - 1;
    return (1.0 / (double)SM_M1) * (double)k;
}

/* SciMark draws every input from one generator, kernel after kernel; a kernel run alone skips the draws
 * of the kernels before it, so that its input is exactly the one SciMark gives it. */
static void sm_rng_skip(sm_rng *r, uint64_t n)
{
    while (n--)
        (void)sm_rng_next(r);
}

static double sm_fill(sm_rng *r, double *v, size_t n)
{
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += v[i] = sm_rng_next(r);
    return sum;
}

/* ---- problem sizes ---- */

typedef struct {
    int fft_n; /* complex points, a power of two */
    int sor_n; /* grid side */
    int sparse_n, sparse_nz;
    int lu_n;
    double rep_flops; /* how much work one rep groups */
} sm_size;

/* SciMark's constants.c: small fits in cache, large does not. */
static const sm_size sm_sizes[] = {
    {1024, 100, 1000, 5000, 100, 4e6},
    {1048576, 1000, 100000, 1000000, 1000, 128e6},
};

static const sm_size *sm_size_of(const bk_ctx *ctx)
{
    return strcmp(bk_arg_str(ctx, "size"), "large") == 0 ? &sm_sizes[1] : &sm_sizes[0];
}

/* SciMark cycles per rep: as many as make about `target` flops, at least one. */
static uint64_t sm_cycles(double target, double flops_per_cycle)
{
    double c = floor(target / flops_per_cycle + 0.5);
    return c < 1 ? 1 : (uint64_t)c;
}

static double sm_max_abs_diff(const double *a, const double *b, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs(a[i] - b[i]);
        if (!(d <= m)) /* NaN counts as the largest difference */
            m = isnan(d) ? INFINITY : d;
    }
    return m;
}

/* Info keys carry the kernel's name in the composite ("fft_n") and none alone ("n"). */
static void sm_info(bk_ctx *ctx, const char *prefix, const char *key, double v)
{
    char name[96];
    snprintf(name, sizeof name, "%s%s", prefix, key);
    bk_info_num(ctx, name, v);
}

/* ==== FFT: complex radix-2 transform, forward then inverse, in place ==== */

typedef struct {
    int n; /* complex points */
    int log2n;
    uint64_t pairs; /* forward+inverse pairs per rep */
    uint64_t pairs_done; /* since init: the round trip's rounding error grows with them */
    double *x; /* 2n doubles, re/im interleaved: transformed back and forth in place */
    double *x0; /* the input, to measure the round trip's error */
} sm_fft;

static double fft_flops(const sm_fft *f)
{
    double n = f->n;
    return (5.0 * n - 2.0) * f->log2n + 2.0 * (n + 1.0);
}

/* Goldrader's in-place bit reversal of n complex values, as SciMark does it. */
static void fft_bitreverse(int n, double *d)
{
    for (int i = 0, j = 0; i < n - 1; i++) {
        if (i < j) {
            double re = d[2 * i], im = d[2 * i + 1];
            d[2 * i] = d[2 * j];
            d[2 * i + 1] = d[2 * j + 1];
            d[2 * j] = re;
            d[2 * j + 1] = im;
        }
        int k = n >> 1;
        while (k <= j) {
            j -= k;
            k >>= 1;
        }
        j += k;
    }
}

/* Unnormalized decimation-in-time transform; dir = -1 forward (e^-i), +1 inverse. Twiddles follow
 * SciMark's trigonometric recurrence w <- w e^(i theta) (two sin() calls per stage), the w = 1
 * butterflies skip their multiplications, and butterflies are indexed as SciMark indexes them: all three
 * shape the speed SciMark measures (pointer-stepped butterflies ran ~10% slower at N=1024 with gcc 12). */
static void fft_core(int n, double *d, int dir)
{
    if (n < 2)
        return;
    fft_bitreverse(n, d);
    for (int half = 1; half < n; half *= 2) {
        const int span = 2 * half;
        for (int b = 0; b < n; b += span) {
            const int i = 2 * b, j = 2 * (b + half);
            double tr = d[j], ti = d[j + 1];
            d[j] = d[i] - tr;
            d[j + 1] = d[i + 1] - ti;
            d[i] += tr;
            d[i + 1] += ti;
        }
        const double theta = dir * SM_PI / half;
        const double s = sin(theta), t = sin(theta / 2.0), s2 = 2.0 * t * t;
        double wr = 1.0, wi = 0.0;
        for (int a = 1; a < half; a++) {
            double nr = wr - s * wi - s2 * wr;
            double ni = wi + s * wr - s2 * wi;
            wr = nr;
            wi = ni;
            for (int b = 0; b < n; b += span) {
                const int i = 2 * (b + a), j = 2 * (b + a + half);
                double tr = wr * d[j] - wi * d[j + 1];
                double ti = wr * d[j + 1] + wi * d[j];
                d[j] = d[i] - tr;
                d[j + 1] = d[i + 1] - ti;
                d[i] += tr;
                d[i + 1] += ti;
            }
        }
    }
}

static void fft_inverse(int n, double *d)
{
    fft_core(n, d, +1);
    const double norm = 1.0 / n;
    for (int i = 0; i < 2 * n; i++)
        d[i] *= norm;
}

static int fft_init(bk_ctx *ctx, sm_fft *f, const sm_size *sz, sm_rng *r, const char *prefix)
{
    f->n = sz->fft_n;
    while ((1 << f->log2n) < f->n)
        f->log2n++;
    f->x = bk_run_alloc(ctx, sizeof(double) * 2 * (size_t)f->n, "fft: the points");
    f->x0 = bk_run_alloc(ctx, sizeof(double) * 2 * (size_t)f->n, "fft: the input");
    if (!f->x || !f->x0)
        return -1;
    sm_info(ctx, prefix, "input_sum", sm_fill(r, f->x0, 2 * (size_t)f->n));
    memcpy(f->x, f->x0, sizeof(double) * 2 * (size_t)f->n);
    f->pairs = sm_cycles(sz->rep_flops, fft_flops(f));
    sm_info(ctx, prefix, "n", f->n);
    sm_info(ctx, prefix, "cycles_per_rep", (double)f->pairs);
    return 0;
}

static void fft_rep(sm_fft *f)
{
    for (uint64_t c = 0; c < f->pairs; c++) {
        fft_core(f->n, f->x, -1);
        fft_inverse(f->n, f->x);
    }
    f->pairs_done += f->pairs;
}

static void fft_corrupt(sm_fft *f) { f->x[f->n] += 1.0; }

/* SciMark's own check is the round trip: RMS(x - x0) / N <= 1e-10 (its Java kernel.measureFFT). It cannot
 * see a wrong transform whose inverse undoes it, so the forward transform of the input is also compared
 * with direct DFT sums at a few bins; the checksum is that forward transform's, which does not depend on
 * how many round trips ran. */
static int fft_verify(bk_ctx *ctx, sm_fft *f, const char *prefix, uint64_t *checksum)
{
    const size_t nd = 2 * (size_t)f->n;
    double ss = 0, norm = 0;
    for (size_t i = 0; i < nd; i++) {
        double d = f->x[i] - f->x0[i];
        ss += d * d;
        norm += f->x0[i] * f->x0[i];
    }
    const double rms = sqrt(ss / (double)nd);
    const double max_err = sm_max_abs_diff(f->x, f->x0, nd);
    sm_info(ctx, prefix, "round_trip_rms_error", rms);
    sm_info(ctx, prefix, "round_trip_max_error", max_err);
    int rc = 0;
    if (!(rms / f->n <= 1e-10))
        rc = bk_fail(ctx, "fft: round trip RMS error %.3g over N=%d is above SciMark's 1e-10", rms, f->n);
    /* Each round trip adds a little rounding, and the twiddle recurrence's makes it drift one way (about
     * 0.6 eps log2(N) per pair, measured over 4e5 pairs at N=1024): bound it at 16 eps log2(N) per pair.
     * A damaged value is off by O(1), beyond that bound until some 10^13 pairs. */
    const double max_allowed = 16.0 * 2.220446049250313e-16 * f->log2n * (double)(f->pairs_done + 1);
    if (rc == 0 && !(max_err <= max_allowed))
        rc = bk_fail(ctx, "fft: %llu round trips changed a value by %.3g (more than %.3g)",
                     (unsigned long long)f->pairs_done, max_err, max_allowed);

    double *y = malloc(sizeof(double) * nd);
    double *tw = malloc(sizeof(double) * nd);
    if (!y || !tw) {
        free(y);
        free(tw);
        return bk_fail(ctx, "fft: out of memory for verification");
    }
    memcpy(y, f->x0, sizeof(double) * nd);
    fft_core(f->n, y, -1);
    *checksum = bk_fnv1a(BK_FNV_OFFSET, y, sizeof(double) * nd);
    for (int m = 0; m < f->n; m++) {
        tw[2 * m] = cos(2.0 * SM_PI * m / f->n);
        tw[2 * m + 1] = -sin(2.0 * SM_PI * m / f->n);
    }
    double dft_err = 0;
    for (int j = 0; j < 8; j++) {
        uint64_t k = ((uint64_t)j * (uint64_t)(f->n / 8) + (uint64_t)j) % (uint64_t)f->n;
        double re = 0, im = 0;
        for (uint64_t m = 0; m < (uint64_t)f->n; m++) {
            uint64_t e = (k * m) & (uint64_t)(f->n - 1); /* exact angle index (n is a power of two) */
            double c = tw[2 * e], s = tw[2 * e + 1], xr = f->x0[2 * m], xi = f->x0[2 * m + 1];
            re += xr * c - xi * s;
            im += xr * s + xi * c;
        }
        double err = hypot(y[2 * k] - re, y[2 * k + 1] - im);
        if (!(err <= dft_err))
            dft_err = isnan(err) ? INFINITY : err;
    }
    free(y);
    free(tw);
    norm = sqrt(norm);
    sm_info(ctx, prefix, "dft_max_error", dft_err);
    if (!(dft_err <= 1e-9 * norm))
        rc = bk_fail(ctx, "fft: forward transform differs from the direct DFT by %.3g (input norm %.3g)", dft_err,
                     norm);
    return rc;
}

/* ==== SOR: successive over-relaxation on an N x N grid ==== */

typedef struct {
    int n;
    uint64_t sweeps; /* per rep */
    double *g0; /* SciMark's random grid */
    double *g; /* the result */
    double **rows; /* row pointers into g: SciMark's double** access */
} sm_sor;

static double sor_flops(const sm_sor *s) { return (double)(s->n - 1) * (double)(s->n - 1) * 6.0; }

static int sor_init(bk_ctx *ctx, sm_sor *s, const sm_size *sz, sm_rng *r, const char *prefix)
{
    s->n = sz->sor_n;
    size_t nn = (size_t)s->n * (size_t)s->n;
    s->g0 = bk_run_alloc(ctx, sizeof(double) * nn, "sor: the input grid");
    s->g = bk_run_alloc(ctx, sizeof(double) * nn, "sor: the grid");
    s->rows = bk_run_alloc(ctx, sizeof(double *) * (size_t)s->n, "sor: the row pointers");
    if (!s->g0 || !s->g || !s->rows)
        return -1;
    for (int i = 0; i < s->n; i++)
        s->rows[i] = s->g + (size_t)i * (size_t)s->n;
    sm_info(ctx, prefix, "input_sum", sm_fill(r, s->g0, nn));
    memcpy(s->g, s->g0, sizeof(double) * nn);
    s->sweeps = sm_cycles(sz->rep_flops, sor_flops(s));
    sm_info(ctx, prefix, "n", s->n);
    sm_info(ctx, prefix, "cycles_per_rep", (double)s->sweeps);
    return 0;
}

static void sor_rep(sm_sor *s)
{
    const int n = s->n;
    const double w4 = SM_SOR_OMEGA * 0.25, w1 = 1.0 - SM_SOR_OMEGA;
    memcpy(s->g, s->g0, sizeof(double) * (size_t)n * (size_t)n);
    double **g = s->rows;
    for (uint64_t p = 0; p < s->sweeps; p++)
        for (int i = 1; i < n - 1; i++) {
            const double *up = g[i - 1], *down = g[i + 1];
            double *cur = g[i];
            for (int j = 1; j < n - 1; j++)
                cur[j] = w4 * (up[j] + down[j] + cur[j - 1] + cur[j + 1]) + w1 * cur[j];
        }
}

static void sor_corrupt(sm_sor *s) { s->rows[s->n / 2][s->n / 2] += 1.0; }

/* Recomputes the same sweeps from SciMark's grid with plain flat indexing and compares every point. */
static int sor_verify(bk_ctx *ctx, sm_sor *s, const char *prefix, uint64_t *checksum)
{
    const size_t n = (size_t)s->n, nn = n * n;
    double *ref = malloc(sizeof(double) * nn);
    if (!ref)
        return bk_fail(ctx, "sor: out of memory for verification");
    memcpy(ref, s->g0, sizeof(double) * nn);
    const double omega = SM_SOR_OMEGA;
    for (uint64_t p = 0; p < s->sweeps; p++)
        for (size_t i = 1; i + 1 < n; i++)
            for (size_t j = 1; j + 1 < n; j++)
                ref[i * n + j] = omega * 0.25 *
                                     (ref[(i - 1) * n + j] + ref[(i + 1) * n + j] + ref[i * n + j - 1] +
                                      ref[i * n + j + 1]) +
                                 (1.0 - omega) * ref[i * n + j];
    const double diff = sm_max_abs_diff(s->g, ref, nn);
    free(ref);
    *checksum = bk_fnv1a(BK_FNV_OFFSET, s->g, sizeof(double) * nn);
    sm_info(ctx, prefix, "max_diff", diff);
    /* Grid values stay within [0, 1]; only contraction of a*b+c into one rounding may differ. */
    if (!(diff <= 1e-12))
        return bk_fail(ctx, "sor: grid differs from a direct recomputation by %.3g (more than 1e-12)", diff);
    return 0;
}

/* ==== Monte Carlo integration of pi: the fraction of random points of the unit square in the circle ==== */

typedef struct {
    uint32_t samples; /* per rep: one SciMark MonteCarlo_integrate(samples) call */
    uint32_t under; /* points under the curve, last rep */
    uint32_t first_under; /* and first rep: every rep draws the same points, so they must agree */
    bool ran;
} sm_mc;

static void mc_init(bk_ctx *ctx, sm_mc *m, const char *prefix)
{
    m->samples = SM_MC_SAMPLES;
    sm_info(ctx, prefix, "samples_per_rep", m->samples);
}

static void mc_rep(sm_mc *m)
{
    sm_rng r;
    sm_rng_seed(&r, SM_MC_SEED);
    uint32_t under = 0;
    const uint32_t samples = m->samples; /* a local: the generator's stores could alias *m */
    for (uint32_t c = 0; c < samples; c++) {
        double x = sm_rng_next(&r);
        double y = sm_rng_next(&r);
        if (x * x + y * y <= 1.0)
            under++;
    }
    m->under = under;
    if (!m->ran)
        m->first_under = under;
    m->ran = true;
}

static void mc_corrupt(sm_mc *m) { m->under ^= 1u << 19; }

/* The estimate must lie within 6 standard deviations of pi for this many samples (a binomial count with
 * p = pi/4), and every rep must have counted the same points. */
static int mc_verify(bk_ctx *ctx, sm_mc *m, const char *prefix, uint64_t *checksum)
{
    const double n = m->samples, p = SM_PI / 4.0;
    const double estimate = 4.0 * m->under / n;
    const double tolerance = 6.0 * 4.0 * sqrt(p * (1.0 - p) / n);
    sm_info(ctx, prefix, "pi_estimate", estimate);
    sm_info(ctx, prefix, "pi_tolerance", tolerance);
    *checksum = bk_fnv1a(BK_FNV_OFFSET, &m->under, sizeof m->under);
    if (!m->ran)
        return bk_fail(ctx, "mc: no integration ran");
    if (!(fabs(estimate - SM_PI) <= tolerance))
        return bk_fail(ctx, "mc: estimate %.6f of pi is off by more than %.4f (6 sigma for %u samples)", estimate,
                       tolerance, m->samples);
    if (m->under != m->first_under)
        return bk_fail(ctx, "mc: the same %u points counted %u then %u under the curve", m->samples, m->first_under,
                       m->under);
    return 0;
}

/* ==== Sparse matrix times vector, compressed-row storage ==== */

typedef struct {
    int n, nr; /* rows, nonzeros per row */
    int anz; /* nonzeros actually stored: nr * n */
    uint64_t multiplies; /* per rep */
    double *x, *y, *val;
    int *col, *row;
} sm_sparse;

static double sparse_flops(const sm_sparse *sp) { return (double)sp->anz * 2.0; }

/* SciMark's pattern: row r holds nr nonzeros at columns 0, step, 2 step, ... with step = max(1, r / nr),
 * spread from the first column towards the diagonal. */
static int sparse_init(bk_ctx *ctx, sm_sparse *sp, const sm_size *sz, sm_rng *r, const char *prefix)
{
    sp->n = sz->sparse_n;
    sp->nr = sz->sparse_nz / sz->sparse_n;
    sp->anz = sp->nr * sp->n;
    sp->x = bk_run_alloc(ctx, sizeof(double) * (size_t)sp->n, "sparse: x");
    sp->y = bk_run_alloc(ctx, sizeof(double) * (size_t)sp->n, "sparse: y");
    sp->val = bk_run_alloc(ctx, sizeof(double) * (size_t)sp->anz, "sparse: the nonzeros");
    sp->col = bk_run_alloc(ctx, sizeof(int) * (size_t)sz->sparse_nz, "sparse: the column indices");
    sp->row = bk_run_alloc(ctx, sizeof(int) * ((size_t)sp->n + 1), "sparse: the row starts");
    if (!sp->x || !sp->y || !sp->val || !sp->col || !sp->row)
        return -1;
    double sum = sm_fill(r, sp->x, (size_t)sp->n);
    sum += sm_fill(r, sp->val, (size_t)sp->anz);
    sm_info(ctx, prefix, "input_sum", sum);
    sp->row[0] = 0;
    for (int i = 0; i < sp->n; i++) {
        int step = i / sp->nr > 1 ? i / sp->nr : 1;
        sp->row[i + 1] = sp->row[i] + sp->nr;
        for (int k = 0; k < sp->nr; k++)
            sp->col[sp->row[i] + k] = k * step;
    }
    sp->multiplies = sm_cycles(sz->rep_flops, sparse_flops(sp));
    sm_info(ctx, prefix, "n", sp->n);
    sm_info(ctx, prefix, "nz", sp->anz);
    sm_info(ctx, prefix, "cycles_per_rep", (double)sp->multiplies);
    return 0;
}

static void sparse_rep(sm_sparse *sp)
{
    const double *val = sp->val, *x = sp->x;
    const int *col = sp->col, *row = sp->row;
    double *y = sp->y;
    /* Sizes in locals: under -fno-strict-aliasing a store to y may alias *sp, so reading sp->n in the loop
     * condition reloads it after every row (SciMark's loop has them in arguments). */
    const int n = sp->n;
    const uint64_t multiplies = sp->multiplies;
    for (uint64_t c = 0; c < multiplies; c++)
        for (int i = 0; i < n; i++) {
            double sum = 0.0;
            const int end = row[i + 1];
            for (int k = row[i]; k < end; k++)
                sum += x[col[k]] * val[k];
            y[i] = sum;
        }
}

static void sparse_corrupt(sm_sparse *sp) { sp->y[sp->n / 2] += 1.0; }

/* Recomputes y from the pattern's definition (not from row[] and col[]) and compares every entry. */
static int sparse_verify(bk_ctx *ctx, sm_sparse *sp, const char *prefix, uint64_t *checksum)
{
    double diff = 0;
    for (int i = 0; i < sp->n; i++) {
        int step = i / sp->nr > 1 ? i / sp->nr : 1;
        double sum = 0.0;
        for (int k = 0; k < sp->nr; k++)
            sum += sp->x[k * step] * sp->val[(size_t)i * (size_t)sp->nr + (size_t)k];
        double d = fabs(sp->y[i] - sum) / (1.0 + fabs(sum));
        if (!(d <= diff))
            diff = isnan(d) ? INFINITY : d;
    }
    *checksum = bk_fnv1a(BK_FNV_OFFSET, sp->y, sizeof(double) * (size_t)sp->n);
    sm_info(ctx, prefix, "max_diff", diff);
    if (!(diff <= 1e-12))
        return bk_fail(ctx, "sparse: y = A x differs from a direct recomputation by %.3g (more than 1e-12)", diff);
    return 0;
}

/* ==== LU factorization with partial pivoting ==== */

typedef struct {
    int n;
    uint64_t factors; /* factorizations per rep */
    double *a; /* SciMark's random matrix, row-major */
    double *mem; /* the factors' storage */
    double **lu; /* row pointers into mem: pivoting swaps pointers, as SciMark's LU_factor does */
    int *pivot;
    double *b; /* right-hand side for the check, drawn after A as SciMark's Java version draws it */
    int singular; /* 1 + column of a zero pivot, or 0 */
} sm_lu;

static double lu_flops(const sm_lu *l)
{
    double n = l->n;
    return 2.0 * n * n * n / 3.0;
}

static int lu_init(bk_ctx *ctx, sm_lu *l, const sm_size *sz, sm_rng *r, const char *prefix)
{
    l->n = sz->lu_n;
    size_t n = (size_t)l->n;
    l->a = bk_run_alloc(ctx, sizeof(double) * n * n, "lu: the matrix");
    l->mem = bk_run_alloc(ctx, sizeof(double) * n * n, "lu: the factors");
    l->lu = bk_run_alloc(ctx, sizeof(double *) * n, "lu: the row pointers");
    l->pivot = bk_run_alloc(ctx, sizeof(int) * n, "lu: the pivots");
    l->b = bk_run_alloc(ctx, sizeof(double) * n, "lu: the right-hand side");
    if (!l->a || !l->mem || !l->lu || !l->pivot || !l->b)
        return -1;
    for (size_t i = 0; i < n; i++)
        l->lu[i] = l->mem + i * n;
    sm_info(ctx, prefix, "input_sum", sm_fill(r, l->a, n * n));
    sm_fill(r, l->b, n);
    l->factors = sm_cycles(sz->rep_flops, lu_flops(l));
    sm_info(ctx, prefix, "n", l->n);
    sm_info(ctx, prefix, "cycles_per_rep", (double)l->factors);
    return 0;
}

/* Right-looking Doolittle elimination: for each column pick the largest magnitude at or below the
 * diagonal, swap it up, scale the multipliers, update the trailing submatrix row by row. */
static int lu_factor(int n, double **a, int *pivot)
{
    for (int j = 0; j < n; j++) {
        int p = j;
        double big = fabs(a[j][j]);
        for (int i = j + 1; i < n; i++)
            if (fabs(a[i][j]) > big) {
                big = fabs(a[i][j]);
                p = i;
            }
        pivot[j] = p;
        if (a[p][j] == 0.0)
            return j + 1;
        if (p != j) {
            double *t = a[j];
            a[j] = a[p];
            a[p] = t;
        }
        const double *rj = a[j];
        if (j < n - 1) {
            const double inv = 1.0 / rj[j];
            for (int i = j + 1; i < n; i++)
                a[i][j] *= inv;
            for (int i = j + 1; i < n; i++) {
                double *ri = a[i];
                const double m = ri[j];
                for (int k = j + 1; k < n; k++)
                    ri[k] -= m * rj[k];
            }
        }
    }
    return 0;
}

static int lu_rep(bk_ctx *ctx, sm_lu *l)
{
    const size_t n = (size_t)l->n;
    for (uint64_t c = 0; c < l->factors; c++) {
        for (size_t i = 0; i < n; i++)
            memcpy(l->lu[i], l->a + i * n, sizeof(double) * n);
        l->singular = lu_factor(l->n, l->lu, l->pivot);
        if (l->singular)
            return bk_fail(ctx, "lu: zero pivot in column %d", l->singular - 1);
    }
    return 0;
}

static void lu_corrupt(sm_lu *l) { l->lu[l->n / 2][l->n / 2] += 1.0; }

/* Solves A x = b with the factors (row swaps, forward substitution with the unit L, back substitution
 * with U) and checks the scaled residual ||A x - b|| / (||A|| ||x|| N eps) in the infinity norm against
 * LAPACK's test threshold of 30 (xGET02); a wrong factorization gives ~1e13. */
static int lu_verify(bk_ctx *ctx, sm_lu *l, const char *prefix, uint64_t *checksum)
{
    const int n = l->n;
    double *x = malloc(sizeof(double) * (size_t)n);
    if (!x)
        return bk_fail(ctx, "lu: out of memory for verification");
    uint64_t h = BK_FNV_OFFSET;
    for (int i = 0; i < n; i++)
        h = bk_fnv1a(h, l->lu[i], sizeof(double) * (size_t)n);
    *checksum = bk_fnv1a(h, l->pivot, sizeof(int) * (size_t)n);
    for (int j = 0; j < n; j++)
        if (l->pivot[j] < j || l->pivot[j] >= n) {
            free(x);
            return bk_fail(ctx, "lu: pivot[%d] = %d is not a row at or below the diagonal", j, l->pivot[j]);
        }
    memcpy(x, l->b, sizeof(double) * (size_t)n);
    for (int j = 0; j < n; j++) {
        double t = x[j];
        x[j] = x[l->pivot[j]];
        x[l->pivot[j]] = t;
    }
    for (int i = 1; i < n; i++)
        for (int k = 0; k < i; k++)
            x[i] -= l->lu[i][k] * x[k];
    for (int i = n - 1; i >= 0; i--) {
        for (int k = i + 1; k < n; k++)
            x[i] -= l->lu[i][k] * x[k];
        x[i] /= l->lu[i][i];
    }
    double rmax = 0, anorm = 0, xnorm = 0;
    for (int i = 0; i < n; i++) {
        const double *ai = l->a + (size_t)i * (size_t)n;
        double r = -l->b[i], rowsum = 0;
        for (int k = 0; k < n; k++) {
            r += ai[k] * x[k];
            rowsum += fabs(ai[k]);
        }
        rmax = fmax(rmax, isnan(r) ? INFINITY : fabs(r));
        anorm = fmax(anorm, rowsum);
        xnorm = fmax(xnorm, isnan(x[i]) ? INFINITY : fabs(x[i]));
    }
    free(x);
    const double scaled = rmax / (anorm * xnorm * n * 2.220446049250313e-16);
    sm_info(ctx, prefix, "scaled_residual", scaled);
    if (!(scaled <= 30.0))
        return bk_fail(ctx, "lu: solving with the factors leaves a scaled residual of %.3g (more than 30)", scaled);
    return 0;
}

/* ==== the kernels ==== */

static const bk_param size_params[] = {
    {"size", BK_ENUM, 0, 0, "small", "small,large", NULL,
     "SciMark's problem size: small (in cache: FFT 1024, SOR 100x100, sparse N=1000 nz=5000, LU 100x100) or "
     "large (out of cache: FFT 1048576, SOR 1000x1000, sparse N=100000 nz=1000000, LU 1000x1000)"},
    {0},
};
static const bk_param no_params[] = {{0}};

static const bk_metric mflops_metric[] = {
    {"mflops", "MFLOPS", true, BK_RATE, -1, 1e-6,
     "millions of floating-point operations per second, as SciMark counts them"},
    {0},
};

/* -- the five parts, each driven alone by its kernel or all five by scimark.composite -- */

typedef enum { SM_FFT, SM_SOR, SM_MC, SM_SPARSE, SM_LU, SM_PARTS } sm_part;
/* The prefix of a part's info keys and metric in the composite; a kernel of one part uses none. */
static const char *const sm_prefix[SM_PARTS] = {"fft_", "sor_", "mc_", "sparse_", "lu_"};

typedef struct {
    sm_part first, last; /* the parts this kernel runs, in SciMark's order */
    sm_fft fft;
    sm_sor sor;
    sm_mc mc;
    sm_sparse sparse;
    sm_lu lu;
} sm_all;

/* Generator draws of the parts SciMark runs before `part` (Monte Carlo draws from its own generator). */
static uint64_t draws_before(const sm_size *sz, sm_part part)
{
    uint64_t fft = 2 * (uint64_t)sz->fft_n, sor = (uint64_t)sz->sor_n * (uint64_t)sz->sor_n;
    uint64_t sparse = (uint64_t)sz->sparse_n + (uint64_t)(sz->sparse_nz / sz->sparse_n) * (uint64_t)sz->sparse_n;
    return (part > SM_FFT ? fft : 0) + (part > SM_SOR ? sor : 0) + (part > SM_SPARSE ? sparse : 0);
}

/* Sets up one part from the shared generator and sets its metric's amount (flops per rep). */
static int part_init(bk_ctx *ctx, sm_all *s, sm_part part, const sm_size *sz, sm_rng *r, const char *prefix)
{
    double flops = 0;
    int rc = 0;
    switch (part) {
    case SM_FFT:
        rc = fft_init(ctx, &s->fft, sz, r, prefix);
        flops = (double)s->fft.pairs * fft_flops(&s->fft);
        break;
    case SM_SOR:
        rc = sor_init(ctx, &s->sor, sz, r, prefix);
        flops = (double)s->sor.sweeps * sor_flops(&s->sor);
        break;
    case SM_MC:
        mc_init(ctx, &s->mc, prefix);
        flops = 4.0 * s->mc.samples;
        break;
    case SM_SPARSE:
        rc = sparse_init(ctx, &s->sparse, sz, r, prefix);
        flops = (double)s->sparse.multiplies * sparse_flops(&s->sparse);
        break;
    case SM_LU:
        rc = lu_init(ctx, &s->lu, sz, r, prefix);
        flops = (double)s->lu.factors * lu_flops(&s->lu);
        break;
    case SM_PARTS: break;
    }
    if (rc != 0)
        return -1;
    char metric[32];
    snprintf(metric, sizeof metric, "%smflops", prefix);
    bk_set_amount(ctx, metric, flops);
    return 0;
}

/* reps of one part, the loop inside each case so that a rep costs no dispatch. */
static int part_run(bk_ctx *ctx, sm_all *s, sm_part part, uint64_t reps)
{
    switch (part) {
    case SM_FFT:
        for (uint64_t i = 0; i < reps; i++)
            fft_rep(&s->fft);
        break;
    case SM_SOR:
        for (uint64_t i = 0; i < reps; i++)
            sor_rep(&s->sor);
        break;
    case SM_MC:
        for (uint64_t i = 0; i < reps; i++)
            mc_rep(&s->mc);
        break;
    case SM_SPARSE:
        for (uint64_t i = 0; i < reps; i++)
            sparse_rep(&s->sparse);
        break;
    case SM_LU:
        for (uint64_t i = 0; i < reps; i++)
            if (lu_rep(ctx, &s->lu) != 0)
                return -1;
        break;
    case SM_PARTS: break;
    }
    return 0;
}

static int part_verify(bk_ctx *ctx, sm_all *s, sm_part part, const char *prefix, uint64_t *h)
{
    switch (part) {
    case SM_FFT: return fft_verify(ctx, &s->fft, prefix, h);
    case SM_SOR: return sor_verify(ctx, &s->sor, prefix, h);
    case SM_MC: return mc_verify(ctx, &s->mc, prefix, h);
    case SM_SPARSE: return sparse_verify(ctx, &s->sparse, prefix, h);
    case SM_LU: return lu_verify(ctx, &s->lu, prefix, h);
    case SM_PARTS: break;
    }
    return -1;
}

static const char *part_prefix(const sm_all *s, sm_part part) { return s->first == s->last ? "" : sm_prefix[part]; }

/* The state of a kernel running parts first..last, seeded as SciMark seeds them: the generator skips the draws
 * of the parts before `first`, then runs through all of them in order. */
static int sm_start(bk_ctx *ctx, void **state, sm_part first, sm_part last)
{
    sm_all *s = bk_run_state(ctx, state, sizeof *s);
    if (!s)
        return -1;
    s->first = first;
    s->last = last;
    /* scimark.mc has no size parameter: it draws from its own generator */
    const sm_size *sz = first == SM_MC && last == SM_MC ? NULL : sm_size_of(ctx);
    sm_rng r;
    sm_rng_seed(&r, SM_SEED);
    if (sz)
        sm_rng_skip(&r, draws_before(sz, first));
    for (sm_part p = first; p <= last; p++)
        if (part_init(ctx, s, p, sz, &r, part_prefix(s, p)) != 0)
            return -1;
    return 0;
}

/* Each part is one phase of the composite; a kernel of one part declares no phases, so those calls do nothing. */
static int sm_run(bk_ctx *ctx, void *state, uint64_t reps)
{
    sm_all *s = state;
    for (sm_part p = s->first; p <= s->last; p++) {
        bk_phase_begin(ctx, (int)p);
        if (part_run(ctx, s, p, reps) != 0)
            return -1;
        bk_phase_end(ctx, (int)p);
    }
    return 0;
}

/* Damages every part's result, so that a test of the composite sees each verification catch its own. */
static void sm_corrupt(void *state)
{
    sm_all *s = state;
    for (sm_part p = s->first; p <= s->last; p++)
        switch (p) {
        case SM_FFT: fft_corrupt(&s->fft); break;
        case SM_SOR: sor_corrupt(&s->sor); break;
        case SM_MC: mc_corrupt(&s->mc); break;
        case SM_SPARSE: sparse_corrupt(&s->sparse); break;
        case SM_LU: lu_corrupt(&s->lu); break;
        case SM_PARTS: break;
        }
}

/* Every part is verified even after one failed; the checksum is the part's, or the composite's over all five. */
static int sm_verify(bk_ctx *ctx, void *state)
{
    sm_all *s = state;
    uint64_t h[SM_PARTS] = {0};
    int bad = 0;
    for (sm_part p = s->first; p <= s->last; p++)
        bad |= part_verify(ctx, s, p, part_prefix(s, p), &h[p]);
    bk_set_checksum(ctx, s->first == s->last ? h[s->first] : bk_fnv1a(BK_FNV_OFFSET, h, sizeof h));
    return bad ? -1 : 0;
}

static int k_fft_init(bk_ctx *ctx, void **state) { return sm_start(ctx, state, SM_FFT, SM_FFT); }
static int k_sor_init(bk_ctx *ctx, void **state) { return sm_start(ctx, state, SM_SOR, SM_SOR); }
static int k_mc_init(bk_ctx *ctx, void **state) { return sm_start(ctx, state, SM_MC, SM_MC); }
static int k_sparse_init(bk_ctx *ctx, void **state) { return sm_start(ctx, state, SM_SPARSE, SM_SPARSE); }
static int k_lu_init(bk_ctx *ctx, void **state) { return sm_start(ctx, state, SM_LU, SM_LU); }
static int k_composite_init(bk_ctx *ctx, void **state) { return sm_start(ctx, state, SM_FFT, SM_LU); }

#define SM_KERNEL(var, kname, ksummary, kparams, kmetrics, kphases, kinit)                                             \
    const bk_kernel var = {.name = kname,                                                                              \
                           .family = "scimark",                                                                        \
                           .summary = ksummary,                                                                        \
                           .params = kparams,                                                                          \
                           .metrics = kmetrics,                                                                        \
                           .phases = kphases,                                                                          \
                           .init = kinit,                                                                              \
                           .run = sm_run,                                                                              \
                           .corrupt = sm_corrupt,                                                                      \
                           .verify = sm_verify}

SM_KERNEL(bk_scimark_fft, "scimark.fft", "SciMark 2.0 FFT: complex radix-2 transform, forward and inverse, of N points",
          size_params, mflops_metric, NULL, k_fft_init);
SM_KERNEL(bk_scimark_sor, "scimark.sor",
          "SciMark 2.0 SOR: successive over-relaxation sweeps (omega 1.25) of an N x N grid", size_params,
          mflops_metric, NULL, k_sor_init);
SM_KERNEL(bk_scimark_mc, "scimark.mc", "SciMark 2.0 Monte Carlo: pi from 2^20 random points of the unit square per rep",
          no_params, mflops_metric, NULL, k_mc_init);
SM_KERNEL(bk_scimark_sparse, "scimark.sparse", "SciMark 2.0 sparse matmult: y = A x, A in compressed-row storage",
          size_params, mflops_metric, NULL, k_sparse_init);
SM_KERNEL(bk_scimark_lu, "scimark.lu", "SciMark 2.0 LU: factorization with partial pivoting of an N x N matrix",
          size_params, mflops_metric, NULL, k_lu_init);

/* scimark.composite: the five in one iteration, each timed as a phase; the score is their mean */
static const char *const composite_phases[] = {"fft", "sor", "mc", "sparse", "lu", NULL};

static const bk_metric composite_metrics[] = {
    {"composite_mflops", "MFLOPS", true, BK_MEAN, -1, 1.0, "SciMark's composite score: the mean of the five rates"},
    {"fft_mflops", "MFLOPS", true, BK_RATE, SM_FFT, 1e-6, "FFT phase, as SciMark counts its flops"},
    {"sor_mflops", "MFLOPS", true, BK_RATE, SM_SOR, 1e-6, "SOR phase, as SciMark counts its flops"},
    {"mc_mflops", "MFLOPS", true, BK_RATE, SM_MC, 1e-6, "Monte Carlo phase, as SciMark counts its flops"},
    {"sparse_mflops", "MFLOPS", true, BK_RATE, SM_SPARSE, 1e-6, "sparse matmult phase, as SciMark counts its flops"},
    {"lu_mflops", "MFLOPS", true, BK_RATE, SM_LU, 1e-6, "LU phase, as SciMark counts its flops"},
    {0},
};

SM_KERNEL(bk_scimark_composite, "scimark.composite",
          "SciMark 2.0 composite: FFT, SOR, Monte Carlo, sparse matmult and LU in one iteration", size_params,
          composite_metrics, composite_phases, k_composite_init);
