/* noop: an empty loop that exercises the timing core itself (calibration, warm-up, JSON). */
#include "core.h"

#include <stdlib.h>

typedef struct {
    uint64_t done; /* reps executed */
    uint64_t expected;
} noop_state;

static const bk_param noop_params[] = {{0}};
static const bk_metric noop_metrics[] = {
    {"ns_per_rep", "ns", false, BK_TIME, -1, 1.0, "time of one empty loop step"},
    {0},
};

static int noop_init(bk_ctx *ctx, void **state)
{
    noop_state *s = calloc(1, sizeof *s);
    if (!s)
        return bk_fail(ctx, "out of memory");
    bk_set_amount(ctx, "ns_per_rep", 1.0);
    *state = s;
    return 0;
}

static int noop_run(bk_ctx *ctx, void *state, uint64_t reps)
{
    (void)ctx;
    noop_state *s = state;
    for (uint64_t i = 0; i < reps; i++) {
        s->done++;
        BK_KEEP(s->done);
    }
    s->expected += reps;
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
