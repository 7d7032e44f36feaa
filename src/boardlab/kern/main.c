/* boardlab-kern: run one native kernel once and print its versioned result.
 *
 *   boardlab-kern --version
 *   boardlab-kern --list [--json]
 *   boardlab-kern NAME [--param k=v]... [--iterations N] [--json] ...
 *   boardlab-kern corpus --bytes N --out FILE [--mix SPEC] [--seed S]
 *
 * Exit codes: 0 ok, 1 a runtime or verification failure, 2 bad usage. */
#include "core_internal.h"
#include "corpus.h"
#include "launch.h"
#include "net.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

static void usage(FILE *out)
{
    fprintf(out,
            "usage: boardlab-kern --version\n"
            "       boardlab-kern --list [--json]\n"
            "       boardlab-kern NAME [--param NAME=VALUE]... [options]\n"
            "       boardlab-kern corpus --bytes N --out FILE [--mix SPEC] [--seed S]\n"
            "       boardlab-kern net-sink --listen HOST:PORT [--once] [--cpu N] [--rcvbuf BYTES]\n"
            "       boardlab-kern launch   (the campaign runner's program launcher; started by boardlab)\n"
            "\n"
            "Runs one kernel once: calibrates reps so an iteration lasts >= --min-iteration-ms, warms up until\n"
            "the CV of the last 10 iterations is <= --warmup-cv (capped), times --iterations iterations with\n"
            "CLOCK_MONOTONIC_RAW and verifies the result.\n"
            "\n"
            "options:\n"
            "  --param NAME=VALUE        set a kernel parameter (see --list)\n"
            "  --iterations N            measured iterations (default 10)\n"
            "  --warmup-max-iterations N warm-up cap in iterations (default 300; 0 disables warm-up)\n"
            "  --warmup-max-ms MS        warm-up cap in milliseconds (default 2000)\n"
            "  --warmup-cv X             warm-up target CV of the last 10 iterations (default 0.02)\n"
            "  --min-iteration-ms MS     shortest timed iteration (default 1)\n"
            "  --json                    print one schema-%d JSON object\n"
            "  --corrupt                 damage the result before verification (tests that it is caught)\n"
            "  --counters LIST           count hardware events over the measured iterations, e.g.\n"
            "                            instructions,cycles,bus_access,cpu_cycles,raw:0x19 or NAME=TYPE:CONFIG[@CPU]\n"
            "                            (a sysfs PMU type, e.g. a CCI-400 event; @CPU counts system-wide there);\n"
            "                            an event that cannot open is reported unsupported with its errno"
            "\n"
            "corpus writes the deterministic sensor-like corpus the kernels generate (N bytes, k/M/G suffixes, at\n"
            "most 1G; mix default %s, seed default %s) to FILE, through a new temporary file beside it and a rename.\n",
            BK_RESULT_SCHEMA, BK_CORPUS_DEFAULT_MIX, BK_CORPUS_DEFAULT_SEED);
}

/* How this binary was built: a board often runs a binary cross-built elsewhere, so the catalog says by which
 * compiler, for which architecture, with which flags, which SIMD the compiler was allowed, which libraries. */
static void json_build(bk_json *j)
{
    static const char *const simd[] = {
#if defined(__ARM_NEON)
        "neon",
#endif
#if defined(__ARM_FEATURE_CRYPTO) || defined(__ARM_FEATURE_AES)
        "arm-crypto",
#endif
#if defined(__SSE2__)
        "sse2",
#endif
#if defined(__AVX2__)
        "avx2",
#endif
        NULL};
    static const struct {
        const char *name;
        int have;
    } libs[] = {{"lzma", BK_HAVE_LZMA},
                {"bzip2", BK_HAVE_BZIP2},
                {"zstd", BK_HAVE_ZSTD},
                {"zlib", BK_HAVE_ZLIB},
                {"crypto", BK_HAVE_CRYPTO},
                {"af_alg", BK_HAVE_AF_ALG},
                {"perf_event", BK_HAVE_PERF_EVENT}};
    bk_json_key_object(j, "build");
    bk_json_kv_str(j, "compiler", BK_BUILD_COMPILER);
    bk_json_kv_str(j, "flags", BK_BUILD_FLAGS);
    bk_json_kv_str(j, "arch", BK_BUILD_ARCH);
    bk_json_kv_bool(j, "cross", strcmp(BK_BUILD_CROSS, "cross") == 0);
    bk_json_kv_int(j, "pointer_bits", (int64_t)(sizeof(void *) * 8));
    bk_json_key_array(j, "simd");
    for (int i = 0; simd[i]; i++)
        bk_json_str(j, simd[i]);
    bk_json_end_array(j);
    bk_json_key_array(j, "libraries");
    for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++)
        if (libs[i].have)
            bk_json_str(j, libs[i].name);
    bk_json_end_array(j);
    bk_json_end_object(j);
}

static void list(bool json)
{
    if (json) {
        bk_json j;
        bk_json_init(&j, stdout);
        bk_json_begin_object(&j);
        bk_json_kv_int(&j, "schema", BK_SCHEMA);
        bk_json_kv_str(&j, "tool", "boardlab-kern");
        bk_json_kv_str(&j, "version", BK_VERSION);
        json_build(&j);
        bk_json_key_array(&j, "kernels");
        for (int i = 0; bk_kernels[i]; i++)
            bk_json_kernel_spec(&j, bk_kernels[i]);
        bk_json_end_array(&j);
        bk_json_end_object(&j);
        fputc('\n', stdout);
        return;
    }
    for (int i = 0; bk_kernels[i]; i++) {
        const bk_kernel *k = bk_kernels[i];
        const char *reason = k->supported ? k->supported() : NULL;
        if (reason)
            printf("%-22s %s  [unsupported: %s]\n", k->name, k->summary, reason);
        else
            printf("%-22s %s\n", k->name, k->summary);
    }
}

static bool parse_number(const char *opt, const char *s, double lo, double hi, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "boardlab-kern: %s expects a number in [%g, %g], got '%s'\n", opt, lo, hi, s);
        return false;
    }
    *out = v;
    return true;
}

/* Started by boardlab's runner: die with it, so a SIGKILLed runner leaves no worker behind. Done here
 * rather than between fork and exec, so that the runner can spawn with vfork (cheaper per run). */
static void die_with_parent(void)
{
    const char *parent = getenv("BOARDLAB_PARENT_PID");
    if (!parent)
        return;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != (pid_t)atol(parent)) /* the runner died before prctl took effect */
        _exit(1);
}

/* A whole number with an optional k/M/G suffix (powers of 1024), as the kernels' INT parameters take it. */
static bool parse_count(const char *s, double max, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || errno || *s == '-' || *s == '+' || *s == ' ')
        return false;
    double mult = *end == 'k' || *end == 'K' ? 1024.0 : *end == 'M' ? 1048576.0 : *end == 'G' ? 1073741824.0 : 1.0;
    if (mult > 1)
        end++;
    if (*end || (double)v * mult > max)
        return false;
    *out = (uint64_t)((double)v * mult);
    return true;
}

static bool write_all(FILE *f, bk_corpus *c, uint64_t bytes)
{
    enum { CHUNK = 1 << 20 };
    unsigned char *buf = malloc(CHUNK);
    if (!buf)
        return false;
    bool ok = true;
    for (uint64_t left = bytes; left && ok;) {
        size_t k = left < CHUNK ? (size_t)left : CHUNK;
        bk_corpus_read(c, buf, k);
        ok = fwrite(buf, 1, k, f) == k;
        left -= k;
    }
    free(buf);
    return ok;
}

/* A new temporary file beside `out` (.NAME.XXXXXX.tmp, its name in `tmp`): mkstemps creates it with O_EXCL
 * under a name no one chose, so neither a link nor an earlier file at a fixed FILE.tmp is written through or
 * over. Its mode is the one fopen gave, 0666 less the umask, not mkstemp's 0600. */
static int create_beside(const char *out, char *tmp, size_t len)
{
    const char *slash = strrchr(out, '/');
    int dirlen = slash ? (int)(slash - out + 1) : 0;
    if (snprintf(tmp, len, "%.*s.%s.XXXXXX.tmp", dirlen, out, out + dirlen) >= (int)len) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = mkstemps(tmp, 4);
    mode_t mask = umask(0);
    umask(mask);
    if (fd >= 0 && fchmod(fd, 0666 & ~mask) != 0) {
        int e = errno;
        close(fd);
        unlink(tmp);
        errno = e;
        return -1;
    }
    return fd;
}

/* The place the user named is at fault (exit 2), not the machine (a full disk, an I/O error: exit 1). */
static bool place_error(int e)
{
    return e == ENOENT || e == ENOTDIR || e == EACCES || e == EPERM || e == EROFS || e == ENAMETOOLONG || e == ELOOP;
}

/* Writes the corpus into `fd` (the temporary `tmp`), flushes it to disk and renames it over `out`; 0 or errno.
 * The temporary is removed on any failure. */
static int write_and_rename(int fd, const char *tmp, const char *out, bk_corpus *c, uint64_t bytes)
{
    FILE *f = fdopen(fd, "wb");
    if (!f) {
        int e = errno;
        close(fd);
        unlink(tmp);
        return e;
    }
    errno = 0;
    bool ok = write_all(f, c, bytes);
    int err = ok ? 0 : errno ? errno : EIO;
    if (fflush(f) != 0 && !err)
        err = errno;
    if (!err && fsync(fileno(f)) != 0)
        err = errno;
    if (fclose(f) != 0 && !err)
        err = errno;
    if (!err && rename(tmp, out) != 0)
        err = errno;
    if (err)
        unlink(tmp);
    return err;
}

/* `corpus`: writes exactly the bytes a kernel generates for the same bytes/mix/seed. The file appears complete
 * or not at all: it is written to a new temporary beside it, flushed to disk, then renamed. */
static int corpus_main(int argc, char **argv)
{
    const char *out = NULL, *mix = BK_CORPUS_DEFAULT_MIX;
    uint64_t bytes = 0, seed = strtoull(BK_CORPUS_DEFAULT_SEED, NULL, 10);
    bool have_bytes = false;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (strncmp(a, "--", 2) != 0 || !val) {
            bool option = strncmp(a, "--", 2) == 0;
            fprintf(stderr, "boardlab-kern corpus: %s '%s'\n",
                    option ? "a value is missing after" : "unexpected argument", a);
            fprintf(stderr, "usage: boardlab-kern corpus --bytes N --out FILE [--mix SPEC] [--seed S]\n");
            return 2;
        }
        i++;
        if (strcmp(a, "--bytes") == 0) {
            if (!parse_count(val, BK_CORPUS_MAX_BYTES, &bytes) || bytes == 0) {
                fprintf(stderr, "boardlab-kern corpus: --bytes expects 1 to 1G (k/M/G suffixes), got '%s'\n", val);
                return 2;
            }
            have_bytes = true;
        } else if (strcmp(a, "--seed") == 0) {
            if (!parse_count(val, 4294967295.0, &seed)) {
                fprintf(stderr, "boardlab-kern corpus: --seed expects an integer from 0 to 4294967295, got '%s'\n",
                        val);
                return 2;
            }
        } else if (strcmp(a, "--mix") == 0)
            mix = val;
        else if (strcmp(a, "--out") == 0)
            out = val;
        else {
            fprintf(stderr, "boardlab-kern corpus: unknown option '%s'; see --help\n", a);
            return 2;
        }
    }
    if (!have_bytes || !out || !*out) {
        fprintf(stderr, "boardlab-kern corpus: --bytes and --out are required\n");
        return 2;
    }
    struct stat out_st; /* written by rename: never over a device, FIFO or directory (e.g. /dev/null) */
    if (stat(out, &out_st) == 0 && !S_ISREG(out_st.st_mode)) {
        fprintf(stderr, "boardlab-kern corpus: --out '%s' is not a regular file; give a new path or a regular file\n",
                out);
        return 2;
    }
    unsigned pct[BK_CORPUS_PARTS];
    char why[160];
    if (bk_corpus_parse_mix(mix, pct, why, sizeof why) != 0) {
        fprintf(stderr,
                "boardlab-kern corpus: --mix '%s': %s; expected NAME=PERCENT,... with NAME in " BK_CORPUS_PART_NAMES
                " summing to 100, e.g. '" BK_CORPUS_DEFAULT_MIX "'\n",
                mix, why);
        return 2;
    }
    size_t tlen = strlen(out) + sizeof "..XXXXXX.tmp";
    char *tmp = malloc(tlen);
    bk_corpus *c = bk_corpus_new(pct, seed);
    if (!tmp || !c) {
        free(tmp);
        bk_corpus_free(c);
        fprintf(stderr, "boardlab-kern corpus: out of memory\n");
        return 1;
    }
    int fd = create_beside(out, tmp, tlen), err = fd < 0 ? errno : 0;
    if (fd < 0)
        fprintf(stderr,
                "boardlab-kern corpus: --out '%s': cannot create a file in its directory: %s; give a path in an "
                "existing directory you can write\n",
                out, strerror(err));
    else if ((err = write_and_rename(fd, tmp, out, c, bytes)) != 0)
        fprintf(stderr, "boardlab-kern corpus: cannot write '%s': %s\n", out, strerror(err));
    bk_corpus_free(c);
    free(tmp);
    if (err)
        return fd < 0 && place_error(err) ? 2 : 1;
    printf("wrote %llu bytes of corpus (mix %s, seed %llu) to %s\n", (unsigned long long)bytes, mix,
           (unsigned long long)seed, out);
    return 0;
}

int main(int argc, char **argv)
{
    /* The launcher is its programs' orphan guard: it must outlive the runner to kill them (stdin's end). */
    if (argc >= 2 && strcmp(argv[1], "launch") == 0)
        return bk_launch_main(argc - 2, argv + 2);
    die_with_parent();
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("boardlab-kern %s (result schema %d, catalog schema %d)\n", BK_VERSION, BK_RESULT_SCHEMA, BK_SCHEMA);
        return 0;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "corpus") == 0)
        return corpus_main(argc - 2, argv + 2);
    if (strcmp(argv[1], "net-sink") == 0)
        return bk_net_sink_main(argc - 2, argv + 2);
    if (strcmp(argv[1], "--list") == 0) {
        bool json = argc > 2 && strcmp(argv[2], "--json") == 0;
        if (argc > 2 + json) {
            fprintf(stderr, "boardlab-kern: unexpected argument '%s' after --list\n", argv[2 + json]);
            return 2;
        }
        list(json);
        return 0;
    }
    const bk_kernel *k = bk_find_kernel(argv[1]);
    if (!k) {
        fprintf(stderr, "boardlab-kern: unknown kernel '%s'; run 'boardlab-kern --list' for the catalog\n", argv[1]);
        return 2;
    }
    bk_options opt = {.iterations = 10,
                      .warmup_max_iterations = 300,
                      .warmup_max_ms = 2000,
                      .warmup_cv = 0.02,
                      .min_iteration_ms = 1.0};
    static bk_counters counters;
    char **assign = calloc((size_t)argc, sizeof(char *));
    int nassign = 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        double v;
        if (strcmp(a, "--json") == 0) {
            opt.json = true;
            continue;
        }
        if (strcmp(a, "--corrupt") == 0) {
            opt.corrupt = true;
            continue;
        }
        if (!val) {
            fprintf(stderr, "boardlab-kern: %s needs a value (or is unknown); see --help\n", a);
            free(assign);
            return 2;
        }
        i++;
        bool good = true;
        if (strcmp(a, "--param") == 0 || strcmp(a, "-p") == 0)
            assign[nassign++] = argv[i];
        else if (strcmp(a, "--iterations") == 0 && (good = parse_number(a, val, 1, 1000000, &v)))
            opt.iterations = (int)v;
        else if (strcmp(a, "--warmup-max-iterations") == 0 && (good = parse_number(a, val, 0, 100000, &v)))
            opt.warmup_max_iterations = (int)v;
        else if (strcmp(a, "--warmup-max-ms") == 0 && (good = parse_number(a, val, 0, 3.6e6, &v)))
            opt.warmup_max_ms = v;
        else if (strcmp(a, "--warmup-cv") == 0 && (good = parse_number(a, val, 0, 10, &v)))
            opt.warmup_cv = v;
        else if (strcmp(a, "--counters") == 0) {
            char err[256];
            if (!bk_counters_parse(&counters, val, err, sizeof err)) {
                fprintf(stderr, "boardlab-kern: %s\n", err);
                good = false;
            } else
                opt.counters = &counters;
        } else if (strcmp(a, "--min-iteration-ms") == 0 && (good = parse_number(a, val, 0.001, 60000, &v)))
            opt.min_iteration_ms = v;
        else if (good) {
            fprintf(stderr, "boardlab-kern: unknown option '%s'; see --help\n", a);
            good = false;
        }
        if (!good) {
            free(assign);
            return 2;
        }
    }
    int rc = bk_run_kernel(k, assign, nassign, &opt);
    free(assign);
    return rc;
}
