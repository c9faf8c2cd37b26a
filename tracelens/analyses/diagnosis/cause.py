"""What a cause of lost GPU time is (:class:`Cause`) and what its builder reads (:class:`Context`).

One module of this package per cause exports one ``CAUSE``; ``diagnosis.CAUSES`` lists them in tie-break
order. A cause is: its name, its per-device lost time, its evidence (which names the remedy it calls for),
its fixes by remedy and framework, and the sentence the renderers print. Its thresholds are named constants
in its module, with the reason beside each.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal, cast, overload

import numpy as np

from ...replay.engine import native_solver
from ...trace import Trace
from ..columns import DeviceBusy, busy_gpu_equivalents, event_columns
from ..derived import memo
from ..names import CPU, HOST_CATEGORY_PRIORITY, INPUT, LAUNCH, STARTUP
from ..startup import host_categories, one_time_work

if TYPE_CHECKING:  # types only: the document's TypedDicts are not imported by analyze (kimp17)
    from ...document.types import AttributionDevice, Launch, Memcpy, Sync

TOP_NAMES = 5  # evidence lists of top offenders: enough to act on, short enough to read
ONLY = "any"  # the remedy key of a cause with a single fix table
DEFAULT = "default"  # the framework key every fix table has

Evidence = dict[str, Any]
Finding = dict[str, Any]  # {cause, lost_ns, share, evidence, fix}
FixTable = Mapping[str, str]  # framework -> text (always a DEFAULT entry)
Sentence = Callable[[Finding, dict[str, Any]], str]  # (finding, the whole diagnosis) -> plain text


def by_framework(framework: str, texts: FixTable) -> str:
    """The fix text for the framework (``pytorch``, ``tensorflow``, ``jax``), else the generic one."""
    return texts.get(framework, texts[DEFAULT])


@dataclass(frozen=True)
class Cause:
    """One cause of lost GPU time.

    ``evidence(ctx)``: the structured evidence (None: the cause does not apply to this trace); it holds the
    chosen remedy under ``remedy_key`` when ``fixes`` has more than one. ``device_lost(ctx, device)``: the
    device's own lost time to the cause (its device-mean is ``lost_ns``), None for a cause with no per-device
    term; ``lost(ctx, evidence)`` replaces that device-mean where the cause is not one (imbalance).
    ``fixes``: remedy -> framework -> text; ``adjust_fix(evidence, text, framework)`` adds what the evidence warrants
    (a caution, a preface). ``sentence``: the finding in one sentence with its numbers (plain text).
    ``unreplayed``: the remedies of ``fixes`` that the what-if replay's model of this cause does not represent
    (its predicted gain is then not the gain of the fix given). ``ranked_by_gain``: False where the cause ranks
    by its lost time even with a replay (diagnosis/ranking.py says when and why).
    """

    name: str
    evidence: Callable[[Context], Evidence | None]
    fixes: Mapping[str, FixTable]
    sentence: Sentence
    device_lost: Callable[[Context, int], int] | None = None
    lost: Callable[[Context, Evidence], float] | None = None
    remedy_key: str = "remedy"
    adjust_fix: Callable[[Evidence, str, str], str] | None = None
    unreplayed: frozenset[str] = frozenset()
    ranked_by_gain: bool = True

    def remedy(self, evidence: Evidence) -> str:
        return ONLY if set(self.fixes) == {ONLY} else str(evidence[self.remedy_key])

    def fix(self, evidence: Evidence, framework: str) -> str:
        text = by_framework(framework, self.fixes[self.remedy(evidence)])
        return self.adjust_fix(evidence, text, framework) if self.adjust_fix else text

    def finding(self, ctx: Context) -> Finding | None:
        """``{cause, lost_ns, share, evidence, fix}`` on a trace with GPU activity (None: does not apply)."""
        evidence = self.evidence(ctx)
        if evidence is None:
            return None
        lost = self.lost(ctx, evidence) if self.lost else ctx.lost(self.name)
        return finding(self.name, lost, ctx.span, evidence, self.fix(evidence, ctx.framework))


@dataclass(frozen=True)
class Verdict:
    """A primary that is not a cause (no lost time, never in ``causes``): ``incomplete_trace`` (the trace
    cannot answer) and ``none`` (nothing is worth fixing). Its fix comes with its evidence. ``answerable``: whether
    the trace answers the question (``none``); renderers head the primary by it, and the primary of a trace that
    cannot answer is not ``causes[0]``."""

    name: str
    sentence: Sentence
    answerable: bool = True


def finding(name: str, lost: float, span: int, evidence: Evidence, fix: str) -> Finding:
    lost_ns = max(int(round(lost)), 0)
    return {
        "cause": name,
        "lost_ns": lost_ns,
        "share": (lost_ns / span) if span > 0 else 0.0,
        "evidence": evidence,
        "fix": fix,
    }


@dataclass
class Context:
    """What every cause builder reads: the trace, the sections computed so far, device-level totals, the
    run's cross-rank imbalance when the trace is one rank of a run, and the causes (for per-device losses)."""

    trace: Trace
    done: dict[str, Any]
    span: int
    framework: str
    busy: dict[int, DeviceBusy]
    attribution: dict[int, AttributionDevice]  # device -> its attribution entry
    causes: tuple[Cause, ...]
    imbalance: dict[str, Any] | None = field(default=None)

    @property
    def n(self) -> int:
        return len(self.busy)

    @cached_property
    def n_eff(self) -> float:
        """The GPUs with activity counted by GPU time (docs/analyses.md, "GPU-time weighting"): Σ span_ns / the
        diagnosis span (the union of their windows). 1.0 exactly for one GPU, n exactly for n GPUs over one
        window; a GPU touched for a few microseconds adds next to nothing. Per-device quantities are summed and
        divided by it, so a cause's share of the span is its share of the GPUs' time."""
        return busy_gpu_equivalents(self.busy)  # (self.span is gpu_span: the union of the same windows)

    def idle(self, category: str) -> dict[str, int]:
        """Idle time attributed to a host category, per device (keys are device ids as strings)."""
        return {str(d): int(a["by_cause"][category]) for d, a in self.attribution.items()}

    def mean(self, values: dict[str, int] | list[float]) -> float:
        """The device-mean: Σ over the devices / n_eff (GPU-time weighted; the plain mean over one window)."""
        items = list(values.values()) if isinstance(values, dict) else values
        return float(sum(items)) / self.n_eff if self.n else 0.0

    def device_losses(self, device: int) -> dict[str, int]:
        """One device's own lost time per cause (not averaged over devices): each cause's ``device_lost``,
        whose device-mean is the cause's lost_ns (:meth:`lost`). Causes without a per-device term (imbalance,
        a comparison between devices) are absent, and so are zero losses."""
        losses = {c.name: c.device_lost(self, device) for c in self.causes if c.device_lost is not None}
        return {cause: ns for cause, ns in losses.items() if ns > 0}

    @cached_property
    def losses(self) -> dict[int, dict[str, int]]:
        """Each device's own lost time per cause (:meth:`device_losses`)."""
        return {device: self.device_losses(device) for device in self.busy}

    def lost(self, cause: str) -> float:
        """A cause's lost time: the device-mean (Σ / n_eff) of the devices' own losses to it."""
        return sum(own.get(cause, 0) for own in self.losses.values()) / self.n_eff if self.n else 0.0

    def idle_total(self) -> float:
        return self.mean([a["idle_ns"] for a in self.attribution.values()])

    # The sections the causes read, as their document types (mypy checks the keys they read); any other as a
    # plain object. (A Literal key also matches ``str``: mypy's overlap warning is the intended precedence.)
    @overload
    def section(self, key: Literal["launch"]) -> Launch: ...  # type: ignore[overload-overlap]
    @overload
    def section(self, key: Literal["memcpy"]) -> Memcpy: ...  # type: ignore[overload-overlap]
    @overload
    def section(self, key: Literal["sync"]) -> Sync: ...  # type: ignore[overload-overlap]
    @overload
    def section(self, key: str) -> dict[str, Any]: ...

    def section(self, key: str) -> Launch | Memcpy | Sync | dict[str, Any]:
        """A section this one reads (``Section.needs``; ``analyze`` computes it first), as its document type. A
        section that could not be computed (null) reads as empty (its readers use ``.get``)."""
        value = self.done[key]
        return value if isinstance(value, dict) else cast(dict[str, Any], {})

    def by_device(self, key: str, list_key: str, value: str, id_key: str = "device") -> dict[int, int]:
        """``{device: entry[value]}`` over ``done[key][list_key]`` (a section's per-device list)."""
        return {d[id_key]: d.get(value, 0) for d in self.section(key).get(list_key) or []}


# Event rows read per chunk where the diagnosis picks a host category's rows: the tens of millions of rows of a
# training export's category never gathered at once.
ROW_CHUNK = 1 << 22


def category_rows(trace: Trace, category: str) -> Iterator[np.ndarray]:
    """The event rows of a host category, ascending, a chunk of the event table at a time: ``host_rows(trace).row``
    where its category is that one, from the host categories and the one-time work (a one-time row is
    ``startup``) without the host rows, which the diagnosis would compute again (analyses.RECOMPUTED)."""
    code = HOST_CATEGORY_PRIORITY.index(category)
    categories, flagged = host_categories(trace), one_time_work(trace).rows
    for lo in range(0, categories.size, ROW_CHUNK):  # a loop over chunks of rows
        mask = categories[lo : lo + ROW_CHUNK] == code
        one_time = np.zeros(
            mask.size, bool
        )  # the one-time rows in this chunk (flagged: ascending event rows)
        one_time[flagged[np.searchsorted(flagged, lo) : np.searchsorted(flagged, lo + mask.size)] - lo] = True
        if category == STARTUP:
            mask |= one_time
        else:
            mask &= ~one_time
        yield lo + np.flatnonzero(mask)


def top_host_names(trace: Trace, category: str, limit: int = TOP_NAMES) -> list[dict[str, Any]]:
    """The host names with the most summed time in a category (evidence): computed once per trace (a fresh list
    each call), so that analyze can find them ahead of the diagnosis (``diagnosis.prepare``). The categories the
    diagnosis reads (SUMMED_TOGETHER) are summed together, in one pass over the event rows."""
    cols = event_columns(trace)
    if category in SUMMED_TOGETHER and _sum_together(cols.start.size, len(cols.names)):
        found = memo(
            trace, f"top_host_names/{limit}", lambda: _top_host_names_of(trace, SUMMED_TOGETHER, limit)
        )[category]
    else:
        found = memo(
            trace,
            f"top_host_names/{category}/{limit}",
            lambda: _top_host_names(trace, category, limit),
        )
    return [dict(entry) for entry in found]


# The host categories whose top names the diagnosis reads (input_pipeline, host_launch_overhead), summed in one
# pass over a table of at most TOGETHER_ROWS rows whose slots (a category's: one per name) number at most
# TOGETHER_SLOTS (a few MiB of sums). A bigger table (an Nsight export's 41M rows, millions of NVTX names): each
# category's rows picked and summed when it is asked for (INPUT only where that finding applies).
SUMMED_TOGETHER = (INPUT, CPU, LAUNCH)
TOGETHER_ROWS = 1 << 23
TOGETHER_SLOTS = 1 << 20


def _sum_together(rows: int, names: int) -> bool:
    return rows <= TOGETHER_ROWS and (len(SUMMED_TOGETHER) + 1) * (names + 1) <= TOGETHER_SLOTS


def _top_host_names_of(
    trace: Trace, categories: tuple[str, ...], limit: int
) -> dict[str, list[dict[str, Any]]]:
    """``_top_host_names`` of each of ``categories`` (not STARTUP), from one pass over the event table a chunk at a
    time: each row's (category, name) slot and duration read where the rows stand (no category's rows picked and
    their names and times gathered, per category); the rows of other categories and the one-time rows (those are
    ``startup``) in a block of slots past the categories', dropped. Each slot's rows are added in row order, in the
    same chunks, as ``_top_host_names`` adds them: the same float sums."""
    cols = event_columns(trace)
    names = cols.names
    width = len(names) + 1  # slot 0 of a category: its rows without a name
    categories_of, flagged = host_categories(trace), one_time_work(trace).rows
    other = len(categories) * width  # the dropped block
    base = np.full(
        len(HOST_CATEGORY_PRIORITY) + 1, other, np.intp
    )  # (the last entry: category -1, no host row)
    for i, category in enumerate(categories):
        base[HOST_CATEGORY_PRIORITY.index(category)] = i * width
    count = np.zeros(other + width, np.int64)
    total = np.zeros(other + width)
    native = native_slot_sums(categories_of, base, cols.name, cols.start, cols.end, flagged, count, total)
    if not native:
        count[:] = 0
        total[:] = 0.0
    for lo in range(0, 0 if native else categories_of.size, ROW_CHUNK):  # a loop over chunks of rows
        # np.take, not an index: the int8 codes not converted to intp first (~1.5 ms less on the tile)
        slot = np.take(base, categories_of[lo : lo + ROW_CHUNK])
        slot[flagged[np.searchsorted(flagged, lo) : np.searchsorted(flagged, lo + slot.size)] - lo] = other
        slot += cols.name[lo : lo + ROW_CHUNK]
        slot += 1
        duration = cols.end[lo : lo + ROW_CHUNK] - cols.start[lo : lo + ROW_CHUNK]
        count += np.bincount(slot, minlength=count.size)
        total += np.bincount(slot, weights=duration, minlength=total.size)
        del slot, duration
    return {
        category: top_of(
            names, count[i * width + 1 : (i + 1) * width], total[i * width + 1 : (i + 1) * width], limit
        )
        for i, category in enumerate(categories)
    }


def native_slot_sums(
    category: np.ndarray,
    base: np.ndarray,
    name: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    flagged: np.ndarray,
    count: np.ndarray,
    total: np.ndarray,
) -> bool:
    """``_top_host_names_of``'s chunk loop in one compiled pass per chunk (replay/_replay_solve.c slot_sums: no
    gathers, durations or bincounts; ~25 ms less on the 406 MB tile): counts and sums added into ``count`` and
    ``total``, each chunk's sums (from 0, in row order, as np.bincount's) then added to ``total`` as the loop adds
    them. False (``count`` and ``total`` then not to be used) without the extension, where the columns' types are
    not those it reads, or where it finds a value out of range."""
    solver = cast(Any, native_solver())
    arrays = (category, base, name, start, end, flagged)
    types = (np.int8, np.int64, np.int32, np.int64, np.int64, np.int64)
    if solver is None or any(
        a.dtype != t or not a.flags.c_contiguous for a, t in zip(arrays, types, strict=True)
    ):
        return False
    one_chunk = category.size <= ROW_CHUNK
    chunk_total = total if one_chunk else np.empty_like(total)
    for lo in range(0, category.size, ROW_CHUNK):
        hi = lo + ROW_CHUNK
        if not one_chunk:
            chunk_total[:] = 0.0
        if (
            solver.slot_sums(
                category[lo:hi], base, name[lo:hi], start[lo:hi], end[lo:hi], flagged, count, chunk_total, lo
            )
            < 0
        ):
            return False
        if not one_chunk:
            total += chunk_total
    return True


def _top_host_names(trace: Trace, category: str, limit: int) -> list[dict[str, Any]]:
    cols = event_columns(trace)
    names = cols.names
    # Counted by name code (no sort of the rows), a chunk of the category's rows at a time (the sums are of
    # integers: exact in float64, in any order); the codes in use, ascending, as np.unique would give them.
    # Slot 0 takes the rows without a name, slot 1 + code each name's: no selection of the named rows.
    count = np.zeros(len(names) + 1, np.int64)
    total = np.zeros(len(names) + 1)
    for picked in category_rows(trace, category):
        # the slots as the index type bincount reads (not converted by each of its two calls); np.take, not an
        # index: faster on these rows in order
        slot = np.take(cols.name, picked).astype(np.intp)
        slot += 1
        duration = np.take(cols.end, picked)
        duration -= np.take(cols.start, picked)
        del picked
        count += np.bincount(slot, minlength=count.size)
        total += np.bincount(slot, weights=duration, minlength=total.size)
        del slot, duration
    return top_of(names, count[1:], total[1:], limit)


def top_of(names: np.ndarray, count: np.ndarray, total: np.ndarray, limit: int) -> list[dict[str, Any]]:
    """The names with the most summed time (``count``, ``total``: per name code), most first, ties by code."""
    codes = np.flatnonzero(count)
    if codes.size == 0:
        return []
    count, total = count[codes], total[codes]
    order = np.lexsort((codes, -total))[:limit]
    return [{"name": str(names[codes[i]]), "count": int(count[i]), "total_ns": int(total[i])} for i in order]


def steps_summary(done: dict[str, Any]) -> dict[str, Any]:
    steps = done.get("steps") or {}
    return {"count": steps.get("count") or 0, "summary": steps.get("summary") or {}}
