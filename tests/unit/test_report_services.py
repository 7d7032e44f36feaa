"""The services report section's tables from known cells (what the services study shows, not how)."""

from __future__ import annotations

from boardlab.analysis.studies.services import ServiceCell, sections, tables
from boardlab.report.render import render_sections


def markdown_lines(cells):
    return render_sections(sections(None, cells), "md").splitlines() if cells else []


def text_lines(cells):
    return render_sections(sections(None, cells), "text").splitlines() if cells else []


def cells() -> list[ServiceCell]:
    return [
        ServiceCell(
            "a",
            "position",
            {"source": "nmea", "read_mode": "byte"},
            "baseline",
            "baseline",
            5,
            metrics={"cpu_pct_one_cpu": 0.5, "oneway_p50_ns": 61_700.0, "tx_p50_ns": 15_900.0, "lost": 0.0},
            per_service_cpu_pct={"position": 0.4, "sub": 0.1},
        ),
        ServiceCell(
            "b",
            "soap",
            {"mode": "closed", "rate_hz": 200.0, "keepalive": 1},
            "baseline",
            "baseline",
            5,
            metrics={"achieved_rate_hz": 200.0, "corrected_p99_ns": 3_176_000.0},
        ),
        ServiceCell(
            "c",
            "soap-saturation",
            {"keepalive": 0},
            "baseline",
            "baseline",
            5,
            knee_rate_hz=6400.0,
            sweep={
                100.0: {"achieved_rate_hz": 100.0, "corrected_p99_ns": 4.7e6, "saturated": 0.0},
                12800.0: {"achieved_rate_hz": 8942.0, "corrected_p99_ns": 3.2e8, "saturated": 4.0},
            },
        ),
    ]


def test_each_scenario_lands_in_its_table_with_units_in_the_headers():
    got = {title: (headers, rows) for title, headers, rows in tables(cells())}
    data = got["Data services (VICTORY-like messages over UDP multicast)"]
    assert data[1][0][0] == "Position, nmea (byte reads)" and data[1][0][9] == "61.7"  # oneway_p50_us
    assert data[0][4:6] == ("rss_MiB", "pss_MiB")  # PSS beside RSS
    assert data[1][0][-1] == "position 0.400, sub 0.100"
    soap = got["SOAP management endpoint: latency per rate"]
    assert (
        soap[1][0][:3] == ("SOAP closed loop 200 Hz, keep-alive", "5", "200.0") and soap[1][0][4] == "3.176"
    )
    knee = got["SOAP saturation knee (open loop)"]
    assert knee[1][0][:3] == ("SOAP open loop to saturation, no keep-alive", "5", "6400")
    sweep = next(v for k, v in got.items() if k.startswith("SOAP open loop: latency per rate"))
    assert [r[1] for r in sweep[1]] == ["100", "12800"] and sweep[1][1][-1] == "4"
    latency = [h for hs, _ in got.values() for h in hs if "p50" in h or "p99" in h]
    assert latency and all(h.endswith(("_us", "_ms")) for h in latency)  # units in every latency column


def test_renderers_add_the_section_and_the_energy_note():
    md = "\n".join(markdown_lines(cells()))
    assert "## Vehicle services" in md and "Energy per message and power at rest vs operating:" in md
    assert "Vehicle services" in "\n".join(text_lines(cells()))
    assert markdown_lines([]) == [] and text_lines([]) == []


def test_tx_stamps_and_power_at_rest_vs_operating_get_their_columns_and_table():
    rest = ServiceCell(
        "r", "rest", {}, "baseline", "baseline", 5, metrics={"power_rest_w": 2.0}, power_source="rapl"
    )
    operating = ServiceCell(
        "o",
        "operating",
        {},
        "baseline",
        "baseline",
        5,
        metrics={
            "power_rest_w": 2.0,
            "power_operating_w": 3.5,
            "power_delta_w": 1.5,
            "energy_per_message_j": 0.0075,
        },
        power_source="rapl",
    )
    got = {title: (headers, rows) for title, headers, rows in tables([*cells(), rest, operating])}
    headers, rows = got["Data services (VICTORY-like messages over UDP multicast)"]
    assert headers.index("tx_p50_us") == headers.index("send_p50_us") + 1 and rows[0][8] == "15.90"
    headers, rows = got["Power at rest vs operating"]
    assert all(h.endswith(("_w", "_mJ", "differences)")) for h in headers[2:6])
    assert rows[0][2:4] == ("2.000", "–") and rows[0][-1] == "rapl"
    assert rows[1][2:6] == ("2.000", "3.500", "1.500", "7.500")
    assert "Power at rest vs operating" in "\n".join(markdown_lines([rest, operating]))


def test_the_sensors_share_of_each_service_with_a_sensor():
    from boardlab.analysis.studies.services import ServiceCell, sensor_shares, tables

    def cell(scenario, source, cpu, **extra):
        params = {"scenario": scenario, "source": source, **extra}
        return ServiceCell(f"{scenario} {source}", scenario, params, "baseline", "baseline", 5,
                           per_service_cpu_pct={scenario: cpu, "sub": 0.1})  # fmt: skip

    cells = [
        cell("position", "synthetic", 0.2),
        cell("position", "nmea", 0.5, read_mode="byte"),  # not the pair: the study's reads are canonical
        cell("position", "nmea", 0.8, read_mode="canonical"),
        cell("orientation", "synthetic", 0.09),
        cell("orientation", "ins", 0.12),
    ]
    assert sensor_shares(cells) == [
        ("Position", "nmea", "0.200", "0.800", "75.0"),
        ("Orientation", "ins", "0.090", "0.120", "25.0"),
    ]
    title, headers, rows = tables(cells)[0]
    assert title == "The sensor's share of each service's CPU" and headers[-1] == "sensor_share_percent"
    assert sensor_shares(cells[:2]) == []  # no canonical GPS run: no pair, no row


def test_a_governor_sweeps_conditions_read_in_hertz_in_the_services_and_energy_labels():
    """`policy0@1400000` (kHz without a unit) as a reader reads it, from the parts the sweep declared, in the
    services study's rows and in the energy study's per-condition table and power-trace titles."""
    from boardlab.analysis import document as doc
    from boardlab.analysis.format import condition_text
    from boardlab.analysis.studies.energy import EnergyStudy, _plots, condition_rows
    from boardlab.analysis.studies.services import ServiceCell, sensor_shares

    from helpers import sweep_parts

    one = "policy0@1400000"
    said = condition_text(one, sweep_parts({"policy0": 1400000}))

    def cell(source, cpu):
        return ServiceCell(f"position {source}", "position", {"scenario": "position", "source": source},
                           one, said, 5, per_service_cpu_pct={"position": cpu})  # fmt: skip

    assert sensor_shares([cell("synthetic", 0.2), cell("nmea", 0.8)])[0][0] == "Position [policy0 1.4 GHz]"
    two = "policy0@200000+policy4@2000000"
    texts = {
        two: condition_text(two, sweep_parts({"policy0": 200000, "policy4": 2000000})),
        "baseline": "baseline",
    }
    study = EnergyStudy(None, "rapl", (), (),
                        traces={two: [("w", [(0.0, 1.0), (1.0, 2.0)])]},
                        by_condition=((two, "baseline", 2, 1.1, 1.2),),
                        )  # fmt: skip
    said = texts.__getitem__  # as the campaign's analysis says its conditions (`condition_text`)
    assert condition_rows(study, said)[1][0][:2] == ("policy0 200 MHz + policy4 2 GHz", "baseline")
    titles = [b.spec.title for b in _plots(study, said) if isinstance(b, doc.Figure)]
    assert "Power during a median run: policy0 200 MHz + policy4 2 GHz" in titles
