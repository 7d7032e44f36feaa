/* The management endpoint's server: a single-threaded epoll HTTP/1.1 server with its limits (connections,
 * output, header, body and idle deadlines), run by svc.mgmt and embedded in svc.pub (svc_mgmt_loop). */
#include "svc_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- the HTTP server ---- */

/* The current request's header length (0: not whole yet). The search resumes where the last one ended,
 * so a header arriving a byte at a time costs its length, not its length squared. */
static size_t header_length(mconn *c)
{
    const char *p = c->in + c->in_off;
    size_t avail = c->in_n - c->in_off, from = c->scanned > 3 ? c->scanned - 3 : 0;
    const char *end = avail > from ? memmem(p + from, avail - from, "\r\n\r\n", 4) : NULL;
    if (!end) {
        c->scanned = avail;
        return 0;
    }
    c->scanned = (size_t)(end - p);
    return c->scanned + 4;
}

/* The request at in_off is served: the next one starts after it. An empty buffer starts over at 0. */
static void consume_request(mconn *c, size_t n)
{
    c->in_off += n;
    if (c->in_off == c->in_n)
        c->in_off = c->in_n = 0;
    c->scanned = c->hlen = c->blen = 0;
}

/* Parses the header of the request at in_off once it is whole; 0, or -1 after a fault that closes. */
static int parse_head(svc_mgmt *m, mconn *c, size_t hlen)
{
    const char *p = c->in + c->in_off;
    if (hlen > MAX_HEADER_BYTES) {
        m->too_large++;
        svc_soap_fault(m, c, 431, "Client", "request header larger than 8192 bytes", 1);
        return -1;
    }
    const char *cl = svc_http_header(p, hlen, "Content-Length");
    long long blen = 0;
    if (cl) {
        char *e;
        blen = strtoll(cl, &e, 10);
        if (e == cl || blen < 0) {
            m->malformed++;
            svc_soap_fault(m, c, 400, "Client", "bad Content-Length", 1);
            return -1;
        }
    }
    if (blen > m->max_request_bytes) {
        char why[128];
        snprintf(why, sizeof why, "request body of %lld bytes exceeds the limit of %lld bytes", blen,
                 (long long)m->max_request_bytes);
        m->too_large++;
        svc_soap_fault(m, c, 413, "Client", why, 1);
        return -1;
    }
    c->hlen = hlen;
    c->blen = (size_t)blen;
    return 0;
}

/* Handles every complete request in the input buffer. Sets want_in: whether it stopped for want of bytes
 * (then the connection reads), not for output room or a close (then it reads nothing until it can serve:
 * requests wait in the socket, which TCP flow control bounds, not in our buffer). */
static void serve_requests(svc_mgmt *m, svc_shared *sh, mconn *c)
{
    c->want_in = 0;
    for (;;) {
        /* a peer that sends requests and reads no responses: serve no more until it reads */
        if (c->out_n - c->out_off > (size_t)m->max_output_bytes) {
            m->output_stalls++;
            return;
        }
        size_t hlen = c->hlen;
        if (!hlen) {
            hlen = header_length(c);
            if (!hlen) {
                if (c->in_n - c->in_off > MAX_HEADER_BYTES) {
                    m->too_large++;
                    svc_soap_fault(m, c, 431, "Client", "request header larger than 8192 bytes", 1);
                } else
                    c->want_in = 1;
                return;
            }
            if (parse_head(m, c, hlen) < 0)
                return;
        }
        if (c->in_n - c->in_off < hlen + c->blen) {
            if (!c->t_head)
                c->t_head = svc_now(); /* the body deadline runs from here */
            c->want_in = 1; /* the body is still coming */
            return;
        }
        c->t_req = svc_now();
        m->requests++;
        svc_soap_serve(m, sh, c, hlen, c->blen);
        consume_request(c, hlen + c->blen);
        c->t_head = 0;
        c->t_start = c->in_n ? c->t_req : 0; /* a pipelined request: its clock starts now */
        if (c->close_after)
            return;
    }
}

static void conn_close(int ep, mconn *c)
{
    if (c->fd >= 0) {
        epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
    }
    free(c->in);
    free(c->out);
    free(c);
}

/* What epoll watches: input only while the parser waits for bytes, the unsent output is within its bound
 * and the input buffer has room (level-triggered: a readable socket we do not read would wake the loop
 * forever), output while some is unsent. */
static void conn_events(const svc_mgmt *m, int ep, mconn *c)
{
    size_t pending = c->out_n - c->out_off;
    uint32_t want = 0;
    if (!c->close_after && c->want_in && pending <= (size_t)m->max_output_bytes &&
        c->in_n - c->in_off < (size_t)m->max_request_bytes + MAX_HEADER_BYTES)
        want |= EPOLLIN;
    /* whole requests that wait for output room once it is made: a writable socket wakes the loop to serve
     * them (no byte may arrive to do it: the client may have sent its whole pipeline) */
    if (pending || (!c->want_in && !c->close_after))
        want |= EPOLLOUT;
    if (want != c->events) {
        struct epoll_event ev = {.events = want, .data.ptr = c};
        epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
        c->events = want;
    }
}

/* Writes what is pending; returns -1 when the connection is finished (closed by us or broken). */
static int flush_out(svc_mgmt *m, mconn *c)
{
    while (c->out_off < c->out_n) {
        ssize_t w = send(c->fd, c->out + c->out_off, c->out_n - c->out_off, MSG_NOSIGNAL);
        if (w < 0 && errno != EAGAIN)
            c->linger = 0; /* broken: nobody is left to read an answer */
        if (w < 0)
            return errno == EAGAIN ? 0 : -1;
        c->out_off += (size_t)w;
        c->t_active = svc_now();
    }
    if (c->out_n) {
        if (c->t_req) /* a response to a complete request (not a 408 or 431) */
            svc_push(&m->service_ns, svc_now() - c->t_req);
        c->t_req = 0;
        c->out_n = c->out_off = 0;
        if (c->out_cap > 16384) { /* all sent: an idle connection keeps no large buffer */
            free(c->out);
            c->out = NULL;
            c->out_cap = 0;
        }
    }
    return c->close_after ? -1 : 0;
}

/* Reads what the input buffer has room for; returns -1 when the peer closed or the connection broke.
 * The parser has taken every whole request before this is called (it reads only when the parser waits for
 * bytes), so what is moved to the front to make room is part of one request: each byte moves at most once. */
static int read_in(svc_mgmt *m, mconn *c)
{
    size_t limit = (size_t)m->max_request_bytes + MAX_HEADER_BYTES; /* a request over it is refused */
    size_t unread = c->in_n - c->in_off;
    if (unread >= limit)
        return 0;
    if (c->in_cap - c->in_n < 4096 && c->in_off) {
        memmove(c->in, c->in + c->in_off, unread);
        c->in_n = unread;
        c->in_off = 0;
    }
    if (c->in_cap - c->in_n < 4096 && c->in_cap < limit) {
        size_t cap = c->in_cap ? c->in_cap * 2 : 8192;
        cap = cap < limit ? cap : limit;
        char *p = realloc(c->in, cap);
        if (!p)
            return -1;
        c->in = p;
        c->in_cap = cap;
    }
    size_t room = c->in_cap - c->in_n < limit - unread ? c->in_cap - c->in_n : limit - unread;
    ssize_t r = recv(c->fd, c->in + c->in_n, room, 0);
    if (r <= 0 && (r == 0 || errno != EAGAIN))
        c->linger = 0; /* the peer closed (or broke): it sends nothing more */
    if (r <= 0)
        return r == 0 || errno != EAGAIN ? -1 : 0;
    uint64_t now = svc_now();
    if (!c->t_start)
        c->t_start = now;
    c->t_active = now;
    c->in_n += (size_t)r;
    /* one recv per wake-up: the parser sees these bytes before more are read, so a deep pipeline waits in
     * the socket (level-triggered epoll wakes the loop again while bytes are left) */
    return 0;
}

/* A lingering close (as Apache's and nginx's): a socket closed with input it has not read answers with a
 * reset, and a reset fails the client's send and can discard the answer before its client reads it. So a
 * connection ended after an answer its client may still be sending to (a 503, a 4xx that closes) is shut
 * for writing and kept: what its peer still sends is read and dropped until it closes too or LINGER_NS
 * pass. At most LINGER_MAX at once (past it the oldest is closed at once), read at each sweep: within the
 * 32 descriptors connection_limit keeps free. */
#define LINGER_MAX 16
#define LINGER_NS 2000000000ULL
#define LINGER_READ_BYTES (1 << 20) /* per socket and sweep: a peer sending without end costs bounded CPU */

typedef struct {
    int fd;
    uint64_t until;
} mlinger;

typedef struct {
    int ep, lfd, spare; /* spare: a descriptor held back to accept and refuse when none are left */
    mconn **all; /* every open connection (at most m->conn_limit) */
    size_t nall;
    uint64_t accept_resume; /* accepting paused until then (0: accepting) */
    mlinger linger[LINGER_MAX]; /* shut for writing, waiting for their peers' close; oldest first */
    size_t nlinger;
} mserver;

static void linger_start(mserver *sv, int fd)
{
    shutdown(fd, SHUT_WR);
    if (sv->nlinger == LINGER_MAX) {
        close(sv->linger[0].fd);
        memmove(sv->linger, sv->linger + 1, (LINGER_MAX - 1) * sizeof *sv->linger);
        sv->nlinger--;
    }
    sv->linger[sv->nlinger++] = (mlinger){.fd = fd, .until = svc_now() + LINGER_NS};
}

/* Reads and drops what each lingering peer sent; closes those whose peer closed or broke, or whose time
 * is up. */
static void linger_sweep(mserver *sv, uint64_t now)
{
    char sink[16384];
    size_t kept = 0;
    for (size_t k = 0; k < sv->nlinger; k++) {
        mlinger l = sv->linger[k];
        ssize_t r = 0;
        for (size_t got = 0; got < LINGER_READ_BYTES && (r = recv(l.fd, sink, sizeof sink, MSG_DONTWAIT)) > 0;)
            got += (size_t)r;
        int open = r > 0 || (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR));
        if (open && now < l.until)
            sv->linger[kept++] = l;
        else
            close(l.fd);
    }
    sv->nlinger = kept;
}

/* A connection over the cap, or one accepted with the spare descriptor: a clear 503 and a lingering close
 * (sv), without keeping anything else; out of descriptors (sv NULL), closed at once to give the spare
 * back. What the client sent already is read first. */
static void refuse(svc_mgmt *m, mserver *sv, int fd, const char *why)
{
    char sink[4096], body[512], msg[1024];
    for (int i = 0; i < 16 && recv(fd, sink, sizeof sink, MSG_DONTWAIT) > 0; i++)
        ; /* at most 64 KiB: a peer may stream without end */
    int bn = snprintf(body, sizeof body,
                      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<soap:Envelope xmlns:soap=\"" SOAP_ENV
                      "\"><soap:Body><soap:Fault><faultcode>soap:Server</faultcode><faultstring>%s</faultstring>"
                      "</soap:Fault></soap:Body></soap:Envelope>\n",
                      why);
    int n = snprintf(msg, sizeof msg,
                     "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/xml; charset=utf-8\r\n"
                     "Content-Length: %d\r\nRetry-After: 1\r\nConnection: close\r\n\r\n%s",
                     bn, body);
    if (send(fd, msg, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
        /* nothing more to do: the peer is gone or its buffer is full */
    }
    if (sv) {
        linger_start(sv, fd);
    } else {
        shutdown(fd, SHUT_WR);
        close(fd);
    }
    m->refused++;
}

static void server_drop(mserver *sv, mconn *c)
{
    for (size_t k = 0; k < sv->nall; k++)
        if (sv->all[k] == c) {
            sv->all[k] = sv->all[--sv->nall];
            break;
        }
    if (c->linger) { /* out of epoll before its mconn is freed: the socket stays open a while */
        epoll_ctl(sv->ep, EPOLL_CTL_DEL, c->fd, NULL);
        linger_start(sv, c->fd);
        c->fd = -1;
    }
    conn_close(sv->ep, c);
}

/* Out of descriptors (EMFILE/ENFILE) or of kernel memory: the listening socket stays readable, so stop
 * watching it for a while instead of spinning on accept. */
static void accept_pause(svc_mgmt *m, mserver *sv)
{
    epoll_ctl(sv->ep, EPOLL_CTL_DEL, sv->lfd, NULL);
    sv->accept_resume = svc_now() + 100000000ULL;
    m->accept_backoffs++;
}

/* At the limit, the connection idle longest with no request under way makes room (HTTP lets a server close
 * an idle persistent connection at any time; its client reconnects): connections opened and left silent
 * cannot lock new clients out. Returns 0 when every connection is busy. */
static int evict_idle(svc_mgmt *m, mserver *sv)
{
    mconn *old = NULL;
    for (size_t k = 0; k < sv->nall; k++) {
        mconn *c = sv->all[k];
        if (!c->in_n && !c->t_start && c->out_n == c->out_off && !c->close_after &&
            (!old || c->t_active < old->t_active))
            old = c;
    }
    if (!old)
        return 0;
    m->idle_closed++;
    server_drop(sv, old);
    return 1;
}

static void accept_all(svc_mgmt *m, mserver *sv)
{
    int one = 1;
    if (sv->spare < 0) /* lost when even it could not be taken back: descriptors may be free again now */
        sv->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
    for (;;) {
        int fd = accept4(sv->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if ((errno == EMFILE || errno == ENFILE) && sv->spare >= 0) {
                close(sv->spare); /* the spare makes room to tell this client, then is taken back */
                fd = accept4(sv->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                int accept_errno = errno;
                if (fd >= 0)
                    refuse(m, NULL, fd, "the server is out of file descriptors; try again later");
                sv->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
                if (fd >= 0)
                    continue;
                errno = accept_errno;
            }
            /* out of descriptors with no spare (the limit fell below it), or of memory: the backlog stays
             * readable, so stop watching it for a while rather than spin on accept */
            if (errno != EAGAIN)
                accept_pause(m, sv);
            return;
        }
        if ((int64_t)sv->nall >= m->conn_limit && !evict_idle(m, sv)) {
            refuse(m, sv, fd, "too many connections; try again later");
            continue;
        }
        mconn *nc = calloc(1, sizeof *nc);
        mconn **na = realloc(sv->all, (sv->nall + 1) * sizeof *sv->all);
        if (na)
            sv->all = na;
        if (!nc || !na) {
            free(nc);
            refuse(m, sv, fd, "the server is out of memory; try again later");
            continue;
        }
        if (m->nodelay)
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        sv->all[sv->nall++] = nc;
        nc->fd = fd;
        nc->events = EPOLLIN;
        nc->want_in = 1;
        nc->t_active = svc_now();
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = nc};
        epoll_ctl(sv->ep, EPOLL_CTL_ADD, fd, &ev);
        m->connections++;
    }
}

/* Deadlines: a request header or body that takes too long gets 408 and the connection closes (slowloris);
 * a connection idle past idle_timeout_ms, or whose peer has read nothing of its responses for as long,
 * closes. */
static void sweep(svc_mgmt *m, svc_shared *sh, mserver *sv, uint64_t now)
{
    (void)sh;
    uint64_t head_ns = (uint64_t)m->header_timeout_ms * 1000000ULL, body_ns = (uint64_t)m->body_timeout_ms * 1000000ULL;
    uint64_t idle_ns = (uint64_t)m->idle_timeout_ms * 1000000ULL;
    for (size_t k = 0; k < sv->nall;) {
        mconn *c = sv->all[k];
        int late = 0, idle = 0;
        if (c->out_n > c->out_off || c->close_after)
            idle = now - c->t_active > idle_ns;
        else if (c->t_head)
            late = now - c->t_head > body_ns;
        else if (c->t_start)
            late = now - c->t_start > head_ns;
        else
            idle = now - c->t_active > idle_ns;
        if (late) {
            m->timeouts++;
            svc_soap_fault(
                m, c, 408, "Client",
                c->t_head ? "the request body did not arrive in time" : "the request header did not arrive in time", 1);
            if (flush_out(m, c) < 0) {
                server_drop(sv, c); /* the last slot moved into k */
                continue;
            }
            conn_events(m, sv->ep, c);
        } else if (idle) {
            m->idle_closed++;
            server_drop(sv, c);
            continue;
        }
        k++;
    }
}

static int open_listener(svc_mgmt *m)
{
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int one = 1;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)m->port)};
    if (lfd < 0 || inet_pton(AF_INET, m->bind_addr, &sa.sin_addr) != 1 ||
        setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        bind(lfd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(lfd, 1024) < 0) {
        snprintf(m->error, sizeof m->error, "cannot listen on %s:%d: %s", m->bind_addr, m->port, strerror(errno));
        if (lfd >= 0)
            close(lfd);
        return -1;
    }
    return lfd;
}

/* max_connections, lowered so that connections never take the last descriptors (RLIMIT_NOFILE): those
 * are kept for the role's own files, the listening socket and the spare. */
static int64_t connection_limit(const svc_mgmt *m)
{
    struct rlimit rl;
    int64_t lim = m->max_connections;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && (int64_t)rl.rlim_cur - 32 < lim)
        lim = (int64_t)rl.rlim_cur - 32;
    return lim < 1 ? 1 : lim;
}

void svc_mgmt_defaults(svc_mgmt *m)
{
    m->max_request_bytes = 65536;
    m->max_connections = 256;
    m->max_output_bytes = 65536;
    m->header_timeout_ms = 10000;
    m->body_timeout_ms = 10000;
    m->idle_timeout_ms = 60000;
}

int svc_mgmt_loop(svc_mgmt *m, svc_shared *sh, volatile int *stop_also)
{
    mserver sv = {.ep = -1, .spare = -1};
    if ((sv.lfd = open_listener(m)) < 0)
        return -1;
    m->conn_limit = connection_limit(m);
    sv.ep = epoll_create1(EPOLL_CLOEXEC);
    sv.spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
    struct epoll_event lev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(sv.ep, EPOLL_CTL_ADD, sv.lfd, &lev);
    fprintf(stderr, "svc.mgmt: ready, listening on %s:%d\n", m->bind_addr, m->port);
    fflush(stderr);
    uint64_t t0 = svc_now(), end = t0 + (uint64_t)(m->duration_s * 1e9), next_sweep = t0;
    uint64_t next_stall = m->stall_every_ms ? t0 + (uint64_t)m->stall_every_ms * 1000000ULL : UINT64_MAX;
    struct epoll_event evs[64];
    while (!svc_stop && !(stop_also && *stop_also)) {
        uint64_t now = svc_now();
        if (now >= end)
            break;
        if (now >= next_stall) { /* fault injection: the whole server freezes, as in a GC pause */
            svc_sleep_until(now + (uint64_t)m->stall_ms * 1000000ULL);
            m->stalls++;
            next_stall += (uint64_t)m->stall_every_ms * 1000000ULL;
            continue;
        }
        if (now >= next_sweep) { /* deadlines are checked every 50 ms, not per event */
            sweep(m, sh, &sv, now);
            linger_sweep(&sv, now);
            next_sweep = now + 50000000ULL;
        }
        if (sv.accept_resume && now >= sv.accept_resume) {
            epoll_ctl(sv.ep, EPOLL_CTL_ADD, sv.lfd, &lev);
            sv.accept_resume = 0;
        }
        uint64_t wake = next_stall < end ? next_stall : end;
        int to_ms = (int)((wake - now) / 1000000ULL) + 1;
        if (to_ms > 50)
            to_ms = 50;
        int n = epoll_wait(sv.ep, evs, 64, to_ms);
        int accepting = 0; /* after the batch: an eviction must not free a connection still in evs */
        for (int i = 0; i < n; i++) {
            mconn *c = evs[i].data.ptr;
            if (!c) {
                accepting = 1;
                continue;
            }
            int dead = 0;
            if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
                dead = read_in(m, c) < 0;
            /* serve what the output bound allows: also after a flush made room */
            int rc = flush_out(m, c);
            if (rc == 0 && !c->close_after) {
                serve_requests(m, sh, c);
                rc = flush_out(m, c);
            }
            if (rc < 0 || (dead && c->out_off >= c->out_n)) {
                server_drop(&sv, c);
                continue;
            }
            if (dead) { /* the peer closed its side: send what is left, then close */
                c->close_after = 1;
                consume_request(c, c->in_n - c->in_off);
            }
            conn_events(m, sv.ep, c);
        }
        if (accepting)
            accept_all(m, &sv);
    }
    for (size_t k = 0; k < sv.nall; k++)
        conn_close(sv.ep, sv.all[k]);
    for (size_t k = 0; k < sv.nlinger; k++)
        close(sv.linger[k].fd);
    free(sv.all);
    close(sv.ep);
    close(sv.lfd);
    if (sv.spare >= 0)
        close(sv.spare);
    return 0;
}
