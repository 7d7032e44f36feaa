/* The timing core shared by every kernel: parameters, timer self-test, calibration, warm-up,
 * measured iterations, verification and the versioned JSON result. */
#include "core_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* ---- helpers offered to kernels ---- */

uint64_t bk_now_ns(void) { return bk_clock_ns(CLOCK_MONOTONIC_RAW); }

void bk_phase_begin(bk_ctx *ctx, int phase)
{
    if (phase >= 0 && phase < ctx->nphases)
        ctx->phase_start[phase] = bk_now_ns();
}

void bk_phase_end(bk_ctx *ctx, int phase)
{
    if (phase >= 0 && phase < ctx->nphases)
        ctx->phase_acc[phase] += bk_now_ns() - ctx->phase_start[phase];
}

/* A kernel asking for a parameter or metric it did not declare is a programming error: fail loudly. */
static _Noreturn void undeclared(const bk_ctx *ctx, const char *what, const char *name)
{
    fprintf(stderr, "boardlab-kern: internal error: kernel %s has no %s '%s'\n", ctx->k->name, what, name);
    abort();
}

static int param_index(const bk_ctx *ctx, const char *name)
{
    for (int i = 0; i < ctx->nparams; i++)
        if (strcmp(ctx->k->params[i].name, name) == 0)
            return i;
    undeclared(ctx, "parameter", name);
}

int64_t bk_arg_int(const bk_ctx *ctx, const char *name) { return ctx->ival[param_index(ctx, name)]; }
double bk_arg_float(const bk_ctx *ctx, const char *name) { return ctx->fval[param_index(ctx, name)]; }
const char *bk_arg_str(const bk_ctx *ctx, const char *name) { return ctx->text[param_index(ctx, name)]; }

static int metric_index(const bk_ctx *ctx, const char *name)
{
    for (int i = 0; i < ctx->nmetrics; i++)
        if (strcmp(ctx->k->metrics[i].name, name) == 0)
            return i;
    undeclared(ctx, "metric", name);
}

void bk_set_amount(bk_ctx *ctx, const char *metric, double amount_per_rep)
{
    ctx->amount[metric_index(ctx, metric)] = amount_per_rep;
}

void bk_set_iteration_amount(bk_ctx *ctx, const char *metric, double amount)
{
    ctx->iter_amount[metric_index(ctx, metric)] = amount;
}

void bk_set_value(bk_ctx *ctx, const char *metric, double value)
{
    int i = metric_index(ctx, metric);
    ctx->value[i] = value;
    ctx->value_set[i] = true;
}

void bk_skip_metric(bk_ctx *ctx, const char *metric, const char *reason)
{
    ctx->skipped[metric_index(ctx, metric)] = true;
    char key[96];
    snprintf(key, sizeof key, "%s_unavailable", metric);
    bk_info_str(ctx, key, reason);
}

int bk_unsupported(bk_ctx *ctx, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->unsupported, sizeof ctx->unsupported, fmt, ap);
    va_end(ap);
    return -1;
}

void bk_set_checksum(bk_ctx *ctx, uint64_t checksum)
{
    snprintf(ctx->checksum, sizeof ctx->checksum, "%016" PRIx64, checksum);
}

void bk_set_checksum_hex(bk_ctx *ctx, const char *hex) { snprintf(ctx->checksum, sizeof ctx->checksum, "%s", hex); }

static int info_slot(bk_ctx *ctx, const char *key)
{
    for (int i = 0; i < ctx->ninfo; i++)
        if (strcmp(ctx->info[i].key, key) == 0)
            return i;
    if (ctx->ninfo == BK_MAX_INFO)
        return -1;
    snprintf(ctx->info[ctx->ninfo].key, sizeof ctx->info[0].key, "%s", key);
    return ctx->ninfo++;
}

void bk_info_str(bk_ctx *ctx, const char *key, const char *value)
{
    int i = info_slot(ctx, key);
    if (i < 0)
        return;
    snprintf(ctx->info[i].str, sizeof ctx->info[i].str, "%s", value ? value : "");
    ctx->info[i].is_num = false;
}

void bk_info_num(bk_ctx *ctx, const char *key, double value)
{
    int i = info_slot(ctx, key);
    if (i < 0)
        return;
    ctx->info[i].num = value;
    ctx->info[i].is_num = true;
}

/* Appends one error (beyond BK_MAX_ERRORS it is dropped: the first ones name the cause). */
static void add_error(bk_ctx *ctx, const char *fmt, va_list ap)
{
    if (ctx->nerrors < BK_MAX_ERRORS) {
        vsnprintf(ctx->errors[ctx->nerrors], sizeof ctx->errors[0], fmt, ap);
        ctx->nerrors++;
    }
}

int bk_fail(bk_ctx *ctx, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    add_error(ctx, fmt, ap);
    va_end(ap);
    return -1;
}

int bk_bad_input(bk_ctx *ctx, const char *fmt, ...)
{
    ctx->bad_input = true;
    va_list ap;
    va_start(ap, fmt);
    add_error(ctx, fmt, ap);
    va_end(ap);
    return -1;
}

int bk_record_kat(bk_ctx *ctx, int vectors)
{
    bk_info_str(ctx, "kat", vectors > 0 ? "pass" : "fail");
    if (vectors < 0)
        return -1;
    bk_info_num(ctx, "kat_vectors", vectors);
    return 0;
}

int bk_verify_chain(bk_ctx *ctx, const char *what, uint64_t end, uint64_t expected, uint64_t steps,
                    const char *step_unit)
{
    bk_set_checksum(ctx, end);
    return end == expected
               ? 0
               : bk_fail(ctx, "%s ended at %llx after %llu %s, expected %llx", what, (unsigned long long)end,
                         (unsigned long long)steps, step_unit, (unsigned long long)expected);
}

int bk_allowed_cpus(int *cpus, int max)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return 0;
    int n = 0;
    for (int c = 0; c < CPU_SETSIZE && n < max; c++)
        if (CPU_ISSET(c, &set))
            cpus[n++] = c;
    return n;
}

int bk_pin_thread_to_cpu(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

uint64_t bk_rand_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

double bk_rand_unit(uint64_t *state) { return (double)(bk_rand_next(state) >> 11) * 0x1.0p-53; }

uint64_t bk_fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

void *bk_alloc(size_t bytes)
{
    void *p = NULL;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (posix_memalign(&p, page, bytes ? bytes : 1) != 0)
        return NULL;
    memset(p, 0, bytes);
    return p;
}

void *bk_run_alloc(bk_ctx *ctx, size_t bytes, const char *what)
{
    if (ctx->nowned == ctx->owned_cap) {
        size_t cap = ctx->owned_cap ? 2 * ctx->owned_cap : 16;
        void **grown = realloc(ctx->owned, cap * sizeof *grown);
        if (!grown) {
            bk_fail(ctx, "out of memory for %s (%zu bytes)", what, bytes);
            return NULL;
        }
        ctx->owned = grown;
        ctx->owned_cap = cap;
    }
    void *p = bk_alloc(bytes);
    if (!p) {
        bk_fail(ctx, "out of memory for %s (%zu bytes)", what, bytes);
        return NULL;
    }
    ctx->owned[ctx->nowned++] = p;
    return p;
}

void *bk_run_state(bk_ctx *ctx, void **state, size_t bytes)
{
    *state = bk_run_alloc(ctx, bytes, "the kernel's state");
    return *state;
}

void bk_rand_bytes(void *dst, size_t n, uint64_t seed)
{
    unsigned char *p = dst;
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)bk_rand_next(&seed);
}

int bk_read_full(int fd, void *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, (char *)buf + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r == 0 && got == 0 ? 0 : -1;
        got += (size_t)r;
    }
    return 1;
}

int bk_write_full(int fd, const void *buf, size_t n)
{
    size_t put = 0;
    while (put < n) {
        ssize_t w = write(fd, (const char *)buf + put, n - put);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        put += (size_t)w;
    }
    return 0;
}

static void free_owned(bk_ctx *ctx)
{
    for (size_t i = 0; i < ctx->nowned; i++)
        free(ctx->owned[i]);
    free(ctx->owned);
}

/* ---- statistics used by the loop ---- */

static double cv_of(const uint64_t *x, int n)
{
    if (n < 2)
        return INFINITY;
    double mean = 0;
    for (int i = 0; i < n; i++)
        mean += (double)x[i];
    mean /= n;
    double ss = 0;
    for (int i = 0; i < n; i++)
        ss += ((double)x[i] - mean) * ((double)x[i] - mean);
    return mean > 0 ? sqrt(ss / (n - 1)) / mean : INFINITY;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile of a sorted array (q in (0, 100]). */
static double nearest_rank(const double *sorted, int n, double q)
{
    int rank = (int)ceil(q / 100.0 * n);
    if (rank < 1)
        rank = 1;
    if (rank > n)
        rank = n;
    return sorted[rank - 1];
}

static double median_sorted(const double *s, int n) { return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]); }

/* ---- timer self-test ---- */

typedef struct {
    double resolution_ns; /* clock_getres */
    double measured_resolution_ns; /* smallest nonzero step between successive reads */
    double overhead_ns; /* cost of one clock read */
} bk_timer;

static bk_timer timer_selftest(void)
{
    bk_timer t;
    struct timespec res;
    clock_getres(CLOCK_MONOTONIC_RAW, &res);
    t.resolution_ns = (double)res.tv_sec * 1e9 + (double)res.tv_nsec;
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 2000; i++) {
        uint64_t a = bk_now_ns(), b;
        do
            b = bk_now_ns();
        while (b == a);
        if (b - a < best)
            best = b - a;
    }
    t.measured_resolution_ns = (double)best;
    const int n = 100000;
    uint64_t start = bk_now_ns();
    for (int i = 0; i < n; i++)
        BK_KEEP(bk_now_ns());
    t.overhead_ns = (double)(bk_now_ns() - start) / n;
    return t;
}

/* ---- the run ---- */

/* What a kernel accumulates during one iteration starts from nothing: its phases, its own amounts. */
static void start_iteration(bk_ctx *ctx)
{
    memset(ctx->phase_acc, 0, sizeof ctx->phase_acc);
    for (int m = 0; m < ctx->nmetrics; m++)
        ctx->iter_amount[m] = NAN;
}

/* For calibration: the shorter of wall time and process CPU time. A CPU shared with other processes
 * stretches wall time but not CPU time, so this does not pick too few reps on a busy board; a
 * multi-threaded kernel uses more CPU time than wall time, so there wall time decides. */
static uint64_t time_iteration_undisturbed(bk_ctx *ctx, void *state, uint64_t reps, int *rc)
{
    uint64_t c0 = bk_clock_ns(CLOCK_PROCESS_CPUTIME_ID);
    uint64_t wall = 0;
    start_iteration(ctx);
    uint64_t t0 = bk_now_ns();
    *rc = ctx->k->run(ctx, state, reps);
    wall = bk_now_ns() - t0;
    uint64_t cpu = bk_clock_ns(CLOCK_PROCESS_CPUTIME_ID) - c0;
    return cpu < wall && !ctx->k->calibrate_on_wall ? cpu : wall;
}

static uint64_t time_iteration(bk_ctx *ctx, void *state, uint64_t reps, int *rc)
{
    start_iteration(ctx);
    uint64_t t0 = bk_now_ns();
    *rc = ctx->k->run(ctx, state, reps);
    return bk_now_ns() - t0;
}

/* A metric's value from an iteration's time; `total` is the iteration's own amount (NAN: amount x reps). */
static double metric_value(const bk_ctx *ctx, int m, uint64_t ns, uint64_t reps, double total)
{
    const bk_metric *spec = &ctx->k->metrics[m];
    double seconds = (double)ns * 1e-9;
    double amount = isnan(total) ? ctx->amount[m] * (double)reps : total;
    switch (spec->kind) {
    case BK_RATE: return seconds > 0 ? amount * spec->scale / seconds : NAN;
    case BK_TIME: return amount > 0 ? (double)ns * spec->scale / amount : NAN;
    case BK_VALUE: return ctx->value_set[m] ? ctx->value[m] : NAN;
    case BK_MEAN: return NAN; /* needs every rate of the iteration: see mean_of_rates */
    }
    return NAN;
}

static uint64_t metric_ns(const bk_ctx *ctx, const bk_metric *spec, const uint64_t *iter_ns, const uint64_t *phase_ns,
                          int i)
{
    return spec->phase >= 0 ? phase_ns[(size_t)i * (size_t)ctx->nphases + (size_t)spec->phase] : iter_ns[i];
}

/* Value of metric m in iteration i, for every kind; amounts holds each iteration's own amounts (NAN: none). */
static double iteration_value(const bk_ctx *ctx, int m, const uint64_t *iter_ns, const uint64_t *phase_ns,
                              const double *amounts, int i, uint64_t reps)
{
    const bk_metric *spec = &ctx->k->metrics[m];
    if (spec->kind != BK_MEAN)
        return metric_value(ctx, m, metric_ns(ctx, spec, iter_ns, phase_ns, i), reps,
                            amounts[(size_t)i * BK_MAX_METRICS + (size_t)m]);
    double sum = 0;
    int n = 0;
    for (int r = 0; r < ctx->nmetrics; r++)
        if (ctx->k->metrics[r].kind == BK_RATE && !ctx->skipped[r]) {
            sum += metric_value(ctx, r, metric_ns(ctx, &ctx->k->metrics[r], iter_ns, phase_ns, i), reps,
                                amounts[(size_t)i * BK_MAX_METRICS + (size_t)r]);
            n++;
        }
    return n ? sum / n : NAN;
}

static long vm_hwm_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    long kib = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %ld kB", &kib) == 1)
            break;
    fclose(f);
    return kib;
}

/* Summary of the finite values among vals[0..n) into the open JSON object; scratch holds n doubles. */
static void json_summary(bk_json *j, const double *vals, int n, double *scratch)
{
    int m = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(vals[i]))
            scratch[m++] = vals[i];
    qsort(scratch, (size_t)m, sizeof(double), cmp_double);
    const char *keys[] = {"median", "min", "max", "p90", "p99"};
    for (int i = 0; i < 5; i++) {
        bk_json_key(j, keys[i]);
        if (m == 0) {
            bk_json_null(j);
            continue;
        }
        const double *s = scratch;
        double v = i == 0   ? median_sorted(s, m)
                   : i == 1 ? s[0]
                   : i == 2 ? s[m - 1]
                            : nearest_rank(s, m, i == 3 ? 90 : 99);
        bk_json_num(j, v);
    }
}

/* One run of a kernel, step by step: what calibration, warm-up and measurement found, for the output. */
typedef struct {
    void *state;
    int rc; /* the kernel's: 0 while it runs well */
    bk_timer timer;
    double target_ns;
    uint64_t reps, calibration_ns, warm_ns, wall0, wall_ns;
    int n, warm, done;
    bool capped, verified, ok;
    double warm_cv;
    uint64_t *iter_ns, *phase_ns;
    double *vals, *scratch; /* one metric's value per iteration, and room to sort them */
    double *amounts; /* BK_MAX_METRICS per iteration: what bk_set_iteration_amount set, else NAN */
    bk_counters counters;
    struct rusage ru;
    long hwm;
} bk_run;

/* The shortest iteration worth timing: the option's or the kernel's own floor, at least 100 timer resolutions,
 * and long enough that the two clock reads of an iteration stay under 5% of it. */
static double iteration_target_ns(const bk_timer *timer, const bk_options *opt, const bk_kernel *k)
{
    double floor_ms = opt->min_iteration_ms > k->min_iteration_ms ? opt->min_iteration_ms : k->min_iteration_ms;
    double target_ns = floor_ms * 1e6;
    double res = timer->measured_resolution_ns > timer->resolution_ns ? timer->measured_resolution_ns
                                                                      : timer->resolution_ns;
    if (100 * res > target_ns)
        target_ns = 100 * res;
    if (2 * timer->overhead_ns * 20 > target_ns)
        target_ns = 2 * timer->overhead_ns * 20;
    return target_ns;
}

/* Every buffer of the run, allocated before the kernel starts, so that no result is lost to a late failure. */
static bool run_alloc(bk_run *r, const bk_ctx *ctx)
{
    size_t n = (size_t)(r->n ? r->n : 1);
    r->iter_ns = calloc(n, sizeof(uint64_t));
    r->phase_ns = calloc(n * (size_t)(ctx->nphases ? ctx->nphases : 1), sizeof(uint64_t));
    r->vals = calloc(n, sizeof(double));
    r->scratch = calloc(n, sizeof(double));
    r->amounts = calloc(n * BK_MAX_METRICS, sizeof(double));
    return r->iter_ns && r->phase_ns && r->vals && r->scratch && r->amounts;
}

static void run_free(bk_run *r)
{
    free(r->iter_ns);
    free(r->phase_ns);
    free(r->vals);
    free(r->scratch);
    free(r->amounts);
}

/* Grow the repetitions until one iteration lasts at least the target. */
static void calibrate(bk_run *r, bk_ctx *ctx)
{
    uint64_t c0 = bk_now_ns();
    for (;;) {
        uint64_t t = time_iteration_undisturbed(ctx, r->state, r->reps, &r->rc);
        if (r->rc == 0 && (double)t >= r->target_ns) {
            /* A preempted iteration looks long: confirm with a second one and trust the shorter. */
            uint64_t t2 = time_iteration_undisturbed(ctx, r->state, r->reps, &r->rc);
            t = t2 < t ? t2 : t;
        }
        if (r->rc != 0 || (double)t >= r->target_ns || r->reps >= (1ULL << 40))
            break;
        double grow = t > 0 ? r->target_ns * 1.25 / (double)t : 10.0;
        if (grow > 10.0)
            grow = 10.0;
        uint64_t next = (uint64_t)ceil((double)r->reps * grow);
        r->reps = next > r->reps ? next : r->reps + 1;
    }
    r->calibration_ns = bk_now_ns() - c0;
}

/* Warm up until the CV of the last 10 iterations is small enough, within the caps. */
static void warm_up(bk_run *r, bk_ctx *ctx, const bk_options *opt)
{
    uint64_t *w = calloc((size_t)opt->warmup_max_iterations, sizeof(uint64_t));
    if (!w) {
        r->rc = bk_fail(ctx, "out of memory for %d warm-up iterations", opt->warmup_max_iterations);
        return;
    }
    uint64_t w0 = bk_now_ns();
    for (;;) {
        w[r->warm] = time_iteration(ctx, r->state, r->reps, &r->rc);
        r->warm++;
        if (r->rc != 0)
            break;
        if (r->warm >= 10) {
            r->warm_cv = cv_of(w + r->warm - 10, 10);
            if (r->warm_cv <= opt->warmup_cv)
                break;
        }
        if (r->warm >= opt->warmup_max_iterations || (double)(bk_now_ns() - w0) >= opt->warmup_max_ms * 1e6) {
            r->capped = true;
            break;
        }
    }
    r->warm_ns = bk_now_ns() - w0;
    free(w);
}

/* The measured iterations; counters cover exactly them (opened before, so opening is not counted). */
static void measure(bk_run *r, bk_ctx *ctx, const bk_options *opt)
{
    if (opt->counters) {
        r->counters = *opt->counters;
        bk_counters_open(&r->counters);
        if (r->rc == 0)
            bk_counters_start(&r->counters);
    }
    for (; r->rc == 0 && !ctx->k->serve && r->done < r->n; r->done++) {
        r->iter_ns[r->done] = time_iteration(ctx, r->state, r->reps, &r->rc);
        for (int p = 0; p < ctx->nphases; p++)
            r->phase_ns[(size_t)r->done * (size_t)ctx->nphases + (size_t)p] = ctx->phase_acc[p];
        memcpy(r->amounts + (size_t)r->done * BK_MAX_METRICS, ctx->iter_amount, sizeof ctx->iter_amount);
    }
    if (opt->counters) {
        if (r->done > 0)
            bk_counters_stop(&r->counters);
        bk_counters_close(&r->counters);
    }
}

/* The kernel's own check of its result (after a planted corruption with --corrupt), and the amounts every
 * rate and time metric needs. */
static void verify_run(bk_run *r, bk_ctx *ctx, const bk_options *opt)
{
    const bk_kernel *k = ctx->k;
    if (r->rc != 0 && ctx->nerrors == 0 && !ctx->unsupported[0])
        bk_fail(ctx, "kernel %s failed while running", k->name);
    if (r->rc == 0) {
        if (opt->corrupt && k->corrupt)
            k->corrupt(r->state);
        else if (opt->corrupt)
            bk_fail(ctx, "kernel %s cannot corrupt its result (no corrupt hook)", k->name);
        if (k->verify(ctx, r->state) == 0 && ctx->nerrors == 0)
            r->verified = true;
        else if (ctx->nerrors == 0)
            bk_fail(ctx, "verification of %s failed: the result is wrong", k->name);
    }
    for (int m = 0; m < ctx->nmetrics; m++)
        if (r->verified && (k->metrics[m].kind == BK_RATE || k->metrics[m].kind == BK_TIME) && !ctx->skipped[m] &&
            !(ctx->amount[m] > 0))
            bk_fail(ctx, "internal error: kernel %s set no amount for metric %s", k->name, k->metrics[m].name);
    r->ok = r->verified && ctx->nerrors == 0;
}

static void json_identity(bk_json *j, const bk_run *r, const bk_ctx *ctx)
{
    const bk_kernel *k = ctx->k;
    bk_json_kv_int(j, "schema", BK_RESULT_SCHEMA);
    bk_json_kv_str(j, "tool", "boardlab-kern");
    bk_json_kv_str(j, "version", BK_VERSION);
    bk_json_kv_str(j, "workload", k->name);
    bk_json_kv_str(j, "family", k->family);
    bk_json_key_object(j, "params");
    for (int i = 0; i < ctx->nparams; i++) {
        bk_json_key(j, k->params[i].name);
        if (k->params[i].type == BK_INT)
            bk_json_int(j, ctx->ival[i]);
        else if (k->params[i].type == BK_FLOAT)
            bk_json_num(j, ctx->fval[i]);
        else
            bk_json_str(j, ctx->text[i]);
    }
    bk_json_end_object(j);
    bk_json_kv_bool(j, "ok", r->ok);
    bk_json_kv_bool(j, "supported", !ctx->unsupported[0]);
    bk_json_kv_str(j, "reason", ctx->unsupported[0] ? ctx->unsupported : NULL);
    bk_json_kv_bool(j, "verified", r->verified);
    bk_json_key_array(j, "errors");
    for (int i = 0; i < ctx->nerrors; i++)
        bk_json_str(j, ctx->errors[i]);
    bk_json_end_array(j);
}

static void json_timing(bk_json *j, const bk_run *r, const bk_ctx *ctx, const bk_options *opt)
{
    bk_json_key_object(j, "timer");
    bk_json_kv_str(j, "clock", "CLOCK_MONOTONIC_RAW");
    bk_json_kv_num(j, "resolution_ns", r->timer.resolution_ns);
    bk_json_kv_num(j, "measured_resolution_ns", r->timer.measured_resolution_ns);
    bk_json_kv_num(j, "overhead_ns", r->timer.overhead_ns);
    bk_json_end_object(j);
    bk_json_kv_num(j, "iteration_target_ns", r->target_ns);
    bk_json_kv_uint(j, "reps_per_iteration", r->reps);
    bk_json_kv_uint(j, "calibration_ns", r->calibration_ns);
    bk_json_key_object(j, "warmup");
    bk_json_kv_int(j, "iterations", r->warm);
    bk_json_kv_bool(j, "capped", r->capped);
    bk_json_kv_num(j, "cv", r->warm_cv);
    bk_json_kv_num(j, "cv_target", opt->warmup_cv);
    bk_json_kv_uint(j, "duration_ns", r->warm_ns);
    bk_json_end_object(j);
    bk_json_key_array(j, "iterations_ns");
    for (int i = 0; i < r->done; i++)
        bk_json_uint(j, r->iter_ns[i]);
    bk_json_end_array(j);
    bk_json_key_object(j, "phases_ns");
    for (int p = 0; p < ctx->nphases; p++) {
        bk_json_key_array(j, ctx->k->phases[p]);
        for (int i = 0; i < r->done; i++)
            bk_json_uint(j, r->phase_ns[(size_t)i * (size_t)ctx->nphases + (size_t)p]);
        bk_json_end_array(j);
    }
    bk_json_end_object(j);
}

static void json_metrics(bk_json *j, const bk_run *r, const bk_ctx *ctx)
{
    bk_json_key_object(j, "metrics");
    for (int m = 0; m < ctx->nmetrics && r->ok; m++) {
        const bk_metric *spec = &ctx->k->metrics[m];
        if (ctx->skipped[m])
            continue;
        bk_json_key_object(j, spec->name);
        bk_json_kv_str(j, "unit", spec->unit);
        bk_json_kv_bool(j, "higher_is_better", spec->higher_is_better);
        if (spec->kind == BK_VALUE) {
            bk_json_kv_num(j, "value", metric_value(ctx, m, 0, r->reps, NAN));
        } else {
            bk_json_key_array(j, "values");
            for (int i = 0; i < r->done; i++) {
                r->vals[i] = iteration_value(ctx, m, r->iter_ns, r->phase_ns, r->amounts, i, r->reps);
                bk_json_num(j, r->vals[i]);
            }
            bk_json_end_array(j);
            json_summary(j, r->vals, r->done, r->scratch);
        }
        bk_json_end_object(j);
    }
    bk_json_end_object(j);
}

static void json_rusage(bk_json *j, const bk_run *r)
{
    const struct rusage *ru = &r->ru;
    bk_json_key_object(j, "rusage");
    bk_json_kv_int(j, "utime_us", (int64_t)ru->ru_utime.tv_sec * 1000000 + ru->ru_utime.tv_usec);
    bk_json_kv_int(j, "stime_us", (int64_t)ru->ru_stime.tv_sec * 1000000 + ru->ru_stime.tv_usec);
    bk_json_kv_int(j, "maxrss_kib", ru->ru_maxrss);
    bk_json_kv_int(j, "vm_hwm_kib", r->hwm);
    bk_json_kv_int(j, "minflt", ru->ru_minflt);
    bk_json_kv_int(j, "majflt", ru->ru_majflt);
    bk_json_kv_int(j, "nvcsw", ru->ru_nvcsw);
    bk_json_kv_int(j, "nivcsw", ru->ru_nivcsw);
    bk_json_end_object(j);
}

/* The worker result (docs/architecture.md "The worker result"), one JSON object on one line. */
static void emit_json(bk_run *r, const bk_ctx *ctx, const bk_options *opt)
{
    const bk_kernel *k = ctx->k;
    bk_json j;
    bk_json_init(&j, stdout);
    bk_json_begin_object(&j);
    json_identity(&j, r, ctx);
    json_timing(&j, r, ctx, opt);
    json_metrics(&j, r, ctx);
    if (opt->counters) {
        bk_json_key(&j, "counters");
        bk_counters_json(&r->counters, &j);
    }
    bk_json_kv_str(&j, "checksum", ctx->checksum[0] ? ctx->checksum : NULL);
    if (k->serve_json && r->state) {
        bk_json_key(&j, "service");
        k->serve_json(r->state, &j);
    }
    bk_json_key_object(&j, "info");
    for (int i = 0; i < ctx->ninfo; i++) {
        bk_json_key(&j, ctx->info[i].key);
        if (ctx->info[i].is_num)
            bk_json_num(&j, ctx->info[i].num);
        else
            bk_json_str(&j, ctx->info[i].str);
    }
    bk_json_end_object(&j);
    json_rusage(&j, r);
    bk_json_kv_uint(&j, "wall_ns", r->wall_ns);
    bk_json_end_object(&j);
    fputc('\n', stdout);
}

/* Decimals that give `v` six significant digits written without an exponent (11008100 paths/s, never
 * 1.10081e+07): a reader compares the human summary with the reports, which never use one. */
static int plain_decimals(double v)
{
    double a = fabs(v);
    if (!isfinite(a) || a == 0)
        return 0;
    int d = 5 - (int)floor(log10(a));
    return d < 0 ? 0 : d > 12 ? 12 : d;
}

/* The same result for a person: the verdict, the timer, and each metric's median with its range. */
static void emit_text(bk_run *r, const bk_ctx *ctx, const bk_options *opt)
{
    const bk_kernel *k = ctx->k;
    if (ctx->unsupported[0])
        printf("%s: unsupported here: %s\n", k->name, ctx->unsupported);
    else
        printf("%s: %s\n", k->name, r->ok ? "ok" : "FAILED");
    printf("  timer: resolution %.0f ns (measured %.0f ns), overhead %.1f ns per read\n", r->timer.resolution_ns,
           r->timer.measured_resolution_ns, r->timer.overhead_ns);
    if (!k->serve) /* a service role has no iterations: its result is in the metrics */
        printf("  %" PRIu64 " reps per iteration, warm-up %d iterations%s, %d measured iterations\n", r->reps, r->warm,
               r->capped ? " (capped)" : "", r->done);
    for (int m = 0; m < ctx->nmetrics && r->ok; m++) {
        const bk_metric *spec = &k->metrics[m];
        if (ctx->skipped[m])
            continue;
        if (spec->kind == BK_VALUE) {
            double v = metric_value(ctx, m, 0, r->reps, NAN);
            printf("  %-28s %14.*f %s\n", spec->name, plain_decimals(v), v, spec->unit);
            continue;
        }
        double *vals = r->vals;
        int c = 0;
        for (int i = 0; i < r->done; i++)
            vals[c++] = iteration_value(ctx, m, r->iter_ns, r->phase_ns, r->amounts, i, r->reps);
        qsort(vals, (size_t)c, sizeof(double), cmp_double);
        double med = c ? median_sorted(vals, c) : NAN, lo = c ? vals[0] : NAN, hi = c ? vals[c - 1] : NAN;
        printf("  %-28s %14.*f %s (median of %d; min %.*f, max %.*f)\n", spec->name, plain_decimals(med), med,
               spec->unit, c, plain_decimals(lo), lo, plain_decimals(hi), hi);
    }
    if (opt->counters)
        bk_counters_print(&r->counters, stdout);
    for (int i = 0; i < ctx->nerrors; i++)
        printf("  error: %s\n", ctx->errors[i]);
}

/* The context of one kernel run with its parameters parsed; NULL with *code set when it cannot start. */
static bk_ctx *new_context(const bk_kernel *k, char **assignments, int nassign, int *code)
{
    bk_ctx *ctx = calloc(1, sizeof *ctx);
    *code = 1;
    if (!ctx) {
        fprintf(stderr, "boardlab-kern: out of memory for the context of %s\n", k->name);
        return NULL;
    }
    ctx->k = k;
    ctx->nparams = bk_count_params(k);
    ctx->nmetrics = bk_count_metrics(k);
    ctx->nphases = bk_count_phases(k);
    if (ctx->nparams > BK_MAX_PARAMS || ctx->nmetrics > BK_MAX_METRICS || ctx->nphases > BK_MAX_PHASES) {
        fprintf(stderr, "boardlab-kern: internal error: kernel %s declares too many params/metrics/phases\n", k->name);
        free(ctx);
        return NULL;
    }
    if (!bk_parse_assignments(ctx, assignments, nassign)) {
        *code = 2;
        free(ctx);
        return NULL;
    }
    const char *reason = k->supported ? k->supported() : NULL;
    if (reason)
        snprintf(ctx->unsupported, sizeof ctx->unsupported, "%s", reason);
    return ctx;
}

/* calibrate, warm up, measure, verify, emit: one fresh run of a kernel, as its worker result. */
int bk_run_kernel(const bk_kernel *k, char **assignments, int nassign, const bk_options *opt)
{
    int code;
    bk_ctx *ctx = new_context(k, assignments, nassign, &code);
    if (!ctx)
        return code;
    bk_run r = {.n = opt->iterations, .reps = k->fixed_reps ? k->fixed_reps : 1, .warm_cv = NAN};
    r.wall0 = bk_now_ns();
    r.timer = timer_selftest();
    r.target_ns = iteration_target_ns(&r.timer, opt, k);
    if (!run_alloc(&r, ctx))
        r.rc = bk_fail(ctx, "out of memory for %d iterations of %s", r.n, k->name);
    else
        r.rc = ctx->unsupported[0] ? -1 : k->init ? k->init(ctx, &r.state) : 0;

    if (r.rc == 0 && !k->fixed_reps && !k->serve)
        calibrate(&r, ctx);
    if (r.rc == 0 && k->serve)
        r.rc = k->serve(ctx, r.state);
    else if (r.rc == 0 && opt->warmup_max_iterations > 0)
        warm_up(&r, ctx, opt);
    measure(&r, ctx, opt);
    verify_run(&r, ctx, opt);
    r.wall_ns = bk_now_ns() - r.wall0;
    getrusage(RUSAGE_SELF, &r.ru);
    r.hwm = vm_hwm_kib();

    if (opt->json)
        emit_json(&r, ctx, opt);
    else
        emit_text(&r, ctx, opt);
    fflush(stdout);
    if (k->fini && r.state)
        k->fini(r.state);
    free_owned(ctx);
    run_free(&r);
    if (ctx->unsupported[0] && !opt->json)
        fprintf(stderr, "boardlab-kern: %s is unsupported here: %s\n", k->name, ctx->unsupported);
    code = r.ok ? 0 : ctx->bad_input ? 2 : 1;
    free(ctx);
    return code;
}
