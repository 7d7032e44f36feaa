/* boardlab-kern core: the contract between the timing core and every kernel.
 *
 * A kernel is one const descriptor (bk_kernel) in its family's file. The core parses and validates
 * parameters, calibrates how many repetitions make one timed iteration (>= 1 ms and >= 100x the timer
 * resolution), warms up until the CV of the last 10 iterations is <= 2% (docs/method.md), runs the measured
 * iterations, verifies the result and prints one versioned JSON object. Kernels hold no orchestration logic.
 */
#ifndef BK_CORE_H
#define BK_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "config.h"
#include "json.h"

#define BK_SCHEMA 1 /* the catalog (--list --json) */
/* a run's result; boardlab.model.worker_result.WORKER_SCHEMA in Python (2: the workload is in "workload") */
#define BK_RESULT_SCHEMA 2
#define BK_HIDDEN __attribute__((visibility("hidden")))

typedef enum { BK_INT, BK_FLOAT, BK_STR, BK_ENUM } bk_type;

/* A parameter: INT accepts k/M/G suffixes (powers of 1024); ENUM lists its choices comma-separated. */
typedef struct {
    const char *name;
    bk_type type;
    double min, max; /* inclusive range for INT and FLOAT */
    const char *def; /* default, as text */
    const char *choices; /* ENUM only: "a,b,c" */
    const char *unit;
    const char *help;
} bk_param;

/* How a metric's per-iteration value is derived from the iteration's (or phase's) time:
 *   BK_RATE:  amount_per_rep * reps * scale / seconds      (e.g. MB/s, MFLOPS)
 *   BK_TIME:  nanoseconds * scale / (reps * amount_per_rep) (e.g. ns per access)
 *   BK_VALUE: one value set by the kernel with bk_set_value (e.g. compression ratio), not per iteration
 *   BK_MEAN:  per iteration, the arithmetic mean of the kernel's BK_RATE metrics (e.g. SciMark composite) */
typedef enum { BK_RATE, BK_TIME, BK_VALUE, BK_MEAN } bk_metric_kind;

typedef struct {
    const char *name; /* with its unit in the name, e.g. "mflops", "ns_per_access", "compress_mb_s" */
    const char *unit;
    bool higher_is_better;
    bk_metric_kind kind;
    int phase; /* -1: the whole iteration; otherwise an index into the kernel's phases */
    double scale;
    const char *help;
} bk_metric;

typedef struct bk_ctx bk_ctx;

typedef struct bk_kernel {
    const char *name; /* "family.kernel", e.g. "scimark.fft" */
    const char *family;
    const char *summary;
    const bk_param *params; /* terminated by an entry with name == NULL */
    const bk_metric *metrics; /* terminated by an entry with name == NULL; the first is the primary one */
    const char *const *phases; /* NULL-terminated phase names, or NULL */
    /* NULL when always supported; otherwise returns NULL when supported or the reason it is not. */
    const char *(*supported)(void);
    int (*init)(bk_ctx *ctx, void **state); /* 0 ok, else call bk_fail() and return -1 */
    int (*run)(bk_ctx *ctx, void *state, uint64_t reps); /* the timed work: reps units of it */
    void (*corrupt)(void *state); /* damage the result so that verify must fail (tests) */
    int (*verify)(bk_ctx *ctx, void *state); /* 0 when the result is right; sets the checksum */
    void (*fini)(void *state);
    uint64_t fixed_reps; /* 0: calibrate; otherwise this many reps per iteration */
    bool calibrate_on_wall; /* the kernel sleeps or waits for I/O: calibrate on wall time, not CPU time */
    double min_iteration_ms; /* 0, or the shortest iteration this kernel can time well (raises --min-iteration-ms) */
    /* A service role (svc.*) is not a timed loop: when `serve` is set the core skips calibration, warm-up
     * and iterations, calls serve() once (it runs its own loop until its duration ends or SIGTERM/SIGINT),
     * then verify(); serve_json() writes the role's own versioned "service" object into the result. */
    int (*serve)(bk_ctx *ctx, void *state);
    void (*serve_json)(void *state, bk_json *j);
} bk_kernel;

/* Parameters, already validated against the spec. */
BK_HIDDEN int64_t bk_arg_int(const bk_ctx *ctx, const char *name);
BK_HIDDEN double bk_arg_float(const bk_ctx *ctx, const char *name);
BK_HIDDEN const char *bk_arg_str(const bk_ctx *ctx, const char *name);

/* Metrics and results. */
BK_HIDDEN void bk_set_amount(bk_ctx *ctx, const char *metric, double amount_per_rep);
/* Inside run(): the whole amount of this iteration, for a metric whose amount the kernel learns only as it
 * goes (the bytes a TCP peer acknowledged). It replaces amount_per_rep * reps for this iteration alone. */
BK_HIDDEN void bk_set_iteration_amount(bk_ctx *ctx, const char *metric, double amount);
BK_HIDDEN void bk_set_value(bk_ctx *ctx, const char *metric, double value);
BK_HIDDEN void bk_set_checksum(bk_ctx *ctx, uint64_t checksum);
BK_HIDDEN void bk_set_checksum_hex(bk_ctx *ctx, const char *hex);
/* Extra facts about the run, printed under "info" (e.g. the crypto driver that served a request). */
BK_HIDDEN void bk_info_str(bk_ctx *ctx, const char *key, const char *value);
BK_HIDDEN void bk_info_num(bk_ctx *ctx, const char *key, double value);
/* A metric that cannot be computed on this run (e.g. cycles per access without a known frequency):
 * it is left out of the result, and `reason` is kept under "info" as "<metric>_unavailable". */
BK_HIDDEN void bk_skip_metric(bk_ctx *ctx, const char *metric, const char *reason);
/* This run cannot be done here (a device or kernel feature is missing): no result, the reason instead.
 * Returns -1, for `return bk_unsupported(ctx, ...)` from init. */
BK_HIDDEN int bk_unsupported(bk_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Record an error; returns -1 so that `return bk_fail(ctx, ...)` reads well. */
BK_HIDDEN int bk_fail(bk_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same for bad input (a path that is no readable regular file, ...): the run exits 2, as a bad
 * parameter does, not 1 (a failure while running). */
BK_HIDDEN int bk_bad_input(bk_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A known-answer test's outcome under "info": "kat" pass (`vectors` > 0) or fail and, unless it failed,
 * "kat_vectors". `vectors`: how many known answers held, < 0 when one did not (its error already recorded).
 * Returns -1 when it failed, else 0. */
BK_HIDDEN int bk_record_kat(bk_ctx *ctx, int vectors);

/* The check of a chain of dependent steps (noop, clock.chain): the value it ended at is the checksum, and it must
 * be `expected` after `steps` steps (the message names the chain, `what`, and its steps, `step_unit`). Returns 0,
 * or -1 after bk_fail. */
BK_HIDDEN int bk_verify_chain(bk_ctx *ctx, const char *what, uint64_t end, uint64_t expected, uint64_t steps,
                              const char *step_unit);

/* Time. CLOCK_MONOTONIC_RAW: not slewed by NTP. */
BK_HIDDEN uint64_t bk_now_ns(void);
BK_HIDDEN void bk_phase_begin(bk_ctx *ctx, int phase);
BK_HIDDEN void bk_phase_end(bk_ctx *ctx, int phase);
/* Any clock in nanoseconds (a thread's or the process's CPU time, CLOCK_MONOTONIC, ...); inline, as it is read
 * inside timed loops. */
static inline uint64_t bk_clock_ns(clockid_t clk)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* CPUs this process may run on (its affinity mask); threads of a kernel are pinned to these. */
BK_HIDDEN int bk_allowed_cpus(int *cpus, int max);
BK_HIDDEN int bk_pin_thread_to_cpu(int cpu);

/* Deterministic pseudo-random numbers (splitmix64), so inputs are the same on every board. */
BK_HIDDEN uint64_t bk_rand_next(uint64_t *state);
BK_HIDDEN double bk_rand_unit(uint64_t *state); /* [0, 1) */

/* 64-bit FNV-1a over bytes, for checksums of results. */
BK_HIDDEN uint64_t bk_fnv1a(uint64_t h, const void *data, size_t n);
#define BK_FNV_OFFSET 0xcbf29ce484222325ULL

/* Memory aligned to a page, zeroed; NULL on failure. */
BK_HIDDEN void *bk_alloc(size_t bytes);

/* Memory owned by the run, for init: aligned to a page and zeroed as bk_alloc's, freed by the core after fini, so
 * a kernel whose state is only memory needs no fini and an init that fails half-way leaks nothing. NULL after
 * bk_fail(ctx, "out of memory for <what> (<bytes> bytes)"). Not thread-safe: call it from init only. */
BK_HIDDEN void *bk_run_alloc(bk_ctx *ctx, size_t bytes, const char *what);
/* The kernel's state, `bytes` of run-owned memory, already stored in *state (fini sees even the state of an init
 * that failed); NULL after bk_fail(ctx, "out of memory"). */
BK_HIDDEN void *bk_run_state(bk_ctx *ctx, void **state, size_t bytes);
/* n deterministic pseudo-random bytes from `seed`: the same input on every board. */
BK_HIDDEN void bk_rand_bytes(void *dst, size_t n, uint64_t seed);

/* Exactly n bytes from or to a descriptor (a socket, a pipe), through short transfers and EINTR.
 * bk_read_full: 1 when read; 0 when the peer closed before the first byte (a clean end); -1 on an error or an
 * end after some bytes (a cut message). bk_write_full: 0 when written, -1 on an error. */
BK_HIDDEN int bk_read_full(int fd, void *buf, size_t n);
BK_HIDDEN int bk_write_full(int fd, const void *buf, size_t n);

/* Keep the compiler from eliding a computation whose result is otherwise unused. */
#define BK_KEEP(x) __asm__ volatile("" : : "g"(x) : "memory")

#endif
