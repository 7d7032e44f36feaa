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

struct bk_ctx {
    const bk_kernel *k;
    int nparams;
    const char *text[BK_MAX_PARAMS];
    int64_t ival[BK_MAX_PARAMS];
    double fval[BK_MAX_PARAMS];
    int nmetrics;
    double amount[BK_MAX_METRICS];
    double value[BK_MAX_METRICS];
    bool value_set[BK_MAX_METRICS];
    bool skipped[BK_MAX_METRICS];
    char unsupported[512];
    int nphases;
    uint64_t phase_start[BK_MAX_PHASES];
    uint64_t phase_acc[BK_MAX_PHASES];
    char checksum[72];
    int ninfo;
    struct {
        char key[96];
        char str[256];
        double num;
        bool is_num;
    } info[BK_MAX_INFO];
    int nerrors;
    char errors[BK_MAX_ERRORS][512];
    bool bad_input; /* an error came from bk_bad_input: exit 2 */
};

/* ---- helpers offered to kernels ---- */

uint64_t bk_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

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

static int param_index(const bk_ctx *ctx, const char *name)
{
    for (int i = 0; i < ctx->nparams; i++)
        if (strcmp(ctx->k->params[i].name, name) == 0)
            return i;
    /* A kernel asking for a parameter it did not declare is a programming error: fail loudly. */
    fprintf(stderr, "boardlab-kern: internal error: kernel %s has no parameter '%s'\n", ctx->k->name, name);
    abort();
}

int64_t bk_arg_int(const bk_ctx *ctx, const char *name) { return ctx->ival[param_index(ctx, name)]; }
double bk_arg_float(const bk_ctx *ctx, const char *name) { return ctx->fval[param_index(ctx, name)]; }
const char *bk_arg_str(const bk_ctx *ctx, const char *name) { return ctx->text[param_index(ctx, name)]; }

static int metric_index(const bk_ctx *ctx, const char *name)
{
    for (int i = 0; i < ctx->nmetrics; i++)
        if (strcmp(ctx->k->metrics[i].name, name) == 0)
            return i;
    fprintf(stderr, "boardlab-kern: internal error: kernel %s has no metric '%s'\n", ctx->k->name, name);
    abort();
}

void bk_set_amount(bk_ctx *ctx, const char *metric, double amount_per_rep)
{
    ctx->amount[metric_index(ctx, metric)] = amount_per_rep;
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

void bk_set_checksum_hex(bk_ctx *ctx, const char *hex)
{
    snprintf(ctx->checksum, sizeof ctx->checksum, "%s", hex);
}

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

/* ---- parameters ---- */

const bk_kernel *bk_find_kernel(const char *name)
{
    for (int i = 0; bk_kernels[i]; i++)
        if (strcmp(bk_kernels[i]->name, name) == 0)
            return bk_kernels[i];
    return NULL;
}

int bk_count_params(const bk_kernel *k)
{
    int n = 0;
    while (k->params && k->params[n].name)
        n++;
    return n;
}

static int count_metrics(const bk_kernel *k)
{
    int n = 0;
    while (k->metrics && k->metrics[n].name)
        n++;
    return n;
}

static int count_phases(const bk_kernel *k)
{
    int n = 0;
    while (k->phases && k->phases[n])
        n++;
    return n;
}

static const char *type_name(bk_type t)
{
    switch (t) {
    case BK_INT: return "int";
    case BK_FLOAT: return "float";
    case BK_STR: return "str";
    case BK_ENUM: return "enum";
    }
    return "?";
}

/* "64k" -> 65536; suffixes are powers of 1024 because sizes are what they express. */
static bool parse_int(const char *s, int64_t *out)
{
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 0);
    if (end == s || errno)
        return false;
    int64_t mult = 1;
    if (*end == 'k' || *end == 'K')
        mult = 1024, end++;
    else if (*end == 'M')
        mult = 1024 * 1024, end++;
    else if (*end == 'G')
        mult = 1024LL * 1024 * 1024, end++;
    if (*end)
        return false;
    *out = (int64_t)v * mult;
    return true;
}

static bool enum_has(const char *choices, const char *value)
{
    size_t n = strlen(value);
    for (const char *p = choices; p && *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == n && strncmp(p, value, n) == 0)
            return true;
        p = comma ? comma + 1 : NULL;
    }
    return false;
}

/* Validates one value against its spec; prints the reason and returns false when it does not fit. */
static bool set_param(bk_ctx *ctx, int i, const char *text)
{
    const bk_param *p = &ctx->k->params[i];
    ctx->text[i] = text;
    switch (p->type) {
    case BK_INT: {
        int64_t v;
        if (!parse_int(text, &v)) {
            fprintf(stderr, "boardlab-kern: %s: parameter '%s' expects an integer (k/M/G suffixes allowed), got '%s'\n",
                    ctx->k->name, p->name, text);
            return false;
        }
        if ((double)v < p->min || (double)v > p->max) {
            fprintf(stderr, "boardlab-kern: %s: parameter '%s'=%" PRId64 " is out of range [%.0f, %.0f]\n",
                    ctx->k->name, p->name, v, p->min, p->max);
            return false;
        }
        ctx->ival[i] = v;
        ctx->fval[i] = (double)v;
        return true;
    }
    case BK_FLOAT: {
        char *end;
        errno = 0;
        double v = strtod(text, &end);
        if (end == text || *end || errno || !isfinite(v)) {
            fprintf(stderr, "boardlab-kern: %s: parameter '%s' expects a number, got '%s'\n", ctx->k->name,
                    p->name, text);
            return false;
        }
        if (v < p->min || v > p->max) {
            fprintf(stderr, "boardlab-kern: %s: parameter '%s'=%g is out of range [%g, %g]\n", ctx->k->name,
                    p->name, v, p->min, p->max);
            return false;
        }
        ctx->fval[i] = v;
        ctx->ival[i] = (int64_t)v;
        return true;
    }
    case BK_ENUM:
        if (!enum_has(p->choices, text)) {
            fprintf(stderr, "boardlab-kern: %s: parameter '%s' must be one of %s, got '%s'\n", ctx->k->name,
                    p->name, p->choices, text);
            return false;
        }
        return true;
    case BK_STR:
        return true;
    }
    return false;
}

static bool parse_assignments(bk_ctx *ctx, char **assignments, int nassign)
{
    for (int i = 0; i < ctx->nparams; i++)
        if (!set_param(ctx, i, ctx->k->params[i].def))
            return false; /* a bad default is a bug, but say so rather than run */
    for (int a = 0; a < nassign; a++) {
        char *eq = strchr(assignments[a], '=');
        if (!eq) {
            fprintf(stderr, "boardlab-kern: %s: --param expects NAME=VALUE, got '%s'\n", ctx->k->name, assignments[a]);
            return false;
        }
        *eq = '\0';
        int found = -1;
        for (int i = 0; i < ctx->nparams; i++)
            if (strcmp(ctx->k->params[i].name, assignments[a]) == 0)
                found = i;
        if (found < 0) {
            fprintf(stderr, "boardlab-kern: %s: unknown parameter '%s'; valid parameters:", ctx->k->name,
                    assignments[a]);
            for (int i = 0; i < ctx->nparams; i++)
                fprintf(stderr, " %s", ctx->k->params[i].name);
            fprintf(stderr, "%s\n", ctx->nparams ? "" : " (none)");
            return false;
        }
        if (!set_param(ctx, found, eq + 1))
            return false;
    }
    return true;
}

/* ---- the spec, as printed by --list --json ---- */

void bk_json_kernel_spec(bk_json *j, const bk_kernel *k)
{
    const char *reason = k->supported ? k->supported() : NULL;
    bk_json_begin_object(j);
    bk_json_key(j, "name");
    bk_json_str(j, k->name);
    bk_json_key(j, "family");
    bk_json_str(j, k->family);
    bk_json_key(j, "summary");
    bk_json_str(j, k->summary);
    bk_json_key(j, "supported");
    bk_json_bool(j, reason == NULL);
    bk_json_key(j, "reason");
    bk_json_str(j, reason);
    bk_json_key(j, "params");
    bk_json_begin_array(j);
    for (int i = 0; k->params && k->params[i].name; i++) {
        const bk_param *p = &k->params[i];
        bk_json_begin_object(j);
        bk_json_key(j, "name");
        bk_json_str(j, p->name);
        bk_json_key(j, "type");
        bk_json_str(j, type_name(p->type));
        bk_json_key(j, "default");
        bk_json_str(j, p->def);
        if (p->type == BK_INT || p->type == BK_FLOAT) {
            bk_json_key(j, "min");
            bk_json_num(j, p->min);
            bk_json_key(j, "max");
            bk_json_num(j, p->max);
        }
        if (p->type == BK_ENUM) {
            bk_json_key(j, "choices");
            bk_json_begin_array(j);
            char buf[512];
            snprintf(buf, sizeof buf, "%s", p->choices);
            for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
                bk_json_str(j, tok);
            bk_json_end_array(j);
        }
        bk_json_key(j, "unit");
        bk_json_str(j, p->unit);
        bk_json_key(j, "help");
        bk_json_str(j, p->help);
        bk_json_end_object(j);
    }
    bk_json_end_array(j);
    bk_json_key(j, "metrics");
    bk_json_begin_array(j);
    for (int i = 0; k->metrics && k->metrics[i].name; i++) {
        const bk_metric *m = &k->metrics[i];
        static const char *kinds[] = {"rate", "time", "value", "mean"};
        bk_json_begin_object(j);
        bk_json_key(j, "name");
        bk_json_str(j, m->name);
        bk_json_key(j, "unit");
        bk_json_str(j, m->unit);
        bk_json_key(j, "higher_is_better");
        bk_json_bool(j, m->higher_is_better);
        bk_json_key(j, "kind");
        bk_json_str(j, kinds[m->kind]);
        bk_json_key(j, "phase");
        bk_json_str(j, m->phase >= 0 ? k->phases[m->phase] : NULL);
        bk_json_key(j, "help");
        bk_json_str(j, m->help);
        bk_json_end_object(j);
    }
    bk_json_end_array(j);
    bk_json_key(j, "phases");
    bk_json_begin_array(j);
    for (int i = 0; k->phases && k->phases[i]; i++)
        bk_json_str(j, k->phases[i]);
    bk_json_end_array(j);
    bk_json_end_object(j);
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

static double median_sorted(const double *s, int n)
{
    return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

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

static uint64_t process_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* For calibration: the shorter of wall time and process CPU time. A CPU shared with other processes
 * stretches wall time but not CPU time, so this does not pick too few reps on a busy board; a
 * multi-threaded kernel uses more CPU time than wall time, so there wall time decides. */
static uint64_t time_iteration_undisturbed(bk_ctx *ctx, void *state, uint64_t reps, int *rc)
{
    uint64_t c0 = process_cpu_ns();
    uint64_t wall = 0;
    memset(ctx->phase_acc, 0, sizeof ctx->phase_acc);
    uint64_t t0 = bk_now_ns();
    *rc = ctx->k->run(ctx, state, reps);
    wall = bk_now_ns() - t0;
    uint64_t cpu = process_cpu_ns() - c0;
    return cpu < wall && !ctx->k->calibrate_on_wall ? cpu : wall;
}

static uint64_t time_iteration(bk_ctx *ctx, void *state, uint64_t reps, int *rc)
{
    memset(ctx->phase_acc, 0, sizeof ctx->phase_acc);
    uint64_t t0 = bk_now_ns();
    *rc = ctx->k->run(ctx, state, reps);
    return bk_now_ns() - t0;
}

static double metric_value(const bk_ctx *ctx, int m, uint64_t ns, uint64_t reps)
{
    const bk_metric *spec = &ctx->k->metrics[m];
    double seconds = (double)ns * 1e-9;
    switch (spec->kind) {
    case BK_RATE:
        return seconds > 0 ? ctx->amount[m] * (double)reps * spec->scale / seconds : NAN;
    case BK_TIME:
        return ctx->amount[m] > 0 ? (double)ns * spec->scale / ((double)reps * ctx->amount[m]) : NAN;
    case BK_VALUE:
        return ctx->value_set[m] ? ctx->value[m] : NAN;
    case BK_MEAN:
        return NAN; /* needs every rate of the iteration: see mean_of_rates */
    }
    return NAN;
}

static uint64_t metric_ns(const bk_ctx *ctx, const bk_metric *spec, const uint64_t *iter_ns, const uint64_t *phase_ns,
                          int i)
{
    return spec->phase >= 0 ? phase_ns[(size_t)i * (size_t)ctx->nphases + (size_t)spec->phase] : iter_ns[i];
}

/* Value of metric m in iteration i, for every kind. */
static double iteration_value(const bk_ctx *ctx, int m, const uint64_t *iter_ns, const uint64_t *phase_ns, int i,
                              uint64_t reps)
{
    const bk_metric *spec = &ctx->k->metrics[m];
    if (spec->kind != BK_MEAN)
        return metric_value(ctx, m, metric_ns(ctx, spec, iter_ns, phase_ns, i), reps);
    double sum = 0;
    int n = 0;
    for (int r = 0; r < ctx->nmetrics; r++)
        if (ctx->k->metrics[r].kind == BK_RATE && !ctx->skipped[r]) {
            sum += metric_value(ctx, r, metric_ns(ctx, &ctx->k->metrics[r], iter_ns, phase_ns, i), reps);
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

static void json_summary(bk_json *j, double *vals, int n)
{
    double *s = malloc(sizeof(double) * (size_t)(n ? n : 1));
    int m = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(vals[i]))
            s[m++] = vals[i];
    qsort(s, (size_t)m, sizeof(double), cmp_double);
    const char *keys[] = {"median", "min", "max", "p90", "p99"};
    for (int i = 0; i < 5; i++) {
        bk_json_key(j, keys[i]);
        if (m == 0) {
            bk_json_null(j);
            continue;
        }
        double v = i == 0 ? median_sorted(s, m) : i == 1 ? s[0] : i == 2 ? s[m - 1] : nearest_rank(s, m, i == 3 ? 90 : 99);
        bk_json_num(j, v);
    }
    free(s);
}

int bk_run_kernel(const bk_kernel *k, char **assignments, int nassign, const bk_options *opt)
{
    bk_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return 1;
    ctx->k = k;
    ctx->nparams = bk_count_params(k);
    ctx->nmetrics = count_metrics(k);
    ctx->nphases = count_phases(k);
    if (ctx->nparams > BK_MAX_PARAMS || ctx->nmetrics > BK_MAX_METRICS || ctx->nphases > BK_MAX_PHASES) {
        fprintf(stderr, "boardlab-kern: internal error: kernel %s declares too many params/metrics/phases\n", k->name);
        free(ctx);
        return 1;
    }
    if (!parse_assignments(ctx, assignments, nassign)) {
        free(ctx);
        return 2;
    }
    const char *reason = k->supported ? k->supported() : NULL;
    if (reason)
        snprintf(ctx->unsupported, sizeof ctx->unsupported, "%s", reason);

    uint64_t wall0 = bk_now_ns();
    bk_timer timer = timer_selftest();
    double target_ns = opt->min_iteration_ms * 1e6;
    double res = timer.measured_resolution_ns > timer.resolution_ns ? timer.measured_resolution_ns : timer.resolution_ns;
    if (100 * res > target_ns)
        target_ns = 100 * res;
    if (2 * timer.overhead_ns * 20 > target_ns) /* two reads per iteration stay under 5% */
        target_ns = 2 * timer.overhead_ns * 20;

    void *state = NULL;
    int rc = ctx->unsupported[0] ? -1 : k->init ? k->init(ctx, &state) : 0;
    uint64_t reps = k->fixed_reps ? k->fixed_reps : 1;
    uint64_t calibration_ns = 0;
    int n = opt->iterations, warm = 0;
    bool capped = false;
    double warm_cv = NAN;
    uint64_t warm_ns = 0;
    uint64_t *iter_ns = calloc((size_t)n, sizeof(uint64_t));
    uint64_t *phase_ns = calloc((size_t)n * (size_t)(ctx->nphases ? ctx->nphases : 1), sizeof(uint64_t));
    int done = 0;

    if (rc == 0 && !k->fixed_reps && !k->serve) {
        /* Grow reps until one iteration lasts at least the target. */
        uint64_t c0 = bk_now_ns();
        for (;;) {
            uint64_t t = time_iteration_undisturbed(ctx, state, reps, &rc);
            if (rc == 0 && (double)t >= target_ns) {
                /* A preempted iteration looks long: confirm with a second one and trust the shorter. */
                uint64_t t2 = time_iteration_undisturbed(ctx, state, reps, &rc);
                t = t2 < t ? t2 : t;
            }
            if (rc != 0 || (double)t >= target_ns || reps >= (1ULL << 40))
                break;
            double grow = t > 0 ? target_ns * 1.25 / (double)t : 10.0;
            if (grow > 10.0)
                grow = 10.0;
            uint64_t next = (uint64_t)ceil((double)reps * grow);
            reps = next > reps ? next : reps + 1;
        }
        calibration_ns = bk_now_ns() - c0;
    }

    if (rc == 0 && k->serve)
        rc = k->serve(ctx, state);
    else if (rc == 0 && opt->warmup_max_iterations > 0) {
        /* Warm up until the CV of the last 10 iterations is small enough, within the caps. */
        uint64_t *w = calloc((size_t)opt->warmup_max_iterations, sizeof(uint64_t));
        uint64_t w0 = bk_now_ns();
        for (;;) {
            w[warm] = time_iteration(ctx, state, reps, &rc);
            warm++;
            if (rc != 0)
                break;
            if (warm >= 10) {
                warm_cv = cv_of(w + warm - 10, 10);
                if (warm_cv <= opt->warmup_cv)
                    break;
            }
            if (warm >= opt->warmup_max_iterations || (double)(bk_now_ns() - w0) >= opt->warmup_max_ms * 1e6) {
                capped = true;
                break;
            }
        }
        warm_ns = bk_now_ns() - w0;
        free(w);
    }

    /* Counters cover exactly the measured iterations (opened before, so opening is not counted). */
    bk_counters counters = {0};
    if (opt->counters) {
        counters = *opt->counters;
        bk_counters_open(&counters);
        if (rc == 0)
            bk_counters_start(&counters);
    }
    for (; rc == 0 && !k->serve && done < n; done++) {
        iter_ns[done] = time_iteration(ctx, state, reps, &rc);
        for (int p = 0; p < ctx->nphases; p++)
            phase_ns[(size_t)done * (size_t)ctx->nphases + (size_t)p] = ctx->phase_acc[p];
    }
    if (opt->counters) {
        if (done > 0)
            bk_counters_stop(&counters);
        bk_counters_close(&counters);
    }
    if (rc != 0 && ctx->nerrors == 0 && !ctx->unsupported[0])
        bk_fail(ctx, "kernel %s failed while running", k->name);

    bool verified = false;
    if (rc == 0) {
        if (opt->corrupt && k->corrupt)
            k->corrupt(state);
        else if (opt->corrupt)
            bk_fail(ctx, "kernel %s cannot corrupt its result (no corrupt hook)", k->name);
        if (k->verify(ctx, state) == 0 && ctx->nerrors == 0)
            verified = true;
        else if (ctx->nerrors == 0)
            bk_fail(ctx, "verification of %s failed: the result is wrong", k->name);
    }
    for (int m = 0; m < ctx->nmetrics; m++)
        if (verified && (k->metrics[m].kind == BK_RATE || k->metrics[m].kind == BK_TIME) && !ctx->skipped[m] &&
            !(ctx->amount[m] > 0))
            bk_fail(ctx, "internal error: kernel %s set no amount for metric %s", k->name, k->metrics[m].name);
    bool ok = verified && ctx->nerrors == 0;
    uint64_t wall_ns = bk_now_ns() - wall0;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    long hwm = vm_hwm_kib();

    if (opt->json) {
        bk_json j;
        bk_json_init(&j, stdout);
        bk_json_begin_object(&j);
        bk_json_key(&j, "schema");
        bk_json_int(&j, BK_RESULT_SCHEMA);
        bk_json_key(&j, "tool");
        bk_json_str(&j, "boardlab-kern");
        bk_json_key(&j, "version");
        bk_json_str(&j, BK_VERSION);
        bk_json_key(&j, "workload");
        bk_json_str(&j, k->name);
        bk_json_key(&j, "family");
        bk_json_str(&j, k->family);
        bk_json_key(&j, "params");
        bk_json_begin_object(&j);
        for (int i = 0; i < ctx->nparams; i++) {
            bk_json_key(&j, k->params[i].name);
            if (k->params[i].type == BK_INT)
                bk_json_int(&j, ctx->ival[i]);
            else if (k->params[i].type == BK_FLOAT)
                bk_json_num(&j, ctx->fval[i]);
            else
                bk_json_str(&j, ctx->text[i]);
        }
        bk_json_end_object(&j);
        bk_json_key(&j, "ok");
        bk_json_bool(&j, ok);
        bk_json_key(&j, "supported");
        bk_json_bool(&j, !ctx->unsupported[0]);
        bk_json_key(&j, "reason");
        bk_json_str(&j, ctx->unsupported[0] ? ctx->unsupported : NULL);
        bk_json_key(&j, "verified");
        bk_json_bool(&j, verified);
        bk_json_key(&j, "errors");
        bk_json_begin_array(&j);
        for (int i = 0; i < ctx->nerrors; i++)
            bk_json_str(&j, ctx->errors[i]);
        bk_json_end_array(&j);
        bk_json_key(&j, "timer");
        bk_json_begin_object(&j);
        bk_json_key(&j, "clock");
        bk_json_str(&j, "CLOCK_MONOTONIC_RAW");
        bk_json_key(&j, "resolution_ns");
        bk_json_num(&j, timer.resolution_ns);
        bk_json_key(&j, "measured_resolution_ns");
        bk_json_num(&j, timer.measured_resolution_ns);
        bk_json_key(&j, "overhead_ns");
        bk_json_num(&j, timer.overhead_ns);
        bk_json_end_object(&j);
        bk_json_key(&j, "iteration_target_ns");
        bk_json_num(&j, target_ns);
        bk_json_key(&j, "reps_per_iteration");
        bk_json_uint(&j, reps);
        bk_json_key(&j, "calibration_ns");
        bk_json_uint(&j, calibration_ns);
        bk_json_key(&j, "warmup");
        bk_json_begin_object(&j);
        bk_json_key(&j, "iterations");
        bk_json_int(&j, warm);
        bk_json_key(&j, "capped");
        bk_json_bool(&j, capped);
        bk_json_key(&j, "cv");
        bk_json_num(&j, warm_cv);
        bk_json_key(&j, "cv_target");
        bk_json_num(&j, opt->warmup_cv);
        bk_json_key(&j, "duration_ns");
        bk_json_uint(&j, warm_ns);
        bk_json_end_object(&j);
        bk_json_key(&j, "iterations_ns");
        bk_json_begin_array(&j);
        for (int i = 0; i < done; i++)
            bk_json_uint(&j, iter_ns[i]);
        bk_json_end_array(&j);
        bk_json_key(&j, "phases_ns");
        bk_json_begin_object(&j);
        for (int p = 0; p < ctx->nphases; p++) {
            bk_json_key(&j, k->phases[p]);
            bk_json_begin_array(&j);
            for (int i = 0; i < done; i++)
                bk_json_uint(&j, phase_ns[(size_t)i * (size_t)ctx->nphases + (size_t)p]);
            bk_json_end_array(&j);
        }
        bk_json_end_object(&j);
        bk_json_key(&j, "metrics");
        bk_json_begin_object(&j);
        double *vals = malloc(sizeof(double) * (size_t)(done ? done : 1));
        for (int m = 0; m < ctx->nmetrics && ok; m++) {
            const bk_metric *spec = &k->metrics[m];
            if (ctx->skipped[m])
                continue;
            bk_json_key(&j, spec->name);
            bk_json_begin_object(&j);
            bk_json_key(&j, "unit");
            bk_json_str(&j, spec->unit);
            bk_json_key(&j, "higher_is_better");
            bk_json_bool(&j, spec->higher_is_better);
            if (spec->kind == BK_VALUE) {
                bk_json_key(&j, "value");
                bk_json_num(&j, metric_value(ctx, m, 0, reps));
            } else {
                bk_json_key(&j, "values");
                bk_json_begin_array(&j);
                for (int i = 0; i < done; i++) {
                    vals[i] = iteration_value(ctx, m, iter_ns, phase_ns, i, reps);
                    bk_json_num(&j, vals[i]);
                }
                bk_json_end_array(&j);
                json_summary(&j, vals, done);
            }
            bk_json_end_object(&j);
        }
        free(vals);
        bk_json_end_object(&j);
        if (opt->counters) {
            bk_json_key(&j, "counters");
            bk_counters_json(&counters, &j);
        }
        bk_json_key(&j, "checksum");
        bk_json_str(&j, ctx->checksum[0] ? ctx->checksum : NULL);
        if (k->serve_json && state) {
            bk_json_key(&j, "service");
            k->serve_json(state, &j);
        }
        bk_json_key(&j, "info");
        bk_json_begin_object(&j);
        for (int i = 0; i < ctx->ninfo; i++) {
            bk_json_key(&j, ctx->info[i].key);
            if (ctx->info[i].is_num)
                bk_json_num(&j, ctx->info[i].num);
            else
                bk_json_str(&j, ctx->info[i].str);
        }
        bk_json_end_object(&j);
        bk_json_key(&j, "rusage");
        bk_json_begin_object(&j);
        bk_json_key(&j, "utime_us");
        bk_json_int(&j, (int64_t)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec);
        bk_json_key(&j, "stime_us");
        bk_json_int(&j, (int64_t)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec);
        bk_json_key(&j, "maxrss_kib");
        bk_json_int(&j, ru.ru_maxrss);
        bk_json_key(&j, "vm_hwm_kib");
        bk_json_int(&j, hwm);
        bk_json_key(&j, "minflt");
        bk_json_int(&j, ru.ru_minflt);
        bk_json_key(&j, "majflt");
        bk_json_int(&j, ru.ru_majflt);
        bk_json_key(&j, "nvcsw");
        bk_json_int(&j, ru.ru_nvcsw);
        bk_json_key(&j, "nivcsw");
        bk_json_int(&j, ru.ru_nivcsw);
        bk_json_end_object(&j);
        bk_json_key(&j, "wall_ns");
        bk_json_uint(&j, wall_ns);
        bk_json_end_object(&j);
        fputc('\n', stdout);
    } else {
        if (ctx->unsupported[0])
            printf("%s: unsupported here: %s\n", k->name, ctx->unsupported);
        else
            printf("%s: %s\n", k->name, ok ? "ok" : "FAILED");
        printf("  timer: resolution %.0f ns (measured %.0f ns), overhead %.1f ns per read\n", timer.resolution_ns,
               timer.measured_resolution_ns, timer.overhead_ns);
        if (!k->serve) /* a service role has no iterations: its result is in the metrics */
            printf("  %" PRIu64 " reps per iteration, warm-up %d iterations%s, %d measured iterations\n", reps, warm,
                   capped ? " (capped)" : "", done);
        double *vals = malloc(sizeof(double) * (size_t)(done ? done : 1));
        for (int m = 0; m < ctx->nmetrics && ok; m++) {
            const bk_metric *spec = &k->metrics[m];
            if (ctx->skipped[m])
                continue;
            if (spec->kind == BK_VALUE) {
                printf("  %-28s %14.6g %s\n", spec->name, metric_value(ctx, m, 0, reps), spec->unit);
                continue;
            }
            int c = 0;
            for (int i = 0; i < done; i++)
                vals[c++] = iteration_value(ctx, m, iter_ns, phase_ns, i, reps);
            qsort(vals, (size_t)c, sizeof(double), cmp_double);
            printf("  %-28s %14.6g %s (median of %d; min %.6g, max %.6g)\n", spec->name,
                   c ? median_sorted(vals, c) : NAN, spec->unit, c, c ? vals[0] : NAN, c ? vals[c - 1] : NAN);
        }
        free(vals);
        if (opt->counters)
            bk_counters_print(&counters, stdout);
        for (int i = 0; i < ctx->nerrors; i++)
            printf("  error: %s\n", ctx->errors[i]);
    }
    fflush(stdout);
    if (k->fini && state)
        k->fini(state);
    free(iter_ns);
    free(phase_ns);
    if (ctx->unsupported[0] && !opt->json)
        fprintf(stderr, "boardlab-kern: %s is unsupported here: %s\n", k->name, ctx->unsupported);
    int code = ok ? 0 : ctx->bad_input ? 2 : 1;
    free(ctx);
    return code;
}
