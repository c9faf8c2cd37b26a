"""GitHub-flavoured markdown report for pull-request review (``tracelens report``, ``analyze -f markdown``).

Layout: headline (utilization per device, step time, primary cause), findings table, step-time breakdown,
gap histogram, top kernels, memcpy, occupancy, ranges, host, then any other section of the document in a
generic form. A section is rendered only when its key is in the document. Long tables are folded in
``<details>``. This module draws the headline and the findings and puts the sections in the registry's order;
the sections are drawn by :mod:`tracelens.report.markdown_sections`, with the tables, folds and generic form
of :mod:`tracelens.report.markdown_blocks` and the values both renderers read from
:mod:`tracelens.report.sections`.

Safety: every string that comes from the traced program goes through :func:`escape.md` (cells, list
items) or :func:`escape.html_text` (inside HTML tags), so a name can neither add a table column, close a
``<details>`` block nor inject a tag. Names longer than :data:`escape.DEFAULT_MAX` characters are
shortened to head…tail in tables and marked ``[n]``; a folded "Full names" list under the table gives
each in full (escaped).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from ..analyses import SECTIONS as SECTION_KEYS
from ..analyses import report_sections
from ..document import summary_of
from ..document.types import Document, RunDocument, Source
from .budget import LEVELS, Block, fit
from .charts import lost_time_chart, utilization_chart
from .escape import code, link, md
from .figure_files import Figure as Figure
from .figure_files import figures as figures
from .figure_files import plot_path_for as plot_path_for
from .figure_files import ranks_plot_path_for as ranks_plot_path_for
from .findings import finding_severity
from .markdown_blocks import Lines, free_text, table
from .markdown_sections import DRAW as DRAW
from .markdown_sections import gpu_label, section_generic
from .ranks import RUN_KEYS
from .ranks import markdown_section as ranks_section
from .sections import busy_sentence, caveats, primary_kind, primary_of, producer, sentence
from .units import fmt_ns, fmt_pct, plural

# Rows shown before folding into <details>, and rows of any one table (the JSON output has them all), at the
# generous level; the renderers read the level in effect from budget.limits() (report/budget.py).
TOP_ROWS = LEVELS[0].top_rows
MAX_ROWS = LEVELS[0].max_rows

# Severity of a finding from its share of the span (docs/json.md, "Markdown and terminal output").
SEVERITY_LABELS = {"high": "🔴 high", "medium": "🟠 medium", "low": "🟡 low"}  # diagnosis.severity


# ---------------------------------------------------------------------------------------------- sections


def _headline(doc: Document) -> Lines:
    src: Source | dict[str, Any] = doc.get("source") or {}
    name = Path(str(src.get("path") or "trace")).name or "trace"
    lines = [f"# tracelens report: {md(name)}", ""]
    facts = [
        src.get("format"),
        producer(src),
        f"framework {src['framework']}" if src.get("framework") else None,
        plural(src["event_count"], "event") if isinstance(src.get("event_count"), int) else None,
    ]
    if src.get("rank") is not None:
        facts.append(f"rank {src['rank']} of {src.get('world_size') or '?'}")
    lines.append(" · ".join(md(f) for f in facts if f))
    for warning in src.get("warnings") or []:
        lines.extend(["", f"> ⚠️ {md(warning)}"])
    lines.append("")
    devices = doc.get("devices")
    if isinstance(devices, list) and devices:
        busy = busy_sentence(doc)
        per_device = ", ".join(f"{gpu_label(d)} {fmt_pct(d.get('utilization'))}" for d in devices[:16])
        if len(devices) > 16:
            per_device += f", … {len(devices) - 16} more"
        head, _, split = busy.partition(": ")  # "GPU busy 99.3%" in bold, then its split by kind
        lines.append(
            f"- **{md(head)}:** {md(split)}".rstrip()
            + (
                f" (over {plural(len(devices), 'device')}, GPU-time weighted: {per_device})"
                if len(devices) > 1
                else ""
            )
        )
    elif "devices" in doc:
        lines.append("- **GPU utilization:** no GPU activity in this trace (no kernels, copies or memsets)")
    stats = summary_of(doc)["steps"]
    if stats:
        lines.append(
            f"- **Step time:** mean {fmt_ns(stats['mean_ns'])} over {plural(stats['count'], 'step')} "
            f"(min {fmt_ns(stats['min_ns'])}, max {fmt_ns(stats['max_ns'])})"
        )
    elif "steps" in doc:
        lines.append("- **Step time:** no step markers in this trace")
    primary = primary_of(doc)
    rank = cast("Mapping[str, Any]", doc).get("representative_rank")  # a run document's key
    if primary and rank is not None:
        # a run: the figures above cover every rank, the diagnosis below is one rank's (docs/multirank.md)
        lines.append(
            f"- **Diagnosed rank:** rank {md(rank)} (the rank waiting longest in "
            "collectives, else the least utilized): the primary cause, findings and host side below are its own"
        )
    if primary:
        cause = primary.get("cause")
        finding = md(sentence(primary, doc.get("diagnosis")))
        kind = primary_kind(primary)
        if kind == "healthy":
            lines.append(f"- **Primary cause:** {md(cause)}. {finding}")
        elif kind == "cannot_answer":
            lines.append(f"- **Primary cause:** {code(cause)}: this trace cannot answer. {finding}")
            if primary.get("fix"):
                lines.append(f"- **How to record it:** {free_text(primary.get('fix'))}")
        else:
            lines.append(
                f"- **Primary cause:** {code(cause)}: {fmt_ns(primary.get('lost_ns'))} lost "
                f"({fmt_pct(primary.get('share'))} of the span). {finding}"
            )
            if primary.get("fix"):
                lines.append(f"- **Fix:** {free_text(primary.get('fix'))}")
        lines.extend(f"- **Trace caveat:** {md(c)}" for c in caveats(doc.get("diagnosis")))
    return lines


def severity(share: float | None) -> str:
    """Severity label of a finding from its share of the span (the policy: ``diagnosis.severity``)."""
    return SEVERITY_LABELS[finding_severity(share)]


def _findings(doc: Document) -> Lines:
    diagnosis = doc.get("diagnosis")
    if not isinstance(diagnosis, dict):
        return []
    causes = [c for c in diagnosis.get("causes") or [] if isinstance(c, dict)]
    lines = ["", "## Findings", ""]
    if not causes:
        return lines + ["No cause of lost GPU time found."]
    rows = [
        [
            str(i),
            severity(c.get("rank_share", c.get("share"))),
            code(c.get("cause"), in_table=True),
            fmt_ns(c.get("lost_ns")),
            fmt_pct(c.get("share")),
            md(sentence(c, diagnosis)),
            free_text(c.get("fix")) if c.get("fix") else "-",
        ]
        for i, c in enumerate(causes, start=1)
    ]
    lines.extend(
        table(
            ["#", "severity", "cause", "lost time", "share of span", "finding", "fix"],
            rows,
            ["---:", "---", "---", "---:", "---:", "---", "---"],
        )
    )
    lines.extend(
        [
            "",
            "Lost time is the GPU time each cause would give back if removed (an upper bound where it "
            "cannot be measured exactly). A cause whose fix the replay applied is ranked by its predicted "
            "gain (at most its lost time; nothing gained ranks last); the others keep their lost-time "
            "estimate, and their finding says why it is not predicted. The structured evidence is in the "
            "JSON output.",
        ]
    )
    return lines


def _charts(doc: Document) -> Lines:
    lines: Lines = []
    for chart in (lost_time_chart(doc), utilization_chart(doc)):
        if chart:
            lines.extend(["", *chart])
    return lines


def _plot_link(plot_name: str | None) -> Lines:
    if not plot_name:
        return []
    return ["", link("GPU utilization over time", plot_name, image=True)]


NOT_SECTIONS = {"schema_version", "source", "summary", *SECTION_KEYS, *RUN_KEYS}


def render_markdown(
    doc: Mapping[str, Any],
    plot_name: str | None = None,
    charts: bool = True,
    ranks_plot_name: str | None = None,
) -> str:
    """The report, kept under budget.MAX_CHARS (GitHub's comment limit) by budget.fit."""
    document = cast(RunDocument, doc)  # the shapes of document/types.py (a run document's keys included)
    return fit(lambda: _blocks(document, plot_name, charts, ranks_plot_name), keep=2)


def _blocks(
    doc: RunDocument, plot_name: str | None, charts: bool, ranks_plot_name: str | None
) -> list[Block]:
    """The report as blocks: the headline, the findings, then one per section (budget.fit may drop those)."""
    blocks: list[Block] = [("Headline", _headline(doc)), ("Findings", _findings(doc))]
    if charts:
        blocks.append(("Charts", _charts(doc)))
    blocks.append(("Plot", _plot_link(plot_name)))
    blocks.append(("Ranks", ranks_section(doc, ranks_plot_name)))
    no_gpu = doc.get("devices") == []
    shown = report_sections()
    for section in shown:
        if not (no_gpu and section.gpu_only):
            blocks.append((section.title, DRAW.get(section.key, section_generic(section.key))(doc)))
    if no_gpu:
        skipped = [s.key for s in shown if s.gpu_only and s.key in doc]
        if skipped:
            blocks.append(
                ("Note", ["", f"GPU sections omitted ({', '.join(skipped)}): no GPU activity in this trace."])
            )
    for key in doc:
        if key not in NOT_SECTIONS:
            blocks.append((str(key), section_generic(key, key)(doc)))
    blocks.append(
        (
            "Footer",
            ["", "---", f"Generated by tracelens (analysis schema {md(doc.get('schema_version', '?'))})."],
        )
    )
    return [b for b in blocks if b[1]]


def render(doc: Mapping[str, Any], *, plots: bool = True, figures: Sequence[Figure] = (), **_: Any) -> str:
    """The markdown report (text only: it writes no file). ``plots``: inline mermaid charts (GitHub draws
    them, nothing to upload) and links to ``figures`` (PNG files the caller wrote beside the report)."""
    names = {f.role: f.path.name for f in figures} if plots else {}
    return render_markdown(doc, names.get("utilization"), charts=plots, ranks_plot_name=names.get("ranks"))
