"""report/names.py: short kernel and op names stay distinct, fit their width and keep the part that differs."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tracelens.report.names import distinct_short_names, simplify

# Real names (the shared traces and the demo fixture) that a head…tail cut at 44 printed alike.
XMMA = [
    "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas",
    "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x64x8_stage3_warpsize1x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas",
    "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x128x8_stage3_warpsize1x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas",
    "sm80_xmma_gemm_f32f32_f32f32_f32_nt_n_tilesize128x64x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas",
]
CUDNN = [
    "void cudnn::ampere::scudnn_128x32_dgrad_small_nn_v1(cudnn::conv::ConvParams)",
    "void cudnn::ampere::scudnn_128x64_wgrad_nn_v1(cudnn::conv::ConvParams)",
    "void cudnn::ampere::scudnn_128x64_relu_small_nn_v1(cudnn::conv::ConvParams)",
]
FFT = [
    "void fft2d_r2c_32x32<float, false, 5u, true>(float2*, float const*, int, int, int, int, int, int, int, int, "
    "int, cudnn::reduced_divisor, bool, int2, int, int)",
    "void fft2d_r2c_32x32<float, false, 0u, false>(float2*, float const*, int, int, int, int, int, int, int, int, "
    "int, cudnn::reduced_divisor, bool, int2, int, int)",
]


def test_simplify_drops_return_type_namespaces_and_parameters() -> None:
    assert simplify(CUDNN[0]) == "scudnn_128x32_dgrad_small_nn_v1"
    assert simplify(FFT[0]) == "fft2d_r2c_32x32<float, false, 5u, true>"
    assert (
        simplify(
            "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
            "namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor"
            "<float, 4>>()"
        )
        == "multi_tensor_apply_kernel<TensorListMetadata<4>, FusedAdamMathFunctor<float, 4>>"
    )
    assert simplify("ampere_sgemm_128x64_tn") == "ampere_sgemm_128x64_tn"


def test_names_that_fit_are_kept_as_they_are() -> None:
    assert distinct_short_names(["aten::mm", "aten::addmm"], 44) == ["aten::mm", "aten::addmm"]


def test_xmma_tiles_shown() -> None:
    short = distinct_short_names(XMMA, 44)
    assert len(set(short)) == 4 and all(len(s) <= 44 for s in short)
    for s, tile in zip(short, ("128x128x8", "64x64x8", "64x128x8", "128x64x8"), strict=True):
        assert f"tilesize{tile}" in s  # the tile shape: what tells them apart
        assert s.startswith("sm80_xmma_ge")  # and which kernel family they are


def test_cudnn_and_template_arguments_shown() -> None:
    short = distinct_short_names(CUDNN, 44)
    assert short == [
        "scudnn_128x32_dgrad_small_nn_v1",
        "scudnn_128x64_wgrad_nn_v1",
        "scudnn_128x64_relu_small_nn_v1",
    ]
    short = distinct_short_names(FFT, 30)
    assert len(set(short)) == 2 and all(len(s) <= 30 for s in short)
    assert "5u, true>" in short[0] and "0u, false>" in short[1]


def test_alike_once_simplified_keep_what_differs() -> None:
    names = ["void ns1::k<int>(float*)", "void ns2::k<int>(float*)"]  # same function in two namespaces
    short = distinct_short_names(names, 44)
    assert short == [" ".join(n.split()) for n in names]


def test_duplicates_in_input_map_to_one_short_form() -> None:
    short = distinct_short_names([XMMA[0], XMMA[1], XMMA[0]], 30)
    assert short[0] == short[2] and short[0] != short[1]


# Names built from a few shared parts, so that many share long prefixes and suffixes (the hard case).
_PART = st.sampled_from(
    [
        "sm80_xmma_gemm_",
        "f32f32_",
        "tilesize128x128x8_",
        "tilesize64x64x8_",
        "void ",
        "cudnn::",
        "kernel<float, 4>",
        "(int, float*)",
        "_v1",
        "_nn",
        "_tn",
        "x",
        "1",
        "…",
        "~2",
    ]
)
_NAME = st.lists(_PART, min_size=1, max_size=8).map("".join)


@settings(max_examples=150, deadline=None)
@given(st.lists(_NAME, min_size=1, max_size=12), st.integers(min_value=8, max_value=60))
# found by hypothesis in a CI run: a name that fits once its trailing space is dropped was simplified
@example(["tilesize64x64x8_cudnn::(int, float*)xvoid "], 41)
def test_distinct_and_within_width(names: list[str], width: int) -> None:
    short = distinct_short_names(names, width)
    assert len(short) == len(names)
    assert all(len(s) <= width for s in short)
    by_name = dict(zip(names, short, strict=True))
    assert len(set(by_name.values())) == len(by_name)  # distinct names, distinct short forms
    for name, s in by_name.items():
        if len(" ".join(name.split())) <= width:
            assert s == " ".join(name.split()) or s.endswith(tuple(f"~{k}" for k in range(2, 20)))


@pytest.mark.parametrize("width", [8, 16, 44])
def test_width_floor(width: int) -> None:
    assert all(len(s) <= max(width, 8) for s in distinct_short_names([*XMMA, *CUDNN, *FFT], width))


# The top kernels of the shared h100x2 fastvideo trace: two differ only by a split_k at their end.
FASTVIDEO_XMMA = [
    "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x256x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas",
    "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas",
    "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x256x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4_execute_split_k_kernel__5x_cublas",
    "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas",
]


def test_split_k_and_tiles_shown() -> None:
    short = distinct_short_names(FASTVIDEO_XMMA, 44)
    assert len(set(short)) == 4 and all(len(s) <= 44 for s in short)
    assert [("tilesize64x256x8" in s, "tilesize128x128x8" in s, "split_k" in s) for s in short] == [
        (True, False, False),
        (False, True, False),
        (True, False, True),
        (False, False, False),
    ]
    assert "tilesize32x32x8" in short[3]
