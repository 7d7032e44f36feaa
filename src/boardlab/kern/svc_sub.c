/* svc.sub: the VICTORY-like subscriber (and, with publish_dot=1, the DirectionOfTravel service built on it).
 * Joins the group, parses each message with expat or libxml2 (or reads the raw datagram), and measures
 * one-way latency, loss, duplication and reordering per message kind. */
#include "svc.h"

#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#if BK_HAVE_EXPAT
#include <expat.h>
#endif
#if BK_HAVE_LIBXML2
#include <libxml/parser.h>
#endif

/* Sequence numbers are tracked in a fixed window (a ring of SEQ_WINDOW bits per kind, 128 KiB): a seq
 * within SEQ_WINDOW of the highest seen is checked for loss, duplication and reordering; one farther off (a
 * sender that restarted, a corrupt or hostile datagram) is a jump, counted and otherwise ignored, unless the
 * next message continues from it (within SEQ_RESYNC): tracking then restarts there, and the gap is counted as
 * a resync, not as lost messages. Memory and work per message stay bounded whatever seq a sender puts in. */
#define SEQ_WINDOW (1u << 20)
#define SEQ_RESYNC 64

typedef struct {
    uint64_t first, max, unique; /* of the current segment (since the start or the last resync) */
    uint64_t lost_before; /* lost in earlier segments */
    uint64_t jumps, resyncs; /* datagrams beyond the window; jumps the next message confirmed */
    uint64_t candidate; /* seq of the last jump, a resync if the next message follows it */
    int any, have_candidate;
    uint8_t *seen; /* SEQ_WINDOW bits, bit seq % SEQ_WINDOW */
} seq_track;

typedef struct {
    char group[64], iface[64], out_group[64];
    int port, out_port, parser, publish_dot, rcvbuf;
    int64_t stall_ms, expect;
    double duration_s;
    int fd, out_fd;
    seq_track trk[SVC_KINDS];
    uint64_t received, bad, duplicates, reordered, dot_sent;
    uint32_t ovfl_drops;
    svc_samples latency_ns, parse_ns;
    int rcvbuf_actual;
    uint64_t t0, t_end, checksum;
    /* parse state */
    int kind, seq_ok; /* seq_ok: this message carried a valid seq */
    uint64_t seq, sent_ns;
    char field[32];
    char text[64];
    size_t text_n;
    svc_fix fix;
    int have_pos, have_ori, have_prev;
    svc_fix prev;
    uint64_t prev_ns;
    void *xml_ctx; /* the expat parser or libxml2 context, to stop at a DOCTYPE */
} sub_state;

static const bk_param sub_params[] = {
    {"group", BK_STR, 0, 0, "239.255.0.5", NULL, NULL, "multicast group to join (IGMP)"},
    {"port", BK_INT, 1, 65535, "15000", NULL, NULL, "UDP port of the group"},
    {"iface_addr", BK_STR, 0, 0, "127.0.0.1", NULL, NULL, "address of the interface to join on"},
    {"duration_s", BK_FLOAT, 0.05, 604800, "10", NULL, "s", "how long to listen"},
    {"parser", BK_ENUM, 0, 0, "expat", "expat,raw,libxml2", NULL,
     "expat or libxml2 (SAX2): parse the XML message; raw: the 64 B datagram"},
    {"rcvbuf_bytes", BK_INT, 0, 64 * 1048576.0, "0", NULL, "bytes", "SO_RCVBUF (0: the system default)"},
    {"stall_ms", BK_INT, 0, 600000, "0", NULL, "ms", "sleep this long after joining before reading (forces drops)"},
    {"expect", BK_INT, 0, 1e12, "0", NULL, NULL, "stop after this many messages (0: run for duration_s)"},
    {"publish_dot", BK_INT, 0, 1, "0", NULL, NULL,
     "1: the DirectionOfTravel service: from Position + Orientation publish DirectionOfTravel"},
    {"out_group", BK_STR, 0, 0, "239.255.0.6", NULL, NULL, "group the DirectionOfTravel messages go to"},
    {"out_port", BK_INT, 1, 65535, "15001", NULL, NULL, "port the DirectionOfTravel messages go to"},
    {0},
};

static const bk_metric sub_metrics[] = {
    {"latency_p50_ns", "ns", false, BK_VALUE, -1, 1, "median one-way latency (send stamp to receive)"},
    {"latency_p99_ns", "ns", false, BK_VALUE, -1, 1, "99th percentile one-way latency"},
    {"received_per_s", "1/s", true, BK_VALUE, -1, 1, "messages received per second"},
    {"lost", "messages", false, BK_VALUE, -1, 1, "sequence numbers never received"},
    {0},
};

static int seq_bit(const seq_track *t, uint64_t seq) { return t->seen[seq % SEQ_WINDOW / 8] >> (seq % 8) & 1; }

static void seq_clear(seq_track *t, uint64_t from, uint64_t to) /* bits of seqs from..to inclusive */
{
    for (uint64_t q = from; q <= to && q % 8; q++)
        t->seen[q % SEQ_WINDOW / 8] &= (uint8_t)~(1u << (q % 8));
    uint64_t q = (from + 7) / 8 * 8;
    for (; q + 8 <= to + 1 && q % SEQ_WINDOW; q += 8) /* whole bytes up to the ring's end */
        t->seen[q % SEQ_WINDOW / 8] = 0;
    if (q + 8 <= to + 1) { /* the rest of the whole bytes, from the ring's start */
        size_t bytes = (size_t)((to + 1 - q) / 8);
        memset(t->seen, 0, bytes);
        q += bytes * 8;
    }
    for (; q <= to; q++)
        t->seen[q % SEQ_WINDOW / 8] &= (uint8_t)~(1u << (q % 8));
}

static void seq_restart(seq_track *t, uint64_t seq)
{
    if (t->any)
        t->lost_before += t->max - t->first + 1 - t->unique;
    memset(t->seen, 0, SEQ_WINDOW / 8);
    t->any = 1;
    t->first = t->max = seq;
    t->unique = 0;
}

static uint64_t seq_lost(const seq_track *t)
{
    return t->lost_before + (t->any ? t->max - t->first + 1 - t->unique : 0);
}

static int track(seq_track *t, uint64_t seq, uint64_t *dup, uint64_t *reord)
{
    if (!t->seen && !(t->seen = calloc(SEQ_WINDOW / 8, 1)))
        return -1;
    if (!t->any)
        seq_restart(t, seq);
    int ahead = seq > t->max && seq - t->max < SEQ_WINDOW;
    int behind = seq <= t->max && t->max - seq < SEQ_WINDOW;
    if (!ahead && !behind) {
        if (t->have_candidate && seq > t->candidate && seq - t->candidate <= SEQ_RESYNC) {
            uint64_t c = t->candidate;
            t->resyncs++;
            t->have_candidate = 0;
            seq_restart(t, c);
            t->seen[c % SEQ_WINDOW / 8] |= (uint8_t)(1u << (c % 8));
            t->unique = 1;
            return track(t, seq, dup, reord);
        }
        t->jumps++;
        t->candidate = seq;
        t->have_candidate = 1;
        return 0;
    }
    t->have_candidate = 0;
    if (seq < t->first) { /* sent before the first one received, arrived after it */
        (*reord)++;
        return 0;
    }
    if (ahead) {
        seq_clear(t, t->max + 1, seq);
        t->max = seq;
    } else if (seq_bit(t, seq)) {
        (*dup)++;
        return 0;
    } else if (seq < t->max)
        (*reord)++;
    t->seen[seq % SEQ_WINDOW / 8] |= (uint8_t)(1u << (seq % 8));
    t->unique++;
    return 0;
}

/* A number as the publisher writes it (seq, sentNs): n > 0 ASCII digits, within 64 bits. strtoull alone
 * skips spaces, takes a sign ("-1" is 2^64-1), stops at the first non-digit ("abc" is 0) and saturates on
 * overflow: a message with any of those would count as valid. Returns 0 when p[0, n) is not such a number. */
static int parse_u64(const char *p, size_t n, uint64_t *out)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return 0;
        uint64_t d = (uint64_t)(p[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return 0;
        v = v * 10 + d;
    }
    if (!n)
        return 0;
    *out = v;
    return 1;
}

/* The raw 64-byte datagram: "R SEQ STAMP" padded with spaces, both numbers as parse_u64 reads them. */
static int parse_raw(sub_state *s, const char *buf, size_t n)
{
    const char *end = buf + n, *seq = buf + 2;
    if (n != 64 || buf[0] != 'R' || buf[1] != ' ')
        return 0;
    const char *sp = memchr(seq, ' ', (size_t)(end - seq));
    if (!sp || !parse_u64(seq, (size_t)(sp - seq), &s->seq))
        return 0;
    const char *stamp = sp + 1, *pad = memchr(stamp, ' ', (size_t)(end - stamp));
    if (!pad)
        pad = end;
    for (const char *q = pad; q < end; q++)
        if (*q != ' ')
            return 0;
    if (!parse_u64(stamp, (size_t)(pad - stamp), &s->sent_ns))
        return 0;
    s->seq_ok = 1;
    return 1;
}

#if BK_HAVE_EXPAT || BK_HAVE_LIBXML2 /* what the parsers call: unused by a build with neither */
/* What both parsers (expat, libxml2) report, in our namespace: an attribute of DataMessage, an element's
 * start and end with its text. A seq or sentNs that is not a number leaves the message invalid (bad). */
static void on_data_attr(sub_state *s, const char *name, const char *value)
{
    if (strcmp(name, "kind") == 0)
        for (int k = 0; k < SVC_RAW; k++)
            if (strcmp(value, svc_kind_names[k]) == 0)
                s->kind = k;
    if (strcmp(name, "seq") == 0)
        s->seq_ok = parse_u64(value, strlen(value), &s->seq);
    if (strcmp(name, "sentNs") == 0 && !parse_u64(value, strlen(value), &s->sent_ns))
        s->sent_ns = 0;
}

static void on_text(sub_state *s, const char *t, int len)
{
    for (int i = 0; i < len && s->text_n < sizeof s->text - 1; i++)
        s->text[s->text_n++] = t[i];
}

/* The elements that carry one of the fix's numbers, and which. */
static const struct {
    const char *element;
    size_t offset;
} fix_fields[] = {
    {"LatitudeDeg", offsetof(svc_fix, lat_deg)},  {"LongitudeDeg", offsetof(svc_fix, lon_deg)},
    {"AltitudeM", offsetof(svc_fix, alt_m)},      {"HeadingDeg", offsetof(svc_fix, heading_deg)},
    {"PitchDeg", offsetof(svc_fix, pitch_deg)},   {"RollDeg", offsetof(svc_fix, roll_deg)},
    {"CourseDeg", offsetof(svc_fix, course_deg)}, {"SpeedMps", offsetof(svc_fix, speed_mps)},
};

static void on_end(sub_state *s, const char *l)
{
    if (!s->text_n)
        return;
    s->text[s->text_n] = 0;
    for (size_t i = 0; i < sizeof fix_fields / sizeof fix_fields[0]; i++)
        if (!strcmp(l, fix_fields[i].element)) {
            *(double *)((char *)&s->fix + fix_fields[i].offset) = atof(s->text);
            break;
        }
    s->text_n = 0;
}
#endif

#if BK_HAVE_EXPAT
static const char *local_name(const char *name)
{
    /* names arrive as "namespace|local"; anything outside our namespace is foreign */
    size_t n = strlen(SVC_NS);
    if (strncmp(name, SVC_NS, n) != 0 || name[n] != '|')
        return NULL;
    return name + n + 1;
}

static void XMLCALL x_start(void *ud, const XML_Char *name, const XML_Char **atts)
{
    sub_state *s = ud;
    const char *l = local_name(name);
    s->text_n = 0;
    if (!l)
        return;
    if (strcmp(l, "DataMessage") == 0)
        for (int i = 0; atts[i]; i += 2)
            on_data_attr(s, atts[i], atts[i + 1]);
}

static void XMLCALL x_text(void *ud, const XML_Char *t, int len) { on_text(ud, t, len); }

/* A data message has no DOCTYPE: one is refused before its entities are read (an expansion bomb of 725
 * bytes costs expat half a second before its amplification limit stops it). */
static void XMLCALL x_doctype(void *ud, const XML_Char *n, const XML_Char *sys, const XML_Char *pub, int internal)
{
    (void)n, (void)sys, (void)pub, (void)internal;
    sub_state *s = ud;
    s->kind = -1;
    XML_StopParser((XML_Parser)s->xml_ctx, XML_FALSE);
}

static void XMLCALL x_end(void *ud, const XML_Char *name)
{
    const char *l = local_name(name);
    if (l)
        on_end(ud, l);
}
#endif

#if BK_HAVE_LIBXML2
/* libxml2's SAX2 interface: the same events as expat's, with the namespace URI apart */
static void lx_start(void *ud, const xmlChar *local, const xmlChar *prefix, const xmlChar *uri, int nns,
                     const xmlChar **nss, int nattr, int ndef, const xmlChar **attrs)
{
    (void)prefix, (void)nns, (void)nss, (void)ndef;
    sub_state *s = ud;
    s->text_n = 0;
    if (!uri || strcmp((const char *)uri, SVC_NS) != 0 || strcmp((const char *)local, "DataMessage") != 0)
        return;
    for (int i = 0; i < nattr; i++) { /* localname, prefix, URI, value, end: the value is not terminated */
        const xmlChar **a = attrs + 5 * i;
        char v[32];
        size_t n = (size_t)(a[4] - a[3]);
        if (n >= sizeof v) /* longer than any valid value: cut, it could read as another one ("0000...5") */
            n = 0;
        memcpy(v, a[3], n);
        v[n] = 0;
        on_data_attr(s, (const char *)a[0], v);
    }
}

static void lx_end(void *ud, const xmlChar *local, const xmlChar *prefix, const xmlChar *uri)
{
    (void)prefix;
    if (uri && strcmp((const char *)uri, SVC_NS) == 0)
        on_end(ud, (const char *)local);
}

static void lx_text(void *ud, const xmlChar *t, int len) { on_text(ud, (const char *)t, len); }

static void lx_doctype(void *ud, const xmlChar *name, const xmlChar *ext, const xmlChar *sys) /* as x_doctype */
{
    (void)name, (void)ext, (void)sys;
    sub_state *s = ud;
    s->kind = -1;
    xmlStopParser((xmlParserCtxtPtr)s->xml_ctx);
}
#endif

static int sub_init(bk_ctx *ctx, void **state)
{
    sub_state *s = bk_run_state(ctx, state, sizeof *s);
    if (!s)
        return -1;
    s->fd = s->out_fd = -1;
    snprintf(s->group, sizeof s->group, "%s", bk_arg_str(ctx, "group"));
    snprintf(s->iface, sizeof s->iface, "%s", bk_arg_str(ctx, "iface_addr"));
    snprintf(s->out_group, sizeof s->out_group, "%s", bk_arg_str(ctx, "out_group"));
    s->port = (int)bk_arg_int(ctx, "port");
    s->out_port = (int)bk_arg_int(ctx, "out_port");
    s->duration_s = bk_arg_float(ctx, "duration_s");
    svc_enum_choice("expat,raw,libxml2", bk_arg_str(ctx, "parser"), &s->parser);
#if !BK_HAVE_LIBXML2
    if (s->parser == 2)
        return bk_unsupported(ctx, "parser=libxml2: built without libxml2 (install libxml2-dev and rebuild)");
#endif
    s->rcvbuf = (int)bk_arg_int(ctx, "rcvbuf_bytes");
    s->stall_ms = bk_arg_int(ctx, "stall_ms");
    s->expect = bk_arg_int(ctx, "expect");
    s->publish_dot = (int)bk_arg_int(ctx, "publish_dot");
    s->fd = svc_mcast_receiver(s->group, s->port, s->iface, s->rcvbuf);
    if (s->fd < 0)
        return bk_fail(ctx, "cannot join %s:%d on %s: %s", s->group, s->port, s->iface, strerror(errno));
    socklen_t sl = sizeof s->rcvbuf_actual;
    getsockopt(s->fd, SOL_SOCKET, SO_RCVBUF, &s->rcvbuf_actual, &sl);
    if (s->publish_dot && (s->out_fd = svc_mcast_sender(s->iface, 1)) < 0)
        return bk_fail(ctx, "cannot set up multicast sending on %s: %s", s->iface, strerror(errno));
    return 0;
}

static void sub_fini(void *state)
{
    sub_state *s = state;
    if (!s)
        return;
    if (s->fd >= 0)
        close(s->fd);
    if (s->out_fd >= 0)
        close(s->out_fd);
    for (int k = 0; k < SVC_KINDS; k++)
        free(s->trk[k].seen);
    svc_samples_free(&s->latency_ns);
    svc_samples_free(&s->parse_ns);
}

/* The DirectionOfTravel service: course over ground from consecutive positions when the vehicle moves,
 * the INS heading otherwise; speed from distance over time. */
static void publish_dot(sub_state *s, const struct sockaddr_in *to, uint64_t now)
{
    svc_fix d = s->fix;
    if (s->have_prev && now > s->prev_ns) {
        double lat1 = s->prev.lat_deg * M_PI / 180, lat2 = d.lat_deg * M_PI / 180;
        double dlon = (d.lon_deg - s->prev.lon_deg) * M_PI / 180;
        double y = sin(dlon) * cos(lat2), x = cos(lat1) * sin(lat2) - sin(lat1) * cos(lat2) * cos(dlon);
        double dist = 6371000.0 * acos(fmin(1.0, sin(lat1) * sin(lat2) + cos(lat1) * cos(lat2) * cos(dlon)));
        d.speed_mps = dist / ((double)(now - s->prev_ns) / 1e9);
        d.course_deg = dist > 0.01 ? fmod(atan2(y, x) * 180 / M_PI + 360, 360) : d.heading_deg;
    } else
        d.course_deg = d.heading_deg;
    s->prev = s->fix;
    s->prev_ns = now;
    s->have_prev = 1;
    char buf[1024];
    size_t at;
    int len = svc_build_message(buf, sizeof buf, SVC_DOT, s->dot_sent, &d, &at);
    if (len > 0) {
        svc_patch_stamp(buf, at, svc_now());
        if (sendto(s->out_fd, buf, (size_t)len, 0, (const struct sockaddr *)to, sizeof *to) == len)
            s->dot_sent++;
    }
}

static int sub_serve(bk_ctx *ctx, void *state)
{
    sub_state *s = state;
    svc_install_stop();
#if BK_HAVE_EXPAT
    XML_Parser xp = s->parser == 0 ? XML_ParserCreateNS(NULL, '|') : NULL;
#endif
#if BK_HAVE_LIBXML2
    xmlParserCtxtPtr lx = NULL;
    if (s->parser == 2) {
        static xmlSAXHandler sax;
        memset(&sax, 0, sizeof sax);
        sax.initialized = XML_SAX2_MAGIC;
        sax.startElementNs = lx_start;
        sax.endElementNs = lx_end;
        sax.characters = lx_text;
        sax.internalSubset = lx_doctype;
        lx = xmlCreatePushParserCtxt(&sax, s, NULL, 0, NULL);
        if (!lx)
            return bk_fail(ctx, "cannot create a libxml2 parser");
        xmlCtxtUseOptions(lx, XML_PARSE_NONET | XML_PARSE_NOBLANKS);
        s->xml_ctx = lx;
    }
#endif
    struct sockaddr_in to;
    svc_dest_addr(s->out_group, s->out_port, &to);
    fprintf(stderr, "svc.sub: ready, joined %s:%d\n", s->group, s->port);
    fflush(stderr);
    s->t0 = svc_now();
    uint64_t deadline = s->t0 + (uint64_t)(s->duration_s * 1e9);
    struct timeval rto = {.tv_sec = 0, .tv_usec = 50000};
    setsockopt(s->fd, SOL_SOCKET, SO_RCVTIMEO, &rto, sizeof rto);
    if (s->stall_ms)
        svc_sleep_until(s->t0 + (uint64_t)s->stall_ms * 1000000ULL);
    char buf[4096], cbuf[256];
    while (!svc_stop && svc_now() < deadline && !(s->expect && s->received >= (uint64_t)s->expect)) {
        /* one blocking recvmsg per message (no poll first: one syscall less on the latency path); the
         * receive timeout (below) brings the loop back to check the deadline and the stop flag */
        struct iovec iov = {.iov_base = buf, .iov_len = sizeof buf - 1};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
        ssize_t r = recvmsg(s->fd, &mh, 0);
        uint64_t now = svc_now();
        if (r <= 0)
            continue;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL)
                memcpy(&s->ovfl_drops, CMSG_DATA(c), sizeof s->ovfl_drops);
        s->received++;
        buf[r] = 0;
        s->kind = -1;
        s->seq_ok = 0;
        s->sent_ns = 0;
        if (s->parser == 1) {
            if (parse_raw(s, buf, (size_t)r))
                s->kind = SVC_RAW;
        }
#if BK_HAVE_LIBXML2
        else if (s->parser == 2) {
            /* one context for the run, reset per message (as the expat parser is) */
            xmlCtxtResetPush(lx, NULL, 0, NULL, NULL);
            if (xmlParseChunk(lx, buf, (int)r, 1) != 0 || !lx->wellFormed)
                s->kind = -1;
        }
#endif
#if BK_HAVE_EXPAT
        else {
            XML_ParserReset(xp, NULL);
            XML_SetUserData(xp, s);
            XML_SetElementHandler(xp, x_start, x_end);
            XML_SetCharacterDataHandler(xp, x_text);
            XML_SetStartDoctypeDeclHandler(xp, x_doctype);
            s->xml_ctx = xp;
            if (XML_Parse(xp, buf, (int)r, 1) != XML_STATUS_OK)
                s->kind = -1;
        }
#endif
        uint64_t parsed = svc_now();
        if (s->kind < 0 || !s->seq_ok || !s->sent_ns) {
            s->bad++;
            continue;
        }
        svc_push(&s->parse_ns, parsed - now);
        svc_push(&s->latency_ns, now > s->sent_ns ? now - s->sent_ns : 0);
        track(&s->trk[s->kind], s->seq, &s->duplicates, &s->reordered);
        s->checksum = bk_fnv1a(s->checksum ? s->checksum : BK_FNV_OFFSET, &s->seq, sizeof s->seq);
        if (s->kind == SVC_POSITION)
            s->have_pos = 1;
        if (s->kind == SVC_ORIENTATION)
            s->have_ori = 1;
        if (s->publish_dot && s->kind == SVC_POSITION && s->have_ori)
            publish_dot(s, &to, now);
    }
    s->t_end = svc_now();
#if BK_HAVE_EXPAT
    if (xp)
        XML_ParserFree(xp);
#endif
#if BK_HAVE_LIBXML2
    if (lx)
        xmlFreeParserCtxt(lx);
#endif
    (void)ctx;
    return 0;
}

static uint64_t sub_lost(const sub_state *s)
{
    uint64_t lost = 0;
    for (int k = 0; k < SVC_KINDS; k++)
        lost += seq_lost(&s->trk[k]);
    return lost;
}

static int sub_verify(bk_ctx *ctx, void *state)
{
    sub_state *s = state;
    double secs = (double)(s->t_end - s->t0) / 1e9;
    bk_set_value(ctx, "latency_p50_ns", svc_percentile(&s->latency_ns, 50));
    bk_set_value(ctx, "latency_p99_ns", svc_percentile(&s->latency_ns, 99));
    bk_set_value(ctx, "received_per_s", secs > 0 ? (double)s->received / secs : 0);
    bk_set_value(ctx, "lost", (double)sub_lost(s));
    bk_set_checksum(ctx, s->checksum);
    if (!s->latency_ns.n)
        bk_skip_metric(ctx, "latency_p50_ns", "no message received"),
            bk_skip_metric(ctx, "latency_p99_ns", "no message received");
    return 0;
}

static void sub_json(void *state, bk_json *j)
{
    sub_state *s = state;
    svc_json_begin(j, s->publish_dot ? "dot" : "sub");
    bk_json_kv_uint(j, "duration_ns", s->t_end - s->t0);
    bk_json_kv_uint(j, "received", s->received);
    bk_json_kv_uint(j, "bad", s->bad);
    bk_json_kv_uint(j, "lost", sub_lost(s));
    bk_json_kv_uint(j, "duplicates", s->duplicates);
    bk_json_kv_uint(j, "reordered", s->reordered);
    uint64_t jumps = 0, resyncs = 0;
    for (int k = 0; k < SVC_KINDS; k++)
        jumps += s->trk[k].jumps, resyncs += s->trk[k].resyncs;
    /* datagrams whose seq lay beyond the tracking window: anomalies */
    bk_json_kv_uint(j, "seq_jumps", jumps);
    bk_json_kv_uint(j, "seq_resyncs", resyncs);
    bk_json_kv_uint(j, "seq_window", SEQ_WINDOW);
    bk_json_kv_uint(j, "socket_overflow_drops", s->ovfl_drops);
    bk_json_kv_str(j, "parser", s->parser == 0 ? "expat" : s->parser == 1 ? "raw" : "libxml2");
    /* what the parser read last: its values, not only its stamps */
    bk_json_key_object(j, "last_fix");
    bk_json_kv_num(j, "latitude_deg", s->fix.lat_deg);
    bk_json_kv_num(j, "longitude_deg", s->fix.lon_deg);
    bk_json_kv_num(j, "altitude_m", s->fix.alt_m);
    bk_json_end_object(j);
    bk_json_kv_int(j, "rcvbuf_bytes", s->rcvbuf_actual);
    bk_json_key_object(j, "by_kind");
    for (int k = 0; k < SVC_KINDS; k++)
        if (s->trk[k].any) {
            bk_json_key_object(j, svc_kind_names[k]);
            bk_json_kv_uint(j, "unique", s->trk[k].unique);
            bk_json_kv_uint(j, "first_seq", s->trk[k].first);
            bk_json_kv_uint(j, "max_seq", s->trk[k].max);
            bk_json_kv_uint(j, "seq_jumps", s->trk[k].jumps);
            bk_json_kv_uint(j, "seq_resyncs", s->trk[k].resyncs);
            bk_json_end_object(j);
        }
    bk_json_end_object(j);
    bk_json_kv_uint(j, "dot_sent", s->dot_sent);
    svc_json_summary(j, "oneway_latency_ns", &s->latency_ns);
    svc_json_summary(j, "parse_ns", &s->parse_ns);
    bk_json_end_object(j);
}

const bk_kernel bk_svc_sub = {
    .name = "svc.sub",
    .family = "svc",
    .summary = "VICTORY-like subscriber: joins the group, parses with expat; one-way latency, loss, drops",
    .params = sub_params,
    .metrics = sub_metrics,
    .supported = svc_expat_reason,
    .init = sub_init,
    .verify = sub_verify,
    .fini = sub_fini,
    .serve = sub_serve,
    .serve_json = sub_json,
};
