/* Hardware counters around the measured iterations (--counters LIST).
 *
 * LIST is comma-separated; each item is one of
 *   instructions | cycles            generic hardware events (PERF_TYPE_HARDWARE)
 *   bus_access | cpu_cycles          ARMv7/v8 PMU common events 0x19 / 0x11 (PERF_TYPE_RAW)
 *   raw:0xNN                         a raw event of the core PMU
 *   NAME=TYPE:CONFIG[@CPU]           any PMU by its sysfs type number (e.g. a CCI-400 uncore event);
 *                                    with @CPU it counts system-wide on that CPU (uncore PMUs need it)
 * Core events are opened per thread on this process (inherit: threads the kernel starts are counted too),
 * enabled just before the first measured iteration and disabled after the last. An event that does not
 * open is reported as unsupported with the errno, never dropped. */
#ifndef BK_COUNTERS_H
#define BK_COUNTERS_H

#include "core.h"
#include "json.h"

#define BK_MAX_COUNTERS 16

typedef struct {
    char name[64];
    uint32_t type;
    uint64_t config;
    int cpu; /* -1: this process's threads; >= 0: system-wide on that CPU */
    int fd;
    char unsupported[160];
    uint64_t count, time_enabled_ns, time_running_ns;
    bool read_ok;
} bk_counter;

typedef struct {
    int n;
    bk_counter c[BK_MAX_COUNTERS];
} bk_counters;

/* Parses LIST; on bad syntax writes one line naming the item and the fix to `err` and returns false. */
BK_HIDDEN bool bk_counters_parse(bk_counters *cs, const char *list, char *err, size_t errlen);
/* Opens every counter disabled (failures become unsupported reasons); then enable / disable / read. */
BK_HIDDEN void bk_counters_open(bk_counters *cs);
BK_HIDDEN void bk_counters_start(bk_counters *cs);
BK_HIDDEN void bk_counters_stop(bk_counters *cs);
BK_HIDDEN void bk_counters_close(bk_counters *cs);
BK_HIDDEN void bk_counters_json(const bk_counters *cs, bk_json *j);
BK_HIDDEN void bk_counters_print(const bk_counters *cs, FILE *out);

#endif
