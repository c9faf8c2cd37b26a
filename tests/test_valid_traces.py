"""Property test: every VALID trace (tests/valid_traces.py generates them, in each format) loads, gets every
section of the analysis and every renderer (terminal, markdown, json, and a diff of the document against
itself), with no exception: a valid but unusual trace is never an internal error (docs/analyses.md). Only a
truly empty trace may be refused, with the documented TracelensError. Plus invariants that can fail: the JSON
is plain JSON, utilizations lie in [0, 1], and the kernel and copy counts equal what was generated.

Bounded time in CI: few examples per format, derandomized (the same examples on every run).
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import warnings
from pathlib import Path

import pytest
import valid_traces as vt
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import tracelens
from tracelens import flop_model
from tracelens.analyses import REGISTRY
from tracelens.diff import compare
from tracelens.document.saved import type_error
from tracelens.errors import TracelensError
from tracelens.report import figures, render
from tracelens.report.diff_renderer import render_diff

# TRACELENS_PROPERTY_EXAMPLES=200 explores further locally (randomized then: derandomize stays for CI's count).
EXAMPLES = int(os.environ.get("TRACELENS_PROPERTY_EXAMPLES", "12"))
PROPERTY = settings(
    max_examples=EXAMPLES,
    derandomize=EXAMPLES <= 12,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _analyze_everything(path: Path) -> dict:
    trace = tracelens.load(path)
    doc = tracelens.analyze(trace)
    for fmt in ("terminal", "markdown", "json"):
        assert isinstance(render(doc, fmt), str)
    result = compare(doc, doc)
    for fmt in ("markdown", "json"):
        assert isinstance(render_diff(result, fmt), str)
    assert result["verdict"] != "regression"
    saved = json.loads(render(doc, "json"))  # plain JSON: no NaN, no numpy scalars
    # as a saved document it passes load_document's check against the declared types (so they cannot drift)
    assert type_error(saved) is None, type_error(saved)
    return saved


def _check(scen: vt.Scenario, fmt: str) -> None:
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # numpy overflow/invalid casts are bugs too
        path = vt.WRITERS[fmt](scen, Path(tmp))
        if scen.empty:  # nothing recorded: refusing it as bad input (exit 2) is allowed, nothing else
            try:
                _analyze_everything(path)
            except TracelensError:
                pass
            return
        doc = _analyze_everything(path)
    for key in (s.key for s in REGISTRY):
        assert key in doc, key
    summary = doc["summary"]
    kernels = scen.kernels
    # null, not 0, when the trace has no GPU activity at all
    assert (summary["kernel_count"] is None) == (summary["memcpy_count"] is None) == (not scen.gpu)
    assert (summary["kernel_count"] or 0) == len(kernels)
    assert (summary["memcpy_count"] or 0) == sum(g.kind == vt.MEMCPY for g in scen.gpu)
    assert summary["device_count"] == len({g.device for g in scen.gpu})
    if summary["gpu_utilization"] is not None:
        assert 0.0 <= summary["gpu_utilization"] <= 1.0 + 1e-9
    for dev in doc["devices"] or []:
        if dev["utilization"] is not None:
            assert 0.0 <= dev["utilization"] <= 1.0 + 1e-9
        assert dev["busy_ns"] <= dev["span_ns"]
    if kernels:
        assert doc["kernels"]["count"] == len(kernels)
        # the kernel time, as the generator placed the kernels (ns from integer µs)
        assert doc["kernels"]["total_ns"] == sum(k.dur for k in kernels) * 1000


# The two shapes that once stopped analyze (fixtures/robust/ holds them as Kineto files), in every format:
# shapes recorded on an op without a FLOP formula; a recorded-flops op inside modules with every kernel
# launched outside any module (a CUDA-graph capture).
UNMODELLED_SHAPES = vt.Scenario(
    rocm=False,
    devices=[0],
    device_props=False,
    host=[
        vt.HostEvent("op", "aten::relu", 101, 100, 20, dims=[[32, 1024]]),
        vt.HostEvent("launch", "cudaLaunchKernel", 101, 105, 5, correlation=7),
    ],
    gpu=[vt.GpuOp(vt.KERNEL, "relu_kernel", 0, 7, 112, 10, 7)],
)
GRAPH_CAPTURE = vt.Scenario(
    rocm=False,
    devices=[0],
    device_props=True,
    host=[
        vt.HostEvent("module", "nn.Module: Model_0", 101, 100, 60),
        vt.HostEvent("module", "nn.Module: Linear_0", 101, 110, 40),
        vt.HostEvent("op", "aten::mm", 101, 115, 30, dims=[[64, 256], [256, 128]], flops=2 * 64 * 128 * 256),
        vt.HostEvent("launch", "cudaGraphLaunch", 101, 200, 10, correlation=9),
    ],
    gpu=[
        vt.GpuOp(vt.KERNEL, "sm90_gemm", 0, 7, 215, 30, 9, graph=True),
        vt.GpuOp(vt.KERNEL, "relu_kernel", 0, 7, 245, 10, 9, graph=True),
    ],
)

# Found by this test (2026-11-28): a device synchronize on a trace whose only GPU op has no launch call (no
# correlation id) made the what-if graph's sync waits index the launches' ops, of which there were none.
SYNC_WITHOUT_LAUNCHES = vt.Scenario(
    rocm=True,
    devices=[0],
    device_props=False,
    host=[vt.HostEvent("sync", "hipDeviceSynchronize", 101, 11, 1)],
    flows=False,
    gpu=[vt.GpuOp(vt.KERNEL, "Cijk_Ailk_Bljk_SB_MT64x64x16", 0, 7, 0, 0, None)],
)

# Found by checking each document against its declared types (2026-11-28): a device whose only op is a zero-length
# copy has no busy time and a zero span, so memcpy.per_device[].busy_share and span_share are null (were declared
# float, and a saved document of such a trace would have been refused).
ZERO_LENGTH_COPY_ALONE = vt.Scenario(
    rocm=False,
    devices=[0],
    device_props=False,
    flows=False,
    host=[vt.HostEvent("launch", "cudaMemcpyAsync", 101, 10, 0)],
    gpu=[vt.GpuOp(vt.MEMCPY, "Memcpy HtoD", 0, 7, 10, 0, None)],
)


@pytest.mark.parametrize("fmt", sorted(vt.WRITERS))
@PROPERTY
@given(scen=vt.scenarios())
@example(scen=ZERO_LENGTH_COPY_ALONE)
@example(scen=UNMODELLED_SHAPES)
@example(scen=GRAPH_CAPTURE)
@example(scen=SYNC_WITHOUT_LAUNCHES)
def test_every_valid_trace_gets_every_section_and_renderer(fmt: str, scen: vt.Scenario) -> None:
    if fmt == "xplane" and not scen.gpu and not scen.host:
        return  # an XSpace with no planes: covered by the empty case of the other formats
    _check(scen, fmt)


@settings(
    max_examples=6,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(scen=vt.scenarios())
@example(scen=GRAPH_CAPTURE)
def test_png_figures_of_valid_traces(scen: vt.Scenario, tmp_path_factory: pytest.TempPathFactory) -> None:
    """report -o FILE.md --png: the plots beside the report are drawn for any valid trace (PNG bytes)."""
    if scen.empty:
        return
    folder = tmp_path_factory.mktemp("png")
    doc = tracelens.analyze(tracelens.load(vt.write_kineto(scen, folder)))
    pngs = figures(doc, "markdown", folder / "report.md", png=True)
    assert pngs or not scen.gpu  # the utilization plot, wherever there is GPU activity
    assert all(f.data.startswith(b"\x89PNG") for f in pngs)
    assert isinstance(render(doc, "markdown", figures=pngs), str)


# Recorded inputs as real traces hold them: shapes of any rank (0-d, unbatched, TensorLists), missing ones, and
# the texts of Input type and Concrete Inputs. A FLOP formula answers a count or None, never an exception.
_SHAPE = st.lists(st.integers(0, 64), max_size=5)
_RECORDED = st.tuples(
    st.one_of(st.none(), st.lists(st.one_of(_SHAPE, st.lists(_SHAPE, max_size=3)), max_size=10)),
    st.one_of(
        st.none(),
        st.lists(
            st.sampled_from(
                [
                    "float",
                    "c10::BFloat16",
                    "c10::Half",
                    "Scalar",
                    "",
                    "ScalarList",
                    "TensorList",
                    "bool",
                    "int",
                ]
            ),
            max_size=10,
        ),
    ),
    st.one_of(
        st.none(),
        st.lists(
            st.sampled_from(
                [
                    "",
                    "1",
                    "[1, 1]",
                    "[2, 2]",
                    "0",
                    "True",
                    "False",
                    "[]",
                    "1.5",
                    "same",
                    "valid",
                    "[True, False, True]",
                ]
            ),
            max_size=12,
        ),
    ),
)
_MODELLED = sorted(name for name in vt.MODELLED_OPS) + [
    "aten::_convolution",
    "aten::convolution_backward",
    "aten::conv1d",
    "aten::conv_transpose2d",
    "aten::bmm",
    "aten::scaled_dot_product_attention",
    "aten::_flash_attention_forward",
    "aten::cudnn_convolution",
]


@settings(max_examples=300, deadline=None, database=None, derandomize=True)
@given(name=st.sampled_from(_MODELLED), recorded=_RECORDED)
@example(
    name="aten::conv1d", recorded=([[3, 100], [8, 3, 5], [8]], None, None)
)  # unbatched: was a ValueError
def test_flop_formulas_take_any_recorded_inputs(name: str, recorded: tuple) -> None:
    assert flop_model.modelled(name)
    dims, types, concrete = (None if v is None else json.dumps(v) for v in recorded)
    counted = flop_model.op_flops(name, dims, types, concrete)
    assert counted.flops is None or (math.isfinite(counted.flops) and counted.flops >= 0)


def test_unbatched_convolution_is_not_modelled() -> None:
    """conv1d on an unbatched [C, L] input (torch >= 1.11) has no batch dimension to read: null, not a crash
    (and not a count that takes C for the batch)."""
    # conv1d(input, weight, bias, stride, padding, dilation, groups), the arguments recorded as Concrete Inputs
    concrete = '["", "", "", "[1]", "[0]", "[1]", "1"]'
    dims = "[[3, 100], [8, 3, 5], [8], [], [], [], []]"
    assert flop_model.op_flops("aten::conv1d", dims, None, concrete).flops is None
    batched = flop_model.op_flops(
        "aten::conv1d", "[[1, 3, 100], [8, 3, 5], [8], [], [], [], []]", None, concrete
    ).flops
    assert batched == 2.0 * 1 * 8 * (100 - 5 + 1) * 3 * 5  # 2 N O L_out C K, stride 1, no padding
