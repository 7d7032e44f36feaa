/* HTTP/1.1 messages of the management endpoint (svc_http.h): a response appended to a connection's output
 * buffer, a SOAP fault as the response, and a header's value. They call nothing in the other svc files. */
#include "svc_http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

void svc_http_respond(mconn *c, int status, const char *ctype, const char *body, size_t blen, int close_after)
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
    c->linger |= close_after && status >= 400; /* its request may not be read whole: linger before the close */
}

void svc_soap_fault(svc_mgmt *m, mconn *c, int status, const char *code, const char *why, int close_after)
{
    char esc[512], body[1024];
    xml_escape(esc, sizeof esc, why);
    int n = snprintf(body, sizeof body,
                     "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<soap:Envelope xmlns:soap=\"" SOAP_ENV
                     "\"><soap:Body><soap:Fault><faultcode>soap:%s</faultcode><faultstring>%s</faultstring>"
                     "</soap:Fault></soap:Body></soap:Envelope>\n",
                     code, esc);
    m->faults++;
    svc_http_respond(c, status, "text/xml; charset=utf-8", body, (size_t)n, close_after);
}

const char *svc_http_header(const char *head, size_t n, const char *name)
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
