"""Keep a markdown report or diff under the size GitHub accepts for a pull-request comment.

GitHub refuses a comment over 65,536 characters; a report must stay under :data:`MAX_CHARS` (60,000) on
any trace. The renderers read their row and name limits from :func:`limits`; :func:`fit` renders at the
generous level first and tightens the limits level by level (fewer table rows, shorter full names) until the
text fits. If even the tightest level is too long, whole blocks are replaced, largest first, by one line
saying where their data is (the JSON output has everything), and as a last resort the text is cut at a
line, with any open ``<details>`` or code fence closed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from .escape import md

MAX_CHARS = 60_000


@dataclass(frozen=True)
class Limits:
    """How much of each table a markdown renderer shows."""

    top_rows: int = 10  # rows shown before the rest is folded into <details>
    max_rows: int = 50  # rows of any one table; the rest is counted and left to the JSON output
    full_name_chars: int = 2_000  # a name in a "Full names" list is cut beyond this many characters
    rank_rows: int = 256  # rows of the per-rank table of a run


LEVELS = (
    Limits(),
    Limits(max_rows=25, full_name_chars=600, rank_rows=64),
    Limits(max_rows=10, full_name_chars=200, rank_rows=16),
)
_CURRENT: ContextVar[Limits] = ContextVar("tracelens_markdown_limits", default=LEVELS[0])


def limits() -> Limits:
    """The limits the renderer in progress works under."""
    return _CURRENT.get()


@contextmanager
def using(level: Limits) -> Iterator[None]:
    token = _CURRENT.set(level)
    try:
        yield
    finally:
        _CURRENT.reset(token)


Block = tuple[str, list[str]]  # (what the block shows, e.g. a section title; its lines)


def fit(render_blocks: Callable[[], list[Block]], max_chars: int = MAX_CHARS, keep: int = 1) -> str:
    """The joined text of ``render_blocks()`` at the first level that fits in ``max_chars``.

    ``render_blocks`` returns the text as blocks (a headline, then one per section); the first ``keep``
    blocks are never dropped.
    """
    for level in LEVELS:
        with using(level):
            blocks = render_blocks()
        text = _join(blocks)
        if len(text) <= max_chars:
            return text
    sizes = [len(_join([b])) for b in blocks]
    dropped = set()
    for i in sorted(range(keep, len(blocks)), key=lambda i: -sizes[i]):
        dropped.add(i)
        blocks[i] = (
            blocks[i][0],
            [
                "",
                f"**{md(blocks[i][0])}:** left out to keep this comment under "
                f"{max_chars:,} characters ({sizes[i]:,} characters); it is in the JSON "
                "output (`--format json`).",
            ],
        )
        text = _join(blocks)
        if len(text) <= max_chars:
            return text
    return cut(text, max_chars)


def _join(blocks: list[Block]) -> str:
    return "\n".join(line for _, lines in blocks for line in lines) + "\n"


def cut(text: str, max_chars: int) -> str:
    """``text`` cut at a line so that, with a closing note, it fits in ``max_chars``; closes what it left open."""
    note = (
        f"\n\n… cut here to stay under {max_chars:,} characters; the JSON output (`--format json`) has "
        "everything.\n"
    )
    kept = text[:max_chars].split("\n")[:-1]
    while True:
        result = "\n".join(kept + _closing(kept)) + note
        if len(result) <= max_chars or not kept:
            return result
        kept = kept[: -max(1, len(kept) // 20)]


def _closing(lines: list[str]) -> list[str]:
    """What closes the code fence and ``<details>`` blocks ``lines`` leaves open."""
    in_fence = False
    open_details = 0
    for line in lines:
        if line.startswith("```"):
            in_fence = not in_fence
        elif not in_fence:
            open_details += line.count("<details>") - line.count("</details>")
    return (["```"] if in_fence else []) + ["", "</details>"] * max(open_details, 0)
