"""io.net_zeroloss: the highest paced UDP rate io.net sends without losing a datagram (RFC 2544 throughput),
by binary search over fresh io.net runs; each lossy trial's loss is explained from /proc/net/snmp."""

from __future__ import annotations

from boardlab.model.workload import MetricSpec, ParamSpec, WorkloadSpec
from boardlab.workloads.ratesearch import SEARCH_PARAMS

SPEC = WorkloadSpec(
    name="io.net_zeroloss",
    family="io",
    summary="Zero-loss UDP throughput by binary search of io.net's offered rate (RFC 2544), loss explained",
    runner="python",
    params=(
        ParamSpec("lo_bit_s", "float", "1e6", 1e3, 1e12, unit="bit/s", help="lowest offered rate tried"),
        ParamSpec("hi_bit_s", "float", "1e9", 1e3, 1e12, unit="bit/s", help="highest offered rate tried"),
        ParamSpec("udp_bytes", "int", "1400", 32, 65507, unit="bytes", help="datagram payload"),
        *SEARCH_PARAMS,
        ParamSpec("sink_cpu", "int", "-1", -1, 4095, help="CPU of the receiver (-1: not pinned)"),
        ParamSpec("sink_addr", "str", "127.0.0.1:0", help="where the receiver listens"),
        ParamSpec("sockbuf_bytes", "int", "0", 0, 1 << 30, unit="bytes", help="socket buffers (0: default)"),
    ),
    metrics=(
        MetricSpec(
            "zero_loss_bit_s", "bit/s", True, "value", help="highest offered rate with no datagram lost"
        ),
        MetricSpec("trials", "runs", False, "value", help="io.net runs the search took"),
    ),
    roles=("rate-search",),
)


def run(params: dict, iterations: int | None = None) -> dict:
    from boardlab.platform.netstat import read_snmp, udp_loss_between
    from boardlab.workloads.ratesearch import Trial, kern_trial, search_result, trial_metric

    def trial(rate: float) -> Trial:
        before = read_snmp("/")
        res = kern_trial(
            "io.net",
            {
                "mode": "udp_stream",
                "rate_bit_s": rate,
                "udp_bytes": params["udp_bytes"],
                "sink_cpu": params["sink_cpu"],
                "sink_addr": params["sink_addr"],
                "sockbuf_bytes": params["sockbuf_bytes"],
            },
            iterations=iterations or 5,
        )
        why = udp_loss_between(before, read_snmp("/"))
        lost = int(res.info.get("lost_datagrams", 0))
        info = {"lost_datagrams": lost, "explained": why.text(lost) if why else "no /proc/net/snmp"}
        return Trial(rate, trial_metric(res, "loss_percent"), trial_metric(res, "goodput_bit_s"), info)

    return search_result(trial, params, SPEC, {"definition": "RFC 2544 26.1: highest rate with no loss"})
