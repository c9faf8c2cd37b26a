"""The occupancy section's shortcuts equal the ways they replace: a single device's launches taken whole against
the per-device gathers, the launches' durations read from the shared event columns against KernelOccupancy's
reads from the store, the time-weighted mean without compression where every value is known against the masked
one, and the kernel-name rules' kept answers against the regexes themselves."""

from __future__ import annotations

import numpy as np
import pytest

import tracelens
from tests.conftest import fixture_path
from tracelens.analyses import names, occupancy
from tracelens.analyses.columns import event_columns
from tracelens.enrich import KernelOccupancy

TRACES = [
    "gpu/pairs/occupancy_before.pt.trace.json.gz",
    "gpu/pairs_h100/occupancy_before.pt.trace.json.gz",
    "gpu/resnet18_train_cuda.pt.trace.json.gz",
    "gpu/transformer_bf16_cuda.pt.trace.json.gz",
    "gpu/cuda_graph_cuda.pt.trace.json.gz",
    "nsys/handmade_nsys2026.sqlite",
]


@pytest.fixture(scope="module", params=TRACES)
def trace(request: pytest.FixtureRequest) -> tracelens.Trace:
    return tracelens.load(fixture_path(request.param))


def test_launch_durations_and_starts_equal_the_store_reads(trace: tracelens.Trace) -> None:
    occ = occupancy._KernelOccupancy(trace)
    reference = KernelOccupancy(trace)  # duration from the store's start_ns / end_ns
    assert occ.duration.dtype == reference.duration.dtype == np.int64
    assert np.array_equal(occ.duration, reference.duration)
    store_start = np.asarray(trace.store.column("start_ns").to_numpy(zero_copy_only=False))[occ.rows]
    assert np.array_equal(occ.start, store_start)


def test_whole_device_launches_equal_the_gathered_ones(trace: tracelens.Trace) -> None:
    occ = occupancy._KernelOccupancy(trace)
    devices = occ.per_config["device"]
    for dev in occ.device_notes:  # a loop over the devices
        on_config = devices == dev
        whole = occupancy.device_launches(occ, on_config)
        gathered = occupancy.device_launches(occ, on_config, gather_all=True)
        for a, b in zip(whole, gathered, strict=True):
            assert a.dtype == b.dtype
            assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    # every configuration marked: the launch arrays themselves, equal to gathering at every launch
    everything = np.ones(devices.size, bool)
    for a, b in zip(
        occupancy.device_launches(occ, everything),
        occupancy.device_launches(occ, everything, gather_all=True),
        strict=True,
    ):
        assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f")


def _weighted_reference(values: np.ndarray, weights: np.ndarray) -> float | None:
    """occupancy._weighted as it was: the known values and their weights compressed first."""
    ok = np.isfinite(values)
    total = weights[ok].sum()
    if not ok.any() or total <= 0:
        return None
    return float((values[ok] * weights[ok]).sum() / total)


@pytest.mark.parametrize("seed", range(8))
def test_weighted_equals_the_masked_mean(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for n in (0, 1, 2, 7, 1000, 65_537):
        values = rng.random(n)
        weights = rng.integers(0, 10**9, n)
        cases = [values, np.full(n, 0.25)]  # all known; all equal (ties)
        if n:
            with_nan = values.copy()
            with_nan[rng.random(n) < 0.3] = np.nan
            cases += [with_nan, np.full(n, np.nan)]
        for case in cases:
            for w in (weights, np.zeros(n, np.int64), -weights):
                got, expected = occupancy._weighted(case, w), _weighted_reference(case, w)
                assert got == expected or (
                    got is not None and expected is not None and np.isnan(got) and np.isnan(expected)
                )


KERNEL_NAMES = [
    "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
    "ncclKernel_AllGather_RING_LL_Sum_int8_t",
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>",
    "sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x32_stage4_warpsize2x2x1_tensor16x8x16_kernel",
    "ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn",
    "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>",
    "nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NNN",
    "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4>>",
    "Cijk_Ailk_Bljk_HHS_BH_MT128x128x32",
    "",
    "NCCL",
    "rcclKernelDev",
    "xncclkernel",
]


def test_kept_answers_equal_the_patterns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(names, "_collective_answers", {})
    monkeypatch.setattr(names, "_library_answers", {})
    for _ in range(3):  # first tested, then kept
        for name in KERNEL_NAMES:
            assert names.is_collective_kernel(name) is bool(names.COLLECTIVE_KERNEL_PATTERN.search(name))
            assert names.is_library_kernel(name) is bool(names.LIBRARY_KERNEL_PATTERN.search(name))
    assert len(names._collective_answers) == len(set(KERNEL_NAMES))
    # a name's answer is kept by its text: an equal string made anew finds it, a different one does not
    made = "".join(["nccl", "DevKernel_AllReduce_Sum_f32_RING_LL"])
    assert made is not KERNEL_NAMES[0] and names.is_collective_kernel(made)
    assert not names.is_collective_kernel(KERNEL_NAMES[2])


def test_kept_answers_stay_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(names, "_collective_answers", {})
    monkeypatch.setattr(names, "_library_answers", {})
    monkeypatch.setattr(names, "KEPT_ANSWERS", 4)
    for i in range(50):
        name = f"ncclKernel_{i}" if i % 2 else f"cublas_{i}"
        assert names.is_collective_kernel(name) is bool(i % 2)
        assert names.is_library_kernel(name) is (not i % 2)
        assert len(names._collective_answers) <= 4 and len(names._library_answers) <= 4


def _kernel(name: str, start: int, end: int, device: int | None, threads: int = 256, regs: int = 64) -> dict:
    return {
        "kind": "kernel",
        "name": name,
        "start_ns": start,
        "end_ns": end,
        "device": device,
        "block_x": threads,
        "registers_per_thread": regs,
        "static_shared_bytes": 0,
        "grid_x": 40,
    }


def test_several_devices_take_the_gathered_path() -> None:
    """Launches of two devices interleaved (and one without a device): each device's arrays are its launches'."""
    rows = [
        _kernel("k", 0, 100, 0),
        _kernel("ncclDevKernel_AllReduce", 50, 400, 1),
        _kernel("k2", 120, 200, 0, threads=32),
        _kernel("k", 210, 260, None),
        _kernel("cublasGemm", 300, 350, 1, regs=200),
        _kernel("k2", 400, 410, 0, threads=32),
    ]
    devices = [{"id": d, "compute_major": 8, "compute_minor": 0, "sm_count": 80} for d in (0, 1)]
    trace = tracelens.Trace.from_rows(rows, devices=devices)
    occ = occupancy._KernelOccupancy(trace)
    assert np.array_equal(occ.duration, KernelOccupancy(trace).duration)
    device = occ.per_config["device"][occ.config]
    for dev in (0, 1):
        config, dur, excluded_as, start, _ = occupancy.device_launches(occ, occ.per_config["device"] == dev)
        on = np.flatnonzero(device == dev)
        assert np.array_equal(config, occ.config[on]) and np.array_equal(dur, occ.duration[on])
        assert np.array_equal(start, np.array([r["start_ns"] for r in rows])[on])
        assert np.array_equal(excluded_as, occ.excluded_as[on])
    doc = occupancy.occupancy_report(trace)
    assert [d["kernel_count"] for d in doc["per_device"]] == [3, 2]


def _spellings(name: str) -> list[str]:
    return [name, name.upper(), name.lower(), name.swapcase(), f"x_{name}_y", f"{name}::k"]


LIBRARY_SPELLINGS = [
    *(
        "cuBLAS",
        "nvjet_tst",
        "splitKreduce_kernel",
        "gemv2N_kernel",
        "gemv2T",
        "gemmSN_NN_kernel",
        "gemmk1_kernel",
    ),
    *(
        "maxwell_sgemm_128x64",
        "turing_h1688gemm",
        "sm90_xmma_fprop",
        "sm80_dgrad_x",
        "hopper_fmha_v2",
        "ada_conv",
    ),
    *("sm100_wgrad", "cudnn::detail", "cask_cudnn", "xmma_new", "cutlass_tensorop", "flash_fwd_splitkv"),
    *(
        "flashattn",
        "flash_attn_bwd",
        "flash::compute",
        "fmha_cutlassF",
        "implicit_convolve_sgemm",
        "winograd4x4",
    ),
    *("Cijk_Alik", "miopenSp3AsmConv", "rocblas_gemm", "hipblasLt", "ck::kernel_gemm", "ck_tile::FmhaFwd"),
    *("ampere_x", "sm8_gemm", "xsm80_gemm", "flashy", "gem_m", "c_k::", "ckb::"),  # near misses
    *("nccl", "ncclKernel", "rcclDevX", "xncclKernel", "_rccl_dev", "NCCLDEV", "nccl1Kernel", "ncc_l_kernel"),
    *(
        "cublaſ",
        "ncclKERNEſ",
        "ſm80_xmma_gemm",
        "ⅽublas",
        "flaſh_fwd",
        "gemm\u00e9",
    ),  # non-ASCII: always searched
]


def test_hint_prefilter_keeps_every_match(monkeypatch: pytest.MonkeyPatch) -> None:
    """The answers (an ASCII name without the patterns' hint texts skips the search) equal the patterns' own on
    library, collective and other names in many spellings, and on every name of the test traces."""
    monkeypatch.setattr(names, "_collective_answers", {})
    monkeypatch.setattr(names, "_library_answers", {})
    every = [s for name in [*LIBRARY_SPELLINGS, *KERNEL_NAMES] for s in _spellings(name)]
    for path in TRACES:
        every += [str(n) for n in event_columns(tracelens.load(fixture_path(path))).names]
    hits = 0
    for name in every:
        library = bool(names.LIBRARY_KERNEL_PATTERN.search(name))
        collective = bool(names.COLLECTIVE_KERNEL_PATTERN.search(name))
        assert names.is_library_kernel(name) is library, name
        assert names.is_collective_kernel(name) is collective, name
        hits += library + collective
    assert hits > 100  # the spellings do reach the patterns
