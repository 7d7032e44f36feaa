/* svc.load: the load generator that measures the management interface: open loop timed from intended
 * starts (coordinated-omission-correct, constant or Poisson arrivals) or closed loop as in the study. */
#include "svc_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

enum { C_CLOSED, C_IDLE, C_BUSY };

typedef struct {
    int fd, state;
    uint32_t events; /* what epoll watches now: a MOD only when this changes */
    uint64_t intended, start, next_tick;
    char in[4096];
    size_t in_n, out_off;
} lconn;

/* One request's outcome for the per-request file: status is the HTTP status, or a negative LREQ_*. */
enum { LREQ_ERROR = -1, LREQ_TIMEOUT = -2, LREQ_NOT_STARTED = -3 };
typedef struct {
    uint64_t intended, start, end;
    int status;
} lreq;

typedef struct {
    char host[64], path[128];
    int port, conns, open_loop, poisson, keepalive, op;
    double rate_hz, duration_s;
    int64_t timeout_ms, late_us;
    uint64_t seed;
    int rt_priority, rt_errno;
    char req[1024];
    size_t req_n;
    lconn *c;
    int ep, tfd;
    /* results */
    uint64_t sent, ok, errors, timeouts, late, connects, scheduled;
    svc_samples corrected_ns, service_ns, start_lag_ns;
    uint64_t t0, t_sched_end, t_last, t_end;
    uint64_t first_start, last_start; /* actual sends: their spacing is the generator's own rate */
    char first_error[160];
    /* per-request records, kept only when samples_path is given */
    char samples_path[512];
    lreq *reqs;
    size_t nreq, capreq;
    char samples_error[700];
} load_state;

static const bk_param load_params[] = {
    {"host", BK_STR, 0, 0, "127.0.0.1", NULL, NULL, "address of the SOAP endpoint"},
    {"port", BK_INT, 1, 65535, "18080", NULL, NULL, "its TCP port"},
    {"path", BK_STR, 0, 0, "/vdm", NULL, NULL, "HTTP path"},
    {"op", BK_ENUM, 0, 0, "getStatus", "getPosition,getStatus", NULL, "operation each request calls"},
    {"mode", BK_ENUM, 0, 0, "open", "open,closed", NULL,
     "open: requests start on a schedule whatever the responses do; closed: each connection waits for its "
     "response (the study's client)"},
    {"arrival", BK_ENUM, 0, 0, "constant", "constant,poisson", NULL, "open loop: evenly spaced or Poisson starts"},
    {"rate_hz", BK_FLOAT, 0, 1e6, "100", NULL, "Hz",
     "target request rate over all connections (closed loop: 0 = as fast as responses come)"},
    {"duration_s", BK_FLOAT, 0.05, 604800, "10", NULL, "s", "how long to issue requests"},
    {"connections", BK_INT, 1, 4096, "1", NULL, NULL, "TCP connections (one request outstanding on each)"},
    {"keepalive", BK_INT, 0, 1, "1", NULL, NULL, "1: reuse connections; 0: a new connection per request"},
    {"timeout_ms", BK_INT, 1, 600000, "2000", NULL, "ms", "a request without its response after this is a timeout"},
    {"late_us", BK_INT, 0, 1e9, "1000", NULL, "us", "a start later than this behind its intended time counts as late"},
    {"seed", BK_INT, 0, 4294967295.0, "1", NULL, NULL, "seed of the Poisson arrivals"},
    SVC_RT_PRIORITY_PARAM,
    {"samples_path", BK_STR, 0, 0, "", NULL, NULL,
     "write every request (intended start, actual start, end, status) to this CSV file (docs/services.md)"},
    {0},
};

static const bk_metric load_metrics[] = {
    {"achieved_rate_hz", "Hz", true, BK_VALUE, -1, 1, "successful responses per second"},
    {"corrected_p99_ns", "ns", false, BK_VALUE, -1, 1, "99th percentile latency from the intended start"},
    {"service_p99_ns", "ns", false, BK_VALUE, -1, 1, "99th percentile latency from the actual send"},
    {"corrected_p50_ns", "ns", false, BK_VALUE, -1, 1, "median latency from the intended start"},
    {"service_p50_ns", "ns", false, BK_VALUE, -1, 1, "median latency from the actual send"},
    {0},
};

static int load_connect(load_state *s, lconn *c)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)s->port)};
    inet_pton(AF_INET, s->host, &sa.sin_addr);
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (c->fd < 0)
        return -1;
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    s->connects++;
    if (connect(c->fd, (struct sockaddr *)&sa, sizeof sa) != 0 && errno != EINPROGRESS) {
        close(c->fd);
        c->fd = -1;
        return -1;
    }
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
    epoll_ctl(s->ep, EPOLL_CTL_ADD, c->fd, &ev);
    c->events = ev.events;
    return 0;
}

static void watch(load_state *s, lconn *c, uint32_t events)
{
    if (c->events == events)
        return;
    struct epoll_event ev = {.events = events, .data.ptr = c};
    epoll_ctl(s->ep, EPOLL_CTL_MOD, c->fd, &ev);
    c->events = events;
}

static void load_drop(load_state *s, lconn *c)
{
    if (c->fd >= 0) {
        epoll_ctl(s->ep, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
    }
    c->fd = -1;
    c->in_n = 0;
}

static void load_err(load_state *s, const char *what)
{
    if (!s->first_error[0])
        snprintf(s->first_error, sizeof s->first_error, "%s", what);
}

static void rec(load_state *s, uint64_t intended, uint64_t start, uint64_t end, int status)
{
    if (!s->samples_path[0])
        return;
    if (s->nreq == s->capreq) {
        size_t cap = s->capreq ? s->capreq * 2 : 4096;
        lreq *p = realloc(s->reqs, cap * sizeof *p);
        if (!p) {
            snprintf(s->samples_error, sizeof s->samples_error, "out of memory after %zu requests", s->nreq);
            return;
        }
        s->reqs = p;
        s->capreq = cap;
    }
    s->reqs[s->nreq++] = (lreq){intended, start, end, status};
}

/* The per-request file: CSV, one line per request, times in ns from the run's t0 (the first intended
 * start), on CLOCK_MONOTONIC; written to a temporary name and renamed, so it is whole or absent. */
static void write_samples(load_state *s)
{
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.part", s->samples_path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        snprintf(s->samples_error, sizeof s->samples_error, "cannot write %s: %s", tmp, strerror(errno));
        return;
    }
    fprintf(f, "# boardlab svc.load requests, schema %d: times in ns from the first intended start (CLOCK_MONOTONIC)\n",
            SVC_SCHEMA);
    fputs("request,intended_start_ns,actual_start_ns,end_ns,corrected_latency_ns,service_time_ns,outcome,http_status\n",
          f);
    for (size_t i = 0; i < s->nreq; i++) {
        const lreq *q = &s->reqs[i];
        const char *outcome = q->status == 200            ? "ok"
                              : q->status > 0             ? "http_error"
                              : q->status == LREQ_ERROR   ? "error"
                              : q->status == LREQ_TIMEOUT ? "timeout"
                                                          : "not_started";
        fprintf(f, "%zu,%lld", i, (long long)(q->intended - s->t0));
        if (q->start)
            fprintf(f, ",%lld", (long long)(q->start - s->t0));
        else
            fputs(",", f);
        if (q->end)
            fprintf(f, ",%lld,%llu", (long long)(q->end - s->t0), (unsigned long long)(q->end - q->intended));
        else
            fputs(",,", f);
        if (q->end && q->start)
            fprintf(f, ",%llu", (unsigned long long)(q->end - q->start));
        else
            fputs(",", f);
        if (q->status > 0)
            fprintf(f, ",%s,%d\n", outcome, q->status);
        else
            fprintf(f, ",%s,\n", outcome);
    }
    if (fclose(f) != 0 || rename(tmp, s->samples_path) != 0) {
        snprintf(s->samples_error, sizeof s->samples_error, "cannot write %s: %s", s->samples_path, strerror(errno));
        unlink(tmp);
    }
}

/* Sends (or continues sending) the request of a busy connection. */
static void load_push(load_state *s, lconn *c)
{
    while (c->out_off < s->req_n) {
        ssize_t w = send(c->fd, s->req + c->out_off, s->req_n - c->out_off, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EAGAIN || errno == EINPROGRESS || errno == ENOTCONN) {
                watch(s, c, EPOLLIN | EPOLLOUT);
                return;
            }
            s->errors++;
            load_err(s, strerror(errno));
            rec(s, c->intended, c->start, svc_now(), LREQ_ERROR);
            load_drop(s, c);
            c->state = C_IDLE;
            return;
        }
        c->out_off += (size_t)w;
    }
    watch(s, c, EPOLLIN);
}

static void load_start(load_state *s, lconn *c, uint64_t intended, uint64_t now)
{
    if (c->fd < 0 && load_connect(s, c) != 0) {
        s->errors++;
        load_err(s, strerror(errno));
        rec(s, intended, now, svc_now(), LREQ_ERROR);
        s->sent++;
        return;
    }
    c->state = C_BUSY;
    c->intended = intended;
    c->start = now;
    if (!s->first_start)
        s->first_start = now;
    s->last_start = now;
    c->in_n = c->out_off = 0;
    s->sent++;
    uint64_t lag = now > intended ? now - intended : 0;
    svc_push(&s->start_lag_ns, lag);
    if (lag > (uint64_t)s->late_us * 1000ULL)
        s->late++;
    load_push(s, c);
}

/* Reads a response; 1 when one is complete, 0 when more is needed, -1 on a broken connection. */
static int load_read(load_state *s, lconn *c, int *status)
{
    /* One recv per readable event (as wrk does): an incomplete response waits for the next event of the
     * level-triggered epoll rather than costing a recv that only says EAGAIN. */
    if (c->in_n == sizeof c->in)
        return -1; /* no response of ours is that large */
    ssize_t r = recv(c->fd, c->in + c->in_n, sizeof c->in - c->in_n, 0);
    if (r < 0 && errno == EAGAIN)
        return 0;
    if (r <= 0)
        return -1; /* closed or broken before the response was complete */
    c->in_n += (size_t)r;
    char *end = memmem(c->in, c->in_n, "\r\n\r\n", 4);
    if (!end)
        return 0;
    size_t hlen = (size_t)(end - c->in) + 4;
    const char *cl = svc_http_header(c->in, hlen, "Content-Length");
    unsigned long long blen = cl ? strtoull(cl, NULL, 10) : 0;
    if (blen > sizeof c->in - hlen)
        return -1; /* no response of ours is that large (and hlen + blen must not wrap) */
    if (c->in_n < hlen + (size_t)blen)
        return 0;
    *status = c->in_n > 12 ? atoi(c->in + 9) : 0;
    const char *ch = svc_http_header(c->in, hlen, "Connection");
    if (!s->keepalive || (ch && strncasecmp(ch, "close", 5) == 0))
        load_drop(s, c);
    else
        c->in_n = 0;
    (void)s;
    return 1;
}

static int load_init(bk_ctx *ctx, void **state)
{
    load_state *s = bk_run_state(ctx, state, sizeof *s);
    if (!s)
        return -1;
    s->ep = s->tfd = -1;
    snprintf(s->host, sizeof s->host, "%s", bk_arg_str(ctx, "host"));
    snprintf(s->path, sizeof s->path, "%s", bk_arg_str(ctx, "path"));
    s->port = (int)bk_arg_int(ctx, "port");
    s->conns = (int)bk_arg_int(ctx, "connections");
    s->open_loop = strcmp(bk_arg_str(ctx, "mode"), "open") == 0;
    s->poisson = strcmp(bk_arg_str(ctx, "arrival"), "poisson") == 0;
    s->keepalive = (int)bk_arg_int(ctx, "keepalive");
    s->rate_hz = bk_arg_float(ctx, "rate_hz");
    s->duration_s = bk_arg_float(ctx, "duration_s");
    s->timeout_ms = bk_arg_int(ctx, "timeout_ms");
    s->late_us = bk_arg_int(ctx, "late_us");
    s->seed = (uint64_t)bk_arg_int(ctx, "seed");
    s->rt_priority = (int)bk_arg_int(ctx, "rt_priority");
    snprintf(s->samples_path, sizeof s->samples_path, "%s", bk_arg_str(ctx, "samples_path"));
    struct in_addr a;
    if (inet_pton(AF_INET, s->host, &a) != 1)
        return bk_fail(ctx, "host '%s' is not an IPv4 address", s->host);
    if (s->open_loop && s->rate_hz <= 0)
        return bk_fail(ctx, "mode=open needs rate_hz > 0");
    const char *op = bk_arg_str(ctx, "op");
    char body[512];
    int bn = snprintf(body, sizeof body,
                      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<soap:Envelope xmlns:soap=\"" SOAP_ENV
                      "\"><soap:Body><m:%s xmlns:m=\"" SVC_MGMT_NS "\"/></soap:Body></soap:Envelope>\n",
                      op);
    s->req_n = (size_t)snprintf(s->req, sizeof s->req,
                                "POST %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: text/xml; charset=utf-8\r\n"
                                "SOAPAction: \"" SVC_MGMT_NS "#%s\"\r\nContent-Length: %d\r\n%s\r\n%s",
                                s->path, s->host, s->port, op, bn, s->keepalive ? "" : "Connection: close\r\n", body);
    s->c = calloc((size_t)s->conns, sizeof *s->c);
    s->ep = epoll_create1(EPOLL_CLOEXEC);
    s->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (!s->c || s->ep < 0 || s->tfd < 0)
        return bk_fail(ctx, "cannot set up the client: %s", strerror(errno));
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(s->ep, EPOLL_CTL_ADD, s->tfd, &ev);
    for (int i = 0; i < s->conns; i++) {
        s->c[i].fd = -1;
        s->c[i].state = C_IDLE;
    }
    return 0;
}

static void arm(load_state *s, uint64_t t)
{
    static uint64_t armed = 1; /* what the timer is set to now: a syscall only when it changes */
    if (t == armed)
        return;
    armed = t;
    struct itimerspec its = {0};
    if (t == UINT64_MAX)
        its.it_value.tv_sec = 0, its.it_value.tv_nsec = 0;
    else {
        its.it_value.tv_sec = (time_t)(t / 1000000000ULL);
        its.it_value.tv_nsec = (long)(t % 1000000000ULL);
        if (!its.it_value.tv_sec && !its.it_value.tv_nsec)
            its.it_value.tv_nsec = 1;
    }
    timerfd_settime(s->tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

/* One run's schedule: the open loop's intended starts that have come but not started (a FIFO) and the
 * generator of the next one, the closed loop's period per connection, and the connections awaiting a response. */
typedef struct {
    uint64_t rng; /* open loop: the Poisson arrivals' generator */
    uint64_t next; /* open loop: intended start of the next request */
    uint64_t *queue; /* open loop: intended starts come and not started, FIFO queue[qh, qt) */
    size_t qh, qt, qcap;
    double per_conn_period;
    uint64_t timeout_ns;
    int busy;
} load_run;

/* Open loop: every intended start up to now joins the queue, however late the loop runs; idle connections
 * take the oldest ones. */
static void load_issue_open(load_state *s, load_run *run, int issuing, uint64_t now)
{
    while (issuing && run->next <= now && run->next < s->t_sched_end) {
        if (run->qt == run->qcap) {
            size_t nc = run->qcap ? run->qcap * 2 : 1024;
            uint64_t *q = realloc(run->queue, nc * sizeof *q);
            if (!q)
                break;
            run->queue = q;
            run->qcap = nc;
        }
        run->queue[run->qt++] = run->next;
        s->scheduled++;
        double gap = s->poisson ? -log(1.0 - bk_rand_unit(&run->rng)) * 1e9 / s->rate_hz : 1e9 / s->rate_hz;
        run->next = s->t0 + (uint64_t)((double)(run->next - s->t0) + gap);
        if (!s->poisson) /* no drift: the i-th start is t0 + i/rate exactly */
            run->next = s->t0 + (uint64_t)((double)s->scheduled * 1e9 / s->rate_hz);
    }
    uint64_t due = run->qt - run->qh; /* requests whose intended start has come but that have not started */
    for (int i = 0; i < s->conns && due; i++)
        if (s->c[i].state == C_IDLE) {
            load_start(s, &s->c[i], run->queue[run->qh++], svc_now());
            due--;
            run->busy += s->c[i].state == C_BUSY;
        }
}

/* Closed loop: each idle connection whose tick has come sends its next request. */
static void load_issue_closed(load_state *s, load_run *run, uint64_t now)
{
    for (int i = 0; i < s->conns; i++) {
        lconn *c = &s->c[i];
        if (c->state == C_IDLE && c->next_tick <= now) {
            uint64_t tick = run->per_conn_period > 0 ? c->next_tick : now;
            s->scheduled++;
            load_start(s, c, tick, svc_now());
            run->busy += c->state == C_BUSY;
            /* the study's client: the next call at the next tick, or at once when this one ran over */
            c->next_tick = run->per_conn_period > 0 ? tick + (uint64_t)run->per_conn_period : 0;
        }
    }
}

/* A request without its response after timeout_ms is a timeout: its connection is dropped. */
static void load_expire(load_state *s, load_run *run, uint64_t now)
{
    for (int i = 0; i < s->conns; i++)
        if (s->c[i].state == C_BUSY && now - s->c[i].start > run->timeout_ns) {
            s->timeouts++;
            rec(s, s->c[i].intended, s->c[i].start, now, LREQ_TIMEOUT);
            load_drop(s, &s->c[i]);
            s->c[i].state = C_IDLE;
            run->busy--;
        }
}

/* The timer's next wake: the next intended start (open loop) or the earliest idle connection's tick. */
static void load_arm_next(load_state *s, const load_run *run, int issuing)
{
    uint64_t wake = UINT64_MAX;
    if (issuing && s->open_loop && run->next < s->t_sched_end)
        wake = run->next;
    if (issuing && !s->open_loop)
        for (int i = 0; i < s->conns; i++)
            if (s->c[i].state == C_IDLE && s->c[i].next_tick < wake)
                wake = s->c[i].next_tick;
    if (issuing && wake > s->t_sched_end)
        wake = s->t_sched_end;
    arm(s, wake == UINT64_MAX ? (issuing ? s->t_sched_end : UINT64_MAX) : wake);
}

/* One epoll event: the timer, an idle connection the server closed, request bytes to push, or a response. */
static void load_event(load_state *s, load_run *run, const struct epoll_event *ev)
{
    lconn *c = ev->data.ptr;
    if (!c) {
        uint64_t x;
        while (read(s->tfd, &x, sizeof x) > 0)
            ;
        return;
    }
    if (c->state != C_BUSY) {
        /* an idle keep-alive connection the server closed: reopen on next use */
        char b[256];
        if (recv(c->fd, b, sizeof b, MSG_DONTWAIT) <= 0 && errno != EAGAIN)
            load_drop(s, c);
        return;
    }
    if (ev->events & EPOLLOUT && c->out_off < s->req_n)
        load_push(s, c);
    if (c->state != C_BUSY) {
        run->busy--;
        return;
    }
    if (!(ev->events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
        return;
    int status = 0, r = load_read(s, c, &status);
    if (r == 0)
        return;
    uint64_t done = svc_now();
    c->state = C_IDLE;
    run->busy--;
    if (r < 0) {
        s->errors++;
        rec(s, c->intended, c->start, done, LREQ_ERROR);
        load_err(s, "the server closed the connection without a response");
        load_drop(s, c);
        return;
    }
    rec(s, c->intended, c->start, done, status);
    if (status != 200) {
        s->errors++;
        char w[64];
        snprintf(w, sizeof w, "HTTP status %d", status);
        load_err(s, w);
        return;
    }
    s->ok++;
    s->t_last = done;
    svc_push(&s->corrected_ns, done - c->intended);
    svc_push(&s->service_ns, done - c->start);
    /* open loop: a request already due goes out on the freed connection now, not after the rest of
     * the batch (its start lag is what the schedule is judged by). Closed loop sends at the top of
     * the loop, after the whole batch of responses, as wrk does: sending each one from its response
     * woke the server per request (measured: 0.42-0.46 context switches per request and 65-69k
     * req/s against wrk's 0.24-0.26 and 75k; batched: 0.36 and 75-79k). */
    if (!svc_stop && s->open_loop && run->qt > run->qh) {
        load_start(s, c, run->queue[run->qh++], svc_now());
        run->busy += c->state == C_BUSY;
    }
}

static int load_serve(bk_ctx *ctx, void *state)
{
    load_state *s = state;
    (void)ctx;
    svc_install_stop();
    svc_tight_timers();
    if (s->rt_priority)
        s->rt_errno = svc_rt_priority(s->rt_priority);
    /* Connections are opened before the clock starts, so connect time is not in the first requests. */
    if (s->keepalive)
        for (int i = 0; i < s->conns; i++)
            if (load_connect(s, &s->c[i]) != 0)
                return bk_fail(ctx, "cannot connect to %s:%d: %s", s->host, s->port, strerror(errno));
    load_run run = {.rng = s->seed * 0x9E3779B97F4A7C15ULL + 1};
    s->t0 = svc_now() + 2000000;
    s->t_sched_end = s->t0 + (uint64_t)(s->duration_s * 1e9);
    run.next = s->t0;
    run.per_conn_period = s->rate_hz > 0 ? 1e9 * s->conns / s->rate_hz : 0;
    for (int i = 0; i < s->conns; i++)
        s->c[i].next_tick = s->t0 + (uint64_t)(run.per_conn_period * i / s->conns);
    run.timeout_ns = (uint64_t)s->timeout_ms * 1000000ULL;
    struct epoll_event evs[128];
    for (;;) {
        uint64_t now = svc_now();
        /* open loop: every intended start before the end is issued, however late the loop runs */
        int issuing = !svc_stop && (s->open_loop ? run.next < s->t_sched_end : now < s->t_sched_end);
        if (s->open_loop)
            load_issue_open(s, &run, issuing, now);
        else if (issuing)
            load_issue_closed(s, &run, now);
        now = svc_now();
        load_expire(s, &run, now);
        int pending = s->open_loop ? (run.qt > run.qh) : 0;
        if (!issuing && run.busy == 0 && !pending)
            break;
        if (!issuing && now > s->t_sched_end + run.timeout_ns + 1000000000ULL)
            break; /* drain limit */
        load_arm_next(s, &run, issuing);
        int n = epoll_wait(s->ep, evs, 128, run.busy ? 10 : 100);
        for (int e = 0; e < n; e++)
            load_event(s, &run, &evs[e]);
    }
    s->t_end = svc_now();
    /* requests still queued when the drain limit hit never started: they count as timeouts */
    if (s->open_loop) {
        s->timeouts += run.qt - run.qh;
        for (size_t i = run.qh; i < run.qt; i++)
            rec(s, run.queue[i], 0, 0, LREQ_NOT_STARTED);
    }
    free(run.queue);
    if (s->samples_path[0] && !s->samples_error[0])
        write_samples(s);
    for (int i = 0; i < s->conns; i++)
        load_drop(s, &s->c[i]);
    return 0;
}

static int load_verify(bk_ctx *ctx, void *state)
{
    load_state *s = state;
    double span = fmax(s->duration_s, s->t_last > s->t0 ? (double)(s->t_last - s->t0) / 1e9 : 0);
    bk_set_value(ctx, "achieved_rate_hz", span > 0 ? (double)s->ok / span : 0);
    if (s->ok) {
        bk_set_value(ctx, "corrected_p99_ns", svc_percentile(&s->corrected_ns, 99));
        bk_set_value(ctx, "service_p99_ns", svc_percentile(&s->service_ns, 99));
        bk_set_value(ctx, "corrected_p50_ns", svc_percentile(&s->corrected_ns, 50));
        bk_set_value(ctx, "service_p50_ns", svc_percentile(&s->service_ns, 50));
    } else {
        const char *why = "no request succeeded";
        bk_skip_metric(ctx, "corrected_p99_ns", why);
        bk_skip_metric(ctx, "service_p99_ns", why);
        bk_skip_metric(ctx, "corrected_p50_ns", why);
        bk_skip_metric(ctx, "service_p50_ns", why);
    }
    if (s->first_error[0])
        bk_info_str(ctx, "first_error", s->first_error);
    bk_set_checksum(ctx, s->ok);
    if (!s->ok && s->sent && !svc_stop) /* nothing measured: say why rather than report 0 Hz */
        return bk_fail(ctx, "no request to %s:%d succeeded (%llu errors, %llu timeouts; first error: %s)", s->host,
                       s->port, (unsigned long long)s->errors, (unsigned long long)s->timeouts,
                       s->first_error[0] ? s->first_error : "none");
    return 0;
}

static void load_json(void *state, bk_json *j)
{
    load_state *s = state;
    svc_json_begin(j, "load");
    bk_json_kv_str(j, "mode", s->open_loop ? "open" : "closed");
    bk_json_kv_str(j, "arrival", s->open_loop ? (s->poisson ? "poisson" : "constant") : NULL);
    bk_json_kv_num(j, "target_rate_hz", s->rate_hz);
    bk_json_kv_int(j, "connections", s->conns);
    bk_json_kv_bool(j, "keepalive", s->keepalive);
    bk_json_kv_uint(j, "duration_ns", s->t_sched_end - s->t0);
    bk_json_kv_uint(j, "scheduled", s->scheduled);
    bk_json_kv_uint(j, "sent", s->sent);
    bk_json_kv_uint(j, "ok", s->ok);
    bk_json_kv_uint(j, "errors", s->errors);
    bk_json_kv_uint(j, "timeouts", s->timeouts);
    bk_json_kv_uint(j, "late_starts", s->late);
    bk_json_kv_uint(j, "late_threshold_ns", (uint64_t)s->late_us * 1000ULL);
    bk_json_kv_uint(j, "connects", s->connects);
    bk_json_kv_int(j, "rt_priority", s->rt_errno ? 0 : s->rt_priority);
    bk_json_kv_str(j, "rt_priority_error", s->rt_errno ? strerror(s->rt_errno) : NULL);
    double span = fmax(s->duration_s, s->t_last > s->t0 ? (double)(s->t_last - s->t0) / 1e9 : 0);
    bk_json_kv_num(j, "achieved_rate_hz", span > 0 ? (double)s->ok / span : 0);
    /* requests sent per second between the first and the last send: how well the starts kept the rate */
    bk_json_key(j, "start_rate_hz");
    bk_json_num(j, s->sent > 1 && s->last_start > s->first_start
                       ? (double)(s->sent - 1) * 1e9 / (double)(s->last_start - s->first_start)
                       : NAN);
    svc_json_summary(j, "corrected_ns", &s->corrected_ns);
    svc_json_summary(j, "service_ns", &s->service_ns);
    svc_json_summary(j, "start_lag_ns", &s->start_lag_ns);
    bk_json_kv_str(j, "first_error", s->first_error[0] ? s->first_error : NULL);
    bk_json_kv_str(j, "samples_path", s->samples_path[0] && !s->samples_error[0] ? s->samples_path : NULL);
    bk_json_kv_str(j, "samples_error", s->samples_error[0] ? s->samples_error : NULL);
    bk_json_end_object(j);
}

static void load_fini(void *state)
{
    load_state *s = state;
    if (!s)
        return;
    if (s->ep >= 0)
        close(s->ep);
    if (s->tfd >= 0)
        close(s->tfd);
    free(s->c);
    free(s->reqs);
    svc_samples_free(&s->corrected_ns);
    svc_samples_free(&s->service_ns);
    svc_samples_free(&s->start_lag_ns);
}

const bk_kernel bk_svc_load = {
    .name = "svc.load",
    .family = "svc",
    .summary = "SOAP load generator: open loop timed from intended starts (no coordinated omission) or closed loop",
    .params = load_params,
    .metrics = load_metrics,
    .init = load_init,
    .verify = load_verify,
    .fini = load_fini,
    .serve = load_serve,
    .serve_json = load_json,
};
