/* mem: memory latency by pointer chasing and STREAM-style bandwidth.
 *
 * mem.latency follows ucb-bar/ccbench caches.c and the LCTES 2020 authors' microbenchmark
 * (research/governors.md §2): an array of slots, each holding the address of the next slot, so that the
 * timed loop `p = *(void **)p` is a chain of dependent loads whose cost is the latency of the level of the
 * memory hierarchy the array fits in. The chain is one cycle through every slot; its order is the pattern.
 *
 * mem.bandwidth follows McCalpin's STREAM (copy, scale, add, triad over double arrays of at least 4x the
 * last-level cache, bytes counted the STREAM way) plus libc memcpy and memset, with threads pinned to the
 * CPUs the process was given, each owning and first-touching a contiguous slice.
 */
#include "core.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Non-temporal stores (stores=nontemporal): SSE2 streaming stores on x86, STNP (store pair with a
 * non-temporal hint) on AArch64. 32-bit ARM has no non-temporal store instruction, so there (and on any other
 * architecture) the option is reported unsupported rather than emulated with ordinary stores. */
#if defined(__x86_64__) || (defined(__i386__) && defined(__SSE2__))
#include <emmintrin.h>
#define BW_HAVE_NT 1
#elif defined(__aarch64__)
#define BW_HAVE_NT 1
#else
#define BW_HAVE_NT 0
#endif

#define MEM_SEED 0x626f6172646c6162ULL /* any fixed value: chains are the same on every board */
#define MIB (1024ULL * 1024ULL)

/* ---- the last-level cache, as the system reports it ---- */

/* "48K", "2048K", "105M" (sysfs cache size) -> bytes; 0 when unreadable. */
static uint64_t read_sysfs_size(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    unsigned long long v = 0;
    char unit = 0;
    int got = fscanf(f, "%llu%c", &v, &unit);
    fclose(f);
    if (got < 1)
        return 0;
    uint64_t mult = unit == 'K' ? 1024 : unit == 'M' ? MIB : unit == 'G' ? 1024 * MIB : 1;
    return (uint64_t)v * mult;
}

static int read_sysfs_int(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int v = -1;
    if (fscanf(f, "%d", &v) != 1)
        v = -1;
    fclose(f);
    return v;
}

/* Size of cpu0's data or unified cache at `level` from sysfs (the kernel's view, filled from the device tree
 * on ARM boards where glibc's sysconf knows nothing); 0 when absent. */
static uint64_t sysfs_cache_bytes(int level)
{
    for (int i = 0; i < 16; i++) {
        char path[128], type[32] = "";
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        if (read_sysfs_int(path) != level)
            continue;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
        FILE *f = fopen(path, "r");
        if (f) {
            if (fscanf(f, "%31s", type) != 1)
                type[0] = '\0';
            fclose(f);
        }
        if (strcmp(type, "Instruction") == 0)
            continue;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        return read_sysfs_size(path);
    }
    return 0;
}

static long sysconf_cache_bytes(int level)
{
    long v = 0;
    switch (level) {
#ifdef _SC_LEVEL4_CACHE_SIZE
    case 4: v = sysconf(_SC_LEVEL4_CACHE_SIZE); break;
#endif
#ifdef _SC_LEVEL3_CACHE_SIZE
    case 3: v = sysconf(_SC_LEVEL3_CACHE_SIZE); break;
#endif
#ifdef _SC_LEVEL2_CACHE_SIZE
    case 2: v = sysconf(_SC_LEVEL2_CACHE_SIZE); break;
#endif
#ifdef _SC_LEVEL1_DCACHE_SIZE
    case 1: v = sysconf(_SC_LEVEL1_DCACHE_SIZE); break;
#endif
    default: break;
    }
    return v > 0 ? v : 0;
}

/* The highest cache level either sysconf or sysfs knows, sysconf first at each level; 0 when unknown.
 * `source` says where the figure came from, for the run's info. */
static uint64_t llc_bytes(char *source, size_t len)
{
    for (int level = 4; level >= 1; level--) {
        long v = sysconf_cache_bytes(level);
        if (v > 0) {
            snprintf(source, len, "sysconf L%d", level);
            return (uint64_t)v;
        }
        uint64_t s = sysfs_cache_bytes(level);
        if (s > 0) {
            snprintf(source, len, "sysfs cpu0 L%d", level);
            return s;
        }
    }
    snprintf(source, len, "unknown");
    return 0;
}

/* MemAvailable of /proc/meminfo in bytes (the kernel's estimate of what can be allocated without swapping);
 * 0 when unknown (before Linux 3.14, or no /proc). */
static uint64_t mem_available_bytes(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f)
        return 0;
    char line[128];
    unsigned long long kib = 0;
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
        found = sscanf(line, "MemAvailable: %llu kB", &kib) == 1;
    fclose(f);
    return found ? (uint64_t)kib * 1024 : 0;
}

/* ================================================================================================
 * mem.latency
 * ================================================================================================ */

#define LAT_ACCESSES 4096u /* dependent loads per rep: fixed, so a rep is the same work at every size */

typedef enum { PAT_RANDOM, PAT_SEQ, PAT_STRIDE, PAT_GLOBAL } lat_pattern;

typedef struct {
    char *base;
    size_t nslots;
    size_t spacing; /* bytes from one slot to the next in memory */
    size_t per_page; /* PAT_RANDOM: slots in one page */
    lat_pattern pat;
    void *p; /* where the chase stands */
    uint64_t steps; /* dependent loads done since the chain was built */
} lat_state;

static const bk_param lat_params[] = {
    {"size_bytes", BK_INT, 4096, 4294967296.0, "64k", NULL, "bytes",
     "working set: the array the chain runs through (rounded down to whole slots)"},
    {"pattern", BK_ENUM, 0, 0, "random", "random,seq,stride,random_global", NULL,
     "random: ccbench's order, one slot per line_bytes, random inside each page_bytes page, pages in order "
     "(TLB-friendly, defeats prefetchers); seq: the next pointer-sized element; stride: slots stride_bytes "
     "apart in address order, wrapping; random_global: one random cycle over all line slots (TLB stress)"},
    {"line_bytes", BK_INT, 8, 65536, "64", NULL, "bytes",
     "random, random_global: distance between slots, normally the cache line (multiple of the pointer size)"},
    {"page_bytes", BK_INT, 64, 1073741824.0, "4096", NULL, "bytes",
     "random: the block inside which the order is shuffled, normally the MMU page (multiple of line_bytes)"},
    {"stride_bytes", BK_INT, 8, 1073741824.0, "64", NULL, "bytes",
     "stride: distance between consecutive slots (multiple of the pointer size)"},
    {"freq_khz", BK_INT, 0, 100000000, "0", NULL, "kHz",
     "CPU clock during the run, to report cycles_per_access; 0 = unknown (metric left out)"},
    {0},
};

static const bk_metric lat_metrics[] = {
    {"ns_per_access", "ns", false, BK_TIME, -1, 1.0, "time of one dependent load (p = *p)"},
    {"cycles_per_access", "cycles", false, BK_TIME, -1, 1.0,
     "ns_per_access times freq_khz: CPU cycles per dependent load at the stated clock"},
    {0},
};

/* Fisher-Yates shuffle of 0..n-1. The modulo bias is below 2^-32 for any n this kernel uses. */
static void shuffle_identity(uint32_t *v, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++)
        v[i] = (uint32_t)i;
    uint64_t st = seed;
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)(bk_rand_next(&st) % (uint64_t)i);
        uint32_t t = v[i - 1];
        v[i - 1] = v[j];
        v[j] = t;
    }
}

/* Each page gets its own seed so that verify can regenerate any page without the ones before it. */
static uint64_t page_seed(size_t page)
{
    uint64_t st = MEM_SEED ^ ((uint64_t)page * 0xd1b54a32d192ed03ULL);
    return bk_rand_next(&st);
}

/* The pattern's order: slot_at(k) is the slot at position k of the cycle. Random pages are generated
 * lazily and kept one at a time; random_global needs the whole order. */
typedef struct {
    const lat_state *s;
    uint32_t *buf;
    size_t page; /* PAT_RANDOM: the page whose permutation buf holds, SIZE_MAX for none */
} lat_order;

static int order_open(lat_order *o, const lat_state *s)
{
    o->s = s;
    o->page = SIZE_MAX;
    o->buf = NULL;
    if (s->pat == PAT_RANDOM)
        o->buf = malloc(s->per_page * sizeof(uint32_t));
    else if (s->pat == PAT_GLOBAL)
        o->buf = malloc(s->nslots * sizeof(uint32_t));
    if ((s->pat == PAT_RANDOM || s->pat == PAT_GLOBAL) && !o->buf)
        return -1;
    if (s->pat == PAT_GLOBAL)
        shuffle_identity(o->buf, s->nslots, MEM_SEED);
    return 0;
}

static size_t slot_at(lat_order *o, size_t k)
{
    const lat_state *s = o->s;
    switch (s->pat) {
    case PAT_SEQ:
    case PAT_STRIDE: return k;
    case PAT_GLOBAL: return o->buf[k];
    case PAT_RANDOM: break;
    }
    size_t page = k / s->per_page, first = page * s->per_page;
    if (page != o->page) {
        size_t count = s->nslots - first < s->per_page ? s->nslots - first : s->per_page; /* last page may be short */
        shuffle_identity(o->buf, count, page_seed(page));
        o->page = page;
    }
    return first + o->buf[k - first];
}

static void *slot_addr(const lat_state *s, size_t slot) { return s->base + slot * s->spacing; }

static int lat_init(bk_ctx *ctx, void **state)
{
    int64_t size = bk_arg_int(ctx, "size_bytes");
    int64_t line = bk_arg_int(ctx, "line_bytes");
    int64_t page = bk_arg_int(ctx, "page_bytes");
    int64_t stride = bk_arg_int(ctx, "stride_bytes");
    const char *pat = bk_arg_str(ctx, "pattern");
    if ((uint64_t)size > SIZE_MAX / 2)
        return bk_fail(ctx, "size_bytes=%lld does not fit this address space; use a smaller size_bytes",
                       (long long)size);

    lat_state *s = bk_run_state(ctx, state, sizeof *s);
    if (!s)
        return -1;
    s->pat = strcmp(pat, "seq") == 0      ? PAT_SEQ
             : strcmp(pat, "stride") == 0 ? PAT_STRIDE
             : strcmp(pat, "random") == 0 ? PAT_RANDOM
                                          : PAT_GLOBAL;
    /* Slots hold aligned pointers, so every spacing must be a multiple of the pointer size. */
    switch (s->pat) {
    case PAT_SEQ: s->spacing = sizeof(void *); break;
    case PAT_STRIDE:
        if (stride % (int64_t)sizeof(void *))
            return bk_fail(ctx, "stride_bytes=%lld must be a multiple of the pointer size (%zu)", (long long)stride,
                           sizeof(void *));
        s->spacing = (size_t)stride;
        break;
    case PAT_RANDOM:
    case PAT_GLOBAL:
        if (line % (int64_t)sizeof(void *))
            return bk_fail(ctx, "line_bytes=%lld must be a multiple of the pointer size (%zu)", (long long)line,
                           sizeof(void *));
        if (s->pat == PAT_RANDOM && page % line)
            return bk_fail(ctx, "page_bytes=%lld must be a multiple of line_bytes=%lld", (long long)page,
                           (long long)line);
        s->spacing = (size_t)line;
        s->per_page = (size_t)(page / line);
        break;
    }
    s->nslots = (size_t)size / s->spacing;
    if (s->nslots == 0)
        return bk_fail(ctx, "size_bytes=%lld holds no slot of %zu bytes; raise size_bytes or lower the spacing",
                       (long long)size, s->spacing);
#if SIZE_MAX > UINT32_MAX /* a 32-bit size_t cannot count more slots than that anyway */
    if ((uint64_t)s->nslots > UINT32_MAX)
        return bk_fail(ctx, "size_bytes=%lld makes more than 2^32 slots; raise line_bytes", (long long)size);
#endif
    s->base = bk_run_alloc(ctx, s->nslots * s->spacing, "the chain (lower size_bytes)");
    if (!s->base)
        return -1;

    /* Link the slots in the pattern's order; the last links back to the first: one cycle. */
    lat_order o;
    if (order_open(&o, s) != 0)
        return bk_fail(ctx, "out of memory for the chain's order");
    size_t first = slot_at(&o, 0), prev = first;
    for (size_t k = 1; k < s->nslots; k++) {
        size_t cur = slot_at(&o, k);
        *(void **)slot_addr(s, prev) = slot_addr(s, cur);
        prev = cur;
    }
    *(void **)slot_addr(s, prev) = slot_addr(s, first);
    free(o.buf);
    s->p = slot_addr(s, first);

    char src[64];
    uint64_t llc = llc_bytes(src, sizeof src);
    bk_info_num(ctx, "llc_bytes", (double)llc);
    bk_info_str(ctx, "llc_source", src);
    bk_info_num(ctx, "slots", (double)s->nslots);
    bk_info_num(ctx, "slot_spacing_bytes", (double)s->spacing);
    bk_info_num(ctx, "array_bytes", (double)(s->nslots * s->spacing));
    bk_info_num(ctx, "accesses_per_rep", LAT_ACCESSES);
    if (s->pat == PAT_RANDOM)
        bk_info_num(ctx, "slots_per_page", (double)s->per_page);

    bk_set_amount(ctx, "ns_per_access", LAT_ACCESSES);
    int64_t khz = bk_arg_int(ctx, "freq_khz");
    if (khz > 0)
        bk_set_amount(ctx, "cycles_per_access", LAT_ACCESSES * 1e6 / (double)khz); /* ns * kHz * 1e-6 = cycles */
    else
        bk_skip_metric(ctx, "cycles_per_access", "freq_khz not given: pass the CPU clock in kHz to get cycles");
    return 0;
}

/* The timed loop: nothing but dependent loads, 16 per loop step so that the loop's own count is hidden. */
static int lat_run(bk_ctx *ctx, void *state, uint64_t reps)
{
    (void)ctx;
    lat_state *s = state;
    void *p = s->p;
    for (uint64_t r = 0; r < reps; r++) {
        for (unsigned i = 0; i < LAT_ACCESSES / 16; i++) {
            p = *(void **)p;
            p = *(void **)p;
            p = *(void **)p;
            p = *(void **)p;
            p = *(void **)p;
            p = *(void **)p;
            p = *(void **)p;
            p = *(void **)p;
            p = *(void **)p;
            p = *(void **)p;
            p = *(void **)p;
            p = *(void **)p;
            p = *(void **)p;
            p = *(void **)p;
            p = *(void **)p;
            p = *(void **)p;
        }
    }
    s->p = p;
    s->steps += reps * LAT_ACCESSES;
    return 0;
}

/* Break the cycle: the first slot links to itself (or, in a one-slot chain, into the middle of its slot). */
static void lat_corrupt(void *state)
{
    lat_state *s = state;
    lat_order o;
    if (order_open(&o, s) != 0)
        return;
    void *first = slot_addr(s, slot_at(&o, 0));
    *(void **)first = s->nslots > 1 ? first : (char *)first + sizeof(void *);
    free(o.buf);
}

static int lat_verify(bk_ctx *ctx, void *state)
{
    lat_state *s = state;
    lat_order o;
    uint8_t *seen = calloc(s->nslots / 8 + 1, 1);
    if (!seen || order_open(&o, s) != 0) {
        free(seen);
        return bk_fail(ctx, "out of memory for verification");
    }
    int rc = 0;
    uint64_t order_hash = BK_FNV_OFFSET;
    /* 1. The chase ended where the pattern says it must after that many steps (computed from the order,
     *    not by walking the memory again). */
    size_t want = slot_at(&o, (size_t)(s->steps % s->nslots));
    if (s->p != slot_addr(s, want)) {
        rc = bk_fail(ctx, "after %llu loads the chase stands at %p, expected slot %zu (%p)",
                     (unsigned long long)s->steps, s->p, want, slot_addr(s, want));
        goto out;
    }
    /* 2. The chain in memory is the pattern's order and one cycle through every slot exactly once.
     *    The checksum folds the visiting order (FNV-1a over the slot numbers): the same on every run. */
    size_t start = slot_at(&o, 0);
    char *p = slot_addr(s, start);
    uintptr_t lo = (uintptr_t)s->base, hi = lo + s->nslots * s->spacing;
    for (size_t k = 0; k < s->nslots; k++) {
        uintptr_t a = (uintptr_t)p;
        if (a < lo || a >= hi || (a - lo) % s->spacing) {
            rc = bk_fail(ctx, "the link at cycle position %zu leaves the slots (%p)", k, (void *)p);
            goto out;
        }
        size_t slot = (a - lo) / s->spacing;
        if (seen[slot / 8] & (1u << (slot % 8))) {
            rc = bk_fail(ctx, "slot %zu is visited twice: the chain is not one cycle of %zu slots", slot, s->nslots);
            goto out;
        }
        seen[slot / 8] |= (uint8_t)(1u << (slot % 8));
        order_hash = (order_hash ^ (uint64_t)slot) * 0x100000001b3ULL;
        size_t expect = slot_at(&o, k);
        if (slot != expect) {
            rc = bk_fail(ctx, "cycle position %zu holds slot %zu, the pattern says %zu", k, slot, expect);
            goto out;
        }
        p = *(char **)p;
    }
    if (p != slot_addr(s, start))
        rc = bk_fail(ctx, "the chain does not close after %zu slots", s->nslots);
out:
    free(seen);
    free(o.buf);
    bk_set_checksum(ctx, order_hash);
    return rc;
}

const bk_kernel bk_mem_latency = {
    .name = "mem.latency",
    .family = "mem",
    .summary = "pointer-chasing load latency over a working set (ccbench / LCTES 2020 patterns)",
    .params = lat_params,
    .metrics = lat_metrics,
    .init = lat_init,
    .run = lat_run,
    .corrupt = lat_corrupt,
    .verify = lat_verify,
};

/* ================================================================================================
 * mem.bandwidth
 * ================================================================================================ */

#define BW_SCALAR 3.0 /* STREAM's q */
#define BW_MEMSET_BYTE 0x5a
#define BW_SLICE_ALIGN 512 /* doubles = 4 KiB: slices start on page boundaries, so first touch places pages */
#define BW_MAX_CPUS 1024

typedef enum { OP_COPY, OP_SCALE, OP_ADD, OP_TRIAD, OP_MEMCPY, OP_MEMSET } bw_op;

static const char *const bw_op_names[] = {"copy", "scale", "add", "triad", "memcpy", "memset"};

/* Arrays each op reads or writes, which is also what STREAM counts as moved per element. */
enum { USE_A = 1, USE_B = 2, USE_C = 4 };
static const int bw_uses[] = {USE_A | USE_C,         USE_B | USE_C, USE_A | USE_B | USE_C,
                              USE_A | USE_B | USE_C, USE_A | USE_C, USE_C};
static const int bw_arrays_counted[] = {2, 2, 3, 3, 2, 1};

/* A reusable barrier whose size can shrink (when a thread could not be created). */
typedef struct {
    pthread_mutex_t m;
    pthread_cond_t c;
    unsigned count, waiting;
    uint64_t generation;
} bw_barrier;

static void bar_init(bw_barrier *b, unsigned count)
{
    pthread_mutex_init(&b->m, NULL);
    pthread_cond_init(&b->c, NULL);
    b->count = count;
    b->waiting = 0;
    b->generation = 0;
}

static void bar_release_locked(bw_barrier *b)
{
    b->waiting = 0;
    b->generation++;
    pthread_cond_broadcast(&b->c);
}

static void bar_wait(bw_barrier *b)
{
    pthread_mutex_lock(&b->m);
    uint64_t gen = b->generation;
    if (++b->waiting >= b->count)
        bar_release_locked(b);
    else
        while (gen == b->generation)
            pthread_cond_wait(&b->c, &b->m);
    pthread_mutex_unlock(&b->m);
}

static void bar_resize(bw_barrier *b, unsigned count)
{
    pthread_mutex_lock(&b->m);
    b->count = count;
    if (b->waiting > 0 && b->waiting >= count)
        bar_release_locked(b);
    pthread_mutex_unlock(&b->m);
}

static void bar_destroy(bw_barrier *b)
{
    pthread_mutex_destroy(&b->m);
    pthread_cond_destroy(&b->c);
}

typedef struct bw_state bw_state;

typedef struct {
    bw_state *s;
    pthread_t tid;
    int cpu; /* asked for */
    int pin_rc;
    int pinned_cpu; /* the single CPU of the thread's affinity read back after pinning, -1 otherwise */
    size_t lo, hi; /* the slice of elements it owns */
} bw_worker;

struct bw_state {
    bw_op op;
    size_t n; /* doubles per array */
    size_t map_bytes;
    double *a, *b, *c;
    int nthreads, started;
    bool sync_ready;
    bw_worker *w;
    bw_barrier go, done, rep;
    bool nontemporal; /* copy/scale/add/triad store with streaming stores */
    uint64_t reps; /* of the current run() call; published before `go` */
    bool quit;
};

static const bk_param bw_params[] = {
    {"op", BK_ENUM, 0, 0, "triad", "copy,scale,add,triad,memcpy,memset", NULL,
     "copy c=a, scale b=q*c, add c=a+b, triad a=b+q*c (STREAM, q=3); memcpy c<-a and memset c (libc)"},
    {"array_bytes", BK_INT, 0, 68719476736.0, "0", NULL, "bytes",
     "bytes of each array (rounded down to whole doubles); 0 = auto: 4x the last-level cache, at least 32 MiB "
     "(STREAM's rule), clamped so that the arrays fit a quarter of the address space and half of MemAvailable"},
    {"threads", BK_INT, 1, 256, "1", NULL, NULL,
     "threads, pinned round-robin to the CPUs this process may use, each owning a contiguous slice"},
    {"stores", BK_ENUM, 0, 0, "normal", "normal,nontemporal", NULL,
     "copy/scale/add/triad: ordinary stores (the written line is read first), or non-temporal streaming "
     "stores that skip that read, as stress-ng's stream stressor does on x86 (x86 and AArch64 STNP only)"},
    {0},
};

static const bk_metric bw_metrics[] = {
    {"mb_s", "MB/s", true, BK_RATE, -1, 1e-6,
     "bytes moved per second as STREAM counts them (copy, scale, memcpy: 2 arrays; add, triad: 3; memset: 1), "
     "MB = 1e6 bytes"},
    {0},
};

/* Initial values: exact binary fractions, different per element, so that q*c, a+b and b+q*c are exact and
 * a misplaced element (a wrong slice offset) shows. */
static double init_a(size_t j) { return 1.0 + (double)(j & 1023) * (1.0 / 1024); }
static double init_b(size_t j) { return 2.0 + (double)((j >> 10) & 1023) * (1.0 / 1024); }
static double init_c(size_t j) { return 0.5 + (double)((j * 7) & 1023) * (1.0 / 2048); }

/* Kept an element loop: GCC would otherwise turn it into a memcpy call, and copy would be memcpy. */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("no-tree-loop-distribute-patterns")))
#endif
static void bw_copy(double *restrict c, const double *restrict a, size_t n)
{
    for (size_t i = 0; i < n; i++)
        c[i] = a[i];
}

static void bw_scale(double *restrict b, const double *restrict c, size_t n)
{
    for (size_t i = 0; i < n; i++)
        b[i] = BW_SCALAR * c[i];
}

static void bw_add(double *restrict c, const double *restrict a, const double *restrict b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        c[i] = a[i] + b[i];
}

static void bw_triad(double *restrict a, const double *restrict b, const double *restrict c, size_t n)
{
    for (size_t i = 0; i < n; i++)
        a[i] = b[i] + BW_SCALAR * c[i];
}

/* One plain pass over [lo, hi) with ordinary stores; also finishes what a streaming pass leaves over (an odd
 * last element: memcpy and memset never stream, init refuses them). */
static void bw_pass_plain(const bw_state *s, size_t lo, size_t hi)
{
    size_t n = hi - lo;
    if (n == 0)
        return;
    switch (s->op) {
    case OP_COPY: bw_copy(s->c + lo, s->a + lo, n); break;
    case OP_SCALE: bw_scale(s->b + lo, s->c + lo, n); break;
    case OP_ADD: bw_add(s->c + lo, s->a + lo, s->b + lo, n); break;
    case OP_TRIAD: bw_triad(s->a + lo, s->b + lo, s->c + lo, n); break;
    case OP_MEMCPY: memcpy(s->c + lo, s->a + lo, n * sizeof(double)); break;
    case OP_MEMSET: memset(s->c + lo, BW_MEMSET_BYTE, n * sizeof(double)); break;
    }
}

#if BW_HAVE_NT && defined(__aarch64__)
/* STNP writes two doubles with a hint that they will not be read again soon; the core may then skip
 * allocating the lines (Cortex-A53/A72 stream such stores to memory). */
static inline void bw_stnp(double *p, double x0, double x1)
{
    __asm__ volatile("stnp %d1, %d2, [%0]" : : "r"(p), "w"(x0), "w"(x1) : "memory");
}

/* The same ops with STNP, two doubles at a time; an odd last element takes an ordinary store. The barrier
 * orders the non-temporal stores before the threads' barrier, as sfence does on x86. */
static void bw_pass_nt(const bw_state *s, size_t lo, size_t hi)
{
    const double *a = s->a, *b = s->b, *c = s->c;
    const double q = BW_SCALAR;
    size_t i = lo;
    switch (s->op) {
    case OP_COPY:
        for (; i + 1 < hi; i += 2)
            bw_stnp(s->c + i, a[i], a[i + 1]);
        break;
    case OP_SCALE:
        for (; i + 1 < hi; i += 2)
            bw_stnp(s->b + i, q * c[i], q * c[i + 1]);
        break;
    case OP_ADD:
        for (; i + 1 < hi; i += 2)
            bw_stnp(s->c + i, a[i] + b[i], a[i + 1] + b[i + 1]);
        break;
    case OP_TRIAD:
        for (; i + 1 < hi; i += 2)
            bw_stnp(s->a + i, b[i] + q * c[i], b[i + 1] + q * c[i + 1]);
        break;
    case OP_MEMCPY:
    case OP_MEMSET: break; /* refused in init */
    }
    __asm__ volatile("dmb ishst" : : : "memory");
    bw_pass_plain(s, i, hi);
}
#elif BW_HAVE_NT
/* The same ops with streaming stores, two doubles at a time (slices start on pages, so 16-byte aligned);
 * an odd last element takes an ordinary store. The fence orders the streaming stores before the barrier. */
static void bw_pass_nt(const bw_state *s, size_t lo, size_t hi)
{
    const double *a = s->a, *b = s->b, *c = s->c;
    const __m128d q = _mm_set1_pd(BW_SCALAR);
    size_t i = lo;
    switch (s->op) {
    case OP_COPY:
        for (; i + 1 < hi; i += 2)
            _mm_stream_pd(s->c + i, _mm_load_pd(a + i));
        break;
    case OP_SCALE:
        for (; i + 1 < hi; i += 2)
            _mm_stream_pd(s->b + i, _mm_mul_pd(q, _mm_load_pd(c + i)));
        break;
    case OP_ADD:
        for (; i + 1 < hi; i += 2)
            _mm_stream_pd(s->c + i, _mm_add_pd(_mm_load_pd(a + i), _mm_load_pd(b + i)));
        break;
    case OP_TRIAD:
        for (; i + 1 < hi; i += 2)
            _mm_stream_pd(s->a + i, _mm_add_pd(_mm_load_pd(b + i), _mm_mul_pd(q, _mm_load_pd(c + i))));
        break;
    case OP_MEMCPY:
    case OP_MEMSET: break; /* refused in init */
    }
    _mm_sfence();
    bw_pass_plain(s, i, hi);
}
#endif

/* One pass of the op over elements [lo, hi). */
static void bw_pass(const bw_state *s, size_t lo, size_t hi)
{
    if (hi == lo)
        return;
#if BW_HAVE_NT
    if (s->nontemporal) {
        bw_pass_nt(s, lo, hi);
        return;
    }
#endif
    bw_pass_plain(s, lo, hi);
}

static void *bw_worker_main(void *arg)
{
    bw_worker *w = arg;
    bw_state *s = w->s;
    w->pin_rc = bk_pin_thread_to_cpu(w->cpu);
    cpu_set_t set;
    CPU_ZERO(&set);
    w->pinned_cpu = -1;
    if (pthread_getaffinity_np(pthread_self(), sizeof set, &set) == 0 && CPU_COUNT(&set) == 1 &&
        CPU_ISSET((size_t)w->cpu, &set))
        w->pinned_cpu = w->cpu;
    /* First touch from the owning thread, already on its CPU: the kernel places these pages near it. */
    int use = bw_uses[s->op];
    for (size_t j = w->lo; j < w->hi; j++) {
        if (use & USE_A)
            s->a[j] = init_a(j);
        if (use & USE_B)
            s->b[j] = init_b(j);
        if (use & USE_C)
            s->c[j] = init_c(j);
    }
    bar_wait(&s->done);
    for (;;) {
        bar_wait(&s->go);
        if (s->quit)
            break;
        for (uint64_t r = 0; r < s->reps; r++) {
            bw_pass(s, w->lo, w->hi);
            if (r + 1 < s->reps)
                bar_wait(&s->rep); /* a rep is one pass over the whole arrays */
        }
        bar_wait(&s->done);
    }
    return NULL;
}

static double *bw_map(size_t bytes)
{
    /* Anonymous pages are not touched here: the owning thread touches its slice first. */
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void bw_fini(void *state)
{
    bw_state *s = state;
    if (s->started > 0) {
        s->quit = true;
        bar_wait(&s->go);
        for (int t = 0; t < s->started; t++)
            pthread_join(s->w[t].tid, NULL);
    }
    if (s->sync_ready) {
        bar_destroy(&s->go);
        bar_destroy(&s->done);
        bar_destroy(&s->rep);
    }
    double *arrays[3] = {s->a, s->b, s->c};
    for (int i = 0; i < 3; i++)
        if (arrays[i])
            munmap(arrays[i], s->map_bytes);
}

static int bw_init(bk_ctx *ctx, void **state)
{
    bw_state *s = bk_run_state(ctx, state, sizeof *s);
    if (!s)
        return -1;
    const char *op = bk_arg_str(ctx, "op");
    for (int i = 0; i < 6; i++)
        if (strcmp(op, bw_op_names[i]) == 0)
            s->op = (bw_op)i;

    s->nontemporal = strcmp(bk_arg_str(ctx, "stores"), "nontemporal") == 0;
    if (s->nontemporal && (s->op == OP_MEMCPY || s->op == OP_MEMSET))
        return bk_fail(ctx, "stores=nontemporal applies to copy, scale, add and triad; memcpy and memset store "
                            "as libc chooses: use stores=normal");
    if (s->nontemporal && !BW_HAVE_NT)
        return bk_unsupported(ctx, "stores=nontemporal needs x86 streaming stores or AArch64 STNP; this "
                                   "architecture (e.g. 32-bit ARM) has no non-temporal store; use stores=normal");

    char src[64], how[320];
    uint64_t llc = llc_bytes(src, sizeof src);
    uint64_t bytes = (uint64_t)bk_arg_int(ctx, "array_bytes");
    int use = bw_uses[s->op];
    int mapped = ((use & USE_A) != 0) + ((use & USE_B) != 0) + ((use & USE_C) != 0);
    uint64_t avail = 0, limit = 0;
    if (bytes == 0) {
        bytes = 4 * llc;
        if (llc == 0)
            snprintf(how, sizeof how, "auto: 32 MiB floor (last-level cache size unknown)");
        else if (bytes < 32 * MIB)
            snprintf(how, sizeof how, "auto: 32 MiB floor (4 x LLC %llu B from %s is smaller)", (unsigned long long)llc,
                     src);
        else
            snprintf(how, sizeof how, "auto: 4 x LLC %llu B (%s)", (unsigned long long)llc, src);
        if (bytes < 32 * MIB)
            bytes = 32 * MIB;
        /* The arrays together stay within a quarter of the address space (a 32-bit process has 3 GiB or
         * less, shared with its libraries and stacks: a host's 300 MiB LLC would ask 3.6 GiB for triad) and
         * within half of MemAvailable (the rest is the system's; a swapping run measures the disk), in whole
         * MiB. An explicit array_bytes is taken as given. */
        uint64_t space = (uint64_t)(SIZE_MAX / 4) / (uint64_t)mapped;
        avail = mem_available_bytes();
        uint64_t mem = avail ? avail / 2 / (uint64_t)mapped : UINT64_MAX;
        limit = (space < mem ? space : mem) / MIB * MIB;
        if (limit < MIB)
            limit = MIB;
        if (bytes > limit) {
            size_t n = strlen(how);
            if (space <= mem)
                snprintf(how + n, sizeof how - n,
                         ", clamped to %llu B: %d arrays within a quarter of this %d-bit "
                         "address space",
                         (unsigned long long)limit, mapped, (int)(sizeof(size_t) * 8));
            else
                snprintf(how + n, sizeof how - n,
                         ", clamped to %llu B: %d arrays within half of MemAvailable "
                         "%llu B",
                         (unsigned long long)limit, mapped, (unsigned long long)avail);
            bytes = limit;
        }
    } else {
        snprintf(how, sizeof how, "array_bytes parameter");
    }
    if (bytes > SIZE_MAX / 4)
        return bk_fail(ctx, "array_bytes=%llu does not fit this address space; lower array_bytes",
                       (unsigned long long)bytes);
    s->n = (size_t)(bytes / sizeof(double));
    if (s->n == 0)
        return bk_fail(ctx, "array_bytes=%llu holds no double; use 0 (auto) or at least 8", (unsigned long long)bytes);
    s->map_bytes = s->n * sizeof(double);
    if (((use & USE_A) && !(s->a = bw_map(s->map_bytes))) || ((use & USE_B) && !(s->b = bw_map(s->map_bytes))) ||
        ((use & USE_C) && !(s->c = bw_map(s->map_bytes))))
        return bk_fail(ctx, "cannot map %d arrays of %zu bytes: %s; lower array_bytes", bw_arrays_counted[s->op],
                       s->map_bytes, strerror(errno));

    int allowed[BW_MAX_CPUS];
    int ncpu = bk_allowed_cpus(allowed, BW_MAX_CPUS);
    if (ncpu <= 0)
        return bk_fail(ctx, "cannot read this process's CPU affinity");
    s->nthreads = (int)bk_arg_int(ctx, "threads");
    s->w = bk_run_alloc(ctx, (size_t)s->nthreads * sizeof *s->w, "the threads' state");
    if (!s->w)
        return -1;
    size_t per = (s->n + (size_t)s->nthreads - 1) / (size_t)s->nthreads;
    per = (per + BW_SLICE_ALIGN - 1) / BW_SLICE_ALIGN * BW_SLICE_ALIGN;
    for (int t = 0; t < s->nthreads; t++) {
        bw_worker *w = &s->w[t];
        w->s = s;
        w->cpu = allowed[t % ncpu];
        w->lo = (size_t)t * per < s->n ? (size_t)t * per : s->n;
        w->hi = w->lo + per < s->n ? w->lo + per : s->n;
    }
    bar_init(&s->go, (unsigned)s->nthreads + 1);
    bar_init(&s->done, (unsigned)s->nthreads + 1);
    bar_init(&s->rep, (unsigned)s->nthreads);
    s->sync_ready = true;
    int create_rc = 0;
    for (int t = 0; t < s->nthreads; t++) {
        create_rc = pthread_create(&s->w[t].tid, NULL, bw_worker_main, &s->w[t]);
        if (create_rc != 0) {
            /* Shrink the barriers to the threads that exist so that they can be released and joined. */
            bar_resize(&s->done, (unsigned)t + 1);
            bar_resize(&s->go, (unsigned)t + 1);
            bar_resize(&s->rep, t > 0 ? (unsigned)t : 1);
            break;
        }
        s->started++;
    }
    bar_wait(&s->done); /* every started thread is pinned and has touched its slice */
    if (create_rc != 0)
        return bk_fail(ctx, "cannot create thread %d of %d: %s; lower threads", s->started + 1, s->nthreads,
                       strerror(create_rc));

    char cpus[BW_MAX_CPUS * 5] = "";
    size_t len = 0;
    for (int t = 0; t < s->nthreads; t++) {
        bw_worker *w = &s->w[t];
        if (w->pin_rc != 0 || w->pinned_cpu != w->cpu)
            return bk_fail(ctx, "thread %d could not be pinned to CPU %d: %s", t, w->cpu,
                           w->pin_rc ? strerror(w->pin_rc) : "its affinity reads back differently");
        len += (size_t)snprintf(cpus + len, sizeof cpus - len, "%s%d", t ? "," : "", w->pinned_cpu);
        if (len >= sizeof cpus)
            len = sizeof cpus - 1;
    }
    bk_info_str(ctx, "cpus", cpus);
    bk_info_num(ctx, "threads", s->nthreads);
    bk_info_num(ctx, "array_bytes", (double)s->map_bytes);
    bk_info_str(ctx, "array_bytes_source", how);
    if (limit) { /* auto: the most each array could have been given here */
        bk_info_num(ctx, "array_bytes_limit", (double)limit);
        bk_info_num(ctx, "mem_available_bytes", (double)avail);
    }
    bk_info_num(ctx, "llc_bytes", (double)llc);
    bk_info_str(ctx, "llc_source", src);
    bk_info_num(ctx, "arrays_counted", bw_arrays_counted[s->op]);
    bk_info_str(ctx, "stores", s->nontemporal ? "nontemporal" : "normal");
    double per_rep = (double)bw_arrays_counted[s->op] * (double)s->map_bytes;
    bk_info_num(ctx, "bytes_per_rep", per_rep);
    bk_set_amount(ctx, "mb_s", per_rep);
    return 0;
}

static int bw_run(bk_ctx *ctx, void *state, uint64_t reps)
{
    (void)ctx;
    bw_state *s = state;
    s->reps = reps;
    bar_wait(&s->go);
    bar_wait(&s->done);
    return 0;
}

static double *bw_output(const bw_state *s)
{
    switch (s->op) {
    case OP_SCALE: return s->b;
    case OP_TRIAD: return s->a;
    default: return s->c;
    }
}

/* Flip the top mantissa bit of one element of the result: a change of at least a quarter of its value. */
static void bw_corrupt(void *state)
{
    bw_state *s = state;
    double *out = bw_output(s);
    uint64_t bits;
    memcpy(&bits, &out[s->n / 2], sizeof bits);
    bits ^= 1ULL << 51;
    memcpy(&out[s->n / 2], &bits, sizeof bits);
}

/* STREAM's check: every element against its expected value. Each op reads only arrays it does not write,
 * so after k >= 1 reps the closed form is the op applied once to the initial values. */
static int bw_verify(bk_ctx *ctx, void *state)
{
    bw_state *s = state;
    const double *out = bw_output(s);
    const double eps = 1e-13; /* STREAM's tolerance for doubles, here per element */
    uint64_t memset_word;
    memset(&memset_word, BW_MEMSET_BYTE, sizeof memset_word);
    uint64_t fold = 0;
    for (size_t j = 0; j < s->n; j++) {
        uint64_t bits;
        memcpy(&bits, &out[j], sizeof bits);
        fold += bits;
        bool good;
        double want = 0;
        switch (s->op) {
        case OP_MEMCPY: good = memcmp(&out[j], &s->a[j], sizeof(double)) == 0; break;
        case OP_MEMSET: good = bits == memset_word; break;
        default:
            want = s->op == OP_COPY    ? init_a(j)
                   : s->op == OP_SCALE ? BW_SCALAR * init_c(j)
                   : s->op == OP_ADD   ? init_a(j) + init_b(j)
                                       : init_b(j) + BW_SCALAR * init_c(j);
            double err = out[j] - want;
            good = (err < 0 ? -err : err) <= eps * (want < 0 ? -want : want);
            break;
        }
        if (!good) {
            bk_set_checksum(ctx, bk_fnv1a(BK_FNV_OFFSET, &fold, sizeof fold));
            if (s->op == OP_MEMCPY)
                return bk_fail(ctx, "memcpy: element %zu of the destination (%.17g) differs from the source (%.17g)", j,
                               out[j], s->a[j]);
            if (s->op == OP_MEMSET)
                return bk_fail(ctx, "memset: word %zu is 0x%016llx, expected 0x%016llx", j, (unsigned long long)bits,
                               (unsigned long long)memset_word);
            return bk_fail(ctx, "%s: element %zu is %.17g, expected %.17g", bw_op_names[s->op], j, out[j], want);
        }
    }
    bk_set_checksum(ctx, bk_fnv1a(BK_FNV_OFFSET, &fold, sizeof fold));
    return 0;
}

const bk_kernel bk_mem_bandwidth = {
    .name = "mem.bandwidth",
    .family = "mem",
    .summary = "STREAM-style memory bandwidth (copy, scale, add, triad) and libc memcpy/memset, pinned threads",
    .params = bw_params,
    .metrics = bw_metrics,
    .init = bw_init,
    .run = bw_run,
    .corrupt = bw_corrupt,
    .verify = bw_verify,
    .fini = bw_fini,
};
