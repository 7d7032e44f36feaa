/* perf_event_open counters around the measured iterations; see counters.h for the LIST syntax. */
#include "counters.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if BK_HAVE_PERF_EVENT
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#endif

/* perf_event_attr.type values, so that parsing works where the header is missing too. */
enum { T_HARDWARE = 0, T_RAW = 4 };
enum { HW_CPU_CYCLES = 0, HW_INSTRUCTIONS = 1 };

static bool arm_core(void)
{
#if defined(__arm__) || defined(__aarch64__)
    return true;
#else
    return false;
#endif
}

static bool parse_u64(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (end == s || *end || errno || *s == '-')
        return false;
    *out = v;
    return true;
}

static bool add(bk_counters *cs, const char *name, uint32_t type, uint64_t config, int cpu)
{
    if (cs->n == BK_MAX_COUNTERS)
        return false;
    bk_counter *c = &cs->c[cs->n++];
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    c->type = type;
    c->config = config;
    c->cpu = cpu;
    c->fd = -1;
    return true;
}

static bool parse_item(bk_counters *cs, char *item, char *err, size_t errlen)
{
    const char *fix = "use instructions, cycles, bus_access, cpu_cycles, raw:0xNN or NAME=TYPE:CONFIG[@CPU]";
    uint64_t v, t;
    bool ok = true;
    if (strcmp(item, "instructions") == 0)
        ok = add(cs, item, T_HARDWARE, HW_INSTRUCTIONS, -1);
    else if (strcmp(item, "cycles") == 0)
        ok = add(cs, item, T_HARDWARE, HW_CPU_CYCLES, -1);
    else if (strcmp(item, "bus_access") == 0 || strcmp(item, "cpu_cycles") == 0) {
        /* ARMv7/v8 PMU common events; another architecture's raw 0x19 would count something else. */
        ok = add(cs, item, T_RAW, item[0] == 'b' ? 0x19 : 0x11, -1);
        if (ok && !arm_core())
            snprintf(cs->c[cs->n - 1].unsupported, sizeof cs->c[0].unsupported,
                     "%s is an ARMv7/v8 PMU event (raw 0x%s); this CPU is not ARM", item, item[0] == 'b' ? "19" : "11");
    } else if (strncmp(item, "raw:", 4) == 0) {
        if (!parse_u64(item + 4, &v)) {
            snprintf(err, errlen, "--counters: '%s' needs a number after raw: (e.g. raw:0x19)", item);
            return false;
        }
        ok = add(cs, item, T_RAW, v, -1);
    } else {
        char *eq = strchr(item, '=');
        char *colon = eq ? strchr(eq, ':') : NULL;
        if (!eq || !colon || eq == item || (size_t)(eq - item) >= sizeof cs->c[0].name) {
            snprintf(err, errlen, "--counters: unknown counter '%s'; %s", item, fix);
            return false;
        }
        *eq = *colon = '\0';
        char *at = strchr(colon + 1, '@');
        int cpu = -1;
        if (at) {
            *at = '\0';
            uint64_t c;
            if (!parse_u64(at + 1, &c) || c > 4095) {
                snprintf(err, errlen, "--counters: '%s': CPU after @ must be a CPU number", item);
                return false;
            }
            cpu = (int)c;
        }
        if (!parse_u64(eq + 1, &t) || t > UINT32_MAX || !parse_u64(colon + 1, &v)) {
            snprintf(err, errlen, "--counters: '%s': TYPE and CONFIG must be numbers (NAME=TYPE:CONFIG[@CPU])", item);
            return false;
        }
        ok = add(cs, item, (uint32_t)t, v, cpu);
    }
    if (!ok)
        snprintf(err, errlen, "--counters: at most %d counters", BK_MAX_COUNTERS);
    return ok;
}

bool bk_counters_parse(bk_counters *cs, const char *list, char *err, size_t errlen)
{
    cs->n = 0;
    char *copy = strdup(list);
    if (!copy) {
        snprintf(err, errlen, "--counters: out of memory");
        return false;
    }
    bool ok = true;
    char *save = NULL;
    for (char *item = strtok_r(copy, ",", &save); item && ok; item = strtok_r(NULL, ",", &save)) {
        ok = parse_item(cs, item, err, errlen);
        for (int i = 0; ok && i < cs->n - 1; i++)
            if (strcmp(cs->c[i].name, cs->c[cs->n - 1].name) == 0) {
                snprintf(err, errlen, "--counters: '%s' is listed twice", cs->c[i].name);
                ok = false;
            }
    }
    if (ok && cs->n == 0) {
        snprintf(err, errlen, "--counters: empty list; e.g. --counters instructions,cycles");
        ok = false;
    }
    free(copy);
    return ok;
}

static const char *errno_name(int e)
{
    switch (e) {
    case ENOENT: return "ENOENT";
    case ENODEV: return "ENODEV";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    case EACCES: return "EACCES";
    case EPERM: return "EPERM";
    case EINVAL: return "EINVAL";
    case ENOSYS: return "ENOSYS";
    case EBUSY: return "EBUSY";
    case EMFILE: return "EMFILE";
    default: return "errno";
    }
}

static const char *errno_hint(int e)
{
    switch (e) {
    case ENOENT:
    case ENODEV:
    case EOPNOTSUPP: return "no such hardware event here (no PMU, or a VM without a virtual PMU)";
    case EACCES:
    case EPERM: return "not allowed: lower kernel.perf_event_paranoid or run as root";
    case ENOSYS: return "the kernel has no perf_event support";
    default: return "perf_event_open failed";
    }
}

void bk_counters_open(bk_counters *cs)
{
    for (int i = 0; i < cs->n; i++) {
        bk_counter *c = &cs->c[i];
        if (c->unsupported[0])
            continue;
#if BK_HAVE_PERF_EVENT
        struct perf_event_attr attr;
        memset(&attr, 0, sizeof attr);
        attr.size = sizeof attr;
        attr.type = c->type;
        attr.config = c->config;
        attr.disabled = 1;
        attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
        if (c->cpu < 0) {
            attr.inherit = 1; /* threads the kernel creates after this are counted too */
            attr.exclude_kernel = 1; /* legal at perf_event_paranoid = 2; the kernel's own work is measured */
            attr.exclude_hv = 1;
        }
        long fd = syscall(SYS_perf_event_open, &attr, c->cpu < 0 ? 0 : -1, c->cpu, -1, PERF_FLAG_FD_CLOEXEC);
        if (fd < 0) {
            int e = errno;
            snprintf(c->unsupported, sizeof c->unsupported, "%s (%s): %s", errno_name(e), strerror(e), errno_hint(e));
            continue;
        }
        c->fd = (int)fd;
#else
        snprintf(c->unsupported, sizeof c->unsupported, "built without linux/perf_event.h");
#endif
    }
}

void bk_counters_start(bk_counters *cs)
{
#if BK_HAVE_PERF_EVENT
    for (int i = 0; i < cs->n; i++)
        if (cs->c[i].fd >= 0) {
            ioctl(cs->c[i].fd, PERF_EVENT_IOC_RESET, 0);
            ioctl(cs->c[i].fd, PERF_EVENT_IOC_ENABLE, 0);
        }
#else
    (void)cs;
#endif
}

void bk_counters_stop(bk_counters *cs)
{
#if BK_HAVE_PERF_EVENT
    for (int i = 0; i < cs->n; i++) {
        bk_counter *c = &cs->c[i];
        if (c->fd < 0)
            continue;
        ioctl(c->fd, PERF_EVENT_IOC_DISABLE, 0);
        uint64_t v[3];
        ssize_t got = read(c->fd, v, sizeof v);
        if (got != (ssize_t)sizeof v) {
            snprintf(c->unsupported, sizeof c->unsupported, "reading the counter failed (%s)",
                     got < 0 ? strerror(errno) : "short read");
            continue;
        }
        c->count = v[0];
        c->time_enabled_ns = v[1];
        c->time_running_ns = v[2];
        c->read_ok = true;
        if (v[2] == 0 && v[1] > 0)
            snprintf(c->unsupported, sizeof c->unsupported,
                     "the counter never ran (all PMU counters busy: multiplexed out for %" PRIu64 " ns)", v[1]);
    }
#else
    (void)cs;
#endif
}

void bk_counters_close(bk_counters *cs)
{
    for (int i = 0; i < cs->n; i++)
        if (cs->c[i].fd >= 0) {
            close(cs->c[i].fd);
            cs->c[i].fd = -1;
        }
}

void bk_counters_json(const bk_counters *cs, bk_json *j)
{
    bk_json_begin_object(j);
    for (int i = 0; i < cs->n; i++) {
        const bk_counter *c = &cs->c[i];
        bk_json_key_object(j, c->name);
        if (c->unsupported[0] || !c->read_ok) {
            bk_json_kv_str(j, "unsupported",
                           c->unsupported[0] ? c->unsupported : "not read: the measured iterations did not run");
        } else {
            bk_json_kv_uint(j, "count", c->count);
            bk_json_kv_uint(j, "time_enabled_ns", c->time_enabled_ns);
            bk_json_kv_uint(j, "time_running_ns", c->time_running_ns);
        }
        bk_json_end_object(j);
    }
    bk_json_end_object(j);
}

void bk_counters_print(const bk_counters *cs, FILE *out)
{
    for (int i = 0; i < cs->n; i++) {
        const bk_counter *c = &cs->c[i];
        if (c->unsupported[0] || !c->read_ok)
            fprintf(out, "  counter %-22s unsupported: %s\n", c->name, c->unsupported[0] ? c->unsupported : "not read");
        else
            fprintf(out, "  counter %-22s %" PRIu64 " (running %.0f%% of the time)\n", c->name, c->count,
                    c->time_enabled_ns ? 100.0 * (double)c->time_running_ns / (double)c->time_enabled_ns : 0.0);
    }
}
