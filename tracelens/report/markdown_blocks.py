"""The markdown report's building blocks: GitHub tables (folded under ``<details>`` past the level's rows), the
folded "Full names" list, the generic renderer for any JSON value, and the cell formats the section renderers
of :mod:`tracelens.report.markdown` share. Callers pass cells already escaped; what these build from a value
is escaped here (:func:`escape.md`, :func:`escape.html_text`).
"""

from __future__ import annotations

from typing import Any

from .budget import limits
from .escape import html_text, is_shortened, md, md_line_start, shorten
from .sections import num
from .units import fmt_auto, fmt_bytes, plural

GENERIC_LIST_ROWS = 50  # rows of a list-of-objects table in the generic renderer
GENERIC_COLUMNS = 10

Lines = list[str]


class FullNames:
    """Collects names shortened in a table so their full form can be listed under it."""

    def __init__(self) -> None:
        self.full: list[str] = []

    def cell(self, name: Any) -> str:
        text = "" if name is None else str(name)
        if is_shortened(text):
            self.full.append(text)
            return f"{md(shorten(text))} \\[{len(self.full)}\\]"
        return md(text)

    def block(self) -> Lines:
        if not self.full:
            return []
        lines = ["", "<details><summary>Full names</summary>", ""]
        lines.extend(f"{i}. {full_name_item(name)}" for i, name in enumerate(self.full, start=1))
        lines.extend(["", "</details>"])
        return lines


def full_name_item(name: str) -> str:
    """A name as a list item, whole unless longer than the level's limit (then head…tail and its length)."""
    most = limits().full_name_chars
    if len(name) <= most:
        return md_line_start(name)
    return f"{md_line_start(shorten(name, most))} ({len(name):,} characters; whole in the JSON output)"


def table(header: list[str], rows: list[list[str]], align: list[str] | None = None) -> Lines:
    """A GitHub table; callers pass cells already escaped."""
    align = align or ["---"] * len(header)
    out = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    out.extend("| " + " | ".join(cells) + " |" for cells in rows)
    return out


def details(summary: str, body: Lines) -> Lines:
    """Fold ``body`` under a ``<details>`` whose plain-text ``summary`` is HTML-escaped here."""
    return ["", f"<details><summary>{html_text(summary)}</summary>", "", *body, "", "</details>"]


def folded_table(
    header: list[str], rows: list[list[str]], align: list[str], what: str, total: int | None = None
) -> Lines:
    """The first TOP_ROWS rows, the rest (up to MAX_ROWS) folded; ``total`` counts rows not even passed in."""
    total = max(total or 0, len(rows))
    top, most = limits().top_rows, limits().max_rows
    lines = table(header, rows[:top], align)
    if total > top:
        body = table(header, rows[top:most], align) if most > top else []
        if total > most:
            body.extend(["", f"{total - most:,} more {what} in the JSON output (`--format json`)."])
        lines.extend(details(f"{total - top:,} more {what}", body))
    return lines


def counted(value: Any, noun: str, plural_form: str | None = None) -> str:
    """A count and its noun in agreement ("1 gap", "3 gaps"), "- gaps" for a missing count."""
    if isinstance(value, int) and not isinstance(value, bool):
        return plural(value, noun, plural_form)
    return f"{num(value)} {plural_form or noun + 's'}"


# ---------------------------------------------------------------------------------------------- generic


def is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def generic_cell(key: str, value: Any) -> str:
    if isinstance(value, str):
        return md(shorten(value))
    if is_scalar(value):
        return md(fmt_auto(key, value))
    if isinstance(value, list) and all(is_scalar(v) for v in value):
        return md(shorten(", ".join(fmt_auto(key, v) for v in value), 80))
    return f"({len(value)} entries)" if isinstance(value, (list, dict)) else md(shorten(str(value)))


def generic(value: Any, depth: int = 0) -> Lines:
    """Render any JSON value: scalars of a dict as a key/value table, lists of objects as tables."""
    if isinstance(value, dict):
        scalars = [
            (k, v)
            for k, v in value.items()
            if is_scalar(v) or (isinstance(v, list) and all(map(is_scalar, v)))
        ]
        scalar_keys = {k for k, _ in scalars}
        nested = [(k, v) for k, v in value.items() if k not in scalar_keys]
        lines: Lines = []
        if scalars:
            lines.extend(table(["key", "value"], [[md(k), generic_cell(k, v)] for k, v in scalars]))
        for key, sub in nested:
            if isinstance(sub, (list, dict)) and not sub:
                continue
            body = generic(sub, depth + 1)
            if body:
                lines.extend(details(str(key), body) if depth >= 1 else ["", f"**{md(key)}**", "", *body])
        return lines
    if isinstance(value, list):
        objects = [v for v in value if isinstance(v, dict)]
        if not objects:
            return [md(shorten(", ".join(fmt_auto("", v) for v in value), 200))] if value else []
        columns: list[str] = []
        for obj in objects[:GENERIC_LIST_ROWS]:
            for k, v in obj.items():
                if k not in columns and (is_scalar(v) or isinstance(v, list)):
                    columns.append(k)
        columns = columns[:GENERIC_COLUMNS]
        if not columns:  # objects holding only nested values: nothing fits a table row
            return [f"({len(objects)} entries in the JSON output)"]
        names = FullNames()
        rows = [
            [
                names.cell(obj.get(c)) if isinstance(obj.get(c), str) else generic_cell(c, obj.get(c))
                for c in columns
            ]
            for obj in objects[:GENERIC_LIST_ROWS]
        ]
        lines = table([md(c) for c in columns], rows)
        if len(objects) > GENERIC_LIST_ROWS:
            lines.append(f"\n… {len(objects) - GENERIC_LIST_ROWS} more rows in the JSON output.")
        return lines + names.block()
    return [md(fmt_auto("", value))]


def free_text(value: Any) -> str:
    """Free text from an analysis (which may quote traced names): escaped, list items joined."""
    if isinstance(value, list):
        return "; ".join(free_text(v) for v in value)
    if isinstance(value, dict):
        return "; ".join(f"{md(k)}: {free_text(v)}" for k, v in value.items())
    return md(fmt_auto("", value) if not isinstance(value, str) else value)


def per_second(amount: Any, ns: Any) -> float | None:
    """``amount`` per second over ``ns`` nanoseconds (None without both)."""
    return (amount / (ns / 1e9)) if amount and ns else None


def fmt_rate_bytes(value: Any) -> str:
    return "-" if value is None else f"{fmt_bytes(value)}/s"


def fmt_rate(value: Any) -> str:
    return "-" if value is None else f"{value:,.0f}/s"


def fmt_ratio(value: Any) -> str:
    return "-" if value is None else f"{value:.3g}"


def text_bar(fraction: float, width: int = 20) -> str:
    """A text bar for a fraction 0-1 (drawn with block characters, safe in any cell)."""
    filled = int(round(max(0.0, min(1.0, fraction)) * width))
    return "█" * filled if filled else ""
