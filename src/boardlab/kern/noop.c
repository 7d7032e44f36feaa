/* noop: an empty loop that exercises the timing core itself (calibration, warm-up, JSON). */
#include "core.h"

#include <stdlib.h>

typedef struct {
    uint64_t done; /* loop steps executed */
    uint64_t expected;
    uint64_t steps; /* loop steps per rep: a known amount of work, for tests of the statistics */
} noop_state;

static const bk_param noop_params[] = {
    {"steps", BK_INT, 1, 1e6, "1", NULL, "steps", "empty loop steps per rep (more steps, proportionally more time)"},
    {0},
};
static const bk_metric noop_metrics[] = {
    {"ns_per_rep", "ns", false, BK_TIME, -1, 1.0, "time of one rep (`steps` empty loop steps)"},
    {0},
};

static int noop_init(bk_ctx *ctx, void **state)
{
    noop_state *s = calloc(1, sizeof *s);
    if (!s)
        return bk_fail(ctx, "out of memory");
    bk_set_amount(ctx, "ns_per_rep", 1.0);
    s->steps = (uint64_t)bk_arg_int(ctx, "steps");
    *state = s;
    return 0;
}

static int noop_run(bk_ctx *ctx, void *state, uint64_t reps)
{
    (void)ctx;
    noop_state *s = state;
    for (uint64_t i = 0; i < reps * s->steps; i++) {
        s->done++;
        BK_KEEP(s->done);
    }
    s->expected += reps * s->steps;
    return 0;
}

static void noop_corrupt(void *state) { ((noop_state *)state)->done++; }

static int noop_verify(bk_ctx *ctx, void *state)
{
    noop_state *s = state;
    bk_set_checksum(ctx, s->done);
    return s->done == s->expected ? 0 : bk_fail(ctx, "noop executed %llu steps, expected %llu",
                                                 (unsigned long long)s->done, (unsigned long long)s->expected);
}

const bk_kernel bk_noop = {
    .name = "noop",
    .family = "core",
    .summary = "empty loop: exercises and calibrates the timing core",
    .params = noop_params,
    .metrics = noop_metrics,
    .init = noop_init,
    .run = noop_run,
    .corrupt = noop_corrupt,
    .verify = noop_verify,
    .fini = free,
};
