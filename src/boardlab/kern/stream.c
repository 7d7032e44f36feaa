/* stream.pipeline: receive -> filter -> compress -> encrypt -> transmit, the data-stream studies' chain.
 *
 * Records of block_bytes (1-64 KiB) of the sensor corpus (corpus.c) enter with a sequence number. Stages:
 *   receive:  source=generator copies the next block of the corpus into a record (the copy a socket read
 *             would make), paced at rate_bit_s in push mode; source=udp|tcp|pty reads framed records
 *             (magic, length, sequence number, corpus block) that a feeder process sends on loopback or
 *             writes into a pty, paced by the feeder: rate_bit_s for udp/tcp, the byte rate of the baud
 *             (8N1: baud/10 B/s) for the pty, which itself ignores baud settings. A gap in a TCP or pty
 *             stream is an error; UDP datagrams the kernel lost are counted as the receive stage's drops;
 *   filter:   decimation (keep every decimate-th 16-bit sample; 1 = pass-through);
 *   compress: zstd, zlib or lzma one-shot per record, or none;
 *   encrypt:  AES-256-GCM or ChaCha20-Poly1305 with a per-record nonce and tag, or none, through libcrypto
 *             (EVP) or the kernel crypto API (crypto_api=afalg: AF_ALG sockets, the path to a SoC's crypto
 *             engine); the sink authenticates every record with libcrypto either way;
 *   transmit: sends the record on a local SOCK_SEQPACKET socket, with an optional rate cap (token bucket,
 *             down to kbit/s for a downlink) to a sink thread that checks sequence numbers and AEAD tags.
 * Scheduling: one thread per stage joined by bounded rings (ring_slots records each), or run-to-completion
 * (one thread does every stage of a record before the next). Push: the source is paced and a stage whose
 * output ring is full (or a transmit over its rate cap) drops the record and counts it. Pull: stages wait for
 * room (sink-credited), never drop. Any sequence gap at the sink not matched by a counted drop is an error.
 *
 * One rep is one record offered; run() waits until every offered record is delivered or dropped, so an
 * iteration's time is end to end. Per-stage CPU comes from each thread's CLOCK_THREAD_CPUTIME_ID and is
 * compared with the process's rusage at the end.
 */
#include "core.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "corpus.h"
#include "crypto_afalg.h"

#if BK_HAVE_ZSTD
#include <zstd.h>
#endif
#if BK_HAVE_ZLIB
#include <zlib.h>
#endif
#if BK_HAVE_LZMA
#include <lzma.h>
#endif
#if BK_HAVE_CRYPTO
#include <openssl/evp.h>
#endif

enum { ST_RECEIVE, ST_FILTER, ST_COMPRESS, ST_ENCRYPT, ST_TRANSMIT, ST_SINK, NSTAGES };
static const char *stage_names[NSTAGES] = {"receive", "filter", "compress", "encrypt", "transmit", "sink"};

#define TAG_LEN 16
#define PACE_BURST_NS 1000000ULL /* pacing credit kept for a late source or link: 1 ms */
#define SLACK 1024 /* room for a codec's worst-case expansion of a small block, the header and the tag */

typedef struct {
    uint64_t seq;
    uint32_t len; /* payload bytes */
    uint32_t raw_len; /* input bytes this record carries (before filter/compress) */
} rec_hdr;

typedef struct {
    rec_hdr h;
    unsigned char *data; /* capacity: cap */
} record;

/* A bounded single-producer single-consumer ring of record pointers, with a mutex and conditions so that an
 * idle stage sleeps (its CPU time stays its work). */
typedef struct {
    record **slot;
    int cap, head, count;
    pthread_mutex_t m;
    pthread_cond_t not_empty, not_full;
} ring;

typedef struct {
    _Atomic uint64_t in, out, drops, bytes_in, bytes_out, cpu_ns;
    _Atomic uint64_t drop_bytes; /* input bytes the records dropped here carried */
} stage_stats;

enum { SRC_GENERATOR, SRC_UDP, SRC_TCP, SRC_PTY };
static const char *source_names[] = {"generator", "udp", "tcp", "pty"};

/* A record on the wire from the feeder: header, then len bytes of the corpus. */
#define WIRE_MAGIC 0x424c5346u /* "BLSF" */
typedef struct {
    uint32_t magic, len;
    uint64_t seq;
} wire_hdr;
#define PTY_CHUNK 64 /* the feeder writes a pty in chunks this size, each at its due time at the byte rate */

typedef struct pipeline pipeline;

typedef struct {
    pipeline *p;
    int stage;
    pthread_t tid;
    bool started;
    clockid_t clock; /* the thread's CPU clock, read from outside when it is idle */
} worker;

struct pipeline {
    bool threads, push, verify_sink;
    size_t block, cap;
    int decimate, level, ring_slots;
    char codec[8], cipher[24];
    double rate_bit_s, cap_bit_s, link_bit_s;
    int cpus[NSTAGES];
    unsigned char *corpus;
    size_t corpus_n, corpus_pos;
    ring rings[NSTAGES]; /* rings[i]: input of stage i (1..4) */
    ring pool; /* free records */
    record *records;
    int nrecords;
    stage_stats st[NSTAGES];
    int sock[2]; /* transmit -> sink */
    _Atomic uint64_t emitted, delivered, gap_total, bad_tag, bad_order, dropped;
    _Atomic bool stop;
    _Atomic int busy[NSTAGES]; /* a thread holds a record whose bookkeeping is not finished */
    uint64_t last_seq_plus1; /* sink */
    pthread_mutex_t done_m;
    pthread_cond_t done_c;
    worker w[NSTAGES];
    int source, baud, in_fd;
    size_t rcvbuf;
    pid_t feeder;
    _Atomic int *gate; /* shared with the feeder: 1 while run() runs; between timed iterations it pauses */
    double feed_b_s; /* the feeder's pacing, wire bytes per second (0 = as fast as the reader takes) */
    _Atomic uint64_t lost_in_transit; /* UDP datagrams the kernel dropped before receive read them */
    uint64_t tx_ns0, tx_bits; /* rate cap (token bucket by due time) */
    uint64_t src_ns0, src_bytes; /* push pacing */
    uint64_t run_ns; /* summed time of run() calls */
    uint64_t last_run_end_ns;
    char err[256];
    _Atomic bool failed;
    /* per-thread codec/cipher contexts: index by stage (compress/encrypt) and sink */
#if BK_HAVE_ZSTD
    ZSTD_CCtx *zc;
#endif
#if BK_HAVE_CRYPTO
    EVP_CIPHER_CTX *enc, *dec;
    const EVP_CIPHER *evp;
#endif
    bool afalg;
    bk_afalg_aead *kenc; /* crypto_api=afalg: the encrypt stage's AF_ALG operation socket */
    unsigned char key[32];
    unsigned char *sink_buf, *sink_plain;
};

static void fail(pipeline *p, const char *msg, const char *detail)
{
    if (!atomic_exchange(&p->failed, true))
        snprintf(p->err, sizeof p->err, "%s%s%s", msg, detail ? ": " : "", detail ? detail : "");
}

static int ring_init(ring *r, int cap)
{
    r->slot = calloc((size_t)cap, sizeof(record *));
    r->cap = cap;
    pthread_mutex_init(&r->m, NULL);
    pthread_cond_init(&r->not_empty, NULL);
    pthread_cond_init(&r->not_full, NULL);
    return r->slot ? 0 : -1;
}

/* Pushes rec; with wait=false returns -1 at once when full (push mode drops). */
static int ring_put(pipeline *p, ring *r, record *rec, bool wait)
{
    pthread_mutex_lock(&r->m);
    while (r->count == r->cap && wait && !atomic_load(&p->stop))
        pthread_cond_wait(&r->not_full, &r->m);
    if (r->count == r->cap) {
        pthread_mutex_unlock(&r->m);
        return -1;
    }
    r->slot[(r->head + r->count) % r->cap] = rec;
    r->count++;
    pthread_cond_signal(&r->not_empty);
    pthread_mutex_unlock(&r->m);
    return 0;
}

static record *ring_get(pipeline *p, ring *r)
{
    pthread_mutex_lock(&r->m);
    while (r->count == 0 && !atomic_load(&p->stop))
        pthread_cond_wait(&r->not_empty, &r->m);
    record *rec = NULL;
    if (r->count) {
        rec = r->slot[r->head];
        r->head = (r->head + 1) % r->cap;
        r->count--;
        pthread_cond_signal(&r->not_full);
    }
    pthread_mutex_unlock(&r->m);
    return rec;
}

static void wake_all(pipeline *p)
{
    for (int i = 0; i < NSTAGES; i++) {
        pthread_mutex_lock(&p->rings[i].m);
        pthread_cond_broadcast(&p->rings[i].not_empty);
        pthread_cond_broadcast(&p->rings[i].not_full);
        pthread_mutex_unlock(&p->rings[i].m);
    }
    pthread_mutex_lock(&p->pool.m);
    pthread_cond_broadcast(&p->pool.not_empty);
    pthread_mutex_unlock(&p->pool.m);
}

/* A record leaves the pipeline (delivered or dropped): back to the pool, and wake run() when all are done. */
static void settle(pipeline *p, record *rec, int drop_stage)
{
    if (drop_stage >= 0) {
        atomic_fetch_add(&p->st[drop_stage].drops, 1);
        atomic_fetch_add(&p->st[drop_stage].drop_bytes, rec->h.raw_len);
        atomic_fetch_add(&p->dropped, 1);
    }
    ring_put(p, &p->pool, rec, true);
    pthread_mutex_lock(&p->done_m);
    pthread_cond_broadcast(&p->done_c);
    pthread_mutex_unlock(&p->done_m);
}

/* ---- the stages' work ---- */

static void pace_until(uint64_t due)
{
    uint64_t now = bk_now_ns();
    if (due > now) {
        struct timespec ts = {(time_t)((due - now) / 1000000000ULL), (long)((due - now) % 1000000000ULL)};
        nanosleep(&ts, NULL);
    }
}

/* Reads exactly n bytes of a stream (tcp, pty); waits at most timeout_ms for each piece. */
static int read_full(pipeline *p, unsigned char *dst, size_t n, int timeout_ms)
{
    for (size_t got = 0; got < n;) {
        struct pollfd pf = {.fd = p->in_fd, .events = POLLIN};
        int pr = poll(&pf, 1, timeout_ms);
        if (pr == 0) {
            fail(p, "receive: the feeder sent nothing for", "10 s plus a record's time at its rate");
            return -1;
        }
        ssize_t k = pr < 0 ? -1 : read(p->in_fd, dst + got, n - got);
        if (k == 0) {
            fail(p, "receive: the feeder closed its end", source_names[p->source]);
            return -1;
        }
        if (k < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            fail(p, "receive read", strerror(errno));
            return -1;
        }
        got += (size_t)k;
    }
    return 0;
}

/* Receives one framed record from the real source into dst (block bytes). Sequence numbers: an earlier one
 * is an error; a gap is an error on tcp and pty (lossless byte streams) and, on udp, datagrams the kernel
 * lost, counted as this stage's drops. Returns 0 with the record's sequence number taken, or -1. */
static int rx_frame(pipeline *p, unsigned char *dst, uint64_t *seq)
{
    wire_hdr h;
    int timeout_ms = 10000 + (p->feed_b_s > 0 ? (int)(1e3 * (double)p->block / p->feed_b_s) : 0);
    if (p->source == SRC_UDP) {
        struct iovec iov[2] = {{&h, sizeof h}, {dst, p->block}};
        struct msghdr msg = {.msg_iov = iov, .msg_iovlen = 2};
        ssize_t n;
        for (;;) {
            struct pollfd pf = {.fd = p->in_fd, .events = POLLIN};
            if (poll(&pf, 1, timeout_ms) == 0) {
                fail(p, "receive: no datagram from the feeder for", "10 s plus a record's time at its rate");
                return -1;
            }
            n = recvmsg(p->in_fd, &msg, MSG_DONTWAIT);
            if (n >= 0 || (errno != EINTR && errno != EAGAIN))
                break;
        }
        if (n < 0) {
            fail(p, "receive recvmsg", strerror(errno));
            return -1;
        }
        if ((size_t)n != sizeof h + p->block) {
            fail(p, "receive: a datagram of the wrong size", NULL);
            return -1;
        }
    } else if (read_full(p, (unsigned char *)&h, sizeof h, timeout_ms) != 0 ||
               (h.magic == WIRE_MAGIC && h.len == p->block && read_full(p, dst, p->block, timeout_ms) != 0))
        return -1;
    if (h.magic != WIRE_MAGIC || h.len != p->block) {
        fail(p, "receive: a frame with a bad header (lost framing)", source_names[p->source]);
        return -1;
    }
    uint64_t expect = atomic_load(&p->emitted);
    if (h.seq < expect) {
        fail(p, "receive: a sequence number went backwards", source_names[p->source]);
        return -1;
    }
    uint64_t gap = h.seq - expect;
    if (gap && p->source != SRC_UDP) {
        snprintf(p->err, sizeof p->err, "receive: %llu records missing from the %s stream at sequence %llu",
                 (unsigned long long)gap, source_names[p->source], (unsigned long long)expect);
        atomic_store(&p->failed, true);
        return -1;
    }
    if (gap) { /* lost in the socket's receive buffer (see RcvbufErrors in /proc/net/snmp): receive's drops */
        atomic_fetch_add(&p->st[ST_RECEIVE].in, gap);
        atomic_fetch_add(&p->st[ST_RECEIVE].out, gap);
        atomic_fetch_add(&p->st[ST_RECEIVE].bytes_in, gap * p->block);
        atomic_fetch_add(&p->st[ST_RECEIVE].drops, gap);
        atomic_fetch_add(&p->st[ST_RECEIVE].drop_bytes, gap * p->block);
        atomic_fetch_add(&p->dropped, gap);
        atomic_fetch_add(&p->lost_in_transit, gap);
        atomic_fetch_add(&p->emitted, gap);
    }
    *seq = atomic_fetch_add(&p->emitted, 1);
    return 0;
}

static int do_receive(pipeline *p, record *r)
{
    size_t n = p->block;
    if (p->source != SRC_GENERATOR) {
        if (rx_frame(p, r->data, &r->h.seq) != 0)
            return -1;
        r->h.len = r->h.raw_len = (uint32_t)n;
        return 0;
    }
    r->h.seq = atomic_fetch_add(&p->emitted, 1);
    for (size_t done = 0; done < n;) {
        size_t k = p->corpus_n - p->corpus_pos < n - done ? p->corpus_n - p->corpus_pos : n - done;
        memcpy(r->data + done, p->corpus + p->corpus_pos, k);
        p->corpus_pos = (p->corpus_pos + k) % p->corpus_n;
        done += k;
    }
    r->h.len = r->h.raw_len = (uint32_t)n;
    return 0;
}

static void do_filter(pipeline *p, record *r)
{
    if (p->decimate <= 1)
        return;
    uint16_t *w = (uint16_t *)r->data;
    size_t n = r->h.len / 2, k = 0;
    for (size_t i = 0; i < n; i += (size_t)p->decimate)
        w[k++] = w[i];
    r->h.len = (uint32_t)(k * 2);
}

static int do_compress(pipeline *p, record *r, unsigned char *tmp)
{
    size_t out = p->cap;
    if (strcmp(p->codec, "none") == 0)
        return 0;
#if BK_HAVE_ZSTD
    if (strcmp(p->codec, "zstd") == 0) {
        size_t rc = ZSTD_compressCCtx(p->zc, tmp, p->cap, r->data, r->h.len, p->level);
        if (ZSTD_isError(rc)) {
            fail(p, "zstd", ZSTD_getErrorName(rc));
            return -1;
        }
        out = rc;
    }
#endif
#if BK_HAVE_ZLIB
    if (strcmp(p->codec, "zlib") == 0) {
        uLongf dl = (uLongf)p->cap;
        if (compress2(tmp, &dl, r->data, r->h.len, p->level) != Z_OK) {
            fail(p, "zlib compress2 failed", NULL);
            return -1;
        }
        out = dl;
    }
#endif
#if BK_HAVE_LZMA
    if (strcmp(p->codec, "lzma") == 0) {
        size_t pos = 0;
        if (lzma_easy_buffer_encode((uint32_t)p->level, LZMA_CHECK_CRC32, NULL, r->data, r->h.len, tmp, &pos, p->cap) !=
            LZMA_OK) {
            fail(p, "lzma encode failed", NULL);
            return -1;
        }
        out = pos;
    }
#endif
    memcpy(r->data, tmp, out);
    r->h.len = (uint32_t)out;
    return 0;
}

static void nonce_of(uint64_t seq, unsigned char iv[12])
{
    memset(iv, 0, 12);
    memcpy(iv + 4, &seq, 8);
}

static int do_encrypt(pipeline *p, record *r, unsigned char *tmp)
{
    if (strcmp(p->cipher, "none") == 0)
        return 0;
    if (p->afalg) {
        unsigned char iv[12];
        nonce_of(r->h.seq, iv);
        if (bk_afalg_aead_seal(p->kenc, iv, (const unsigned char *)&r->h.seq, sizeof r->h.seq, r->data, r->h.len, tmp,
                               tmp + r->h.len) != 0) {
            fail(p, "AF_ALG encryption failed", bk_afalg_aead_error(p->kenc));
            return -1;
        }
        memcpy(r->data, tmp, (size_t)r->h.len + TAG_LEN);
        r->h.len += TAG_LEN;
        return 0;
    }
#if BK_HAVE_CRYPTO
    unsigned char iv[12];
    nonce_of(r->h.seq, iv);
    int ol = 0, fl = 0;
    if (EVP_EncryptInit_ex(p->enc, NULL, NULL, NULL, iv) != 1 ||
        EVP_EncryptUpdate(p->enc, NULL, &ol, (const unsigned char *)&r->h.seq, sizeof r->h.seq) != 1 ||
        EVP_EncryptUpdate(p->enc, tmp, &ol, r->data, (int)r->h.len) != 1 ||
        EVP_EncryptFinal_ex(p->enc, tmp + ol, &fl) != 1 ||
        EVP_CIPHER_CTX_ctrl(p->enc, EVP_CTRL_AEAD_GET_TAG, TAG_LEN, tmp + ol + fl) != 1) {
        fail(p, "encryption failed", NULL);
        return -1;
    }
    memcpy(r->data, tmp, (size_t)(ol + fl + TAG_LEN));
    r->h.len = (uint32_t)(ol + fl + TAG_LEN);
    return 0;
#else
    (void)r, (void)tmp;
    fail(p, "built without libcrypto", NULL);
    return -1;
#endif
}

/* Sends the record (header + payload as one datagram); returns 1 when the rate cap dropped it (push). */
static int do_transmit(pipeline *p, record *r)
{
    if (p->cap_bit_s > 0) {
        uint64_t bits = ((uint64_t)r->h.len + sizeof r->h) * 8, now = bk_now_ns();
        uint64_t due = p->tx_ns0 + (uint64_t)((double)p->tx_bits * 1e9 / p->cap_bit_s);
        if (now > due + PACE_BURST_NS) { /* an idle link earns no credit beyond a short burst */
            p->tx_ns0 = due = now;
            p->tx_bits = 0;
        }
        if (p->push && due > bk_now_ns())
            return 1; /* the downlink is busy: a source-paced pipeline loses this record */
        pace_until(due);
        p->tx_bits += bits;
    }
    struct iovec iov[2] = {{&r->h, sizeof r->h}, {r->data, r->h.len}};
    struct msghdr msg = {.msg_iov = iov, .msg_iovlen = 2};
    for (;;) {
        ssize_t s = sendmsg(p->sock[0], &msg, 0);
        if (s >= 0)
            return 0;
        if (errno != EINTR) {
            fail(p, "transmit sendmsg", strerror(errno));
            return -1;
        }
    }
}

/* Stage i's work on a record; returns 0 to pass it on, 1 when the stage dropped it, -1 on failure. */
static int stage_work(pipeline *p, int i, record *r, unsigned char *tmp)
{
    atomic_fetch_add(&p->st[i].in, 1);
    atomic_fetch_add(&p->st[i].bytes_in, i == ST_RECEIVE ? p->block : r->h.len);
    int rc = 0;
    switch (i) {
    case ST_RECEIVE: rc = do_receive(p, r); break;
    case ST_FILTER: do_filter(p, r); break;
    case ST_COMPRESS: rc = do_compress(p, r, tmp); break;
    case ST_ENCRYPT: rc = do_encrypt(p, r, tmp); break;
    case ST_TRANSMIT: rc = do_transmit(p, r); break;
    default: break;
    }
    if (rc == 0) {
        atomic_fetch_add(&p->st[i].out, 1);
        atomic_fetch_add(&p->st[i].bytes_out, r->h.len);
    }
    return rc;
}

static void pin_stage(pipeline *p, int stage)
{
    if (p->cpus[stage] >= 0 && bk_pin_thread_to_cpu(p->cpus[stage]) != 0)
        fail(p, "cannot pin a stage thread to its CPU", stage_names[stage]);
}

/* Stages 1-4 in thread mode: take from its ring, work, pass on (or drop in push mode). */
static void *stage_thread(void *arg)
{
    worker *w = arg;
    pipeline *p = w->p;
    int i = w->stage;
    pin_stage(p, i);
    unsigned char *tmp = malloc(p->cap);
    uint64_t c0 = bk_clock_ns(CLOCK_THREAD_CPUTIME_ID);
    while (!atomic_load(&p->stop)) {
        record *r = ring_get(p, &p->rings[i]);
        if (!r)
            continue;
        atomic_store(&p->busy[i], 1);
        int rc = tmp ? stage_work(p, i, r, tmp) : -1;
        if (rc == 0 && i < ST_TRANSMIT) {
            if (ring_put(p, &p->rings[i + 1], r, !p->push) != 0)
                settle(p, r, i); /* the next stage's ring is full: dropped here */
        } else if (rc == 0)
            settle(p, r, -1); /* sent; the sink counts delivery */
        else
            settle(p, r, i);
        atomic_store(&p->st[i].cpu_ns, bk_clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0);
        atomic_store(&p->busy[i], 0);
    }
    free(tmp);
    atomic_store(&p->st[i].cpu_ns, bk_clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0);
    return NULL;
}

static void *sink_thread(void *arg)
{
    worker *w = arg;
    pipeline *p = w->p;
    pin_stage(p, ST_SINK);
    uint64_t c0 = bk_clock_ns(CLOCK_THREAD_CPUTIME_ID);
#if BK_HAVE_CRYPTO
    bool aead = strcmp(p->cipher, "none") != 0;
#endif
    for (;;) {
        ssize_t n = recv(p->sock[1], p->sink_buf, p->cap + sizeof(rec_hdr), 0);
        if (n <= 0) {
            if (n < 0 && errno == EINTR)
                continue;
            break;
        }
        atomic_store(&p->busy[ST_SINK], 1);
        rec_hdr h;
        memcpy(&h, p->sink_buf, sizeof h);
        atomic_fetch_add(&p->st[ST_SINK].in, 1);
        atomic_fetch_add(&p->st[ST_SINK].bytes_in, h.len);
        if (h.seq < p->last_seq_plus1)
            atomic_fetch_add(&p->bad_order, 1);
        else {
            atomic_fetch_add(&p->gap_total, h.seq - p->last_seq_plus1);
            p->last_seq_plus1 = h.seq + 1;
        }
#if BK_HAVE_CRYPTO
        if (aead && p->verify_sink && h.len >= TAG_LEN) {
            unsigned char iv[12];
            nonce_of(h.seq, iv);
            int ol = 0, fl = 0;
            unsigned char *ct = p->sink_buf + sizeof h;
            int clen = (int)h.len - TAG_LEN;
            if (EVP_DecryptInit_ex(p->dec, NULL, NULL, NULL, iv) != 1 ||
                EVP_DecryptUpdate(p->dec, NULL, &ol, (const unsigned char *)&h.seq, sizeof h.seq) != 1 ||
                EVP_DecryptUpdate(p->dec, p->sink_plain, &ol, ct, clen) != 1 ||
                EVP_CIPHER_CTX_ctrl(p->dec, EVP_CTRL_AEAD_SET_TAG, TAG_LEN, ct + clen) != 1 ||
                EVP_DecryptFinal_ex(p->dec, p->sink_plain + ol, &fl) != 1)
                atomic_fetch_add(&p->bad_tag, 1);
        }
#endif
        atomic_fetch_add(&p->st[ST_SINK].out, 1);
        atomic_fetch_add(&p->st[ST_SINK].bytes_out, h.raw_len);
        atomic_fetch_add(&p->delivered, 1);
        atomic_store(&p->st[ST_SINK].cpu_ns, bk_clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0);
        atomic_store(&p->busy[ST_SINK], 0);
        pthread_mutex_lock(&p->done_m);
        pthread_cond_broadcast(&p->done_c);
        pthread_mutex_unlock(&p->done_m);
    }
    atomic_store(&p->st[ST_SINK].cpu_ns, bk_clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0);
    return NULL;
}

/* ---- the kernel ---- */

static const bk_param sp_params[] = {
    {"block_bytes", BK_INT, 1024, 65536, "16k", NULL, "bytes", "record (ring buffer element) size, 1-64 KiB"},
    {"source", BK_ENUM, 0, 0, "generator", "generator,udp,tcp,pty", NULL,
     "receive from: generator (the corpus in memory), or a feeder process sending the corpus with sequence "
     "numbers over loopback udp or tcp, or into a pty at baud"},
    {"rcvbuf_bytes", BK_INT, 4096, 268435456, "4M", NULL, "bytes",
     "source=udp: the receive socket's buffer (SO_RCVBUF; the kernel caps it at net.core.rmem_max)"},
    {"baud", BK_INT, 50, 4000000, "115200", NULL, "bit/s",
     "source=pty: line rate; the feeder writes baud/10 B/s (8N1)"},
    {"schedule", BK_ENUM, 0, 0, "threads", "threads,rtc", NULL,
     "threads: one thread per stage with rings between; rtc: run-to-completion on one thread"},
    {"flow", BK_ENUM, 0, 0, "pull", "pull,push", NULL,
     "pull: stages wait for room (sink-credited, no drops); push: source-paced, a full ring drops the record"},
    {"rate_bit_s", BK_FLOAT, 0, 1e12, "0", NULL, "bit/s",
     "offered input rate: the generator's in push mode, the udp/tcp feeder's in any mode (0 = as fast as possible)"},
    {"cap_bit_s", BK_FLOAT, 0, 1e12, "0", NULL, "bit/s",
     "transmit rate cap on the wire (e.g. 9600 for a downlink); 0 = none"},
    {"link_bit_s", BK_FLOAT, 0, 1e12, "0", NULL, "bit/s",
     "the declared rate of the link the stream is for (e.g. 4e9 for a 500 MB/s PCIe lane): goodput is reported "
     "as a percent of it; 0 = none declared"},
    {"ring_slots", BK_INT, 1, 4096, "8", NULL, "records", "capacity of each ring between stages"},
    {"decimate", BK_INT, 1, 64, "1", NULL, NULL, "filter: keep every n-th 16-bit sample (1 = pass-through)"},
    {"codec", BK_ENUM, 0, 0, "zstd", "none,zstd,zlib,lzma", NULL, "compress stage"},
    {"level", BK_INT, 0, 19, "3", NULL, NULL, "compression level (zstd 1-19, zlib 0-9, lzma 0-9)"},
    {"cipher", BK_ENUM, 0, 0, "aes-256-gcm", "none,aes-256-gcm,chacha20-poly1305", NULL, "encrypt stage (libcrypto)"},
    {"crypto_api", BK_ENUM, 0, 0, "libcrypto", "libcrypto,afalg", NULL,
     "encrypt through libcrypto (EVP) or the kernel crypto API (AF_ALG, a SoC crypto engine's path)"},
    {"cpus", BK_STR, 0, 0, "", NULL, NULL,
     "per-stage pinning receive,filter,compress,encrypt,transmit,sink as CPU numbers (-1 = free); empty: none"},
    {"verify_sink", BK_INT, 0, 1, "1", NULL, NULL, "1: the sink checks every record's AEAD tag"},
    {"corpus_bytes", BK_INT, 65536, 268435456, "4M", NULL, "bytes", "size of the sensor corpus cycled as input"},
    {0},
};

static const bk_metric sp_metrics[] = {
    {"goodput_bit_s", "bit/s", true, BK_VALUE, -1, 1.0, "input bits delivered to the sink per second of run time"},
    {"offered_bit_s", "bit/s", true, BK_RATE, -1, 8.0, "input bits offered to the pipeline per second (end to end)"},
    {"goodput_b_s", "B/s", true, BK_VALUE, -1, 1.0, "input bytes delivered to the sink per second of run time"},
    {"drop_percent", "%", false, BK_VALUE, -1, 1.0, "records dropped by any stage, percent of offered"},
    {"compression_ratio", "ratio", true, BK_VALUE, -1, 1.0, "bytes into compress / bytes out"},
    {"cpu_ns_per_byte", "ns/B", false, BK_VALUE, -1, 1.0, "CPU time of all stages per delivered input byte"},
    {"link_efficiency_percent", "%", true, BK_VALUE, -1, 1.0, "goodput_bit_s as a percent of the declared link_bit_s"},
    {0},
};

typedef struct {
    pipeline *p;
    unsigned char *tmp;
    bool window_open, corrupted;
    uint64_t rusage0, stage0[NSTAGES];
    uint64_t main0, main_in_run, proc0; /* the calling thread's CPU at the window's start, and inside run() */
} sp_state;

static const char *sp_supported(void)
{
#if !BK_HAVE_CRYPTO
    return "built without libcrypto (install libssl-dev and rebuild)";
#else
    return NULL;
#endif
}

static int parse_cpus(bk_ctx *ctx, pipeline *p, const char *text)
{
    for (int i = 0; i < NSTAGES; i++)
        p->cpus[i] = -1;
    if (!text[0])
        return 0;
    const char *s = text;
    for (int i = 0; i < NSTAGES && *s; i++) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < -1 || v > 4095)
            return bk_fail(ctx, "cpus='%s': expected up to 6 comma-separated CPU numbers or -1", text);
        p->cpus[i] = (int)v;
        s = *end == ',' ? end + 1 : end;
    }
    if (*s)
        return bk_fail(ctx, "cpus='%s': more than 6 entries (receive,filter,compress,encrypt,transmit,sink)", text);
    return 0;
}

/* The feeder sends only while run() runs: the harness's pauses between iterations would otherwise fill the
 * socket or pty buffers for the next iteration to read at once, and goodput over run time would exceed the
 * pace. Returns true when it waited (the pacing restarts then: no credit for the pause). */
static bool feeder_gate(pipeline *p)
{
    if (atomic_load(p->gate))
        return false;
    while (!atomic_load(p->gate)) {
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
    return true;
}

/* The feeder process: sends the corpus as framed records with sequence numbers 0, 1, ... at its pace until
 * its reader goes away. Runs in a child forked before any thread exists; dies with its parent. */
static _Noreturn void feeder_main(pipeline *p, int fd, pid_t parent)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(0);
    size_t fl = sizeof(wire_hdr) + p->block, pos = 0;
    unsigned char *buf = malloc(fl);
    if (!buf)
        _exit(1);
    uint64_t t0 = bk_now_ns(), sent = 0;
    for (uint64_t seq = 0;; seq++) {
        wire_hdr h = {WIRE_MAGIC, (uint32_t)p->block, seq};
        memcpy(buf, &h, sizeof h);
        for (size_t done = 0; done < p->block;) {
            size_t k = p->corpus_n - pos < p->block - done ? p->corpus_n - pos : p->block - done;
            memcpy(buf + sizeof h + done, p->corpus + pos, k);
            pos = (pos + k) % p->corpus_n;
            done += k;
        }
        if (feeder_gate(p)) {
            t0 = bk_now_ns();
            sent = 0;
        }
        /* A piece is due when its last byte has had its time at the rate (the end of its interval), so an
         * iteration's first record is not free and goodput over run time cannot exceed the pace. */
        if (p->source == SRC_UDP) {
            if (p->feed_b_s > 0)
                pace_until(t0 + (uint64_t)((double)(sent + fl) * 1e9 / p->feed_b_s));
            if (send(fd, buf, fl, 0) < 0 && errno != ENOBUFS && errno != EINTR && errno != ECONNREFUSED)
                _exit(0);
            sent += fl;
            continue;
        }
        /* A stream: in chunks (a UART FIFO's worth on a pty), each written at its due time. */
        size_t chunk = p->source == SRC_PTY ? PTY_CHUNK : fl;
        for (size_t off = 0; off < fl;) {
            size_t k = fl - off < chunk ? fl - off : chunk;
            if (feeder_gate(p)) {
                t0 = bk_now_ns();
                sent = 0;
            }
            if (p->feed_b_s > 0) {
                uint64_t due = t0 + (uint64_t)((double)(sent + k) * 1e9 / p->feed_b_s);
                /* A line earns no credit while its reader is blocked; a paced TCP sender keeps its schedule
                 * (as a UDP one does): after a stall it catches up, so the rate offered is the rate asked. */
                if (p->source == SRC_PTY && bk_now_ns() > due + PACE_BURST_NS) {
                    t0 = bk_now_ns() - (uint64_t)((double)k * 1e9 / p->feed_b_s);
                    sent = 0;
                } else
                    pace_until(due);
            }
            ssize_t w = write(fd, buf + off, k);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                _exit(0);
            off += (size_t)w;
            sent += (size_t)w;
        }
    }
}

static speed_t baud_speed(int baud)
{
    static const struct {
        int baud;
        speed_t s;
    } t[] = {{1200, B1200},     {2400, B2400},     {4800, B4800},     {9600, B9600},
             {19200, B19200},   {38400, B38400},   {57600, B57600},   {115200, B115200},
             {230400, B230400}, {460800, B460800}, {921600, B921600}, {0, 0}};
    for (int i = 0; t[i].baud; i++)
        if (t[i].baud == baud)
            return t[i].s;
    return 0;
}

/* Opens the pipeline's end of the real source and forks the feeder onto the other end. */
static int open_source(bk_ctx *ctx, pipeline *p)
{
    int peer = -1, lfd = -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    if (p->source == SRC_PTY) {
        speed_t sp = baud_speed(p->baud);
        if (!sp)
            return bk_fail(ctx, "baud=%d: not a standard rate (1200-921600: 9600, 19200, 38400, 57600, 115200, ...)",
                           p->baud);
        int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (m < 0 || grantpt(m) != 0 || unlockpt(m) != 0) {
            int e = errno;
            if (m >= 0)
                close(m);
            return bk_unsupported(ctx, "source=pty: cannot open a pseudo-terminal (%s)", strerror(e));
        }
        char name[128];
        if (ptsname_r(m, name, sizeof name) != 0 || (p->in_fd = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0) {
            close(m);
            return bk_unsupported(ctx, "source=pty: cannot open the pty's terminal side");
        }
        /* Raw 8N1 at the baud, as a serial port is set up; the pty keeps the setting and ignores it, so the
         * feeder paces the bytes. */
        struct termios t;
        if (tcgetattr(p->in_fd, &t) == 0) {
            cfmakeraw(&t);
            t.c_cflag = (t.c_cflag & ~(tcflag_t)(CSIZE | PARENB | CSTOPB)) | CS8 | CLOCAL | CREAD;
            cfsetispeed(&t, sp);
            cfsetospeed(&t, sp);
            tcsetattr(p->in_fd, TCSANOW, &t);
        }
        peer = m;
        p->feed_b_s = p->baud / 10.0;
    } else {
        lfd = socket(AF_INET, (p->source == SRC_UDP ? SOCK_DGRAM : SOCK_STREAM) | SOCK_CLOEXEC, 0);
        if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof a) != 0 ||
            getsockname(lfd, (struct sockaddr *)&a, &al) != 0 || (p->source == SRC_TCP && listen(lfd, 1) != 0)) {
            int e = errno;
            if (lfd >= 0)
                close(lfd);
            return bk_unsupported(ctx, "source=%s: cannot bind a loopback socket (%s)", source_names[p->source],
                                  strerror(e));
        }
        if (p->source == SRC_UDP) {
            int rb = (int)p->rcvbuf;
            setsockopt(lfd, SOL_SOCKET, SO_RCVBUF, &rb, sizeof rb);
        }
        p->feed_b_s = p->rate_bit_s / 8.0;
    }
    p->gate = mmap(NULL, sizeof *p->gate, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p->gate == MAP_FAILED) {
        p->gate = NULL;
        return bk_fail(ctx, "mmap of the feeder's gate: %s", strerror(errno));
    }
    atomic_store(p->gate, 1); /* the TCP connect and the first records go ahead */
    pid_t parent = getpid(), pid = fork();
    if (pid < 0)
        return bk_fail(ctx, "fork of the feeder: %s", strerror(errno));
    if (pid == 0) {
        if (p->source == SRC_PTY) {
            close(p->in_fd);
            feeder_main(p, peer, parent);
        }
        close(lfd);
        int c = socket(AF_INET, (p->source == SRC_UDP ? SOCK_DGRAM : SOCK_STREAM) | SOCK_CLOEXEC, 0);
        if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof a) != 0)
            _exit(1);
        feeder_main(p, c, parent);
    }
    p->feeder = pid;
    if (p->source == SRC_PTY) {
        close(peer);
        return 0;
    }
    if (p->source == SRC_UDP) {
        p->in_fd = lfd;
        return 0;
    }
    struct pollfd pf = {.fd = lfd, .events = POLLIN};
    p->in_fd = poll(&pf, 1, 10000) == 1 ? accept4(lfd, NULL, NULL, SOCK_CLOEXEC) : -1;
    close(lfd);
    if (p->in_fd < 0)
        return bk_fail(ctx, "source=tcp: the feeder did not connect within 10 s");
    return 0;
}

static int sp_init(bk_ctx *ctx, void **state)
{
    sp_state *ss = calloc(1, sizeof *ss);
    pipeline *p = calloc(1, sizeof *p);
    if (!ss || !p) {
        free(ss);
        free(p);
        return bk_fail(ctx, "out of memory");
    }
    ss->p = p;
    *state = ss;
    p->sock[0] = p->sock[1] = -1;
    p->in_fd = -1;
    const char *src = bk_arg_str(ctx, "source");
    for (int i = 0; i < 4; i++)
        if (strcmp(src, source_names[i]) == 0)
            p->source = i;
    p->baud = (int)bk_arg_int(ctx, "baud");
    p->rcvbuf = (size_t)bk_arg_int(ctx, "rcvbuf_bytes");
    p->block = (size_t)bk_arg_int(ctx, "block_bytes");
    p->cap = p->block + p->block / 8 + SLACK;
    p->threads = strcmp(bk_arg_str(ctx, "schedule"), "threads") == 0;
    p->push = strcmp(bk_arg_str(ctx, "flow"), "push") == 0;
    p->rate_bit_s = bk_arg_float(ctx, "rate_bit_s");
    p->cap_bit_s = bk_arg_float(ctx, "cap_bit_s");
    p->link_bit_s = bk_arg_float(ctx, "link_bit_s");
    if (p->link_bit_s <= 0)
        bk_skip_metric(ctx, "link_efficiency_percent", "no link_bit_s declared");
    p->ring_slots = (int)bk_arg_int(ctx, "ring_slots");
    p->decimate = (int)bk_arg_int(ctx, "decimate");
    p->level = (int)bk_arg_int(ctx, "level");
    p->verify_sink = bk_arg_int(ctx, "verify_sink") == 1;
    snprintf(p->codec, sizeof p->codec, "%s", bk_arg_str(ctx, "codec"));
    snprintf(p->cipher, sizeof p->cipher, "%s", bk_arg_str(ctx, "cipher"));
    if (parse_cpus(ctx, p, bk_arg_str(ctx, "cpus")) != 0)
        return -1;
#if !BK_HAVE_ZSTD
    if (strcmp(p->codec, "zstd") == 0)
        return bk_unsupported(ctx, "codec=zstd: built without libzstd");
#endif
#if !BK_HAVE_ZLIB
    if (strcmp(p->codec, "zlib") == 0)
        return bk_unsupported(ctx, "codec=zlib: built without zlib");
#endif
#if !BK_HAVE_LZMA
    if (strcmp(p->codec, "lzma") == 0)
        return bk_unsupported(ctx, "codec=lzma: built without liblzma");
#endif
    if ((strcmp(p->codec, "zlib") == 0 || strcmp(p->codec, "lzma") == 0) && p->level > 9)
        return bk_fail(ctx, "level=%d: %s takes 0-9", p->level, p->codec);
    if (strcmp(p->codec, "zstd") == 0 && p->level < 1)
        return bk_fail(ctx, "level=0: zstd takes 1-19");

    /* The sensor corpus, the same bytes the compress and crypto kernels use. */
    unsigned pct[BK_CORPUS_PARTS];
    char why[128];
    bk_corpus_parse_mix(BK_CORPUS_DEFAULT_MIX, pct, why, sizeof why);
    bk_corpus *c = bk_corpus_new(pct, 1);
    p->corpus_n = (size_t)bk_arg_int(ctx, "corpus_bytes");
    p->corpus = bk_alloc(p->corpus_n);
    if (!c || !p->corpus) {
        bk_corpus_free(c);
        return bk_fail(ctx, "out of memory for the corpus");
    }
    bk_corpus_read(c, p->corpus, p->corpus_n);
    bk_corpus_free(c);
    if (p->source == SRC_UDP && p->block + sizeof(wire_hdr) > 65507)
        return bk_fail(ctx, "block_bytes=%zu: source=udp carries a record in one datagram, at most %zu bytes", p->block,
                       65507 - sizeof(wire_hdr));
    /* Before any thread starts: the feeder is a fork. */
    if (p->source != SRC_GENERATOR && open_source(ctx, p) != 0)
        return -1;

#if BK_HAVE_ZSTD
    p->zc = ZSTD_createCCtx();
#endif
#if BK_HAVE_CRYPTO
    p->evp = strcmp(p->cipher, "aes-256-gcm") == 0 ? EVP_aes_256_gcm() : EVP_chacha20_poly1305();
    for (int i = 0; i < 32; i++)
        p->key[i] = (unsigned char)(i * 7 + 1);
    p->enc = EVP_CIPHER_CTX_new();
    p->dec = EVP_CIPHER_CTX_new();
    if (strcmp(p->cipher, "none") != 0 &&
        (!p->enc || !p->dec || EVP_EncryptInit_ex(p->enc, p->evp, NULL, p->key, NULL) != 1 ||
         EVP_DecryptInit_ex(p->dec, p->evp, NULL, p->key, NULL) != 1))
        return bk_unsupported(ctx, "cipher=%s: libcrypto refused it", p->cipher);
#endif
    p->afalg = strcmp(bk_arg_str(ctx, "crypto_api"), "afalg") == 0 && strcmp(p->cipher, "none") != 0;
    if (p->afalg) {
        char why[512];
        bool unsup = false;
        p->kenc = bk_afalg_aead_open(p->cipher, p->key, why, sizeof why, &unsup);
        if (!p->kenc)
            return unsup ? bk_unsupported(ctx, "crypto_api=afalg: %s", why) : bk_fail(ctx, "crypto_api=afalg: %s", why);
    }
    bk_info_str(ctx, "crypto_api",
                strcmp(p->cipher, "none") == 0 ? "none"
                : p->afalg                     ? "AF_ALG (kernel crypto API)"
                                               : "libcrypto EVP");
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, p->sock) != 0)
        return bk_fail(ctx, "socketpair: %s", strerror(errno));
    int sb = (int)(p->cap + sizeof(rec_hdr)) * 16;
    setsockopt(p->sock[0], SOL_SOCKET, SO_SNDBUF, &sb, sizeof sb);
    p->sink_buf = malloc(p->cap + sizeof(rec_hdr));
    p->sink_plain = malloc(p->cap);
    ss->tmp = malloc(p->cap);
    p->nrecords = p->threads ? 4 * p->ring_slots + 8 : 2;
    p->records = calloc((size_t)p->nrecords, sizeof(record));
    if (!p->sink_buf || !p->sink_plain || !ss->tmp || !p->records || ring_init(&p->pool, p->nrecords) != 0)
        return bk_fail(ctx, "out of memory");
    for (int i = 0; i < NSTAGES; i++)
        if (ring_init(&p->rings[i], p->ring_slots) != 0)
            return bk_fail(ctx, "out of memory");
    for (int i = 0; i < p->nrecords; i++) {
        p->records[i].data = malloc(p->cap);
        if (!p->records[i].data)
            return bk_fail(ctx, "out of memory");
        ring_put(p, &p->pool, &p->records[i], false);
    }
    pthread_mutex_init(&p->done_m, NULL);
    pthread_cond_init(&p->done_c, NULL);
    p->w[ST_SINK] = (worker){.p = p, .stage = ST_SINK};
    if (pthread_create(&p->w[ST_SINK].tid, NULL, sink_thread, &p->w[ST_SINK]) != 0)
        return bk_fail(ctx, "cannot start the sink thread");
    p->w[ST_SINK].started = true;
    pthread_getcpuclockid(p->w[ST_SINK].tid, &p->w[ST_SINK].clock);
    if (p->threads)
        for (int i = ST_FILTER; i <= ST_TRANSMIT; i++) {
            p->w[i] = (worker){.p = p, .stage = i};
            if (pthread_create(&p->w[i].tid, NULL, stage_thread, &p->w[i]) != 0)
                return bk_fail(ctx, "cannot start the %s thread", stage_names[i]);
            p->w[i].started = true;
            pthread_getcpuclockid(p->w[i].tid, &p->w[i].clock);
        }
    /* The source runs on the calling thread (pinned for the run, restored after). */
    bk_set_amount(ctx, "offered_bit_s", (double)p->block);
    char what[160];
    if (p->source == SRC_GENERATOR)
        snprintf(what, sizeof what, "generator over the sensor corpus");
    else if (p->source == SRC_PTY)
        snprintf(what, sizeof what, "pty at %d baud 8N1, feeder process paced at %.0f B/s", p->baud, p->feed_b_s);
    else
        snprintf(what, sizeof what, "%s on loopback from a feeder process, paced at %.0f bit/s (0 = unpaced)",
                 source_names[p->source], p->feed_b_s * 8);
    bk_info_str(ctx, "source", what);
    return 0;
}

/* A stage's CPU so far: its thread's clock when it has a thread of its own, else what the calling thread
 * charged to it. */
static uint64_t stage_cpu(const pipeline *p, int i)
{
    return p->w[i].started ? bk_clock_ns(p->w[i].clock) : atomic_load(&p->st[i].cpu_ns);
}

static uint64_t rusage_cpu_ns(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000ULL +
           ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000ULL;
}

static int sp_run(bk_ctx *ctx, void *state, uint64_t reps)
{
    sp_state *ss = state;
    pipeline *p = ss->p;
    uint64_t t0 = bk_now_ns();
    if (!ss->window_open) {
        /* The CPU window starts here: init's corpus generation is no stage's work. */
        ss->window_open = true;
        ss->rusage0 = rusage_cpu_ns();
        ss->proc0 = bk_clock_ns(CLOCK_PROCESS_CPUTIME_ID);
        ss->main0 = bk_clock_ns(CLOCK_THREAD_CPUTIME_ID);
        for (int i = 0; i < NSTAGES; i++)
            ss->stage0[i] = stage_cpu(p, i);
        p->src_ns0 = p->tx_ns0 = t0;
    } else if (p->last_run_end_ns)
        p->src_ns0 += t0 - p->last_run_end_ns; /* the source's clock stops between timed iterations */
    uint64_t c0 = bk_clock_ns(CLOCK_THREAD_CPUTIME_ID), others = 0;
    if (p->gate)
        atomic_store(p->gate, 1);
    for (uint64_t r = 0; r < reps && !atomic_load(&p->failed); r++) {
        if (p->source == SRC_GENERATOR && p->push && p->rate_bit_s > 0)
            pace_until(p->src_ns0 + (uint64_t)((double)p->src_bytes * 8.0 * 1e9 / p->rate_bit_s));
        p->src_bytes += p->block;
        record *rec = NULL;
        if (p->push && p->threads && p->pool.count == 0) {
            /* Data arrived with no free buffer: received, and dropped for want of room, like a full ring. */
            uint64_t seq;
            if (p->source != SRC_GENERATOR && rx_frame(p, ss->tmp, &seq) != 0)
                break;
            if (p->source == SRC_GENERATOR)
                atomic_fetch_add(&p->emitted, 1);
            atomic_fetch_add(&p->st[ST_RECEIVE].drop_bytes, p->block);
            atomic_fetch_add(&p->st[ST_RECEIVE].in, 1);
            atomic_fetch_add(&p->st[ST_RECEIVE].out, 1);
            atomic_fetch_add(&p->st[ST_RECEIVE].bytes_in, p->block);
            atomic_fetch_add(&p->st[ST_RECEIVE].drops, 1);
            atomic_fetch_add(&p->dropped, 1);
            continue;
        }
        rec = ring_get(p, &p->pool);
        if (!rec)
            return bk_fail(ctx, "no free record");
        if (stage_work(p, ST_RECEIVE, rec, ss->tmp) != 0) {
            settle(p, rec, ST_RECEIVE);
            break;
        }
        if (p->threads) {
            if (ring_put(p, &p->rings[ST_FILTER], rec, !p->push) != 0)
                settle(p, rec, ST_RECEIVE);
            continue;
        }
        /* Run to completion: every stage on this thread, each charged by its own clock reads. */
        int rc = 0, stage = ST_FILTER;
        for (; stage <= ST_TRANSMIT && rc == 0; stage++) {
            uint64_t s0 = bk_clock_ns(CLOCK_THREAD_CPUTIME_ID);
            rc = stage_work(p, stage, rec, ss->tmp);
            uint64_t d = bk_clock_ns(CLOCK_THREAD_CPUTIME_ID) - s0;
            atomic_fetch_add(&p->st[stage].cpu_ns, d);
            others += d;
        }
        settle(p, rec, rc == 0 ? -1 : stage - 1);
    }
    if (p->gate) /* this iteration's input is read: the feeder stops until the next one */
        atomic_store(p->gate, 0);
    /* Wait until every offered record is delivered or dropped (the sink wakes us); offered includes the
     * datagrams a udp source lost on the way. */
    uint64_t target = atomic_load(&p->emitted);
    pthread_mutex_lock(&p->done_m);
    while (atomic_load(&p->delivered) + atomic_load(&p->dropped) < target && !atomic_load(&p->failed)) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 50000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&p->done_c, &p->done_m, &ts);
    }
    pthread_mutex_unlock(&p->done_m);
    /* The source thread's CPU in this call, less the other stages it ran (rtc), is receive's. */
    uint64_t used = bk_clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
    atomic_fetch_add(&p->st[ST_RECEIVE].cpu_ns, used - others);
    ss->main_in_run += used;
    p->last_run_end_ns = bk_now_ns();
    p->run_ns += p->last_run_end_ns - t0;
    if (atomic_load(&p->failed))
        return bk_fail(ctx, "%s", p->err);
    return 0;
}

static void sp_corrupt(void *state)
{
    /* As if a stage had lost a record without counting it: the sink's sequence gap is then unexplained. */
    atomic_fetch_sub(&((sp_state *)state)->p->dropped, 1);
    ((sp_state *)state)->corrupted = true;
}

static int sp_verify(bk_ctx *ctx, void *state)
{
    sp_state *ss = state;
    pipeline *p = ss->p;
    /* Every record is settled; wait (bounded) for the threads to finish their bookkeeping of the last ones. */
    for (int spin = 0; spin < 20000; spin++) {
        bool idle = true;
        for (int i = 0; i < NSTAGES; i++)
            idle = idle && atomic_load(&p->busy[i]) == 0;
        if (idle)
            break;
        usleep(200);
    }
    /* The timing harness's own CPU on the calling thread between run() calls (and this wait) is no stage's:
     * it is reported, and left out of the comparison with rusage. */
    uint64_t harness = bk_clock_ns(CLOCK_THREAD_CPUTIME_ID) - ss->main0 - ss->main_in_run;
    uint64_t rusage_window = rusage_cpu_ns() - ss->rusage0;
    uint64_t cpu_window = rusage_window > harness ? rusage_window - harness : 0;
    uint64_t emitted = atomic_load(&p->emitted), delivered = atomic_load(&p->delivered);
    uint64_t dropped = atomic_load(&p->dropped), gaps = atomic_load(&p->gap_total);
    /* Records dropped after the last delivered one show no gap at the sink yet: they are the tail. */
    uint64_t tail = emitted - p->last_seq_plus1;
    uint64_t sum = 0, in_bytes = 0;
    char key[96];
    for (int i = 0; i < NSTAGES; i++) {
        stage_stats *st = &p->st[i];
        uint64_t cpu = stage_cpu(p, i) - ss->stage0[i];
        sum += cpu;
        snprintf(key, sizeof key, "stage.%s.cpu_ns", stage_names[i]);
        bk_info_num(ctx, key, (double)cpu);
        snprintf(key, sizeof key, "stage.%s.records_in", stage_names[i]);
        bk_info_num(ctx, key, (double)atomic_load(&st->in));
        snprintf(key, sizeof key, "stage.%s.records_out", stage_names[i]);
        bk_info_num(ctx, key, (double)atomic_load(&st->out));
        snprintf(key, sizeof key, "stage.%s.drops", stage_names[i]);
        bk_info_num(ctx, key, (double)atomic_load(&st->drops));
        snprintf(key, sizeof key, "stage.%s.bytes_in", stage_names[i]);
        bk_info_num(ctx, key, (double)atomic_load(&st->bytes_in));
        snprintf(key, sizeof key, "stage.%s.bytes_out", stage_names[i]);
        bk_info_num(ctx, key, (double)atomic_load(&st->bytes_out));
    }
    in_bytes = atomic_load(&p->st[ST_SINK].bytes_out); /* input bytes the delivered records carry */
    double secs = (double)p->run_ns * 1e-9;
    /* Bytes, stage by stage: the input bytes received equal those delivered plus those each stage dropped. */
    uint64_t drop_bytes = 0;
    for (int i = 0; i < NSTAGES; i++) {
        snprintf(key, sizeof key, "stage.%s.drop_bytes", stage_names[i]);
        bk_info_num(ctx, key, (double)atomic_load(&p->st[i].drop_bytes));
        drop_bytes += atomic_load(&p->st[i].drop_bytes);
    }
    uint64_t bytes_received = atomic_load(&p->st[ST_RECEIVE].bytes_in);
    bk_info_num(ctx, "bytes_received", (double)bytes_received);
    bk_info_num(ctx, "bytes_delivered", (double)in_bytes);
    bk_info_num(ctx, "bytes_dropped", (double)drop_bytes);
    bk_info_num(ctx, "records_lost_in_transit", (double)atomic_load(&p->lost_in_transit));
    bk_info_str(ctx, "source_kind", source_names[p->source]);
    bk_info_num(ctx, "records_offered", (double)emitted);
    bk_info_num(ctx, "records_delivered", (double)delivered);
    bk_info_num(ctx, "records_dropped", (double)dropped);
    bk_info_num(ctx, "sequence_gaps", (double)(gaps + tail));
    bk_info_num(ctx, "cpu_ns_stages_sum", (double)sum);
    bk_info_num(ctx, "cpu_ns_rusage", (double)rusage_window);
    bk_info_num(ctx, "cpu_ns_harness", (double)harness);
    bk_info_num(ctx, "cpu_ns_process_clock", (double)(bk_clock_ns(CLOCK_PROCESS_CPUTIME_ID) - ss->proc0));
    bk_info_num(ctx, "cpu_stages_over_rusage", cpu_window ? (double)sum / (double)cpu_window : 0);
    bk_info_num(ctx, "run_ns", (double)p->run_ns);
    bk_info_str(ctx, "schedule", p->threads ? "thread per stage" : "run to completion");
    bk_set_value(ctx, "goodput_bit_s", secs > 0 ? (double)in_bytes * 8 / secs : 0);
    bk_set_value(ctx, "goodput_b_s", secs > 0 ? (double)in_bytes / secs : 0);
    if (p->link_bit_s > 0) {
        bk_set_value(ctx, "link_efficiency_percent",
                     secs > 0 ? 100.0 * (double)in_bytes * 8 / secs / p->link_bit_s : 0);
        bk_info_num(ctx, "link_bit_s", p->link_bit_s);
    }
    bk_set_value(ctx, "drop_percent", emitted ? 100.0 * (double)dropped / (double)emitted : 0);
    uint64_t cin = atomic_load(&p->st[ST_COMPRESS].bytes_in), cout = atomic_load(&p->st[ST_COMPRESS].bytes_out);
    bk_set_value(ctx, "compression_ratio", cout ? (double)cin / (double)cout : 1);
    bk_set_value(ctx, "cpu_ns_per_byte", in_bytes ? (double)sum / (double)in_bytes : 0);
    bk_set_checksum(ctx, delivered ^ (dropped << 32));
    /* Conservation, stage by stage: every record a stage took in went out or was counted as dropped. */
    for (int i = 0; i < ST_SINK; i++) {
        uint64_t in = atomic_load(&p->st[i].in), out = atomic_load(&p->st[i].out), dr = atomic_load(&p->st[i].drops);
        uint64_t next_in = i + 1 < ST_SINK ? atomic_load(&p->st[i + 1].in) : delivered;
        if (in != out + (i == ST_TRANSMIT ? dr : 0) && i == ST_TRANSMIT)
            return bk_fail(ctx, "stage %s took %llu records, passed %llu and dropped %llu", stage_names[i],
                           (unsigned long long)in, (unsigned long long)out, (unsigned long long)dr);
        if (out != next_in + (i < ST_TRANSMIT ? dr : 0) && i < ST_TRANSMIT)
            return bk_fail(ctx, "stage %s passed %llu records but the next took %llu with %llu dropped between",
                           stage_names[i], (unsigned long long)out, (unsigned long long)next_in,
                           (unsigned long long)dr);
    }
    if (bytes_received != in_bytes + drop_bytes)
        return bk_fail(ctx, "byte conservation: %llu bytes received, %llu delivered, %llu counted as dropped",
                       (unsigned long long)bytes_received, (unsigned long long)in_bytes,
                       (unsigned long long)drop_bytes);
    if (atomic_load(&p->bad_order))
        return bk_fail(ctx, "%llu records reached the sink out of order",
                       (unsigned long long)atomic_load(&p->bad_order));
    if (atomic_load(&p->bad_tag))
        return bk_fail(ctx, "%llu records failed their AEAD tag at the sink",
                       (unsigned long long)atomic_load(&p->bad_tag));
    if (delivered + dropped != emitted || gaps + tail != dropped)
        return bk_fail(ctx,
                       "sequence check: %llu offered, %llu delivered, %llu counted as dropped, but the sink saw "
                       "%llu missing sequence numbers",
                       (unsigned long long)emitted, (unsigned long long)delivered, (unsigned long long)dropped,
                       (unsigned long long)(gaps + tail));
    return 0;
}

static void sp_fini(void *state)
{
    sp_state *ss = state;
    pipeline *p = ss->p;
    atomic_store(&p->stop, true);
    wake_all(p);
    for (int i = ST_FILTER; i <= ST_TRANSMIT; i++)
        if (p->w[i].started)
            pthread_join(p->w[i].tid, NULL);
    if (p->sock[0] >= 0)
        shutdown(p->sock[0], SHUT_RDWR);
    if (p->w[ST_SINK].started)
        pthread_join(p->w[ST_SINK].tid, NULL);
    for (int i = 0; i < 2; i++)
        if (p->sock[i] >= 0)
            close(p->sock[i]);
    if (p->feeder > 0) {
        kill(p->feeder, SIGKILL);
        waitpid(p->feeder, NULL, 0);
    }
    if (p->in_fd >= 0)
        close(p->in_fd);
    if (p->gate)
        munmap((void *)p->gate, sizeof *p->gate);
    for (int i = 0; i < p->nrecords && p->records; i++)
        free(p->records[i].data);
    free(p->records);
    for (int i = 0; i < NSTAGES; i++)
        free(p->rings[i].slot);
    free(p->pool.slot);
#if BK_HAVE_ZSTD
    ZSTD_freeCCtx(p->zc);
#endif
#if BK_HAVE_CRYPTO
    EVP_CIPHER_CTX_free(p->enc);
    EVP_CIPHER_CTX_free(p->dec);
#endif
    bk_afalg_aead_close(p->kenc);
    free(p->corpus);
    free(p->sink_buf);
    free(p->sink_plain);
    free(p);
    free(ss->tmp);
    free(ss);
}

const bk_kernel bk_stream_pipeline = {
    .name = "stream.pipeline",
    .family = "stream",
    .summary =
        "receive -> filter -> compress -> encrypt -> transmit over the sensor corpus: goodput, drops, CPU per stage",
    .supported = sp_supported,
    .params = sp_params,
    .metrics = sp_metrics,
    .init = sp_init,
    .run = sp_run,
    .corrupt = sp_corrupt,
    .verify = sp_verify,
    .fini = sp_fini,
    .calibrate_on_wall = true,
};
