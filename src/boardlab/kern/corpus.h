/* The deterministic corpus shaped like a satellite's sensor data (the satellite-computer study): the input of the compression
 * kernels, and later of the crypto and I/O kernels, so that all of them work on the same bytes.
 *
 * A corpus interleaves four streams in segments of BK_CORPUS_SEGMENT bytes, as packets of several instruments
 * interleave in a downlink: int16 little-endian telemetry (several channels: slow sinusoids, drift, noise),
 * syslog-like text logs, 8-bit camera-like frames (smooth gradients, edges, noise) and random bytes (an
 * already compressed or encrypted payload). The mix gives each stream's share in percent.
 *
 * The bytes depend only on the mix and the seed, never on the platform (integer arithmetic only, explicit
 * byte order) or on how they are read: a shorter corpus is a prefix of a longer one with the same mix and seed,
 * and reading it in chunks of any size gives the same bytes. `boardlab-kern corpus` writes them to a file. */
#ifndef BK_CORPUS_H
#define BK_CORPUS_H

#include "core.h"

enum { BK_CORPUS_TELEMETRY, BK_CORPUS_LOGS, BK_CORPUS_IMAGE, BK_CORPUS_RANDOM, BK_CORPUS_PARTS };

#define BK_CORPUS_PART_NAMES "telemetry, logs, image, random"
#define BK_CORPUS_DEFAULT_MIX "telemetry=40,logs=30,image=20,random=10"
#define BK_CORPUS_DEFAULT_SEED "1"
#define BK_CORPUS_MAX_BYTES (1024.0 * 1024 * 1024)
#define BK_CORPUS_SEGMENT 8192

/* The four parameters of every kernel that works on the corpus; `def_bytes` is the kernel's default size,
 * chosen so that a default run stays short. bk_corpus_load() reads them. */
#define BK_CORPUS_PARAMS(def_bytes)                                                                                    \
    {"bytes",   BK_INT, 1,   BK_CORPUS_MAX_BYTES,                                                                      \
     def_bytes, NULL,   "B", "size of the generated corpus (k/M/G suffixes; ignored with input=)"},                    \
        {"mix",                                                                                                        \
         BK_STR,                                                                                                       \
         0,                                                                                                            \
         0,                                                                                                            \
         BK_CORPUS_DEFAULT_MIX,                                                                                        \
         NULL,                                                                                                         \
         NULL,                                                                                                         \
         "share of each corpus stream in percent, NAME=PERCENT,... over " BK_CORPUS_PART_NAMES ", summing to 100"},    \
        {"seed", BK_INT, 0, 4294967295.0, BK_CORPUS_DEFAULT_SEED, NULL, NULL, "seed of the generated corpus"},         \
        {"input", BK_STR, 0, 0, "", NULL, NULL, "a file to use instead of the generated corpus (read fully)"}

/* Parses "telemetry=40,logs=30,image=20,random=10" (any subset, any order, each name at most once, integer
 * percentages summing to 100) into pct[]. Returns 0, or -1 with the reason in `why`. */
BK_HIDDEN int bk_corpus_parse_mix(const char *spec, unsigned pct[BK_CORPUS_PARTS], char *why, size_t why_len);

typedef struct bk_corpus bk_corpus;

/* A generator positioned at the corpus' first byte; NULL when out of memory. */
BK_HIDDEN bk_corpus *bk_corpus_new(const unsigned pct[BK_CORPUS_PARTS], uint64_t seed);
/* The next n bytes of the corpus. */
BK_HIDDEN void bk_corpus_read(bk_corpus *c, unsigned char *out, size_t n);
BK_HIDDEN void bk_corpus_free(bk_corpus *c);

/* For a kernel's init: the corpus its parameters (BK_CORPUS_PARAMS) describe, generated or read from `input`,
 * in a page-aligned buffer of *n bytes (free() it). Records where it came from under "info". Returns 0, or -1
 * after bk_fail() naming the parameter and the fix. */
BK_HIDDEN int bk_corpus_load(bk_ctx *ctx, unsigned char **data, size_t *n);

#endif
