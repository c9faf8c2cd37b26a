"""Render a :func:`tracelens.diff.compare` result for the terminal (rich), as GitHub markdown or as JSON."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import UsageError
from . import json_renderer
from .budget import Block, fit, limits
from .escape import md
from .markdown_blocks import FullNames
from .terminal_layout import WIDTH as TERMINAL_WIDTH
from .terminal_layout import draw_table, draw_text, finish, new_console
from .units import fmt_bytes, fmt_ns, fmt_pct, signed

VERDICT_MARK = {
    "improved": "✅ improved",
    "regressed": "❌ regressed",
    "unchanged": "➖ unchanged within noise",
    "inconclusive": "❔ inconclusive",
}
CHANGE_MARK = {
    "improved": "✅ improved",
    "regressed": "❌ regressed",
    "unchanged": "unchanged",
    "n/a": "-",
    "info": "",
}


def fmt_value(value: float | int | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "fraction":
        return fmt_pct(value)
    if unit == "ns":
        return fmt_ns(value)
    if unit == "bytes":
        return fmt_bytes(value)
    if unit == "per_s":
        return f"{value:,.0f}/s"
    if unit == "ratio":
        return f"{value:.3g}"
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.2f}"
    return f"{int(value):,}"


def fmt_delta(row: dict[str, Any]) -> str:
    delta = row.get("delta")
    if delta is None:
        return "-"
    unit = row["unit"]
    if unit == "fraction":
        return f"{signed(100 * delta)} pts"
    sign = "+" if delta > 0 else ("-" if delta < 0 else "±")
    magnitude = fmt_value(abs(delta), unit)
    return f"{sign}{magnitude}"


def fmt_relative(row: dict[str, Any]) -> str:
    rel = row.get("relative")
    return "-" if rel is None else f"{signed(100 * rel)}%"


def _table(header: list[str], rows: list[list[str]], align: list[str] | None = None) -> list[str]:
    align = align or ["---"] * len(header)
    out = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    out.extend("| " + " | ".join(cells) + " |" for cells in rows)
    return out


def _metric_rows(
    rows: list[dict[str, Any]],
    escape: Callable[[Any], str] = md,
    marks: dict[str, str] = CHANGE_MARK,
    per_step_figure: bool = True,
) -> list[list[str]]:
    return [
        [
            escape(r["label"]),
            fmt_value(r["base"], r["unit"]),
            fmt_value(r["head"], r["unit"]),
            fmt_delta(r),
            fmt_relative(r),
            _change_cell(r, marks, per_step_figure),
        ]
        for r in rows
    ]


def _change_cell(row: dict[str, Any], marks: dict[str, str], figure: bool = True) -> str:
    """The change mark; where a capture total was judged per step (the traces' step counts differ) "per step" and
    the per-step change, or, when not ``figure`` (the terminal: a wider column would push the table past 80
    columns), a "*" that the note under the table explains."""
    mark = marks.get(row["change"], row["change"])
    per_step = row.get("per_step_relative")
    if per_step is None:
        return mark
    return f"{mark} per step ({signed(100 * per_step)}%)" if figure else f"{mark}*"


PER_STEP_NOTE = "* judged per step (the total / the trace's step count): the traces recorded {} and {} steps"


def _step_counts(result: dict[str, Any]) -> tuple[Any, Any]:
    row = next((r for r in result["metrics"] if r["key"] == "step_count"), None)
    return (row["base"], row["head"]) if row else (None, None)


def _present(result: dict[str, Any]) -> list[dict[str, Any]]:
    # Metrics neither trace has (no GPU, no steps) stay in the JSON but are left out of the tables.
    return [r for r in result["metrics"] if r["base"] is not None or r["head"] is not None]


def _kernel_sentence(kernels: dict[str, Any]) -> str:
    return (
        f"{kernels['added_count']} added, {kernels['removed_count']} removed, "
        f"{kernels['slower_count']} slower and {kernels['faster_count']} faster "
        f"(mean duration beyond the noise floor)."
    )


def _changed_kernel_cells(k: dict[str, Any]) -> list[str]:
    return [
        fmt_ns(k["base_avg_ns"]),
        fmt_ns(k["head_avg_ns"]),
        f"{100 * k['avg_relative']:+.1f}%",
        fmt_ns(k["base_total_ns"]),
        fmt_ns(k["head_total_ns"]),
        f"{k['base_count']:,} → {k['head_count']:,}",
    ]


def _kernel_cells(k: dict[str, Any]) -> list[str]:
    return [f"{k['count']:,}", fmt_ns(k["total_ns"]), fmt_ns(k["avg_ns"])]


CHANGED_COLUMNS = [
    "kernel",
    "base avg",
    "head avg",
    "relative",
    "base total",
    "head total",
    "count base → head",
]
KERNEL_COLUMNS = ["kernel", "count", "total", "avg"]
CHANGED_TABLES = (("Slower", "slower"), ("Faster", "faster"))
ONE_SIDE_TABLES = (("Added (only in head)", "added"), ("Removed (only in base)", "removed"))


def render_markdown(result: dict[str, Any]) -> str:
    """The diff for a pull request, kept under budget.MAX_CHARS like the report."""
    return fit(lambda: _blocks(result), keep=1)


def _blocks(result: dict[str, Any]) -> list[Block]:
    base, head = result["base"], result["head"]
    lines = ["# tracelens diff", ""]
    blocks: list[Block] = [("Verdict and metrics", lines)]
    lines.append(
        f"**Verdict: {VERDICT_MARK.get(result['verdict'], md(result['verdict']))}** "
        f"(noise floor {100 * result['noise_floor']:g}%: relative, or points for utilization)"
    )
    lines.append("")
    for reason in result.get("verdict_reasons", []):
        lines.append(f"- {md(reason)}")
    for caveat in result.get("caveats", []):
        lines.append(f"- Caveat: {md(caveat)}")
    lines.append("")
    side_rows = [
        [
            side,
            md(info.get("path") or "-"),
            md(info.get("format") or "-"),
            md(info.get("framework") or "-"),
            md(info.get("primary_cause") or "-"),
        ]
        for side, info in (("base", base), ("head", head))
    ]
    lines.extend(_table(["", "trace", "format", "framework", "primary cause"], side_rows))
    lines.extend(["", "## Metrics", ""])
    # Metrics neither trace has (no GPU, no steps) stay in the JSON but are left out here.
    present = [r for r in result["metrics"] if r["base"] is not None or r["head"] is not None]
    lines.extend(
        _table(
            ["metric", "base", "head", "delta", "relative", "change"],
            _metric_rows(present),
            ["---", "---:", "---:", "---:", "---:", "---"],
        )
    )
    if any(r["base"] or r["head"] for r in result.get("idle_by_cause") or []):
        lines = []
        blocks.append(("GPU idle time by cause", lines))
        lines.extend(["", "## GPU idle time by cause", ""])
        lines.extend(
            _table(
                ["cause", "base", "head", "delta", "relative", "change"],
                _metric_rows(result["idle_by_cause"]),
                ["---", "---:", "---:", "---:", "---:", "---"],
            )
        )
    kernels = result.get("kernels") or {}
    if not kernels.get("available") and kernels.get("unavailable_reason"):
        blocks.append(
            ("Kernels", ["", "## Kernels", "", f"Not compared: {md(kernels['unavailable_reason'])}."])
        )
    if kernels.get("available"):
        names = FullNames()
        lines = []
        blocks.append(("Kernels", lines))
        most = limits().max_rows
        lines.extend(["", "## Kernels", ""])
        lines.append(
            f"{kernels['added_count']} added, {kernels['removed_count']} removed, "
            f"{kernels['slower_count']} slower and {kernels['faster_count']} faster "
            f"(mean duration beyond the noise floor)."
        )
        for title, key in (("Slower", "slower"), ("Faster", "faster")):
            if kernels[key]:
                lines.extend(["", f"### {title}", ""])
                lines.extend(
                    _table(
                        [
                            "kernel",
                            "base avg",
                            "head avg",
                            "relative",
                            "base total",
                            "head total",
                            "count base → head",
                        ],
                        [
                            [
                                names.cell(k["name"]),
                                fmt_ns(k["base_avg_ns"]),
                                fmt_ns(k["head_avg_ns"]),
                                f"{100 * k['avg_relative']:+.1f}%",
                                fmt_ns(k["base_total_ns"]),
                                fmt_ns(k["head_total_ns"]),
                                f"{k['base_count']:,} → {k['head_count']:,}",
                            ]
                            for k in kernels[key][:most]
                        ],
                        ["---", "---:", "---:", "---:", "---:", "---:", "---:"],
                    )
                )
        for title, key in (("Added (only in head)", "added"), ("Removed (only in base)", "removed")):
            if kernels[key]:
                lines.extend(["", f"### {title}", ""])
                lines.extend(
                    _table(
                        ["kernel", "count", "total", "avg"],
                        [
                            [
                                names.cell(k["name"]),
                                f"{k['count']:,}",
                                fmt_ns(k["total_ns"]),
                                fmt_ns(k["avg_ns"]),
                            ]
                            for k in kernels[key][:most]
                        ],
                        ["---", "---:", "---:", "---:"],
                    )
                )
        lines.extend(names.block())
    return blocks


TERMINAL_VERDICT = {
    "improved": "improved",
    "regressed": "REGRESSED",
    "unchanged": "unchanged within noise",
    "inconclusive": "inconclusive",
}
TERMINAL_CHANGE = {
    "improved": "improved",
    "regressed": "REGRESSED",
    "unchanged": "unchanged",
    "n/a": "-",
    "info": "",
}
_NUMERIC = {
    "base",
    "head",
    "delta",
    "relative",
    "base avg",
    "head avg",
    "base total",
    "head total",
    "count base → head",
    "count",
    "total",
    "avg",
}


def render_terminal(
    result: dict[str, Any], *, width: int = TERMINAL_WIDTH, full_names: bool = False, color: bool = False
) -> str:
    """The diff as terminal text at ``width`` columns: the same content as the markdown, drawn with rich."""
    console, buffer = new_console(width, color)
    text = draw_text
    text(
        console,
        f"tracelens diff: {TERMINAL_VERDICT.get(result['verdict'], result['verdict'])} (noise floor "
        f"{100 * result['noise_floor']:g}%: relative, or points for utilization)",
        style="bold",
        indent="",
    )
    for reason in result.get("verdict_reasons", []):
        text(console, f"- {reason}", indent="  ")
    for caveat in result.get("caveats", []):
        text(console, f"- caveat: {caveat}", indent="  ")
    console.print()
    sides = [
        [
            side,
            info.get("path") or "-",
            info.get("format") or "-",
            info.get("framework") or "-",
            info.get("primary_cause") or "-",
        ]
        for side, info in (("base", result["base"]), ("head", result["head"]))
    ]
    draw_table(console, "", ["", "trace", "format", "framework", "primary cause"], sides, set())
    metric_columns = ["metric", "base", "head", "delta", "relative", "change"]
    draw_table(
        console,
        "Metrics",
        metric_columns,
        _metric_rows(_present(result), str, TERMINAL_CHANGE, False),
        _NUMERIC,
    )
    per_step = any(
        r.get("per_step_relative") is not None for r in [*result["metrics"], *result["idle_by_cause"]]
    )
    if per_step:
        text(console, PER_STEP_NOTE.format(*(f"{int(n):,}" for n in _step_counts(result))), indent=" ")
    if any(r["base"] or r["head"] for r in result.get("idle_by_cause") or []):
        console.print()
        draw_table(
            console,
            "GPU idle time by cause",
            ["cause", *metric_columns[1:]],
            _metric_rows(result["idle_by_cause"], str, TERMINAL_CHANGE, False),
            _NUMERIC,
        )
    kernels = result.get("kernels") or {}
    if not kernels.get("available") and kernels.get("unavailable_reason"):
        console.print()
        text(console, f"Kernels: not compared: {kernels['unavailable_reason']}.", style="bold", indent="")
    if kernels.get("available"):
        console.print()
        text(console, f"Kernels: {_kernel_sentence(kernels)}", style="bold", indent="")
        for title, key in CHANGED_TABLES:
            if kernels[key]:
                console.print()
                draw_table(
                    console,
                    title,
                    CHANGED_COLUMNS,
                    [[k["name"], *_changed_kernel_cells(k)] for k in kernels[key]],
                    _NUMERIC,
                    name_column=0,
                    full_names=full_names,
                )
        for title, key in ONE_SIDE_TABLES:
            if kernels[key]:
                console.print()
                draw_table(
                    console,
                    title,
                    KERNEL_COLUMNS,
                    [[k["name"], *_kernel_cells(k)] for k in kernels[key]],
                    _NUMERIC,
                    name_column=0,
                    full_names=full_names,
                )
    return finish(buffer)


DIFF_FORMATS = ("terminal", "markdown", "json")


def render_diff(result: dict[str, Any], fmt: str, **options: Any) -> str:
    """The diff as ``"terminal"`` text (options: ``width``, ``full_names``), ``"markdown"`` (for a pull
    request) or ``"json"`` (keys in docs/json.md)."""
    if fmt == "json":
        return json_renderer.render(result)
    if fmt == "markdown":
        return render_markdown(result)
    if fmt == "terminal":
        return render_terminal(
            result, **{k: v for k, v in options.items() if k in ("width", "full_names", "color")}
        )
    raise UsageError(f"unknown diff format {fmt!r} (choose {', '.join(DIFF_FORMATS)})")
