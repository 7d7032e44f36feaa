/* compress: the compression benchmarks of the satellite-computer study (7-Zip's LZMA, bzip2 and parallel bzip2) plus zstd
 * and zlib, on the sensor-like corpus (corpus.h) or on the user's own file.
 *
 * One rep compresses the whole input once, then decompresses it once; the phases time each half. The libraries
 * are used as applications use them: reused contexts (no per-call allocation of the LZMA match finder), formats
 * the standard tools read (.xz with CRC64 as `xz`, .bz2 as `bzip2`/`pbzip2`, zstd frames with a checksum as
 * `zstd`, zlib streams). Verification: the decompressed output equals the input byte for byte (compared, and
 * its FNV-1a against the input's), and for parallel bzip2 the concatenated streams also decode in one pass
 * as `bzip2 -d` reads them. The compressed size and FNV-1a go under "info", so that tests can compare the
 * stream with what the reference tools and Python's bindings produce. */
#include "core.h"
#include "corpus.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if BK_HAVE_LZMA
#include <lzma.h>
#endif
#if BK_HAVE_BZIP2
#include <bzlib.h>
#endif
#if BK_HAVE_ZSTD
#include <zstd.h>
#endif
#if BK_HAVE_ZLIB
#include <zlib.h>
#endif

/* Small enough that a default run (warm-up capped at 2 s, then 10 iterations) takes about 3 s with LZMA at
 * preset 6 on a 2-core VM (~2.5 MB/s); campaigns set bytes to the sizes they study. */
#define CZ_DEFAULT_BYTES "256k"

enum { PH_COMPRESS, PH_DECOMPRESS };
static const char *const cz_phases[] = {"compress", "decompress", NULL};

static const bk_metric cz_metrics[] = {
    {"compress_mb_s", "MB/s", true, BK_RATE, PH_COMPRESS, 1e-6, "uncompressed bytes compressed per second, 10^6 B/s"},
    {"decompress_mb_s", "MB/s", true, BK_RATE, PH_DECOMPRESS, 1e-6, "uncompressed bytes restored per second, 10^6 B/s"},
    {"ratio", "x", true, BK_VALUE, -1, 1.0, "uncompressed size / compressed size"},
    {0},
};

typedef struct cz_state cz_state;

/* One library: set up its contexts and the bound on its output, then compress and decompress the whole input.
 * compress/decompress return 0, or -1 with the library's complaint in s->err. */
typedef struct {
    const char *name;
    int (*setup)(bk_ctx *ctx, cz_state *s);
    int (*compress)(cz_state *s);
    int (*decompress)(cz_state *s);
    int (*verify_stream)(cz_state *s); /* an extra check of the compressed stream, or NULL */
    void (*teardown)(cz_state *s);
    /* NULL; in a build without the library, why (its kernel is unsupported: the core calls no init) */
    const char *missing;
} cz_codec;

typedef struct {
    size_t in_off, in_len; /* the block of input */
    size_t out_off, out_len; /* its bzip2 stream in comp: out_off is a bound slot until compaction */
    int rc;
} cz_block;

struct cz_state {
    const cz_codec *codec;
    unsigned char *in, *comp, *out;
    size_t n, comp_cap, comp_len, out_len;
    uint64_t in_fnv;
    int level;
    char err[256];
    void *enc, *dec; /* the library's contexts */
    /* parallel bzip2 */
    int threads, ncpus;
    int cpus[256];
    size_t nblocks;
    cz_block *blocks;
    atomic_size_t next_block;
};

/* Keeps the library's complaint for bk_fail in run (which has the ctx); returns -1. (Unused, like cz_init, in a
 * build without any compression library.) */
__attribute__((format(printf, 2, 3), unused)) static int cz_errf(cz_state *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->err, sizeof s->err, fmt, ap);
    va_end(ap);
    return -1;
}

/* ---- LZMA (.xz, as `xz` and 7-Zip's LZMA2 encoder) ---- */

#if BK_HAVE_LZMA
static const char *lzma_msg(lzma_ret r)
{
    switch (r) {
    case LZMA_MEM_ERROR: return "out of memory";
    case LZMA_OPTIONS_ERROR: return "unsupported options";
    case LZMA_DATA_ERROR: return "corrupt data";
    case LZMA_FORMAT_ERROR: return "not an .xz stream";
    case LZMA_BUF_ERROR: return "output buffer too small or input truncated";
    case LZMA_MEMLIMIT_ERROR: return "memory limit reached";
    default: return "error";
    }
}

typedef struct {
    lzma_stream enc, dec;
    uint32_t preset;
} lzma_ctx;

static int lzma_setup(bk_ctx *ctx, cz_state *s)
{
    lzma_ctx *z = calloc(1, sizeof *z);
    if (!z)
        return bk_fail(ctx, "out of memory");
    z->enc = (lzma_stream)LZMA_STREAM_INIT;
    z->dec = (lzma_stream)LZMA_STREAM_INIT;
    z->preset = (uint32_t)bk_arg_int(ctx, "preset") | (bk_arg_int(ctx, "extreme") ? LZMA_PRESET_EXTREME : 0);
    s->enc = z;
    s->comp_cap = lzma_stream_buffer_bound(s->n);
    bk_info_str(ctx, "lzma_version", lzma_version_string());
    bk_info_num(ctx, "lzma_encoder_memory_bytes", (double)lzma_easy_encoder_memusage(z->preset));
    return 0;
}

/* Runs a coder over the whole buffer until the end of the stream. LZMA_FINISH may need several calls (the
 * decoder reads the index and footer after the output is full); liblzma answers LZMA_BUF_ERROR rather than
 * LZMA_OK when it cannot progress, so the loop ends. */
static lzma_ret lzma_all(lzma_stream *st, const unsigned char *in, size_t n, unsigned char *out, size_t cap,
                         size_t *produced)
{
    st->next_in = in;
    st->avail_in = n;
    st->next_out = out;
    st->avail_out = cap;
    lzma_ret r;
    do
        r = lzma_code(st, LZMA_FINISH);
    while (r == LZMA_OK);
    *produced = cap - st->avail_out;
    return r;
}

static int lzma_compress(cz_state *s)
{
    lzma_ctx *z = s->enc;
    /* Re-initialising the same stream reuses its match finder and dictionary: no allocation per rep. CRC64 is
     * xz's default check. */
    lzma_ret r = lzma_easy_encoder(&z->enc, z->preset, LZMA_CHECK_CRC64);
    if (r == LZMA_OK)
        r = lzma_all(&z->enc, s->in, s->n, s->comp, s->comp_cap, &s->comp_len);
    return r == LZMA_STREAM_END ? 0 : cz_errf(s, "lzma compression failed: %s (lzma_ret %d)", lzma_msg(r), (int)r);
}

static int lzma_decompress(cz_state *s)
{
    lzma_ctx *z = s->enc;
    lzma_ret r = lzma_stream_decoder(&z->dec, UINT64_MAX, 0); /* verifies the CRC64 as it goes */
    if (r == LZMA_OK)
        r = lzma_all(&z->dec, s->comp, s->comp_len, s->out, s->n, &s->out_len);
    return r == LZMA_STREAM_END ? 0 : cz_errf(s, "lzma decompression failed: %s (lzma_ret %d)", lzma_msg(r), (int)r);
}

static void lzma_teardown(cz_state *s)
{
    lzma_ctx *z = s->enc;
    if (z) {
        lzma_end(&z->enc);
        lzma_end(&z->dec);
        free(z);
    }
}

static const cz_codec lzma_codec = {"lzma", lzma_setup, lzma_compress, lzma_decompress, NULL, lzma_teardown, NULL};
#else
static const cz_codec lzma_codec = {.name = "lzma",
                                    .missing = "built without liblzma (install liblzma-dev and rebuild boardlab)"};
#endif

/* ---- bzip2, and parallel bzip2 as pbzip2 does it ---- */

#if BK_HAVE_BZIP2
static const char *bz_msg(int rc)
{
    switch (rc) {
    case BZ_MEM_ERROR: return "out of memory";
    case BZ_OUTBUFF_FULL: return "output buffer full";
    case BZ_DATA_ERROR: return "corrupt data";
    case BZ_DATA_ERROR_MAGIC: return "not a bzip2 stream";
    case BZ_UNEXPECTED_EOF: return "truncated stream";
    case BZ_PARAM_ERROR: return "bad parameter";
    default: return "error";
    }
}

/* bzlib.h: the output of one stream fits in 1% more than the input plus 600 bytes. */
static size_t bz_bound(size_t n) { return n + n / 100 + 600; }

static int bz_setup(bk_ctx *ctx, cz_state *s)
{
    s->threads = (int)bk_arg_int(ctx, "threads");
    bk_info_str(ctx, "bzip2_version", BZ2_bzlibVersion());
    if (s->threads == 1) {
        s->comp_cap = bz_bound(s->n);
        return 0;
    }
    /* pbzip2: the input in blocks of level x 100 kB, each an independent bzip2 stream, concatenated in order. */
    size_t bs = (size_t)s->level * 100000;
    s->nblocks = (s->n + bs - 1) / bs;
    s->blocks = calloc(s->nblocks, sizeof *s->blocks);
    if (!s->blocks)
        return bk_fail(ctx, "out of memory");
    size_t off = 0;
    for (size_t i = 0; i < s->nblocks; i++) {
        cz_block *b = &s->blocks[i];
        b->in_off = i * bs;
        b->in_len = s->n - b->in_off < bs ? s->n - b->in_off : bs;
        b->out_off = off;
        off += bz_bound(b->in_len);
    }
    s->comp_cap = off;
    s->ncpus = bk_allowed_cpus(s->cpus, 256);
    if (s->ncpus < 1)
        return bk_fail(ctx, "no CPU is allowed for this process");
    bk_info_num(ctx, "bzip2_streams", (double)s->nblocks);
    bk_info_num(ctx, "allowed_cpus", s->ncpus);
    return 0;
}

typedef struct {
    cz_state *s;
    int index;
    bool decompress;
} bz_worker;

/* A worker pinned to one of the allowed CPUs takes blocks in order until none is left. */
static void *bz_work(void *arg)
{
    bz_worker *w = arg;
    cz_state *s = w->s;
    bk_pin_thread_to_cpu(s->cpus[w->index % s->ncpus]);
    for (;;) {
        size_t i = atomic_fetch_add(&s->next_block, 1);
        if (i >= s->nblocks)
            break;
        cz_block *b = &s->blocks[i];
        if (!w->decompress) {
            unsigned len = (unsigned)bz_bound(b->in_len);
            b->rc = BZ2_bzBuffToBuffCompress((char *)s->comp + b->out_off, &len, (char *)s->in + b->in_off,
                                             (unsigned)b->in_len, s->level, 0, 0);
            b->out_len = len;
        } else {
            unsigned len = (unsigned)b->in_len;
            b->rc = BZ2_bzBuffToBuffDecompress((char *)s->out + b->in_off, &len, (char *)s->comp + b->out_off,
                                               (unsigned)b->out_len, 0, 0);
            if (b->rc == BZ_OK && len != b->in_len)
                b->rc = BZ_UNEXPECTED_EOF;
        }
    }
    return NULL;
}

static int bz_parallel(cz_state *s, bool decompress)
{
    int nt = s->threads < (int)s->nblocks ? s->threads : (int)s->nblocks;
    pthread_t tid[256];
    bz_worker w[256];
    atomic_store(&s->next_block, 0);
    int started = 0;
    for (; started < nt; started++) {
        w[started] = (bz_worker){s, started, decompress};
        if (pthread_create(&tid[started], NULL, bz_work, &w[started]) != 0)
            break;
    }
    if (started == 0) /* no thread could start: do the work here rather than not at all */
        bz_work(&(bz_worker){s, 0, decompress});
    for (int t = 0; t < started; t++)
        pthread_join(tid[t], NULL);
    for (size_t i = 0; i < s->nblocks; i++)
        if (s->blocks[i].rc != BZ_OK)
            return cz_errf(s, "bzip2 %s of stream %zu failed: %s (%d)", decompress ? "decompression" : "compression", i,
                           bz_msg(s->blocks[i].rc), s->blocks[i].rc);
    return 0;
}

static int bz_compress(cz_state *s)
{
    if (s->threads == 1) {
        unsigned len = (unsigned)s->comp_cap;
        int rc = BZ2_bzBuffToBuffCompress((char *)s->comp, &len, (char *)s->in, (unsigned)s->n, s->level, 0, 0);
        s->comp_len = len;
        return rc == BZ_OK ? 0 : cz_errf(s, "bzip2 compression failed: %s (%d)", bz_msg(rc), rc);
    }
    /* Streams were written into bound-sized slots; close the gaps so the output is one file's worth of bytes
     * (moving down, in order, never overwrites a stream not yet moved). */
    if (bz_parallel(s, false) != 0)
        return -1;
    size_t off = 0;
    for (size_t i = 0; i < s->nblocks; i++) {
        cz_block *b = &s->blocks[i];
        if (b->out_off != off)
            memmove(s->comp + off, s->comp + b->out_off, b->out_len);
        b->out_off = off;
        off += b->out_len;
    }
    s->comp_len = off;
    /* The next compression writes into the bound slots again. */
    return 0;
}

static void bz_reset_slots(cz_state *s)
{
    size_t off = 0;
    for (size_t i = 0; i < s->nblocks; i++) {
        s->blocks[i].out_off = off;
        off += bz_bound(s->blocks[i].in_len);
    }
}

static int bz_decompress(cz_state *s)
{
    int rc;
    if (s->threads == 1) {
        unsigned len = (unsigned)s->n;
        rc = BZ2_bzBuffToBuffDecompress((char *)s->out, &len, (char *)s->comp, (unsigned)s->comp_len, 0, 0);
        s->out_len = len;
        return rc == BZ_OK ? 0 : cz_errf(s, "bzip2 decompression failed: %s (%d)", bz_msg(rc), rc);
    }
    /* The stream boundaries come from the compression; pbzip2 finds them by scanning for stream headers. */
    rc = bz_parallel(s, true);
    s->out_len = rc == 0 ? s->n : 0;
    /* Compaction moved the streams: the next compression starts from the bound slots again. */
    bz_reset_slots(s);
    return rc;
}

/* The concatenated streams, decoded in one pass as `bzip2 -d` reads a .bz2 file, independently of the
 * parallel path and its block table. */
static int bz_verify_stream(cz_state *s)
{
    if (s->threads == 1)
        return 0;
    enum { CHUNK = 1 << 16 };
    char *buf = malloc(CHUNK);
    if (!buf)
        return cz_errf(s, "out of memory");
    bz_stream st;
    memset(&st, 0, sizeof st);
    int rc = BZ2_bzDecompressInit(&st, 0, 0);
    size_t in_pos = 0, done = 0, streams = 1;
    bool ok = rc == BZ_OK;
    while (ok) {
        st.next_in = (char *)s->comp + in_pos;
        st.avail_in = (unsigned)(s->comp_len - in_pos);
        st.next_out = buf;
        st.avail_out = CHUNK;
        rc = BZ2_bzDecompress(&st);
        size_t got = CHUNK - st.avail_out;
        in_pos = s->comp_len - st.avail_in;
        if (got > s->n - done || memcmp(buf, s->in + done, got) != 0) {
            ok = false;
            snprintf(s->err, sizeof s->err,
                     "the concatenated bzip2 streams decode to other bytes than the input "
                     "near offset %zu",
                     done);
            break;
        }
        done += got;
        if (rc == BZ_STREAM_END) {
            BZ2_bzDecompressEnd(&st);
            if (in_pos == s->comp_len)
                break;
            memset(&st, 0, sizeof st); /* the next stream of the file */
            streams++;
            rc = BZ2_bzDecompressInit(&st, 0, 0);
            ok = rc == BZ_OK;
        } else if (rc != BZ_OK || (got == 0 && st.avail_in == 0)) {
            ok = false;
            snprintf(s->err, sizeof s->err, "single-pass bzip2 decoding of the concatenated streams failed: %s",
                     bz_msg(rc == BZ_OK ? BZ_UNEXPECTED_EOF : rc));
            BZ2_bzDecompressEnd(&st);
        }
    }
    free(buf);
    if (ok && (done != s->n || streams != s->nblocks)) {
        snprintf(s->err, sizeof s->err, "single-pass decoding gave %zu bytes in %zu streams, expected %zu in %zu", done,
                 streams, s->n, s->nblocks);
        ok = false;
    }
    return ok ? 0 : -1;
}

static void bz_teardown(cz_state *s) { free(s->blocks); }

static const cz_codec bz_codec = {"bzip2", bz_setup, bz_compress, bz_decompress, bz_verify_stream, bz_teardown, NULL};
#else
static const cz_codec bz_codec = {.name = "bzip2",
                                  .missing = "built without libbz2 (install libbz2-dev and rebuild boardlab)"};
#endif

/* ---- zstd ---- */

#if BK_HAVE_ZSTD
static int zstd_setup(bk_ctx *ctx, cz_state *s)
{
    s->enc = ZSTD_createCCtx();
    s->dec = ZSTD_createDCtx();
    if (!s->enc || !s->dec)
        return bk_fail(ctx, "out of memory creating zstd contexts");
    /* The frame the zstd tool writes by default: with the content size and an XXH64 checksum. */
    size_t r = ZSTD_CCtx_setParameter(s->enc, ZSTD_c_compressionLevel, s->level);
    if (!ZSTD_isError(r))
        r = ZSTD_CCtx_setParameter(s->enc, ZSTD_c_checksumFlag, 1);
    if (ZSTD_isError(r))
        return bk_fail(ctx, "zstd rejected level %d: %s", s->level, ZSTD_getErrorName(r));
    s->comp_cap = ZSTD_compressBound(s->n);
    bk_info_str(ctx, "zstd_version", ZSTD_versionString());
    return 0;
}

static int zstd_compress(cz_state *s)
{
    size_t r = ZSTD_compress2(s->enc, s->comp, s->comp_cap, s->in, s->n);
    if (ZSTD_isError(r))
        return cz_errf(s, "zstd compression failed: %s", ZSTD_getErrorName(r));
    s->comp_len = r;
    return 0;
}

static int zstd_decompress(cz_state *s)
{
    size_t r = ZSTD_decompressDCtx(s->dec, s->out, s->n, s->comp, s->comp_len);
    if (ZSTD_isError(r))
        return cz_errf(s, "zstd decompression failed: %s", ZSTD_getErrorName(r));
    s->out_len = r;
    return 0;
}

static void zstd_teardown(cz_state *s)
{
    ZSTD_freeCCtx(s->enc);
    ZSTD_freeDCtx(s->dec);
}

static const cz_codec zstd_codec = {"zstd", zstd_setup, zstd_compress, zstd_decompress, NULL, zstd_teardown, NULL};
#else
static const cz_codec zstd_codec = {.name = "zstd",
                                    .missing = "built without libzstd (install libzstd-dev and rebuild boardlab)"};
#endif

/* ---- zlib ---- */

#if BK_HAVE_ZLIB
static const char *zlib_msg(int rc)
{
    switch (rc) {
    case Z_MEM_ERROR: return "out of memory";
    case Z_BUF_ERROR: return "output buffer too small";
    case Z_DATA_ERROR: return "corrupt data";
    default: return "error";
    }
}

static int zlib_setup(bk_ctx *ctx, cz_state *s)
{
    s->comp_cap = compressBound((uLong)s->n);
    bk_info_str(ctx, "zlib_version", zlibVersion());
    return 0;
}

/* compress2/uncompress: one zlib stream (window 2^15, memLevel 8), as Python's zlib.compress writes it. */
static int zlib_compress(cz_state *s)
{
    uLongf len = (uLongf)s->comp_cap;
    int rc = compress2(s->comp, &len, s->in, (uLong)s->n, s->level);
    s->comp_len = len;
    return rc == Z_OK ? 0 : cz_errf(s, "zlib compression failed: %s (%d)", zlib_msg(rc), rc);
}

static int zlib_decompress(cz_state *s)
{
    uLongf len = (uLongf)s->n;
    int rc = uncompress(s->out, &len, s->comp, (uLong)s->comp_len);
    s->out_len = len;
    return rc == Z_OK ? 0 : cz_errf(s, "zlib decompression failed: %s (%d)", zlib_msg(rc), rc);
}

static const cz_codec zlib_codec = {"zlib", zlib_setup, zlib_compress, zlib_decompress, NULL, NULL, NULL};
#else
static const cz_codec zlib_codec = {.name = "zlib",
                                    .missing = "built without zlib (install zlib1g-dev and rebuild boardlab)"};
#endif

/* ---- the common kernel ---- */

static void cz_fini(void *state)
{
    cz_state *s = state;
    if (s->codec && s->codec->teardown)
        s->codec->teardown(s);
    free(s->in);
    free(s->comp);
    free(s->out);
}

static int cz_init(bk_ctx *ctx, void **state, const cz_codec *codec, const char *level_param)
{
    cz_state *s = bk_run_state(ctx, state, sizeof *s);
    if (!s)
        return -1;
    if (bk_corpus_load(ctx, &s->in, &s->n) != 0)
        return -1;
    s->level = (int)bk_arg_int(ctx, level_param);
    s->codec = codec;
    if (codec->setup(ctx, s) != 0)
        return -1;
    s->comp = bk_alloc(s->comp_cap);
    s->out = bk_alloc(s->n);
    if (!s->comp || !s->out)
        return bk_fail(ctx,
                       "out of memory: %zu bytes of input need about %zu more for the compressed and "
                       "restored copies (lower 'bytes')",
                       s->n, s->comp_cap + s->n);
    s->in_fnv = bk_fnv1a(BK_FNV_OFFSET, s->in, s->n);
    bk_set_amount(ctx, "compress_mb_s", (double)s->n);
    bk_set_amount(ctx, "decompress_mb_s", (double)s->n);
    return 0;
}

static int cz_run(bk_ctx *ctx, void *state, uint64_t reps)
{
    cz_state *s = state;
    for (uint64_t r = 0; r < reps; r++) {
        bk_phase_begin(ctx, PH_COMPRESS);
        int rc = s->codec->compress(s);
        bk_phase_end(ctx, PH_COMPRESS);
        if (rc != 0)
            return bk_fail(ctx, "%s", s->err);
        bk_phase_begin(ctx, PH_DECOMPRESS);
        rc = s->codec->decompress(s);
        bk_phase_end(ctx, PH_DECOMPRESS);
        if (rc != 0)
            return bk_fail(ctx, "%s", s->err);
    }
    return 0;
}

/* Damages the restored copy, which verify compares with the input. */
static void cz_corrupt(void *state)
{
    cz_state *s = state;
    s->out[s->n / 2] ^= 0x20;
}

static int cz_verify(bk_ctx *ctx, void *state)
{
    cz_state *s = state;
    uint64_t out_fnv = bk_fnv1a(BK_FNV_OFFSET, s->out, s->out_len);
    bk_set_checksum(ctx, out_fnv);
    if (s->out_len != s->n)
        return bk_fail(ctx, "%s restored %zu bytes, the input has %zu", s->codec->name, s->out_len, s->n);
    if (out_fnv != s->in_fnv || memcmp(s->out, s->in, s->n) != 0) {
        size_t i = 0;
        while (i < s->n && s->out[i] == s->in[i])
            i++;
        return bk_fail(ctx, "%s round trip: the restored bytes differ from the input (first at offset %zu)",
                       s->codec->name, i);
    }
    if (s->comp_len == 0 || s->comp_len > s->comp_cap)
        return bk_fail(ctx, "%s produced an impossible compressed size %zu", s->codec->name, s->comp_len);
    if (s->codec->verify_stream && s->codec->verify_stream(s) != 0)
        return bk_fail(ctx, "%s", s->err);
    char hex[17];
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)bk_fnv1a(BK_FNV_OFFSET, s->comp, s->comp_len));
    bk_info_num(ctx, "compressed_bytes", (double)s->comp_len);
    bk_info_str(ctx, "compressed_fnv1a", hex);
    bk_set_value(ctx, "ratio", (double)s->n / (double)s->comp_len);
    return 0;
}

#define CZ_KERNEL(ident, kname, summ, params_, why, init_)                                                             \
    const bk_kernel ident = {                                                                                          \
        .name = kname,                                                                                                 \
        .family = "compress",                                                                                          \
        .summary = summ,                                                                                               \
        .params = params_,                                                                                             \
        .metrics = cz_metrics,                                                                                         \
        .phases = cz_phases,                                                                                           \
        .supported = why,                                                                                              \
        .init = init_,                                                                                                 \
        .run = cz_run,                                                                                                 \
        .corrupt = cz_corrupt,                                                                                         \
        .verify = cz_verify,                                                                                           \
        .fini = cz_fini,                                                                                               \
        .fixed_reps = 1, /* one rep compresses and restores the whole corpus: already long */                          \
    }

/* ---- the kernels ---- */

static const bk_param lzma_params[] = {
    BK_CORPUS_PARAMS(CZ_DEFAULT_BYTES),
    {"preset", BK_INT, 0, 9, "6", NULL, NULL, "xz/liblzma preset (6 is xz's default; 7-Zip's 'normal' is close)"},
    {"extreme", BK_INT, 0, 1, "0", NULL, NULL, "1 adds LZMA_PRESET_EXTREME (xz -e): slower, a little smaller"},
    {0},
};
static int lzma_init(bk_ctx *ctx, void **state) { return cz_init(ctx, state, &lzma_codec, "preset"); }
static const char *lzma_why(void) { return lzma_codec.missing; }
CZ_KERNEL(bk_compress_lzma, "compress.lzma", "liblzma .xz (LZMA2) compression and decompression, single-threaded",
          lzma_params, lzma_why, lzma_init);

static const bk_param bz_params[] = {
    BK_CORPUS_PARAMS(CZ_DEFAULT_BYTES),
    {"level", BK_INT, 1, 9, "9", NULL, NULL, "bzip2 block size in 100 kB (bzip2 -1..-9; 9 is the default)"},
    {"threads", BK_INT, 1, 256, "1", NULL, "threads",
     "1: one bzip2 stream; more: pbzip2's layout, blocks of level x 100 kB as independent streams in parallel"},
    {0},
};
static int bz_init(bk_ctx *ctx, void **state) { return cz_init(ctx, state, &bz_codec, "level"); }
static const char *bz_why(void) { return bz_codec.missing; }
CZ_KERNEL(bk_compress_bzip2, "compress.bzip2", "libbz2 compression and decompression, optionally parallel as pbzip2",
          bz_params, bz_why, bz_init);

static const bk_param zstd_params[] = {
    BK_CORPUS_PARAMS(CZ_DEFAULT_BYTES),
    {"level", BK_INT, 1, 19, "3", NULL, NULL, "zstd compression level (3 is zstd's default)"},
    {0},
};
static int zstd_init(bk_ctx *ctx, void **state) { return cz_init(ctx, state, &zstd_codec, "level"); }
static const char *zstd_why(void) { return zstd_codec.missing; }
CZ_KERNEL(bk_compress_zstd, "compress.zstd", "libzstd compression and decompression, single-threaded", zstd_params,
          zstd_why, zstd_init);

static const bk_param zlib_params[] = {
    BK_CORPUS_PARAMS(CZ_DEFAULT_BYTES),
    {"level", BK_INT, 1, 9, "6", NULL, NULL, "zlib compression level (6 is zlib's default)"},
    {0},
};
static int zlib_init(bk_ctx *ctx, void **state) { return cz_init(ctx, state, &zlib_codec, "level"); }
static const char *zlib_why(void) { return zlib_codec.missing; }
CZ_KERNEL(bk_compress_zlib, "compress.zlib", "zlib (deflate) compression and decompression", zlib_params, zlib_why,
          zlib_init);
