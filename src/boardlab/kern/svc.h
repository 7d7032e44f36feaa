/* Shared parts of the service roles (svc.pub, svc.sub, svc.mgmt, svc.nmea, svc.load): one clock, the stop
 * flag, growable sample arrays with their percentile summary, and the VICTORY-like message format.
 *
 * One file per role (svc_pub.c, svc_sub.c, svc_nmea.c, svc_mgmt.c, svc_load.c) over shared files that call no
 * role: svc_common.c (everything above the GPS line below), svc_gps.c (the GPS line), and the management
 * endpoint that svc.mgmt runs and svc.pub embeds (svc_server.c over svc_soap.c over svc_http.c, whose own
 * header is svc_http.h). tests/unit/test_unit_sizes.py checks that no call circle joins these files. */
#ifndef BK_SVC_H
#define BK_SVC_H

#include "core.h"

#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <termios.h>

#define SVC_SCHEMA 1
#define SVC_NS "urn:boardlab:vdm:1"
#define SVC_MGMT_NS "urn:boardlab:vdm:mgmt:1"

/* CLOCK_MONOTONIC: the clock of clock_nanosleep/timerfd schedules and of the send stamps in messages, so a
 * subscriber on the same host (any network namespace) computes one-way latency without clock offsets. */
BK_HIDDEN uint64_t svc_now(void);
BK_HIDDEN void svc_sleep_until(uint64_t t_ns);
/* SIGTERM/SIGINT set the stop flag so a role ends its loop and still prints its result. */
BK_HIDDEN void svc_install_stop(void);
BK_HIDDEN extern volatile sig_atomic_t svc_stop;
/* Timer slack 1 ns: the default 50 us slack shows up directly as schedule lag. */
BK_HIDDEN void svc_tight_timers(void);
/* SCHED_FIFO at `priority` (1-99) for a role whose timing must not wait behind CPU-bound neighbours (as
 * cyclictest runs): on a busy machine, a normal task's wake-up waits out others' slices and that wait shows
 * up as service time. The role blocks between events, so it does not starve the CPU. 0, or an errno
 * (EPERM without root or RLIMIT_RTPRIO). */
BK_HIDDEN int svc_rt_priority(int priority);
/* The parameter of a role that takes it, for its bk_param table. */
#define SVC_RT_PRIORITY_PARAM                                                                                          \
    {"rt_priority",                                                                                                    \
     BK_INT,                                                                                                           \
     0,                                                                                                                \
     99,                                                                                                               \
     "0",                                                                                                              \
     NULL,                                                                                                             \
     NULL,                                                                                                             \
     "SCHED_FIFO priority (needs root or RLIMIT_RTPRIO): wake-ups not queued behind busy tasks; 0: normal"}

/* At most SVC_SAMPLES_MAX samples are kept (8 MiB): beyond that a uniform reservoir (Algorithm R) replaces
 * kept ones, so a role's memory stays bounded however long it runs or however fast it is fed. The count,
 * mean and maximum stay exact; the percentiles come from the reservoir. */
#define SVC_SAMPLES_MAX (1u << 20)

typedef struct {
    uint64_t *v;
    size_t n, cap;
    uint64_t total, max_seen, rng; /* every sample pushed, the largest, the reservoir's generator */
    double sum;
} svc_samples;

BK_HIDDEN void svc_push(svc_samples *s, uint64_t x);
BK_HIDDEN void svc_samples_free(svc_samples *s);
/* Opens a role's "service" object with what every role's starts with: the schema and the role's name. */
BK_HIDDEN void svc_json_begin(bk_json *j, const char *role);
/* {"count", "mean", "p50", "p90", "p99", "p999", "max"} of the samples (sorted in place). */
BK_HIDDEN void svc_json_summary(bk_json *j, const char *key, svc_samples *s);
BK_HIDDEN double svc_percentile(svc_samples *s, double q); /* sorts; NAN when empty */

/* Message kinds carried on the data interface. */
enum { SVC_POSITION, SVC_ORIENTATION, SVC_DOT, SVC_RAW, SVC_KINDS };
BK_HIDDEN extern const char *const svc_kind_names[SVC_KINDS];

typedef struct {
    double lat_deg, lon_deg, alt_m;
    double heading_deg, pitch_deg, roll_deg;
    double course_deg, speed_mps;
    int fix;
} svc_fix;

/* Template serializer: writes the message with a fixed-width (20 digit) sentNs field, whose offset is
 * returned in *stamp_at so the send stamp is patched in after the build, just before sendto. */
BK_HIDDEN int svc_build_message(char *buf, size_t cap, int kind, uint64_t seq, const svc_fix *f, size_t *stamp_at);
BK_HIDDEN void svc_patch_stamp(char *buf, size_t stamp_at, uint64_t ns);

/* An IPv4 destination from a dotted address and port; -1 when the address does not parse. */
BK_HIDDEN int svc_dest_addr(const char *group, int port, struct sockaddr_in *sa);
/* The index of v in the comma-separated choices into *idx (0 when absent); v, or NULL when absent. */
BK_HIDDEN const char *svc_enum_choice(const char *choices, const char *v, int *idx);

/* Multicast sockets: a sender with IP_MULTICAST_IF (a fresh network namespace has no multicast route) and
 * a receiver joined to the group on that interface. Return the fd or -1 with errno set. */
BK_HIDDEN int svc_mcast_sender(const char *iface_addr, int ttl);
BK_HIDDEN int svc_mcast_receiver(const char *group, int port, const char *iface_addr, int rcvbuf_bytes);
/* NULL when built with expat (the XML parser of svc.sub and svc.mgmt), else why not. */
BK_HIDDEN const char *svc_expat_reason(void);

/* The GPS line (svc_gps.c), read by svc.pub and fed by svc.nmea. */
/* "$BODY*CS\r\n" from BODY; returns the length. */
BK_HIDDEN int svc_nmea_sentence(char *out, size_t cap, const char *body);
/* Updates the fix from GGA (position, altitude, fix quality) and RMC (course, speed): 0 when used, 1 when
 * valid but not used, -1 when the line is not a "$...*CS" sentence with a matching checksum. */
BK_HIDDEN int svc_nmea_apply(const char *line, svc_fix *f);
/* The termios speed of a baud rate; 0 when termios has none. */
BK_HIDDEN speed_t svc_baud_speed(int baud);
/* A serial line as a GPS uses it: `baud` 8N1, no flow control, raw output. */
BK_HIDDEN void svc_serial_8n1(struct termios *t, speed_t speed);

/* The management endpoint (svc_server.c, svc_soap.c). What it reads and controls: shared by a publisher and
 * its embedded endpoint. */
typedef struct {
    pthread_mutex_t mu;
    svc_fix fix; /* under mu */
    volatile int enabled; /* transmission on/off (setEnabled) */
    volatile uint64_t messages_sent;
    uint64_t start_ns;
} svc_shared;

typedef struct {
    char bind_addr[64];
    int port;
    int keepalive, nodelay;
    int64_t max_request_bytes;
    /* Limits of a server on an open network (svc_mgmt_defaults sets them; docs/services.md states them). */
    int64_t max_connections; /* more are answered 503 and closed (lowered to fit RLIMIT_NOFILE) */
    int64_t max_output_bytes; /* a connection with more unsent is not read until its peer reads */
    int64_t header_timeout_ms; /* from a request's first byte to its complete header */
    int64_t body_timeout_ms; /* from a complete header to the complete body */
    int64_t idle_timeout_ms; /* a connection with nothing to do, or whose peer reads nothing, closes */
    double duration_s;
    int64_t stall_every_ms, stall_ms; /* fault injection: the server blocks stall_ms every stall_every_ms */
    int rt_priority; /* SCHED_FIFO priority asked for (0: normal scheduling) */
    int rt_errno; /* why it was refused (0: granted or not asked) */
    /* results */
    uint64_t requests, responses_ok, faults, too_large, malformed, connections, stalls;
    uint64_t refused, timeouts, idle_closed, output_stalls, accept_backoffs;
    int64_t conn_limit; /* max_connections as lowered to fit the descriptor limit */
    uint64_t ops[3];
    svc_samples service_ns; /* request fully read -> response written */
    char error[256];
} svc_mgmt;

/* The default limits (those of svc.mgmt's parameters), for an endpoint embedded in another role. */
BK_HIDDEN void svc_mgmt_defaults(svc_mgmt *m);
/* Runs the SOAP endpoint until its duration ends or svc_stop; 0 ok, -1 with m->error set. `ready` is
 * printed on stderr once listening (a launcher waits for it). */
BK_HIDDEN int svc_mgmt_loop(svc_mgmt *m, svc_shared *sh, volatile int *stop_also);
BK_HIDDEN void svc_mgmt_json(const svc_mgmt *m, bk_json *j);

#endif
