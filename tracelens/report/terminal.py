"""Terminal summary, drawn with rich. One function per section; sections absent from the doc are skipped."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.table import Table

from .units import fmt_ns, fmt_pct


def _source(doc: dict[str, Any], console: Console) -> None:
    src = doc["source"]
    producer = " ".join(x for x in (src.get("producer"), src.get("producer_version")) if x)
    console.print(f"[bold]{src['path']}[/bold]  ({src['format']}{', ' + producer if producer else ''}, "
                  f"{src['event_count']:,} events)", highlight=False, markup=True)
    for warning in src.get("warnings", []):
        console.print(f"warning: {warning}", style="yellow", markup=False, highlight=False)


def _devices(doc: dict[str, Any], console: Console) -> None:
    devices = doc.get("devices") or []
    if not devices:
        console.print("No GPU activity in this trace (no kernels, copies or memsets); host side below.",
                      style="yellow")
        return
    table = Table(title="GPU utilization", title_justify="left")
    for col in ("device", "name", "utilization", "busy", "span", "kernels", "kernel time", "memcpy", "memset"):
        table.add_column(col, justify="left" if col in ("device", "name") else "right")
    for d in devices:
        table.add_row(str(d["id"]), d.get("name") or "-", fmt_pct(d["utilization"]), fmt_ns(d["busy_ns"]),
                      fmt_ns(d["span_ns"]), f"{d['kernel_count']:,}", fmt_ns(d["kernel_ns"]),
                      f"{d['memcpy_count']:,} / {fmt_ns(d['memcpy_ns'])}",
                      f"{d['memset_count']:,} / {fmt_ns(d['memset_ns'])}")
    console.print(table)


def _host(doc: dict[str, Any], console: Console) -> None:
    host = doc.get("host")
    if not host or not host.get("top"):
        return
    table = Table(title=f"Host side (span {fmt_ns(host['span_ns'])}, {host['threads']} threads): top by time",
                  title_justify="left")
    for col in ("kind", "name", "count", "total"):
        table.add_column(col, justify="right" if col in ("count", "total") else "left", overflow="fold")
    for row in host["top"]:
        table.add_row(row["kind"], row["name"][:80], f"{row['count']:,}", fmt_ns(row["total_ns"]))
    console.print(table)


# Section renderers in print order. Add a section by adding its function here.
SECTIONS: list[Callable[[dict[str, Any], Console], None]] = [
    _source,
    _devices,
    _host,
]


def render(doc: dict[str, Any], *, width: int = 120, color: bool = False, **_: Any) -> str:
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, force_terminal=color, color_system="auto" if color else None,
                      emoji=False)
    for draw in SECTIONS:
        draw(doc, console)
    return buffer.getvalue()
