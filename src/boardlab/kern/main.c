/* boardlab-kern: run one native kernel once and print its schema-1 result.
 *
 *   boardlab-kern --version
 *   boardlab-kern --list [--json]
 *   boardlab-kern NAME [--param k=v]... [--iterations N] [--json] ...
 *
 * Exit codes: 0 ok, 1 a runtime or verification failure, 2 bad usage. */
#include "core_internal.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

static void usage(FILE *out)
{
    fprintf(out,
            "usage: boardlab-kern --version\n"
            "       boardlab-kern --list [--json]\n"
            "       boardlab-kern NAME [--param NAME=VALUE]... [options]\n"
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
            "  --corrupt                 damage the result before verification (tests that it is caught)\n",
            BK_SCHEMA);
}

static void list(bool json)
{
    if (json) {
        bk_json j;
        bk_json_init(&j, stdout);
        bk_json_begin_object(&j);
        bk_json_key(&j, "schema");
        bk_json_int(&j, BK_SCHEMA);
        bk_json_key(&j, "tool");
        bk_json_str(&j, "boardlab-kern");
        bk_json_key(&j, "version");
        bk_json_str(&j, BK_VERSION);
        bk_json_key(&j, "kernels");
        bk_json_begin_array(&j);
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
        printf("%-22s %s%s%s\n", k->name, k->summary, reason ? "  [unsupported: " : "", reason ? reason : "");
        if (reason)
            printf("]\n");
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

int main(int argc, char **argv)
{
    die_with_parent();
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("boardlab-kern %s (schema %d)\n", BK_VERSION, BK_SCHEMA);
        return 0;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(stdout);
        return 0;
    }
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
        else if (strcmp(a, "--min-iteration-ms") == 0 && (good = parse_number(a, val, 0.001, 60000, &v)))
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
