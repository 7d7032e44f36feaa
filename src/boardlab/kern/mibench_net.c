/* MiBench-style network kernels (Guthaus et al. 2001, "network" category): dijkstra and patricia.
 *
 * dijkstra: all-pairs shortest paths on a dense directed graph held as an adjacency matrix, by running
 *   Dijkstra's algorithm (1959) from each source with the O(V^2) array scan that suits dense graphs.
 *   MiBench uses a 100-node matrix; so does the default here.
 * patricia: an IPv4 routing table in a PATRICIA trie (Morrison 1968: a binary trie that skips the bits
 *   no prefix branches on, as BSD's routing table does): insert prefixes, then longest-prefix-match lookups.
 *
 * Inputs come from a seed, so every board works on the same graph and the same routing table. */
#include "core.h"

#include <stdlib.h>
#include <string.h>

/* ================================ dijkstra ================================ */

/* Far above any path length (nodes <= 4096, weights <= 65535) and still safe to add a weight to. */
#define DJ_INF 0x7fffffffu
/* Floyd-Warshall costs nodes^3; above this size verification relies on Bellman's equations alone. */
#define DJ_FLOYD_MAX_NODES 512

typedef struct {
    uint32_t n, sources;
    uint32_t *w; /* n x n, row u = edges leaving u; the diagonal is 0 */
    uint32_t *dist; /* sources x n: the result of the last rep */
    uint32_t *unsettled; /* scratch */
} dj_state;

static const bk_param dj_params[] = {
    {"nodes", BK_INT, 2, 4096, "100", NULL, "nodes", "graph size (MiBench: 100); the matrix holds nodes^2 weights"},
    {"sources", BK_INT, 0, 4096, "0", NULL, "nodes",
     "run Dijkstra from the first `sources` nodes; 0 = every node (all pairs)"},
    {"max_weight", BK_INT, 1, 65535, "1000", NULL, "", "edge weights are uniform integers in [1, max_weight]"},
    {"seed", BK_INT, 0, 4294967295.0, "1", NULL, "", "seed of the edge weights"},
    {0},
};

static const bk_metric dj_metrics[] = {
    {"paths_per_s", "paths/s", true, BK_RATE, -1, 1.0,
     "source-destination shortest paths solved per second (sources x (nodes - 1) per rep)"},
    {"us_per_source", "us", false, BK_TIME, -1, 1e-3, "time of one single-source Dijkstra run"},
    {0},
};

static int dj_init(bk_ctx *ctx, void **state)
{
    uint32_t n = (uint32_t)bk_arg_int(ctx, "nodes");
    uint32_t sources = (uint32_t)bk_arg_int(ctx, "sources");
    if (sources == 0)
        sources = n;
    if (sources > n)
        return bk_fail(ctx, "parameter 'sources'=%u exceeds 'nodes'=%u: give at most nodes sources (0 = all)", sources,
                       n);
    dj_state *s = bk_run_state(ctx, state, sizeof *s);
    if (!s)
        return -1;
    s->n = n;
    s->sources = sources;
    s->w = bk_run_alloc(ctx, (size_t)n * n * sizeof *s->w, "the graph");
    s->dist = bk_run_alloc(ctx, (size_t)sources * n * sizeof *s->dist, "the distances");
    s->unsettled = bk_run_alloc(ctx, (size_t)n * sizeof *s->unsettled, "the unsettled nodes");
    if (!s->w || !s->dist || !s->unsettled)
        return -1;
    uint64_t rng = (uint64_t)bk_arg_int(ctx, "seed");
    uint64_t maxw = (uint64_t)bk_arg_int(ctx, "max_weight");
    for (uint32_t u = 0; u < n; u++)
        for (uint32_t v = 0; v < n; v++)
            s->w[(size_t)u * n + v] = u == v ? 0 : (uint32_t)(1 + bk_rand_next(&rng) % maxw);
    bk_set_amount(ctx, "paths_per_s", (double)sources * (n - 1));
    bk_set_amount(ctx, "us_per_source", (double)sources);
    bk_info_num(ctx, "edges", (double)n * (n - 1));
    return 0;
}

/* Dijkstra with the dense-graph array scan: each round settles the closest unsettled node u and relaxes
 * the edges from u to the nodes still unsettled, kept in a list from which a settled node is removed by
 * moving the last entry into its place. The scan for the next node is fused into the relaxation pass, so
 * a round reads each unsettled distance once: nodes^2 / 2 steps per source. (Keeping the list in node
 * order, for front-to-back row reads, measured slower at 100 nodes and no faster at 1000.) */
static void dijkstra(const uint32_t *w, uint32_t n, uint32_t src, uint32_t *d, uint32_t *unsettled)
{
    for (uint32_t v = 0; v < n; v++) {
        d[v] = DJ_INF;
        unsettled[v] = v;
    }
    d[src] = 0;
    uint32_t u = src, count = n - 1;
    unsettled[src] = n - 1;
    while (count > 0) {
        const uint32_t *row = w + (size_t)u * n;
        uint32_t du = d[u], best = DJ_INF, at = 0;
        for (uint32_t i = 0; i < count; i++) {
            uint32_t v = unsettled[i], dv = d[v], nd = du + row[v];
            if (nd < dv)
                d[v] = dv = nd;
            if (dv < best) {
                best = dv;
                at = i;
            }
        }
        if (best == DJ_INF)
            break; /* the rest is unreachable */
        u = unsettled[at];
        unsettled[at] = unsettled[--count];
    }
}

static int dj_run(bk_ctx *ctx, void *state, uint64_t reps)
{
    (void)ctx;
    dj_state *s = state;
    for (uint64_t r = 0; r < reps; r++)
        for (uint32_t src = 0; src < s->sources; src++)
            dijkstra(s->w, s->n, src, s->dist + (size_t)src * s->n, s->unsettled);
    return 0;
}

static void dj_corrupt(void *state)
{
    dj_state *s = state;
    s->dist[(size_t)(s->sources / 2) * s->n + s->n / 2] += 1;
}

/* Bellman's equations: d[src] = 0 and d[v] = min over u != v of d[u] + w(u, v). With positive weights
 * their only solution is the shortest-path distance (every d[v] is then reached by a chain of tight
 * edges that strictly decreases back to src, so it is a real path's length, and no path is shorter).
 * One relaxation pass over all edges checks them: O(nodes^2) per source, like Dijkstra itself. */
static int dj_check_bellman(bk_ctx *ctx, const dj_state *s, uint32_t src, const uint32_t *d, uint32_t *best)
{
    uint32_t n = s->n;
    if (d[src] != 0)
        return bk_fail(ctx, "dijkstra: distance from node %u to itself is %u, expected 0", src, d[src]);
    for (uint32_t v = 0; v < n; v++)
        best[v] = UINT32_MAX;
    for (uint32_t u = 0; u < n; u++) {
        if (d[u] >= DJ_INF)
            return bk_fail(ctx, "dijkstra: node %u unreachable from %u in a complete graph", u, src);
        const uint32_t *row = s->w + (size_t)u * n;
        for (uint32_t v = 0; v < n; v++)
            if (v != u && d[u] + row[v] < best[v])
                best[v] = d[u] + row[v];
    }
    for (uint32_t v = 0; v < n; v++)
        if (v != src && best[v] != d[v])
            return bk_fail(ctx, "dijkstra: distance %u -> %u is %u but Bellman's equation gives %u", src, v, d[v],
                           best[v]);
    return 0;
}

static int dj_verify(bk_ctx *ctx, void *state)
{
    dj_state *s = state;
    uint32_t n = s->n;
    uint32_t *best = malloc((size_t)n * sizeof *best);
    if (!best)
        return bk_fail(ctx, "out of memory in verification");
    int rc = 0;
    for (uint32_t src = 0; src < s->sources && rc == 0; src++)
        rc = dj_check_bellman(ctx, s, src, s->dist + (size_t)src * n, best);
    free(best);
    const char *method = "bellman-equations";
    if (rc == 0 && n <= DJ_FLOYD_MAX_NODES) {
        /* An independent all-pairs computation on the same matrix. */
        uint32_t *fw = malloc((size_t)n * n * sizeof *fw);
        if (!fw)
            return bk_fail(ctx, "out of memory in verification");
        memcpy(fw, s->w, (size_t)n * n * sizeof *fw);
        for (uint32_t k = 0; k < n; k++)
            for (uint32_t i = 0; i < n; i++) {
                uint32_t dik = fw[(size_t)i * n + k];
                uint32_t *rowi = fw + (size_t)i * n;
                const uint32_t *rowk = fw + (size_t)k * n;
                for (uint32_t j = 0; j < n; j++)
                    if (dik + rowk[j] < rowi[j])
                        rowi[j] = dik + rowk[j];
            }
        for (uint32_t src = 0; src < s->sources && rc == 0; src++)
            for (uint32_t v = 0; v < n && rc == 0; v++)
                if (fw[(size_t)src * n + v] != s->dist[(size_t)src * n + v])
                    rc = bk_fail(ctx, "dijkstra: distance %u -> %u is %u, Floyd-Warshall gives %u", src, v,
                                 s->dist[(size_t)src * n + v], fw[(size_t)src * n + v]);
        free(fw);
        method = "bellman-equations+floyd-warshall";
    }
    bk_info_str(ctx, "verify_method", method);
    uint64_t sum = 0;
    for (size_t i = 0; i < (size_t)s->sources * n; i++)
        sum += s->dist[i];
    bk_info_num(ctx, "mean_distance", (double)sum / ((double)s->sources * (n > 1 ? n - 1 : 1)));
    bk_set_checksum(ctx, bk_fnv1a(BK_FNV_OFFSET, s->dist, (size_t)s->sources * n * sizeof *s->dist));
    return rc;
}

const bk_kernel bk_mibench_dijkstra = {
    .name = "mibench.dijkstra",
    .family = "mibench",
    .summary = "MiBench dijkstra: all-pairs shortest paths by Dijkstra from every source on a dense matrix graph",
    .params = dj_params,
    .metrics = dj_metrics,
    .init = dj_init,
    .run = dj_run,
    .corrupt = dj_corrupt,
    .verify = dj_verify,
};

/* ================================ patricia ================================ */

#define PT_NONE UINT32_MAX
/* Above this many prefix comparisons, verification scans the prefix list for a sample of the lookups
 * only and checks all of them with an independent per-length binary search. */
#define PT_SCAN_BUDGET 400000000.0

/* A trie node holds a prefix (key, len). Children extend it: child[b] has a longer prefix whose bit
 * `len` is b. Nodes created only to branch carry no route (route == PT_NONE). */
typedef struct pt_node {
    uint32_t key;
    uint32_t len;
    uint32_t route; /* index into the prefix list, or PT_NONE */
    struct pt_node *child[2];
} pt_node;

typedef struct {
    uint32_t nprefixes, nlookups;
    uint32_t *pkey;
    uint8_t *plen;
    uint32_t *addr;
    uint32_t *result; /* per lookup: the matching prefix's index, or PT_NONE */
    pt_node *pool; /* 2 x nprefixes nodes, reused by every rep */
    uint32_t used;
    pt_node *root;
} pt_state;

static const bk_param pt_params[] = {
    {"prefixes", BK_INT, 1, 16777216, "10000", NULL, "prefixes", "routes inserted into the trie"},
    {"lookups", BK_INT, 1, 67108864, "20000", NULL, "lookups", "addresses looked up (longest prefix match)"},
    {"seed", BK_INT, 0, 4294967295.0, "1", NULL, "", "seed of the routing table and the addresses"},
    {0},
};

static const char *const pt_phases[] = {"insert", "lookup", NULL};

static const bk_metric pt_metrics[] = {
    {"lookups_per_s", "lookups/s", true, BK_RATE, 1, 1.0, "longest-prefix-match lookups per second"},
    {"inserts_per_s", "inserts/s", true, BK_RATE, 0, 1.0, "prefixes inserted per second, building the trie"},
    {0},
};

static inline uint32_t pt_mask(uint32_t len) { return len == 0 ? 0 : 0xffffffffu << (32 - len); }
static inline uint32_t pt_bit(uint32_t key, uint32_t i) { return (key >> (31 - i)) & 1; }

/* Prefix lengths of a BGP table, per mille: /24 dominates, then /22 and /23, /16 stands out among the
 * short ones, and a few longer-than-/24 routes appear as in an operator's internal table. */
static const uint16_t pt_len_permille[33] = {
    [8] = 1,  [9] = 1,   [10] = 1,  [11] = 1,  [12] = 2,  [13] = 3,   [14] = 5,   [15] = 5,   [16] = 20,
    [17] = 8, [18] = 12, [19] = 25, [20] = 40, [21] = 50, [22] = 110, [23] = 100, [24] = 580, [25] = 8,
    [26] = 6, [27] = 5,  [28] = 5,  [29] = 4,  [30] = 4,  [31] = 1,   [32] = 3,
};

static uint32_t pt_draw_len(uint64_t *rng)
{
    uint32_t x = (uint32_t)(bk_rand_next(rng) % 1000), acc = 0;
    for (uint32_t len = 0; len <= 32; len++) {
        acc += pt_len_permille[len];
        if (x < acc)
            return len;
    }
    return 24;
}

static int pt_init(bk_ctx *ctx, void **state)
{
    pt_state *s = bk_run_state(ctx, state, sizeof *s);
    if (!s)
        return -1;
    uint32_t n = s->nprefixes = (uint32_t)bk_arg_int(ctx, "prefixes");
    uint32_t m = s->nlookups = (uint32_t)bk_arg_int(ctx, "lookups");
    s->pkey = bk_run_alloc(ctx, (size_t)n * sizeof *s->pkey, "the prefixes");
    s->plen = bk_run_alloc(ctx, n, "the prefix lengths");
    s->addr = bk_run_alloc(ctx, (size_t)m * sizeof *s->addr, "the addresses");
    s->result = bk_run_alloc(ctx, (size_t)m * sizeof *s->result, "the results");
    s->pool = bk_run_alloc(ctx, 2 * (size_t)n * sizeof *s->pool, "the trie");
    if (!s->pkey || !s->plen || !s->addr || !s->result || !s->pool)
        return -1;
    uint64_t rng = (uint64_t)bk_arg_int(ctx, "seed");
    for (uint32_t i = 0; i < n; i++) {
        uint32_t len = pt_draw_len(&rng);
        uint32_t key = (uint32_t)bk_rand_next(&rng);
        /* Real tables nest: a third of the routes are more-specifics carved out of an earlier, shorter one. */
        if (i > 0 && bk_rand_next(&rng) % 3 == 0) {
            uint32_t j = (uint32_t)(bk_rand_next(&rng) % i);
            if (s->plen[j] < len)
                key = s->pkey[j] | (key & ~pt_mask(s->plen[j]));
        }
        s->pkey[i] = key & pt_mask(len);
        s->plen[i] = (uint8_t)len;
    }
    /* Most traffic goes to routed destinations; a fifth is arbitrary and mostly matches nothing. */
    for (uint32_t i = 0; i < m; i++) {
        uint32_t a = (uint32_t)bk_rand_next(&rng);
        if (bk_rand_next(&rng) % 5 != 0) {
            uint32_t j = (uint32_t)(bk_rand_next(&rng) % n);
            a = s->pkey[j] | (a & ~pt_mask(s->plen[j]));
        }
        s->addr[i] = a;
    }
    bk_set_amount(ctx, "lookups_per_s", m);
    bk_set_amount(ctx, "inserts_per_s", n);
    return 0;
}

static pt_node *pt_new(pt_state *s, uint32_t key, uint32_t len, uint32_t route)
{
    pt_node *x = &s->pool[s->used++];
    x->key = key;
    x->len = len;
    x->route = route;
    x->child[0] = x->child[1] = NULL;
    return x;
}

/* Inserts (key/len -> route). A prefix inserted twice keeps the later route. Each insert adds at most a
 * route node and one branching node, so 2 x prefixes nodes always suffice. */
static void pt_insert(pt_state *s, uint32_t key, uint32_t len, uint32_t route)
{
    pt_node **link = &s->root;
    for (;;) {
        pt_node *x = *link;
        if (!x) {
            *link = pt_new(s, key, len, route);
            return;
        }
        uint32_t diff = key ^ x->key;
        uint32_t common = diff ? (uint32_t)__builtin_clz(diff) : 32;
        if (common > len)
            common = len;
        if (common > x->len)
            common = x->len;
        if (common == x->len && common == len) { /* the same prefix */
            x->route = route;
            return;
        }
        if (common == x->len) { /* x's prefix covers the new one: go down */
            link = &x->child[pt_bit(key, x->len)];
            continue;
        }
        pt_node *y = pt_new(s, key, len, route);
        if (common == len) { /* the new prefix covers x: it becomes x's parent */
            y->child[pt_bit(x->key, len)] = x;
            *link = y;
            return;
        }
        /* They part at bit `common`: a branching node holds their common prefix. */
        pt_node *b = pt_new(s, key & pt_mask(common), common, PT_NONE);
        b->child[pt_bit(key, common)] = y;
        b->child[pt_bit(x->key, common)] = x;
        *link = b;
        return;
    }
}

/* Longest prefix match the PATRICIA way: descend by testing only the branching bits, remembering the
 * route nodes passed, then compare whole prefixes from the deepest candidate up. Every prefix that
 * matches the address lies on this path, because its ancestors branch on bits it shares with it. */
static uint32_t pt_lookup(const pt_node *x, uint32_t addr)
{
    const pt_node *cand[33];
    int ncand = 0;
    while (x) {
        if (x->route != PT_NONE)
            cand[ncand++] = x;
        if (x->len == 32)
            break;
        x = x->child[pt_bit(addr, x->len)];
    }
    while (ncand-- > 0)
        if (((addr ^ cand[ncand]->key) & pt_mask(cand[ncand]->len)) == 0)
            return cand[ncand]->route;
    return PT_NONE;
}

static int pt_run(bk_ctx *ctx, void *state, uint64_t reps)
{
    pt_state *s = state;
    for (uint64_t r = 0; r < reps; r++) {
        bk_phase_begin(ctx, 0);
        s->used = 0;
        s->root = NULL;
        for (uint32_t i = 0; i < s->nprefixes; i++)
            pt_insert(s, s->pkey[i], s->plen[i], i);
        bk_phase_end(ctx, 0);
        bk_phase_begin(ctx, 1);
        for (uint32_t i = 0; i < s->nlookups; i++)
            s->result[i] = pt_lookup(s->root, s->addr[i]);
        bk_phase_end(ctx, 1);
    }
    return 0;
}

static void pt_corrupt(void *state)
{
    pt_state *s = state;
    s->result[s->nlookups / 2] ^= 1;
}

/* Brute force: the longest prefix in the list that matches; among equal prefixes the last one, as the
 * trie keeps the later route. Each matching entry scores (len + 1) << 24 | index (the range of
 * `prefixes` keeps index < 2^24), so the best is the highest score: a branch-free maximum. */
static uint32_t pt_scan(const pt_state *s, const uint32_t *mask, uint32_t addr)
{
    uint32_t best = 0;
    for (uint32_t j = 0; j < s->nprefixes; j++) {
        uint32_t score = ((addr ^ s->pkey[j]) & mask[j]) == 0 ? ((uint32_t)s->plen[j] + 1) << 24 | j : 0;
        best = score > best ? score : best;
    }
    return best ? best & 0xffffffu : PT_NONE;
}

typedef struct {
    uint64_t sortkey; /* len << 32 | key */
    uint32_t route;
} pt_entry;

static int pt_entry_cmp(const void *a, const void *b)
{
    const pt_entry *x = a, *y = b;
    if (x->sortkey != y->sortkey)
        return x->sortkey < y->sortkey ? -1 : 1;
    return x->route < y->route ? -1 : x->route > y->route;
}

/* Independent of the trie: for each length from 32 down, binary-search the address's prefix of that
 * length in the list sorted by (len, key, route); the last of equal entries is the later route. */
static uint32_t pt_search_sorted(const pt_entry *e, uint32_t n, uint32_t addr)
{
    for (int len = 32; len >= 0; len--) {
        uint64_t want = (uint64_t)len << 32 | (addr & pt_mask((uint32_t)len));
        uint32_t lo = 0, hi = n; /* first entry > want */
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;
            if (e[mid].sortkey <= want)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo > 0 && e[lo - 1].sortkey == want)
            return e[lo - 1].route;
    }
    return PT_NONE;
}

static int pt_verify(bk_ctx *ctx, void *state)
{
    pt_state *s = state;
    uint32_t n = s->nprefixes, m = s->nlookups;
    int rc = 0;
    /* Every lookup against a linear scan of the list, when that fits the budget. */
    double cost = (double)n * m;
    uint32_t stride = cost <= PT_SCAN_BUDGET ? 1 : (uint32_t)(cost / PT_SCAN_BUDGET) + 1;
    uint32_t scanned = 0, *mask = malloc((size_t)n * sizeof *mask);
    if (!mask)
        return bk_fail(ctx, "out of memory in verification");
    for (uint32_t j = 0; j < n; j++)
        mask[j] = pt_mask(s->plen[j]);
    for (uint32_t i = 0; i < m && rc == 0; i += stride, scanned++) {
        uint32_t want = pt_scan(s, mask, s->addr[i]);
        if (s->result[i] != want)
            rc = bk_fail(ctx, "patricia: lookup %u of %08x gave route %d, a linear scan gives %d", i, s->addr[i],
                         (int)s->result[i], (int)want);
    }
    free(mask);
    bk_info_num(ctx, "verify_linear_scan_lookups", scanned);
    if (rc == 0 && stride > 1) {
        pt_entry *e = malloc((size_t)n * sizeof *e);
        if (!e)
            return bk_fail(ctx, "out of memory in verification");
        for (uint32_t j = 0; j < n; j++)
            e[j] = (pt_entry){(uint64_t)s->plen[j] << 32 | s->pkey[j], j};
        qsort(e, n, sizeof *e, pt_entry_cmp);
        for (uint32_t i = 0; i < m && rc == 0; i++) {
            uint32_t want = pt_search_sorted(e, n, s->addr[i]);
            if (s->result[i] != want)
                rc = bk_fail(ctx, "patricia: lookup %u of %08x gave route %d, a sorted search gives %d", i, s->addr[i],
                             (int)s->result[i], (int)want);
        }
        free(e);
    }
    bk_info_str(ctx, "verify_method", stride == 1 ? "linear-scan" : "sorted-search+sampled-linear-scan");
    uint32_t matched = 0;
    for (uint32_t i = 0; i < m; i++)
        matched += s->result[i] != PT_NONE;
    bk_info_num(ctx, "matched_fraction", (double)matched / m);
    bk_info_num(ctx, "trie_nodes", s->used);
    bk_set_checksum(ctx, bk_fnv1a(BK_FNV_OFFSET, s->result, (size_t)m * sizeof *s->result));
    return rc;
}

const bk_kernel bk_mibench_patricia = {
    .name = "mibench.patricia",
    .family = "mibench",
    .summary = "MiBench patricia: IPv4 routing table in a PATRICIA trie, inserts then longest-prefix-match lookups",
    .params = pt_params,
    .metrics = pt_metrics,
    .phases = pt_phases,
    .init = pt_init,
    .run = pt_run,
    .corrupt = pt_corrupt,
    .verify = pt_verify,
};
