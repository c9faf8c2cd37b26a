"""Memcpy and occupancy benchmark: annotate_occupancy and both sections on a synthetic 1M-kernel trace.

1. Build (once) ``benchmarks/data/memocc_<N>.parquet`` (git-ignored): N kernels with varied launch
   configurations (block size, registers, shared memory, grid) on 2 GPUs (cc 8.0, 108 SMs) x 4 streams,
   N/5 copies (HtoD/DtoH/DtoD, pageable/pinned, a fifth of them small and clustered into bursts), and one
   runtime row per GPU op (cudaLaunchKernel / cudaMemcpyAsync / cudaMemcpy) with the same correlation_id.
2. In a fresh process (``benchmarks/common.py``): read it without enrichment, then time
   - baseline: converting the event table to pandas (``trace.df``), the entry cost of any pandas analysis;
   - ``annotate_occupancy`` (the per-kernel columns every load now pays);
   - the ``occupancy`` and ``memcpy`` sections (pandas frame already built).
3. Write ``benchmarks/results/memcpy_occupancy.md``.

Run:  python3 benchmarks/bench_memcpy_occupancy.py [--kernels N]
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from common import DATA_DIR, machine_description, measure_on_built_input, mib, write_result

DEFAULT_KERNELS = 1_000_000


def build(n_kernels: int) -> Path:
    from tracelens.trace import Trace, TraceMetadata, build_devices, build_events

    DATA_DIR.mkdir(parents=True, exist_ok=True)
    out = DATA_DIR / f"memocc_{n_kernels}.parquet"
    if out.exists():
        return out
    rng = np.random.default_rng(1)
    n, m = n_kernels, n_kernels // 5
    k_start = np.cumsum(rng.integers(1_000, 6_000, n))
    k_end = k_start + rng.integers(500, 20_000, n)
    c_start = np.sort(rng.integers(0, int(k_end.max()), m))
    c_small = rng.random(m) < 0.2
    c_end = c_start + np.where(c_small, rng.integers(800, 2_000, m), rng.integers(5_000, 400_000, m))
    c_bytes = np.where(c_small, rng.integers(4, 60_000, m), rng.integers(65_536, 64 * 2**20, m))
    copy_kinds = np.array(["HtoD", "DtoH", "DtoD"], dtype=object)[rng.integers(0, 3, m)]
    host_kind = np.array(["pageable", "pinned"], dtype=object)[rng.integers(0, 2, m)]
    src = np.where(copy_kinds == "HtoD", host_kind, "device")
    dst = np.where(copy_kinds == "DtoH", host_kind, "device")
    k_corr = np.arange(1, n + 1)
    c_corr = np.arange(n + 1, n + m + 1)
    c_api = np.array(["cudaMemcpyAsync", "cudaMemcpy"], dtype=object)[(rng.random(m) < 0.1).astype(int)]

    def cat(*parts):
        return np.concatenate(parts)

    nan_k, nan_c = np.full(n, np.nan), np.full(m, np.nan)
    none_k, none_c = np.full(n, None, object), np.full(m, None, object)
    columns = {
        "kind": cat(
            np.full(n, "kernel", object),
            np.full(m, "memcpy", object),
            np.full(n, "runtime", object),
            np.full(m, "runtime", object),
        ),
        "name": cat(
            np.array([f"kernel_{i}" for i in range(300)], object)[np.arange(n) % 300],
            np.char.add("Memcpy ", copy_kinds.astype(str)).astype(object),
            np.full(n, "cudaLaunchKernel", object),
            c_api,
        ),
        "start_ns": cat(k_start, c_start, k_start - 4_000, c_start - 3_000),
        "end_ns": cat(k_end, c_end, k_start - 3_000, c_start - 2_000),
        "device": cat(np.arange(n) % 2, np.arange(m) % 2, nan_k, nan_c),
        "stream": cat(np.arange(n) % 4 + 7, np.arange(m) % 2 + 20, nan_k, nan_c),
        "pid": np.ones(2 * (n + m)),
        "tid": cat(nan_k, nan_c, np.ones(n), np.ones(m)),
        "correlation_id": cat(k_corr, c_corr, k_corr, c_corr),
        "bytes": cat(nan_k, c_bytes, nan_k, nan_c),
        "copy_kind": cat(none_k, copy_kinds, none_k, none_c),
        "src_kind": cat(none_k, src, none_k, none_c),
        "dst_kind": cat(none_k, dst, none_k, none_c),
        "block_x": cat(np.array([64, 128, 256, 512, 1024])[rng.integers(0, 5, n)], nan_c, nan_k, nan_c),
        "grid_x": cat(rng.integers(1, 20_000, n), nan_c, nan_k, nan_c),
        "registers_per_thread": cat(rng.integers(16, 255, n), nan_c, nan_k, nan_c),
        "static_shared_bytes": cat(rng.choice([0, 4096, 16384, 49152], n), nan_c, nan_k, nan_c),
        "dynamic_shared_bytes": cat(rng.choice([0, 0, 32768, 98304], n), nan_c, nan_k, nan_c),
    }
    gpu = {
        "name": "NVIDIA A100-SXM4-40GB",
        "vendor": "nvidia",
        "compute_major": 8,
        "compute_minor": 0,
        "sm_count": 108,
    }
    trace = Trace(
        events=build_events(columns),
        devices=build_devices([{"id": 0, **gpu}, {"id": 1, **gpu}]),
        metadata=TraceMetadata(source_format="synthetic", framework="pytorch"),
    )
    partial = out.with_suffix(".partial")
    trace.save(partial)
    partial.rename(out)
    return out


def run(path: str) -> dict:
    """Child process: read the Parquet trace (not enriched), then time baseline, annotation and sections."""
    from tracelens.analyses import memcpy, occupancy
    from tracelens.enrich import annotate_occupancy
    from tracelens.ingest import parquet

    trace = parquet.read(Path(path), fmt="parquet")
    t0 = time.perf_counter()
    annotated = annotate_occupancy(trace)
    annotate_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    _ = annotated.df
    to_pandas_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    occ = occupancy.section(annotated, {})
    occupancy_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    mem = memcpy.section(annotated, {})
    memcpy_s = time.perf_counter() - t0
    return {
        "rows": trace.events.num_rows,
        "kernels": occ["kernel_count"],
        "computed": occ["computed_count"],
        "copies": mem["count"],
        "bursts": mem["small_copies"]["burst_count"],
        "to_pandas_s": to_pandas_s,
        "annotate_s": annotate_s,
        "occupancy_s": occupancy_s,
        "memcpy_s": memcpy_s,
    }


def main() -> None:
    path, built, m = measure_on_built_input(
        __doc__.splitlines()[0], build, "memocc", "bench_memcpy_occupancy:run", DEFAULT_KERNELS
    )
    r = m.result
    base = r["to_pandas_s"]
    text = f"""# Memcpy and occupancy benchmark

Machine: {machine_description()}. Generated by `benchmarks/bench_memcpy_occupancy.py` on {time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}.

Input: synthetic trace (`{path.name}`, built in {built:.0f} s or reused): {r["rows"]:,} rows, {r["kernels"]:,}
kernels with varied launch configurations on 2 GPUs (cc 8.0, 108 SMs; {r["computed"]:,} computable),
{r["copies"]:,} copies ({r["bursts"]:,} small-copy bursts), one runtime row per GPU op.

Measured in one fresh process (read from Parquet first, not timed); peak RSS {mib(m.peak_rss_bytes)}.

| case | wall | ratio to baseline |
|---|---|---|
| baseline: event table -> pandas (`trace.df`) | {base:.2f} s | 1.0x |
| `annotate_occupancy` (every load) | {r["annotate_s"]:.2f} s | {r["annotate_s"] / base:.2f}x |
| `occupancy` section | {r["occupancy_s"]:.2f} s | {r["occupancy_s"] / base:.2f}x |
| `memcpy` section | {r["memcpy_s"]:.2f} s | {r["memcpy_s"] / base:.2f}x |
"""
    out = write_result("memcpy_occupancy", text)
    print(text)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
