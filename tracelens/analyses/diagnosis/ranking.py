"""The ranking key of the causes: lost time and the what-if replay's predicted gain in one currency.

Every cause has ``lost_ns`` (the GPU idle or busy time attributed to it: its own share of the span, an upper
bound where it must be). Where the ``whatif`` section replayed the cause's remedy, the cause also gets the
replay's predicted gain, in the same currency (ns of the diagnosis span)::

    gain share         step_gain_share where the replay measured steps (the steady state), else gain_share
    predicted_gain_ns  round(gain share × span_ns)
    rank_ns            min(lost_ns, max(predicted_gain_ns, 0)) where the cause is ranked by its gain,
                       else lost_ns
    rank_share         rank_ns / span_ns

The minimum: the replay knows what a remedy cannot recover (copies still move their bytes, empty SMs are not all
recoverable, a host that sets the pace hides faster kernels), the attribution knows which time is the cause's
own (a remedy's graph change can also remove time the attribution gives to another cause: the launch remedy
drops every host lag, gaps with nothing recorded and start-up included). A cause is credited what both allow.

One rule says which figure ranks a cause (``rank_basis``):

- ``predicted``: the replay applied the fix the evidence calls for. The prediction is trusted, whatever it is:
  a remedy the replay applied that gains nothing (or costs time) ranks at 0, below every cause that may still
  gain (a positive prediction, or an estimate), and its sentence says the replay predicts no gain.
- ``estimated``: no prediction applies, so the cause keeps its lost-time estimate (``rank_ns = lost_ns``) and is
  marked as not predicted, with ``gain_reason`` saying why: there is no replay (``no_replay``:
  ``whatif.reason``), the window is shorter than :data:`MIN_REPLAY_SPAN_NS` (``short_window``), the replay has
  no model of the cause (``not_modeled``) or its model finds nothing of the cause to change in this trace
  (``no_change``: the lost time is of a kind the modeled fix does not touch, e.g. copies that are pinned and
  asynchronous already), the evidence calls for a fix the model does not represent (``other_remedy``:
  ``Cause.unreplayed``), or the cause is one-time work (``one_time``: ``Cause.ranked_by_gain``; start-up's fix
  takes it out of the window, exactly its lost time; its replay prediction over the span is still reported), or
  none of those and the replay could tie at most half of the GPU ops to a launch call (``unlaunched``: it keeps an
  op without one at its recorded start, so a fix that moves host work moves none of them, and its gain there is
  no evidence).
"""

from __future__ import annotations

from typing import Any

from .cause import Cause, Finding

# The replay's fixed costs are measured on real GPUs (a CUDA graph launch 40 µs, a wait that finds nothing 2 µs
# by default): a window shorter than 1 ms (25 graph launches) is too short for them. Every recorded trace here is
# longer (the shortest: 4.5 ms, BERT-small inference); the hand-built cases of a few hundred ns are not.
MIN_REPLAY_SPAN_NS = 1_000_000

# gain_reason values, in the order they are checked
NO_REPLAY = "no_replay"
SHORT_WINDOW = "short_window"
NOT_MODELED = "not_modeled"
NO_CHANGE = "no_change"
OTHER_REMEDY = "other_remedy"
ONE_TIME = "one_time"
UNLAUNCHED = "unlaunched"
GAIN_REASONS = (NO_REPLAY, SHORT_WINDOW, NOT_MODELED, NO_CHANGE, OTHER_REMEDY, ONE_TIME, UNLAUNCHED)
# rank_basis values: the key is the replay's prediction (capped by lost time), or the lost-time estimate
PREDICTED = "predicted"
ESTIMATED = "estimated"


def _prediction(remedy: dict[str, Any], steps: int) -> tuple[float | None, str | None, float | None]:
    """(gain share, basis, predicted step) of a replayed remedy: the step where the replay measured steps and
    the step prediction is a positive time, else the span."""
    step = remedy.get("predicted_step_ns")
    if steps > 0 and step is not None and step > 0 and remedy.get("step_gain_share") is not None:
        return float(remedy["step_gain_share"]), "step", float(step)
    if remedy.get("gain_share") is not None:
        return float(remedy["gain_share"]), "span", None
    return None, None, None


def _reason(
    cause: Cause | None,
    finding: Finding,
    whatif: dict[str, Any] | None,
    span: int,
    remedy: dict[str, Any] | None,
) -> str | None:
    if not isinstance(whatif, dict) or whatif.get("replay_error") is None:
        return NO_REPLAY
    if span < MIN_REPLAY_SPAN_NS:
        return SHORT_WINDOW
    if remedy is None:
        return (
            NOT_MODELED
            if finding["cause"] in (whatif.get("not_modeled") or ()) or cause is None
            else NO_CHANGE
        )
    if cause is not None and cause.unreplayed and cause.remedy(finding["evidence"]) in cause.unreplayed:
        return OTHER_REMEDY
    if cause is not None and not cause.ranked_by_gain:
        return ONE_TIME
    if _mostly_unlaunched(whatif["replay_error"]):
        return UNLAUNCHED
    return None


def _mostly_unlaunched(replay_error: dict[str, Any]) -> bool:
    """Whether at least half of the replayed GPU ops have no launch call (kernels without a correlation id: some
    ROCm and GPU-only exports, windows cut from a longer capture). The replay pins such an op at its recorded
    start, so a fix that moves host work moves none of them: its predicted gain there is no evidence of anything
    (a host-bound trace whose kernels lost their ids had its 77% launch overhead "saving 1%", and a 0.1% copy
    named the primary cause)."""
    ops = replay_error.get("gpu_ops") or 0
    unlaunched = replay_error.get("unlaunched_gpu_ops") or 0
    return ops > 0 and 2 * unlaunched >= ops


def with_gain(finding: Finding, cause: Cause | None, whatif: dict[str, Any] | None, span: int) -> Finding:
    """The finding with its predicted gain and ranking key (keys in docs/json.md, "diagnosis")."""
    remedies = {r["cause"]: r for r in ((whatif or {}).get("remedies") or []) if isinstance(r, dict)}
    remedy = remedies.get(finding["cause"])
    reason = _reason(cause, finding, whatif, span, remedy)
    share = basis = step = None
    if remedy is not None and reason not in (NO_REPLAY, SHORT_WINDOW, UNLAUNCHED):
        # one-time work is outside the steady step by construction: its prediction is over the span
        steps = int(((whatif or {}).get("replay_error") or {}).get("steps") or 0) if reason != ONE_TIME else 0
        share, basis, step = _prediction(remedy, steps)
        if share is None:
            reason = reason or NO_CHANGE
    gain = int(round(share * span)) if share is not None else None
    predicted = reason is None and gain is not None
    rank = min(finding["lost_ns"], max(gain, 0)) if predicted and gain is not None else finding["lost_ns"]
    return {
        **finding,
        "predicted_gain_ns": gain,
        "predicted_step_ns": step,
        "gain_basis": basis,
        "gain_reason": reason,
        "rank_basis": PREDICTED if predicted else ESTIMATED,
        "rank_ns": rank,
        "rank_share": rank / span if span > 0 else 0.0,
    }


# What a primary-only verdict (`none`, `incomplete_trace`) carries in these keys: no prediction, no rank.
NO_GAIN: dict[str, Any] = {
    "predicted_gain_ns": None,
    "predicted_step_ns": None,
    "gain_basis": None,
    "gain_reason": None,
    "rank_basis": None,
    "rank_ns": 0,
    "rank_share": 0.0,
}


def critical_path(whatif: dict[str, Any] | None) -> dict[str, Any] | None:
    """``{on_host, host_share}`` of the replay's critical path (None without one)."""
    path = (whatif or {}).get("critical_path")
    if not isinstance(path, dict):
        return None
    host = (path.get("shares") or {}).get("host")
    return {"on_host": bool(path.get("on_host")), "host_share": float(host) if host is not None else None}
