"""Every figure says its scope, and no two figures contradict (issue 24, item 3).

On every shared trace and every fixture, against per-device figures computed here from the trace's events
with a plain sort-and-sweep (not the analyses' interval code):
- a sentence that names a GPU gives that GPU's own numbers;
- nothing lost, exposed or "not overlapped" exceeds the GPU window of its scope (a device's span for a
  per-device figure, the device-mean span for a device-mean);
- ``summary.utilization_by_kind`` adds up to ``summary.gpu_utilization`` and each part is that kind's share of
  the GPUs' time (Σ part / Σ span: GPU-time weighted, docs/analyses.md).
Plus a hand-derived two-GPU case for the utilization split.
"""

from __future__ import annotations

import functools
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

import tracelens
from tests.conftest import FIXTURES, shared_params
from tests.test_diagnosis import CAUSES_DIR, load_case
from tracelens.analyses.diagnosis.memcpy import check_sentence
from tracelens.report import markdown, terminal
from tracelens.report.findings import sentence, utilization_sentence
from tracelens.report.units import fmt_bytes, fmt_ns, fmt_pct
from tracelens.trace import Trace

SHARED = (
    shared_params("nsys", "*.sqlite")
    + shared_params("pytorch", "*.json.gz")
    + shared_params("tf", "*.xplane.pb")
)
FIXTURE_FILES = [
    pytest.param(p, id=str(p.relative_to(FIXTURES)))
    for p in sorted(FIXTURES.glob("*.gz"))
    + sorted((FIXTURES / "kineto").glob("*.json"))
    + sorted((FIXTURES / "templates").glob("*.gz"))
    + sorted((FIXTURES / "templates").glob("*.pb"))
    + sorted((FIXTURES / "gpu").glob("*.gz"))
    + sorted((FIXTURES / "gpu").glob("*.pb"))
]
CAUSES = [pytest.param(f"case:{p.stem}", id=f"causes/{p.stem}") for p in sorted(CAUSES_DIR.glob("*.json"))]


@functools.cache
def _load(source: Path | str) -> Trace:
    if isinstance(source, str):
        return load_case(source.removeprefix("case:"))
    try:
        return tracelens.load(source)
    except (ImportError, NotImplementedError) as err:
        pytest.skip(f"reader not available: {err}")


# ------------------------------------------------------------------------ independent per-device figures


def _union(pairs: list[tuple[int, int]]) -> int:
    """Length of the union of [start, end) intervals: sort, sweep, count each instant once."""
    total, reach = 0, None
    for start, end in sorted(pairs):
        if reach is None or start > reach:
            total += end - start
            reach = end
        elif end > reach:
            total += end - reach
            reach = end
    return total


def _per_device(trace: Trace) -> dict[int, dict[str, Any]]:
    """Per GPU from the events: span, the unions of kernels (K), K and copies, K, copies and memsets; copy
    counts and bytes by direction."""
    table = trace.events.select(["kind", "device", "start_ns", "end_ns", "bytes", "copy_kind"]).to_pylist()
    intervals: dict[int, dict[str, list[tuple[int, int]]]] = defaultdict(lambda: defaultdict(list))
    copies: dict[int, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for e in table:
        if e["kind"] not in ("kernel", "memcpy", "memset") or e["device"] is None or e["device"] < 0:
            continue
        intervals[e["device"]][e["kind"]].append((e["start_ns"], e["end_ns"]))
        if e["kind"] == "memcpy":
            entry = copies[e["device"]][e["copy_kind"] or "unknown"]
            entry[0] += 1
            entry[1] += e["bytes"] or 0
    out = {}
    for device, by_kind in intervals.items():
        everything = [p for pairs in by_kind.values() for p in pairs]
        k, c, m = by_kind["kernel"], by_kind["memcpy"], by_kind["memset"]
        kc, kcm = _union(k + c), _union(k + c + m)
        out[device] = {
            "span": max(e for _, e in everything) - min(s for s, _ in everything),
            "window": (min(s for s, _ in everything), max(e for _, e in everything)),
            "kernels": _union(k),
            "k_or_c": kc,
            "busy": kcm,
            "copies": {kind: tuple(v) for kind, v in copies[device].items()},
        }
    return out


# ---------------------------------------------------------------------------------------- sentences

_NS = {"s": 1e9, "ms": 1e6, "µs": 1e3, "ns": 1.0}


def _ns(text: str) -> float:
    value, unit = text.split()
    return float(value) * _NS[unit]


def _check_memcpy_sentence(text: str, per_device: dict[int, dict[str, Any]]) -> None:
    match = re.match(
        r"(?:On GPU (\d+), c|C)opies ran with no kernel beside them for (\d[\d.]* (?:s|ms|µs|ns))"
        r"(?:: mostly ([\d,]+) (\S+) cop(?:y|ies) of (\d[\d.]* (?:B|KiB|MiB|GiB|TiB)))?",
        text,
    )
    if match is None:
        return
    device = int(match[1]) if match[1] is not None else next(iter(per_device))
    if match[1] is None:
        assert len(per_device) == 1, text  # only a one-GPU trace may leave the GPU unnamed
    own = per_device[device]
    assert match[2] == fmt_ns(own["k_or_c"] - own["kernels"]), text  # that GPU's copies with no kernel beside
    if match[3] is not None:
        count, nbytes = own["copies"][match[4]]
        assert (int(match[3].replace(",", "")), match[5]) == (count, fmt_bytes(nbytes)), text


def _check_named_gpus(text: str, per_device: dict[int, dict[str, Any]]) -> None:
    """Every "GPU n was idle X" / "GPU n spent X" / "GPU n was busy X": X is within that GPU's own figures."""
    only = next(iter(per_device)) if len(per_device) == 1 else None
    for name, verb, value in re.findall(
        r"(GPU (?:\d+)|The GPU) (was idle|spent|was busy) (\d[\d.]* (?:s|ms|µs|ns))", text
    ):
        device = only if name == "The GPU" else int(name.split()[1])
        assert device is not None, text
        own = per_device[device]
        if verb == "was busy":
            assert value == fmt_ns(own["busy"]), text
        elif verb == "was idle":
            assert _ns(value) <= (own["span"] - own["busy"]) * 1.005 + 1, text
        else:
            assert _ns(value) <= own["span"] * 1.005 + 1, text


# ---------------------------------------------------------------------------------------- the checks


def _check(trace: Trace) -> None:
    doc = tracelens.analyze(trace)
    per_device = _per_device(trace)
    summary = doc["summary"]
    devices = {d["id"]: d for d in doc.get("devices") or []}
    assert set(devices) == set(per_device)
    if not per_device:
        assert summary["gpu_utilization"] is None and summary["utilization_by_kind"] is None
        return

    # The utilization and its split: the GPUs' busy share of their time (Σ over GPUs / Σ span), adding up.
    timed = [own for own in per_device.values() if own["span"] > 0]
    if timed:
        total = sum(o["span"] for o in timed)
        assert summary["gpu_utilization"] == pytest.approx(sum(o["busy"] for o in timed) / total, abs=1e-12)
        split = summary["utilization_by_kind"]
        assert split == pytest.approx(
            {
                "kernels": sum(o["kernels"] for o in timed) / total,
                "copies_only": sum(o["k_or_c"] - o["kernels"] for o in timed) / total,
                "memsets_only": sum(o["busy"] - o["k_or_c"] for o in timed) / total,
            },
            abs=1e-12,
        )
        assert abs(sum(split.values()) - summary["gpu_utilization"]) <= 1e-9
    for device, d in devices.items():
        own = per_device[device]
        assert (
            d["busy_ns"],
            d["span_ns"],
            d["kernel_union_ns"],
            d["copies_only_ns"],
            d["memsets_only_ns"],
        ) == (
            own["busy"],
            own["span"],
            own["kernels"],
            own["k_or_c"] - own["kernels"],
            own["busy"] - own["k_or_c"],
        )

    # Nothing lost, exposed or not overlapped exceeds the window of its scope. The device-mean span is Σ span /
    # n_eff (n_eff = Σ span / the union of the GPUs' windows): the union itself.
    mean_span = summary["device_mean_span_ns"]
    union = _union([o["window"] for o in per_device.values()])
    spans = sum(o["span"] for o in per_device.values())
    n_eff = spans / union if spans and union else len(per_device)
    assert mean_span == pytest.approx(spans / n_eff)
    for key in ("device_mean_busy_ns", "device_mean_memcpy_exposed_ns"):
        assert summary[key] is None or summary[key] <= mean_span, key
    memcpy = doc.get("memcpy") or {}
    if memcpy:
        assert memcpy["device_mean_exposed_ns"] <= mean_span
        assert all(k["device_mean_exposed_ns"] <= mean_span for k in memcpy["by_kind"])
        for d in memcpy["per_device"]:
            own = per_device[d["device"]]
            # A GPU's copies with no kernel beside them: its copies-only time, within its span.
            assert d["exposed_ns"] == own["k_or_c"] - own["kernels"] <= own["span"]
            assert all(k["exposed_ns"] <= own["span"] for k in d["by_kind"])
        for f in memcpy["findings"]:
            if f["id"] == "memcpy_exposed":
                own = per_device[f["evidence"]["device"]]
                share = fmt_pct((own["k_or_c"] - own["kernels"]) / own["span"])
                assert (
                    check_sentence(f)
                    == f"GPU {f['evidence']['device']}: copies not overlapped by any kernel "
                    f"take {share} of the span"
                )
    for d in (doc.get("communication") or {}).get("devices") or []:
        span = per_device[d["device"]]["span"]
        assert d["exposed_ns"] <= span and d["breakdown"]["memcpy_exposed_ns"] <= span
    occupancy = doc.get("occupancy") or {}
    for d in occupancy.get("per_device") or []:
        assert d["lost_ns"] <= per_device[d["device"]]["span"]
    if occupancy.get("lost_ns") is not None:  # summed over GPUs in JSON; rendered as the device-mean
        assert occupancy["lost_ns"] / n_eff <= mean_span * (1 + 1e-12)
    diagnosis = doc["diagnosis"]
    for cause in diagnosis["causes"]:
        assert cause["lost_ns"] <= mean_span and cause["share"] <= 1.0, cause["cause"]

    # Sentences that name a GPU give that GPU's numbers.
    for cause in diagnosis["causes"]:
        text = sentence(cause, diagnosis)
        if cause["cause"] == "memcpy":
            _check_memcpy_sentence(text, per_device)
        _check_named_gpus(text, per_device)

    # Rendered: no share of the span above 100%, and the headline states the split.
    for text in (terminal.render(doc), markdown.render(doc)):
        shares = [float(p) for p in re.findall(r"(\d+(?:\.\d+)?)% of (?:the )?span", text)]
        assert all(p <= 100.0 for p in shares), shares
        for value in re.findall(
            r"(\d[\d.]* (?:s|ms|µs|ns)) (?:of copy time )?not overlapped by compute", text
        ):
            assert value == fmt_ns(memcpy["device_mean_exposed_ns"]) and _ns(value) <= mean_span * 1.005, (
                value
            )
        if timed:
            headline = utilization_sentence(summary)
            assert headline is not None and headline.startswith(
                f"GPU busy {fmt_pct(summary['gpu_utilization'])}: "
                f"kernels {fmt_pct(summary['utilization_by_kind']['kernels'])}"
            )
            assert headline.split(": ")[0] in text.replace("**", "")


@pytest.mark.parametrize("path", SHARED)
def test_scope_invariants_on_shared_traces(path: Path) -> None:
    _check(_load(path))


@pytest.mark.parametrize("source", FIXTURE_FILES + CAUSES)
def test_scope_invariants_on_fixtures(source: Path | str) -> None:
    _check(_load(source))


# ------------------------------------------------------------------------- hand-derived utilization split


def _gpu(kind: str, start: int, end: int, device: int, stream: int = 7, **extra: Any) -> dict[str, Any]:
    return {
        "kind": kind,
        "name": kind,
        "start_ns": start,
        "end_ns": end,
        "device": device,
        "stream": stream,
        **extra,
    }


def test_utilization_by_kind_by_hand() -> None:
    # GPU 0: kernel [0,100), copy [50,200) on stream 8, memsets [180,260) and [300,310). Span 310.
    #   kernels [0,100) = 100; copies only [100,200) = 100; memsets only [200,260) + [300,310) = 70; busy 270.
    # GPU 1: copy [1000,1100), kernels [1050,1060) and [1200,1300). Span 300.
    #   kernels 10 + 100 = 110; copies only 100 - 10 = 90; memsets only 0; busy 200.
    rows = [
        _gpu("kernel", 0, 100, 0),
        _gpu("memcpy", 50, 200, 0, 8, bytes=10, copy_kind="HtoD"),
        _gpu("memset", 180, 260, 0, 9),
        _gpu("memset", 300, 310, 0, 9),
        _gpu("memcpy", 1000, 1100, 1, 8, bytes=20, copy_kind="HtoD"),
        _gpu("kernel", 1050, 1060, 1),
        _gpu("kernel", 1200, 1300, 1),
    ]
    doc = tracelens.analyze(Trace.from_rows(rows))
    gpu0, gpu1 = doc["devices"]
    assert (gpu0["kernel_union_ns"], gpu0["copies_only_ns"], gpu0["memsets_only_ns"], gpu0["busy_ns"]) == (
        100,
        100,
        70,
        270,
    )
    assert (gpu1["kernel_union_ns"], gpu1["copies_only_ns"], gpu1["memsets_only_ns"], gpu1["busy_ns"]) == (
        110,
        90,
        0,
        200,
    )
    summary = doc["summary"]
    # GPU-time weighted (spans 310 and 300): Σ busy / Σ span = 470 / 610 (the plain mean of the shares read
    # (270 / 310 + 200 / 300) / 2 = 76.9%).
    assert summary["gpu_utilization"] == pytest.approx(470 / 610, abs=1e-15)
    assert summary["utilization_by_kind"] == pytest.approx(
        {"kernels": 210 / 610, "copies_only": 190 / 610, "memsets_only": 70 / 610}, abs=1e-15
    )
    # Durations are device-means, Σ / n_eff: the windows [0,310) and [1000,1300) are disjoint, so their union is
    # 610 = Σ span and n_eff = 1: span 610, busy 270 + 200, kernel time 100 + 110, copies with no kernel beside
    # them 100 + 90 (the GPUs take turns: one GPU's worth of time at any instant of the window).
    assert (
        summary["device_mean_span_ns"],
        summary["device_mean_busy_ns"],
        summary["device_mean_kernel_ns"],
        summary["device_mean_memcpy_exposed_ns"],
    ) == (610, 470, 210, 190)
    assert summary["kernel_count"] == 3 and summary["memcpy_count"] == 2  # counts stay totals
    # busy 470 / 610 = 77.0%; kernels 34.4%, copies only 31.1%, memsets only 11.5%.
    assert (
        utilization_sentence(summary)
        == "GPU busy 77.0%: kernels 34.4%, copies only 31.1%, memsets only 11.5%"
    )
