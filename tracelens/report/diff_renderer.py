"""Render a :func:`tracelens.diff.compare` result as GitHub markdown or JSON."""

from __future__ import annotations

from typing import Any

from ..errors import UsageError
from . import json_renderer
from .budget import Block, fit, limits
from .escape import md
from .markdown import FullNames
from .units import fmt_bytes, fmt_ns, fmt_pct

VERDICT_MARK = {"improved": "✅ improved", "regressed": "❌ regressed", "unchanged": "➖ unchanged within noise",
                "inconclusive": "❔ inconclusive"}
CHANGE_MARK = {"improved": "✅ improved", "regressed": "❌ regressed", "unchanged": "unchanged", "n/a": "-",
               "info": ""}


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
        return f"{100 * delta:+.1f} pts"
    sign = "+" if delta > 0 else ("-" if delta < 0 else "±")
    magnitude = fmt_value(abs(delta), unit)
    return f"{sign}{magnitude}"


def fmt_relative(row: dict[str, Any]) -> str:
    rel = row.get("relative")
    return "-" if rel is None else f"{100 * rel:+.1f}%"


def _table(header: list[str], rows: list[list[str]], align: list[str] | None = None) -> list[str]:
    align = align or ["---"] * len(header)
    out = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    out.extend("| " + " | ".join(cells) + " |" for cells in rows)
    return out


def _metric_rows(rows: list[dict[str, Any]]) -> list[list[str]]:
    return [[md(r["label"]), fmt_value(r["base"], r["unit"]), fmt_value(r["head"], r["unit"]), fmt_delta(r),
             fmt_relative(r), CHANGE_MARK.get(r["change"], r["change"])] for r in rows]


def render_markdown(result: dict[str, Any]) -> str:
    """The diff for a pull request, kept under budget.MAX_CHARS like the report."""
    return fit(lambda: _blocks(result), keep=1)


def _blocks(result: dict[str, Any]) -> list[Block]:
    base, head = result["base"], result["head"]
    lines = ["# tracelens diff", ""]
    blocks: list[Block] = [("Verdict and metrics", lines)]
    lines.append(f"**Verdict: {VERDICT_MARK.get(result['verdict'], md(result['verdict']))}** "
                 f"(noise floor {100 * result['noise_floor']:g}%: relative, or points for utilization)")
    lines.append("")
    for reason in result.get("verdict_reasons", []):
        lines.append(f"- {md(reason)}")
    lines.append("")
    side_rows = [[side, md(info.get("path") or "-"), md(info.get("format") or "-"), md(info.get("framework") or "-"),
                  md(info.get("primary_cause") or "-")] for side, info in (("base", base), ("head", head))]
    lines.extend(_table(["", "trace", "format", "framework", "primary cause"], side_rows))
    lines.extend(["", "## Metrics", ""])
    # Metrics neither trace has (no GPU, no steps) stay in the JSON but are left out here.
    present = [r for r in result["metrics"] if r["base"] is not None or r["head"] is not None]
    lines.extend(_table(["metric", "base", "head", "delta", "relative", "change"], _metric_rows(present),
                        ["---", "---:", "---:", "---:", "---:", "---"]))
    if any(r["base"] or r["head"] for r in result.get("idle_by_cause") or []):
        lines = []
        blocks.append(("GPU idle time by cause", lines))
        lines.extend(["", "## GPU idle time by cause", ""])
        lines.extend(_table(["cause", "base", "head", "delta", "relative", "change"],
                            _metric_rows(result["idle_by_cause"]), ["---", "---:", "---:", "---:", "---:", "---"]))
    kernels = result.get("kernels") or {}
    if kernels.get("available"):
        names = FullNames()
        lines = []
        blocks.append(("Kernels", lines))
        most = limits().max_rows
        lines.extend(["", "## Kernels", ""])
        lines.append(f"{kernels['added_count']} added, {kernels['removed_count']} removed, "
                     f"{kernels['slower_count']} slower and {kernels['faster_count']} faster "
                     f"(mean duration beyond the noise floor).")
        for title, key in (("Slower", "slower"), ("Faster", "faster")):
            if kernels[key]:
                lines.extend(["", f"### {title}", ""])
                lines.extend(_table(
                    ["kernel", "base avg", "head avg", "relative", "base total", "head total", "count base → head"],
                    [[names.cell(k["name"]), fmt_ns(k["base_avg_ns"]), fmt_ns(k["head_avg_ns"]),
                      f"{100 * k['avg_relative']:+.1f}%", fmt_ns(k["base_total_ns"]), fmt_ns(k["head_total_ns"]),
                      f"{k['base_count']:,} → {k['head_count']:,}"] for k in kernels[key][:most]],
                    ["---", "---:", "---:", "---:", "---:", "---:", "---:"]))
        for title, key in (("Added (only in head)", "added"), ("Removed (only in base)", "removed")):
            if kernels[key]:
                lines.extend(["", f"### {title}", ""])
                lines.extend(_table(["kernel", "count", "total", "avg"],
                                    [[names.cell(k["name"]), f"{k['count']:,}", fmt_ns(k["total_ns"]),
                                      fmt_ns(k["avg_ns"])] for k in kernels[key][:most]],
                                    ["---", "---:", "---:", "---:"]))
        lines.extend(names.block())
    return blocks


def render_diff(result: dict[str, Any], fmt: str) -> str:
    """The diff as ``"markdown"`` (for a pull request) or ``"json"`` (keys in docs/json.md)."""
    if fmt == "json":
        return json_renderer.render(result)
    if fmt == "markdown":
        return render_markdown(result)
    raise UsageError(f"unknown diff format {fmt!r} (choose markdown or json)")
