"""stream.knee: the knee of stream.pipeline's offered-rate sweep, the highest source-paced (push) input rate
the pipeline sustains without dropping a record, by binary search over fresh runs."""

from __future__ import annotations

from boardlab.model.workload import MetricSpec, ParamSpec, WorkloadSpec

SPEC = WorkloadSpec(
    name="stream.knee",
    family="stream",
    summary="Knee of stream.pipeline's offered-rate sweep: highest push rate with zero drops (binary search)",
    runner="python",
    params=(
        ParamSpec("lo_bit_s", "float", "1e6", 1e3, 1e12, unit="bit/s", help="lowest offered rate tried"),
        ParamSpec("hi_bit_s", "float", "1e10", 1e3, 1e12, unit="bit/s", help="highest offered rate tried"),
        ParamSpec("block_bytes", "int", "16384", 1024, 65536, unit="bytes", help="record size"),
        ParamSpec("schedule", "enum", "threads", choices=("threads", "rtc"), help="as stream.pipeline"),
        ParamSpec("codec", "enum", "zstd", choices=("none", "zstd", "zlib", "lzma"), help="compress stage"),
        ParamSpec("cipher", "enum", "aes-256-gcm", choices=("none", "aes-256-gcm", "chacha20-poly1305")),
        ParamSpec("cap_bit_s", "float", "0", 0, 1e12, unit="bit/s", help="transmit rate cap (0: none)"),
        ParamSpec("ring_slots", "int", "8", 1, 4096, help="ring capacity between stages"),
        ParamSpec("resolution", "float", "0.05", 0.001, 0.5, help="relative width at which the search stops"),
        ParamSpec(
            "loss_tolerance_percent",
            "float",
            "0",
            0,
            100,
            unit="%",
            help="loss a trial may show and still pass (RFC 2544: 0)",
        ),
    ),
    metrics=(
        MetricSpec(
            "knee_bit_s", "bit/s", True, "value", help="highest offered input rate with no record dropped"
        ),
        MetricSpec("trials", "runs", False, "value", help="stream.pipeline runs the search took"),
    ),
    roles=("rate-search",),
)


def run(params: dict, iterations: int | None = None) -> dict:
    from boardlab.workloads.ratesearch import Trial, kern_trial, search_result

    def trial(rate: float) -> Trial:
        res = kern_trial(
            "stream.pipeline",
            {
                "flow": "push",
                "rate_bit_s": rate,
                "block_bytes": params["block_bytes"],
                "schedule": params["schedule"],
                "codec": params["codec"],
                "cipher": params["cipher"],
                "cap_bit_s": params["cap_bit_s"],
                "ring_slots": params["ring_slots"],
            },  # fmt: skip
            iterations=iterations or 5,
        )
        m = res["metrics"]
        return Trial(rate, m["drop_percent"]["value"], m["goodput_bit_s"]["value"],
                     {"records_dropped": res["info"]["records_dropped"]})  # fmt: skip

    return search_result(trial, params, "knee_bit_s", {"definition": "highest push rate with zero drops"})
