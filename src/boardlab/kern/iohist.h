/* A latency histogram for the I/O kernels (io.storage, io.net, stream.pipeline): exact below 64 ns, then
 * 64 log-linear buckets per power of two, so a value is known to within 1/128 of itself at the bucket's
 * midpoint (fio's PLAT_BITS=6 scheme). Header-only: each family keeps its own histograms. */
#ifndef BK_IOHIST_H
#define BK_IOHIST_H

#include <stdint.h>
#include <string.h>

#define BK_HIST_SUB 64
#define BK_HIST_BUCKETS (BK_HIST_SUB + 58 * BK_HIST_SUB)

typedef struct {
    uint64_t count, max_ns;
    double sum_ns;
    uint32_t b[BK_HIST_BUCKETS];
} bk_hist;

static inline void bk_hist_init(bk_hist *h) { memset(h, 0, sizeof *h); }

static inline int bk_hist_index(uint64_t v)
{
    if (v < BK_HIST_SUB)
        return (int)v;
    int e = 63 - __builtin_clzll(v);
    int sub = (int)(v >> (e - 6)) - BK_HIST_SUB;
    return BK_HIST_SUB + (e - 6) * BK_HIST_SUB + sub;
}

static inline double bk_hist_value(int idx)
{
    if (idx < BK_HIST_SUB)
        return idx;
    int e = (idx - BK_HIST_SUB) / BK_HIST_SUB + 6, sub = (idx - BK_HIST_SUB) % BK_HIST_SUB;
    double width = (double)(1ULL << (e - 6));
    return (double)(BK_HIST_SUB + sub) * width + width / 2;
}

static inline void bk_hist_add(bk_hist *h, uint64_t ns)
{
    h->b[bk_hist_index(ns)]++;
    h->count++;
    h->sum_ns += (double)ns;
    if (ns > h->max_ns)
        h->max_ns = ns;
}

static inline void bk_hist_merge(bk_hist *into, const bk_hist *from)
{
    for (int i = 0; i < BK_HIST_BUCKETS; i++)
        into->b[i] += from->b[i];
    into->count += from->count;
    into->sum_ns += from->sum_ns;
    if (from->max_ns > into->max_ns)
        into->max_ns = from->max_ns;
}

/* Nearest-rank quantile (q in (0, 1]); NaN-free: 0 for an empty histogram. */
static inline double bk_hist_quantile(const bk_hist *h, double q)
{
    if (!h->count)
        return 0;
    uint64_t rank = (uint64_t)(q * (double)h->count + 0.999999999);
    if (rank < 1)
        rank = 1;
    uint64_t seen = 0;
    for (int i = 0; i < BK_HIST_BUCKETS; i++) {
        seen += h->b[i];
        if (seen >= rank)
            return bk_hist_value(i);
    }
    return (double)h->max_ns;
}

static inline double bk_hist_mean(const bk_hist *h) { return h->count ? h->sum_ns / (double)h->count : 0; }

#endif
