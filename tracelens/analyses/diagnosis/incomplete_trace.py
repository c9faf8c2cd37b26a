"""incomplete_trace: the primary when the trace cannot answer (a blocking completeness problem: the GPU side
is missing, ``analyses/completeness.py``); no lost time, never in ``causes``. Its fix is the first blocking
problem's (how to record the GPU side). The completeness problems' sentences live here too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...units import fmt_ns, fmt_pct
from .cause import Finding, Verdict
from .wording import calls, quote

NAME = "incomplete_trace"


def primary(completeness: dict[str, Any], ranked: list[Finding]) -> Finding:
    """The `incomplete_trace` primary: which blocking problems, what the recorded part shows, how to record."""
    blocking = [p for p in completeness["problems"] if p["blocking"]]
    largest = ranked[0] if ranked else None
    evidence = {
        "problems": [p["kind"] for p in blocking],
        "largest_cause": largest["cause"] if largest else None,
        "largest_share": largest["share"] if largest else 0.0,
    }
    return {
        "cause": NAME,
        "lost_ns": 0,
        "share": 0.0,
        "evidence": evidence,
        "fix": blocking[0]["fix"] if blocking else None,
    }


def _no_gpu(ev: dict[str, Any]) -> str:
    return (
        f"the trace records no GPU activity (no kernel, copy or memset) and no call that launches one: "
        f"{ev.get('host_events', 0):,} host events ({ev.get('framework_ops', 0):,} framework ops, "
        f"{ev.get('annotations', 0):,} annotations or NVTX ranges) only"
    )


def _lost_gpu(ev: dict[str, Any]) -> str:
    if not ev.get("gpu_ops"):
        return (
            f"the trace records {calls(ev.get('launch_calls', 0), 'launch call')} and no GPU activity: "
            "the profiler lost the GPU side"
        )
    gone = (ev.get("host_end_ns") or 0) - (ev.get("last_gpu_op_end_ns") or 0)
    return (
        f"{ev.get('after_last_gpu_op', 0):,} of {calls(ev.get('launch_calls', 0), 'launch call')} "
        f"({fmt_pct(ev.get('share'))}) start after the last recorded GPU op ended: the GPU side stops "
        f"{fmt_ns(gone)} before the host's last launch"
    )


def _late_gpu(ev: dict[str, Any]) -> str:
    return (
        f"{ev.get('before_first_gpu_op', 0):,} of {calls(ev.get('launch_calls', 0), 'launch call')} "
        f"({fmt_pct(ev.get('share'))}) start before the first recorded GPU op and match none: the GPU side "
        "starts late"
    )


def _lost_kernels(ev: dict[str, Any]) -> str:
    return (
        f"the trace records {calls(ev.get('kernel_launch_calls', 0), 'kernel launch call')} and "
        f"{calls(ev.get('gpu_ops', 0), 'GPU op')}, none of them a kernel: the profiler lost the kernels"
    )


def _no_launches(ev: dict[str, Any]) -> str:
    if not ev.get("api_calls"):
        return (
            f"{ev.get('gpu_ops', 0):,} GPU ops and no CUDA/HIP API call: the launches' host side was not "
            "recorded"
        )
    return (
        f"{ev.get('unmatched_gpu_ops', 0):,} of {ev.get('gpu_ops_with_id', 0):,} GPU ops "
        f"({fmt_pct(ev.get('share'))}) match no launch call in the trace (launched before it began, or by "
        "untraced host code): per-op and launch figures cover the rest"
    )


def _ids(ev: dict[str, Any]) -> str:
    return (
        f"{ev.get('gpu_ops_without_id', 0):,} of {ev.get('gpu_ops', 0):,} GPU ops and "
        f"{ev.get('launch_calls_without_id', 0):,} of {calls(ev.get('launch_calls', 0), 'launch call')} "
        "carry no correlation id: that GPU work cannot be tied to its launch"
    )


def _dropped(ev: dict[str, Any]) -> str:
    parts = []
    if ev.get("dropped_records") is not None:
        parts.append(f"{ev['dropped_records']:,} records dropped")
    if ev.get("collection_stopped_early"):
        parts.append("GPU collection stopped early")
    messages = ev.get("messages") or []
    if messages:
        parts.append(quote(messages[0]))
    return "the profiler says it lost events" + (": " + "; ".join(parts) if parts else "")


def _overhead(ev: dict[str, Any]) -> str:
    parts = []
    if ev.get("overhead_ns"):
        parts.append(
            f"profiler overhead covers {fmt_ns(ev['overhead_ns'])} ({fmt_pct(ev.get('share'))}) of the "
            f"{'GPU window' if ev.get('window') == 'gpu' else 'host span'}"
        )
    if ev.get("python_events"):
        parts.append(
            f"{ev['python_events']:,} Python calls recorded ({ev.get('python_events_per_gpu_op', 0):.1f} "
            "per GPU op: a Python tracer such as with_stack=True slows the host)"
        )
    return "the profiler's own work inflates host time" + (": " + "; ".join(parts) if parts else "")


def _no_duration(ev: dict[str, Any]) -> str:
    return (
        f"{ev.get('zero_length', 0):,} of {ev.get('gpu_ops', 0):,} GPU ops ({fmt_pct(ev.get('share'))}) have no "
        "duration (a missing or negative dur): their busy time is lost"
    )


def _no_device(ev: dict[str, Any]) -> str:
    return (
        f"{ev.get('without_device', 0):,} of {ev.get('gpu_ops', 0):,} GPU ops ({fmt_pct(ev.get('share'))}) name no "
        "GPU (their device id is missing or no GPU number): they were recorded, but no GPU's busy time holds them"
    )


def _clock_skew(ev: dict[str, Any]) -> str:
    return (
        f"{ev.get('before_their_call', 0):,} of {ev.get('matched_gpu_ops', 0):,} GPU ops "
        f"({fmt_pct(ev.get('share'))}) start before the call that launched them began (by "
        f"{fmt_ns(ev.get('median_ahead_ns'))} at the median): the GPU's timestamps are not on the host's clock"
    )


# One clause per completeness problem kind (``completeness.problems[].kind``).
PROBLEM_CLAUSES: dict[str, Callable[[dict[str, Any]], str]] = {
    "no_gpu_activity": _no_gpu,
    "launches_without_gpu_activity": _lost_gpu,
    "launches_before_gpu_activity": _late_gpu,
    "kernel_launches_without_kernels": _lost_kernels,
    "gpu_ops_without_device": _no_device,
    "gpu_ops_without_duration": _no_duration,
    "gpu_clock_skew": _clock_skew,
    "gpu_activity_without_launches": _no_launches,
    "missing_correlation_ids": _ids,
    "dropped_events": _dropped,
    "profiler_overhead": _overhead,
}


def problem_clause(problem: dict[str, Any]) -> str:
    build = PROBLEM_CLAUSES.get(str(problem.get("kind")))
    evidence = problem.get("evidence")
    if build is None or not isinstance(evidence, dict):
        return str(problem.get("kind"))
    try:
        return build(evidence)
    except (KeyError, TypeError, ValueError):  # a document written by another version: fall back, never crash
        return str(problem.get("kind"))


def sentence(cause: dict[str, Any], diagnosis: dict[str, Any]) -> str:
    problems = (diagnosis.get("completeness") or {}).get("problems") or []
    blocking = [problem_clause(p) for p in problems if isinstance(p, dict) and p.get("blocking")]
    text = "The trace cannot say why the GPU idles: " + ("; ".join(blocking) or "the GPU side is missing")
    ev = cause.get("evidence") or {}
    if ev.get("largest_cause"):
        text += f". What was recorded shows {ev['largest_cause']} ({fmt_pct(ev.get('largest_share'))})"
    return text + "."


VERDICT = Verdict(NAME, sentence, answerable=False)
