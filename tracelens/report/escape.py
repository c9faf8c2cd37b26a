"""Make strings from the traced program safe in markdown tables and HTML.

Kernel, op, range and file names come from the program being profiled and can hold anything:
``a|b</details><script>x</script>`` must neither add a table column, close a ``<details>`` block early,
nor inject a tag. Two contexts:

* :func:`md` — inline markdown text, including GitHub table cells: HTML-special characters become
  entities, ``|`` becomes ``&#124;`` (a ``\\|`` would be undone inside code spans), markdown
  punctuation that could start emphasis, code, links or strikethrough is backslash-escaped,
  newlines/tabs become spaces so a row stays on one line, and ``$`` is backslash-escaped (GitHub reads
  ``$...$`` as math). What GitHub links by itself in a comment's text (:func:`unlinked`) gets an empty ``<wbr>``
  element: ``@user`` would notify the user, ``#123`` or ``owner/repo#1`` would link (and mark) an issue, ``:x:``
  (also in ``at::x::y``) would be an emoji, ``https://`` or ``www.`` a link.
* :func:`code` — a code span: nothing inside is escaped (GitHub shows a backslash or an entity in a code
  span literally); the fence is one backtick longer than the longest run of backticks in the text, and in a
  table cell ``|`` becomes ``\\|`` (GFM splits cells before it parses code spans, and drops that backslash).
* :func:`md_line_start` — :func:`md` for text that starts a block (a list item's content): a leading ``#``,
  ``>``, ``-``, ``+``, ``=`` or ``1.`` would otherwise make it a heading, a quote or a nested list.
* :func:`html_text` — text inside raw HTML (``<summary>``, attributes): :func:`html.escape` with quotes, and
  :func:`unlinked` as in :func:`md`.
* :func:`link` — a markdown link or image: the text escaped as by :func:`md`, the destination percent-encoded.

Long names are shortened by :func:`shorten` (head ... tail, so template and kernel suffixes stay
visible); the report lists the full names in a folded ``<details>`` block under each table that
shortened one (see ``docs/json.md`` / the report's "Full names" lists).
"""

from __future__ import annotations

import html
import re

from .. import units

# Characters that start markdown constructs inline. `#`, `+`, `-` and digits only matter at line
# start, which a cell or list item we write never is (we always write a prefix before the name).
_MD_PUNCT = re.compile(r"([\\*_\[\]~!$])")
_WHITESPACE = units.WHITESPACE
# C0 and C1 control characters, and the bidirectional formatting characters (marks, embeddings, overrides, isolates):
# an escape sequence in a name would act on the terminal a report is printed to (clear it, set its title), and a
# right-to-left override shows the rest of its line (the numbers after the name) reversed. Each run becomes a space.
_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]+")


def _inert(text: object) -> str:
    """``text`` on one line (line breaks and tabs: spaces) with no control or bidirectional formatting character."""
    s = "" if text is None else str(text)
    return _CONTROLS.sub(" ", _WHITESPACE.sub(" ", s))


ELLIPSIS = units.ELLIPSIS
DEFAULT_MAX = 60


# Where GitHub finds, in a comment's text outside code, a reference it links by itself (its documentation's
# "autolinked references and URLs"): an issue or pull request ("#123", "owner/repo#123", "GH-123"), an emoji
# shortcode (":tada:": any name between colons, without a word boundary, so "at::x::y" shows "at:❌:y"), a URL
# ("https://", "www."; an e-mail address breaks at its "@"), and a commit SHA (a word of 7 to 40 hex digits,
# handled by _HEX_WORD). An empty <wbr> element at each of these positions breaks the pattern and shows nothing:
# GitHub's filters read each HTML text node alone (and cmark-gfm's autolinks each text node), and an element
# splits the text there; <wbr> is on GitHub's allowed list of tags and has no text, so a name copied from the
# rendered comment is the name (a zero-width space, used before, came along: a copied kernel name then matched
# nothing in the code or in a grep). Backslash escapes and entities do not do it: they are gone before the filters
# run.
_REFERENCE = re.compile(
    r"(?<=#)(?=\d)"  # #123, owner/repo#123
    r"|(?<=GH-)(?=\d)"  # GH-123
    r"|(?<=:)(?=[\w+-]+:)"  # :emoji:
    r"|(?<=:)(?=//)"  # scheme://
    r"|(?<=www)(?=\.)",  # www.
    re.IGNORECASE,
)
_HEX_WORD = re.compile(r"(?<![0-9A-Za-z])[0-9a-fA-F]{7,40}(?![0-9A-Za-z])")
# Where unlinked() splits the text, until the escaping is done (then "<wbr>"): NUL, which _inert has made a space
# in every name, so it marks only these positions.
_SPLIT = "\x00"
_BREAK = "<wbr>"


def _split(text: str) -> str:
    """``text`` (made :func:`_inert`) with :data:`_SPLIT` where GitHub would otherwise make a link, mention or emoji
    of it."""
    s = _REFERENCE.sub(_SPLIT, text)
    # A hex word in runs of 6: no 7-digit piece left to match a commit.
    s = _HEX_WORD.sub(lambda m: _SPLIT.join(m.group(0)[i : i + 6] for i in range(0, len(m.group(0)), 6)), s)
    # "@": a name like "kernel@user" mentions (notifies) a GitHub user, "@org/team" a whole team.
    return s.replace("@", "@" + _SPLIT)


def unlinked(text: object) -> str:
    """``text`` (on one line, :func:`_inert`) with an empty ``<wbr>`` where GitHub would otherwise make a link,
    mention or emoji of it (a reviewer sees, and copies, the literal name; a pull-request comment pings and links no
    one). The rest of the text is not escaped: for raw HTML or markdown, :func:`html_text` and :func:`md`."""
    return _split(_inert(text)).replace(_SPLIT, _BREAK)


def md(text: object) -> str:
    """Escape ``text`` for inline markdown and GitHub table cells (one line, no raw HTML)."""
    s = _split(_inert(text))
    s = html.escape(s, quote=False)  # & < > first, so the entities below are not re-escaped
    s = _MD_PUNCT.sub(r"\\\1", s)
    return s.replace("|", "&#124;").replace("`", "&#96;").replace(_SPLIT, _BREAK)


_BLOCK_START = re.compile(r"^(\s*)([#>+=-]|\d+(?=[.)]))")


def md_line_start(text: object) -> str:
    """:func:`md` for text that begins a line's block content (after ``1. `` or ``- ``)."""
    s = md(text)
    # A digit run before "." or ")" is escaped by escaping its terminator; the others by a backslash.
    s = re.sub(r"^(\s*)(\d+)([.)])", r"\1\2\\\3", s)
    s = re.sub(r"^(\s*)([#>+=-])", r"\1\\\2", s)
    # Leading spaces: four would start an indented code block inside the item.
    return re.sub(r"^ +", lambda m: "&#32;" * len(m.group(0)), s)


def code(text: object, *, in_table: bool = False) -> str:
    """``text`` as an inline code span that GitHub shows character for character (one line)."""
    s = _inert(text)
    if in_table:
        s = s.replace("|", "\\|")
    longest = max((len(run) for run in re.findall(r"`+", s)), default=0)
    fence = "`" * (longest + 1)
    # A space on both sides keeps a leading/trailing backtick off the fence (CommonMark strips one of each).
    pad = " " if s.startswith(("`", " ")) or s.endswith(("`", " ")) else ""
    return f"{fence}{pad}{s}{pad}{fence}" if s else ""


def link(text: object, destination: str, *, image: bool = False) -> str:
    """A markdown link (or ``image``) whose text shows ``text`` as written and whose destination is
    percent-encoded (spaces, parentheses and ``<>`` included, so it cannot end the link early)."""
    import os
    from urllib.parse import quote

    # os.fsencode: a file name whose bytes are not UTF-8 is encoded as those bytes (%FF), which name the file
    return f"{'!' if image else ''}[{md(text)}]({quote(os.fsencode(destination), safe='/:#?&=%')})"


def html_text(text: object) -> str:
    """Escape ``text`` for raw HTML content (``<summary>``; its links broken by ``<wbr>`` as in :func:`md`)."""
    return html.escape(_split(_inert(text)), quote=True).replace(_SPLIT, _BREAK)


def shorten(text: object, limit: int = DEFAULT_MAX) -> str:
    """``text`` cut to at most ``limit`` characters as head…tail (unchanged when it fits)."""
    return units.shorten(text, limit)


def is_shortened(text: object, limit: int = DEFAULT_MAX) -> bool:
    s = "" if text is None else _WHITESPACE.sub(" ", str(text))
    return len(s) > limit


def terminal(text: object, limit: int | None = None) -> str:
    """Plain text for the terminal: control characters removed, optionally shortened.

    Rich markup is never interpreted (callers print with ``markup=False`` or use Text objects), but
    escape sequences in a name could still move the cursor, and a right-to-left override reverse the rest of the
    line: C0/C1 controls and bidirectional formatting characters become spaces (:func:`_inert`).
    """
    s = "" if text is None else _CONTROLS.sub(" ", str(text))
    return shorten(s, limit) if limit else s
