"""How the terminal summary lays out: tables whose columns give way to the console's width, and text wrapped at
it, never between a number and its unit (:mod:`tracelens.report.terminal` draws the sections with these; the
diff's terminal renderer draws its tables with them too).
"""

from __future__ import annotations

import io
import re
import textwrap
from contextvars import ContextVar
from typing import Any

from rich import box
from rich.cells import cell_len
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from .escape import ELLIPSIS
from .escape import terminal as clean
from .names import distinct_short_names

WIDTH = 100  # the width when output is no terminal (a pipe, a file) and COLUMNS is not set
MIN_WIDTH = 80
NAME_WIDTH = 44  # kernel / range names are shortened (distinct_short_names) to this many characters
TEXT_MIN = 16  # a text column is not squeezed below this many characters (its cells wrap instead)


# Whether this render shows kernel, op and range names whole (``full_names``) or shortened.
FULL_NAMES: ContextVar[bool] = ContextVar("full_names", default=False)


# A number with its unit (or a word) and what is glued to it by a space: "4.99 ms", "9.8 GiB/s", "2/200 µs".
# A table cell wraps between such pieces, never inside one.
_PIECE = re.compile(r"\S+(?: (?![\d+\-−±]|\S*\d\S*%)\S+)*")
# The space between a number and its unit in running text ("9.82 ms", "2.0 MiB", "1.2 TFLOP/s"): wrapped
# text never breaks there.
_UNIT_SPACE = re.compile(r"(?<=\d) (?=(?:ns|µs|us|ms|s|min|h|B|[KMGTPE]i?B|[kKMGTPE]?FLOPs?)(?:/s)?\b)")
_GLUE = "\u00a0"


def _pieces(text: str) -> list[str]:
    return _PIECE.findall(text)


def _fit_cells(text: str, width: int) -> str:
    """``text`` as head…tail in at most ``width`` terminal cells (a CJK character or an emoji takes two): names
    are shortened in characters, which for double-width ones is up to twice the room (the row then folds)."""
    if cell_len(text) <= width:
        return text
    room = max(width - 1, 2)  # the ellipsis takes one cell
    head_room, tail_room = (room * 2) // 3, room - (room * 2) // 3
    head, used = [], 0
    for char in text:  # a loop over one name's characters (a shown row's)
        used += cell_len(char)
        if used > head_room:
            break
        head.append(char)
    tail, used = [], 0
    for char in reversed(text[len(head) :]):
        used += cell_len(char)
        if used > tail_room:
            break
        tail.append(char)
    return "".join(head) + ELLIPSIS + "".join(reversed(tail))


class Rows:
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
        if self.name_column is None or FULL_NAMES.get() or not self.rows:
            return
        column, limit = self.name_column
        self.name_column = None  # shortened once
        # the room the other columns leave with their cells on one line (their headers may wrap)
        others = [
            max([self._natural_and_least(i)[1]] + [cell_len(str(row[i])) for row in self.rows])
            for i in range(len(self.columns))
            if i != column
        ]
        room = width - self._overhead(len(self.columns)) - sum(others)
        names = [str(row[column]) for row in self.rows]
        target = max(TEXT_MIN, min(limit, room))
        # a short form wider in cells than in characters (double-width characters): the whole name cut by cells
        short = [
            form if cell_len(form) <= target else _fit_cells(name, target)
            for name, form in zip(names, distinct_short_names(names, target), strict=True)
        ]
        self.rows = [
            (*row[:column], Text(name), *row[column + 1 :])
            for row, name in zip(self.rows, short, strict=True)
        ]
        self.fixed = column  # shortened to fit: it does not wrap as well

    fixed: int | None = None

    def _numeric(self, i: int) -> bool:
        return self.columns[i] in self.right or self.columns[i] in ("GPU", "count")

    def _natural_and_least(self, i: int) -> tuple[int, int]:
        cells = [str(row[i]) for row in self.rows]
        header = self.columns[i]
        natural = max(
            [cell_len(header)] + [cell_len(x) for x in cells]
        )  # in terminal cells, as rich lays out
        header_word = max((cell_len(w) for w in header.split()), default=0)
        if self._numeric(i):
            return natural, max([header_word] + [cell_len(p) for x in cells for p in _pieces(x)])
        if i == self.fixed:
            return natural, max([header_word] + [cell_len(x) for x in cells])
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
                slack = [
                    (w - least) if num == give_way else 0
                    for w, (_, least), num in zip(widths, sizes, numeric, strict=True)
                ]
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
            if (
                len(part) > 1
                and sum(least[k] for k in part) + least[i] + self._overhead(len(part) + 1) > width
            ):
                parts.append([0])
                part = parts[-1]
            part.append(i)
        return parts

    def rich(self, width: int) -> Group:
        self._shortened(width)
        # the title wraps at the console's width, not the table's
        tables: list[Any] = [Text(wrap(clean(self.title), width, ""), style="bold")] if self.title else []
        for part in self._parts(width):
            table = Table(pad_edge=False, expand=False, box=box.SIMPLE_HEAD)
            for i, w in zip(part, self._widths(part, width - self._overhead(len(part))), strict=True):
                table.add_column(
                    self.columns[i], justify="right" if self._numeric(i) else "left", overflow="fold", width=w
                )
            for row in self.rows:
                table.add_row(*(row[i] for i in part))
            tables.append(table)
        return Group(*tables)


def new_table(title: str, columns: list[str], right: set[str] | None = None) -> Rows:
    return Rows(title, columns, right)


def new_console(width: int = WIDTH, color: bool = False) -> tuple[Console, io.StringIO]:
    """A console drawing into a buffer (for other terminal renderers: the diff)."""
    buffer = io.StringIO()
    return Console(
        file=buffer,
        width=width,
        force_terminal=color,
        color_system="auto" if color else None,
        emoji=False,
        highlight=False,
    ), buffer


def finish(buffer: io.StringIO) -> str:
    # rich pads every line to the table width; trailing blanks only make diffs and golden files noisy
    return "\n".join(line.rstrip() for line in buffer.getvalue().split("\n"))


def draw_text(console: Console, text: str, style: str | None = None, indent: str | None = None) -> None:
    """Plain text wrapped at the console's width (see :func:`_print`)."""
    print_text(console, text, style=style, indent=indent)


def draw_table(
    console: Console,
    title: str,
    columns: list[str],
    rows: list[list[str]],
    right: set[str],
    *,
    name_column: int | None = None,
    full_names: bool = False,
) -> None:
    """A table laid out like the summary's: numeric columns ``right``; ``name_column`` shortened to distinct
    names unless ``full_names``."""
    table = new_table(title, columns, right)
    for row in rows:
        table.add_row(*(Text(clean(c)) for c in row))
    if name_column is not None and not full_names:
        table.shorten_names(name_column)
    console.print(table.rich(console.width))


def wrap(text: str, width: int, indent: str) -> str:
    """``text`` wrapped at ``width`` after ``indent`` (two more spaces on later lines), never between a
    number and its unit."""
    return textwrap.fill(
        _UNIT_SPACE.sub(_GLUE, text),
        width=width,
        initial_indent=indent,
        subsequent_indent=indent + "  ",
        break_on_hyphens=False,
    ).replace(_GLUE, " ")


def print_text(console: Console, text: str, style: str | None = None, indent: str | None = None) -> None:
    """Print plain text wrapped to the console's width; with ``indent``, that indent (two more on later
    lines), else later lines indented by two more spaces than the first."""
    text = clean(text)
    if indent is None:
        indent = text[: len(text) - len(text.lstrip(" "))]
        text = text.lstrip(" ")
    console.print(Text(wrap(text, console.width, indent)), style=style, highlight=False, overflow="fold")
