"""One sentence per diagnosis finding, with its numbers, for the terminal and the markdown report.

The sentence is built from the cause's structured evidence (``docs/json.md``, "Evidence by cause"); the JSON
document keeps only the structure. Output is plain text: names from the traced program are quoted as they
are, so callers escape the sentence for their medium (markdown: ``escape.md``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .escape import shorten
from .units import fmt_bytes, fmt_ns, fmt_pct, plural

NAME_LIMIT = 60


def _q(name: Any) -> str:
    """A traced name, shortened and quoted."""
    return f"“{shorten(str(name), NAME_LIMIT)}”"


def _worst(by_device: dict[str, int]) -> tuple[str, int]:
    """The device with the largest value (ties: lowest id) and that value."""
    if not by_device:
        return "?", 0
    device = min(by_device, key=lambda d: (-by_device[d], int(d) if str(d).lstrip("-").isdigit() else 0))
    return device, by_device[device]


def _calls(n: int, what: str = "call") -> str:
    return f"{n:,} {what}{'' if n == 1 else 's'}"


def _gpu(device: str, n: int) -> str:
    return f"GPU {device}" if n > 1 or device != "0" else "The GPU"


def _mean_note(cause: dict[str, Any], by_device: dict[str, int]) -> str:
    if len(by_device) <= 1:
        return ""
    share = (cause.get("evidence") or {}).get("share_of_idle")
    of_idle = f", {fmt_pct(share)} of their idle time" if share is not None else ""
    return f" (mean over {len(by_device)} GPUs: {fmt_ns(cause.get('lost_ns'))}{of_idle})"


def _startup(cause: dict[str, Any], _: dict[str, Any]) -> str:
    ev = cause["evidence"]
    parts: list[str] = []
    listed: list[tuple[str, int]] = []
    for item in ev.get("items") or []:
        # Nested one-time rows (an op and the call inside it) cover the same idle time: name the outer one.
        if any(reason == item["reason"] and abs(idle - item["idle_ns"]) <= 0.01 * idle for reason, idle in listed):
            continue
        listed.append((item["reason"], item["idle_ns"]))
        name, idle = _q(item["name"]), fmt_ns(item["idle_ns"])
        if item["reason"] == "first_call":
            parts.append(f"the first {name} ({fmt_ns(item['host_ns'])}; later calls "
                         f"{fmt_ns(item.get('later_median_ns'))})")
        elif item["reason"] == "long_launch":
            parts.append(f"{name} calls of over 1 ms while the GPU idled (kernel modules loaded on first use, {idle})")
        elif item["reason"] == "first_step":
            parts.append(f"{name}, seen only in the first step ({idle})")
        elif item["reason"] == "allocation":
            parts.append(f"{name} ({_calls(item['count'])} while warming up, {idle})")
        else:
            parts.append(f"{name} ({idle})")
        if len(parts) == 3:
            break
    text = f"One-time work filled {fmt_ns(cause['lost_ns'])} of GPU idle time ({fmt_pct(cause['share'])} of the span)"
    if parts:
        text += ": " + "; ".join(parts)
    if ev.get("slow_first_step"):
        text += (f". The first step took {fmt_ns(ev.get('first_step_ns'))}, later steps "
                 f"{fmt_ns(ev.get('later_step_median_ns'))}")
    return text + "."


def _input(cause: dict[str, Any], _: dict[str, Any]) -> str:
    ev = cause["evidence"]
    top = ev.get("top_input_ranges") or []
    if "idle_by_device" not in ev:  # no GPU in the trace: the host-side view
        where = f" in {_q(top[0]['name'])}" if top else ""
        return (f"The training thread waited for input{where} for {fmt_ns(cause['lost_ns'])}, "
                f"{fmt_pct(cause['share'])} of {'step' if ev.get('steps') else 'host'} time (no GPU in this trace).")
    by_device = ev.get("idle_by_device") or {}
    device, idle = _worst(by_device)
    text = f"{_gpu(device, len(by_device))} was idle {fmt_ns(idle)}"
    if ev.get("share_of_idle") is not None and len(by_device) == 1:  # several GPUs: in the mean note
        text += f", {fmt_pct(ev['share_of_idle'])} of its idle time,"
    text += f" while the training thread was in {_q(top[0]['name'])}" if top else " while the host waited for input"
    if ev.get("input_per_step_ns") is not None:
        text += f", {fmt_ns(ev['input_per_step_ns'])} per step"
    return text + _mean_note(cause, by_device) + "."


def _launch(cause: dict[str, Any], _: dict[str, Any]) -> str:
    ev = cause["evidence"]
    launch, cpu = ev.get("idle_launch_by_device") or {}, ev.get("idle_cpu_by_device") or {}
    total = {d: launch.get(d, 0) + cpu.get(d, 0) for d in set(launch) | set(cpu)}
    device, idle = _worst(total)
    doing = [f"{what} ({fmt_ns(ns)})" for what, ns in
             (("framework or Python code", cpu.get(device)), ("CUDA API calls", launch.get(device))) if ns]
    text = f"{_gpu(device, len(total))} was idle {fmt_ns(idle)}"
    if doing:
        text += " while its launching thread ran " + " and ".join(doing)
    ops = ev.get("top_cpu_ops") or []
    if ops:
        text += f"; most host time in {_q(ops[0]['name'])}"
    if ev.get("small_kernel_share") is not None:
        text += f"; {fmt_pct(ev['small_kernel_share'])} of kernel time is in kernels under 10 µs"
    if ev.get("issue_to_execution") is not None:
        text += f"; the host issues GPU work at {ev['issue_to_execution']:.2f}x the rate the GPU runs it"
    if ev.get("cuda_graphs"):
        text += f"; CUDA graphs are in use, {ev.get('ops_outside_graphs') or 0:,} GPU ops still launched outside them"
    return text + _mean_note(cause, total) + "."


def _sync(cause: dict[str, Any], _: dict[str, Any]) -> str:
    ev = cause["evidence"]
    by_device = ev.get("idle_by_device") or {}
    device, idle = _worst(by_device)
    calls = ev.get("top_sync_calls") or []
    # The idle includes each wait's echo: what the host launched right after, instead of during, the wait.
    text = f"{_gpu(device, len(by_device))} was idle {fmt_ns(idle)} while the host was blocked in, or catching up after, "
    text += (f"{_q(calls[0]['name'])} ({_calls(calls[0]['count'])}, {fmt_ns(calls[0]['total_ns'])})"
             if calls else "synchronizing calls")
    item = ev.get("item_pattern") or {}
    if item.get("count"):
        text += f"; {plural(item['count'], 'small device-to-host read')} waited for the GPU (the .item() pattern)"
        ops = item.get("top_ops") or []
        if ops:
            text += f", most often in {_q(ops[0]['name'])}"
    return text + "."


def _memcpy(cause: dict[str, Any], _: dict[str, Any]) -> str:
    ev = cause["evidence"]
    kinds = ev.get("by_kind") or []
    parts = []
    by_device = ev.get("exposed_by_device") or {}
    if ev.get("device_mean_exposed_ns"):
        # One GPU speaks: the evidence's kinds are that GPU's own (diagnosis picks the most exposed one).
        device = str(ev["device"]) if ev.get("device") is not None else _worst(by_device)[0]
        exposed = by_device.get(device, ev["device_mean_exposed_ns"])
        where = f"on GPU {device}, " if len(by_device) > 1 else ""
        text = f"{where}copies ran with no kernel beside them for {fmt_ns(exposed)}"
        if kinds:
            k = kinds[0]
            duration = k["duration_ns"] or 1
            memory = ("" if k["kind"] in ("DtoD", "PtoP") else "pinned" if k["pinned_ns"] >= 0.5 * duration
                      else "pageable" if k["pageable_ns"] >= 0.5 * duration else "of mixed or unknown host memory")
            mode = ("asynchronous" if k["async_ns"] >= 0.5 * duration
                    else "synchronous" if k["sync_ns"] >= 0.5 * duration else "")
            rate = f" at {fmt_bytes(k['achieved_bytes_per_s'])}/s" if k.get("achieved_bytes_per_s") else ""
            how = " and ".join(x for x in (memory, mode) if x)
            copies = "copy" if k["count"] == 1 else "copies"
            text += f": mostly {k['count']:,} {k['kind']} {copies} of {fmt_bytes(k['bytes'])}{rate}" + (f", {how}" if how else "")
            if ev.get("link_fraction") is not None:
                text += f" ({fmt_pct(ev['link_fraction'])} of the expected bandwidth for large copies)"
        if ev.get("remedy") == "floor" and ev.get("kernel_union_ns") is not None:
            text += f"; its kernels ran {fmt_ns(ev['kernel_union_ns'])} in all"
        parts.append(text)
    if ev.get("sync_copy_idle_ns"):
        parts.append(f"the GPU idled {fmt_ns(ev['sync_copy_idle_ns'])} while the host waited in synchronous copies")
    if not parts:
        return "Copies cost GPU time."
    sentence = "; ".join(parts) + _mean_note(cause, by_device)
    return sentence[0].upper() + sentence[1:] + "."


def _occupancy(cause: dict[str, Any], _: dict[str, Any]) -> str:
    ev = cause["evidence"]
    text = f"Kernels left {fmt_ns(cause['lost_ns'])} of GPU time with SMs empty ({fmt_pct(cause['share'])} of the span)"
    kernels = ev.get("top_kernels") or []
    under = [k for k in kernels if not k.get("block_shape_limited")]
    shaped = [k for k in kernels if k.get("block_shape_limited")]
    parts = []
    if ev.get("under_filled_lost_ns"):
        sms = sorted({v for v in (ev.get("sm_count") or {}).values() if v})
        part = f"{fmt_ns(ev['under_filled_lost_ns'])} from launches with fewer blocks than the GPU's " \
               f"{'/'.join(str(s) for s in sms) or '?'} SMs"
        if under and under[0].get("grid_blocks") is not None:
            blocks = round(under[0]["grid_blocks"])
            part += f" (e.g. {_q(under[0]['name'])}, {_calls(blocks, 'block')})"
        parts.append(part)
    if ev.get("block_shape_lost_ns"):
        part = f"{fmt_ns(ev['block_shape_lost_ns'])} from block shapes that cap occupancy"
        if shaped:
            part += f" (e.g. {_q(shaped[0]['name'])}, {shaped[0]['threads_per_block']} threads per block)"
        parts.append(part)
    return text + (": " + "; ".join(parts) if parts else "") + "."


def _imbalance(cause: dict[str, Any], _: dict[str, Any]) -> str:
    ev = cause["evidence"]
    busy = ev.get("busy_by_device") or {}
    if ev.get("across_ranks_ns") and ev["across_ranks_ns"] >= cause["lost_ns"]:
        return f"Ranks wait {fmt_ns(cause['lost_ns'])} on average for the busiest rank."
    least = str(ev.get("least_busy_device"))
    busiest, top = _worst(busy)
    text = (f"GPU {least} was busy {fmt_ns(busy.get(least))} while GPU {busiest} was busy {fmt_ns(top)}: "
            f"the GPUs are {fmt_ns(cause['lost_ns'])} short of the busiest one on average")
    own = ev.get("least_busy_own_cause")
    if own:
        text += f"; GPU {least}'s own largest loss is {own['cause']} ({fmt_ns(own['lost_ns'])})"
    return text + "."


def _communication(cause: dict[str, Any], _: dict[str, Any]) -> str:
    ev = cause["evidence"]
    exposed, collective = ev.get("exposed_by_device") or {}, ev.get("collective_by_device") or {}
    device, idle = _worst(exposed)
    total = collective.get(device) or 0
    text = f"{_gpu(device, len(exposed))} spent {fmt_ns(idle)} in collectives with no other kernel running"
    if total:
        text += f" ({fmt_pct(idle / total)} of its {fmt_ns(total)} of collective time)"
    kinds = ev.get("by_type") or []
    if kinds:
        text += ": " + ", ".join(f"{_calls(t['count'], t['type'].replace('_', '-'))} ({fmt_ns(t['time_ns'])})"
                                 for t in kinds[:3])
    if ev.get("busbw_bytes_per_s") is not None:
        text += f"; bus bandwidth {fmt_bytes(ev['busbw_bytes_per_s'])}/s"
        if ev.get("link_fraction") is not None:
            text += (f" ({fmt_pct(ev['link_fraction'])} of {ev.get('link')}'s "
                     f"{fmt_bytes(ev.get('link_peak_bytes_per_s'))}/s)")
    if (ev.get("world_size") or 1) > 1:
        text += f"; one of {ev['world_size']} ranks"
    return text + _mean_note(cause, exposed) + "."


def _unexplained(cause: dict[str, Any], _: dict[str, Any]) -> str:
    ev = cause["evidence"]
    by_device = ev.get("idle_by_device") or {}
    device, idle = _worst(by_device)
    text = f"{_gpu(device, len(by_device))} was idle {fmt_ns(idle)}"
    if ev.get("share_of_idle") is not None and len(by_device) == 1:
        text += f" ({fmt_pct(ev['share_of_idle'])} of its idle time)"
    text += " with no recorded activity on its launching thread"
    if ev.get("rank_wait_ns"):
        text += f"; the host was waiting on other processes (MPI or collective calls) for {fmt_ns(ev['rank_wait_ns'])} of it"
    top = ev.get("top_activity") or []
    if top:
        text += f"; in that time the trace shows {_q(top[0]['name'])} ({top[0]['kind']}, thread {top[0]['tid']}, " \
                f"{fmt_ns(top[0]['overlap_ns'])})"
    else:
        text += "; no host thread recorded anything in that time"
    tracing = ev.get("host_tracing") or {}
    missing = [what for key, what in (("framework_ops", "framework ops"), ("os_runtime", "OS-runtime calls"))
               if not tracing.get(key)]
    if missing:
        text += f"; {' and '.join(missing)} were not traced"
    if (ev.get("world_size") or 1) > 1:
        text += f"; this is one of {ev['world_size']} ranks"
    return text + _mean_note(cause, by_device) + "."


def _none(cause: dict[str, Any], diagnosis: dict[str, Any]) -> str:
    ev = cause.get("evidence") or {}
    text = f"No cause loses more than {fmt_pct(ev.get('threshold', diagnosis.get('threshold')))} of the span"
    if ev.get("busy_share") is not None:
        text += f"; the GPUs are busy {fmt_pct(ev['busy_share'])} of it"
    if ev.get("largest_cause"):
        text += f" (largest: {ev['largest_cause']}, {fmt_pct(ev.get('largest_share'))})"
    return text + "."


def _problem_no_gpu(ev: dict[str, Any]) -> str:
    return (f"the trace records no GPU activity (no kernel, copy or memset) and no call that launches one: "
            f"{ev.get('host_events', 0):,} host events ({ev.get('framework_ops', 0):,} framework ops, "
            f"{ev.get('annotations', 0):,} annotations or NVTX ranges) only")


def _problem_lost_gpu(ev: dict[str, Any]) -> str:
    if not ev.get("gpu_ops"):
        return (f"the trace records {_calls(ev.get('launch_calls', 0), 'launch call')} and no GPU activity: "
                "the profiler lost the GPU side")
    gone = (ev.get("host_end_ns") or 0) - (ev.get("last_gpu_op_end_ns") or 0)
    return (f"{ev.get('after_last_gpu_op', 0):,} of {_calls(ev.get('launch_calls', 0), 'launch call')} "
            f"({fmt_pct(ev.get('share'))}) start after the last recorded GPU op ended: the GPU side stops "
            f"{fmt_ns(gone)} before the host's last launch")


def _problem_no_launches(ev: dict[str, Any]) -> str:
    if not ev.get("api_calls"):
        return (f"{ev.get('gpu_ops', 0):,} GPU ops and no CUDA/HIP API call: the launches' host side was not "
                "recorded")
    return (f"{ev.get('unmatched_gpu_ops', 0):,} of {ev.get('gpu_ops_with_id', 0):,} GPU ops "
            f"({fmt_pct(ev.get('share'))}) match no launch call in the trace (launched before it began, or by "
            "untraced host code): per-op and launch figures cover the rest")


def _problem_ids(ev: dict[str, Any]) -> str:
    return (f"{ev.get('gpu_ops_without_id', 0):,} of {ev.get('gpu_ops', 0):,} GPU ops and "
            f"{ev.get('launch_calls_without_id', 0):,} of {_calls(ev.get('launch_calls', 0), 'launch call')} "
            "carry no correlation id: that GPU work cannot be tied to its launch")


def _problem_dropped(ev: dict[str, Any]) -> str:
    parts = []
    if ev.get("dropped_records") is not None:
        parts.append(f"{ev['dropped_records']:,} records dropped")
    if ev.get("collection_stopped_early"):
        parts.append("GPU collection stopped early")
    messages = ev.get("messages") or []
    if messages:
        parts.append(_q(messages[0]))
    return "the profiler says it lost events" + (": " + "; ".join(parts) if parts else "")


def _problem_overhead(ev: dict[str, Any]) -> str:
    parts = []
    if ev.get("overhead_ns"):
        parts.append(f"profiler overhead covers {fmt_ns(ev['overhead_ns'])} ({fmt_pct(ev.get('share'))}) of the "
                     f"{'GPU window' if ev.get('window') == 'gpu' else 'host span'}")
    if ev.get("python_events"):
        parts.append(f"{ev['python_events']:,} Python calls recorded ({ev.get('python_events_per_gpu_op', 0):.1f} "
                     "per GPU op: a Python tracer such as with_stack=True slows the host)")
    return "the profiler's own work inflates host time" + (": " + "; ".join(parts) if parts else "")


PROBLEM_SENTENCES: dict[str, Callable[[dict[str, Any]], str]] = {
    "no_gpu_activity": _problem_no_gpu,
    "launches_without_gpu_activity": _problem_lost_gpu,
    "gpu_activity_without_launches": _problem_no_launches,
    "missing_correlation_ids": _problem_ids,
    "dropped_events": _problem_dropped,
    "profiler_overhead": _problem_overhead,
}


def _problem_clause(problem: dict[str, Any]) -> str:
    build = PROBLEM_SENTENCES.get(str(problem.get("kind")))
    evidence = problem.get("evidence")
    if build is None or not isinstance(evidence, dict):
        return str(problem.get("kind"))
    try:
        return build(evidence)
    except (KeyError, TypeError, ValueError):  # a document written by another version: fall back, never crash
        return str(problem.get("kind"))


def problem_sentence(problem: dict[str, Any]) -> str:
    """A completeness problem (``diagnosis.completeness.problems[]``) as one sentence with its numbers."""
    text = _problem_clause(problem)
    return text[0].upper() + text[1:] + "."


def caveats(diagnosis: dict[str, Any]) -> list[str]:
    """The non-blocking completeness problems as sentences: the answer stands, these figures are affected."""
    problems = ((diagnosis or {}).get("completeness") or {}).get("problems") or []
    return [problem_sentence(p) for p in problems if isinstance(p, dict) and not p.get("blocking")]


def _incomplete(cause: dict[str, Any], diagnosis: dict[str, Any]) -> str:
    problems = (diagnosis.get("completeness") or {}).get("problems") or []
    blocking = [_problem_clause(p) for p in problems if isinstance(p, dict) and p.get("blocking")]
    text = "The trace cannot say why the GPU idles: " + ("; ".join(blocking) or "the GPU side is missing")
    ev = cause.get("evidence") or {}
    if ev.get("largest_cause"):
        text += f". What was recorded shows {ev['largest_cause']} ({fmt_pct(ev.get('largest_share'))})"
    return text + "."


SENTENCES: dict[str, Callable[[dict[str, Any], dict[str, Any]], str]] = {
    "startup": _startup,
    "input_pipeline": _input,
    "host_launch_overhead": _launch,
    "synchronization": _sync,
    "memcpy": _memcpy,
    "low_occupancy": _occupancy,
    "multi_gpu_imbalance": _imbalance,
    "communication": _communication,
    "unexplained_idle": _unexplained,
    "incomplete_trace": _incomplete,
    "none": _none,
}


def utilization_sentence(summary: dict[str, Any]) -> str | None:
    """"GPU busy 99.3%: kernels 2.3%, copies only 97.0%": ``summary.gpu_utilization`` and its split by what ran
    (``summary.utilization_by_kind``; a part that rounds to 0.0% is left out, kernels always shown). None
    without GPU activity."""
    busy = summary.get("gpu_utilization")
    if busy is None:
        return None
    text = f"GPU busy {fmt_pct(busy)}"
    split = summary.get("utilization_by_kind")
    if isinstance(split, dict):
        parts = [f"kernels {fmt_pct(split.get('kernels'))}"]
        parts += [f"{label} {fmt_pct(split.get(key))}" for key, label in
                  (("copies_only", "copies only"), ("memsets_only", "memsets only"))
                  if fmt_pct(split.get(key)) not in ("0.0%", "-")]
        text += ": " + ", ".join(parts)
    return text


def sentence(cause: dict[str, Any], diagnosis: dict[str, Any] | None = None) -> str:
    """The finding as one sentence with its numbers (plain text; escape it for markdown)."""
    build = SENTENCES.get(str(cause.get("cause")))
    if build is None or not isinstance(cause.get("evidence"), dict):
        return f"{cause.get('cause')}: {fmt_ns(cause.get('lost_ns'))} lost."
    try:
        return build(cause, diagnosis or {})
    except (KeyError, TypeError, ValueError):  # a document written by another version: fall back, never crash
        return f"{cause.get('cause')}: {fmt_ns(cause.get('lost_ns'))} lost."
