"""Terminal summary, drawn with rich at the terminal's width (at least 80 columns).

Order: source, diagnosis (primary cause, lost time, fix), the summary's headline figures, GPUs, steps, gap histogram, top kernels,
memcpy, occupancy, ranges, host; any other section of the document as a compact key/value list.
Sections absent from the document are skipped. Names from the traced program are shown as plain
``Text`` (never parsed as rich markup) with control characters removed.

Nothing is cut: text wraps at the width, and tables give way by wrapping their cells (a number stays
with its unit on one line); kernel and op names are shortened so that rows stay distinct
(:func:`tracelens.report.names.distinct_short_names`), or shown whole with ``full_names``.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import textwrap
from collections.abc import Callable
from contextvars import ContextVar
from typing import IO, Any, cast

from rich import box
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from ..analyses import report_sections
from ..document import summary_of
from .compute import compute_sentence, fmt_flops, op_flops_cell, roofline_sentence
from .escape import terminal as clean
from .findings import caveats, sentence, utilization_sentence
from .names import distinct_short_names
from .ranks import RANK_COLUMNS, RUN_KEYS, rank_cells, summary_items
from .units import fmt_auto, fmt_bytes, fmt_ns, fmt_pct, plural
from .whatif_text import critical_path_line, remedy_lines, replay_line

WIDTH = 100  # the width when output is no terminal (a pipe, a file) and COLUMNS is not set
MIN_WIDTH = 80
TOP_ROWS = 10
NAME_WIDTH = 44  # kernel / range names are shortened (distinct_short_names) to this many characters
TEXT_MIN = 16  # a text column is not squeezed below this many characters (its cells wrap instead)

Draw = Callable[[dict[str, Any], Console], None]


def terminal_width(stream: IO[str] | None) -> int:
    """The width to draw at: ``COLUMNS`` when set, else the terminal's width when ``stream`` (the output:
    stdout, or None for a file) is one, else :data:`WIDTH`; never below :data:`MIN_WIDTH`."""
    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return max(MIN_WIDTH, int(columns))
    isatty = getattr(stream, "isatty", None)
    if isatty is not None and isatty():
        return max(MIN_WIDTH, shutil.get_terminal_size((WIDTH, 24)).columns)
    return WIDTH


def _t(value: Any, limit: int | None = None) -> Text:
    return Text(clean(value if value is not None else "-", limit))


# Whether this render shows kernel, op and range names whole (``full_names``) or shortened.
_FULL_NAMES: ContextVar[bool] = ContextVar("full_names", default=False)


def _names(values: list[Any]) -> list[Text]:
    """Name cells, cleaned; the table shortens them to its room (:meth:`_Rows.shorten_names`)."""
    return [Text(clean(v if v is not None else "-")) for v in values]


def _n(value: Any) -> str:
    if value is None:
        return "-"
    return f"{value:,}" if isinstance(value, int) else f"{value:,.1f}"


# A number with its unit (or a word) and what is glued to it by a space: "4.99 ms", "9.8 GiB/s", "2/200 µs".
# A table cell wraps between such pieces, never inside one.
_PIECE = re.compile(r"\S+(?: (?![\d+\-−±]|\S*\d\S*%)\S+)*")
# The space between a number and its unit in running text ("9.82 ms", "2.0 MiB", "1.2 TFLOP/s"): wrapped
# text never breaks there.
_UNIT_SPACE = re.compile(r"(?<=\d) (?=(?:ns|µs|us|ms|s|min|h|B|[KMGTPE]i?B|[kKMGTPE]?FLOPs?)(?:/s)?\b)")
_GLUE = "\u00a0"


def _pieces(text: str) -> list[str]:
    return _PIECE.findall(text)


class _Rows:
    """Rows collected first, so that the column widths can be chosen before rich lays out.

    Columns get their natural width when the table fits the console; otherwise text (name) columns give way
    first, down to :data:`TEXT_MIN` (their cells fold onto more lines), then numeric columns, down to their
    widest number-with-unit (their cells wrap between those). A table too wide even then is drawn as
    several tables, each repeating the first (key) column. Nothing is cut with an ellipsis.
    """

    def __init__(self, title: str, columns: list[str], right: set[str] | None = None) -> None:
        self.title = title
        self.columns = columns
        self.right = right or set()
        self.rows: list[tuple[Any, ...]] = []

    def add_row(self, *cells: Any) -> None:
        self.rows.append(cells)

    def shorten_names(self, column: int, limit: int = NAME_WIDTH) -> None:
        """Column ``column`` holds names: shown whole with ``full_names``, else as distinct short forms as
        wide as the table leaves room for (at most ``limit``, at least :data:`TEXT_MIN`)."""
        self.name_column = (column, limit)

    name_column: tuple[int, int] | None = None

    def _shortened(self, width: int) -> None:
        if self.name_column is None or _FULL_NAMES.get() or not self.rows:
            return
        column, limit = self.name_column
        self.name_column = None  # shortened once
        # the room the other columns leave with their cells on one line (their headers may wrap)
        others = [max([self._natural_and_least(i)[1]] + [len(str(row[i])) for row in self.rows])
                  for i in range(len(self.columns)) if i != column]
        room = width - self._overhead(len(self.columns)) - sum(others)
        names = [str(row[column]) for row in self.rows]
        short = distinct_short_names(names, max(TEXT_MIN, min(limit, room)))
        self.rows = [(*row[:column], Text(name), *row[column + 1:]) for row, name in zip(self.rows, short, strict=True)]
        self.fixed = column  # shortened to fit: it does not wrap as well

    fixed: int | None = None

    def _numeric(self, i: int) -> bool:
        return self.columns[i] in self.right or self.columns[i] in ("GPU", "count")

    def _natural_and_least(self, i: int) -> tuple[int, int]:
        cells = [str(row[i]) for row in self.rows]
        header = self.columns[i]
        natural = max([len(header)] + [len(x) for x in cells])
        header_word = max((len(w) for w in header.split()), default=0)
        if self._numeric(i):
            return natural, max([header_word] + [len(p) for x in cells for p in _pieces(x)])
        if i == self.fixed:
            return natural, max([header_word] + [len(x) for x in cells])
        return natural, min(natural, max(header_word, TEXT_MIN))

    @staticmethod
    def _overhead(n: int) -> int:
        return 2 + 3 * (n - 1)  # SIMPLE_HEAD: an edge each side; two padding spaces and a divider between

    def _widths(self, columns: list[int], available: int) -> list[int]:
        sizes = [self._natural_and_least(i) for i in columns]
        widths = [n for n, _ in sizes]
        numeric = [self._numeric(i) for i in columns]
        for give_way in (False, True):  # text columns first, then numeric ones
            for _ in range(sum(widths)):  # at most one step per character of width
                if sum(widths) <= available:
                    return widths
                slack = [(w - least) if num == give_way else 0
                         for w, (_, least), num in zip(widths, sizes, numeric, strict=True)]
                widest = max(range(len(widths)), key=lambda k: (slack[k], widths[k]))
                if slack[widest] <= 0:
                    break
                widths[widest] -= 1
        return widths

    def _parts(self, width: int) -> list[list[int]]:
        """The columns of each table drawn: all at once when they fit at their least widths, else the key
        column and as many more as fit, repeated."""
        least = [self._natural_and_least(i)[1] for i in range(len(self.columns))]
        if sum(least) + self._overhead(len(least)) <= width or len(least) < 3:
            return [list(range(len(least)))]
        parts: list[list[int]] = [[0]]
        for i in range(1, len(least)):
            part = parts[-1]
            if len(part) > 1 and sum(least[k] for k in part) + least[i] + self._overhead(len(part) + 1) > width:
                parts.append([0])
                part = parts[-1]
            part.append(i)
        return parts

    def rich(self, width: int) -> Group:
        self._shortened(width)
        # the title wraps at the console's width, not the table's
        tables: list[Any] = [Text(_wrap(clean(self.title), width, ""), style="bold")] if self.title else []
        for part in self._parts(width):
            table = Table(pad_edge=False, expand=False, box=box.SIMPLE_HEAD)
            for i, w in zip(part, self._widths(part, width - self._overhead(len(part))), strict=True):
                table.add_column(self.columns[i], justify="right" if self._numeric(i) else "left",
                                 overflow="fold", width=w)
            for row in self.rows:
                table.add_row(*(row[i] for i in part))
            tables.append(table)
        return Group(*tables)


def _table(title: str, columns: list[str], right: set[str] | None = None) -> _Rows:
    return _Rows(title, columns, right)


def new_console(width: int = WIDTH, color: bool = False) -> tuple[Console, io.StringIO]:
    """A console drawing into a buffer (for other terminal renderers: the diff)."""
    buffer = io.StringIO()
    return Console(file=buffer, width=width, force_terminal=color, color_system="auto" if color else None,
                   emoji=False, highlight=False), buffer


def finish(buffer: io.StringIO) -> str:
    # rich pads every line to the table width; trailing blanks only make diffs and golden files noisy
    return "\n".join(line.rstrip() for line in buffer.getvalue().split("\n"))


def draw_text(console: Console, text: str, style: str | None = None, indent: str | None = None) -> None:
    """Plain text wrapped at the console's width (see :func:`_print`)."""
    _print(console, text, style=style, indent=indent)


def draw_table(console: Console, title: str, columns: list[str], rows: list[list[str]], right: set[str],
               *, name_column: int | None = None, full_names: bool = False) -> None:
    """A table laid out like the summary's: numeric columns ``right``; ``name_column`` shortened to distinct
    names unless ``full_names``."""
    table = _table(title, columns, right)
    for row in rows:
        table.add_row(*(Text(clean(c)) for c in row))
    if name_column is not None and not full_names:
        table.shorten_names(name_column)
    console.print(table.rich(console.width))


def _wrap(text: str, width: int, indent: str) -> str:
    """``text`` wrapped at ``width`` after ``indent`` (two more spaces on later lines), never between a
    number and its unit."""
    return textwrap.fill(_UNIT_SPACE.sub(_GLUE, text), width=width, initial_indent=indent,
                         subsequent_indent=indent + "  ", break_on_hyphens=False).replace(_GLUE, " ")


def _print(console: Console, text: str, style: str | None = None, indent: str | None = None) -> None:
    """Print plain text wrapped to the console's width; with ``indent``, that indent (two more on later
    lines), else later lines indented by two more spaces than the first."""
    text = clean(text)
    if indent is None:
        indent = text[: len(text) - len(text.lstrip(" "))]
        text = text.lstrip(" ")
    console.print(Text(_wrap(text, console.width, indent)), style=style, highlight=False, overflow="fold")


def _source(doc: dict[str, Any], console: Console) -> None:
    src = doc.get("source") or {}
    producer = " ".join(x for x in (src.get("producer"), src.get("producer_version")) if x)
    head = Text(clean(src.get("path") or "trace"), style="bold")
    events = src.get("event_count")
    head.append(clean(f"  ({src.get('format', '?')}{', ' + producer if producer else ''}"
                      f"{', ' + format(events, ',') + ' events' if isinstance(events, int) else ''})"))
    console.print(head, highlight=False)
    for warning in src.get("warnings") or []:
        _print(console, f"warning: {warning}", style="yellow")


# Labels of the summary's figures, by key without its "device_mean_"/"gpu_" prefix and "_ns" suffix; a key not
# listed is shown by its own name (so a figure added to the summary is never left out).
_SUMMARY_LABELS = {"device_count": "GPUs", "utilization": "GPU utilization", "utilization_by_kind": "busy by kind",
                   "busy": "busy", "span": "span", "kernel_count": "kernels", "kernel": "kernel time",
                   "kernel_names": "kernel names", "memcpy_count": "copies", "memcpy": "copy time",
                   "memcpy_bytes": "copied", "memcpy_exposed": "copies not overlapped", "memset": "memset time",
                   "steps": "steps", "step_host": "host time per step", "primary_cause": "primary cause",
                   "primary_lost": "lost to it", "idle_by_cause": "GPU idle by cause", "flops": "FLOPs",
                   "mfu": "MFU"}


def _summary_base(key: str) -> str:
    return key.removeprefix("device_mean_").removeprefix("gpu_").removesuffix("_ns")


def summary_value(key: str, value: Any, parent: str = "") -> str:
    """One figure of the document's ``summary`` as the terminal prints it (``parent``: the key of the object
    it is in, e.g. ``steps``), by the key conventions of docs/json.md."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return value
    if key == "mfu" or "utilization" in key or "utilization" in parent:
        return fmt_pct(value)
    if key == "flops":
        return fmt_flops(value)
    if key.endswith("_ns") or parent.endswith("_ns") or "idle_by_cause" in parent:
        return fmt_ns(value)
    if "bytes" in key:
        return fmt_bytes(value)
    return _n(value)


def _headline(doc: dict[str, Any], console: Console) -> None:
    """Every figure of the document's ``summary`` (the JSON output's headline) in one paragraph, each whole."""
    parts = []
    for key, value in summary_of(doc).items():
        if value is None or value == {}:
            continue
        label = _SUMMARY_LABELS.get(_summary_base(key), key.replace("_", " "))
        if isinstance(value, dict):
            inner = ", ".join(f"{_summary_base(k).replace('_', ' ')} {summary_value(k, v, key)}"
                              for k, v in value.items() if v is not None)
            parts.append(f"{label}: {inner}")
        else:
            parts.append(f"{label} {summary_value(key, value)}")
    if not parts:
        return
    means = any(key.startswith("device_mean_") for key in summary_of(doc)) and doc.get("devices")
    console.print()
    _print(console, f"Summary{' (times per GPU, mean)' if means and len(doc['devices']) > 1 else ''}: "
                    + "; ".join(parts), indent="")


def _primary(doc: dict[str, Any]) -> dict[str, Any] | None:
    diagnosis = doc.get("diagnosis")
    primary = diagnosis.get("primary") if isinstance(diagnosis, dict) else None
    return primary if isinstance(primary, dict) else None


def _plain(value: Any) -> str:
    if isinstance(value, dict):
        return "; ".join(f"{k}: {_plain(v) if isinstance(v, (list, dict)) else fmt_auto(k, v)}"
                         for k, v in value.items())
    if isinstance(value, list):
        return "; ".join(_plain(v) for v in value)
    return value if isinstance(value, str) else fmt_auto("", value)


def _diagnosis(doc: dict[str, Any], console: Console) -> None:
    primary = _primary(doc)
    if primary is None:
        return
    console.print()
    diagnosis = doc["diagnosis"]
    cause = primary.get("cause")
    if cause == "none":
        _print(console, f"Diagnosis: none. {sentence(primary, diagnosis)}", style="green", indent="")
    elif cause == "incomplete_trace":
        _print(console, f"Diagnosis: incomplete_trace. {sentence(primary, diagnosis)}", style="bold yellow",
               indent="")
        if primary.get("fix"):
            _print(console, f"fix: {_plain(primary['fix'])}", style="cyan", indent="  ")
    else:
        line = Text("Diagnosis: ", style="bold")
        line.append(clean(cause), style="bold red")
        line.append(clean(f"  lost {fmt_ns(primary.get('lost_ns'))} ({fmt_pct(primary.get('share'))} of span)"))
        console.print(line, highlight=False)
        _print(console, sentence(primary, diagnosis), indent="  ")
        if primary.get("fix"):
            _print(console, f"fix: {_plain(primary['fix'])}", style="cyan", indent="  ")
    # The primary is causes[0] unless it is a primary-only verdict that is not a cause (incomplete_trace).
    causes = diagnosis.get("causes") or []
    others = [c for c in (causes if cause == "incomplete_trace" else causes[1:]) if isinstance(c, dict)]
    for c in others[:4]:
        _print(console, f"also: {c.get('cause')} {fmt_ns(c.get('lost_ns'))} ({fmt_pct(c.get('share'))}): "
                        f"{sentence(c, diagnosis)}", indent="  ")
    for caveat in caveats(diagnosis):
        _print(console, f"caveat: {caveat}", style="yellow", indent="  ")


def _devices(doc: dict[str, Any], console: Console) -> None:
    devices = doc.get("devices")
    if devices is None:
        return
    console.print()
    if not devices:
        _print(console, "No GPU activity in this trace (no kernels, copies or memsets); host side below.",
               style="yellow")
        return
    named = any(d.get("name") for d in devices)  # a name column only when the trace names some device
    busy = utilization_sentence(cast(dict[str, Any], summary_of(doc))) or "GPU busy -"
    table = _table(busy + (f" (mean over {plural(len(devices), 'GPU')})" if len(devices) > 1 else ""),
                   ["GPU", "util", "busy", "span", "kernels", "kernel time", "memcpy n/time", "memset n/time",
                    *(["name"] if named else [])],
                   {"util", "busy", "span", "kernels", "kernel time", "memcpy n/time", "memset n/time"})
    for d in devices:
        label = f"{d['rank']}:{d.get('id')}" if d.get("rank") is not None else d.get("id")  # rank:GPU in a run
        table.add_row(_t(label), fmt_pct(d.get("utilization")),
                      fmt_ns(d.get("busy_ns")), fmt_ns(d.get("span_ns")), _n(d.get("kernel_count")),
                      fmt_ns(d.get("kernel_ns")), f"{_n(d.get('memcpy_count'))}/{fmt_ns(d.get('memcpy_ns'))}",
                      f"{_n(d.get('memset_count'))}/{fmt_ns(d.get('memset_ns'))}",
                      *([_t(d.get("name") or "-")] if named else []))
    console.print(table.rich(console.width))


def _steps(doc: dict[str, Any], console: Console) -> None:
    if "steps" not in doc:
        return
    stats = summary_of(doc)["steps"]
    console.print()
    if not stats:
        _print(console, "Steps: no step markers in this trace.")
        return
    _print(console, f"Steps: {stats['count']:,}, mean {fmt_ns(stats['mean_ns'])}, min {fmt_ns(stats['min_ns'])}, "
                    f"max {fmt_ns(stats['max_ns'])}")
    breakdown = _step_breakdown(doc)
    if breakdown:
        _print(console, "  per step (mean): " + ", ".join(f"{k} {fmt_ns(v)}" for k, v in breakdown))


def _step_breakdown(doc: dict[str, Any]) -> list[tuple[str, float]]:
    """Mean host time per category per step, from ``steps.summary.host_ns``."""
    steps = doc.get("steps")
    summary = steps.get("summary") if isinstance(steps, dict) else None
    count = steps.get("count") if isinstance(steps, dict) else None
    host = summary.get("host_ns") if isinstance(summary, dict) else None
    if not isinstance(host, dict) or not count:
        return []
    return [(k, v / count) for k, v in host.items() if isinstance(v, (int, float))]


def _attribution(doc: dict[str, Any], console: Console) -> None:
    attribution = doc.get("attribution")
    devices = attribution.get("devices") if isinstance(attribution, dict) else None
    if not devices:
        return
    causes = list(attribution.get("priority") or (devices[0].get("by_cause") or {}).keys())
    console.print()
    table = _table("GPU idle time by cause (what the feeding host threads did)", ["GPU", "idle", *causes],
                   {"idle", *causes})
    for d in devices:
        idle = d.get("idle_ns") or 0
        by_cause = d.get("by_cause") or {}
        table.add_row(_t(d.get("device")), fmt_ns(idle),
                      *[f"{fmt_ns(by_cause.get(c))} {fmt_pct(by_cause.get(c, 0) / idle) if idle else ''}".strip()
                        for c in causes])
    console.print(table.rich(console.width))


def _launch(doc: dict[str, Any], console: Console) -> None:
    launch = doc.get("launch")
    lat = launch.get("latency") if isinstance(launch, dict) else None
    if not isinstance(lat, dict) or not lat.get("count"):
        return
    console.print()
    _print(console, f"Launches: {_n(lat.get('count'))} matched, latency p50 {fmt_ns(lat.get('p50_ns'))}, "
                    f"p90 {fmt_ns(lat.get('p90_ns'))}, p99 {fmt_ns(lat.get('p99_ns'))}, max {fmt_ns(lat.get('max_ns'))}")
    small = launch.get("small_kernels") or {}
    short = launch.get("short_kernels") or {}
    graphs = launch.get("cuda_graphs") or {}
    _print(console, f"  kernels < {fmt_ns(small.get('threshold_ns'))}: {_n(small.get('count'))} "
                    f"({fmt_pct(small.get('share'))} of kernel time); shorter than their launch: "
                    f"{_n(short.get('count'))}; CUDA graphs: {'yes' if graphs.get('in_use') else 'no'}")


def _gaps(doc: dict[str, Any], console: Console) -> None:
    gaps = doc.get("gaps")
    devices = gaps.get("devices") if isinstance(gaps, dict) else None
    if not devices:
        return
    console.print()
    for d in devices:
        idle = d.get("idle_ns") or 0
        table = _table(f"GPU {d.get('device')} idle gaps: {_n(d.get('gap_count'))} gaps, {fmt_ns(idle)} idle",
                       ["gap length", "count", "idle", "share", ""], {"count", "idle", "share"})
        for h in d.get("histogram") or []:
            share = (h.get("total_ns") or 0) / idle if idle else 0.0
            table.add_row(_t(h.get("bucket")), _n(h.get("count")), fmt_ns(h.get("total_ns")),
                          fmt_pct(share) if idle else "-", "█" * int(round(20 * share)))
        console.print(table.rich(console.width))


def _kernels(doc: dict[str, Any], console: Console) -> None:
    kernels = doc.get("kernels")
    if not isinstance(kernels, dict) or not kernels.get("by_name"):
        return
    console.print()
    table = _table(f"Top kernels ({plural(kernels.get('count') or 0, 'launch', 'launches')}, {plural(kernels.get('distinct_names') or 0, 'name')}, "
                   f"{fmt_ns(kernels.get('total_ns'))})", ["kernel", "time%", "total", "count", "avg", "max"],
                   {"time%", "total", "count", "avg", "max"})
    top = kernels["by_name"][:TOP_ROWS]
    for k, name in zip(top, _names([k.get("name") for k in top]), strict=True):
        table.add_row(name, fmt_pct(k.get("time_fraction")), fmt_ns(k.get("total_ns")),
                      _n(k.get("count")), fmt_ns(k.get("avg_ns")), fmt_ns(k.get("max_ns")))
    table.shorten_names(0)
    console.print(table.rich(console.width))


def _memcpy(doc: dict[str, Any], console: Console) -> None:
    memcpy = doc.get("memcpy")
    if not isinstance(memcpy, dict):
        return
    by_kind = [k for k in memcpy.get("by_kind") or [] if isinstance(k, dict)]
    if not by_kind:
        return
    console.print()
    exposed = memcpy.get("device_mean_exposed_ns")
    per_gpu = ", mean per GPU" if len(memcpy.get("per_device") or []) > 1 else ""
    title = "Memory copies" + (f" ({fmt_ns(exposed)} not overlapped by compute{per_gpu})" if exposed is not None else "")
    table = _table(title, ["direction", "count", "bytes", "time", "bandwidth", "pageable"],
                   {"count", "bytes", "time", "bandwidth", "pageable"})
    for k in by_kind:
        nbytes, ns = k.get("bytes"), k.get("duration_ns")
        bandwidth = f"{fmt_bytes(nbytes / (ns / 1e9))}/s" if nbytes and ns else "-"
        table.add_row(_t(k.get("kind")), _n(k.get("count")), fmt_bytes(nbytes), fmt_ns(ns), bandwidth,
                      _n(k.get("pageable_count")))
    console.print(table.rich(console.width))


def _scalars(title: str, value: Any, console: Console) -> None:
    """A compact line-per-key listing of a section's scalar values (for sections with no dedicated table)."""
    if not isinstance(value, dict):
        return
    items = [(k, v) for k, v in value.items() if v is None or isinstance(v, (str, int, float, bool))]
    if not items:
        return
    console.print()
    _print(console, f"{title}:", style="bold")
    for k, v in items[:12]:
        _print(console, f"  {k}: {clean(fmt_auto(k, v), 80)}")


def _occupancy(doc: dict[str, Any], console: Console) -> None:
    occ = doc.get("occupancy")
    if not isinstance(occ, dict) or "per_device" not in occ:
        if occ is not None:
            _scalars("Occupancy", occ, console)
        return
    console.print()
    # occupancy.lost_ns sums the GPUs: shown as the device-mean (the diagnosis' low_occupancy loss) with several.
    gpus = len(doc.get("devices") or []) or 1
    total = occ.get("lost_ns")
    lost = total / gpus if isinstance(total, (int, float)) else None
    _print(console, f"Occupancy: {_n(occ.get('computed_count'))} of {_n(occ.get('kernel_count'))} kernels computed, "
                    f"lost {fmt_ns(lost)}{' per GPU (mean)' if gpus > 1 else ''} "
                    f"(low < {fmt_pct(occ.get('low_threshold'))})")
    for d in occ.get("per_device") or []:
        if not isinstance(d, dict):
            continue
        if d.get("not_computed_reason"):
            _print(console, f"  GPU {d.get('device')}: not computed: {d['not_computed_reason']}")
            continue
        limiter = d.get("limiter_ns") or {}
        top = max(limiter, key=lambda k: limiter[k]) if limiter and any(limiter.values()) else "-"
        _print(console, f"  GPU {d.get('device')} (cc {d.get('compute_capability') or '?'}): theoretical "
                        f"{fmt_pct(d.get('time_weighted_theoretical'))}, est. achieved "
                        f"{fmt_pct(d.get('time_weighted_estimated_achieved'))}, reported "
                        f"{fmt_pct(d.get('time_weighted_reported'))}; low {fmt_ns(d.get('low_ns'))}, "
                        f"under-filled {fmt_ns(d.get('under_filled_ns'))}; main limiter {top}")
    kernels = [k for k in occ.get("top_low_occupancy_kernels") or [] if isinstance(k, dict)]
    if kernels:
        table = _table("Most time lost to low occupancy", ["kernel", "lost", "total", "est.", "theor.", "limiter"],
                       {"lost", "total", "est.", "theor."})
        for k, name in zip(kernels[:5], _names([k.get("name") for k in kernels[:5]]), strict=True):
            table.add_row(name, fmt_ns(k.get("lost_ns")), fmt_ns(k.get("total_ns")),
                          fmt_pct(k.get("occupancy")), fmt_pct(k.get("theoretical")), _t(k.get("limiter")))
        table.shorten_names(0)
        console.print(table.rich(console.width))


def _sync(doc: dict[str, Any], console: Console) -> None:
    sync = doc.get("sync")
    blocking = sync.get("blocking") if isinstance(sync, dict) else None
    if not isinstance(blocking, dict):
        return
    console.print()
    item = sync.get("item_pattern") or {}
    top = [b for b in blocking.get("by_name") or [] if isinstance(b, dict)]
    _print(console, f"Sync: {_n(blocking.get('count'))} blocking calls, {fmt_ns(blocking.get('total_ns'))}"
                    + (f" (top {top[0].get('name')} x{_n(top[0].get('count'))})" if top else "")
                    + f"; .item()-style waits {_n(item.get('count'))}, {fmt_ns(item.get('wait_ns'))}")


def _ranges(doc: dict[str, Any], console: Console) -> None:
    ranges = doc.get("ranges")
    rows = ranges.get("ranges") if isinstance(ranges, dict) else None
    rows = [r for r in rows or [] if isinstance(r, dict)]
    if not rows:
        return
    console.print()
    texts = ranges.get("texts")
    grouped = f" ({_n(texts)} distinct texts)" if isinstance(texts, int) and texts != ranges.get("names") else ""
    table = _table(f"Ranges (NVTX / annotations): {_n(ranges.get('count'))} instances, {_n(ranges.get('names'))} "
                   f"names{grouped}",
                   ["range", "count", "CPU", "GPU op time", "projected", "GPU idle in"],
                   {"count", "CPU", "GPU op time", "projected", "GPU idle in"})
    for r, name in zip(rows[:TOP_ROWS], _names([r.get("name") for r in rows[:TOP_ROWS]]), strict=True):
        table.add_row(name, _n(r.get("count")), fmt_ns(r.get("cpu_ns")),
                      fmt_ns(r.get("gpu_op_ns")), fmt_ns(r.get("projected_ns")), fmt_ns(r.get("gpu_idle_ns")))
    table.shorten_names(0)
    console.print(table.rich(console.width))


def _host(doc: dict[str, Any], console: Console) -> None:
    host = doc.get("host")
    if not isinstance(host, dict) or not host.get("top"):
        return
    console.print()
    folded = host.get("thread_bootstrap_rows")
    table = _table(f"Host side (span {fmt_ns(host.get('span_ns'))}, {plural(host.get('threads') or 0, 'thread')}): top by time"
                   + (f" (thread-start frames left out: {_n(folded)} rows)" if folded else ""),
                   ["kind", "name", "count", "total"], {"count", "total"})
    top = host["top"][:TOP_ROWS]
    for row, name in zip(top, _names([row.get("name") for row in top]), strict=True):
        table.add_row(_t(row.get("kind")), name, _n(row.get("count")), fmt_ns(row.get("total_ns")))
    table.shorten_names(1, 60)
    console.print(table.rich(console.width))


def _communication(doc: dict[str, Any], console: Console) -> None:
    from .charts import bar_legend, stacked_bar

    comm = doc.get("communication")
    devices = [d for d in (comm or {}).get("devices") or [] if isinstance(d, dict)]
    if not devices:
        return
    console.print()
    _print(console, f"GPU time breakdown ({bar_legend()}); {_n(comm.get('collective_count'))} collectives", indent="")
    for d in devices:
        b = d.get("breakdown") or {}
        line = f"GPU {d.get('device')} {stacked_bar(b)} span {fmt_ns(b.get('span_ns'))}"
        if d.get("collective_count"):
            line += (f"; collectives {fmt_ns(d.get('collective_ns'))}, exposed {fmt_ns(d.get('exposed_ns'))} "
                     f"({fmt_pct(d.get('overlap_share'))} overlapped)")
        _print(console, line, indent="  ")  # wrapped: the bar plus the collective figures pass WIDTH


def _ops(doc: dict[str, Any], console: Console) -> None:
    ops = doc.get("ops")
    rows = [r for r in (ops or {}).get("by_name") or [] if isinstance(r, dict)]
    if not rows:
        return
    console.print()
    with_flops = any(r.get("flops") is not None for r in rows)  # shapes recorded: a FLOPs column
    columns = ["op", "count", "kernel", "copy", "host", *(["FLOPs"] if with_flops else [])]
    table = _table(f"Top ops ({fmt_ns(ops.get('attributed_kernel_ns'))} of {fmt_ns(ops.get('kernel_ns'))} kernel "
                   "time attributed)", columns, {"count", "kernel", "copy", "host", "FLOPs"})
    for r, name in zip(rows[:TOP_ROWS], _names([r.get("name") for r in rows[:TOP_ROWS]]), strict=True):
        table.add_row(name, _n(r.get("count")), fmt_ns(r.get("gpu_ns")),
                      fmt_ns(r.get("copy_ns")), fmt_ns(r.get("cpu_ns")),
                      *([op_flops_cell(r.get("flops"))] if with_flops else []))
    table.shorten_names(0)
    console.print(table.rich(console.width))
    for line in (compute_sentence(ops.get("compute"), str), roofline_sentence(ops.get("roofline"), str)):
        if line:  # _print cleans the whole line
            _print(console, line, indent="  ")
    modules = [m for m in ops.get("by_module") or [] if isinstance(m, dict)]
    if modules:  # the trace records nn.Module rows
        console.print()
        table = _table("Top modules (innermost nn.Module at the launch)", ["module", "kernels", "kernel", "FLOPs"],
                       {"kernels", "kernel", "FLOPs"})
        for m in modules[:TOP_ROWS]:
            # The innermost modules matter most: keep the end of the path.
            path = clean(m.get("path"))
            short = path if _FULL_NAMES.get() or len(path) <= NAME_WIDTH else "…" + path[-(NAME_WIDTH - 1):]
            table.add_row(Text(short),
                          _n(m.get("kernels")), fmt_ns(m.get("gpu_ns")), fmt_flops(m.get("flops")))
        console.print(table.rich(console.width))


def _ranks(doc: dict[str, Any], console: Console) -> None:
    """A run document's ranks: the straggler, imbalance and collective verdicts, then one row per rank."""
    rows = [r for r in doc.get("ranks") or [] if isinstance(r, dict)]
    if not rows:
        return
    console.print()
    _print(console, f"Ranks: {len(rows):,}" + (f"; diagnosis and host side of rank {doc['representative_rank']}"
                                               if doc.get("representative_rank") is not None else ""), style="bold")
    for label, text in summary_items(doc, clean):
        _print(console, f"  {label}: {text}")
    right = {"rank", "GPUs", "utilization", "busy", "steps", "mean step", "step lateness", "NCCL transfer",
             "NCCL wait"}
    table = _table("", RANK_COLUMNS, right)
    for r in rows:
        table.add_row(*(Text(c) for c in rank_cells(r, clean)))  # type: ignore[arg-type]
    console.print(table.rich(console.width))


def _whatif(doc: dict[str, Any], console: Console) -> None:
    lines = [line for line in (*remedy_lines(doc), critical_path_line(doc), replay_line(doc)) if line]
    if not lines:
        return
    console.print()
    _print(console, "What-if (replay):")
    for line in lines:
        _print(console, line, indent="  ")


# Drawing functions by section key; the order and GPU-only flags come from the section registry
# (tracelens.analyses.REGISTRY). Source and diagnosis come first; any other key gets a key/value list.
DRAW: dict[str, Draw] = {"communication": _communication, "ops": _ops, "devices": _devices, "steps": _steps, "gaps": _gaps, "attribution": _attribution,
                         "kernels": _kernels, "launch": _launch, "sync": _sync, "memcpy": _memcpy,
                         "occupancy": _occupancy, "ranges": _ranges, "host": _host, "whatif": _whatif}
HANDLED = {"schema_version", "source", "summary", "diagnosis", *DRAW, *RUN_KEYS}


def _others(doc: dict[str, Any], console: Console) -> None:
    for key, value in doc.items():
        if key not in HANDLED:
            _scalars(key, value, console)


def render(doc: dict[str, Any], *, width: int = WIDTH, color: bool = False, full_names: bool = False,
           **_: Any) -> str:
    """The terminal summary at ``width`` columns (the CLI passes :func:`terminal_width`); ``full_names``:
    kernel, op and range names whole (wrapped) instead of shortened."""
    console, buffer = new_console(width, color)
    no_gpu = doc.get("devices") == []
    token = _FULL_NAMES.set(full_names)
    try:
        _source(doc, console)
        _diagnosis(doc, console)
        _headline(doc, console)
        _ranks(doc, console)
        for section in report_sections():
            if section.key in DRAW and not (no_gpu and section.gpu_only):
                DRAW[section.key](doc, console)
        _others(doc, console)
    finally:
        _FULL_NAMES.reset(token)
    return finish(buffer)
