/* clock.chain: the clock a core actually runs at, measured rather than read from cpufreq. A chain of
 * dependent 64-bit integer adds: each add needs the previous one's result, and an integer add's latency is
 * one cycle on every core boardlab targets (x86-64; ARM Cortex-A7/A8/A9/A15/A53/A55/A57/A72/A76: their
 * optimization guides list ADD at one cycle), so the chain runs at one add per cycle and adds per second
 * are cycles per second. The empty asm after each add keeps the compiler from folding the chain into one
 * multiply (it must hold the value in a register after every add) without adding an instruction; the loop's
 * counter and branch run beside the chain (an out-of-order core) or pair with it (the in-order dual-issue
 * Cortex-A7/A8), and 64 adds per loop turn leave them at most one cycle in 64 on a single-issue core.
 *
 * verify: the chain's end is start + n c (mod 2^64), computed by one multiply; --corrupt flips a bit. */
#include "core.h"

#define STEP 0x9E3779B97F4A7C15ULL /* an odd constant: the chain's value changes at every add */
#define UNROLL 64

typedef struct {
    uint64_t x; /* the chain's value */
    uint64_t total; /* adds executed */
    uint64_t blocks; /* UNROLL-add blocks per rep */
} clock_state;

static const bk_param clock_params[] = {
    {"adds", BK_INT, UNROLL, 1 << 24, "16k", NULL, "adds", "dependent adds per rep (rounded down to a multiple of 64)"},
    {0},
};
static const bk_metric clock_metrics[] = {
    {"mhz", "MHz", true, BK_RATE, -1, 1e-6, "dependent one-cycle adds per microsecond: the core's clock"},
    {"ns_per_add", "ns", false, BK_TIME, -1, 1.0, "time of one dependent add: one cycle"},
    {0},
};

static int clock_init(bk_ctx *ctx, void **state)
{
    clock_state *s = bk_run_state(ctx, state, sizeof *s);
    if (!s)
        return -1;
    s->blocks = (uint64_t)bk_arg_int(ctx, "adds") / UNROLL;
    bk_set_amount(ctx, "mhz", (double)(s->blocks * UNROLL));
    bk_set_amount(ctx, "ns_per_add", (double)(s->blocks * UNROLL));
    bk_info_num(ctx, "add_latency_cycles", 1);
    return 0;
}

#define ADD1                                                                                                           \
    do {                                                                                                               \
        x += c;                                                                                                        \
        __asm__ volatile("" : "+r"(x));                                                                                \
    } while (0)
#define ADD8                                                                                                           \
    ADD1;                                                                                                              \
    ADD1;                                                                                                              \
    ADD1;                                                                                                              \
    ADD1;                                                                                                              \
    ADD1;                                                                                                              \
    ADD1;                                                                                                              \
    ADD1;                                                                                                              \
    ADD1
#define ADD64                                                                                                          \
    ADD8;                                                                                                              \
    ADD8;                                                                                                              \
    ADD8;                                                                                                              \
    ADD8;                                                                                                              \
    ADD8;                                                                                                              \
    ADD8;                                                                                                              \
    ADD8;                                                                                                              \
    ADD8

static int clock_run(bk_ctx *ctx, void *state, uint64_t reps)
{
    (void)ctx;
    clock_state *s = state;
    uint64_t x = s->x, c = STEP, n = reps * s->blocks;
    __asm__ volatile("" : "+r"(c)); /* c is not a constant the compiler can fold into the adds */
    for (uint64_t i = 0; i < n; i++) {
        ADD64;
    }
    s->x = x;
    s->total += n * UNROLL;
    return 0;
}

static void clock_corrupt(void *state) { ((clock_state *)state)->x ^= 1; }

static int clock_verify(bk_ctx *ctx, void *state)
{
    clock_state *s = state;
    uint64_t expected = s->total * STEP; /* the chain started at 0: n adds of STEP, mod 2^64 */
    return bk_verify_chain(ctx, "the add chain", s->x, expected, s->total, "adds");
}

const bk_kernel bk_clock_chain = {
    .name = "clock.chain",
    .family = "clock",
    .summary = "a core's effective clock: a verified chain of dependent one-cycle adds, adds per microsecond",
    .params = clock_params,
    .metrics = clock_metrics,
    .init = clock_init,
    .run = clock_run,
    .corrupt = clock_corrupt,
    .verify = clock_verify,
};
