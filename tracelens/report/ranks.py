"""The Ranks section of a multi-rank run document (``tracelens.run``): markdown's ``## Ranks``, and the
verdicts and per-rank cells the terminal draws.

A run document carries the keys in :data:`RUN_KEYS` beside the representative rank's sections; this module
draws them as one section. It reads the document only, never the run machinery.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..document import RankRow, RunDocument
from .budget import LEVELS, limits
from .escape import html_text, link, md
from .units import fmt_ns, fmt_pct, plural

# Run-document keys drawn by :func:`markdown_section` (the markdown report skips them otherwise).
RUN_KEYS = ("ranks", "stragglers", "collectives", "imbalance", "representative_rank")
_VERDICTS = {
    "straggler": "a straggler: the others wait for one rank in the collectives",
    "transfer_bound": "transfer-bound: every rank's collectives are slow (link bandwidth or message "
    "sizes), not one late rank",
    "mixed": "partly waiting for late ranks, partly transfer",
}
MARKDOWN_RANK_ROWS = 16  # shown before folding
MARKDOWN_MAX_RANK_ROWS = LEVELS[0].rank_rows  # the JSON output has every rank (budget.limits() in effect)


def _top_cause(idle: dict[str, int] | None) -> str:
    if not idle:
        return "-"
    cause, ns = max(idle.items(), key=lambda kv: kv[1])
    return f"{cause} ({fmt_ns(ns)})" if ns > 0 else "-"


RANK_COLUMNS = [
    "rank",
    "trace",
    "GPUs",
    "utilization",
    "busy",
    "steps",
    "mean step",
    "step lateness",
    "NCCL transfer",
    "NCCL wait",
    "largest idle cause",
]


def summary_items(doc: RunDocument | dict[str, Any], escape: Callable[[Any], str]) -> list[tuple[str, str]]:
    """The run's verdicts as (label, sentence) pairs: straggler, imbalance, NCCL collectives; traced names go
    through ``escape`` (markdown's :func:`md`, or the terminal's cleaner)."""
    imbalance = doc.get("imbalance") or {}
    steps = (doc.get("stragglers") or {}).get("steps") or {}
    coll_strag = (doc.get("stragglers") or {}).get("collectives") or {}
    straggler = steps.get("straggler") or coll_strag.get("straggler")
    basis = "step starts" if steps.get("straggler") else "NCCL kernel starts"
    items = []
    if straggler:
        where = f"rank {straggler['rank']}" + (
            f" GPU {straggler['device']}" if straggler.get("device") is not None else ""
        )
        verdict = "" if straggler.get("significant") else " (below the 5% significance threshold)"
        items.append(
            (
                "Straggler",
                f"{escape(where)}: {basis} {fmt_ns(straggler['delay_ns'])} late on average "
                f"(at most {fmt_ns(straggler['max_lateness_ns'])}) against the median of the other "
                f"ranks{verdict}",
            )
        )
    else:
        items.append(("Straggler", "none found (no step or NCCL collective shared by two ranks)"))
    if imbalance and imbalance.get("lost_ns") is None and "lost_ns" in imbalance:
        items.append(("Imbalance", f"not measured: {escape(imbalance.get('reason'))}"))
    elif imbalance:
        items.append(
            (
                "Imbalance",
                f"{escape(imbalance.get('verdict'))}: {fmt_ns(imbalance.get('lost_ns'))} lost per "
                f"GPU ({fmt_pct(imbalance.get('lost_fraction'))} of GPU time), from "
                f"{escape(str(imbalance.get('basis', '')).replace('_', ' '))}",
            )
        )
    coll = doc.get("collectives") or {}
    if coll.get("collective_ns"):
        items.append(
            (
                "NCCL collectives",
                f"{coll.get('matched', 0):,} matched across "
                f"{plural(coll.get('participants') or 0, 'GPU')}; {fmt_ns(coll.get('transfer_ns'))} "
                f"transfer, {fmt_ns(coll.get('wait_ns'))} waiting for slower ranks"
                + (
                    f" ({fmt_pct(coll['wait_share'])} of it): {_VERDICTS[coll['verdict']]}"
                    if coll.get("verdict") in _VERDICTS
                    else ""
                ),
            )
        )
    return items


def rank_cells(r: RankRow, escape: Callable[[Any], str]) -> list[str]:
    """One rank's row under :data:`RANK_COLUMNS`."""
    return [
        str(r["rank"]),
        escape(Path(str(r.get("path") or "")).name),
        str(r.get("gpus", 0)),
        fmt_pct(r.get("utilization")),
        fmt_ns(r.get("busy_ns")),
        str(r.get("step_count") or 0),
        fmt_ns(r.get("mean_step_ns")),
        fmt_ns(r.get("mean_step_lateness_ns")),
        fmt_ns(r.get("collective_transfer_ns")),
        fmt_ns(r.get("collective_wait_ns")),
        escape(_top_cause(r.get("idle_by_cause"))),
    ]


def markdown_section(doc: RunDocument | dict[str, Any], plot_name: str | None = None) -> list[str]:
    """The ``## Ranks`` section of the markdown report for a run document (empty for one trace);
    ``plot_name``: the per-rank PNG written beside the report, linked when given."""
    ranks = doc.get("ranks")
    if not isinstance(ranks, list) or not ranks:
        return []
    lines = ["", "## Ranks", ""]
    lines.extend(f"- **{label}:** {text}" for label, text in summary_items(doc, md))
    if plot_name:
        lines.extend(["", link("per-rank utilization and collective time", plot_name, image=True)])
    align = ["---:", "---", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---"]

    def row(r: RankRow) -> str:
        return "| " + " | ".join(rank_cells(r, md)) + " |"

    head = ["| " + " | ".join(RANK_COLUMNS) + " |", "| " + " | ".join(align) + " |"]
    lines.extend(["", *head, *(row(r) for r in ranks[:MARKDOWN_RANK_ROWS])])
    most = max(limits().rank_rows, MARKDOWN_RANK_ROWS)
    rest = ranks[MARKDOWN_RANK_ROWS:most]
    if rest:
        lines.extend(
            [
                "",
                f"<details><summary>{html_text(f'{len(ranks) - MARKDOWN_RANK_ROWS} more ranks')}</summary>",
                "",
                *head,
                *(row(r) for r in rest),
            ]
        )
        if len(ranks) > most:
            lines.extend(["", f"{len(ranks) - most:,} more ranks in the JSON output (`--format json`)."])
        lines.extend(["", "</details>"])
    return lines
