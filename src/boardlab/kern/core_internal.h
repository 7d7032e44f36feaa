/* Internals shared by core.c, params.c and main.c only; kernels include core.h. */
#ifndef BK_CORE_INTERNAL_H
#define BK_CORE_INTERNAL_H

#include "core.h"
#include "counters.h"
#include "json.h"

#define BK_MAX_PARAMS 32
#define BK_MAX_METRICS 16
#define BK_MAX_PHASES 8
#define BK_MAX_INFO 96 /* stream.pipeline reports six figures per stage */
#define BK_MAX_ERRORS 8

typedef struct {
    int iterations; /* measured iterations */
    int warmup_max_iterations; /* 0 disables warm-up */
    double warmup_max_ms;
    double warmup_cv; /* target coefficient of variation of the last 10 iterations */
    double min_iteration_ms;
    bool corrupt; /* damage the result before verification (tests of verification) */
    bool json;
    const bk_counters *counters; /* NULL: no --counters */
} bk_options;

/* One run's context: what a kernel declared and set; kernels see it only through core.h's functions. */
struct bk_ctx {
    const bk_kernel *k;
    int nparams;
    const char *text[BK_MAX_PARAMS];
    int64_t ival[BK_MAX_PARAMS];
    double fval[BK_MAX_PARAMS];
    int nmetrics;
    double amount[BK_MAX_METRICS];
    double iter_amount[BK_MAX_METRICS]; /* the running iteration's whole amount; NAN: amount x reps */
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
    void **owned; /* bk_run_alloc's blocks, freed after fini */
    size_t nowned, owned_cap;
};

BK_HIDDEN extern const bk_kernel *const bk_kernels[];

BK_HIDDEN const bk_kernel *bk_find_kernel(const char *name);
BK_HIDDEN int bk_count_params(const bk_kernel *k);
BK_HIDDEN int bk_count_metrics(const bk_kernel *k);
BK_HIDDEN int bk_count_phases(const bk_kernel *k);
/* Sets ctx's parameters from "name=value" strings and the defaults; false (with the error printed) on bad input. */
BK_HIDDEN bool bk_parse_assignments(bk_ctx *ctx, char **assignments, int nassign);
BK_HIDDEN void bk_json_kernel_spec(bk_json *j, const bk_kernel *k);
/* Runs one kernel once. `assignments` are "name=value" strings. Returns the process exit code. */
BK_HIDDEN int bk_run_kernel(const bk_kernel *k, char **assignments, int nassign, const bk_options *opt);

#endif
