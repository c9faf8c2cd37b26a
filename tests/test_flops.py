"""FLOPs from recorded shapes, the peak table and MFU (tracelens/flop_model.py, tracelens/peaks.py, the
``compute`` block of tracelens/analyses/ops/flops.py): formulas derived by hand, and on real Kineto traces against
the ``Input Dims`` of the JSON read directly."""

from __future__ import annotations

import gzip
import json
import re
from urllib.parse import urlparse

import pytest

import tracelens
from tests.conftest import shared_traces
from tracelens import flop_model, peaks
from tracelens.analyses.ops import flop_ops, ops_report
from tracelens.trace import Trace


def _op(name: str, start: int, end: int, dims=None, types=None, concrete=None, tid: int = 1, **extra) -> dict:
    row = {"kind": "cpu_op", "name": name, "start_ns": start, "end_ns": end, "pid": 1, "tid": tid, **extra}
    for column, value in (("input_dims", dims), ("input_types", types), ("concrete_inputs", concrete)):
        if value is not None:
            row[column] = json.dumps(value, separators=(",", ":"))
    return row


def _kernel(start: int, end: int) -> dict:
    return {"kind": "kernel", "name": "k", "start_ns": start, "end_ns": end, "device": 0, "stream": 7}


# --- formulas, by hand -----------------------------------------------------------------------------------


def test_matmul_formulas():
    assert flop_model.op_flops("aten::mm", "[[8,64],[64,32]]", None, None).flops == 2 * 8 * 64 * 32
    assert (
        flop_model.op_flops("aten::addmm", "[[32],[8,64],[64,32],[],[]]", None, None).flops == 2 * 8 * 64 * 32
    )
    assert flop_model.op_flops("aten::bmm", "[[4,8,64],[4,64,32]]", None, None).flops == 2 * 4 * 8 * 64 * 32
    assert (
        flop_model.op_flops("aten::baddbmm", "[[4,8,32],[4,8,64],[4,64,32],[],[]]", None, None).flops
        == 2 * 4 * 8 * 64 * 32
    )
    # matmul broadcasts batch dims and promotes 1-D operands; linear: rows of the input x out x in features.
    assert (
        flop_model.op_flops("aten::matmul", "[[2,1,8,64],[3,64,32]]", None, None).flops == 2 * 6 * 8 * 64 * 32
    )
    assert flop_model.op_flops("aten::matmul", "[[64],[64,32]]", None, None).flops == 2 * 64 * 32
    assert (
        flop_model.op_flops("aten::linear", "[[2,141,512],[2048,512],[2048]]", None, None).flops
        == 2 * 2 * 141 * 2048 * 512
    )
    # Shapes that do not multiply, or were not recorded: no FLOPs rather than a guess.
    assert flop_model.op_flops("aten::mm", "[[8,64],[32,32]]", None, None).flops is None
    assert flop_model.op_flops("aten::mm", None, None, None).flops is None
    assert (
        flop_model.op_flops("aten::mm", "[[8,64],[64,32]]", '["c10::BFloat16","c10::BFloat16"]', None).dtype
        == "BF16"
    )
    assert (
        flop_model.op_flops(
            "aten::addmm", "[[32],[8,64],[64,32]]", '["float","c10::Half","c10::Half"]', None
        ).dtype
        == "FP16"
    )


def test_convolution_formulas():
    # conv2d: x [2, 16, 32, 32], w [64, 4, 3, 3] (groups 4: 16 / 4 input channels per group), stride 2,
    # padding 1, dilation 1 -> out 16x16: 2 * 2 * 64 * 16 * 16 * (4 * 3 * 3) FLOPs.
    want = 2 * 2 * 64 * 16 * 16 * 4 * 3 * 3
    conv2d = flop_model.op_flops(
        "aten::conv2d",
        "[[2,16,32,32],[64,4,3,3],[64],[],[],[],[]]",
        '["float","float","float","ScalarList","ScalarList","ScalarList","Scalar"]',
        '["","","","[2, 2]","[1, 1]","[1, 1]","4"]',
    )
    assert (conv2d.flops, conv2d.op_class, conv2d.dtype) == (want, "conv", "FP32")
    # Dilation 2 widens the kernel to 5: out (32 + 2 - 4 - 1) // 2 + 1 = 15.
    assert (
        flop_model.op_flops(
            "aten::convolution",
            "[[2,16,32,32],[64,4,3,3],[64]]",
            None,
            '["","","","[2, 2]","[1, 1]","[2, 2]","False","[0, 0]","4"]',
        ).flops
        == 2 * 2 * 64 * 15 * 15 * 4 * 3 * 3
    )
    # cudnn_convolution lists padding before stride; allow_tf32=True makes an FP32 convolution TF32.
    cudnn = flop_model.op_flops(
        "aten::cudnn_convolution",
        "[[2,16,32,32],[64,4,3,3]]",
        '["float","float"]',
        '["","","[1, 1]","[2, 2]","[1, 1]","4","False","False","True"]',
    )
    assert (cudnn.flops, cudnn.dtype) == (want, "TF32")
    # A transposed convolution: every input element meets (out channels per group) x kernel weights.
    assert (
        flop_model.op_flops("aten::conv_transpose2d", "[[2,16,8,8],[16,8,4,4]]", None, None).flops
        == 2 * 2 * 16 * 8 * 8 * 8 * 4 * 4
    )
    # Backward: one forward per gradient asked for (input and weight here; the bias gradient is a sum).
    backward = flop_model.op_flops(
        "aten::convolution_backward",
        "[[2,64,16,16],[2,16,32,32],[64,4,3,3],[],[],[],[],[],[],[],[]]",
        None,
        '["","","","[64]","[2, 2]","[1, 1]","[1, 1]","False","[0, 0]","4","[True, True, False]"]',
    )
    assert backward.flops == 2 * want
    assert (
        flop_model.op_flops(
            "aten::conv2d", "[[1,3,8,8],[4,3,3,3]]", None, '["","","","[1]","same","[1]","1"]'
        ).flops
        == 2 * 1 * 4 * 8 * 8 * 3 * 3 * 3
    )


def test_attention_formulas():
    # [B, H, S, D] for the SDPA ops, [B, S, H, D] for the flash/efficient kernels' own ops.
    fwd = 2 * 2 * 8 * 128 * 256 * (64 + 64)  # B=2, H=8, Sq=128, Sk=256, D=Dv=64: Q K^T and P V
    assert (
        flop_model.op_flops(
            "aten::scaled_dot_product_attention",
            "[[2,8,128,64],[2,8,256,64],[2,8,256,64]]",
            None,
            '["","","","","0.","False"]',
        ).flops
        == fwd
    )
    flash = flop_model.op_flops(
        "aten::_flash_attention_forward",
        "[[2,128,8,64],[2,256,8,64],[2,256,8,64]]",
        '["c10::BFloat16","c10::BFloat16","c10::BFloat16"]',
        '["","","","","","128","256","0.","True"]',
    )
    assert (flash.flops, flash.op_class, flash.dtype) == (fwd / 2, "attention", "BF16")  # causal: half
    # Backward: 2.5 x the forward.
    assert (
        flop_model.op_flops(
            "aten::_scaled_dot_product_flash_attention_backward",
            "[[2,8,128,64],[2,8,128,64],[2,8,256,64],[2,8,256,64]]",
            None,
            '["","","","","","","","","128","256","0.","False"]',
        ).flops
        == 2.5 * fwd
    )
    # A packed variable-length batch (3-D query) has no recorded sequence lengths: not counted.
    assert (
        flop_model.op_flops(
            "aten::_flash_attention_forward", "[[300,8,64],[300,8,64],[300,8,64]]", None, None
        ).flops
        is None
    )


# --- counting once, attributing, MFU -----------------------------------------------------------------------


def _hand_trace(device_name: str | None = "NVIDIA A100-SXM4-80GB") -> Trace:
    bf16 = ["c10::BFloat16"] * 3
    rows = [
        # linear [0,100) -> addmm [10,90): counted once, at addmm (the innermost op with FLOPs).
        _op("aten::linear", 0, 100, [[8, 64], [32, 64], [32]], bf16),
        _op("aten::addmm", 10, 90, [[32], [8, 64], [64, 32], [], []], bf16),
        # matmul [100,200) -> bmm [110,190) -> a kernel-level helper op without shapes: bmm counts.
        _op("aten::matmul", 100, 200, [[4, 8, 64], [4, 64, 32]], bf16),
        _op("aten::bmm", 110, 190, [[4, 8, 64], [4, 64, 32]], bf16),
        _op("aten::empty", 120, 130),
        # An op with a recorded flops value (the producer's count) and no formula: class other.
        _op("aten::mul", 200, 250, [[8, 64], [8, 64]], bf16, flops=512.0),
        # The autograd thread: the backward node holds an mm, counted at the mm.
        _op("autograd::engine::evaluate_function: MmBackward0", 300, 400, tid=2),
        _op("MmBackward0", 305, 395, [[8, 32]], bf16, tid=2),
        _op("aten::mm", 310, 390, [[8, 32], [32, 64]], bf16, tid=2),
        # An op whose shapes do not allow FLOPs (not counted, and it does not hide its caller's).
        _kernel(0, 1000),
    ]
    devices = [{"id": 0, "name": device_name}] if device_name else []
    return Trace.from_rows(rows, devices=devices)


ADDMM, BMM, MM, MUL = 2 * 8 * 64 * 32, 2 * 4 * 8 * 64 * 32, 2 * 8 * 32 * 64, 512.0


def test_each_op_is_counted_once_at_the_innermost_op_with_flops():
    counted = flop_ops(_hand_trace())
    trace = _hand_trace()
    names = trace.events.column("name").to_pylist()
    assert sorted((names[r], f) for r, f in zip(counted.rows, counted.flops, strict=True)) == sorted(
        [("aten::addmm", ADDMM), ("aten::bmm", BMM), ("aten::mm", MM), ("aten::mul", MUL)]
    )
    report = ops_report(trace)
    by_name = {r["name"]: r["flops"] for r in report["by_name"]}
    assert by_name == {
        "aten::linear": ADDMM,
        "aten::matmul": BMM,
        "aten::mul": MUL,
        "autograd::engine::evaluate_function: MmBackward0": MM,
    }


def test_compute_block_by_hand():
    compute = ops_report(_hand_trace())["compute"]
    total = ADDMM + BMM + MM + MUL
    assert compute["flops"] == total
    assert compute["flops_by_class"] == {
        "matmul": ADDMM + BMM + MM,
        "conv": 0.0,
        "attention": 0.0,
        "other": MUL,
    }
    assert compute["flops_by_dtype"] == {"BF16": total}
    # The GPU span is the one kernel's 1000 ns; A100 BF16 dense peak 312 TFLOP/s (the table's row).
    assert compute["span_ns"] == 1000
    assert compute["achieved_flops_per_s"] == pytest.approx(total / 1e-6)
    assert (compute["device_model"], compute["peak_flops_per_s"]) == ("A100", 312e12)
    assert compute["mfu"] == pytest.approx(total / (1e-6 * 312e12))
    assert compute["reason"] is None


def test_mfu_is_null_with_a_reason_when_the_device_or_dtype_is_unknown():
    unknown = ops_report(_hand_trace("Some Future GPU"))["compute"]
    assert unknown["mfu"] is None and "Some Future GPU" in unknown["reason"]
    assert unknown["flops"] == ADDMM + BMM + MM + MUL  # FLOPs are still counted
    v100 = ops_report(_hand_trace("Tesla V100-SXM2-16GB"))["compute"]  # no BF16 on a V100
    assert v100["mfu"] is None and v100["reason"] == "no BF16 peak for V100 SXM2 in the table"
    no_shapes = ops_report(Trace.from_rows([_op("aten::mm", 0, 10), _kernel(0, 10)]))
    assert no_shapes["compute"]["flops"] is None and "record_shapes" in no_shapes["compute"]["reason"]
    assert no_shapes["by_name"][0]["flops"] is None


def test_mfu_above_one_is_null_with_a_reason():
    # 2 * 8192^3 bf16 FLOPs recorded by an aten::mm whose only GPU activity in the trace is a 1 µs kernel: at the
    # A100's 312 TFLOP/s the GPU could do 312 MFLOP in that span, not 1.1 TFLOP (MFU 3,524). Before, MFU printed
    # 352,400% (a device -1 on the kernels of the BERT trace put their FLOPs over a 2 µs copy: MFU 369.6%).
    bf16 = ["c10::BFloat16"] * 2
    rows = [_op("aten::mm", 0, 100, [[8192, 8192], [8192, 8192]], bf16), _kernel(0, 1000)]
    compute = ops_report(Trace.from_rows(rows, devices=[{"id": 0, "name": "NVIDIA A100-SXM4-80GB"}]))[
        "compute"
    ]
    assert compute["flops"] == 2 * 8192**3
    assert compute["achieved_flops_per_s"] == pytest.approx(2 * 8192**3 / 1e-6)
    assert compute["mfu"] is None and compute["mfu_is_lower_bound"] is None
    assert compute["reason"].startswith("the counted FLOPs exceed what the GPUs can do at peak in their span")


# --- the peak table --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "model"),
    [
        ("NVIDIA A100-SXM4-80GB", "A100"),
        ("NVIDIA A100-PCIE-40GB", "A100"),
        ("NVIDIA A100 80GB PCIe", "A100"),
        ("Tesla V100-SXM2-16GB", "V100 SXM2"),
        ("Tesla V100-PCIE-32GB", "V100 PCIe"),
        ("Tesla V100S-PCIE-32GB", "V100S PCIe"),
        ("Tesla T4", "T4"),
        ("NVIDIA A10", "A10"),
        ("NVIDIA A10G", None),
        ("NVIDIA A30", "A30"),
        ("NVIDIA L4", "L4"),
        ("NVIDIA L40S", "L40S"),
        ("NVIDIA L40", None),
        ("NVIDIA H100 80GB HBM3", "H100 SXM"),
        ("NVIDIA H100 PCIe", "H100 PCIe"),
        ("NVIDIA H100 NVL", "H100 NVL"),
        ("NVIDIA H200", "H200 SXM"),
        ("NVIDIA H200 NVL", "H200 NVL"),
        ("NVIDIA B200", "B200"),
        ("NVIDIA GeForce RTX 3090", "RTX 3090"),
        ("NVIDIA GeForce RTX 3090 Ti", None),
        ("NVIDIA GeForce RTX 3080", "RTX 3080"),
        ("NVIDIA GeForce RTX 4090", "RTX 4090"),
        ("NVIDIA GeForce RTX 5090", "RTX 5090"),
        ("AMD Instinct MI250X", "MI250X (one GCD)"),
        ("AMD Instinct MI250X/MI250", None),
        ("AMD Instinct MI300X", "MI300X"),
        ("AMD Radeon Graphics", None),
        (None, None),
    ],
)
def test_device_names_match_their_model(name, model):
    assert peaks.device_model(name) == model


def test_every_peak_row_cites_a_datasheet_and_is_one_of_a_kind():
    rows = peaks.peak_table()
    assert {r.dtype for r in rows} <= set(peaks.DTYPES)
    assert len({(r.model, r.dtype) for r in rows}) == len(rows)
    assert all(urlparse(r.source).scheme == "https" and r.flops_per_s > 0 for r in rows)
    models = {r.model for r in rows}
    for part in (
        "V100",
        "T4",
        "A10",
        "A30",
        "A100",
        "L4",
        "L40S",
        "H100",
        "H200",
        "B200",
        "RTX 3090",
        "RTX 4090",
        "RTX 5090",
        "MI250X",
        "MI300X",
    ):
        assert any(re.match(re.escape(part) + r"\b", m) for m in models), part
    # Dense figures (half the sheets' sparsity figures): H100 SXM BF16 989.5 TFLOP/s, FP8 twice that.
    assert peaks.peak("H100 SXM", "BF16").flops_per_s == 989.5e12
    assert peaks.peak("H100 SXM", "FP8").flops_per_s == 2 * peaks.peak("H100 SXM", "BF16").flops_per_s


# --- real traces -------------------------------------------------------------------------------------------


def _events(path) -> list[dict]:
    return [e for e in json.loads(gzip.decompress(path.read_bytes()))["traceEvents"] if e.get("ph") == "X"]


@pytest.mark.shared
@pytest.mark.parametrize(
    "trace_name", ["h100_bert_small_inference_torch2.6.json.gz", "mi250_rocm6.2_minitoy_train.json.gz"]
)
def test_real_trace_matmul_and_attention_flops_from_input_dims(trace_name):
    paths = shared_traces("pytorch", trace_name)
    if not paths:
        pytest.skip("../shared/traces/pytorch not present")
    # Written out from the JSON: each addmm/mm is 2*M*N*K of its mat1 [M, K] and mat2 [K, N]; each flash
    # forward 2*B*H*Sq*Sk*(D+Dv) of its [B, S, H, D] inputs (not causal in these traces). linear, matmul and
    # scaled_dot_product_attention enclose those and are not counted again.
    matmul = attention = 0.0
    for e in _events(paths[0]):
        dims = (e.get("args") or {}).get("Input Dims")
        if e["name"] == "aten::addmm":
            (m, k), (_, n) = dims[1], dims[2]
            matmul += 2 * m * n * k
        elif e["name"] == "aten::mm":
            (m, k), (_, n) = dims[0], dims[1]
            matmul += 2 * m * n * k
        elif e["name"] == "aten::_flash_attention_forward":
            (b, sq, h, d), sk, dv = dims[0], dims[1][1], dims[2][3]
            attention += 2 * b * h * sq * sk * (d + dv)
    compute = ops_report(tracelens.load(paths[0]))["compute"]
    assert matmul > 0
    assert compute["flops_by_class"] == {"matmul": matmul, "conv": 0.0, "attention": attention, "other": 0.0}
    if trace_name.startswith("h100"):
        assert compute["device_model"] == "H100 SXM" and compute["flops_by_dtype"] == {
            "BF16": matmul + attention
        }
        assert compute["mfu"] == pytest.approx((matmul + attention) / (compute["span_ns"] / 1e9 * 989.5e12))
    else:  # the trace names its MI250 "AMD Radeon Graphics": no peak
        assert compute["mfu"] is None and "AMD Radeon Graphics" in compute["reason"]


def test_bytes_are_the_tensors_read_and_written_once():
    # mm [8,64] x [64,32] in FP32: read 8*64 + 64*32, write 8*32 elements of 4 bytes.
    assert flop_model.op_flops("aten::mm", "[[8,64],[64,32]]", '["float","float"]', None).bytes == 4 * (
        8 * 64 + 64 * 32 + 8 * 32
    )
    # addmm in BF16 reads its bias too; attention writes [B, H, Sq, Dv].
    assert flop_model.op_flops(
        "aten::addmm", "[[32],[8,64],[64,32],[],[]]", '["c10::BFloat16"]', None
    ).bytes == 2 * (32 + 8 * 64 + 64 * 32 + 8 * 32)
    assert flop_model.op_flops(
        "aten::scaled_dot_product_attention", "[[1,2,16,8],[1,2,32,8],[1,2,32,8]]", '["c10::Half"]', None
    ).bytes == 2 * (256 + 512 + 512 + 256)
    assert flop_model.op_flops("aten::mm", "[[8,64],[64,32]]", '["long int","long int"]', None).bytes is None


def test_roofline_by_hand():
    # One A100 (BF16 peak 312 TFLOP/s, HBM 1.555 TB/s for the 40 GB part: ridge ~200.6 FLOP/B). aten::linear
    # holds an addmm of [2048,2048] x [2048,2048] in BF16 and launches one 1 ms kernel.
    n = 2048
    rows = [
        _op("aten::linear", 0, 100, [[n, n], [n, n], [n]], ["c10::BFloat16"] * 3),
        _op("aten::addmm", 10, 90, [[n], [n, n], [n, n], [], []], ["c10::BFloat16"] * 3),
        {
            "kind": "runtime",
            "name": "cudaLaunchKernel",
            "start_ns": 20,
            "end_ns": 30,
            "pid": 1,
            "tid": 1,
            "correlation_id": 1,
        },
        {
            "kind": "kernel",
            "name": "gemm",
            "start_ns": 100,
            "end_ns": 1_000_100,
            "device": 0,
            "stream": 7,
            "correlation_id": 1,
        },
    ]
    report = ops_report(Trace.from_rows(rows, devices=[{"id": 0, "name": "NVIDIA A100-SXM4-40GB"}]))
    roof = report["roofline"]
    flops, nbytes = 2.0 * n**3, 2.0 * (n + 3 * n * n)
    assert (roof["peak_flops_per_s"], roof["memory_bytes_per_s"]) == (312e12, 1.555e12)
    [op] = roof["ops"]
    assert (op["name"], op["flops"], op["bytes"], op["gpu_ns"]) == ("aten::linear", flops, nbytes, 1_000_000)
    assert op["intensity_flops_per_byte"] == pytest.approx(flops / nbytes)  # ~682: above the ridge
    assert op["bound"] == "compute" and op["attainable_flops_per_s"] == 312e12
    assert op["achieved_flops_per_s"] == pytest.approx(flops / 1e-3)
    assert op["efficiency"] == pytest.approx(flops / 1e-3 / 312e12)
    assert op["lost_ns"] == round(1_000_000 * (1 - flops / 1e-3 / 312e12))
    assert ops_report(Trace.from_rows(rows, devices=[{"id": 0, "name": "Unknown GPU"}]))["roofline"] is None


def test_summary_and_diff_carry_flops_and_mfu():
    from tracelens import analyze
    from tracelens.diff import compare

    base = analyze(_hand_trace())
    assert (base["summary"]["flops"], base["summary"]["mfu"]) == (
        base["ops"]["compute"]["flops"],
        base["ops"]["compute"]["mfu"],
    )
    # A head whose MFU doubled: improved (higher is better); FLOPs are information only.
    head = analyze(_hand_trace())
    head["summary"] = {**head["summary"], "mfu": 2 * base["summary"]["mfu"]}
    rows = {m["key"]: m for m in compare(base, head)["metrics"]}
    assert rows["mfu"]["change"] == "improved" and rows["flops"]["change"] == "info"
