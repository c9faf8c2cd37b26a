"""Analyses benchmark: every analysis section on a synthetic 1M-kernel trace, target under 5 s.

1. Build the trace directly as an Arrow table (``build_events``), write it once to
   ``benchmarks/data/analyses_<N>.parquet`` (git-ignored):
   - N kernels on 2 GPUs x 4 streams, each launched by a cudaLaunchKernel row (same correlation_id) on one
     host thread, with idle gaps of varied length between kernel bursts;
   - one cpu_op (aten::*) per 10 kernels wrapping its launches, one NVTX-style annotation per cpu_op;
   - STEPS steps (`step` rows) each with tracelens/data, forward and backward annotations, a 4-byte DtoH
     copy + cudaStreamSynchronize (the .item() pattern) and a gpu_sync row.
2. In a fresh process (``benchmarks/common.py``): read the Parquet file, then time
   - baseline A: converting the event table to pandas (``trace.df``), the entry cost of every analysis;
   - baseline B: numpy argsort of all start times (a floor for any order-based pass);
   - ``tracelens.analyses.analyze`` (all registered sections) and each of this module's sections alone.
3. Write ``benchmarks/results/analyses.md``.

Run:  flock /tmp/tracelens-bench.lock python3 benchmarks/bench_analyses.py [--kernels N]
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from common import DATA_DIR, machine_description, markdown_table, measure_on_built_input, mib, write_result

DEFAULT_KERNELS = 1_000_000
STEPS = 1000
TARGET_S = 5.0
MINE = ("gaps", "steps", "attribution", "launch", "sync", "ranges", "diagnosis")


def build(n_kernels: int) -> Path:
    """Write the synthetic trace as Parquet (once) and return its path."""
    import tracelens  # noqa: F401  (package import check before the heavy work)
    from tracelens.trace import Trace, TraceMetadata, build_devices, build_events

    DATA_DIR.mkdir(parents=True, exist_ok=True)
    out = DATA_DIR / f"analyses_{n_kernels}.parquet"
    if out.exists():
        return out
    rng = np.random.default_rng(0)
    n = n_kernels
    # Host: launch i at 2 us * i (+ jitter); kernels run 5-60 us after launch, short durations, with a longer
    # pause every 97 kernels so the GPUs have real gaps.
    launch_start = np.arange(n, dtype=np.int64) * 2_000 + rng.integers(0, 500, n)
    launch_end = launch_start + 800 + rng.integers(0, 400, n)
    pause = (np.arange(n) // 97) * 20_000
    k_start = launch_end + 5_000 + rng.integers(0, 55_000, n) + pause
    k_end = k_start + rng.integers(500, 3_000, n)
    launch_start = launch_start + pause
    launch_end = launch_end + pause
    corr = np.arange(1, n + 1, dtype=np.int64)
    device = (np.arange(n) % 2).astype(np.int32)
    stream = (np.arange(n) % 4 + 7).astype(np.int64)

    n_ops = n // 10
    op_idx = np.arange(n_ops) * 10
    op_start = launch_start[op_idx] - 200
    op_end = launch_end[np.minimum(op_idx + 9, n - 1)] + 200
    span_end = int(max(k_end.max(), op_end.max()))
    step_edges = np.linspace(0, span_end, STEPS + 1).astype(np.int64)
    s_start, s_end = step_edges[:-1], step_edges[1:]
    s_len = s_end - s_start

    kinds, names, starts, ends = [], [], [], []
    cols: dict[str, list[np.ndarray]] = {
        k: []
        for k in (
            "device",
            "stream",
            "pid",
            "tid",
            "correlation_id",
            "step",
            "bytes",
            "copy_kind",
            "sync_kind",
        )
    }

    def add(kind, name, start, end, **extra):
        m = len(start)
        kinds.append(np.full(m, kind, dtype=object))
        names.append(
            np.asarray(name, dtype=object) if not isinstance(name, str) else np.full(m, name, dtype=object)
        )
        starts.append(np.asarray(start, np.int64))
        ends.append(np.asarray(end, np.int64))
        for key in cols:
            value = extra.get(key)
            if value is None:
                cols[key].append(
                    np.full(m, np.nan) if key not in ("copy_kind", "sync_kind") else np.full(m, None, object)
                )
            else:
                cols[key].append(
                    np.broadcast_to(np.asarray(value), (m,)).astype(
                        object if key in ("copy_kind", "sync_kind") else np.float64
                    )
                )

    kernel_names = np.array([f"kernel_{i}" for i in range(200)], dtype=object)[np.arange(n) % 200]
    add("kernel", kernel_names, k_start, k_end, device=device, stream=stream, pid=1, correlation_id=corr)
    add("runtime", "cudaLaunchKernel", launch_start, launch_end, pid=1, tid=1, correlation_id=corr)
    op_names = np.array([f"aten::op_{i}" for i in range(50)], dtype=object)[np.arange(n_ops) % 50]
    add("cpu_op", op_names, op_start, op_end, pid=1, tid=1)
    add(
        "annotation",
        np.array([f"layer_{i}" for i in range(30)], dtype=object)[np.arange(n_ops) % 30],
        op_start,
        op_end,
        pid=1,
        tid=1,
    )
    add("step", "ProfilerStep", s_start, s_end, pid=1, tid=1, step=np.arange(STEPS))
    add("annotation", "tracelens/data", s_start, s_start + s_len // 10, pid=1, tid=1)
    add("annotation", "tracelens/forward", s_start + s_len // 10, s_start + s_len // 2, pid=1, tid=1)
    add("annotation", "tracelens/backward", s_start + s_len // 2, s_end - 1000, pid=1, tid=1)
    item_corr = n + 1 + np.arange(STEPS)
    item_call = s_end - 900
    add("runtime", "cudaMemcpyAsync", item_call, item_call + 100, pid=1, tid=1, correlation_id=item_corr)
    add(
        "memcpy",
        "Memcpy DtoH (Device -> Pageable)",
        item_call + 150,
        item_call + 160,
        device=0,
        stream=7,
        pid=1,
        correlation_id=item_corr,
        bytes=4,
        copy_kind="DtoH",
    )
    add(
        "runtime",
        "cudaStreamSynchronize",
        item_call + 110,
        item_call + 400,
        pid=1,
        tid=1,
        correlation_id=item_corr + STEPS,
    )
    add(
        "gpu_sync",
        "cudaStreamSynchronize",
        item_call + 150,
        item_call + 160,
        device=0,
        stream=7,
        sync_kind="stream_sync",
    )

    columns = {
        "kind": np.concatenate(kinds),
        "name": np.concatenate(names),
        "start_ns": np.concatenate(starts),
        "end_ns": np.concatenate(ends),
    }
    for key, parts in cols.items():
        columns[key] = np.concatenate(parts)
    trace = Trace(
        events=build_events(columns),
        devices=build_devices(
            [
                {"id": 0, "name": "Synthetic GPU", "vendor": "nvidia"},
                {"id": 1, "name": "Synthetic GPU", "vendor": "nvidia"},
            ]
        ),
        metadata=TraceMetadata(source_format="synthetic", framework="pytorch"),
    )
    partial = out.with_suffix(".partial")
    trace.save(partial)
    partial.rename(out)
    return out


def run_analyses(path: str) -> dict:
    """Child process: read the Parquet trace, then time the baselines and the analyses."""
    import importlib

    import tracelens
    from tracelens.analyses import SECTIONS, analyze

    for name in SECTIONS:  # imports are not analysis time
        importlib.import_module(f"tracelens.analyses.{name}")
    trace = tracelens.load(path)
    rows = trace.events.num_rows
    t0 = time.perf_counter()
    _ = trace.df
    to_pandas = time.perf_counter() - t0
    t0 = time.perf_counter()
    np.argsort(trace.events.column("start_ns").to_numpy(), kind="stable")
    argsort = time.perf_counter() - t0

    fresh = tracelens.load(path)  # analyze on a trace without the cached frame: the full cost
    t0 = time.perf_counter()
    doc = analyze(fresh)
    total = time.perf_counter() - t0

    per_section = {}
    timed = tracelens.load(path)
    _ = timed.df
    done: dict = {}
    for name in SECTIONS:
        module = importlib.import_module(f"tracelens.analyses.{name}")
        t0 = time.perf_counter()
        done[name] = module.section(timed, done)
        per_section[name] = time.perf_counter() - t0
    kernels = sum(d["kernel_count"] for d in doc["devices"])
    mine = sum(per_section[name] for name in MINE)
    return {
        "rows": rows,
        "kernels": kernels,
        "to_pandas_s": to_pandas,
        "argsort_s": argsort,
        "analyze_s": total,
        "mine_s": mine,
        "per_section_s": per_section,
        "primary": doc["diagnosis"]["primary"]["cause"],
        "gaps": sum(d["gap_count"] for d in doc["gaps"]["devices"]),
    }


def main() -> None:
    path, built, m = measure_on_built_input(
        __doc__.splitlines()[0], build, "analyses", "bench_analyses:run_analyses", DEFAULT_KERNELS
    )
    r = m.result
    sections = r["per_section_s"]
    rows = [[name, f"{sections[name]:.2f} s", "yes" if name in MINE else ""] for name in sections]
    verdict = "meets" if r["analyze_s"] < TARGET_S else "MISSES"
    text = f"""# Analyses benchmark

Machine: {machine_description()}. Generated by `benchmarks/bench_analyses.py` on {time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}.

Input: synthetic trace built as an Arrow table (`{path.name}`, built in {built:.0f} s or reused):
{r["rows"]:,} rows, {r["kernels"]:,} kernels on 2 GPUs x 4 streams, each with its cudaLaunchKernel row, 1 cpu_op
and 1 annotation per 10 kernels, {STEPS} steps with data/forward/backward ranges and an `.item()`-style
copy + sync. {r["gaps"]:,} idle gaps. Diagnosis: `{r["primary"]}`.

Measured in one fresh process (read from Parquet first, not timed); peak RSS {mib(m.peak_rss_bytes)}.

| case | wall |
|---|---|
| baseline A: event table -> pandas (`trace.df`) | {r["to_pandas_s"]:.2f} s |
| baseline B: numpy argsort of all start times | {r["argsort_s"]:.2f} s |
| **all sections (`analyze`, from the loaded Arrow table)** | **{r["analyze_s"]:.2f} s** |
| gaps, steps, attribution, launch, sync, ranges, diagnosis (summed, below) | {r["mine_s"]:.2f} s |

Target: all analyses under {TARGET_S:.0f} s on 1M kernels -> **{verdict}** ({r["analyze_s"]:.2f} s).

## Ratios (same run)

- analyze / pandas conversion: **{r["analyze_s"] / r["to_pandas_s"]:.1f}x**
- analyze / argsort of start times: **{r["analyze_s"] / r["argsort_s"]:.1f}x**
- this engineer's sections / pandas conversion: **{r["mine_s"] / r["to_pandas_s"]:.1f}x**

## Per section (pandas frame already built; `yes` = sections of this benchmark's owner)

{markdown_table(["section", "wall", "analyses engineer"], rows)}"""
    out = write_result("analyses", text)
    print(text)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
