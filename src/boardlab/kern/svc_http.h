/* The management endpoint's HTTP/1.1 side, shared by its files (svc_http.c: responses, faults, headers;
 * svc_soap.c: the operations and the WSDL; svc_server.c: the connections) and by the load generator
 * (svc_load.c), which reads the same headers and sends the same envelopes. */
#ifndef BK_SVC_HTTP_H
#define BK_SVC_HTTP_H

#include "svc.h"

#include <stddef.h>
#include <stdint.h>

#define SOAP_ENV "http://schemas.xmlsoap.org/soap/envelope/"
#define MAX_HEADER_BYTES 8192

/* Both buffers are consumed from the front by an offset, not by moving what is left after each request or
 * each send: a connection's cost stays linear in its bytes however deep its pipeline (moving the rest per
 * request made a deep pipeline cost CPU quadratically in the buffer's size). */
typedef struct {
    int fd;
    char *in;
    size_t in_off, in_n, in_cap; /* in[in_off, in_n) is unread by the parser */
    size_t scanned; /* of that, bytes already searched for the header's end without finding it */
    size_t hlen, blen; /* the current request's header and body length, once its header is whole */
    int want_in; /* the parser waits for bytes (0: a whole request waits for output room) */
    char *out;
    size_t out_n, out_off, out_cap; /* out[out_off, out_n) is unsent */
    int close_after;
    int linger; /* ended by us after an error answer its peer may still send to: a lingering close */
    uint32_t events; /* what epoll watches now: a MOD only when this changes */
    uint64_t t_req; /* when the current request was complete */
    uint64_t t_start; /* first byte of the request being read (0: none) */
    uint64_t t_head; /* its header complete, its body not yet (0: not there) */
    uint64_t t_active; /* last byte read or written */
} mconn;

/* Appends a response (status line, headers, body) to the connection's output buffer. */
BK_HIDDEN void svc_http_respond(mconn *c, int status, const char *ctype, const char *body, size_t blen,
                                int close_after);
/* A SOAP fault with `why` XML-escaped as the response, counted in m->faults. */
BK_HIDDEN void svc_soap_fault(svc_mgmt *m, mconn *c, int status, const char *code, const char *why, int close_after);
/* Where the value of header `name` starts in the header block head[0, n) (NULL: absent). */
BK_HIDDEN const char *svc_http_header(const char *head, size_t n, const char *name);
/* Answers the whole request at in_off (header hlen, body blen bytes): the WSDL, a SOAP call or a fault. */
BK_HIDDEN void svc_soap_serve(svc_mgmt *m, svc_shared *sh, mconn *c, size_t hlen, size_t blen);

#endif
