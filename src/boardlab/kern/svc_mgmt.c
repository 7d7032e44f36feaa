/* svc.mgmt: the management interface on its own (SOAP 1.1 over HTTP/1.1 with its WSDL), served by
 * svc_server.c over a fixed position; the role sets its parameters and reports. */
#include "svc.h"

#include <stdio.h>
#include <stdlib.h>

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
    SVC_RT_PRIORITY_PARAM,
    {0},
};

static const bk_metric mgmt_metrics[] = {
    {"requests_per_s", "1/s", true, BK_VALUE, -1, 1, "requests served per second of the run"},
    {"service_p50_ns", "ns", false, BK_VALUE, -1, 1, "median time from a complete request to its response written"},
    {0},
};

static int mgmt_init(bk_ctx *ctx, void **state)
{
    mgmt_state *s = bk_run_state(ctx, state, sizeof *s);
    if (!s)
        return -1;
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
