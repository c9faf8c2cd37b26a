"""Per-range cost of tracelens.nvtx with no NVTX tool attached, against baselines measured in the same run.

    python benchmarks/bench_nvtx_overhead.py [--iterations 200000] [--no-tf]

Every case is a loop of ``--iterations`` ranges (enter + exit, object creation included), timed
``--repeats`` times; the table gives the best and median time per range. Baselines: the empty loop, an empty
context manager created per iteration, and the bare ``nvtx.push_range``/``nvtx.pop_range`` pair. The same
cases are then re-run with torch imported (profiler idle) and with TensorFlow imported (profiler idle), which
adds each framework's "is a profiler recording?" check, and once under an active ``torch.profiler`` for
scale. Writes ``benchmarks/results/nvtx_overhead.md``. No GPU or nsys needed (nor usable: without an
injected NVTX collector the nvtx package's calls are no-ops, which is the case this measures).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from contextlib import nullcontext
from datetime import datetime, timezone
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent))  # tracelens and tests/ from the working tree

import nvtx as nvtx_pkg  # noqa: E402

from tracelens import nvtx  # noqa: E402

TARGET_NS = 2000.0


class EmptyContext:
    __slots__ = ()

    def __enter__(self) -> EmptyContext:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def plain(x: int) -> int:
    return x


@nvtx.range("decorated")
def decorated(x: int) -> int:
    return x


def case_empty_loop(n: int) -> None:
    for _ in range(n):
        pass


def case_empty_context(n: int) -> None:
    for _ in range(n):
        with EmptyContext():
            pass


def case_nullcontext(n: int) -> None:
    for _ in range(n):
        with nullcontext():
            pass


def case_bare_push_pop(n: int) -> None:
    push, pop = nvtx_pkg.push_range, nvtx_pkg.pop_range
    for _ in range(n):
        push("x", domain="tracelens")
        pop(domain="tracelens")


def case_nvtx_annotate(n: int) -> None:
    annotate = nvtx_pkg.annotate
    for _ in range(n):
        with annotate("x", domain="tracelens"):
            pass


def case_tracelens_range(n: int) -> None:
    for _ in range(n):
        with nvtx.range("x"):
            pass


def case_tracelens_forward(n: int) -> None:
    for _ in range(n):
        with nvtx.forward():
            pass


def case_tracelens_step(n: int) -> None:
    for i in range(n):
        with nvtx.step(i):
            pass


def case_plain_call(n: int) -> None:
    for i in range(n):
        plain(i)


def case_decorated_call(n: int) -> None:
    for i in range(n):
        decorated(i)


def case_plain_iteration(n: int) -> None:
    for _ in range(n):
        pass


def case_data_loading(n: int) -> None:
    for _ in nvtx.data_loading(range(n)):
        pass


def time_cases(cases: list[Callable[[int], None]], n: int, repeats: int) -> list[tuple[float, float]]:
    """(best, median) nanoseconds per iteration for each case. Repeats are interleaved round-robin so that
    load from other processes on this shared machine falls on every case alike."""
    for case in cases:
        case(min(n, 1000))  # warm caches (registered strings, lru caches)
    samples: list[list[float]] = [[] for _ in cases]
    for _ in range(repeats):
        for index, case in enumerate(cases):
            start = time.perf_counter_ns()
            case(n)
            samples[index].append((time.perf_counter_ns() - start) / n)
    return [(min(per), statistics.median(per)) for per in samples]


BASE_CASES: list[tuple[str, Callable[[int], None]]] = [
    ("empty loop (no range)", case_empty_loop),
    ("baseline: empty context manager (class, created per range)", case_empty_context),
    ("baseline: `contextlib.nullcontext()`", case_nullcontext),
    ("baseline: bare `nvtx.push_range` + `nvtx.pop_range`", case_bare_push_pop),
    ("`nvtx.annotate` (nvtx package's context manager)", case_nvtx_annotate),
    ('**`with tracelens.nvtx.range("x")`**', case_tracelens_range),
    ("**`with tracelens.nvtx.forward()`**", case_tracelens_forward),
    ("**`with tracelens.nvtx.step(i)`** (formats the name)", case_tracelens_step),
]
CALL_CASES: list[tuple[str, Callable[[int], None]]] = [
    ("plain function call", case_plain_call),
    ("**`@tracelens.nvtx.range` decorated call**", case_decorated_call),
    ("plain `for` over `range(n)`", case_plain_iteration),
    ("**`for _ in nvtx.data_loading(range(n))`** (per item)", case_data_loading),
]
FRAMEWORK_CASES = [c for c in BASE_CASES if "tracelens" in c[0] or "empty context" in c[0]]
COLLECTOR_CASES = [c for c in BASE_CASES if "tracelens" in c[0] or "baseline" in c[0] or "annotate" in c[0]]


def run_block(
    cases: list[tuple[str, Callable[[int], None]]], n: int, repeats: int
) -> list[tuple[str, float, float]]:
    timings = time_cases([case for _, case in cases], n, repeats)
    return [(label, best, median) for (label, _), (best, median) in zip(cases, timings, strict=True)]


def table(rows: list[tuple[str, float, float]], baseline_ns: float, baseline_name: str) -> list[str]:
    lines = [f"| case | best ns/range | median ns/range | best / {baseline_name} |", "|---|---|---|---|"]
    for label, best, median in rows:
        lines.append(f"| {label} | {best:,.0f} | {median:,.0f} | {best / baseline_ns:.2f}x |")
    return lines


def build_collector() -> Path | None:
    """Compile the tests' minimal NVTX collector (silent without FAKE_NVTX_LOG) into benchmarks/data/."""
    import shutil
    import subprocess

    headers = sorted(Path("/usr/local").glob("cuda*/include/nvtx3/nvToolsExt.h"))
    if shutil.which("gcc") is None or not headers:
        return None
    from tests.test_nvtx import FAKE_COLLECTOR_C

    data = BENCH_DIR / "data"
    data.mkdir(parents=True, exist_ok=True)
    source, library = data / "nvtx_collector.c", data / "libnvtx_collector.so"
    source.write_text(FAKE_COLLECTOR_C)
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-O2", f"-I{headers[-1].parent.parent}", "-o", str(library), str(source)],
        check=True,
        capture_output=True,
    )
    return library


def run_collector_child(n: int, repeats: int) -> list[tuple[str, float, float]] | None:
    """The same cases in a fresh process with the minimal collector injected (NVTX calls now reach a tool)."""
    import json
    import subprocess

    library = build_collector()
    if library is None:
        return None
    env = dict(os.environ, NVTX_INJECTION64_PATH=str(library))
    env.pop("FAKE_NVTX_LOG", None)
    done = subprocess.run(
        [sys.executable, __file__, "--child-collector", "--iterations", str(n), "--repeats", str(repeats)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return [tuple(row) for row in json.loads(done.stdout.strip().splitlines()[-1])]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument(
        "--no-tf", action="store_true", help="skip the TensorFlow-imported block (slow import)"
    )
    parser.add_argument("--output", type=Path, default=BENCH_DIR / "results" / "nvtx_overhead.md")
    parser.add_argument("--child-collector", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_collector:  # run by run_collector_child under NVTX_INJECTION64_PATH
        import json

        rows = run_block(COLLECTOR_CASES, args.iterations, args.repeats)
        assert nvtx.collector_attached(), "the collector was not injected"
        print(json.dumps(rows))
        return 0
    if os.environ.get("NVTX_INJECTION64_PATH"):
        print("warning: an NVTX collector is injected; this measures the attached case", file=sys.stderr)
    n, repeats = args.iterations, args.repeats
    assert "torch" not in sys.modules and "tensorflow" not in sys.modules

    base = run_block(BASE_CASES, n, repeats)
    calls = run_block(CALL_CASES, n, repeats)
    empty_cm = base[1][1]
    ours = {label: best for label, best, _ in base + calls}
    range_ns = ours['**`with tracelens.nvtx.range("x")`**']
    step_ns = ours["**`with tracelens.nvtx.step(i)`** (formats the name)"]

    out = [
        "# tracelens.nvtx per-range overhead",
        "",
        f"Machine: {os.cpu_count()} CPUs, Python {platform.python_version()}, nvtx {_nvtx_version()}. Generated by "
        f"`benchmarks/bench_nvtx_overhead.py` on {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC "
        f"({n:,} ranges per case, best and median of {repeats} repeats interleaved across cases; enter + exit, object creation included).",
        "",
        "The first three tables have no NVTX collector attached (no `nsys`), which is how training runs when "
        "it is not being profiled: the nvtx package then hands out a do-nothing domain. A later table injects "
        "a minimal collector; the cost of nsys's own collector is not measured (no nsys on this machine).",
        "",
        "## Neither torch nor TensorFlow imported",
        "",
        *table(base, empty_cm, "empty context manager"),
        "",
        *table(calls, calls[0][1], "first row of pair"),
        "",
    ]
    decorated_extra = calls[1][1] - calls[0][1]
    data_extra = calls[3][1] - calls[2][1]
    out += [
        f"Decorator: {decorated_extra:,.0f} ns added per call; `data_loading`: {data_extra:,.0f} ns added per item.",
        "",
    ]

    verdicts = [("no framework", range_ns, step_ns)]
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        torch_rows = run_block(FRAMEWORK_CASES, n, repeats)
        verdicts.append(("torch imported, profiler idle", torch_rows[1][1], torch_rows[3][1]))
        out += [
            "## torch imported, no profiler recording",
            "",
            *table(torch_rows, torch_rows[0][1], "empty context manager"),
            "",
        ]
        active_n = max(n // 20, 1000)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
            active = run_block(
                [
                    (
                        '`with tracelens.nvtx.range("x")` under an active torch.profiler '
                        "(adds a record_function)",
                        case_tracelens_range,
                    )
                ],
                active_n,
                3,
            )
        out += [
            f"For scale, while `torch.profiler` records ({active_n:,} ranges): "
            f"{active[0][1]:,.0f} ns per range (best of 3) — the record_function the profiler needs.",
            "",
        ]
    if not args.no_tf:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        try:
            import tensorflow  # noqa: F401
        except ImportError:
            pass
        else:
            tf_rows = run_block(FRAMEWORK_CASES, n, repeats)
            verdicts.append(("torch and TensorFlow imported, profilers idle", tf_rows[1][1], tf_rows[3][1]))
            out += [
                "## torch and TensorFlow imported, no profiler recording",
                "",
                *table(tf_rows, tf_rows[0][1], "empty context manager"),
                "",
            ]

    collected = run_collector_child(n, repeats)
    if collected is not None:
        out += [
            "## With an NVTX collector injected (no framework imported)",
            "",
            "A minimal collector (`tests/test_nvtx.py`'s, compiled with gcc against the NVTX v3 headers, its "
            "callbacks doing nothing) is injected through `NVTX_INJECTION64_PATH`, so every push/pop now "
            "reaches a tool, as under `nsys profile -t nvtx`; nsys's own collector adds its recording cost "
            "on top (not measured: no nsys here). Run in a child process.",
            "",
            *table(collected, collected[0][1], "empty context manager"),
            "",
        ]
    out += [
        "## Verdict",
        "",
        f"Target: under {TARGET_NS / 1000:.0f} µs per range with no profiler attached.",
        "",
        "| setting | `range` ns | `step` ns | target |",
        "|---|---|---|---|",
    ]
    for setting, r_ns, s_ns in verdicts:
        verdict = "meets" if max(r_ns, s_ns) < TARGET_NS else "MISSES"
        out.append(f"| {setting} | {r_ns:,.0f} | {s_ns:,.0f} | {verdict} |")
    out.append("")
    if collected is not None:
        by_label = {label: best for label, best, _ in collected}
        out.append(
            f"With the minimal NVTX collector injected (a tool attached, so outside the target's scope): "
            f"`range` {by_label[BASE_CASES[5][0]]:,.0f} ns, `step` {by_label[BASE_CASES[7][0]]:,.0f} ns "
            "(every step has a new name, so each step also registers one NVTX string)."
        )
        out.append("")
    out.append(
        f"Ratios (same run, no framework): `range` / empty context manager = {range_ns / empty_cm:.2f}x; "
        f"`range` / bare push+pop = {range_ns / base[3][1]:.2f}x."
    )
    text = "\n".join(out) + "\n"
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    print(text)
    return 0


def _nvtx_version() -> str:
    try:
        from importlib.metadata import version

        return version("nvtx")
    except Exception:  # metadata missing in odd installs: the version is informative only
        return "unknown"


if __name__ == "__main__":
    sys.exit(main())
