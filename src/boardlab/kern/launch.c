/* boardlab-kern launch: the program launcher of the campaign runner (boardlab/platform/launcher.py).

   A program workload's run is one execution of the user's program, so what stands between the runner and
   that program is the figure's error. Started from Python, each spawn cost 0.4 ms of interpreter work and two
   thread migrations (the runner's thread moved onto the measured CPU and back), and the timed span included
   Python's own wake-ups. This process lives for a campaign, pinned where the programs run, and does for each
   run what hyperfine's loop does: the clock, posix_spawn (glibc's vfork: nothing copied), a wait on the
   program's pidfd, the clock. The runner writes a request and is woken once for a short program: 'S' is
   sent when the program has run `tell_after_ns` (the monitor's first sample is due), or with 'F' if it ended
   first. A runner woken at the spawn to name the pid to its monitor ran beside the program: that made the
   stored time of a 0.7 ms `/bin/true` about 0.25 ms longer than hyperfine's.

   Protocol (native byte order; the two ends are one machine): stdin carries requests, stdout replies.
     at start   -> 'L' u32 protocol
     'R' u32 length, then: i64 timeout_ns, i64 tell_after_ns, u32 ncpus, u32 cpu[ncpus], u32 argc, argc
         NUL-ended strings
                -> 'S' i32 pid, i64 t0_ns (CLOCK_MONOTONIC, just before the spawn)
                   or 'E' i32 errno (it could not start; nothing else follows)
                -> 'F' i64 wall_ns, i32 wait status, u8 timed_out, i64 x7 rusage, u32 n, n bytes of stderr's end
     'I' i64 grace_ns, while a program runs: SIGINT to its group, SIGKILL after grace_ns; it is reaped and
         this process ends without a reply (a stop of boardlab: Ctrl-C or SIGTERM); between runs it ends.
   The program: its own process group, stdin and stdout /dev/null, stderr a pipe whose last 64 KiB are kept,
   SIGPIPE and SIGXFSZ at their defaults. Its wall time runs from just before the spawn to the moment its
   pidfd is readable (it exited), as hyperfine's does; what it left running in its group is killed then; at
   `timeout_ns` the whole group is killed; it is reaped at once (the runner's monitor may be told its pid
   after that: a short program ends before the runner has read 'S'). stdin's end (the runner died, SIGKILL included) kills the program's
   group at once: this process is the runner's orphan guard for the programs it starts. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core_internal.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434 /* one number on every architecture since Linux 5.3 */
#endif

#define LAUNCH_PROTOCOL 2
#define REQUEST_MAX (1u << 20) /* an argv of a megabyte: far beyond any ARG_MAX a program is given */
#define STDERR_KEEP (64u << 10) /* the end of the program's stderr kept for a failed run's error */
#define DRAIN_NS 1000000000LL /* after its exit, how long stderr is read (a process outside its group may hold it) */

extern char **environ;

typedef struct {
    int64_t timeout_ns, tell_after_ns;
    cpu_set_t cpus;
    bool pin;
    char **argv;
    char *body;
} request;

typedef struct {
    char buf[2 * STDERR_KEEP];
    size_t len;
} tail;

static int64_t now_ns(void) { return (int64_t)bk_clock_ns(CLOCK_MONOTONIC); }

static void take(const char **p, void *out, size_t n)
{
    memcpy(out, *p, n);
    *p += n;
}

/* The request's fields out of its body; false (and why on stderr) when it is malformed. */
static bool parse_request(request *rq, uint32_t len)
{
    const char *p = rq->body, *end = rq->body + len;
    uint32_t ncpus, argc;
    if (len < 24)
        return false;
    take(&p, &rq->timeout_ns, 8);
    take(&p, &rq->tell_after_ns, 8);
    take(&p, &ncpus, 4);
    if (ncpus > (uint32_t)(end - p - 4) / 4)
        return false;
    CPU_ZERO(&rq->cpus);
    for (uint32_t i = 0; i < ncpus; i++) {
        uint32_t cpu;
        take(&p, &cpu, 4);
        if (cpu < CPU_SETSIZE)
            CPU_SET(cpu, &rq->cpus);
    }
    rq->pin = ncpus > 0;
    take(&p, &argc, 4);
    if (argc == 0 || argc > (uint32_t)(end - p))
        return false;
    rq->argv = calloc(argc + 1, sizeof(char *));
    if (!rq->argv)
        return false;
    for (uint32_t i = 0; i < argc; i++) {
        const char *nul = memchr(p, '\0', (size_t)(end - p));
        if (!nul)
            return false;
        rq->argv[i] = (char *)p;
        p = nul + 1;
    }
    return p == end;
}

/* 1: a request; 0: the runner closed stdin or stopped (the campaign is over); -1: a broken message. */
static int read_request(request *rq)
{
    char kind;
    uint32_t len;
    int r = bk_read_full(0, &kind, 1);
    if (r <= 0 || kind == 'I') /* a stop between runs: nothing runs to be interrupted */
        return r <= 0 ? r : 0;
    if (kind != 'R' || bk_read_full(0, &len, 4) != 1 || len > REQUEST_MAX)
        return -1;
    rq->body = malloc(len ? len : 1);
    if (!rq->body || bk_read_full(0, rq->body, len) != 1)
        return -1;
    return parse_request(rq, len) ? 1 : -1;
}

static void keep_tail(tail *t, int fd, bool *open)
{
    if (t->len > STDERR_KEEP) { /* keep the last STDERR_KEEP bytes, room for one more read */
        memmove(t->buf, t->buf + t->len - STDERR_KEEP, STDERR_KEEP);
        t->len = STDERR_KEEP;
    }
    ssize_t r = read(fd, t->buf + t->len, sizeof t->buf - t->len);
    if (r < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (r <= 0)
        *open = false;
    else
        t->len += (size_t)r;
}

static int spawn(const request *rq, int err_w, pid_t *pid)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGPIPE); /* ignored here, so a dead runner's pipe is an error, not a death */
    sigaddset(&defaults, SIGXFSZ);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, err_w, 2);
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setsigmask(&attr, &none);
    int rc = posix_spawnp(pid, rq->argv[0], &fa, &attr, rq->argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    return rc;
}

typedef struct {
    int64_t t0, exited; /* exited: 0 while it runs */
    int64_t kill_at; /* after a stop's SIGINT, when SIGKILL follows (0: none due) */
    bool timed_out, told, stopped;
} span;

#define STARTED_SIZE 13

/* 'S', the pid and the clock before its spawn, into msg[STARTED_SIZE]. */
static void put_started(char *msg, pid_t pid, int64_t t0)
{
    int32_t p = (int32_t)pid;
    msg[0] = 'S';
    memcpy(msg + 1, &p, 4);
    memcpy(msg + 5, &t0, 8);
}

static bool reply_started(pid_t pid, int64_t t0)
{
    char msg[STARTED_SIZE];
    put_started(msg, pid, t0);
    return bk_write_full(1, msg, sizeof msg) == 0;
}

static bool reply_error(int err)
{
    char msg[5] = {'E'};
    int32_t e = err;
    memcpy(msg + 1, &e, 4);
    return bk_write_full(1, msg, sizeof msg) == 0;
}

/* 'F' (after 'S' in the same write when it was not sent yet: the runner must not see 'S' alone and take the
   program for running). */
static bool reply_finished(const span *s, pid_t pid, int status, const struct rusage *ru, const tail *t)
{
    int64_t wall = s->exited - s->t0;
    int32_t st = status;
    uint8_t killed = s->timed_out;
    int64_t usage[7] = {
        (int64_t)ru->ru_utime.tv_sec * 1000000 + ru->ru_utime.tv_usec,
        (int64_t)ru->ru_stime.tv_sec * 1000000 + ru->ru_stime.tv_usec,
        ru->ru_maxrss,
        ru->ru_minflt,
        ru->ru_majflt,
        ru->ru_nvcsw,
        ru->ru_nivcsw,
    };
    size_t keep = t->len < STDERR_KEEP ? t->len : STDERR_KEEP;
    uint32_t n = (uint32_t)keep;
    char head[STARTED_SIZE + 1 + 8 + 4 + 1 + sizeof usage + 4];
    char *p = head;
    if (!s->told)
        put_started(head, pid, s->t0), p += STARTED_SIZE;
    *p++ = 'F';
    memcpy(p, &wall, 8), p += 8;
    memcpy(p, &st, 4), p += 4;
    memcpy(p, &killed, 1), p += 1;
    memcpy(p, usage, sizeof usage), p += sizeof usage;
    memcpy(p, &n, 4), p += 4;
    return bk_write_full(1, head, (size_t)(p - head)) == 0 && bk_write_full(1, t->buf + t->len - keep, keep) == 0;
}

/* When this wait must next act: stderr's drain once the program exited; else the earliest of its timeout,
   the 'S' due at tell_after_ns (negative: only with 'F') and a stop's SIGKILL. -1: none. */
static int64_t next_deadline(const request *rq, const span *s)
{
    if (s->exited)
        return s->exited + DRAIN_NS;
    int64_t due[3] = {s->timed_out ? -1 : s->t0 + rq->timeout_ns,
                      s->told || rq->tell_after_ns < 0 ? -1 : s->t0 + rq->tell_after_ns, s->kill_at ? s->kill_at : -1};
    int64_t until = -1;
    for (int i = 0; i < 3; i++)
        if (due[i] >= 0 && (until < 0 || due[i] < until))
            until = due[i];
    return until;
}

/* What is due by `now` while the program runs: the kill at its timeout, the 'S' reply, a stop's SIGKILL. */
static void act_on_deadlines(pid_t pid, const request *rq, span *s, int64_t now)
{
    if (!s->timed_out && now >= s->t0 + rq->timeout_ns) {
        s->timed_out = true;
        killpg(pid, SIGKILL);
    }
    if (s->kill_at && now >= s->kill_at) {
        s->kill_at = 0;
        killpg(pid, SIGKILL);
    }
    if (!s->told && rq->tell_after_ns >= 0 && now >= s->t0 + rq->tell_after_ns) {
        s->told = true;
        if (!reply_started(pid, s->t0)) /* the runner is gone: its stdin's end follows */
            killpg(pid, SIGKILL);
    }
}

/* The runner wrote while its program runs. 'I': a stop (SIGINT now, SIGKILL after its grace). False: stdin
   ended or carried something else (the runner is gone, or disagrees): the group is killed. */
static bool runner_said(pid_t pid, span *s)
{
    char kind = 0;
    int64_t grace_ns = 0;
    if (s->stopped || bk_read_full(0, &kind, 1) != 1 || kind != 'I' || bk_read_full(0, &grace_ns, 8) != 1) {
        killpg(pid, SIGKILL);
        return false;
    }
    s->stopped = true;
    killpg(pid, SIGINT);
    s->kill_at = now_ns() + (grace_ns > 0 ? grace_ns : 0);
    return true;
}

/* Waits for the program's exit (killing its group at the deadline) and for its stderr's end (at most
   DRAIN_NS more; none after a stop), sending 'S' when it is due. False: the runner's end of stdin closed
   meanwhile (the program's group is killed). */
static bool await_end(pid_t pid, int pidfd, int err_r, const request *rq, span *s, tail *t)
{
    bool err_open = true;
    struct pollfd fds[3] = {{pidfd, POLLIN, 0}, {err_r, POLLIN, 0}, {0, POLLIN, 0}};
    while (!s->exited || (err_open && !s->stopped)) {
        if (!s->exited)
            act_on_deadlines(pid, rq, s, now_ns());
        int64_t until = next_deadline(rq, s), now = now_ns();
        if (s->exited && now >= until)
            break; /* its stderr is held open by something outside its group */
        fds[0].fd = s->exited ? -1 : pidfd;
        fds[1].fd = err_open ? err_r : -1;
        int ms = until < 0 ? -1 : until <= now ? 0 : (int)((until - now + 999999) / 1000000);
        if (poll(fds, 3, ms) < 0) {
            if (errno == EINTR)
                continue;
            killpg(pid, SIGKILL);
            return false;
        }
        if (fds[0].revents) {
            s->exited = now_ns();
            killpg(pid, SIGKILL); /* what it left running in its group (a daemon, a background job) */
        }
        if (fds[1].revents)
            keep_tail(t, err_r, &err_open);
        if (fds[2].revents && !runner_said(pid, s))
            return false;
    }
    return true;
}

/* One request served. False: the campaign is over (or the runner gone): this process ends. The program
   inherits this thread's CPUs: the request's, else those this process started with (`initial`). */
static bool serve(const request *rq, const cpu_set_t *initial, tail *t)
{
    int err[2];
    pid_t pid;
    if (sched_setaffinity(0, sizeof(cpu_set_t), rq->pin ? &rq->cpus : initial) != 0)
        return reply_error(errno);
    if (pipe2(err, O_CLOEXEC) != 0)
        return reply_error(errno);
    span s = {.t0 = now_ns()};
    int rc = spawn(rq, err[1], &pid);
    close(err[1]);
    if (rc != 0) {
        close(err[0]);
        return reply_error(rc);
    }
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pidfd < 0) { /* checked at start: only a lack of descriptors gets here */
        int e = errno;
        killpg(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        close(err[0]);
        return reply_error(e);
    }
    t->len = 0;
    bool alive = await_end(pid, pidfd, err[0], rq, &s, t);
    close(pidfd);
    close(err[0]);
    if (!alive) { /* its group is killed; this process's exit leaves its zombie to init */
        killpg(pid, SIGKILL);
        return false;
    }
    int status = 0;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) < 0) { /* its own child: it cannot fail; -1 says so if it does */
        status = -1;
        memset(&ru, 0, sizeof ru);
    }
    if (s.stopped) /* reaped; the runner reads no reply after a stop */
        return false;
    return reply_finished(&s, pid, status, &ru, t);
}

int bk_launch_main(int argc, char **argv)
{
    (void)argv;
    if (argc != 0 || isatty(0)) {
        fprintf(stderr, "usage: boardlab-kern launch\n"
                        "  the campaign runner's program launcher: it speaks a binary protocol on stdin and stdout\n"
                        "  (see boardlab/platform/launcher.py) and is started by boardlab, not by hand\n");
        return 2;
    }
    int self = (int)syscall(SYS_pidfd_open, getpid(), 0);
    if (self < 0) {
        fprintf(stderr, "boardlab-kern launch: pidfd_open: %s (Linux before 5.3)\n", strerror(errno));
        return 1;
    }
    close(self);
    signal(SIGPIPE, SIG_IGN);
    uint32_t proto = LAUNCH_PROTOCOL;
    char hello[5] = {'L'};
    memcpy(hello + 1, &proto, 4);
    if (bk_write_full(1, hello, sizeof hello) != 0)
        return 1;
    static tail t; /* 128 KiB: off the stack of a small board's thread */
    cpu_set_t initial;
    if (sched_getaffinity(0, sizeof initial, &initial) != 0) {
        fprintf(stderr, "boardlab-kern launch: sched_getaffinity: %s\n", strerror(errno));
        return 1;
    }
    for (;;) {
        request rq = {0};
        int r = read_request(&rq);
        bool more = r == 1 && serve(&rq, &initial, &t);
        free(rq.argv);
        free(rq.body);
        if (r < 0)
            fprintf(stderr, "boardlab-kern launch: a malformed request: the runner and this binary disagree\n");
        if (!more)
            return r < 0 ? 2 : 0;
    }
}
