"""The caution host_launch_overhead adds when the trace records Python calls names the tracer of the trace's
framework: a JAX or TensorFlow profile was told of "torch.profiler's with_stack=True", which it never used."""

from __future__ import annotations

import pytest
from conftest import SHARED_TRACES

import tracelens
from tracelens.analyses import analyze
from tracelens.analyses.diagnosis.host_launch_overhead import CAUSE

SHARED_JAX = SHARED_TRACES / "tf" / "amd_gpu_jax_te_fused_attn.xplane.pb"


@pytest.mark.parametrize(
    ("framework", "named", "not_named"),
    [
        ("pytorch", "torch.profiler's with_stack=True", "python_tracer_level"),
        ("jax", "jax.profiler.ProfileOptions", "torch.profiler"),
        ("tensorflow", "tf.profiler.experimental.ProfilerOptions", "torch.profiler"),
        ("default", "a Python tracer", "torch.profiler"),
    ],
)
def test_caution_names_the_frameworks_tracer(framework: str, named: str, not_named: str) -> None:
    evidence = {"remedy": "small_kernels", "python_events": 1234}
    text = CAUSE.fix(evidence, framework)
    assert "Caution: this trace records Python calls (1,234 Python events" in text
    assert named in text and not_named not in text


def test_no_caution_without_python_events() -> None:
    assert "Caution" not in CAUSE.fix({"remedy": "small_kernels", "python_events": 0}, "jax")


@pytest.mark.skipif(not SHARED_JAX.exists(), reason="shared traces absent")
def test_jax_profile_is_not_told_of_torch_profiler() -> None:
    doc = analyze(tracelens.load(SHARED_JAX))
    (cause,) = [c for c in doc["diagnosis"]["causes"] if c["cause"] == "host_launch_overhead"]
    assert cause["evidence"]["python_events"] > 0
    assert "torch.profiler" not in cause["fix"] and "jax.profiler.ProfileOptions" in cause["fix"]


def test_unexplained_idle_asks_for_the_jax_python_tracer_only_when_it_was_off() -> None:
    # A JAX profile that records Python calls was told to "enable the Python tracer" (jax_mlp_cuda: 13 Python rows).
    from tracelens.analyses.diagnosis.unexplained_idle import CAUSE as IDLE

    tracing = {"api_calls": True, "framework_ops": True, "os_runtime": False}
    on = IDLE.fix({"remedy": "untraced", "host_tracing": {**tracing, "python": True}}, "jax")
    off = IDLE.fix({"remedy": "untraced", "host_tracing": {**tracing, "python": False}}, "jax")
    assert "Python tracer" not in on and "TraceAnnotation" in on
    assert "Python tracer" in off and "python_tracer_level" in off and "TraceAnnotation" in off
