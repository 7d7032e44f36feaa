/* crypto.rng: how fast random bytes come from the kernel's generator (getrandom, /dev/urandom) or from the
 * board's hardware RNG (/dev/hwrng: omap-rng on the AM335x, virtio-rng in a VM, ...). One rep is one request
 * of block_bytes (repeated reads until it is filled, as a device may return less).
 *
 * Random output has no known answer, so verification is statistical: the FIPS 140-2 monobit test (section
 * 4.9.1) on 20000 bits of the benchmarked output (ones X must satisfy 9725 < X < 10275), those bytes must not
 * all be equal, and a second, fresh read must differ from them. The test fails on random data with a
 * probability of about 1e-4 (the bounds are 3.9 standard deviations out). */
#include "core.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#define SAMPLE_BYTES 2500 /* 20000 bits, the FIPS 140-2 sample */
#define MONOBIT_LOW 9725
#define MONOBIT_HIGH 10275

enum { SRC_GETRANDOM, SRC_URANDOM, SRC_HWRNG };

static const bk_param rng_params[] = {
    {"source", BK_ENUM, 0, 0, "getrandom", "getrandom,urandom,hwrng", "",
     "getrandom(2); a read of /dev/urandom; or a read of /dev/hwrng, the hardware RNG the kernel selected "
     "(often slow: ~10 kB/s for virtio-rng, so use a small block_bytes)"},
    {"block_bytes", BK_INT, 16, 16777216, "4096", NULL, "bytes", "bytes requested per call"},
    {0},
};

static const bk_metric rng_metrics[] = {
    {"mb_s", "MB/s", true, BK_RATE, -1, 1e-6, "random bytes delivered per second, MB = 1e6 bytes"},
    {0},
};

typedef struct {
    int source;
    int fd; /* urandom and hwrng */
    size_t block;
    /* The benchmarked output is written round-robin into `nslots` blocks, so that the last >= 2500 bytes it
     * produced are kept for the monobit test. */
    uint8_t *ring;
    size_t nslots;
    uint64_t filled; /* blocks written so far */
    char err[160];
} rng_state;

static void rng_fini(void *state)
{
    rng_state *s = state;
    if (s->fd >= 0)
        close(s->fd);
}

/* Fills p with n random bytes from the source; -1 with s->err set on failure. */
static int rng_fill(rng_state *s, uint8_t *p, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = s->source == SRC_GETRANDOM ? getrandom(p + got, n - got, 0) : read(s->fd, p + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            snprintf(s->err, sizeof s->err, "%s: %s", s->source == SRC_GETRANDOM ? "getrandom" : "read",
                     strerror(errno));
            return -1;
        }
        if (r == 0) {
            snprintf(s->err, sizeof s->err, "read: end of file after %zu of %zu bytes", got, n);
            return -1;
        }
        got += (size_t)r;
    }
    return 0;
}

static int read_sysfs(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    if (!fgets(buf, (int)cap, f))
        buf[0] = '\0';
    fclose(f);
    buf[strcspn(buf, "\n")] = '\0';
    return 0;
}

static int rng_init(bk_ctx *ctx, void **state)
{
    const char *src = bk_arg_str(ctx, "source");
    rng_state *s = bk_run_state(ctx, state, sizeof *s);
    if (!s)
        return -1;
    s->fd = -1;
    s->source = strcmp(src, "urandom") == 0 ? SRC_URANDOM : strcmp(src, "hwrng") == 0 ? SRC_HWRNG : SRC_GETRANDOM;
    s->block = (size_t)bk_arg_int(ctx, "block_bytes");
    s->nslots = (SAMPLE_BYTES + s->block - 1) / s->block;
    s->ring = bk_run_alloc(ctx, s->nslots * s->block, "the blocks (lower block_bytes)");
    if (!s->ring)
        return -1;
    if (s->source == SRC_HWRNG) {
        char cur[128];
        bool have_sysfs = read_sysfs("/sys/class/misc/hw_random/rng_current", cur, sizeof cur) == 0;
        if (have_sysfs)
            bk_info_str(ctx, "hwrng_current", cur);
        char quality[32];
        if (read_sysfs("/sys/class/misc/hw_random/rng_quality", quality, sizeof quality) == 0)
            bk_info_str(ctx, "hwrng_quality", quality);
        s->fd = open("/dev/hwrng", O_RDONLY | O_CLOEXEC);
        if (s->fd < 0) {
            int e = errno;
            if (e == ENOENT)
                return bk_unsupported(ctx,
                                      "no /dev/hwrng: the kernel has no hardware RNG driver%s (CONFIG_HW_RANDOM "
                                      "and the SoC's driver, e.g. omap-rng on AM335x, bcm2835-rng on Raspberry "
                                      "Pi, virtio-rng in a VM)",
                                      have_sysfs ? " bound" : "");
            if (e == EACCES || e == EPERM)
                return bk_unsupported(ctx,
                                      "/dev/hwrng is not readable by this user (%s): run as root or grant "
                                      "read access to the device",
                                      strerror(e));
            return bk_unsupported(ctx, "/dev/hwrng cannot be opened: %s", strerror(e));
        }
        /* With no device selected (rng_current "none") a read fails with ENODEV: find out now. */
        uint8_t probe;
        if (rng_fill(s, &probe, 1) != 0)
            return bk_unsupported(ctx, "/dev/hwrng gives no data (%s); rng_current is '%s'", s->err,
                                  have_sysfs ? cur : "unknown");
        bk_info_str(ctx, "device", "/dev/hwrng");
    } else if (s->source == SRC_URANDOM) {
        s->fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
        if (s->fd < 0)
            return bk_unsupported(ctx, "/dev/urandom cannot be opened: %s", strerror(errno));
        bk_info_str(ctx, "device", "/dev/urandom");
    } else {
        uint8_t probe;
        if (rng_fill(s, &probe, 1) != 0)
            return bk_unsupported(ctx, "getrandom(2) is unavailable (%s): it needs Linux 3.17", s->err);
        bk_info_str(ctx, "device", "getrandom(2)");
    }
    bk_set_amount(ctx, "mb_s", (double)s->block);
    return 0;
}

static int rng_run(bk_ctx *ctx, void *state, uint64_t reps)
{
    rng_state *s = state;
    for (uint64_t r = 0; r < reps; r++) {
        uint8_t *slot = s->ring + (size_t)(s->filled % s->nslots) * s->block;
        if (rng_fill(s, slot, s->block) != 0)
            return bk_fail(ctx, "%s", s->err);
        s->filled++;
    }
    return 0;
}

/* Few reps (a slow hwrng, few iterations) may leave ring slots unwritten: top them up from the source. */
static int complete_sample(rng_state *s)
{
    for (; s->filled < s->nslots; s->filled++)
        if (rng_fill(s, s->ring + (size_t)s->filled * s->block, s->block) != 0)
            return -1;
    return 0;
}

static void rng_corrupt(void *state)
{
    rng_state *s = state;
    complete_sample(s); /* first, so that verify has nothing left to overwrite */
    memset(s->ring, 0, SAMPLE_BYTES);
}

static int rng_verify(bk_ctx *ctx, void *state)
{
    rng_state *s = state;
    if (complete_sample(s) != 0)
        return bk_fail(ctx, "reading the sample: %s", s->err);
    const uint8_t *sample = s->ring;
    bk_set_checksum(ctx, bk_fnv1a(BK_FNV_OFFSET, sample, SAMPLE_BYTES));
    long ones = 0;
    bool all_equal = true;
    for (size_t i = 0; i < SAMPLE_BYTES; i++) {
        ones += __builtin_popcount(sample[i]);
        all_equal = all_equal && sample[i] == sample[0];
    }
    bk_info_num(ctx, "monobit_ones", (double)ones);
    bk_info_str(ctx, "monobit_test", "FIPS 140-2 4.9.1: 9725 < ones < 10275 in 20000 bits");
    if (all_equal)
        return bk_fail(ctx, "the 2500-byte sample is one byte value repeated (0x%02x): not random", sample[0]);
    if (ones <= MONOBIT_LOW || ones >= MONOBIT_HIGH)
        return bk_fail(ctx, "monobit test failed: %ld ones in 20000 bits, outside (%d, %d)", ones, MONOBIT_LOW,
                       MONOBIT_HIGH);
    uint8_t *again = malloc(SAMPLE_BYTES);
    if (!again)
        return bk_fail(ctx, "out of memory");
    int rc = rng_fill(s, again, SAMPLE_BYTES);
    if (rc != 0)
        rc = bk_fail(ctx, "second read: %s", s->err);
    else if (memcmp(again, sample, SAMPLE_BYTES) == 0)
        rc = bk_fail(ctx, "two reads returned the same 2500 bytes: the source repeats itself");
    free(again);
    return rc;
}

const bk_kernel bk_crypto_rng = {
    .name = "crypto.rng",
    .family = "crypto",
    .summary = "random bytes from getrandom, /dev/urandom or the hardware RNG (/dev/hwrng)",
    .params = rng_params,
    .metrics = rng_metrics,
    .init = rng_init,
    .run = rng_run,
    .corrupt = rng_corrupt,
    .verify = rng_verify,
    .fini = rng_fini,
};
