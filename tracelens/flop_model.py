"""FLOPs of one framework op from its recorded input shapes (Kineto ``record_shapes=True``): matmuls,
convolutions and attention, forward and backward. Pure functions of one op's name, ``Input Dims``, ``Input
type`` and ``Concrete Inputs`` (the schema's canonical JSON texts); the ops section calls them once per
distinct signature. Formulas and conventions: ``docs/analyses.md`` ("compute").

Argument positions are those of the ATen schemas (``aten/src/ATen/native/native_functions.yaml``), which is
the order Kineto records inputs in.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from .peaks import torch_dtype

MATMUL, CONV, ATTENTION, OTHER = "matmul", "conv", "attention", "other"
CLASSES = (MATMUL, CONV, ATTENTION, OTHER)


@dataclass(frozen=True)
class OpFlops:
    """An op's FLOPs (None: not modelled, or shapes missing), its class, and the dtype its peak is read for."""

    flops: float | None
    op_class: str
    dtype: str | None
    bytes: float | None = (
        None  # the least memory traffic: each recorded input tensor read and the output written once
    )


# --- matmuls: 2 * M * N * K multiply-adds, times the batch ------------------------------------------------


def _matmul(dims: list[Any], a: int, b: int) -> float | None:
    """torch.matmul semantics for inputs ``a`` and ``b`` (1-D operands promoted, batch dims broadcast)."""
    x, y = _shape(dims, a), _shape(dims, b)
    if x is None or y is None or not x or not y:
        return None
    x1, y1 = len(x) == 1, len(y) == 1
    x = [1, *x] if x1 else x
    y = [*y, 1] if y1 else y
    m, k, k2, n = x[-2], x[-1], y[-2], y[-1]
    if k != k2:
        return None
    batch_x, batch_y = x[:-2], y[:-2]
    width = max(len(batch_x), len(batch_y))
    batch_x = [1] * (width - len(batch_x)) + batch_x
    batch_y = [1] * (width - len(batch_y)) + batch_y
    batch = math.prod(max(p, q) for p, q in zip(batch_x, batch_y, strict=True))
    return 2.0 * batch * m * n * k


def _linear(dims: list[Any]) -> float | None:
    """aten::linear(input [..., K], weight [N, K], bias): 2 * rows * N * K."""
    x, w = _shape(dims, 0), _shape(dims, 1)
    if not x or w is None or len(w) != 2 or x[-1] != w[1]:
        return None
    return 2.0 * math.prod(x[:-1]) * w[0] * w[1]


# name -> (flops(dims, concrete), index of the input whose type gives the dtype)
_MATMULS = {
    "aten::mm": (lambda d, c: _matmul(d, 0, 1), 0),
    "aten::bmm": (lambda d, c: _matmul(d, 0, 1), 0),
    "aten::matmul": (lambda d, c: _matmul(d, 0, 1), 0),
    "aten::mv": (lambda d, c: _matmul(d, 0, 1), 0),
    "aten::dot": (lambda d, c: _matmul(d, 0, 1), 0),
    "aten::_scaled_mm": (lambda d, c: _matmul(d, 0, 1), 0),
    "aten::addmm": (lambda d, c: _matmul(d, 1, 2), 1),
    "aten::baddbmm": (lambda d, c: _matmul(d, 1, 2), 1),
    "aten::addbmm": (lambda d, c: _matmul(d, 1, 2), 1),
    "aten::addmv": (lambda d, c: _matmul(d, 1, 2), 1),
    "aten::linear": (lambda d, c: _linear(d), 0),
}


# --- convolutions ------------------------------------------------------------------------------------------
# 2 * (output elements) * (input channels per group) * (kernel elements); a transposed convolution is the
# backward-data pass of a convolution, the same count with input and output swapped.


@dataclass(frozen=True)
class _ConvArgs:
    stride: int | None
    padding: int | None
    dilation: int | None
    transposed: int | bool  # an argument index, or whether the op is always (not) transposed
    allow_tf32: int | None = None


_CONVS = {
    "aten::conv1d": _ConvArgs(3, 4, 5, False),
    "aten::conv2d": _ConvArgs(3, 4, 5, False),
    "aten::conv3d": _ConvArgs(3, 4, 5, False),
    "aten::conv_transpose1d": _ConvArgs(None, None, None, True),
    "aten::conv_transpose2d": _ConvArgs(None, None, None, True),
    "aten::conv_transpose3d": _ConvArgs(None, None, None, True),
    "aten::convolution": _ConvArgs(3, 4, 5, 6),
    "aten::convolution_overrideable": _ConvArgs(3, 4, 5, 6),
    "aten::_convolution": _ConvArgs(3, 4, 5, 6, allow_tf32=12),
    "aten::cudnn_convolution": _ConvArgs(3, 2, 4, False, allow_tf32=8),
    "aten::cudnn_convolution_transpose": _ConvArgs(None, None, None, True, allow_tf32=9),
    "aten::miopen_convolution": _ConvArgs(4, 3, 5, False),
    "aten::miopen_convolution_transpose": _ConvArgs(None, None, None, True),
    "aten::mkldnn_convolution": _ConvArgs(4, 3, 5, False),
}


def _conv_flops(x: list[int], w: list[int], out_spatial: list[int] | None, transposed: bool) -> float | None:
    """``x`` input [N, C, *spatial], ``w`` weight; ``out_spatial`` the output's spatial size (forward only)."""
    if len(x) < 3 or len(w) != len(x):
        return None
    per_output = w[1] * math.prod(w[2:])  # input channels per group x kernel elements (transposed: per input)
    if transposed:
        return 2.0 * math.prod(x) * per_output
    if out_spatial is None:
        return None
    return 2.0 * x[0] * w[0] * math.prod(out_spatial) * per_output


def _output_spatial(x: list[int], w: list[int], concrete: list[Any], args: _ConvArgs) -> list[int] | None:
    """The output's spatial size from the recorded stride, padding and dilation; None when any of them is not
    recorded (never a default: a stride-2 convolution read as stride 1 counts 4x its FLOPs)."""
    if len(x) < 3 or len(w) != len(x):  # e.g. an unbatched input [C, L] (torch >= 1.11): not modelled
        return None
    spatial = len(x) - 2
    stride = _int_list(concrete, args.stride, spatial)
    dilation = _int_list(concrete, args.dilation, spatial)
    padding_text = _arg(concrete, args.padding)
    if padding_text in ("same", "valid"):  # conv2d(..., padding="same" | "valid")
        if padding_text == "same":
            return x[2:]
        padding: list[int] | None = [0] * spatial
    else:
        padding = _int_list(concrete, args.padding, spatial)
    if stride is None or dilation is None or padding is None:
        return None
    out = [
        (size + 2 * p - d * (k - 1) - 1) // s + 1
        for size, k, s, p, d in zip(x[2:], w[2:], stride, padding, dilation, strict=True)
    ]
    return out if all(o > 0 for o in out) else None


def _consumed_spatial(x: list[int], w: list[int], output: list[int] | None) -> list[int] | None:
    """The output's spatial size from the shape of the tensor that consumed it (``output``: [N, C_out, *spatial],
    found by analyses/ops/flop_context.py), where it has the convolution's batch, output channels and rank."""
    if output is None or len(output) != len(x) or output[0] != x[0] or output[1] != w[0]:
        return None
    return output[2:] if all(o > 0 for o in output[2:]) else None


def _conv(name: str, dims: list[Any], concrete: list[Any], output: list[int] | None) -> float | None:
    args = _CONVS[name]
    x, w = _shape(dims, 0), _shape(dims, 1)
    if x is None or w is None:
        return None
    transposed = (
        args.transposed if isinstance(args.transposed, bool) else _arg(concrete, args.transposed) == "True"
    )
    out = None if transposed else (_output_spatial(x, w, concrete, args) or _consumed_spatial(x, w, output))
    return _conv_flops(x, w, out, transposed)


@dataclass(frozen=True)
class _ConvBackwardArgs:
    grad: int  # grad_output
    input: int
    weight: int
    transposed: int | bool  # an argument index, or whether the op is always (not) transposed
    mask: int  # output_mask: [grad_input, grad_weight(, grad_bias)]


# The convolution backward ops that compute the input and weight gradients (ATen schemas).
_CONV_BACKWARDS = {
    "aten::convolution_backward": _ConvBackwardArgs(0, 1, 2, 7, 10),
    "aten::convolution_backward_overrideable": _ConvBackwardArgs(0, 1, 2, 6, 9),
    "aten::cudnn_convolution_backward": _ConvBackwardArgs(1, 0, 2, False, 10),  # PyTorch <= 1.10
    "aten::cudnn_convolution_transpose_backward": _ConvBackwardArgs(1, 0, 2, True, 11),
    "aten::miopen_convolution_backward": _ConvBackwardArgs(1, 0, 2, False, 9),
    "aten::miopen_convolution_transpose_backward": _ConvBackwardArgs(1, 0, 2, True, 10),
}
# The ops such a backward op calls for one gradient when it does not record output_mask (PyTorch <= 1.10):
# the passes it ran are the ones it called.
BACKWARD_INPUT_PASS = re.compile(r"^aten::\w*convolution\w*_backward_input$")
BACKWARD_WEIGHT_PASS = re.compile(r"^aten::\w*convolution\w*_backward_weight$")


INPUT_GRAD, WEIGHT_GRAD = 1, 2  # the passes of a convolution backward op, as bits


def _mask_bits(mask_text: str | None) -> int | None:
    """The gradients (INPUT_GRAD | WEIGHT_GRAD) an ``output_mask`` text asks for, None when not recorded."""
    if not mask_text:
        return None
    import json  # here, not at module level: an analyze of a trace without these texts never loads json (kimp17)

    try:
        wanted = json.loads(mask_text.lower())
        return INPUT_GRAD * bool(wanted[0]) | WEIGHT_GRAD * bool(wanted[1])
    except (ValueError, TypeError, IndexError, KeyError):
        return None


def _backward_bits(name: str, concrete: list[Any], passes: int | None) -> int | None:
    recorded = _mask_bits(_arg(concrete, _CONV_BACKWARDS[name].mask))
    return recorded if recorded is not None else passes


def _conv_backward(name: str, dims: list[Any], concrete: list[Any], passes: int | None) -> float | None:
    """One forward's FLOPs for each of grad_input and grad_weight computed (the output's size is grad_output's;
    grad_bias is a reduction, not counted): which from the recorded ``output_mask``, else ``passes`` (bits of
    the gradient ops it called, found by analyses/ops/flop_context.py), else unknown."""
    args = _CONV_BACKWARDS[name]
    grad, x, w = _shape(dims, args.grad), _shape(dims, args.input), _shape(dims, args.weight)
    if grad is None or x is None or w is None:
        return None
    transposed = (
        args.transposed if isinstance(args.transposed, bool) else _arg(concrete, args.transposed) == "True"
    )
    forward = _conv_flops(x, w, grad[2:], transposed)
    bits = _backward_bits(name, concrete, passes)
    return (
        None
        if forward is None or bits is None
        else forward * (bool(bits & INPUT_GRAD) + bool(bits & WEIGHT_GRAD))
    )


# --- attention ---------------------------------------------------------------------------------------------
# Q K^T and P V: 2 * B * H * Sq * Sk * (D + Dv); causal masking computes half of the scores (the usual
# convention); backward = 2.5 x forward (recomputed Q K^T, and dQ, dK, dV, dP: five products of that size
# against the forward's two).


@dataclass(frozen=True)
class _AttentionArgs:
    q: int
    k: int
    v: int
    seq_first: bool  # layout [B, S, H, D] (flash/efficient kernels' own ops); else [B, H, S, D]
    causal: int | None  # argument index of is_causal (or of custom_mask_type: nonzero means causal)
    backward: bool = False
    mask_type: bool = False


_ATTENTIONS = {
    "aten::scaled_dot_product_attention": _AttentionArgs(0, 1, 2, False, 5),
    "aten::_scaled_dot_product_flash_attention": _AttentionArgs(0, 1, 2, False, 4),
    "aten::_scaled_dot_product_flash_attention_for_cpu": _AttentionArgs(0, 1, 2, False, 4),
    "aten::_scaled_dot_product_efficient_attention": _AttentionArgs(0, 1, 2, False, 6),
    "aten::_scaled_dot_product_cudnn_attention": _AttentionArgs(0, 1, 2, False, 6),
    "aten::_flash_attention_forward": _AttentionArgs(0, 1, 2, True, 8),
    "aten::_efficient_attention_forward": _AttentionArgs(0, 1, 2, True, 9, mask_type=True),
    "aten::_scaled_dot_product_flash_attention_backward": _AttentionArgs(1, 2, 3, False, 11, backward=True),
    "aten::_scaled_dot_product_flash_attention_for_cpu_backward": _AttentionArgs(
        1, 2, 3, False, 7, backward=True
    ),
    "aten::_scaled_dot_product_efficient_attention_backward": _AttentionArgs(
        1, 2, 3, False, 11, backward=True
    ),
    "aten::_scaled_dot_product_cudnn_attention_backward": _AttentionArgs(1, 2, 3, False, 14, backward=True),
    "aten::_flash_attention_backward": _AttentionArgs(1, 2, 3, True, 11, backward=True),
    "aten::_efficient_attention_backward": _AttentionArgs(1, 2, 3, True, 14, backward=True, mask_type=True),
}


def _attention(name: str, dims: list[Any], concrete: list[Any]) -> float | None:
    args = _ATTENTIONS[name]
    q, k, v = _shape(dims, args.q), _shape(dims, args.k), _shape(dims, args.v)
    # 4-D only: a 3-D query is a packed variable-length batch whose sequence lengths are not recorded.
    if q is None or k is None or v is None or not len(q) == len(k) == len(v) == 4:
        return None
    if args.seq_first:
        (b, sq, h, d), sk, dv = q, k[1], v[3]
    else:
        (b, h, sq, d), sk, dv = q, k[2], v[3]
    flops = 2.0 * b * h * sq * sk * (d + dv)
    flag = _arg(concrete, args.causal)
    causal = (flag not in ("", "0", None)) if args.mask_type else flag == "True"
    if causal:
        flops /= 2
    return flops * 2.5 if args.backward else flops


# --- one op ------------------------------------------------------------------------------------------------


def modelled(name: str) -> bool:
    """Whether ``name`` has a FLOP formula here (its recorded shapes may still be missing)."""
    return name in _MATMULS or name in _CONVS or name in _ATTENTIONS or name in _CONV_BACKWARDS


def op_class(name: str) -> str:
    """matmul, conv, attention, or other (any other op, e.g. one whose FLOPs the producer recorded)."""
    if name in _MATMULS:
        return MATMUL
    if name in _CONVS or name in _CONV_BACKWARDS:
        return CONV
    if name in _ATTENTIONS:
        return ATTENTION
    return OTHER


# The class of an XLA (HLO) op whose FLOPs the profiler recorded, from its name and its first kernel's name:
# dot / cuBLAS (cublasLt nvjet, CUTLASS, hipBLASLt Cijk_) GEMMs -> matmul, convolution -> conv, fused attention
# custom calls (cuDNN / TE / CK flash attention) -> attention, anything else -> other.
_HLO_ATTENTION = re.compile(r"attn|attention|fmha|flash|sdpa")
_HLO_CONV = re.compile(r"convolution|conv(?!ert|ers)|fprop|dgrad|wgrad")
_HLO_MATMUL = re.compile(r"dot|gemm|matmul|cublas|nvjet|cutlass|xmma|cijk_")


def hlo_op_class(op_name: str, kernel_name: str = "") -> str:
    """matmul, conv, attention or other for an HLO op (e.g. ``dot.3``, ``convolution.1``, ``custom-call.2``
    running ``nvjet_sm90_...``, ``te_fused_attn_forward_ffi.10``), by its name, then its kernel's."""
    for text in (op_name.lower(), kernel_name.lower()):
        for pattern, cls in ((_HLO_ATTENTION, ATTENTION), (_HLO_CONV, CONV), (_HLO_MATMUL, MATMUL)):
            if pattern.search(text):
                return cls
    return OTHER


def is_conv_forward(name: str) -> bool:
    """A convolution forward op: its output size may come from the op that consumes it (``op_flops(output=)``)."""
    return name in _CONVS


def is_conv_backward(name: str) -> bool:
    """A convolution backward op: the gradient ops it called may say which passes ran (``op_flops(passes=)``)."""
    return name in _CONV_BACKWARDS


def op_flops(
    name: str,
    input_dims: str | None,
    input_types: str | None,
    concrete_inputs: str | None,
    output: list[int] | None = None,
    passes: int | None = None,
) -> OpFlops:
    """An op's FLOPs from its recorded inputs (JSON texts as the event table holds them) and the dtype of its
    first floating-point operand; TF32 for an FP32 convolution that records allow_tf32=True. ``output``: a
    convolution's output shape as its consumer recorded it, used where stride, padding or dilation are not
    recorded; ``passes``: the gradients a convolution backward op computed (INPUT_GRAD | WEIGHT_GRAD, from the
    gradient ops it called), used where its output_mask is not recorded. Nothing unrecorded is assumed: such an op's FLOPs are None."""
    dims, types, concrete = _json_list(input_dims), _json_list(input_types), _json_list(concrete_inputs)
    cls = op_class(name)
    flops: float | None = None
    if name in _MATMULS:
        flops = _MATMULS[name][0](dims, concrete)
    elif name in _CONVS:
        flops = _conv(name, dims, concrete, output)
    elif name in _CONV_BACKWARDS:
        flops = _conv_backward(name, dims, concrete, passes)
    elif name in _ATTENTIONS:
        flops = _attention(name, dims, concrete)
    dtype = _dtype(name, types, concrete)
    flops = flops if flops is None or flops >= 0 else None
    return OpFlops(flops, cls, dtype, _bytes(name, dims, concrete, flops, dtype, passes))


# Bytes per element of each dtype of the peak table (FP64 included).
_ELEMENT_BYTES = {"FP32": 4, "TF32": 4, "FP16": 2, "BF16": 2, "FP8": 1, "FP64": 8}


def _elements(dims: list[Any]) -> float:
    """Elements of every recorded tensor input (a TensorList's tensors each)."""
    total = 0.0
    for shape in dims:
        if isinstance(shape, list) and shape and all(isinstance(s, list) for s in shape):
            total += sum(_elements([s]) for s in shape)
        elif isinstance(shape, list) and shape and all(isinstance(s, int) for s in shape):
            total += math.prod(shape)
    return total


def _outputs(
    name: str, dims: list[Any], concrete: list[Any], flops: float, passes: int | None = None
) -> float:
    """Elements an op with a formula writes: its output (backward: the gradients it computes); 0 when the
    shapes do not say (a transposed convolution's output size depends on arguments not modelled here)."""
    if name == "aten::linear":
        return flops / (2 * _shape(dims, 1)[1])  # type: ignore[index]
    if name in _MATMULS:
        k = (_shape(dims, _MATMULS[name][1]) or [1])[-1]
        return flops / (2 * k) if k else 0.0
    if name in _CONVS:
        w = _shape(dims, 1) or []
        transposed = _CONVS[name].transposed
        if transposed is True or (not isinstance(transposed, bool) and _arg(concrete, transposed) == "True"):
            return 0.0
        return flops / (2 * w[1] * math.prod(w[2:])) if len(w) > 2 and w[1] else 0.0
    if name in _CONV_BACKWARDS:  # the gradients computed: grad_input and/or grad_weight
        grads = _CONV_BACKWARDS[name]
        input_size = math.prod(_shape(dims, grads.input) or [0])
        weight_size = math.prod(_shape(dims, grads.weight) or [0])
        bits = _backward_bits(name, concrete, passes) or 0
        return float(input_size * bool(bits & INPUT_GRAD) + weight_size * bool(bits & WEIGHT_GRAD))
    if name in _ATTENTIONS:
        args = _ATTENTIONS[name]
        query, key, value = (_shape(dims, i) or [0] for i in (args.q, args.k, args.v))
        if args.backward:  # dQ, dK, dV
            return float(math.prod(query) + math.prod(key) + math.prod(value))
        return math.prod(query) / query[-1] * value[-1] if query[-1] else 0.0
    return 0.0


def _bytes(
    name: str,
    dims: list[Any],
    concrete: list[Any],
    flops: float | None,
    dtype: str | None,
    passes: int | None = None,
) -> float | None:
    """The inputs read and outputs written once, at the op's dtype (None: dtype or shapes unknown)."""
    if dtype not in _ELEMENT_BYTES or not dims:
        return None
    outputs = _outputs(name, dims, concrete, flops, passes) if flops else 0.0
    return _ELEMENT_BYTES[dtype] * (_elements(dims) + outputs)


def _dtype(name: str, types: list[Any], concrete: list[Any]) -> str | None:
    first = _MATMULS[name][1] if name in _MATMULS else 0
    found = next((d for t in types[first:] if isinstance(t, str) and (d := torch_dtype(t))), None)
    if found is None:  # a TensorList, or the first operands are not floats
        found = next((d for t in types if isinstance(t, str) and (d := torch_dtype(t))), None)
    tf32_at = _CONVS[name].allow_tf32 if name in _CONVS else None
    if found == "FP32" and tf32_at is not None and _arg(concrete, tf32_at) == "True":
        return "TF32"
    return found


# --- reading the recorded inputs ---------------------------------------------------------------------------


def _json_list(text: str | None) -> list[Any]:
    if not text:
        return []
    import json  # here, not at module level: an analyze of a trace without these texts never loads json (kimp17)

    try:
        value = json.loads(text)
    except ValueError:
        return []
    return value if isinstance(value, list) else []


def _shape(dims: list[Any], index: int) -> list[int] | None:
    """Input ``index``'s shape (a list of non-negative ints), None when not recorded as one."""
    if index >= len(dims):
        return None
    shape = dims[index]
    if not isinstance(shape, list) or not all(
        isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape
    ):
        return None
    return shape


def _arg(concrete: list[Any], index: int | None) -> str | None:
    """Concrete input ``index`` as recorded (a string such as "1", "[2, 2]", "True"; "" when not a scalar)."""
    if index is None or index >= len(concrete):
        return None
    value = concrete[index]
    return value if isinstance(value, str) else None


def _int_list(concrete: list[Any], index: int | None, size: int) -> list[int] | None:
    """An int[] argument ("[2, 2]", "[2]" or "2") expanded to ``size`` values; None when not recorded."""
    text = _arg(concrete, index)
    if not text:
        return None
    import json  # here, not at module level: an analyze of a trace without these texts never loads json (kimp17)

    try:
        value = json.loads(text)
    except ValueError:
        return None
    values = value if isinstance(value, list) else [value]
    if not all(isinstance(v, int) for v in values) or len(values) not in (1, size):
        return None
    return values * size if len(values) == 1 else values
