"""Occupancy calculator against hand-worked examples, Kineto's own estimates and real traces."""

from __future__ import annotations

import gzip
import json
import math
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from conftest import shared_params, shared_traces

from tracelens import occupancy_calc
from tracelens.analyses import analyze
from tracelens.analyses.names import is_collective_kernel
from tracelens.analyses.occupancy import empty_sm_ns, occupancy_report
from tracelens.enrich import annotate_occupancy, enrich
from tracelens.ingest import load
from tracelens.occupancy_calc import LimitsUnavailable, device_limits, single
from tracelens.trace import Trace


def limits(
    major: int, minor: int, sm_count: int | None = None, **overrides: int
) -> occupancy_calc.DeviceLimits:
    return device_limits({"compute_major": major, "compute_minor": minor, "sm_count": sm_count, **overrides})


# --- worked examples (arithmetic in the comments; limits from the CUDA programming guide's cc table) ---


def test_cc80_256_threads_64_registers_is_register_limited_at_half():
    # cc 8.0: 64 warps/SM, 65536 regs/SM in 4 sub-partitions, 32 blocks/SM, 164 KiB shared/SM.
    # warps/block = 256/32 = 8 -> warp limit 64/8 = 8 blocks
    # regs/warp = 64*32 = 2048 (already a multiple of 256); per sub-partition 16384/2048 = 8 warps -> 32 warps/SM
    #   -> register limit 32/8 = 4 blocks
    # shared: 0 + 1 KiB reserve = 1024 -> 167936/1024 = 164 blocks; block limit 32
    # active = 4 blocks = 32 warps -> theoretical 32/64 = 0.5, limited by registers
    r = single(limits(8, 0), 256, 64, 0)
    assert r["active_blocks_per_sm"] == 4
    assert r["limiter"] == "registers"
    assert r["theoretical"] == pytest.approx(0.5)


def test_shared_memory_limited_case():
    # cc 8.0, 128 threads, 32 regs, 40000 B dynamic shared memory.
    # shared: 40000 + 1024 = 41024 -> rounded up to 128 B = 41088; 167936 // 41088 = 4 blocks
    # warps: 4/block -> 16 blocks; regs: 1024/warp -> 16 warps/sub-partition -> 64 warps -> 16 blocks
    # active 4 blocks x 4 warps = 16 warps -> 16/64 = 0.25, limited by shared memory
    r = single(limits(8, 0), 128, 32, 40000)
    assert (r["active_blocks_per_sm"], r["limiter"]) == (4, "shared_memory")
    assert r["theoretical"] == pytest.approx(0.25)


def test_block_limited_case():
    # cc 8.6: 48 warps/SM (1536 threads), at most 16 blocks/SM, 100 KiB shared/SM.
    # 32 threads = 1 warp/block -> warp limit 48; 16 regs -> 512/warp -> 32 warps per sub-partition -> 128 blocks
    # shared: 1 KiB reserve -> 102400/1024 = 100 blocks; block limit 16 -> 16 blocks = 16 warps -> 16/48
    r = single(limits(8, 6), 32, 16, 0)
    assert (r["active_blocks_per_sm"], r["limiter"]) == (16, "blocks")
    assert r["theoretical"] == pytest.approx(16 / 48)


def test_register_allocation_granularity():
    # cc 7.0, 128 threads (4 warps), 33 regs: 33*32 = 1056 regs/warp -> rounded up to 256: 1280
    # 16384/1280 = 12.8 -> 12 warps per sub-partition -> 48 warps -> 48/4 = 12 blocks (warp limit 16, blocks 32)
    # theoretical 12*4/64 = 0.75. With 32 regs: 1024/warp -> 16 warps/sub-partition -> 16 blocks: ties with
    # the warp limit (64/4 = 16) -> reported as "warps" (CUDA's flag order), theoretical 1.0.
    r33 = single(limits(7, 0), 128, 33, 0)
    assert (r33["active_blocks_per_sm"], r33["limiter"]) == (12, "registers")
    assert r33["theoretical"] == pytest.approx(0.75)
    r32 = single(limits(7, 0), 128, 32, 0)
    assert (r32["active_blocks_per_sm"], r32["limiter"]) == (16, "warps")
    assert r32["theoretical"] == pytest.approx(1.0)


def test_register_sub_partitions_differ_between_gp100_and_gp10x():
    # 64 threads = 2 warps, 40 regs -> 1280 regs/warp.
    # cc 6.1 (4 sub-partitions): 16384/1280 = 12 warps each -> 48 warps -> 24 blocks
    # cc 6.0 (2 sub-partitions): 32768/1280 = 25 warps each -> 50 warps -> 25 blocks
    # warp limit 64/2 = 32, block limit 32: registers limit both
    assert single(limits(6, 1), 64, 40, 0)["active_blocks_per_sm"] == 24
    assert single(limits(6, 0), 64, 40, 0)["active_blocks_per_sm"] == 25


def test_shared_memory_granularity_before_ampere():
    # cc 7.0: 256-byte unit, no reserve. 129 B -> 256 B/block: 98304/256 = 384 (not the limit);
    # 24577 B -> 24832 B/block -> 98304 // 24832 = 3 blocks (24576 B would fit 4)
    assert single(limits(7, 0), 64, 0, 24576)["active_blocks_per_sm"] == 4
    assert single(limits(7, 0), 64, 0, 24577)["active_blocks_per_sm"] == 3


def test_estimated_achieved_and_waves_for_an_under_filled_grid():
    # cc 8.0, 108 SMs, 256 threads, 64 regs -> 4 active blocks (see above)
    # 54 blocks: blocks/SM = 0.5 -> estimated achieved = min(4, 0.5) * 256 / 2048 = 0.0625; waves = 54/(4*108)
    r = single(limits(8, 0, sm_count=108), 256, 64, 0, grid_blocks=54)
    assert r["estimated_achieved"] == pytest.approx(0.0625)
    assert r["waves"] == pytest.approx(54 / 432)
    # 10000 blocks: min(4, 92.6) * 256 / 2048 = 0.5
    assert single(limits(8, 0, sm_count=108), 256, 64, 0, grid_blocks=10000)[
        "estimated_achieved"
    ] == pytest.approx(0.5)


def test_zero_registers_mean_no_register_limit():
    # 0 registers: the register limit does not apply; 1024 threads = 32 warps -> warp limit 64/32 = 2
    r = single(limits(9, 0), 1024, 0, 0)
    assert (r["active_blocks_per_sm"], r["limiter"]) == (2, "warps")


def test_opt_in_shared_memory_is_allowed():
    # cc 8.0, 128 threads, 102400 B dynamic: 102400 + 1024 = 103424 (a multiple of 128);
    # 167936 // 103424 = 1 block = 4 warps -> 4/64. CUDA's default-config calculator (Kineto) says 0 here.
    r = single(limits(8, 0), 128, 32, 102400)
    assert r["active_blocks_per_sm"] == 1
    assert r["theoretical"] == pytest.approx(4 / 64)


def test_device_reported_limits_override_the_table():
    # Halve the registers per SM: 64 regs x 256 threads -> 8192/2048 = 4 warps per sub-partition -> 16 warps -> 2 blocks
    lim = limits(8, 0, regs_per_sm=32768)
    assert lim.sources["regs_per_sm"] == "device table"
    assert single(lim, 256, 64, 0)["active_blocks_per_sm"] == 2


def test_launches_that_cannot_fit_are_not_computed():
    lim = limits(8, 0)
    assert single(lim, 2048, 32, 0)["theoretical"] is None  # more threads than a block may have
    assert single(lim, 128, 300, 0)["theoretical"] is None  # more than 255 registers
    assert single(lim, 128, 32, 200 * 1024)["theoretical"] is None  # more shared memory than an SM has
    assert (
        single(lim, 1024, 255, 0)["theoretical"] is None
    )  # 255*32 -> 8192/warp x 32 warps > 65536 regs/block


def test_unknown_or_unsupported_devices_raise_with_a_reason():
    with pytest.raises(LimitsUnavailable, match="compute capability unknown"):
        device_limits({"name": "some GPU"})
    with pytest.raises(LimitsUnavailable, match="not in"):
        device_limits({"compute_major": 3, "compute_minor": 5})
    with pytest.raises(LimitsUnavailable, match="AMD"):
        device_limits({"vendor": "amd", "compute_major": 9, "compute_minor": 0})


# --- the section and the timeline columns on hand-built traces ---


def _kernel(name, start, end, device=0, threads=256, regs=64, smem=0, grid=1000, **extra):
    return {
        "kind": "kernel",
        "name": name,
        "start_ns": start,
        "end_ns": end,
        "device": device,
        "block_x": threads,
        "registers_per_thread": regs,
        "static_shared_bytes": smem,
        "grid_x": grid,
        **extra,
    }


def test_section_lost_time_and_columns_on_a_hand_built_trace():
    # GPU 0: cc 8.0, 100 SMs (64 warps, 2048 threads, 32 blocks per SM). The three kernels never overlap.
    #  k_low   [0,4000):    256 threads, 64 regs, grid 1000 -> 4 blocks by registers (see the cc 8.0 example),
    #                       estimated min(4, 10)*256/2048 = 0.5 -> not low (< 0.5 is low)
    #  k_small [5000,6000): 128 threads, 32 regs, grid 50 (< 100 SMs: under-filled); warps 64/4 = 16 blocks,
    #                       regs 1024/warp -> 64 warps -> 16 blocks (tie: "warps"); min(16, 0.5)*128/2048 = 0.03125
    #  k_smem  [7000,9000): 128 threads, 32 regs, 40000 B, grid 10000 -> 4 blocks by shared memory
    #                       -> 4*128/2048 = 0.25 (low)
    # Lost time (new rule): SM fill = min(1, grid/SMs) x (shape occupancy only when the block shape limits).
    #  k_low:   grid fill min(1, 1000/100) = 1; limited by registers, not the shape -> fill 1, lost 0
    #  k_small: grid fill 50/100 = 0.5; shape allows min(64/4, 32)*128/2048 = 1.0 -> fill 0.5, lost 1000*0.5 = 500
    #  k_smem:  grid fill 1; limited by shared memory (0.25 is information, not lost time) -> lost 0
    # lost = 500, all of it under-filled; nothing block-shape limited.
    rows = [
        _kernel("k_low", 0, 4000),
        _kernel("k_small", 5000, 6000, threads=128, regs=32, grid=50),
        _kernel("k_smem", 7000, 9000, threads=128, regs=32, smem=40000, grid=10000),
        {"kind": "memcpy", "name": "copy", "start_ns": 0, "end_ns": 10, "device": 0},
    ]
    trace = Trace.from_rows(
        rows, devices=[{"id": 0, "compute_major": 8, "compute_minor": 0, "sm_count": 100}]
    )
    doc = occupancy_report(trace)
    assert doc["lost_ns"] == 500
    assert (doc["under_filled_lost_ns"], doc["block_shape_lost_ns"]) == (500, 0)
    dev = doc["per_device"][0]
    assert dev["lost_ns"] == 500 and dev["sm_count"] == 100
    assert (dev["low_count"], dev["low_ns"]) == (2, 3000)  # k_small and k_smem
    assert (dev["under_filled_count"], dev["under_filled_ns"]) == (1, 1000)
    assert (dev["block_shape_limited_count"], dev["block_shape_limited_ns"]) == (0, 0)
    # k_low (registers, 4000) + k_smem (shared memory, 2000)
    assert dev["register_or_shared_limited_ns"] == 6000
    assert dev["collective_kernel_ns"] == 0
    # time-weighted estimated: (4000*0.5 + 1000*0.03125 + 2000*0.25) / 7000
    assert dev["time_weighted_estimated_achieved"] == pytest.approx((2000 + 31.25 + 500) / 7000)
    assert dev["limiter_ns"] == {"warps": 1000, "registers": 4000, "shared_memory": 2000, "blocks": 0}
    # Only launches that leave SMs empty are listed: k_small (k_smem's low occupancy is not lost time).
    top = doc["top_low_occupancy_kernels"]
    assert [k["name"] for k in top] == ["k_small"]
    assert top[0]["limiter"] == "warps" and top[0]["lost_ns"] == 500
    assert top[0]["sm_fill"] == pytest.approx(0.5) and top[0]["grid_blocks"] == pytest.approx(50)
    assert top[0]["shape_occupancy"] == pytest.approx(1.0) and top[0]["block_shape_limited"] is False
    assert top[0]["under_filled_count"] == 1

    annotated = annotate_occupancy(trace).df
    kernels = annotated[annotated["kind"] == "kernel"].set_index("name")
    assert kernels.loc["k_smem", "theoretical_occupancy"] == pytest.approx(0.25)
    assert kernels.loc["k_small", "estimated_achieved_occupancy"] == pytest.approx(0.03125)
    assert annotated.loc[annotated["kind"] == "memcpy", "theoretical_occupancy"].isna().all()


A100 = [{"id": 0, "compute_major": 8, "compute_minor": 0, "sm_count": 108}]


def test_concurrent_half_filling_launches_leave_nothing_empty():
    # empty_sm_ns directly: two launches [0,1000) each filling half the SMs -> sum 1 -> nothing empty.
    assert empty_sm_ns(np.array([0, 0]), np.array([1000, 1000]), np.array([0.5, 0.5])) == 0
    # Shifted by 500: [0,500) only A (0.5 empty -> 250), [500,1000) both (0), [1000,1500) only B (250) -> 500.
    assert empty_sm_ns(np.array([0, 500]), np.array([1000, 1500]), np.array([0.5, 0.5])) == pytest.approx(500)
    # Gaps with no launch running are not counted: A [0,100) and B [200,300), each fill 0.25 -> 75 + 75.
    assert empty_sm_ns(np.array([0, 200]), np.array([100, 300]), np.array([0.25, 0.25])) == pytest.approx(150)
    # Through the section: cc 8.0, 108 SMs; two 256-thread, 32-reg kernels of 54 blocks on two streams.
    # 256 threads: warps 64/8 = 8 blocks, regs 1024/warp -> 64 warps -> 8 blocks (tie: "warps"); shape allows
    # 8*256/2048 = 1.0, so fill = 54/108 = 0.5 each; both run over [0,1000): 0.5 + 0.5 = 1 -> lost 0.
    rows = [
        _kernel("a", 0, 1000, threads=256, regs=32, grid=54, stream=1),
        _kernel("b", 0, 1000, threads=256, regs=32, grid=54, stream=2),
    ]
    dev = occupancy_report(Trace.from_rows(rows, devices=A100))["per_device"][0]
    assert (dev["lost_ns"], dev["under_filled_lost_ns"], dev["block_shape_lost_ns"]) == (0, 0, 0)
    assert (dev["under_filled_count"], dev["under_filled_ns"]) == (2, 2000)  # still under-filled launches


def test_sixteen_thread_blocks_with_a_full_grid_lose_three_quarters():
    # cc 8.0, 108 SMs, grid 10000 (fill min(1, 10000/108) = 1), 16 threads, 32 regs, no shared memory.
    # warps: 1/block -> 64 blocks; regs 1024/warp -> 64 warps -> 64 blocks; shared 1 KiB reserve -> 164 blocks;
    # blocks/SM cap 32 -> limited by "blocks", i.e. by the block shape. Shape occupancy = 32*16/2048 = 0.25
    # < 0.5, so fill = 1 x 0.25 and lost = 1000 x (1 - 0.25) = 750, all of it block shape.
    rows = [_kernel("tiny_blocks", 0, 1000, threads=16, regs=32, grid=10000)]
    doc = occupancy_report(Trace.from_rows(rows, devices=A100))
    dev = doc["per_device"][0]
    assert dev["lost_ns"] == 750
    assert (dev["under_filled_lost_ns"], dev["block_shape_lost_ns"]) == (0, 750)
    assert (dev["block_shape_limited_count"], dev["block_shape_limited_ns"]) == (1, 1000)
    assert dev["limiter_ns"]["blocks"] == 1000 and dev["register_or_shared_limited_ns"] == 0
    (top,) = doc["top_low_occupancy_kernels"]
    assert top["block_shape_limited"] is True and top["shape_occupancy"] == pytest.approx(0.25)
    assert top["sm_fill"] == pytest.approx(0.25) and top["lost_ns"] == 750


def test_register_limited_kernel_with_a_full_grid_loses_nothing():
    # cc 8.0, 108 SMs, grid 10000 (fill 1), 256 threads, 128 regs: 128*32 = 4096 regs/warp -> 16384/4096 = 4
    # warps per sub-partition -> 16 warps -> 2 blocks (warp limit 8) -> theoretical 16/64 = 0.25, low, limited
    # by registers. The shape alone allows 8*256/2048 = 1.0: not block-shape limited -> fill 1, lost 0.
    # (Named so that it is not taken for a vendor-library kernel: the register rule alone gives the 0.)
    rows = [_kernel("reg_heavy", 0, 1000, threads=256, regs=128, grid=10000)]
    doc = occupancy_report(Trace.from_rows(rows, devices=A100))
    dev = doc["per_device"][0]
    assert dev["time_weighted_theoretical"] == pytest.approx(0.25)
    assert (dev["low_count"], dev["low_ns"]) == (1, 1000)  # still reported as low occupancy
    assert dev["lost_ns"] == 0 and dev["block_shape_limited_count"] == 0
    assert dev["register_or_shared_limited_ns"] == 1000 == dev["limiter_ns"]["registers"]
    assert doc["top_low_occupancy_kernels"] == []


def test_one_block_launch_loses_all_but_one_sm():
    # cc 8.0, 108 SMs, grid 1, 256 threads, 32 regs (8 blocks by warps and registers: shape allows 1.0).
    # fill = min(1, 1/108) = 1/108 -> lost = 108000 x (1 - 1/108) = 108000 x 107/108 = 107000, all under-filled.
    rows = [_kernel("one_block", 0, 108_000, threads=256, regs=32, grid=1)]
    dev = occupancy_report(Trace.from_rows(rows, devices=A100))["per_device"][0]
    assert dev["lost_ns"] == 107_000
    assert (dev["under_filled_lost_ns"], dev["block_shape_lost_ns"]) == (107_000, 0)
    assert (dev["under_filled_count"], dev["under_filled_ns"]) == (1, 108_000)


def test_nccl_kernels_lose_nothing():
    nccl = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
    # A 2-block, 512-thread NCCL kernel alone on 108 SMs would lose 1000 x 106/108 if counted like a compute
    # kernel (512 threads: 4 blocks by warps, shape 4*512/2048 = 1.0, fill 2/108); collectives are not the
    # user's grid to fix: lost 0, its time listed as collective time.
    assert is_collective_kernel(nccl)
    rows = [_kernel(nccl, 0, 1000, threads=512, regs=32, grid=2)]
    doc = occupancy_report(Trace.from_rows(rows, devices=A100))
    dev = doc["per_device"][0]
    assert (dev["lost_ns"], dev["under_filled_lost_ns"], dev["block_shape_lost_ns"]) == (0, 0, 0)
    assert dev["collective_kernel_ns"] == 1000
    assert doc["top_low_occupancy_kernels"] == []


def test_unknown_compute_capability_is_reported_not_guessed():
    rows = [_kernel("k", 0, 100), _kernel("k2", 0, 100, device=1, regs=None)]
    trace = Trace.from_rows(
        rows, devices=[{"id": 0, "name": "Mystery GPU"}, {"id": 1, "compute_major": 8, "compute_minor": 0}]
    )
    doc = occupancy_report(trace)
    json.dumps(doc, allow_nan=False)
    reasons = {n["device"]: n["reason"] for n in doc["not_computed"]}
    assert "compute capability unknown" in reasons[0]
    assert "registers" in reasons[1]
    assert doc["computed_count"] == 0 and doc["lost_ns"] == 0
    assert enrich(trace).df["theoretical_occupancy"].isna().all()


def test_no_sm_count_gives_theoretical_only():
    trace = Trace.from_rows(
        [_kernel("k", 0, 100, threads=128, regs=32, smem=40000)],
        devices=[{"id": 0, "compute_major": 8, "compute_minor": 0}],
    )
    dev = occupancy_report(trace)["per_device"][0]
    assert dev["basis"] == "theoretical"
    assert dev["time_weighted_estimated_achieved"] is None
    assert dev["time_weighted_theoretical"] == pytest.approx(0.25)
    # Theoretical 0.25 is limited by shared memory (40000 B -> 4 blocks): information, not lost time. Without
    # an SM count the grid fill is unknown and counts as full -> fill 1, lost 0.
    assert dev["lost_ns"] == 0
    assert dev["register_or_shared_limited_ns"] == 100 == dev["limiter_ns"]["shared_memory"]
    assert dev["under_filled_count"] == 0 and dev["sm_count"] is None


def test_empty_trace():
    trace = Trace.from_rows([])
    doc = occupancy_report(trace)
    assert doc["kernel_count"] == 0 and doc["per_device"] == [] and doc["lost_ns"] == 0
    assert annotate_occupancy(trace) is trace


# --- real traces ---


def _kineto_kernels(path: Path) -> tuple[list[dict], dict[int, dict]]:
    with gzip.open(path, "rt") as fh:
        data = json.load(fh)
    props = {int(p["id"]): p for p in data.get("deviceProperties") or []}
    kernels = [
        e
        for e in data["traceEvents"]
        if e.get("ph") == "X"
        and str(e.get("cat", "")).lower() == "kernel"
        and "est. achieved occupancy %" in e.get("args", {})
    ]
    return kernels, props


def _kineto_default_config_fits(args: dict, prop: dict) -> bool:
    """Whether CUDA's default-config calculator (what Kineto calls) accepts the kernel's shared memory:
    roundup(smem + reserve, unit) <= sharedMemPerBlock + reserve (reserve 1 KiB, unit 128 B from cc 8.0)."""
    cc8 = prop["computeMajor"] >= 8
    reserve, unit = (1024, 128) if cc8 else (0, 256)
    allocated = math.ceil((args["shared memory"] + reserve) / unit) * unit
    return allocated <= prop["sharedMemPerBlock"] + reserve


def _traces_with_kineto_occupancy() -> list:
    paths = [p for p in shared_traces("pytorch", "*.json.gz") if _kineto_kernels(p)[0]]
    return [pytest.param(p, id=p.name) for p in paths] or shared_params("pytorch", "<none>")


@pytest.mark.parametrize("path", _traces_with_kineto_occupancy())
def test_estimated_achieved_matches_kineto(path: Path):
    """tracelens's estimate (through tracelens.load) equals Kineto's est. achieved occupancy % to 1 point
    for >= 99 % of kernels; where Kineto's default-config calculator rejects opted-in shared memory it writes 0
    and tracelens, knowing the kernel ran, reports a positive occupancy (docs/occupancy.md)."""
    kernels, props = _kineto_kernels(path)
    by_key = {}
    for e in kernels:
        key = (int(e["args"]["device"]), int(e["args"]["correlation"]))
        assert key not in by_key
        by_key[key] = e
    frame = load(path).df
    frame = frame[(frame["kind"] == "kernel") & frame["correlation_id"].notna()]
    ours = {
        (int(d), int(c)): o
        for d, c, o in zip(
            frame["device"], frame["correlation_id"], frame["estimated_achieved_occupancy"], strict=True
        )
    }
    matched = rejected = close = 0
    for key, e in by_key.items():
        args = e["args"]
        estimate = ours[key]
        assert estimate is not None and not np.isnan(estimate), key
        if _kineto_default_config_fits(args, props[key[0]]):
            matched += 1
            close += abs(100 * float(estimate) - args["est. achieved occupancy %"]) <= 1.0
        else:
            rejected += 1
            assert args["est. achieved occupancy %"] == 0 and estimate > 0
    assert matched + rejected == len(by_key)
    assert close >= 0.99 * matched, f"{close}/{matched} within 1 point"


@pytest.mark.parametrize("path", shared_params("tf", "v100x8*.xplane.pb"))
def test_xplane_kernels_get_hand_checked_occupancy(path: Path):
    """The shared xplane files carry no occ_pct (TF 2.4 wrote `regs:38 shm:0 grid:160,1,1 block:1024,1,1`),
    so check one configuration by hand: cc 7.0 (device planes say so), 80 SMs, 1024 threads = 32 warps ->
    warp limit 64/32 = 2; 38 regs -> 1216 -> 1280/warp -> 16384/1280 = 12 warps per sub-partition -> 48 warps
    -> 1 block; theoretical 32/64 = 0.5; grid 160 = 2 blocks/SM -> estimated min(1, 2)*1024/2048 = 0.5."""
    trace = load(path)
    frame = trace.df
    k = frame[
        (frame["kind"] == "kernel")
        & (frame["registers_per_thread"] == 38)
        & (frame["block_x"] == 1024)
        & (frame["grid_x"] == 160)
    ]
    assert len(k) > 0
    assert np.allclose(k["theoretical_occupancy"].astype(float), 0.5)
    assert np.allclose(k["estimated_achieved_occupancy"].astype(float), 0.5)
    doc = analyze(trace, sections=["occupancy"])["occupancy"]
    json.dumps(doc, allow_nan=False)
    assert doc["computed_count"] == doc["kernel_count"]


@pytest.mark.parametrize(
    "path",
    shared_params("pytorch", "*.json.gz")
    + shared_params("nsys", "*.sqlite")
    + shared_params("tf", "*.xplane.pb"),
)
def test_real_traces_give_json_safe_occupancy_or_a_reason(path: Path):
    trace = load(path)
    doc = occupancy_report(trace)
    json.dumps(doc, allow_nan=False)
    assert doc["kernel_count"] == int((trace.df["kind"] == "kernel").sum())
    for dev in doc["per_device"]:
        if dev["computed_count"] < dev["kernel_count"]:
            assert dev["not_computed_reason"]
    for note in doc["not_computed"]:
        assert note["reason"]


# (cc, max warps per SM, max resident blocks per SM), typed from the CUDA C++ Programming Guide's
# "Technical Specifications per Compute Capability" table, independently of tracelens/gpu_specs.py.
GUIDE_TABLE = [
    ((5, 0), 64, 32),
    ((5, 2), 64, 32),
    ((5, 3), 64, 32),
    ((6, 0), 64, 32),
    ((6, 1), 64, 32),
    ((6, 2), 64, 32),
    ((7, 0), 64, 32),
    ((7, 2), 64, 32),
    ((7, 5), 32, 16),
    ((8, 0), 64, 32),
    ((8, 6), 48, 16),
    ((8, 7), 48, 16),
    ((8, 9), 48, 24),
    ((9, 0), 64, 32),
    ((10, 0), 64, 32),
    ((10, 3), 64, 32),
    ((12, 0), 48, 32),
]


@pytest.mark.parametrize(("cc", "max_warps", "max_blocks"), GUIDE_TABLE, ids=lambda v: str(v))
def test_every_compute_capability_in_the_table(cc, max_warps, max_blocks):
    lim = limits(*cc)
    # 1 warp per block, no registers, no shared memory: only the block limit binds -> max_blocks / max_warps
    one_warp = single(lim, 32, 0, 0)
    assert (one_warp["active_blocks_per_sm"], one_warp["limiter"]) == (max_blocks, "blocks")
    assert one_warp["theoretical"] == pytest.approx(max_blocks / max_warps)
    # 1024 threads = 32 warps: floor(max_warps / 32) blocks (1 on 32- and 48-warp SMs, 2 on 64-warp SMs)
    full = single(lim, 1024, 0, 0)
    assert full["active_blocks_per_sm"] == max_warps // 32
    assert full["theoretical"] == pytest.approx((max_warps // 32) * 32 / max_warps)


@pytest.mark.parametrize("path", shared_params("nsys", "a100_saxpy*.sqlite"))
def test_nsys_saxpy_occupancy_by_hand(path: Path):
    """All 5 saxpy kernels (SQL: grid 2, block 512, 26 regs, no shared memory; TARGET_INFO_GPU: A100, cc 8.0,
    108 SMs). 16 warps/block -> warp limit 64/16 = 4; 26*32 = 832 -> 1024 regs/warp -> 16 warps per
    sub-partition -> 64 warps -> 4 blocks (tie: "warps"); theoretical 4*16/64 = 1.0.
    Estimated: min(4, 2/108) * 512 / 2048 = 0.00463; every launch is under-filled (2 blocks < 108 SMs).
    Lost time: the shape allows min(4, 32)*512/2048 = 1.0 (not block-shape limited), so fill = 2/108; the
    launches do not overlap (SQL, one stream), so lost = sum of durations x (1 - 2/108), all under-filled."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    spans = con.execute("SELECT start, end FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start").fetchall()
    con.close()
    durations = [e - s for s, e in spans]
    assert all(prev_end <= start for (_, prev_end), (start, _) in zip(spans, spans[1:], strict=False))
    trace = load(path)
    kernels = trace.df[trace.df["kind"] == "kernel"]
    assert len(kernels) == 5
    assert np.allclose(kernels["theoretical_occupancy"].astype(float), 1.0)
    estimated = 2 / 108 * 512 / 2048
    assert np.allclose(kernels["estimated_achieved_occupancy"].astype(float), estimated, rtol=1e-6)
    doc = occupancy_report(trace)
    dev = doc["per_device"][0]
    assert dev["under_filled_count"] == 5 and dev["limiter_ns"]["warps"] == sum(durations)
    assert doc["lost_ns"] == pytest.approx(sum(durations) * (1 - 2 / 108), abs=1)
    assert doc["under_filled_lost_ns"] == doc["lost_ns"] and doc["block_shape_lost_ns"] == 0


@pytest.mark.parametrize("path", shared_params("nsys", "rtx3080*.sqlite"))
def test_nsys_rtx3080_occupancy_by_hand(path: Path):
    """RTX 3080 (cc 8.6, 68 SMs, 48 warps and 16 blocks per SM, 102400 B shared per SM), two kernels (SQL):
    - grid 1, 128 threads, 16 regs: 512 regs/warp -> 128 warps by registers -> 32 blocks; warps 48/4 = 12;
      shared 1 KiB reserve -> 100; blocks 16 -> 12 blocks (warps), theoretical 48/48 = 1.0,
      estimated min(12, 1/68) * 128 / 1536.
    - grid 1, 16 threads, 28 regs, 16 B static: 896 -> 1024 regs/warp -> 64 blocks; warps 48;
      shared 16 + 1024 -> 1152 -> 88; blocks 16 -> 16 (blocks), theoretical 16/48,
      estimated min(16, 1/68) * 16 / 1536.
    Lost time (the two launches do not overlap): the first is limited by warps but its shape allows
    12*128/1536 = 1.0, fill 1/68 -> d0 x 67/68. The second is limited by the blocks-per-SM cap, shape
    min(48, 16)*16/1536 = 1/6 < 0.5 -> block-shape limited, fill 1/68 x 1/6 = 1/408 -> d1 x 407/408.
    Under-filled part (grid fill only): (d0 + d1) x 67/68; the block-shape part is the rest."""
    trace = load(path)
    kernels = trace.df[trace.df["kind"] == "kernel"].sort_values("start_ns")
    assert list(kernels["block_x"]) == [128, 16]
    assert kernels["theoretical_occupancy"].astype(float).tolist() == pytest.approx([1.0, 16 / 48], rel=1e-6)
    assert kernels["estimated_achieved_occupancy"].astype(float).tolist() == pytest.approx(
        [128 / (68 * 1536), 16 / (68 * 1536)], rel=1e-6
    )
    limiters = occupancy_report(trace)["per_device"][0]["limiter_ns"]
    durations = (kernels["end_ns"] - kernels["start_ns"]).tolist()
    assert (limiters["warps"], limiters["blocks"]) == (durations[0], durations[1])
    assert kernels["end_ns"].iloc[0] <= kernels["start_ns"].iloc[1]
    doc = occupancy_report(trace)
    d0, d1 = durations
    lost = d0 * 67 / 68 + d1 * 407 / 408
    under = (d0 + d1) * 67 / 68
    assert doc["lost_ns"] == pytest.approx(lost, abs=1)
    assert doc["under_filled_lost_ns"] == pytest.approx(under, abs=1)
    assert doc["block_shape_lost_ns"] == pytest.approx(lost - under, abs=2)
    dev = doc["per_device"][0]
    assert (dev["block_shape_limited_count"], dev["block_shape_limited_ns"]) == (1, d1)


@pytest.mark.parametrize(
    ("name", "library"),
    [
        ("volta_sgemm_128x64_nn", True),  # cuBLAS
        ("volta_scudnn_128x64_relu_interior_nn_v1", True),  # cuDNN
        ("ampere_fp16_s16816gemm_fp16_256x128_ldg8_f2f_stages_64x3_nn", True),
        ("sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x256x64_kernel", True),
        ("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_16x6_tn_align4>(Params)", True),
        ("nvjet_hsh_128x256_64x4_2x1_v_bz_coopB_TNT", True),  # cuBLAS 12.8+ kernels
        ("void gemv2T_kernel_val<int, int, float, float, float, 128, 16, 4, 4, false>", True),
        ("void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4>>(Flash_fwd_params)", True),
        ("Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1", True),  # rocBLAS / hipBLASLt (Tensile)
        ("void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>", False),
        ("triton_poi_fused_add_relu_0", False),  # torch.compile output: the user's own (generated) code
        (
            "void gemm_kernel<float, 128>(float const*, float*)",
            False,
        ),  # a user kernel named gemm: not a vendor's
        ("saxpy(double *, double *, double *, double, int)", False),
    ],
)
def test_library_kernels_are_recognized_by_vendor_names(name, library):
    from tracelens.analyses.names import is_library_kernel

    assert is_library_kernel(name) is library


@pytest.mark.parametrize("sm_count", [-1, 0])
def test_a_damaged_sm_count_leaves_the_grid_fill_unknown(sm_count: int) -> None:
    # A header's numSms of -1 (damaged; Kineto writes cudaDeviceProp.multiProcessorCount): 132 blocks are not
    # "fewer than the GPU's -1 SMs"; the grid fill is unknown, nothing is lost to it (was: 1000 ns lost).
    rows = [_kernel("k", 0, 1000, threads=256, regs=32, grid=132)]
    devices = [{"id": 0, "compute_major": 8, "compute_minor": 0, "sm_count": sm_count}]
    dev = occupancy_report(Trace.from_rows(rows, devices=devices))["per_device"][0]
    assert dev["sm_count"] is None
    assert (dev["lost_ns"], dev["under_filled_lost_ns"], dev["under_filled_count"]) == (0, 0, 0)
