/* compute.gemm and compute.linpack: the data-stream study's SP/DP GFLOPS.
 *
 * compute.gemm is C = A B on n x n matrices, 2 n^3 flops per product (the count every BLAS benchmark uses),
 * through the system CBLAS (OpenBLAS on Debian, probed at build) or a native blocked kernel that needs no
 * library. The result is checked against a reference product: C x against A (B x) for two random vectors
 * (Freivalds' projection, O(n^2) in long double), element-wise within the rounding bound of the product.
 *
 * compute.linpack is HPL's problem: LU with partial pivoting of a random n x n matrix (entries in
 * [-0.5, 0.5) like HPL's), a forward and back solve, and HPL's scaled residual
 * ||A x - b||_inf / (eps (||A||_inf ||x||_inf + ||b||_inf) n) < 16 as the check; flops 2/3 n^3 + 2 n^2 as HPL
 * counts them. The factorization is right-looking and blocked: the trailing update is a GEMM, so its
 * speed follows the same `impl` and `threads`.
 *
 * threads: OpenBLAS's own pool (openblas_set_num_threads) for impl=blas; row slices on threads pinned to the
 * allowed CPUs for impl=native.
 */
#include "core.h"

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if BK_HAVE_CBLAS
#include <cblas.h>
#include <dlfcn.h>
#endif

#define GEMM_SEED 0x67656d6d2d626c61ULL

#if BK_HAVE_CBLAS
/* The CBLAS is opened on first use, not linked: OpenBLAS starts its thread pool in a constructor, and those
 * threads would otherwise live in every boardlab-kern process, beside every other kernel. */
static __typeof__(&cblas_dgemm) p_dgemm;
static __typeof__(&cblas_sgemm) p_sgemm;
static void (*p_set_threads)(int);
static const char *(*p_get_config)(void);
static char blas_error[256];
static char blas_library[64];

static const char *blas_open(void)
{
    static const char *const names[] = {"libopenblas.so.0", "libopenblas.so", "libcblas.so.3", "libblas.so.3"};
    if (p_dgemm)
        return NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!h)
            continue;
        p_dgemm = (__typeof__(p_dgemm))dlsym(h, "cblas_dgemm");
        p_sgemm = (__typeof__(p_sgemm))dlsym(h, "cblas_sgemm");
        p_set_threads = (void (*)(int))dlsym(h, "openblas_set_num_threads");
        p_get_config = (const char *(*)(void))dlsym(h, "openblas_get_config");
        if (p_dgemm && p_sgemm) {
            snprintf(blas_library, sizeof blas_library, "%s", names[i]);
            return NULL;
        }
        p_dgemm = NULL;
        dlclose(h);
    }
    snprintf(blas_error, sizeof blas_error, "no CBLAS library could be opened (%s); install libopenblas0",
             "libopenblas.so.0, libcblas.so.3, libblas.so.3");
    return blas_error;
}
#endif

static const char *blas_reason(void)
{
#if BK_HAVE_CBLAS
    return blas_open();
#else
    return "built without a CBLAS library (install libopenblas-dev and rebuild)";
#endif
}

/* ---- the native kernel: C[m x n] += alpha A[m x k] B[k x n], row-major with leading dimensions ---- */

#define NB_K 128 /* a B panel of NB_K x NB_J stays in L2 while 4 rows of C stream over it */
#define NB_J 512

#define DEFINE_NATIVE(T, SUF)                                                                                          \
    static void native_rows_##SUF(int m0, int m1, int n, int k, T alpha, const T *a, int lda, const T *b, int ldb,     \
                                  T *c, int ldc)                                                                       \
    {                                                                                                                  \
        for (int kk = 0; kk < k; kk += NB_K) {                                                                         \
            int ke = kk + NB_K < k ? kk + NB_K : k;                                                                    \
            for (int jj = 0; jj < n; jj += NB_J) {                                                                     \
                int je = jj + NB_J < n ? jj + NB_J : n;                                                                \
                int i = m0;                                                                                            \
                for (; i + 4 <= m1; i += 4) {                                                                          \
                    T *restrict c0 = c + (size_t)i * ldc, *restrict c1 = c0 + ldc;                                     \
                    T *restrict c2 = c1 + ldc, *restrict c3 = c2 + ldc;                                                \
                    for (int p = kk; p < ke; p++) {                                                                    \
                        const T *restrict bp = b + (size_t)p * ldb;                                                    \
                        T a0 = alpha * a[(size_t)i * lda + p], a1 = alpha * a[(size_t)(i + 1) * lda + p];              \
                        T a2 = alpha * a[(size_t)(i + 2) * lda + p], a3 = alpha * a[(size_t)(i + 3) * lda + p];        \
                        for (int j = jj; j < je; j++) {                                                                \
                            T bv = bp[j];                                                                              \
                            c0[j] += a0 * bv;                                                                          \
                            c1[j] += a1 * bv;                                                                          \
                            c2[j] += a2 * bv;                                                                          \
                            c3[j] += a3 * bv;                                                                          \
                        }                                                                                              \
                    }                                                                                                  \
                }                                                                                                      \
                for (; i < m1; i++) {                                                                                  \
                    T *ci = c + (size_t)i * ldc;                                                                       \
                    for (int p = kk; p < ke; p++) {                                                                    \
                        const T *bp = b + (size_t)p * ldb;                                                             \
                        T ai = alpha * a[(size_t)i * lda + p];                                                         \
                        for (int j = jj; j < je; j++)                                                                  \
                            ci[j] += ai * bp[j];                                                                       \
                    }                                                                                                  \
                }                                                                                                      \
            }                                                                                                          \
        }                                                                                                              \
    }

DEFINE_NATIVE(double, d)
DEFINE_NATIVE(float, s)

typedef struct {
    bool dp;
    int m0, m1, n, k, lda, ldb, ldc;
    double alpha;
    const void *a, *b;
    void *c;
    int cpu;
} native_job;

static void native_job_run(native_job *j)
{
    if (j->dp)
        native_rows_d(j->m0, j->m1, j->n, j->k, j->alpha, j->a, j->lda, j->b, j->ldb, j->c, j->ldc);
    else
        native_rows_s(j->m0, j->m1, j->n, j->k, (float)j->alpha, j->a, j->lda, j->b, j->ldb, j->c, j->ldc);
}

static void *native_thread(void *arg)
{
    native_job *j = arg;
    if (j->cpu >= 0)
        bk_pin_thread_to_cpu(j->cpu);
    native_job_run(j);
    return NULL;
}

/* Row slices of C, one per thread (rows are independent, so the result does not depend on threads). */
static int native_gemm(bool dp, int threads, const int *cpus, int ncpus, int m, int n, int k, double alpha,
                       const void *a, int lda, const void *b, int ldb, void *c, int ldc)
{
    if (threads > m / 4)
        threads = m / 4 > 0 ? m / 4 : 1;
    native_job jobs[256];
    pthread_t tids[256];
    int per = (m + threads - 1) / threads, started = 0, rc = 0;
    for (int t = 0; t < threads; t++) {
        native_job *j = &jobs[t];
        *j = (native_job){dp, t * per, (t + 1) * per < m ? (t + 1) * per : m, n, k, lda, ldb, ldc, alpha, a,
                          b,  c,       ncpus ? cpus[t % ncpus] : -1};
        if (t == threads - 1 || threads == 1)
            break;
        if (pthread_create(&tids[t], NULL, native_thread, j) != 0) {
            rc = -1;
            break;
        }
        started++;
    }
    if (rc == 0)
        native_job_run(&jobs[threads - 1]); /* the calling thread takes the last slice */
    for (int t = 0; t < started; t++)
        pthread_join(tids[t], NULL);
    return rc;
}

/* ---- shared state ---- */

typedef struct {
    bool dp, blas;
    int n, threads, ncpus;
    int cpus[256];
    void *a, *b, *c; /* gemm: A, B, C; linpack: the original A, b, and the work copy */
    void *lu, *x;
    int *piv;
    uint64_t products;
    double resid; /* linpack: HPL's scaled residual of the last solve */
} gemm_state;

static const bk_param gemm_params[] = {
    {"n", BK_INT, 8, 8192, "512", NULL, "elements", "matrix order: C = A B with A, B, C n x n"},
    {"precision", BK_ENUM, 0, 0, "double", "single,double", NULL, "single (SGEMM) or double (DGEMM)"},
    {"impl", BK_ENUM, 0, 0, "blas", "blas,native", NULL,
     "blas: the system CBLAS found at build (OpenBLAS on Debian); native: boardlab's blocked C kernel"},
    {"threads", BK_INT, 1, 256, "1", NULL, NULL,
     "threads: OpenBLAS's pool for impl=blas, row slices pinned round-robin to the allowed CPUs for native"},
    {0},
};

static const bk_metric gemm_metrics[] = {
    {"gflops", "GFLOPS", true, BK_RATE, -1, 1e-9, "2 n^3 floating-point operations per product per second, 1e9"},
    {0},
};

static void fill(gemm_state *s, void *p, size_t count, uint64_t seed)
{
    uint64_t st = seed;
    for (size_t i = 0; i < count; i++) {
        double v = bk_rand_unit(&st) - 0.5; /* HPL's range */
        if (s->dp)
            ((double *)p)[i] = v;
        else
            ((float *)p)[i] = (float)v;
    }
}

static double elem(const gemm_state *s, const void *p, size_t i)
{
    return s->dp ? ((const double *)p)[i] : (double)((const float *)p)[i];
}

/* The state both kernels start from, in run-owned memory: the parameters read and the implementation chosen.
 * NULL after bk_fail or bk_unsupported. */
static gemm_state *common_init(bk_ctx *ctx, void **state)
{
    gemm_state *s = bk_run_state(ctx, state, sizeof *s);
    if (!s)
        return NULL;
    s->n = (int)bk_arg_int(ctx, "n");
    s->dp = strcmp(bk_arg_str(ctx, "precision"), "double") == 0;
    s->blas = strcmp(bk_arg_str(ctx, "impl"), "blas") == 0;
    s->threads = (int)bk_arg_int(ctx, "threads");
    s->ncpus = bk_allowed_cpus(s->cpus, 256);
    if (s->blas && blas_reason()) {
        bk_unsupported(ctx, "impl=blas: %s", blas_reason());
        return NULL;
    }
#if BK_HAVE_CBLAS
    if (s->blas) {
        if (p_set_threads)
            p_set_threads(s->threads);
        else if (s->threads != 1) {
            bk_unsupported(ctx, "threads=%d: %s has no thread-count call (OpenBLAS's is missing)", s->threads,
                           blas_library);
            return NULL;
        }
        bk_info_str(ctx, "blas_library", blas_library);
        if (p_get_config)
            bk_info_str(ctx, "blas_config", p_get_config());
    }
#endif
    bk_info_str(ctx, "impl_used", s->blas ? "cblas" : "native");
    bk_info_num(ctx, "threads", s->threads);
    return s;
}

/* C = alpha A B + C for row-major matrices with leading dimensions, by the chosen implementation. */
static void gemm_any(gemm_state *s, int m, int n, int k, double alpha, const void *a, int lda, const void *b, int ldb,
                     void *c, int ldc)
{
#if BK_HAVE_CBLAS
    if (s->blas) {
        if (s->dp)
            p_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, 1.0, c, ldc);
        else
            p_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, (float)alpha, a, lda, b, ldb, 1.0f, c, ldc);
        return;
    }
#endif
    native_gemm(s->dp, s->threads, s->cpus, s->ncpus, m, n, k, alpha, a, lda, b, ldb, c, ldc);
}

/* ================================================================================================
 * compute.gemm
 * ================================================================================================ */

static int gemm_init(bk_ctx *ctx, void **state)
{
    gemm_state *s = common_init(ctx, state);
    if (!s)
        return -1;
    size_t nn = (size_t)s->n * (size_t)s->n, esz = s->dp ? sizeof(double) : sizeof(float);
    s->a = bk_run_alloc(ctx, nn * esz, "matrix A");
    s->b = bk_run_alloc(ctx, nn * esz, "matrix B");
    s->c = bk_run_alloc(ctx, nn * esz, "matrix C");
    if (!s->a || !s->b || !s->c)
        return bk_fail(ctx, "cannot allocate three %dx%d matrices; lower n", s->n, s->n);
    fill(s, s->a, nn, GEMM_SEED);
    fill(s, s->b, nn, GEMM_SEED ^ 0x5a5a5a5aULL);
    double n = s->n;
    bk_set_amount(ctx, "gflops", 2.0 * n * n * n);
    bk_info_num(ctx, "flops_per_product", 2.0 * n * n * n);
    return 0;
}

static int gemm_run(bk_ctx *ctx, void *state, uint64_t reps)
{
    (void)ctx;
    gemm_state *s = state;
    size_t bytes = (size_t)s->n * (size_t)s->n * (s->dp ? sizeof(double) : sizeof(float));
    for (uint64_t r = 0; r < reps; r++) {
        memset(s->c, 0, bytes); /* C = A B, so the result is the same after any number of reps */
        gemm_any(s, s->n, s->n, s->n, 1.0, s->a, s->n, s->b, s->n, s->c, s->n);
        s->products++;
    }
    return 0;
}

static void gemm_corrupt(void *state)
{
    gemm_state *s = state;
    size_t i = (size_t)(s->n / 2) * (size_t)s->n + (size_t)(s->n / 3);
    double bump = 1.0 + s->n; /* far above the rounding bound, which grows as n^3 eps */
    if (s->dp)
        ((double *)s->c)[i] += bump;
    else
        ((float *)s->c)[i] += (float)bump;
}

/* Freivalds' check, twice: for random x, C x must equal A (B x) up to the rounding of the products, bounded
 * element-wise by gamma (|A| (|B| |x|)) with gamma = 2 n u, u the unit roundoff of the precision. */
static int gemm_verify(bk_ctx *ctx, void *state)
{
    gemm_state *s = state;
    int n = s->n;
    if (s->products == 0)
        return bk_fail(ctx, "no product was computed");
    long double *x = malloc(sizeof(long double) * (size_t)n * 4);
    if (!x)
        return bk_fail(ctx, "out of memory");
    long double *bx = x + n, *babs = x + 2 * n, *xa = x + 3 * n;
    double u = s->dp ? DBL_EPSILON / 2 : FLT_EPSILON / 2, gamma = 2.0 * n * u, worst = 0;
    uint64_t st = GEMM_SEED ^ 0x1234;
    int bad_row = -1;
    for (int trial = 0; trial < 2 && bad_row < 0; trial++) {
        for (int j = 0; j < n; j++) {
            x[j] = 0.5L + (long double)bk_rand_unit(&st);
            xa[j] = x[j];
        }
        for (int i = 0; i < n; i++) {
            long double acc = 0, acc_abs = 0;
            for (int j = 0; j < n; j++) {
                long double v = elem(s, s->b, (size_t)i * n + j);
                acc += v * x[j];
                acc_abs += fabsl(v) * xa[j];
            }
            bx[i] = acc;
            babs[i] = acc_abs;
        }
        for (int i = 0; i < n; i++) {
            long double ref = 0, bound = 0, got = 0;
            for (int k = 0; k < n; k++) {
                long double a = elem(s, s->a, (size_t)i * n + k);
                ref += a * bx[k];
                bound += fabsl(a) * babs[k];
                got += (long double)elem(s, s->c, (size_t)i * n + k) * x[k];
            }
            double err = (double)fabsl(got - ref), lim = gamma * (double)bound + 1e-300;
            if (err / lim > worst)
                worst = err / lim;
            if (err > lim && bad_row < 0)
                bad_row = i;
        }
    }
    free(x);
    bk_info_num(ctx, "verify_error_over_bound", worst);
    uint64_t h = bk_fnv1a(BK_FNV_OFFSET, s->c, (size_t)n * (size_t)n * (s->dp ? sizeof(double) : sizeof(float)));
    bk_set_checksum(ctx, h);
    if (bad_row >= 0)
        return bk_fail(ctx,
                       "row %d of C = A B differs from the reference product beyond the rounding bound "
                       "(%.3g times the bound)",
                       bad_row, worst);
    return 0;
}

const bk_kernel bk_compute_gemm = {
    .name = "compute.gemm",
    .family = "compute",
    .summary = "SGEMM/DGEMM C = A B (2 n^3 flops) through the system CBLAS or a native blocked kernel",
    .params = gemm_params,
    .metrics = gemm_metrics,
    .init = gemm_init,
    .run = gemm_run,
    .corrupt = gemm_corrupt,
    .verify = gemm_verify,
};

/* ================================================================================================
 * compute.linpack
 * ================================================================================================ */

#define LU_NB 64

static const bk_param lin_params[] = {
    {"n", BK_INT, 16, 8192, "500", NULL, "elements", "order of the system A x = b"},
    {"precision", BK_ENUM, 0, 0, "double", "single,double", NULL, "single or double precision"},
    {"impl", BK_ENUM, 0, 0, "blas", "blas,native", NULL,
     "the GEMM of the trailing update: blas (system CBLAS) or native (boardlab's blocked kernel)"},
    {"threads", BK_INT, 1, 256, "1", NULL, NULL, "threads of the trailing-update GEMM (as compute.gemm)"},
    {0},
};

static const bk_metric lin_metrics[] = {
    {"gflops", "GFLOPS", true, BK_RATE, -1, 1e-9,
     "HPL's flop count 2/3 n^3 + 2 n^2 per factorization and solve, per second, 1e9"},
    {0},
};

/* The panel, unblocked: columns k0..k0+nb of rows k0..n, pivots swapped across whole rows. */
#define DEFINE_LU(T, SUF)                                                                                              \
    static int lu_panel_##SUF(T *a, int n, int k0, int nb, int *piv)                                                   \
    {                                                                                                                  \
        for (int k = k0; k < k0 + nb; k++) {                                                                           \
            int p = k;                                                                                                 \
            T best = (T)fabs((double)a[(size_t)k * n + k]);                                                            \
            for (int i = k + 1; i < n; i++) {                                                                          \
                T v = (T)fabs((double)a[(size_t)i * n + k]);                                                           \
                if (v > best)                                                                                          \
                    best = v, p = i;                                                                                   \
            }                                                                                                          \
            piv[k] = p;                                                                                                \
            if (best == 0)                                                                                             \
                return -1;                                                                                             \
            if (p != k)                                                                                                \
                for (int j = 0; j < n; j++) {                                                                          \
                    T t = a[(size_t)k * n + j];                                                                        \
                    a[(size_t)k * n + j] = a[(size_t)p * n + j];                                                       \
                    a[(size_t)p * n + j] = t;                                                                          \
                }                                                                                                      \
            T inv = (T)1 / a[(size_t)k * n + k];                                                                       \
            for (int i = k + 1; i < n; i++) {                                                                          \
                T l = a[(size_t)i * n + k] *= inv;                                                                     \
                T *ri = a + (size_t)i * n, *rk = a + (size_t)k * n;                                                    \
                for (int j = k + 1; j < k0 + nb; j++)                                                                  \
                    ri[j] -= l * rk[j];                                                                                \
            }                                                                                                          \
        }                                                                                                              \
        return 0;                                                                                                      \
    }                                                                                                                  \
    /* U12 = L11^-1 A12: forward substitution with the unit lower triangle of the panel. */                            \
    static void lu_trsm_##SUF(T *a, int n, int k0, int nb)                                                             \
    {                                                                                                                  \
        for (int i = k0 + 1; i < k0 + nb; i++) {                                                                       \
            T *ri = a + (size_t)i * n;                                                                                 \
            for (int k = k0; k < i; k++) {                                                                             \
                T l = ri[k];                                                                                           \
                const T *rk = a + (size_t)k * n;                                                                       \
                for (int j = k0 + nb; j < n; j++)                                                                      \
                    ri[j] -= l * rk[j];                                                                                \
            }                                                                                                          \
        }                                                                                                              \
    }                                                                                                                  \
    /* L y = P b, then U x = y. */                                                                                     \
    static void lu_solve_##SUF(const T *a, int n, const int *piv, const T *b, T *x)                                    \
    {                                                                                                                  \
        for (int i = 0; i < n; i++)                                                                                    \
            x[i] = b[i];                                                                                               \
        for (int k = 0; k < n; k++)                                                                                    \
            if (piv[k] != k) {                                                                                         \
                T t = x[k];                                                                                            \
                x[k] = x[piv[k]];                                                                                      \
                x[piv[k]] = t;                                                                                         \
            }                                                                                                          \
        for (int i = 1; i < n; i++) {                                                                                  \
            T acc = x[i];                                                                                              \
            for (int k = 0; k < i; k++)                                                                                \
                acc -= a[(size_t)i * n + k] * x[k];                                                                    \
            x[i] = acc;                                                                                                \
        }                                                                                                              \
        for (int i = n - 1; i >= 0; i--) {                                                                             \
            T acc = x[i];                                                                                              \
            for (int k = i + 1; k < n; k++)                                                                            \
                acc -= a[(size_t)i * n + k] * x[k];                                                                    \
            x[i] = acc / a[(size_t)i * n + i];                                                                         \
        }                                                                                                              \
    }

DEFINE_LU(double, d)
DEFINE_LU(float, s)

static int lin_init(bk_ctx *ctx, void **state)
{
    gemm_state *s = common_init(ctx, state);
    if (!s)
        return -1;
    size_t n = (size_t)s->n, esz = s->dp ? sizeof(double) : sizeof(float);
    s->a = bk_run_alloc(ctx, n * n * esz, "matrix A");
    s->lu = bk_run_alloc(ctx, n * n * esz, "the LU factors");
    s->b = bk_run_alloc(ctx, n * esz, "vector b");
    s->x = bk_run_alloc(ctx, n * esz, "the solution");
    s->piv = bk_run_alloc(ctx, n * sizeof(int), "the pivots");
    if (!s->a || !s->lu || !s->b || !s->x || !s->piv)
        return bk_fail(ctx, "cannot allocate a %dx%d system; lower n", s->n, s->n);
    fill(s, s->a, n * n, GEMM_SEED ^ 0x4c50ULL);
    fill(s, s->b, n, GEMM_SEED ^ 0x4250ULL);
    double dn = s->n;
    bk_set_amount(ctx, "gflops", 2.0 / 3.0 * dn * dn * dn + 2.0 * dn * dn);
    return 0;
}

static int lin_run(bk_ctx *ctx, void *state, uint64_t reps)
{
    gemm_state *s = state;
    int n = s->n;
    size_t esz = s->dp ? sizeof(double) : sizeof(float);
    for (uint64_t r = 0; r < reps; r++) {
        memcpy(s->lu, s->a, (size_t)n * n * esz);
        for (int k0 = 0; k0 < n; k0 += LU_NB) {
            int nb = k0 + LU_NB < n ? LU_NB : n - k0;
            int rc = s->dp ? lu_panel_d(s->lu, n, k0, nb, s->piv) : lu_panel_s(s->lu, n, k0, nb, s->piv);
            if (rc != 0)
                return bk_fail(ctx, "the matrix is singular to working precision at column %d", k0);
            int rest = n - k0 - nb;
            if (rest <= 0)
                continue;
            if (s->dp)
                lu_trsm_d(s->lu, n, k0, nb);
            else
                lu_trsm_s(s->lu, n, k0, nb);
            /* A22 -= L21 U12 */
            char *base = s->lu;
            const void *l21 = base + ((size_t)(k0 + nb) * n + k0) * esz;
            const void *u12 = base + ((size_t)k0 * n + k0 + nb) * esz;
            void *a22 = base + ((size_t)(k0 + nb) * n + k0 + nb) * esz;
            gemm_any(s, rest, rest, nb, -1.0, l21, n, u12, n, a22, n);
        }
        if (s->dp)
            lu_solve_d(s->lu, n, s->piv, s->b, s->x);
        else
            lu_solve_s(s->lu, n, s->piv, s->b, s->x);
        s->products++;
    }
    return 0;
}

static void lin_corrupt(void *state)
{
    gemm_state *s = state;
    if (s->dp)
        ((double *)s->x)[0] += 1.0;
    else
        ((float *)s->x)[0] += 1.0f;
}

/* HPL's check on the original A and b. */
static int lin_verify(bk_ctx *ctx, void *state)
{
    gemm_state *s = state;
    int n = s->n;
    if (s->products == 0)
        return bk_fail(ctx, "no system was solved");
    double anorm = 0, xnorm = 0, bnorm = 0, rnorm = 0;
    for (int i = 0; i < n; i++) {
        long double r = -(long double)elem(s, s->b, (size_t)i);
        double rowsum = 0;
        for (int j = 0; j < n; j++) {
            double a = elem(s, s->a, (size_t)i * n + j);
            r += (long double)a * elem(s, s->x, (size_t)j);
            rowsum += fabs(a);
        }
        anorm = fmax(anorm, rowsum);
        rnorm = fmax(rnorm, fabs((double)r));
        xnorm = fmax(xnorm, fabs(elem(s, s->x, (size_t)i)));
        bnorm = fmax(bnorm, fabs(elem(s, s->b, (size_t)i)));
    }
    double eps = s->dp ? DBL_EPSILON / 2 : FLT_EPSILON / 2; /* HPL uses the unit roundoff */
    double resid = rnorm / (eps * (anorm * xnorm + bnorm) * n);
    bk_info_num(ctx, "scaled_residual", resid);
    bk_info_num(ctx, "residual_threshold", 16.0);
    bk_set_checksum(ctx, bk_fnv1a(BK_FNV_OFFSET, s->x, (size_t)n * (s->dp ? sizeof(double) : sizeof(float))));
    if (!(resid < 16.0))
        return bk_fail(ctx,
                       "HPL's scaled residual ||Ax-b|| / (eps (||A|| ||x|| + ||b||) n) is %.3g, above 16: "
                       "the solution is wrong",
                       resid);
    return 0;
}

const bk_kernel bk_compute_linpack = {
    .name = "compute.linpack",
    .family = "compute",
    .summary = "HPL's problem: blocked LU with partial pivoting, solve, scaled residual check (GFLOPS)",
    .params = lin_params,
    .metrics = lin_metrics,
    .init = lin_init,
    .run = lin_run,
    .corrupt = lin_corrupt,
    .verify = lin_verify,
};
