/* io.storage: file and block-device I/O the way fio's basic jobs do it, with verified data.
 *
 * One rep is one completed I/O of `bs` bytes. Offsets are bs-aligned: sequential (wrapping at size_bytes)
 * or uniformly random. Engines: psync (pread/pwrite, one I/O at a time) and io_uring (liburing, probed at
 * build; `iodepth` I/Os kept in flight). O_DIRECT buffers and offsets are aligned to what the file's device
 * needs (statx STATX_DIOALIGN, else the block device's logical block size, else 4096).
 *
 * Data: the region is written at start-up with a pattern in which every 4 KiB unit carries its own offset
 * in its first 16 bytes over a fixed random body, and writes write the same pattern, so that every read can
 * be checked (the stamps of each unit, cheaply, per I/O) and the whole region is compared byte for byte at
 * the end. Latency per I/O goes to a log-linear histogram with 64 buckets per power of two (relative error
 * <= 1/128, fio's), reported as p50/p99/p99.9 of every I/O at the calibrated rep count.
 */
#include "core.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#if BK_HAVE_LIBURING
#include <liburing.h>
#endif

#include "iohist.h"

#define UNIT 4096u
#define IO_SEED 0x696f2d73746f7267ULL
#define STAMP_MAGIC 0x626c2d696f2d7374ULL

typedef enum { OP_READ, OP_WRITE, OP_RANDRW } io_op;
typedef enum { FS_NONE, FS_EACH, FS_END } io_fsync;

typedef struct {
    int fd;
    bool created; /* boardlab created the file: it removes it at the end */
    char path[4096];
    io_op op;
    bool rand, direct, uring, device, verify;
    io_fsync fsync;
    size_t bs, size, align, nblocks;
    int iodepth;
    unsigned char *body; /* UNIT bytes of fixed random data */
    unsigned char *buf; /* iodepth buffers of bs bytes, aligned */
    uint64_t cursor, rng, reads, writes, bad_reads;
    uint64_t last_reps;
    bool corrupted;
    char bad[256];
    bk_hist hist;
#if BK_HAVE_LIBURING
    struct io_uring ring;
    bool ring_ok;
    uint64_t *submit_ns;
#endif
} io_state;

static const bk_param io_params[] = {
    {"path", BK_STR, 0, 0, "", NULL, NULL,
     "file (created if missing, removed afterwards if boardlab created it), block device, or a directory "
     "(a temporary file in it, removed afterwards)"},
    {"op", BK_ENUM, 0, 0, "read", "read,write,randrw", NULL,
     "read, write, or randrw (random, half reads, half writes)"},
    {"pattern", BK_ENUM, 0, 0, "seq", "seq,rand", NULL, "sequential (wrapping) or uniformly random bs-aligned offsets"},
    {"bs", BK_INT, 4096, 4194304, "128k", NULL, "bytes", "block size: bytes per I/O (4 KiB - 4 MiB)"},
    {"size_bytes", BK_INT, 4096, 1099511627776.0, "64M", NULL, "bytes", "region of the file or device used"},
    {"direct", BK_INT, 0, 1, "1", NULL, NULL, "1: O_DIRECT (bypass the page cache), buffers aligned to the device"},
    {"engine", BK_ENUM, 0, 0, "psync", "psync,io_uring", NULL, "psync: pread/pwrite; io_uring: liburing queue"},
    {"iodepth", BK_INT, 1, 256, "1", NULL, NULL, "I/Os in flight (io_uring; psync is always 1)"},
    {"fsync", BK_ENUM, 0, 0, "none", "none,each,end", NULL,
     "none; each: fdatasync after every write; end: fdatasync at the end of every timed iteration"},
    {"invalidate", BK_INT, 0, 1, "1", NULL, NULL, "1: drop the region from the page cache before timing (fadvise)"},
    {"verify", BK_INT, 0, 1, "1", NULL, NULL, "1: check every read's stamps and compare the region at the end"},
    {"destructive", BK_INT, 0, 1, "0", NULL, NULL,
     "1: allow writing to a block device, or over an existing file that does not hold io.storage's pattern "
     "(their data is lost)"},
    {"keep_file", BK_INT, 0, 1, "0", NULL, NULL, "1: keep a file boardlab created (a later read run finds its data)"},
    {0},
};

static const bk_metric io_metrics[] = {
    {"bandwidth_mb_s", "MB/s", true, BK_RATE, -1, 1e-6, "bytes transferred per second, 1e6 (MB/s)"},
    {"iops", "IO/s", true, BK_RATE, -1, 1.0, "I/Os completed per second"},
    {"latency_p50_ns", "ns", false, BK_VALUE, -1, 1.0, "median completion latency of one I/O (histogram)"},
    {"latency_p99_ns", "ns", false, BK_VALUE, -1, 1.0, "99th percentile completion latency"},
    {"latency_p999_ns", "ns", false, BK_VALUE, -1, 1.0, "99.9th percentile completion latency"},
    {"latency_mean_ns", "ns", false, BK_VALUE, -1, 1.0, "mean completion latency"},
    {0},
};

static const char *fs_name(long magic)
{
    switch ((unsigned long)magic) {
    case TMPFS_MAGIC: return "tmpfs";
    case RAMFS_MAGIC: return "ramfs";
    case EXT4_SUPER_MAGIC: return "ext4";
    case 0x58465342: return "xfs";
    case BTRFS_SUPER_MAGIC: return "btrfs";
    case 0x65735546: return "fuse";
    case OVERLAYFS_SUPER_MAGIC: return "overlayfs";
    case NFS_SUPER_MAGIC: return "nfs";
    case 0x2fc12fc1: return "zfs";
    case 0x62656572: return "sysfs";
    case 0x01021997: return "v9fs";
    default: return NULL;
    }
}

static void fs_describe(const char *path, char *out, size_t len)
{
    struct statfs sf;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    if (statfs(dir, &sf) != 0) {
        char *slash = strrchr(dir, '/');
        if (slash && slash != dir)
            *slash = '\0';
        else
            snprintf(dir, sizeof dir, ".");
        if (statfs(dir, &sf) != 0) {
            snprintf(out, len, "this file system");
            return;
        }
    }
    const char *name = fs_name((long)sf.f_type);
    if (name)
        snprintf(out, len, "%s", name);
    else
        snprintf(out, len, "file system 0x%lx", (unsigned long)sf.f_type);
}

/* The pattern of the UNIT at byte offset `off`: the stamp (magic ^ off, off) then the fixed body. */
static void fill_block(const io_state *s, unsigned char *dst, uint64_t off)
{
    for (size_t u = 0; u < s->bs; u += UNIT) {
        memcpy(dst + u, s->body, UNIT);
        uint64_t stamp[2] = {STAMP_MAGIC ^ (off + u), off + u};
        memcpy(dst + u, stamp, sizeof stamp);
    }
}

static bool check_stamps(io_state *s, const unsigned char *src, uint64_t off)
{
    for (size_t u = 0; u < s->bs; u += UNIT) {
        uint64_t stamp[2];
        memcpy(stamp, src + u, sizeof stamp);
        if (stamp[0] != (STAMP_MAGIC ^ (off + u)) || stamp[1] != off + u) {
            if (!s->bad[0])
                snprintf(s->bad, sizeof s->bad, "the 4 KiB unit read at offset %llu carries the stamp of offset %llu",
                         (unsigned long long)(off + u), (unsigned long long)stamp[1]);
            return false;
        }
    }
    return true;
}

static uint64_t next_offset(io_state *s)
{
    uint64_t blk;
    if (s->rand)
        blk = bk_rand_next(&s->rng) % s->nblocks;
    else {
        blk = s->cursor;
        s->cursor = (s->cursor + 1) % s->nblocks;
    }
    return blk * s->bs;
}

static bool next_is_write(io_state *s)
{
    if (s->op == OP_READ)
        return false;
    if (s->op == OP_WRITE)
        return true;
    return bk_rand_next(&s->rng) & 1;
}

/* Writes the whole region with the pattern (untimed), so that reads have known data to check. */
static int prefill(bk_ctx *ctx, io_state *s)
{
    for (uint64_t off = 0; off < s->size; off += s->bs) {
        fill_block(s, s->buf, off);
        ssize_t w = pwrite(s->fd, s->buf, s->bs, (off_t)off);
        if (w != (ssize_t)s->bs)
            return bk_fail(ctx, "writing the test region of %s at offset %llu: %s", s->path, (unsigned long long)off,
                           w < 0 ? strerror(errno) : "short write");
    }
    if (fdatasync(s->fd) != 0)
        return bk_fail(ctx, "fdatasync %s: %s", s->path, strerror(errno));
    return 0;
}

/* True when the region already holds the pattern (an earlier run wrote it): reads then need no rewrite,
 * which would leave the device busy writing back while the timed reads run. */
static bool region_has_pattern(io_state *s)
{
    unsigned char *want = malloc(s->bs);
    bool same = want != NULL;
    for (uint64_t off = 0; same && off < s->size; off += s->bs) {
        fill_block(s, want, off);
        same = pread(s->fd, s->buf, s->bs, (off_t)off) == (ssize_t)s->bs && memcmp(want, s->buf, s->bs) == 0;
    }
    free(want);
    return same;
}

/* The region before timing: written with the pattern (prefill), or left as it is when a read finds the pattern
 * there already. A user's file (existing, non-empty) without the pattern is refused as a block device is: the
 * prefill would overwrite what the user keeps in it, even for op=read. An empty file has nothing to lose. */
static int prepare_region(bk_ctx *ctx, io_state *s, bool user_file)
{
    bool destructive = bk_arg_int(ctx, "destructive") == 1;
    bool can_write = !(s->device && !destructive);
    bool holds = can_write && (s->op == OP_READ || (user_file && !destructive)) && region_has_pattern(s);
    if (user_file && !holds && !destructive)
        return bk_fail(ctx,
                       "path=%s is an existing file that does not hold io.storage's pattern: op=%s would overwrite "
                       "it; set destructive=1 to allow it, or name a missing file or a directory",
                       s->path, bk_arg_str(ctx, "op"));
    if (holds && s->op == OP_READ)
        bk_info_str(ctx, "prefill", "skipped: the region already holds the pattern");
    else if (can_write)
        return prefill(ctx, s);
    else if (s->verify) {
        s->verify = false;
        bk_info_str(ctx, "verify_off", "the device's contents were not written by boardlab (destructive=0)");
    }
    return 0;
}

static size_t dio_alignment(bk_ctx *ctx, io_state *s)
{
#ifdef STATX_DIOALIGN
    struct statx sx;
    if (statx(s->fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 && (sx.stx_mask & STATX_DIOALIGN) &&
        sx.stx_dio_offset_align > 0) {
        bk_info_str(ctx, "align_source", "statx STATX_DIOALIGN");
        return sx.stx_dio_offset_align > sx.stx_dio_mem_align ? sx.stx_dio_offset_align : sx.stx_dio_mem_align;
    }
#endif
    int lbs = 0;
    if (s->device && ioctl(s->fd, BLKSSZGET, &lbs) == 0 && lbs > 0) {
        bk_info_str(ctx, "align_source", "BLKSSZGET (logical block size)");
        return (size_t)lbs;
    }
    bk_info_str(ctx, "align_source", "default 4096");
    return 4096;
}

static int io_init(bk_ctx *ctx, void **state)
{
    io_state *s = bk_run_state(ctx, state, sizeof *s);
    if (!s)
        return -1;
    s->fd = -1;
    bk_hist_init(&s->hist);
    const char *path = bk_arg_str(ctx, "path");
    if (!path[0])
        return bk_fail(ctx,
                       "io.storage needs path=FILE or path=/dev/BLOCKDEVICE (nothing is written anywhere unnamed)");
    snprintf(s->path, sizeof s->path, "%s", path);
    const char *op = bk_arg_str(ctx, "op");
    s->op = strcmp(op, "read") == 0 ? OP_READ : strcmp(op, "write") == 0 ? OP_WRITE : OP_RANDRW;
    s->rand = s->op == OP_RANDRW || strcmp(bk_arg_str(ctx, "pattern"), "rand") == 0;
    s->bs = (size_t)bk_arg_int(ctx, "bs");
    s->size = (size_t)bk_arg_int(ctx, "size_bytes");
    s->direct = bk_arg_int(ctx, "direct") == 1;
    s->uring = strcmp(bk_arg_str(ctx, "engine"), "io_uring") == 0;
    s->iodepth = (int)bk_arg_int(ctx, "iodepth");
    const char *fs = bk_arg_str(ctx, "fsync");
    s->fsync = strcmp(fs, "each") == 0 ? FS_EACH : strcmp(fs, "end") == 0 ? FS_END : FS_NONE;
    s->verify = bk_arg_int(ctx, "verify") == 1;
    s->rng = IO_SEED;
    if (s->bs % UNIT)
        return bk_fail(ctx, "bs=%zu is not a multiple of 4096", s->bs);
    if (!s->uring && s->iodepth != 1)
        return bk_fail(ctx, "iodepth=%d needs engine=io_uring (psync has one I/O in flight)", s->iodepth);
#if !BK_HAVE_LIBURING
    if (s->uring)
        return bk_unsupported(ctx, "engine=io_uring: built without liburing (install liburing-dev and rebuild)");
#endif
    s->size -= s->size % s->bs;
    if (s->size == 0)
        return bk_fail(ctx, "size_bytes is smaller than one block of bs=%zu", s->bs);
    s->nblocks = s->size / s->bs;

    struct stat st;
    bool exists = stat(path, &st) == 0;
    if (exists && S_ISDIR(st.st_mode)) {
        /* A directory: a private temporary file inside it, removed at the end (presets name /var/tmp). */
        snprintf(s->path, sizeof s->path, "%s/boardlab-io-XXXXXX", path);
        int tfd = mkstemp(s->path);
        if (tfd < 0)
            return bk_fail(ctx, "cannot create a temporary file in %s: %s", path, strerror(errno));
        close(tfd);
        path = s->path;
        exists = false; /* boardlab created it: removed in fini whatever keep_file says */
        stat(path, &st);
        s->created = true;
    }
    s->device = exists && S_ISBLK(st.st_mode);
    if (exists && !s->device && !S_ISREG(st.st_mode))
        return bk_fail(ctx, "path=%s is neither a regular file nor a block device", path);
    if (s->device && s->op != OP_READ && !bk_arg_int(ctx, "destructive"))
        return bk_fail(ctx, "op=%s would overwrite block device %s; set destructive=1 to allow it", op, path);
    int flags = O_RDWR | (s->direct ? O_DIRECT : 0) | (s->device ? 0 : O_CREAT);
    if (s->device && s->op == OP_READ && !bk_arg_int(ctx, "destructive"))
        flags = O_RDONLY | (s->direct ? O_DIRECT : 0);
    s->fd = open(path, flags | O_CLOEXEC, 0600);
    /* O_CREAT makes the file before the open is refused (O_DIRECT): one boardlab made is removed in fini. */
    if (s->fd < 0 && !exists) {
        int e = errno;
        if (access(path, F_OK) == 0)
            s->created = true;
        errno = e;
    }
    if (s->fd < 0 && errno == EINVAL && s->direct) {
        char fsn[64];
        fs_describe(path, fsn, sizeof fsn);
        return bk_unsupported(ctx, "O_DIRECT rejected by %s (open %s: %s); use direct=0 or a file elsewhere", fsn, path,
                              strerror(EINVAL));
    }
    if (s->fd < 0)
        return bk_fail(ctx, "cannot open %s: %s", path, strerror(errno));
    s->created = s->created || (!exists && !bk_arg_int(ctx, "keep_file"));
    if (s->device) {
        uint64_t dev_bytes = 0;
        if (ioctl(s->fd, BLKGETSIZE64, &dev_bytes) == 0 && dev_bytes < s->size)
            return bk_fail(ctx, "size_bytes=%zu exceeds %s (%llu bytes)", s->size, path, (unsigned long long)dev_bytes);
    }
    s->align = s->direct ? dio_alignment(ctx, s) : 64;
    if (s->direct && s->bs % s->align)
        return bk_fail(ctx, "bs=%zu is not a multiple of the device's O_DIRECT alignment %zu", s->bs, s->align);
    size_t page = (size_t)sysconf(_SC_PAGESIZE), al = s->align > page ? s->align : page;
    s->body = malloc(UNIT);
    if (posix_memalign((void **)&s->buf, al, s->bs * (size_t)s->iodepth) != 0 || !s->body)
        return bk_fail(ctx, "cannot allocate %d buffers of %zu bytes", s->iodepth, s->bs);
    uint64_t st2 = IO_SEED ^ 0xb0d1;
    for (size_t i = 0; i < UNIT; i += 8) {
        uint64_t v = bk_rand_next(&st2);
        memcpy(s->body + i, &v, 8);
    }
    if (prepare_region(ctx, s, exists && !s->device && st.st_size > 0) != 0)
        return -1;
    if (bk_arg_int(ctx, "invalidate") && posix_fadvise(s->fd, 0, (off_t)s->size, POSIX_FADV_DONTNEED) != 0)
        bk_info_str(ctx, "invalidate", "posix_fadvise DONTNEED failed");

#if BK_HAVE_LIBURING
    if (s->uring) {
        int rc = io_uring_queue_init((unsigned)s->iodepth, &s->ring, 0);
        if (rc == -EPERM || rc == -EACCES)
            return bk_unsupported(ctx,
                                  "io_uring denied (io_uring_setup: %s): kernel.io_uring_disabled or a "
                                  "seccomp filter forbids it",
                                  strerror(-rc));
        if (rc == -ENOSYS)
            return bk_unsupported(ctx, "io_uring absent: this kernel has no io_uring_setup");
        if (rc < 0)
            return bk_fail(ctx, "io_uring_queue_init(%d): %s", s->iodepth, strerror(-rc));
        s->ring_ok = true;
        s->submit_ns = calloc((size_t)s->iodepth, sizeof(uint64_t));
    }
#endif
    bk_set_amount(ctx, "bandwidth_mb_s", (double)s->bs);
    bk_set_amount(ctx, "iops", 1.0);
    bk_info_num(ctx, "align_bytes", (double)s->align);
    bk_info_str(ctx, "device", s->device ? "block device" : "file");
    char fsn[64];
    fs_describe(path, fsn, sizeof fsn);
    bk_info_str(ctx, "filesystem", s->device ? "none (block device)" : fsn);
    *state = s;
    return 0;
}

/* A completed I/O: its latency, and for reads the stamps of its data. */
static void complete(io_state *s, bool write, const unsigned char *buf, uint64_t off, uint64_t lat_ns)
{
    bk_hist_add(&s->hist, lat_ns);
    if (write)
        s->writes++;
    else {
        s->reads++;
        if (s->verify && !check_stamps(s, buf, off))
            s->bad_reads++;
    }
}

static int run_psync(bk_ctx *ctx, io_state *s, uint64_t reps)
{
    for (uint64_t r = 0; r < reps; r++) {
        uint64_t off = next_offset(s);
        bool w = next_is_write(s);
        if (w)
            fill_block(s, s->buf, off);
        uint64_t t0 = bk_now_ns();
        ssize_t n = w ? pwrite(s->fd, s->buf, s->bs, (off_t)off) : pread(s->fd, s->buf, s->bs, (off_t)off);
        if (n == (ssize_t)s->bs && w && s->fsync == FS_EACH && fdatasync(s->fd) != 0)
            n = -1;
        uint64_t t1 = bk_now_ns();
        if (n != (ssize_t)s->bs)
            return bk_fail(ctx, "%s %s at offset %llu: %s", w ? "pwrite" : "pread", s->path, (unsigned long long)off,
                           n < 0 ? strerror(errno) : "short transfer");
        complete(s, w, s->buf, off, t1 - t0);
    }
    return 0;
}

#if BK_HAVE_LIBURING
typedef struct {
    uint64_t off;
    bool write;
} slot_info;

static int run_uring(bk_ctx *ctx, io_state *s, uint64_t reps)
{
    slot_info info[256];
    int free_slots[256], nfree = s->iodepth, inflight = 0;
    for (int i = 0; i < s->iodepth; i++)
        free_slots[i] = i;
    uint64_t submitted = 0, done = 0;
    while (done < reps) {
        int queued = 0;
        while (submitted < reps && nfree > 0) {
            struct io_uring_sqe *sqe = io_uring_get_sqe(&s->ring);
            if (!sqe)
                break;
            int slot = free_slots[--nfree];
            unsigned char *buf = s->buf + (size_t)slot * s->bs;
            info[slot].off = next_offset(s);
            info[slot].write = next_is_write(s);
            if (info[slot].write) {
                fill_block(s, buf, info[slot].off);
                io_uring_prep_write(sqe, s->fd, buf, (unsigned)s->bs, info[slot].off);
                if (s->fsync == FS_EACH)
                    sqe->rw_flags = RWF_DSYNC;
            } else
                io_uring_prep_read(sqe, s->fd, buf, (unsigned)s->bs, info[slot].off);
            io_uring_sqe_set_data64(sqe, (uint64_t)slot);
            s->submit_ns[slot] = bk_now_ns();
            submitted++;
            queued++;
            inflight++;
        }
        if (queued) {
            int rc = io_uring_submit(&s->ring);
            if (rc < 0)
                return bk_fail(ctx, "io_uring_submit: %s", strerror(-rc));
        }
        struct io_uring_cqe *cqe;
        int rc = io_uring_wait_cqe(&s->ring, &cqe);
        if (rc < 0)
            return bk_fail(ctx, "io_uring_wait_cqe: %s", strerror(-rc));
        do {
            uint64_t now = bk_now_ns();
            int slot = (int)io_uring_cqe_get_data64(cqe);
            int res = cqe->res;
            io_uring_cqe_seen(&s->ring, cqe);
            if (res != (int)s->bs)
                return bk_fail(ctx, "io_uring %s at offset %llu: %s", info[slot].write ? "write" : "read",
                               (unsigned long long)info[slot].off, res < 0 ? strerror(-res) : "short transfer");
            complete(s, info[slot].write, s->buf + (size_t)slot * s->bs, info[slot].off, now - s->submit_ns[slot]);
            free_slots[nfree++] = slot;
            inflight--;
            done++;
        } while (io_uring_peek_cqe(&s->ring, &cqe) == 0);
    }
    (void)inflight;
    return 0;
}
#endif

static int io_run(bk_ctx *ctx, void *state, uint64_t reps)
{
    io_state *s = state;
    if (reps != s->last_reps) {
        /* The histogram keeps the I/Os of the calibrated rep count only, not calibration's. */
        bk_hist_init(&s->hist);
        s->last_reps = reps;
    }
    int rc;
#if BK_HAVE_LIBURING
    rc = s->uring ? run_uring(ctx, s, reps) : run_psync(ctx, s, reps);
#else
    rc = run_psync(ctx, s, reps);
#endif
    if (rc == 0 && s->fsync == FS_END && s->op != OP_READ && fdatasync(s->fd) != 0)
        return bk_fail(ctx, "fdatasync %s: %s", s->path, strerror(errno));
    return rc;
}

/* Damages the data on disk at offset 0 (through the same fd), so the final comparison must fail. */
static void io_corrupt(void *state)
{
    io_state *s = state;
    s->corrupted = true;
}

static int io_verify(bk_ctx *ctx, void *state)
{
    io_state *s = state;
    bk_set_value(ctx, "latency_p50_ns", bk_hist_quantile(&s->hist, 0.50));
    bk_set_value(ctx, "latency_p99_ns", bk_hist_quantile(&s->hist, 0.99));
    bk_set_value(ctx, "latency_p999_ns", bk_hist_quantile(&s->hist, 0.999));
    bk_set_value(ctx, "latency_mean_ns", bk_hist_mean(&s->hist));
    bk_info_num(ctx, "latency_samples", (double)s->hist.count);
    bk_info_num(ctx, "reads", (double)s->reads);
    bk_info_num(ctx, "writes", (double)s->writes);
    bk_info_num(ctx, "latency_max_ns", (double)s->hist.max_ns);
    if (s->bad_reads)
        return bk_fail(ctx, "%llu reads returned wrong data: %s", (unsigned long long)s->bad_reads, s->bad);
    if (!s->verify) {
        bk_set_checksum(ctx, s->reads + s->writes);
        return 0;
    }
    if (s->corrupted) {
        unsigned char junk[UNIT];
        memset(junk, 0xa5, sizeof junk);
        memcpy(s->buf, junk, UNIT);
        if (pwrite(s->fd, s->buf, s->align > UNIT ? s->align : UNIT, 0) < 0)
            return bk_fail(ctx, "corrupt: pwrite: %s", strerror(errno));
    }
    /* The whole region, byte for byte, against the pattern. */
    if (fdatasync(s->fd) != 0 && errno != EINVAL)
        return bk_fail(ctx, "fdatasync %s: %s", s->path, strerror(errno));
    unsigned char *want = malloc(s->bs);
    if (!want)
        return bk_fail(ctx, "out of memory");
    uint64_t h = BK_FNV_OFFSET;
    int rc = 0;
    for (uint64_t off = 0; off < s->size && rc == 0; off += s->bs) {
        ssize_t n = pread(s->fd, s->buf, s->bs, (off_t)off);
        if (n != (ssize_t)s->bs) {
            rc = bk_fail(ctx, "re-reading %s at offset %llu: %s", s->path, (unsigned long long)off,
                         n < 0 ? strerror(errno) : "short read");
            break;
        }
        fill_block(s, want, off);
        if (memcmp(want, s->buf, s->bs) != 0) {
            size_t i = 0;
            while (want[i] == s->buf[i])
                i++;
            rc = bk_fail(ctx, "the data of %s differs from the written pattern at byte %llu", s->path,
                         (unsigned long long)(off + i));
        }
        h = bk_fnv1a(h, s->buf, 64);
    }
    free(want);
    bk_set_checksum(ctx, h);
    return rc;
}

static void io_fini(void *state)
{
    io_state *s = state;
#if BK_HAVE_LIBURING
    if (s->ring_ok)
        io_uring_queue_exit(&s->ring);
    free(s->submit_ns);
#endif
    if (s->fd >= 0)
        close(s->fd);
    if (s->created)
        unlink(s->path);
    free(s->buf);
    free(s->body);
}

const bk_kernel bk_io_storage = {
    .name = "io.storage",
    .family = "io",
    .summary = "file/block-device read/write/randrw, seq/rand, O_DIRECT, psync or io_uring: MB/s, IOPS, latency",
    .params = io_params,
    .metrics = io_metrics,
    .init = io_init,
    .run = io_run,
    .corrupt = io_corrupt,
    .verify = io_verify,
    .fini = io_fini,
    .calibrate_on_wall = true,
};
