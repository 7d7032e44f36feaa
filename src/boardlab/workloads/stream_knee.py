"""stream.knee: the knee of stream.pipeline's offered-rate sweep, the highest source-paced (push) input rate
the pipeline sustains without dropping a record, by binary search over fresh runs.

The source is the pipeline's own: the generator, or a feeder process over loopback UDP or TCP paced at the
rate tried, or a pty whose rate is its baud (the search then steps through the standard bauds). A trial
passes when no record was dropped and the goodput carried the offered payload rate to within
shortfall_percent: over TCP or a pty a receiver that falls behind holds its sender back instead of dropping,
and that rate is not sustained either."""

from __future__ import annotations

from boardlab.model.workload import MetricSpec, ParamSpec, WorkloadSpec
from boardlab.workloads.ratesearch import SEARCH_PARAMS

# The serial line rates stream.pipeline accepts for source=pty (its baud_speed table).
BAUDS = (1200, 2400, 4800, 9600, 19200, 38400, 57600, 115200, 230400, 460800, 921600)
WIRE_HEADER_BYTES = 16  # the feeder's frame header (magic, length, sequence number) ahead of each record

SPEC = WorkloadSpec(
    name="stream.knee",
    family="stream",
    summary="Knee of stream.pipeline's offered-rate sweep: highest push rate with zero drops (binary search)",
    runner="python",
    params=(
        ParamSpec(
            "lo_bit_s",
            "float",
            "1e6",
            1e3,
            1e12,
            unit="bit/s",
            help="lowest offered rate tried (source=pty: the lowest baud, line bit/s)",
        ),
        ParamSpec(
            "hi_bit_s",
            "float",
            "1e10",
            1e3,
            1e12,
            unit="bit/s",
            help="highest offered rate tried (source=pty: the highest baud, line bit/s)",
        ),
        ParamSpec(
            "source",
            "enum",
            "generator",
            choices=("generator", "udp", "tcp", "pty"),
            help="as stream.pipeline: the in-process generator, or a feeder over loopback udp/tcp or a pty",
        ),
        ParamSpec("block_bytes", "int", "16384", 1024, 65536, unit="bytes", help="record size"),
        ParamSpec("schedule", "enum", "threads", choices=("threads", "rtc"), help="as stream.pipeline"),
        ParamSpec("codec", "enum", "zstd", choices=("none", "zstd", "zlib", "lzma"), help="compress stage"),
        ParamSpec("cipher", "enum", "aes-256-gcm", choices=("none", "aes-256-gcm", "chacha20-poly1305")),
        ParamSpec("cap_bit_s", "float", "0", 0, 1e12, unit="bit/s", help="transmit rate cap (0: none)"),
        ParamSpec("ring_slots", "int", "8", 1, 4096, help="ring capacity between stages"),
        *SEARCH_PARAMS,
        ParamSpec(
            "shortfall_percent",
            "float",
            "10",
            0,
            100,
            unit="%",
            help="how far goodput may fall below the offered payload rate in a passing trial (the last "
            "record's trip through the stages in each timed iteration of >= 50 ms)",
        ),
    ),
    metrics=(
        MetricSpec(
            "knee_bit_s",
            "bit/s",
            True,
            "value",
            help="highest offered rate with no record dropped (the source's rate: rate_bit_s, or the baud)",
        ),
        MetricSpec("trials", "runs", False, "value", help="stream.pipeline runs the search took"),
    ),
    roles=("rate-search",),
)


def offered_payload_bit_s(source: str, rate: float, block_bytes: int) -> float:
    """Input bits per second the source offers at `rate`: the generator's rate is of records; a feeder's
    rate (a pty's baud, 8N1: 8 data bits in 10) also carries each record's frame header."""
    if source == "generator":
        return rate
    framed = block_bytes / (block_bytes + WIRE_HEADER_BYTES)
    return rate * (0.8 if source == "pty" else 1.0) * framed


def run(params: dict, iterations: int | None = None) -> dict:
    from boardlab.workloads.ratesearch import Trial, kern_trial, search_result, trial_metric

    source = params["source"]

    def trial(rate: float) -> Trial:
        res = kern_trial(
            "stream.pipeline",
            {
                "source": source,
                "flow": "push",
                **({"baud": int(rate)} if source == "pty" else {"rate_bit_s": rate}),
                "block_bytes": params["block_bytes"],
                "schedule": params["schedule"],
                "codec": params["codec"],
                "cipher": params["cipher"],
                "cap_bit_s": params["cap_bit_s"],
                "ring_slots": params["ring_slots"],
            },
            iterations=iterations or 5,
        )
        offered = offered_payload_bit_s(source, rate, params["block_bytes"])
        goodput = trial_metric(res, "goodput_bit_s")
        shortfall = 100 * (1 - goodput / offered) if offered > 0 else 0.0
        stages = ("receive", "filter", "compress", "encrypt", "transmit", "sink")
        info = {
            "records_dropped": res.info["records_dropped"],
            # Where the rate broke: a full ring's stage, the transmit's rate cap, or the receive's socket.
            "drops_by_stage": {s: res.info.get(f"stage.{s}.drops", 0) for s in stages},
            "offered_payload_bit_s": offered,
            "shortfall_percent": shortfall,
        }
        return Trial(
            rate, trial_metric(res, "drop_percent"), goodput, info, shortfall <= params["shortfall_percent"]
        )

    info = {"definition": "highest push rate with zero drops and goodput carrying the offered rate",
            "source": source}  # fmt: skip
    rates = None
    if source == "pty":
        rates = [float(b) for b in BAUDS if params["lo_bit_s"] <= b <= params["hi_bit_s"]]
        if not rates:
            return {"ok": False, "metrics": {},
                    "errors": [f"source=pty: no standard baud ({', '.join(map(str, BAUDS))}) lies in "
                               f"[lo_bit_s, hi_bit_s] = [{params['lo_bit_s']:g}, "
                               f"{params['hi_bit_s']:g}]"]}  # fmt: skip
        info["rates"] = "standard bauds"
    return search_result(trial, params, SPEC, info, rates)
