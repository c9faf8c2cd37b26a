"""FLOPs that say how much they cover (docs/analyses.md, "compute"): a convolution's output size from its
recorded arguments or the op that consumes it (never a default), convolution backward per output_mask or the
gradient ops it called, matmul/linear backward, ``ops.compute.coverage`` and MFU as a lower bound. Expected
values are computed here from the ``Input Dims`` written in each test, separately from tracelens/flop_model.py."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest

import tracelens
from tests.conftest import shared_traces
from tracelens import peaks
from tracelens.analyses import analyze
from tracelens.report import render

FLOAT = "float"


class _Kineto:
    """A hand-built Kineto trace: ops on two threads, each op that launches a kernel gets a cudaLaunchKernel
    inside it and a kernel on device 0 (stream 7), the kernels one after another from t = 10 ms."""

    def __init__(self) -> None:
        self.events: list[dict] = []
        self.kernel_at = 10_000.0
        self.correlation = 0

    def op(
        self,
        name: str,
        ts: float,
        dur: float,
        dims=None,
        concrete=None,
        tid: int = 1,
        kernel_us: float = 0.0,
        launch_at: float | None = None,
        kernel_name: str = "k",
    ) -> None:
        args: dict = {"External id": len(self.events) + 1}
        if dims is not None:
            args["Input Dims"] = dims
            args["Input type"] = [FLOAT if d else "" for d in dims]
        if concrete is not None:
            args["Concrete Inputs"] = concrete
        self.events.append(
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": name,
                "pid": 1,
                "tid": tid,
                "ts": ts,
                "dur": dur,
                "args": args,
            }
        )
        if kernel_us:
            self.launch(ts + 0.5 if launch_at is None else launch_at, tid, kernel_us, kernel_name)

    def launch(
        self,
        ts: float,
        tid: int,
        kernel_us: float,
        kernel_name: str = "k",
        stream: int = 7,
        args: dict | None = None,
    ) -> None:
        self.correlation += 1
        self.events.append(
            {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": "cudaLaunchKernel",
                "pid": 1,
                "tid": tid,
                "ts": ts,
                "dur": 0.2,
                "args": {"correlation": self.correlation},
            }
        )
        self.events.append(
            {
                "ph": "X",
                "cat": "kernel",
                "name": kernel_name,
                "pid": 0,
                "tid": stream,
                "ts": self.kernel_at,
                "dur": kernel_us,
                "args": {"correlation": self.correlation, "device": 0, "stream": stream, **(args or {})},
            }
        )
        self.kernel_at += kernel_us + 1

    def write(self, path: Path, device: str = "Tesla V100-SXM2-16GB") -> Path:
        path.write_text(
            json.dumps({"deviceProperties": [{"id": 0, "name": device}], "traceEvents": self.events})
        )
        return path


def _conv(n, c_in, c_out, k, out):
    """2 x output elements x input channels x kernel elements (groups 1)."""
    return 2 * n * c_out * out * out * c_in * k * k


# Layer by layer: (N, C_in, H) -> (C_out, k, stride, padding) -> out = (H + 2p - k) // s + 1.
F1 = _conv(2, 3, 8, 3, (32 + 2 - 3) // 2 + 1)  # conv A: [2,3,32,32] * [8,3,3,3], stride 2 pad 1 -> 16x16
F2 = _conv(2, 8, 16, 3, 8)  # conv B: [2,8,16,16] * [16,8,3,3], stride 2 (out 8x8 per its consumer)
F2_IF_STRIDE_1 = _conv(2, 8, 16, 3, 16 - 3 + 1)  # what the old default (stride 1, padding 0) counted
F_C = _conv(2, 16, 32, 1, 8)  # conv C: [2,16,8,8] * [32,16,1,1]: its output size is recorded nowhere
ADDMM = 2 * 2 * 10 * 2048  # linear [2,2048] x [2048,10]
MM_GRAD_INPUT = 2 * 2 * 10 * 2048  # [2,10] x [10,2048]
MM_GRAD_WEIGHT = 2 * 10 * 2 * 2048  # [10,2] x [2,2048]


def _training_trace(tmp_path: Path) -> Path:
    t = _Kineto()
    # Forward thread. conv A records its arguments: out 16x16 from stride 2, padding 1.
    t.op(
        "aten::conv2d",
        0,
        10,
        [[2, 3, 32, 32], [8, 3, 3, 3], [], [], [], [], []],
        ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "1"],
        kernel_us=10,
    )
    # conv B records no arguments (the 2021 format): its consumer, batch_norm, recorded [2,16,8,8].
    t.op(
        "aten::cudnn_convolution",
        20,
        10,
        [[2, 8, 16, 16], [16, 8, 3, 3], [], [], [], [], [], [], []],
        kernel_us=20,
    )
    t.op("aten::batch_norm", 32, 8, [[2, 16, 8, 8], [16], [16], [16], [16], [], [], [], []], kernel_us=5)
    t.op("aten::relu", 42, 4, [[2, 16, 8, 8]], kernel_us=2)
    # conv C records no arguments and nothing consumes its [2,32,8,8] output in the trace: FLOPs unknown.
    t.op("aten::conv2d", 50, 10, [[2, 16, 8, 8], [32, 16, 1, 1], [], [], [], [], []], kernel_us=10)
    t.op("aten::linear", 90, 20, [[2, 2048], [10, 2048], [10]])
    t.op("aten::addmm", 92, 16, [[10], [2, 2048], [2048, 10], [], []], kernel_us=4)
    # Backward thread: linear's backward is two mm (grad input, grad weight) inside the autograd node.
    t.op("autograd::engine::evaluate_function: AddmmBackward0", 200, 30, tid=2)
    t.op("AddmmBackward0", 201, 28, [[2, 10]], tid=2)
    t.op("aten::mm", 202, 8, [[2, 10], [10, 2048]], tid=2, kernel_us=3)
    t.op("aten::mm", 212, 8, [[10, 2], [2, 2048]], tid=2, kernel_us=3)
    # conv B's backward records output_mask [True, True, False]: input and weight gradients.
    t.op("ConvolutionBackward0", 240, 30, [[2, 16, 8, 8]], tid=2)
    t.op(
        "aten::convolution_backward",
        241,
        28,
        [[2, 16, 8, 8], [2, 8, 16, 16], [16, 8, 3, 3], [], [], [], [], [], [], [], []],
        ["", "", "", "[16]", "[2, 2]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1", "[True, True, False]"],
        tid=2,
        kernel_us=40,
    )
    # PyTorch <= 1.10: cudnn_convolution_backward(self, grad_output, weight, ...) records no output_mask; the
    # gradient ops it called say which passes ran. conv A (the first layer) computes no input gradient.
    t.op("CudnnConvolutionBackward", 280, 40, [[2, 8, 16, 16]], tid=2)
    t.op(
        "aten::cudnn_convolution_backward",
        281,
        38,
        [[2, 3, 32, 32], [2, 8, 16, 16], [8, 3, 3, 3], [], [], [], [], [], [], [], []],
        tid=2,
    )
    t.op(
        "aten::cudnn_convolution_backward_weight",
        290,
        10,
        [[], [2, 8, 16, 16], [2, 3, 32, 32]],
        tid=2,
        kernel_us=20,
    )
    # conv C's backward: both gradient ops ran; grad_output [2,32,8,8] gives the size its forward lacked.
    t.op(
        "aten::cudnn_convolution_backward",
        330,
        40,
        [[2, 16, 8, 8], [2, 32, 8, 8], [32, 16, 1, 1], [], [], [], [], [], [], [], []],
        tid=2,
    )
    t.op(
        "aten::cudnn_convolution_backward_input",
        331,
        9,
        [[], [2, 32, 8, 8], [32, 16, 1, 1]],
        tid=2,
        kernel_us=5,
    )
    t.op(
        "aten::cudnn_convolution_backward_weight",
        341,
        9,
        [[], [2, 32, 8, 8], [2, 16, 8, 8]],
        tid=2,
        kernel_us=5,
    )
    # A convolution_backward that records neither output_mask nor calls a gradient op: unknown, not assumed.
    t.op(
        "aten::convolution_backward",
        380,
        10,
        [[2, 16, 8, 8], [2, 8, 16, 16], [16, 8, 3, 3], [], [], [], [], [], [], [], []],
        tid=2,
        kernel_us=5,
    )
    return t.write(tmp_path / "train.json")


def test_training_trace_flops_by_hand(tmp_path):
    doc = analyze(tracelens.load(_training_trace(tmp_path)))
    by_name = {r["name"]: r["flops"] for r in doc["ops"]["by_name"]}
    # conv A from its arguments; conv B from its consumer's shape (not the stride-1 count); conv C unknown.
    assert F2 != F2_IF_STRIDE_1
    assert by_name["aten::conv2d"] == F1  # the two conv2d instances: A counted, C not (null, not assumed)
    assert by_name["aten::cudnn_convolution"] == F2
    assert by_name["aten::linear"] == ADDMM
    assert by_name["autograd::engine::evaluate_function: AddmmBackward0"] == MM_GRAD_INPUT + MM_GRAD_WEIGHT
    assert by_name["ConvolutionBackward0"] == 2 * F2  # output_mask: input and weight
    assert by_name["CudnnConvolutionBackward"] == F1  # only the weight gradient op ran
    assert by_name["aten::cudnn_convolution_backward"] == 2 * F_C  # both gradient ops ran
    # Not modelled (or an argument not recorded): null, rendered "–", never 0.
    for name in ("aten::batch_norm", "aten::relu", "aten::convolution_backward"):
        assert by_name[name] is None, name
    compute = doc["ops"]["compute"]
    conv = F1 + F2 + 2 * F2 + F1 + 2 * F_C
    matmul = ADDMM + MM_GRAD_INPUT + MM_GRAD_WEIGHT
    assert compute["flops_by_class"] == {"matmul": matmul, "conv": conv, "attention": 0.0, "other": 0.0}
    # Coverage: kernel time launched inside counted ops over all kernel time, from the kernels above (us):
    # counted conv A 10, conv B 20, addmm 4, mm 3 + 3, convolution_backward 40, the two old backwards 20 + 5 + 5;
    # not counted: batch_norm 5, relu 2, conv C 10, the backward without a mask 5.
    covered = 10 + 20 + 4 + 3 + 3 + 40 + 20 + 5 + 5
    assert compute["coverage"] == pytest.approx(covered / (covered + 5 + 2 + 10 + 5))
    # MFU against the V100's FP32 peak, a lower bound since coverage < 0.9.
    fp32 = peaks.peak("V100 SXM2", "FP32").flops_per_s
    assert compute["mfu"] == pytest.approx((conv + matmul) / (compute["span_ns"] / 1e9 * fp32))
    assert compute["mfu_is_lower_bound"] is True
    mfu = f"{100 * compute['mfu']:.1f}%"
    for fmt in ("terminal", "markdown"):
        text = render(doc, fmt)
        assert f"MFU ≥ {mfu}" in text, fmt
        assert "–" in text and "0 FLOP " not in text, fmt


def test_training_conv_flops_are_three_times_the_forward(tmp_path):
    # A training step of four convolutions with their arguments recorded: forward, then backward with
    # output_mask (the first layer computes no input gradient). Conv FLOPs ≈ 3x the forward's: forward, input
    # gradient and weight gradient are each one forward's worth.
    t = _Kineto()
    layers = [
        ((2, 3, 16), (4, 3, 1, 1)),
        ((2, 4, 16), (32, 3, 1, 1)),
        ((2, 32, 16), (32, 3, 2, 1)),
        ((2, 32, 8), (64, 1, 1, 0)),
    ]
    forward = []
    for i, ((n, c, h), (c_out, k, s, p)) in enumerate(layers):
        out = (h + 2 * p - k) // s + 1
        forward.append(2 * n * c_out * out * out * c * k * k)
        t.op(
            "aten::conv2d",
            10 * i,
            5,
            [[n, c, h, h], [c_out, c, k, k], [], [], [], [], []],
            ["", "", "", f"[{s}, {s}]", f"[{p}, {p}]", "[1, 1]", "1"],
            kernel_us=4,
        )
        mask = "[False, True, False]" if i == 0 else "[True, True, False]"
        t.op(
            "aten::convolution_backward",
            500 - 10 * i,
            5,
            [[n, c_out, out, out], [n, c, h, h], [c_out, c, k, k], [], [], [], [], [], [], [], []],
            ["", "", "", "[]", f"[{s}, {s}]", f"[{p}, {p}]", "[1, 1]", "False", "[0, 0]", "1", mask],
            tid=2,
            kernel_us=8,
        )
    compute = analyze(tracelens.load(t.write(tmp_path / "four.json")))["ops"]["compute"]
    assert compute["flops_by_class"]["conv"] == 3 * sum(forward) - forward[0]
    assert compute["flops_by_class"]["conv"] / sum(forward) == pytest.approx(3, rel=0.02)
    assert compute["coverage"] == 1.0 and compute["mfu_is_lower_bound"] is False


def test_2021_input_dims_and_no_argument_assumed(tmp_path):
    # The 2021 format writes "Input dims" (lower-case d) and no concrete arguments: a convolution with no
    # consumer in the trace has unknown FLOPs (null), and its kernel is not covered.
    events = [
        {
            "ph": "X",
            "cat": "Operator",
            "name": "aten::cudnn_convolution",
            "pid": 1,
            "tid": "7",
            "ts": 0,
            "dur": 10,
            "args": {
                "Input dims": [[4, 3, 224, 224], [64, 3, 7, 7], [], [], [], [], [], [], []],
                "Input type": [],
            },
        },
        {
            "ph": "X",
            "cat": "Runtime",
            "name": "cudaLaunchKernel",
            "pid": 1,
            "tid": "7",
            "ts": 1,
            "dur": 1,
            "args": {"correlation": 1, "external id": 1},
        },
        {
            "ph": "X",
            "cat": "Kernel",
            "name": "implicit_convolve_sgemm",
            "pid": 0,
            "tid": "stream 7",
            "ts": 20,
            "dur": 10,
            "args": {"correlation": 1, "device": 0, "stream": 7},
        },
    ]
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"traceEvents": events}))
    trace = tracelens.load(path)
    assert trace.events.column("input_dims").drop_null().to_pylist() == [
        "[[4,3,224,224],[64,3,7,7],[],[],[],[],[],[],[]]"
    ]
    compute = analyze(trace)["ops"]["compute"]
    assert compute["flops"] == 0.0 and compute["coverage"] == 0.0
    assert analyze(trace)["ops"]["by_name"][0]["flops"] is None
    # With its consumer recorded (batch_norm of [4,64,112,112]): stride 2 -> 2 x 4 x 64 x 112^2 x 3 x 49.
    events.append(
        {
            "ph": "X",
            "cat": "Operator",
            "name": "aten::batch_norm",
            "pid": 1,
            "tid": "7",
            "ts": 12,
            "dur": 3,
            "args": {"Input dims": [[4, 64, 112, 112], [64], [64], [64], [64]]},
        }
    )
    path.write_text(json.dumps({"traceEvents": events}))
    compute = analyze(tracelens.load(path))["ops"]["compute"]
    assert compute["flops"] == 2 * 4 * 64 * 112 * 112 * 3 * 49 and compute["coverage"] == 1.0


def _innermost(events: list[dict], name: str) -> list[dict]:
    """The events named ``name`` that hold no other one of that name on their thread (the 2021 format records
    some ops twice, nested)."""
    rows = sorted((e for e in events if e["name"] == name), key=lambda e: (e["tid"], e["ts"], -e["dur"]))
    return [
        a
        for a, b in zip(rows, [*rows[1:], None], strict=True)
        if not (b is not None and b["tid"] == a["tid"] and a["ts"] <= b["ts"] < a["ts"] + a["dur"])
    ]


@pytest.mark.shared
def test_resnet50_2021_conv_flops_against_the_json():
    paths = shared_traces("pytorch", "v100_resnet50_2021_oldformat.json.gz")
    if not paths:
        pytest.skip("../shared/traces/pytorch not present")
    events = [
        e
        for e in json.loads(gzip.decompress(paths[0].read_bytes()))["traceEvents"]
        if e.get("ph") == "X" and e.get("cat") == "Operator"
    ]
    # Written out from the JSON: each convolution's backward records (input, grad_output, weight); grad_output
    # is its forward's output, so one forward = 2 x grad_output elements x weight dims 1..3; the backward
    # computes one forward per gradient op it called (_backward_input, _backward_weight).
    passes = [
        e
        for e in events
        if e["name"] in ("aten::cudnn_convolution_backward_input", "aten::cudnn_convolution_backward_weight")
    ]
    forward = backward = 0
    for b in _innermost(events, "aten::cudnn_convolution_backward"):
        _, grad, weight = b["args"]["Input dims"][:3]
        one = 2 * math.prod(grad) * math.prod(weight[1:])
        forward += one
        backward += one * sum(
            p["tid"] == b["tid"] and b["ts"] <= p["ts"] < b["ts"] + b["dur"] for p in passes
        )
    doc = analyze(tracelens.load(paths[0]))
    by_name = {r["name"]: r for r in doc["ops"]["by_name"]}
    # The forward convolutions record no stride or padding: each takes its output size from its consumer
    # (batch_norm), and the total equals the one from the backward's grad_output.
    assert by_name["aten::conv2d"]["flops"] == forward
    assert by_name["CudnnConvolutionBackward"]["flops"] == backward > 0
    # ResNet-50 at 224x224: 4.1 GMAC per image (batch 32, 6 steps), not the 5.8 of stride-1 guesses.
    assert 4.05e9 < forward / 2 / (32 * 6) < 4.15e9
    compute = doc["ops"]["compute"]
    assert compute["flops_by_class"]["conv"] == forward + backward
    assert compute["flops_by_class"]["conv"] / forward == pytest.approx(3, rel=0.02)
    # Coverage: the kernels launched inside the counted convolutions and matmuls; batch norm, ReLU, the
    # optimizer... are not modelled. No deviceProperties: no device model, so MFU is null with a reason.
    assert 0.5 < compute["coverage"] < 0.9
    assert compute["mfu"] is None and compute["mfu_is_lower_bound"] is None and compute["reason"]
    assert by_name["CudnnBatchNormBackward"]["flops"] is None


def test_recorded_resnet18_training_conv_flops_against_the_json():
    # fixtures/gpu/resnet18_train_cuda.pt.trace.json.gz (record_conv_train.py, an H200, PyTorch 2.11): two
    # training steps of ResNet-18, batch 16 at 112x112, recorded with shapes in the current format. Written out
    # from the JSON: each aten::cudnn_convolution(input, weight, padding, stride, dilation, ...) forward is
    # 2 x N x C_out x out elements x weight dims 1..3, out = (in + 2p - d(k - 1) - 1) // s + 1; each
    # aten::convolution_backward(grad_output, input, weight, ..., output_mask) one forward (2 x grad_output
    # elements x weight dims 1..3) per gradient output_mask asks for among input and weight.
    path = (
        Path(__file__).resolve().parent.parent / "fixtures" / "gpu" / "resnet18_train_cuda.pt.trace.json.gz"
    )
    events = [
        e
        for e in json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
        if e.get("ph") == "X" and e.get("cat") == "cpu_op"
    ]
    forward = backward = 0
    for e in events:
        dims, concrete = e["args"].get("Input Dims"), e["args"].get("Concrete Inputs")
        if e["name"] == "aten::cudnn_convolution":
            (n, _, *size), weight = dims[0], dims[1]
            padding, stride, dilation = (json.loads(concrete[i]) for i in (2, 3, 4))
            out = [
                (h + 2 * p - d * (k - 1) - 1) // s + 1
                for h, k, p, s, d in zip(size, weight[2:], padding, stride, dilation, strict=True)
            ]
            forward += 2 * n * weight[0] * math.prod(out) * math.prod(weight[1:])
        elif e["name"] == "aten::convolution_backward":
            grad, weight = dims[0], dims[2]
            mask = [m == "True" for m in concrete[10].strip("[]").split(", ")]
            backward += 2 * math.prod(grad) * math.prod(weight[1:]) * (mask[0] + mask[1])
    doc = analyze(tracelens.load(path))
    by_name = {r["name"]: r["flops"] for r in doc["ops"]["by_name"]}
    assert by_name["aten::conv2d"] == forward > 0
    assert by_name["autograd::engine::evaluate_function: ConvolutionBackward0"] == backward
    compute = doc["ops"]["compute"]
    assert compute["flops_by_class"]["conv"] == forward + backward
    # forward, input gradient, weight gradient: ≈ 3x (the first layer computes no input gradient).
    assert compute["flops_by_class"]["conv"] / forward == pytest.approx(3, rel=0.03)
    # Batch norm, ReLU, pooling and the optimizer are not modelled: MFU against the H200 is a lower bound.
    assert compute["coverage"] < 0.9 and compute["mfu_is_lower_bound"] is True
    assert compute["device_model"] == "H200 SXM"
