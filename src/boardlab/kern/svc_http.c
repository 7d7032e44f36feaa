/* The management interface (svc.mgmt: SOAP 1.1 over HTTP/1.1 with its WSDL) and the load generator that
 * measures it (svc.load: open loop, coordinated-omission-correct, or closed loop as in the study).
 * The endpoint is a single-threaded epoll server; any request it cannot honour gets a SOAP fault. */
#include "svc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#if BK_HAVE_EXPAT
#include <expat.h>
#endif

#define SOAP_ENV "http://schemas.xmlsoap.org/soap/envelope/"
#define MAX_HEADER_BYTES 8192

static const char *const op_names[3] = {"getPosition", "setEnabled", "getStatus"};

/* Document/literal wrapped, so a generated client (zeep, gSOAP) maps each operation to one call. */
static const char wsdl_fmt[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<definitions name=\"VdmManagement\" targetNamespace=\"" SVC_MGMT_NS "\"\n"
    "  xmlns=\"http://schemas.xmlsoap.org/wsdl/\" xmlns:soap=\"http://schemas.xmlsoap.org/wsdl/soap/\"\n"
    "  xmlns:tns=\"" SVC_MGMT_NS "\" xmlns:xsd=\"http://www.w3.org/2001/XMLSchema\">\n"
    "  <types>\n"
    "    <xsd:schema targetNamespace=\"" SVC_MGMT_NS "\" elementFormDefault=\"qualified\">\n"
    "      <xsd:element name=\"getPosition\"><xsd:complexType><xsd:sequence/></xsd:complexType></xsd:element>\n"
    "      <xsd:element name=\"getPositionResponse\"><xsd:complexType><xsd:sequence>\n"
    "        <xsd:element name=\"latitudeDeg\" type=\"xsd:double\"/>\n"
    "        <xsd:element name=\"longitudeDeg\" type=\"xsd:double\"/>\n"
    "        <xsd:element name=\"altitudeM\" type=\"xsd:double\"/>\n"
    "        <xsd:element name=\"fix\" type=\"xsd:int\"/>\n"
    "      </xsd:sequence></xsd:complexType></xsd:element>\n"
    "      <xsd:element name=\"setEnabled\"><xsd:complexType><xsd:sequence>\n"
    "        <xsd:element name=\"enabled\" type=\"xsd:boolean\"/>\n"
    "      </xsd:sequence></xsd:complexType></xsd:element>\n"
    "      <xsd:element name=\"setEnabledResponse\"><xsd:complexType><xsd:sequence>\n"
    "        <xsd:element name=\"enabled\" type=\"xsd:boolean\"/>\n"
    "      </xsd:sequence></xsd:complexType></xsd:element>\n"
    "      <xsd:element name=\"getStatus\"><xsd:complexType><xsd:sequence/></xsd:complexType></xsd:element>\n"
    "      <xsd:element name=\"getStatusResponse\"><xsd:complexType><xsd:sequence>\n"
    "        <xsd:element name=\"enabled\" type=\"xsd:boolean\"/>\n"
    "        <xsd:element name=\"uptimeS\" type=\"xsd:double\"/>\n"
    "        <xsd:element name=\"messagesSent\" type=\"xsd:unsignedLong\"/>\n"
    "        <xsd:element name=\"requestsServed\" type=\"xsd:unsignedLong\"/>\n"
    "      </xsd:sequence></xsd:complexType></xsd:element>\n"
    "    </xsd:schema>\n"
    "  </types>\n"
    "  <message name=\"getPositionIn\"><part name=\"parameters\" element=\"tns:getPosition\"/></message>\n"
    "  <message name=\"getPositionOut\"><part name=\"parameters\" element=\"tns:getPositionResponse\"/></message>\n"
    "  <message name=\"setEnabledIn\"><part name=\"parameters\" element=\"tns:setEnabled\"/></message>\n"
    "  <message name=\"setEnabledOut\"><part name=\"parameters\" element=\"tns:setEnabledResponse\"/></message>\n"
    "  <message name=\"getStatusIn\"><part name=\"parameters\" element=\"tns:getStatus\"/></message>\n"
    "  <message name=\"getStatusOut\"><part name=\"parameters\" element=\"tns:getStatusResponse\"/></message>\n"
    "  <portType name=\"VdmManagementPortType\">\n"
    "    <operation name=\"getPosition\"><input message=\"tns:getPositionIn\"/><output message=\"tns:getPositionOut\"/></operation>\n"
    "    <operation name=\"setEnabled\"><input message=\"tns:setEnabledIn\"/><output message=\"tns:setEnabledOut\"/></operation>\n"
    "    <operation name=\"getStatus\"><input message=\"tns:getStatusIn\"/><output message=\"tns:getStatusOut\"/></operation>\n"
    "  </portType>\n"
    "  <binding name=\"VdmManagementBinding\" type=\"tns:VdmManagementPortType\">\n"
    "    <soap:binding style=\"document\" transport=\"http://schemas.xmlsoap.org/soap/http\"/>\n"
    "    <operation name=\"getPosition\"><soap:operation soapAction=\"" SVC_MGMT_NS "#getPosition\"/>\n"
    "      <input><soap:body use=\"literal\"/></input><output><soap:body use=\"literal\"/></output></operation>\n"
    "    <operation name=\"setEnabled\"><soap:operation soapAction=\"" SVC_MGMT_NS "#setEnabled\"/>\n"
    "      <input><soap:body use=\"literal\"/></input><output><soap:body use=\"literal\"/></output></operation>\n"
    "    <operation name=\"getStatus\"><soap:operation soapAction=\"" SVC_MGMT_NS "#getStatus\"/>\n"
    "      <input><soap:body use=\"literal\"/></input><output><soap:body use=\"literal\"/></output></operation>\n"
    "  </binding>\n"
    "  <service name=\"VdmManagement\">\n"
    "    <port name=\"VdmManagementPort\" binding=\"tns:VdmManagementBinding\">\n"
    "      <soap:address location=\"http://%s:%d/vdm\"/>\n"
    "    </port>\n"
    "  </service>\n"
    "</definitions>\n";

/* ---- SOAP request parsing ---- */

typedef struct {
    int depth, op, bad, have_enabled, in_enabled;
    char why[160];
    char text[16];
    size_t text_n;
    int enabled;
} soap_req;

#if BK_HAVE_EXPAT
static int name_is(const char *name, const char *ns, const char *local)
{
    size_t n = strlen(ns);
    return strncmp(name, ns, n) == 0 && name[n] == '|' && strcmp(name + n + 1, local) == 0;
}

static void XMLCALL s_start(void *ud, const XML_Char *name, const XML_Char **atts)
{
    (void)atts;
    soap_req *r = ud;
    r->depth++;
    if (r->bad)
        return;
    if (r->depth == 1 && !name_is(name, SOAP_ENV, "Envelope")) {
        r->bad = 1;
        snprintf(r->why, sizeof r->why, "the document is not a SOAP 1.1 Envelope");
    } else if (r->depth == 3 && r->op < 0) {
        for (int i = 0; i < 3; i++)
            if (name_is(name, SVC_MGMT_NS, op_names[i]))
                r->op = i;
        if (r->op < 0 && !r->why[0])
            snprintf(r->why, sizeof r->why, "unknown operation (expected getPosition, setEnabled or getStatus in %s)",
                     SVC_MGMT_NS);
    } else if (r->depth == 4 && r->op == 1 && name_is(name, SVC_MGMT_NS, "enabled")) {
        r->in_enabled = 1;
        r->text_n = 0;
    }
}

static void XMLCALL s_end(void *ud, const XML_Char *name)
{
    (void)name;
    soap_req *r = ud;
    if (r->in_enabled && r->depth == 4) {
        r->text[r->text_n] = 0;
        r->in_enabled = 0;
        if (!strcmp(r->text, "true") || !strcmp(r->text, "1"))
            r->enabled = 1, r->have_enabled = 1;
        else if (!strcmp(r->text, "false") || !strcmp(r->text, "0"))
            r->enabled = 0, r->have_enabled = 1;
    }
    r->depth--;
}

static void XMLCALL s_text(void *ud, const XML_Char *t, int len)
{
    soap_req *r = ud;
    if (!r->in_enabled)
        return;
    for (int i = 0; i < len; i++)
        if (t[i] != ' ' && t[i] != '\n' && t[i] != '\t' && t[i] != '\r' && r->text_n < sizeof r->text - 1)
            r->text[r->text_n++] = t[i];
}

static XML_Parser g_doctype_parser;
static void XMLCALL s_doctype(void *ud, const XML_Char *n, const XML_Char *s, const XML_Char *p, int i)
{
    (void)n, (void)s, (void)p, (void)i;
    soap_req *r = ud;
    r->bad = 1;
    snprintf(r->why, sizeof r->why, "a DOCTYPE is not allowed in a SOAP message");
    XML_StopParser(g_doctype_parser, XML_FALSE);
}

static void parse_soap(const char *body, size_t n, soap_req *r)
{
    memset(r, 0, sizeof *r);
    r->op = -1;
    XML_Parser p = XML_ParserCreateNS("UTF-8", '|');
    if (!p) {
        r->bad = 1;
        snprintf(r->why, sizeof r->why, "out of memory");
        return;
    }
    g_doctype_parser = p;
    XML_SetUserData(p, r);
    XML_SetElementHandler(p, s_start, s_end);
    XML_SetCharacterDataHandler(p, s_text);
    XML_SetStartDoctypeDeclHandler(p, s_doctype);
    if (XML_Parse(p, body, (int)n, 1) != XML_STATUS_OK && !r->bad) {
        r->bad = 1;
        snprintf(r->why, sizeof r->why, "malformed XML: %s at line %lu column %lu", XML_ErrorString(XML_GetErrorCode(p)),
                 (unsigned long)XML_GetCurrentLineNumber(p), (unsigned long)XML_GetCurrentColumnNumber(p));
    }
    XML_ParserFree(p);
    if (!r->bad && r->op < 0) {
        r->bad = 1;
        if (!r->why[0])
            snprintf(r->why, sizeof r->why, "the SOAP Body names no operation");
    }
    if (!r->bad && r->op == 1 && !r->have_enabled) {
        r->bad = 1;
        snprintf(r->why, sizeof r->why, "setEnabled needs <enabled>true|false</enabled>");
    }
}
#endif

/* ---- the HTTP server ---- */

/* Both buffers are consumed from the front by an offset, not by moving what is left after each request or
 * each send: a connection's cost stays linear in its bytes however deep its pipeline (moving the rest per
 * request made a deep pipeline cost CPU quadratically in the buffer's size). */
typedef struct {
    int fd;
    char *in;
    size_t in_off, in_n, in_cap; /* in[in_off, in_n) is unread by the parser */
    size_t scanned;              /* of that, bytes already searched for the header's end without finding it */
    size_t hlen, blen;           /* the current request's header and body length, once its header is whole */
    int want_in;                 /* the parser waits for bytes (0: a whole request waits for output room) */
    char *out;
    size_t out_n, out_off, out_cap; /* out[out_off, out_n) is unsent */
    int close_after;
    uint32_t events;   /* what epoll watches now: a MOD only when this changes */
    uint64_t t_req;    /* when the current request was complete */
    uint64_t t_start;  /* first byte of the request being read (0: none) */
    uint64_t t_head;   /* its header complete, its body not yet (0: not there) */
    uint64_t t_active; /* last byte read or written */
} mconn;

static void xml_escape(char *out, size_t cap, const char *s)
{
    size_t n = 0;
    for (; *s && n + 7 < cap; s++) {
        const char *e = *s == '<' ? "&lt;" : *s == '>' ? "&gt;" : *s == '&' ? "&amp;" : *s == '"' ? "&quot;" : NULL;
        if (e) {
            memcpy(out + n, e, strlen(e));
            n += strlen(e);
        } else
            out[n++] = *s;
    }
    out[n] = 0;
}

static void respond(mconn *c, int status, const char *ctype, const char *body, size_t blen, int close_after)
{
    const char *reason = status == 200   ? "OK"
                         : status == 400 ? "Bad Request"
                         : status == 404 ? "Not Found"
                         : status == 405 ? "Method Not Allowed"
                         : status == 408 ? "Request Timeout"
                         : status == 413 ? "Payload Too Large"
                         : status == 431 ? "Request Header Fields Too Large"
                         : status == 503 ? "Service Unavailable"
                                         : "Internal Server Error";
    char head[256];
    int hn = snprintf(head, sizeof head,
                      "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: %s\r\n\r\n", status,
                      reason, ctype, blen, close_after ? "close" : "keep-alive");
    size_t need = (size_t)hn + blen, unsent = c->out_n - c->out_off;
    /* drop what is sent when that moves no more than it frees (amortized: a byte moves at most once per
     * byte sent), or when it makes the room this response needs without growing the buffer */
    if (c->out_off && (c->out_off >= unsent || c->out_n + need > c->out_cap)) {
        memmove(c->out, c->out + c->out_off, unsent);
        c->out_n = unsent;
        c->out_off = 0;
    }
    if (c->out_n + need > c->out_cap) {
        size_t cap = c->out_cap ? c->out_cap : 4096;
        while (cap < c->out_n + need)
            cap *= 2;
        char *o = realloc(c->out, cap);
        if (!o)
            return;
        c->out = o;
        c->out_cap = cap;
    }
    memcpy(c->out + c->out_n, head, (size_t)hn);
    memcpy(c->out + c->out_n + hn, body, blen);
    c->out_n += need;
    c->close_after |= close_after;
}

static void fault(svc_mgmt *m, mconn *c, int status, const char *code, const char *why, int close_after)
{
    char esc[512], body[1024];
    xml_escape(esc, sizeof esc, why);
    int n = snprintf(body, sizeof body,
                     "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<soap:Envelope xmlns:soap=\"" SOAP_ENV
                     "\"><soap:Body><soap:Fault><faultcode>soap:%s</faultcode><faultstring>%s</faultstring>"
                     "</soap:Fault></soap:Body></soap:Envelope>\n",
                     code, esc);
    m->faults++;
    respond(c, status, "text/xml; charset=utf-8", body, (size_t)n, close_after);
}

static void soap_call(svc_mgmt *m, svc_shared *sh, mconn *c, const char *body, size_t n, int close_after)
{
#if BK_HAVE_EXPAT
    soap_req r;
    parse_soap(body, n, &r);
    if (r.bad) {
        m->malformed++;
        fault(m, c, 500, "Client", r.why, close_after);
        return;
    }
    char out[1024];
    int len;
    const char *head = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<soap:Envelope xmlns:soap=\"" SOAP_ENV
                       "\"><soap:Body>";
    const char *tail = "</soap:Body></soap:Envelope>\n";
    m->ops[r.op]++;
    if (r.op == 0) {
        svc_fix f;
        pthread_mutex_lock(&sh->mu);
        f = sh->fix;
        pthread_mutex_unlock(&sh->mu);
        len = snprintf(out, sizeof out,
                       "%s<m:getPositionResponse xmlns:m=\"" SVC_MGMT_NS "\"><m:latitudeDeg>%.7f</m:latitudeDeg>"
                       "<m:longitudeDeg>%.7f</m:longitudeDeg><m:altitudeM>%.2f</m:altitudeM><m:fix>%d</m:fix>"
                       "</m:getPositionResponse>%s",
                       head, f.lat_deg, f.lon_deg, f.alt_m, f.fix, tail);
    } else if (r.op == 1) {
        sh->enabled = r.enabled;
        len = snprintf(out, sizeof out,
                       "%s<m:setEnabledResponse xmlns:m=\"" SVC_MGMT_NS "\"><m:enabled>%s</m:enabled>"
                       "</m:setEnabledResponse>%s",
                       head, sh->enabled ? "true" : "false", tail);
    } else
        len = snprintf(out, sizeof out,
                       "%s<m:getStatusResponse xmlns:m=\"" SVC_MGMT_NS "\"><m:enabled>%s</m:enabled>"
                       "<m:uptimeS>%.3f</m:uptimeS><m:messagesSent>%llu</m:messagesSent>"
                       "<m:requestsServed>%llu</m:requestsServed></m:getStatusResponse>%s",
                       head, sh->enabled ? "true" : "false", (double)(svc_now() - sh->start_ns) / 1e9,
                       (unsigned long long)sh->messages_sent, (unsigned long long)m->requests, tail);
    m->responses_ok++;
    respond(c, 200, "text/xml; charset=utf-8", out, (size_t)len, close_after);
#else
    (void)sh, (void)body, (void)n;
    fault(m, c, 500, "Server", "built without expat: cannot parse SOAP", close_after);
#endif
}

static const char *find_header(const char *head, size_t n, const char *name)
{
    size_t ln = strlen(name);
    for (const char *p = head; p && p < head + n;) {
        const char *eol = memmem(p, (size_t)(head + n - p), "\r\n", 2);
        if (!eol)
            break;
        if ((size_t)(eol - p) > ln && strncasecmp(p, name, ln) == 0 && p[ln] == ':') {
            const char *v = p + ln + 1;
            while (*v == ' ' || *v == '\t')
                v++;
            return v;
        }
        p = eol + 2;
    }
    return NULL;
}

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
        fault(m, c, 431, "Client", "request header larger than 8192 bytes", 1);
        return -1;
    }
    const char *cl = find_header(p, hlen, "Content-Length");
    long long blen = 0;
    if (cl) {
        char *e;
        blen = strtoll(cl, &e, 10);
        if (e == cl || blen < 0) {
            m->malformed++;
            fault(m, c, 400, "Client", "bad Content-Length", 1);
            return -1;
        }
    }
    if (blen > m->max_request_bytes) {
        char why[128];
        snprintf(why, sizeof why, "request body of %lld bytes exceeds the limit of %lld bytes", blen,
                 (long long)m->max_request_bytes);
        m->too_large++;
        fault(m, c, 413, "Client", why, 1);
        return -1;
    }
    c->hlen = hlen;
    c->blen = (size_t)blen;
    return 0;
}

/* Answers the whole request at in_off (header hlen, body blen bytes). */
static void serve_one(svc_mgmt *m, svc_shared *sh, mconn *c, size_t hlen, size_t blen)
{
    const char *p = c->in + c->in_off;
    const char *conn_h = find_header(p, hlen, "Connection");
    int close_after = !m->keepalive || (conn_h && strncasecmp(conn_h, "close", 5) == 0) ||
                      memmem(p, hlen < 16 ? hlen : 16, "HTTP/1.0", 8) != NULL;
    if (strncmp(p, "GET ", 4) == 0) {
        const char *sp = memchr(p + 4, ' ', hlen - 4);
        size_t tl = sp ? (size_t)(sp - p - 4) : 0;
        if (tl >= 5 && memcmp(p + 4 + tl - 5, "?wsdl", 5) == 0) {
            char w[sizeof wsdl_fmt + 128];
            int wn = snprintf(w, sizeof w, wsdl_fmt, m->bind_addr, m->port);
            m->responses_ok++;
            respond(c, 200, "text/xml; charset=utf-8", w, (size_t)wn, close_after);
        } else
            fault(m, c, 404, "Client", "not found: GET serves only ?wsdl; POST SOAP requests to /vdm", close_after);
    } else if (strncmp(p, "POST ", 5) == 0)
        soap_call(m, sh, c, p + hlen, blen, close_after);
    else
        fault(m, c, 405, "Client", "method not allowed: use POST (SOAP) or GET ?wsdl", 1);
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
                    fault(m, c, 431, "Client", "request header larger than 8192 bytes", 1);
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
            c->want_in = 1;            /* the body is still coming */
            return;
        }
        c->t_req = svc_now();
        m->requests++;
        serve_one(m, sh, c, hlen, c->blen);
        consume_request(c, hlen + c->blen);
        c->t_head = 0;
        c->t_start = c->in_n ? c->t_req : 0; /* a pipelined request: its clock starts now */
        if (c->close_after)
            return;
    }
}

static void conn_close(int ep, mconn *c)
{
    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
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

/* A connection over the cap, or one accepted with the spare descriptor: a clear 503 and close, without
 * keeping anything. What the client sent already is read first, so the close does not reset the 503. */
static void refuse(svc_mgmt *m, int fd, const char *why)
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
    shutdown(fd, SHUT_WR);
    close(fd);
    m->refused++;
}

typedef struct {
    int ep, lfd, spare; /* spare: a descriptor held back to accept and refuse when none are left */
    mconn **all;        /* every open connection (at most m->conn_limit) */
    size_t nall;
    uint64_t accept_resume; /* accepting paused until then (0: accepting) */
} mserver;

static void server_drop(mserver *sv, mconn *c)
{
    for (size_t k = 0; k < sv->nall; k++)
        if (sv->all[k] == c) {
            sv->all[k] = sv->all[--sv->nall];
            break;
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
                    refuse(m, fd, "the server is out of file descriptors; try again later");
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
            refuse(m, fd, "too many connections; try again later");
            continue;
        }
        mconn *nc = calloc(1, sizeof *nc);
        mconn **na = realloc(sv->all, (sv->nall + 1) * sizeof *sv->all);
        if (na)
            sv->all = na;
        if (!nc || !na) {
            free(nc);
            refuse(m, fd, "the server is out of memory; try again later");
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
            fault(m, c, 408, "Client",
                  c->t_head ? "the request body did not arrive in time" : "the request header did not arrive in time",
                  1);
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
    free(sv.all);
    close(sv.ep);
    close(sv.lfd);
    if (sv.spare >= 0)
        close(sv.spare);
    return 0;
}

void svc_mgmt_json(const svc_mgmt *mc, bk_json *j)
{
    svc_mgmt *m = (svc_mgmt *)mc; /* the summary sorts the samples in place */
    bk_json_begin_object(j);
    bk_json_key(j, "schema");
    bk_json_int(j, SVC_SCHEMA);
    bk_json_key(j, "role");
    bk_json_str(j, "mgmt");
    bk_json_key(j, "keepalive");
    bk_json_bool(j, m->keepalive);
    bk_json_key(j, "nodelay");
    bk_json_bool(j, m->nodelay);
    bk_json_key(j, "connections");
    bk_json_uint(j, m->connections);
    bk_json_key(j, "requests");
    bk_json_uint(j, m->requests);
    bk_json_key(j, "responses_ok");
    bk_json_uint(j, m->responses_ok);
    bk_json_key(j, "faults");
    bk_json_uint(j, m->faults);
    bk_json_key(j, "malformed");
    bk_json_uint(j, m->malformed);
    bk_json_key(j, "too_large");
    bk_json_uint(j, m->too_large);
    bk_json_key(j, "stalls");
    bk_json_uint(j, m->stalls);
    bk_json_key(j, "refused"); /* 503: over the connection limit or out of descriptors */
    bk_json_uint(j, m->refused);
    bk_json_key(j, "timeouts"); /* 408: a header or body not in time */
    bk_json_uint(j, m->timeouts);
    bk_json_key(j, "idle_closed");
    bk_json_uint(j, m->idle_closed);
    bk_json_key(j, "output_stalls"); /* serving paused: a peer not reading its responses */
    bk_json_uint(j, m->output_stalls);
    bk_json_key(j, "accept_backoffs");
    bk_json_uint(j, m->accept_backoffs);
    bk_json_key(j, "limits");
    bk_json_begin_object(j);
    bk_json_key(j, "max_connections");
    bk_json_int(j, m->conn_limit);
    bk_json_key(j, "max_request_bytes");
    bk_json_int(j, m->max_request_bytes);
    bk_json_key(j, "max_output_bytes");
    bk_json_int(j, m->max_output_bytes);
    bk_json_key(j, "header_timeout_ms");
    bk_json_int(j, m->header_timeout_ms);
    bk_json_key(j, "body_timeout_ms");
    bk_json_int(j, m->body_timeout_ms);
    bk_json_key(j, "idle_timeout_ms");
    bk_json_int(j, m->idle_timeout_ms);
    bk_json_end_object(j);
    bk_json_key(j, "rt_priority");
    bk_json_int(j, m->rt_errno ? 0 : m->rt_priority);
    bk_json_key(j, "rt_priority_error");
    bk_json_str(j, m->rt_errno ? strerror(m->rt_errno) : NULL);
    bk_json_key(j, "operations");
    bk_json_begin_object(j);
    for (int i = 0; i < 3; i++) {
        bk_json_key(j, op_names[i]);
        bk_json_uint(j, m->ops[i]);
    }
    bk_json_end_object(j);
    svc_json_summary(j, "service_ns", &m->service_ns);
    bk_json_key(j, "error");
    bk_json_str(j, m->error[0] ? m->error : NULL);
    bk_json_end_object(j);
}

/* ---- svc.mgmt ---- */

typedef struct {
    svc_mgmt m;
    svc_shared sh;
    uint64_t t0, t_end;
} mgmt_state;

static const bk_param mgmt_params[] = {
    {"bind_addr", BK_STR, 0, 0, "127.0.0.1", NULL, NULL, "address to listen on (loopback by default)"},
    {"port", BK_INT, 1, 65535, "18080", NULL, NULL, "TCP port"},
    {"duration_s", BK_FLOAT, 0.05, 604800, "10", NULL, "s", "how long to serve"},
    {"keepalive", BK_INT, 0, 1, "1", NULL, NULL, "1: HTTP/1.1 persistent connections; 0: close after each response"},
    {"nodelay", BK_INT, 0, 1, "1", NULL, NULL, "1: TCP_NODELAY (no Nagle + delayed-ACK stalls on small responses)"},
    {"max_request_bytes", BK_INT, 256, 64 * 1048576.0, "65536", NULL, "bytes",
     "larger request bodies get a SOAP fault (HTTP 413) and the connection closes"},
    {"max_connections", BK_INT, 1, 1048576, "256", NULL, NULL,
     "open connections at most (lowered to RLIMIT_NOFILE - 32); more get HTTP 503 and are closed"},
    {"max_output_bytes", BK_INT, 4096, 64 * 1048576.0, "65536", NULL, "bytes",
     "unsent responses per connection at most: past it the connection is not read until its peer reads"},
    {"header_timeout_ms", BK_INT, 1, 3600000, "10000", NULL, "ms",
     "a request header not complete this long after its first byte gets HTTP 408 and the connection closes"},
    {"body_timeout_ms", BK_INT, 1, 3600000, "10000", NULL, "ms",
     "a request body not complete this long after its header gets HTTP 408 and the connection closes"},
    {"idle_timeout_ms", BK_INT, 1, 86400000, "60000", NULL, "ms",
     "a connection idle this long, or whose peer reads none of its responses for this long, closes"},
    {"stall_every_ms", BK_INT, 0, 3600000, "0", NULL, "ms", "fault injection: freeze the server this often (0: never)"},
    {"stall_ms", BK_INT, 0, 60000, "200", NULL, "ms", "how long each injected freeze lasts"},
    {"rt_priority", BK_INT, 0, 99, "0", NULL, NULL,
     "SCHED_FIFO priority (needs root or RLIMIT_RTPRIO): wake-ups not queued behind busy tasks; 0: normal"},
    {0},
};

static const bk_metric mgmt_metrics[] = {
    {"requests_per_s", "1/s", true, BK_VALUE, -1, 1, "requests served per second of the run"},
    {"service_p50_ns", "ns", false, BK_VALUE, -1, 1, "median time from a complete request to its response written"},
    {0},
};


static int mgmt_init(bk_ctx *ctx, void **state)
{
    mgmt_state *s = calloc(1, sizeof *s);
    if (!s)
        return bk_fail(ctx, "out of memory");
    *state = s;
    snprintf(s->m.bind_addr, sizeof s->m.bind_addr, "%s", bk_arg_str(ctx, "bind_addr"));
    s->m.port = (int)bk_arg_int(ctx, "port");
    s->m.duration_s = bk_arg_float(ctx, "duration_s");
    s->m.keepalive = (int)bk_arg_int(ctx, "keepalive");
    s->m.nodelay = (int)bk_arg_int(ctx, "nodelay");
    s->m.max_request_bytes = bk_arg_int(ctx, "max_request_bytes");
    s->m.max_connections = bk_arg_int(ctx, "max_connections");
    s->m.max_output_bytes = bk_arg_int(ctx, "max_output_bytes");
    s->m.header_timeout_ms = bk_arg_int(ctx, "header_timeout_ms");
    s->m.body_timeout_ms = bk_arg_int(ctx, "body_timeout_ms");
    s->m.idle_timeout_ms = bk_arg_int(ctx, "idle_timeout_ms");
    s->m.stall_every_ms = bk_arg_int(ctx, "stall_every_ms");
    s->m.stall_ms = bk_arg_int(ctx, "stall_ms");
    s->m.rt_priority = (int)bk_arg_int(ctx, "rt_priority");
    pthread_mutex_init(&s->sh.mu, NULL);
    s->sh.enabled = 1;
    s->sh.fix = (svc_fix){.lat_deg = 42.5133, .lon_deg = -83.0261, .alt_m = 190.0, .fix = 1};
    return 0;
}

static int mgmt_serve(bk_ctx *ctx, void *state)
{
    mgmt_state *s = state;
    svc_install_stop();
    if (s->m.rt_priority)
        s->m.rt_errno = svc_rt_priority(s->m.rt_priority);
    s->sh.start_ns = s->t0 = svc_now();
    int rc = svc_mgmt_loop(&s->m, &s->sh, NULL);
    s->t_end = svc_now();
    return rc ? bk_fail(ctx, "%s", s->m.error) : 0;
}

static int mgmt_verify(bk_ctx *ctx, void *state)
{
    mgmt_state *s = state;
    double secs = (double)(s->t_end - s->t0) / 1e9;
    bk_set_value(ctx, "requests_per_s", secs > 0 ? (double)s->m.requests / secs : 0);
    if (s->m.service_ns.n)
        bk_set_value(ctx, "service_p50_ns", svc_percentile(&s->m.service_ns, 50));
    else
        bk_skip_metric(ctx, "service_p50_ns", "no request was served");
    bk_set_checksum(ctx, s->m.requests);
    return 0;
}

static void mgmt_json(void *state, bk_json *j) { svc_mgmt_json(&((mgmt_state *)state)->m, j); }

static void mgmt_fini(void *state)
{
    mgmt_state *s = state;
    if (s)
        svc_samples_free(&s->m.service_ns);
    free(s);
}

const bk_kernel bk_svc_mgmt = {
    .name = "svc.mgmt",
    .family = "svc",
    .summary = "SOAP 1.1 management endpoint over HTTP/1.1 (getPosition, setEnabled, getStatus; WSDL at ?wsdl)",
    .params = mgmt_params,
    .metrics = mgmt_metrics,
    .supported = svc_expat_reason,
    .init = mgmt_init,
    .verify = mgmt_verify,
    .fini = mgmt_fini,
    .serve = mgmt_serve,
    .serve_json = mgmt_json,
};

/* ---- svc.load: the load generator ---- */

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
    {"rt_priority", BK_INT, 0, 99, "0", NULL, NULL,
     "SCHED_FIFO priority (needs root or RLIMIT_RTPRIO): wake-ups not queued behind busy tasks; 0: normal"},
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
        const char *outcome = q->status == 200 ? "ok"
                              : q->status > 0  ? "http_error"
                              : q->status == LREQ_ERROR ? "error"
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
    const char *cl = find_header(c->in, hlen, "Content-Length");
    unsigned long long blen = cl ? strtoull(cl, NULL, 10) : 0;
    if (blen > sizeof c->in - hlen)
        return -1; /* no response of ours is that large (and hlen + blen must not wrap) */
    if (c->in_n < hlen + (size_t)blen)
        return 0;
    *status = c->in_n > 12 ? atoi(c->in + 9) : 0;
    const char *ch = find_header(c->in, hlen, "Connection");
    if (!s->keepalive || (ch && strncasecmp(ch, "close", 5) == 0))
        load_drop(s, c);
    else
        c->in_n = 0;
    (void)s;
    return 1;
}

static int load_init(bk_ctx *ctx, void **state)
{
    load_state *s = calloc(1, sizeof *s);
    if (!s)
        return bk_fail(ctx, "out of memory");
    *state = s;
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
    uint64_t rng = s->seed * 0x9E3779B97F4A7C15ULL + 1;
    s->t0 = svc_now() + 2000000;
    s->t_sched_end = s->t0 + (uint64_t)(s->duration_s * 1e9);
    uint64_t next = s->t0; /* open loop: intended start of the next request */
    uint64_t due = 0; /* open loop: requests whose intended start has come but that have not started */
    uint64_t due_first = 0; /* intended start of the oldest of those */
    uint64_t *queue = NULL; /* their intended starts, FIFO */
    size_t qh = 0, qt = 0, qcap = 0;
    double per_conn_period = s->rate_hz > 0 ? 1e9 * s->conns / s->rate_hz : 0;
    for (int i = 0; i < s->conns; i++)
        s->c[i].next_tick = s->t0 + (uint64_t)(per_conn_period * i / s->conns);
    uint64_t timeout_ns = (uint64_t)s->timeout_ms * 1000000ULL;
    struct epoll_event evs[128];
    int busy = 0;
    (void)due_first;
    for (;;) {
        uint64_t now = svc_now();
        /* open loop: every intended start before the end is issued, however late the loop runs */
        int issuing = !svc_stop && (s->open_loop ? next < s->t_sched_end : now < s->t_sched_end);
        if (s->open_loop) {
            while (issuing && next <= now && next < s->t_sched_end) {
                if (qt == qcap) {
                    size_t nc = qcap ? qcap * 2 : 1024;
                    uint64_t *q = realloc(queue, nc * sizeof *q);
                    if (!q)
                        break;
                    queue = q;
                    qcap = nc;
                }
                queue[qt++] = next;
                s->scheduled++;
                double gap = s->poisson ? -log(1.0 - bk_rand_unit(&rng)) * 1e9 / s->rate_hz : 1e9 / s->rate_hz;
                next = s->t0 + (uint64_t)((double)(next - s->t0) + gap);
                if (!s->poisson) /* no drift: the i-th start is t0 + i/rate exactly */
                    next = s->t0 + (uint64_t)((double)s->scheduled * 1e9 / s->rate_hz);
            }
            due = qt - qh;
            for (int i = 0; i < s->conns && due; i++)
                if (s->c[i].state == C_IDLE) {
                    load_start(s, &s->c[i], queue[qh++], svc_now());
                    due--;
                    busy += s->c[i].state == C_BUSY;
                }
        } else if (issuing) {
            for (int i = 0; i < s->conns; i++) {
                lconn *c = &s->c[i];
                if (c->state == C_IDLE && c->next_tick <= now) {
                    uint64_t tick = per_conn_period > 0 ? c->next_tick : now;
                    s->scheduled++;
                    load_start(s, c, tick, svc_now());
                    busy += c->state == C_BUSY;
                    /* the study's client: the next call at the next tick, or at once when this one ran over */
                    c->next_tick = per_conn_period > 0 ? tick + (uint64_t)per_conn_period : 0;
                }
            }
        }
        /* request timeouts */
        now = svc_now();
        for (int i = 0; i < s->conns; i++)
            if (s->c[i].state == C_BUSY && now - s->c[i].start > timeout_ns) {
                s->timeouts++;
                rec(s, s->c[i].intended, s->c[i].start, now, LREQ_TIMEOUT);
                load_drop(s, &s->c[i]);
                s->c[i].state = C_IDLE;
                busy--;
            }
        int pending = s->open_loop ? (qt > qh) : 0;
        if (!issuing && busy == 0 && !pending)
            break;
        if (!issuing && now > s->t_sched_end + timeout_ns + 1000000000ULL)
            break; /* drain limit */
        /* next wake: the next intended start (open loop) or the earliest idle connection's tick */
        uint64_t wake = UINT64_MAX;
        if (issuing && s->open_loop && next < s->t_sched_end)
            wake = next;
        if (issuing && !s->open_loop)
            for (int i = 0; i < s->conns; i++)
                if (s->c[i].state == C_IDLE && s->c[i].next_tick < wake)
                    wake = s->c[i].next_tick;
        if (issuing && wake > s->t_sched_end)
            wake = s->t_sched_end;
        arm(s, wake == UINT64_MAX ? (issuing ? s->t_sched_end : UINT64_MAX) : wake);
        int n = epoll_wait(s->ep, evs, 128, busy ? 10 : 100);
        for (int e = 0; e < n; e++) {
            lconn *c = evs[e].data.ptr;
            if (!c) {
                uint64_t x;
                while (read(s->tfd, &x, sizeof x) > 0)
                    ;
                continue;
            }
            if (c->state != C_BUSY) {
                /* an idle keep-alive connection the server closed: reopen on next use */
                char b[256];
                if (recv(c->fd, b, sizeof b, MSG_DONTWAIT) <= 0 && errno != EAGAIN)
                    load_drop(s, c);
                continue;
            }
            if (evs[e].events & EPOLLOUT && c->out_off < s->req_n)
                load_push(s, c);
            if (c->state != C_BUSY) {
                busy--;
                continue;
            }
            if (!(evs[e].events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
                continue;
            int status = 0, r = load_read(s, c, &status);
            if (r == 0)
                continue;
            uint64_t done = svc_now();
            c->state = C_IDLE;
            busy--;
            if (r < 0) {
                s->errors++;
                rec(s, c->intended, c->start, done, LREQ_ERROR);
                load_err(s, "the server closed the connection without a response");
                load_drop(s, c);
                continue;
            }
            rec(s, c->intended, c->start, done, status);
            if (status != 200) {
                s->errors++;
                char w[64];
                snprintf(w, sizeof w, "HTTP status %d", status);
                load_err(s, w);
                continue;
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
            if (!svc_stop && s->open_loop && qt > qh) {
                load_start(s, c, queue[qh++], svc_now());
                busy += c->state == C_BUSY;
            }
        }
    }
    s->t_end = svc_now();
    /* requests still queued when the drain limit hit never started: they count as timeouts */
    if (s->open_loop) {
        s->timeouts += qt - qh;
        for (size_t i = qh; i < qt; i++)
            rec(s, queue[i], 0, 0, LREQ_NOT_STARTED);
    }
    free(queue);
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
    bk_json_begin_object(j);
    bk_json_key(j, "schema");
    bk_json_int(j, SVC_SCHEMA);
    bk_json_key(j, "role");
    bk_json_str(j, "load");
    bk_json_key(j, "mode");
    bk_json_str(j, s->open_loop ? "open" : "closed");
    bk_json_key(j, "arrival");
    bk_json_str(j, s->open_loop ? (s->poisson ? "poisson" : "constant") : NULL);
    bk_json_key(j, "target_rate_hz");
    bk_json_num(j, s->rate_hz);
    bk_json_key(j, "connections");
    bk_json_int(j, s->conns);
    bk_json_key(j, "keepalive");
    bk_json_bool(j, s->keepalive);
    bk_json_key(j, "duration_ns");
    bk_json_uint(j, s->t_sched_end - s->t0);
    bk_json_key(j, "scheduled");
    bk_json_uint(j, s->scheduled);
    bk_json_key(j, "sent");
    bk_json_uint(j, s->sent);
    bk_json_key(j, "ok");
    bk_json_uint(j, s->ok);
    bk_json_key(j, "errors");
    bk_json_uint(j, s->errors);
    bk_json_key(j, "timeouts");
    bk_json_uint(j, s->timeouts);
    bk_json_key(j, "late_starts");
    bk_json_uint(j, s->late);
    bk_json_key(j, "late_threshold_ns");
    bk_json_uint(j, (uint64_t)s->late_us * 1000ULL);
    bk_json_key(j, "connects");
    bk_json_uint(j, s->connects);
    bk_json_key(j, "rt_priority");
    bk_json_int(j, s->rt_errno ? 0 : s->rt_priority);
    bk_json_key(j, "rt_priority_error");
    bk_json_str(j, s->rt_errno ? strerror(s->rt_errno) : NULL);
    double span = fmax(s->duration_s, s->t_last > s->t0 ? (double)(s->t_last - s->t0) / 1e9 : 0);
    bk_json_key(j, "achieved_rate_hz");
    bk_json_num(j, span > 0 ? (double)s->ok / span : 0);
    /* requests sent per second between the first and the last send: how well the starts kept the rate */
    bk_json_key(j, "start_rate_hz");
    bk_json_num(j, s->sent > 1 && s->last_start > s->first_start
                       ? (double)(s->sent - 1) * 1e9 / (double)(s->last_start - s->first_start)
                       : NAN);
    svc_json_summary(j, "corrected_ns", &s->corrected_ns);
    svc_json_summary(j, "service_ns", &s->service_ns);
    svc_json_summary(j, "start_lag_ns", &s->start_lag_ns);
    bk_json_key(j, "first_error");
    bk_json_str(j, s->first_error[0] ? s->first_error : NULL);
    bk_json_key(j, "samples_path");
    bk_json_str(j, s->samples_path[0] && !s->samples_error[0] ? s->samples_path : NULL);
    bk_json_key(j, "samples_error");
    bk_json_str(j, s->samples_error[0] ? s->samples_error : NULL);
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
    free(s);
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
