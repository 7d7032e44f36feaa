"""The stream preset parses here and covers every table of the data-stream study's report section."""

from __future__ import annotations

from boardlab.campaign.plan import load_plan
from boardlab.workloads import all_workloads


def test_the_stream_preset_names_every_data_stream_workload():
    plan = load_plan(None, "stream", {w.name: w for w in all_workloads()})
    names = {w.name for w in plan.workloads}
    assert names >= {"compute.gemm", "compute.linpack", "io.storage", "io.net", "stream.pipeline", "io.dma",
                     "io.net_zeroloss", "stream.knee"}  # fmt: skip
    assert plan.runs.unsupported == "skip"  # io.dma without a DMA engine is skipped with its reason
    storage = next(w for w in plan.workloads if w.name == "io.storage")
    assert len(storage.params["bs"]) >= 3  # a throughput-by-block-size curve
    # Instructions per bit from retired instructions; without counters each run says why (the report's
    # reason).
    assert plan.runs.counters == ("instructions",)
    knee = next(w for w in plan.workloads if w.name == "stream.knee")
    assert "udp" in knee.params["source"]  # the knee from a real source, not only the generator


def test_each_io_net_cell_is_judged_by_a_metric_its_mode_reports():
    plan = load_plan(None, "stream", {w.name: w for w in all_workloads()})
    rr = next(w for w in plan.workloads if w.name == "io.net" and w.params.get("mode") == "tcp_rr")
    assert rr.metric == "transactions_s"


def test_peer_points_every_io_net_entry_at_a_net_sink_on_that_host():
    import pytest

    from boardlab.campaign.plan import apply_overrides
    from boardlab.errors import InputError

    catalog = {w.name: w for w in all_workloads()}
    plan = apply_overrides(load_plan(None, "stream", catalog), catalog, peer="192.168.7.2")
    peers = {w.name: w.params.get("peer") for w in plan.workloads}
    assert {p for w, p in peers.items() if w == "io.net"} == {"192.168.7.2:7300"}  # the sink's default port
    assert all(p is None for w, p in peers.items() if w != "io.net")  # only what takes a peer
    assert plan.source.endswith("# command-line overrides: peer = 192.168.7.2\n")  # recorded with the plan
    plan = apply_overrides(load_plan(None, "stream", catalog), catalog, peer="10.0.0.5:9000")
    assert {w.params["peer"] for w in plan.workloads if w.name == "io.net"} == {"10.0.0.5:9000"}
    for bad, why in (("board.local", "expected an IPv4 address"), ("10.0.0.5:0", "port must be a number")):
        with pytest.raises(InputError, match=why):
            apply_overrides(load_plan(None, "stream", catalog), catalog, peer=bad)
    with pytest.raises(InputError, match="no workload of this plan sends to a network peer"):
        apply_overrides(load_plan(None, "quick", catalog), catalog, peer="10.0.0.5")
