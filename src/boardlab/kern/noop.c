/* noop: the smallest kernel. It exercises the timing core (calibration, warm-up, JSON), and with `steps`
 * it is a known amount of pure-register work: a chain of dependent 64-bit multiply-adds whose cost does not
 * depend on memory layout, so a parameter that adds 5% steps adds 5% time (tests of the statistics). */
#include "core.h"

#define LCG_A 6364136223846793005ULL /* Knuth's MMIX multiplier */
#define LCG_C 1442695040888963407ULL

typedef struct {
    uint64_t x; /* the chain's value */
    uint64_t total; /* steps executed */
    uint64_t steps; /* steps per rep */
} noop_state;

static const bk_param noop_params[] = {
    {"steps", BK_INT, 1, 1e6, "1", NULL, "steps",
     "dependent multiply-add steps per rep (more steps, proportionally more time)"},
    {0},
};
static const bk_metric noop_metrics[] = {
    {"ns_per_rep", "ns", false, BK_TIME, -1, 1.0, "time of one rep (`steps` dependent multiply-adds)"},
    {0},
};

static int noop_init(bk_ctx *ctx, void **state)
{
    noop_state *s = bk_run_state(ctx, state, sizeof *s);
    if (!s)
        return -1;
    bk_set_amount(ctx, "ns_per_rep", 1.0);
    s->steps = (uint64_t)bk_arg_int(ctx, "steps");
    return 0;
}

static int noop_run(bk_ctx *ctx, void *state, uint64_t reps)
{
    (void)ctx;
    noop_state *s = state;
    uint64_t x = s->x, n = reps * s->steps;
    for (uint64_t i = 0; i < n; i++)
        x = x * LCG_A + LCG_C;
    s->x = x;
    s->total += n;
    return 0;
}

static void noop_corrupt(void *state) { ((noop_state *)state)->x ^= 1; }

/* The chain after n steps from 0, by composing the affine map x -> a x + c with itself (O(log n)). */
static uint64_t lcg_jump(uint64_t n)
{
    uint64_t a = LCG_A, c = LCG_C, ra = 1, rc = 0;
    while (n) {
        if (n & 1) {
            ra *= a;
            rc = rc * a + c;
        }
        c = c * (a + 1);
        a *= a;
        n >>= 1;
    }
    return rc; /* ra * 0 + rc */
}

static int noop_verify(bk_ctx *ctx, void *state)
{
    noop_state *s = state;
    return bk_verify_chain(ctx, "noop's chain", s->x, lcg_jump(s->total), s->total, "steps");
}

const bk_kernel bk_noop = {
    .name = "noop",
    .family = "core",
    .summary = "dependent multiply-adds: exercises the timing core; `steps` is a known amount of work",
    .params = noop_params,
    .metrics = noop_metrics,
    .init = noop_init,
    .run = noop_run,
    .corrupt = noop_corrupt,
    .verify = noop_verify,
};
