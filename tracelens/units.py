"""Human units and plain-text helpers for sentences (JSON keeps raw integers).

Used by the renderers (``report/``) and by the diagnosis causes' sentences (``analyses/diagnosis/``), so it
imports nothing of tracelens: any layer may use it.
"""

from __future__ import annotations

import re

WHITESPACE = re.compile(r"[\r\n\t\v\f]+")  # line breaks and tabs: a name must stay on one line
ELLIPSIS = "…"


def shorten(text: object, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters as head…tail (unchanged when it fits)."""
    s = "" if text is None else WHITESPACE.sub(" ", str(text))
    if len(s) <= limit:
        return s
    keep = max(limit - 1, 2)
    head = (keep * 2) // 3
    tail = len(s) - (keep - head)
    # Cut between characters as shown: not before an accent (a combining mark) or a joiner, which would sit on the
    # ellipsis, nor after a zero-width joiner (half an emoji sequence): the head ends earlier, the tail starts later.
    while head > 1 and (_joins_previous(s[head]) or s[head - 1] == "\u200d"):
        head -= 1
    while tail < len(s) - 1 and (_joins_previous(s[tail]) or s[tail - 1] == "\u200d"):
        tail += 1
    return s[:head] + ELLIPSIS + s[tail:]


def _joins_previous(char: str) -> bool:
    """A combining mark, a zero-width joiner or a variation selector: shown as part of the character before it."""
    import unicodedata

    return (
        bool(unicodedata.combining(char))
        or char in "\u200d\ufe0e\ufe0f"
        or "\U000e0100" <= char <= "\U000e01ef"
    )


def signed(value: float, digits: int = 1) -> str:
    """``value`` with its sign at ``digits`` decimals, "±" where it rounds to zero there (no "-0.0" beside two
    figures that print alike)."""
    text = f"{abs(value):.{digits}f}"
    if float(text) == 0:
        return "±" + text
    return ("-" if value < 0 else "+") + text


def fmt_ns(ns: float | int | None) -> str:
    if ns is None:
        return "-"
    ns = float(ns)
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if abs(ns) >= scale:
            return f"{ns / scale:.3g} {unit}" if abs(ns) < 100 * scale else f"{ns / scale:.0f} {unit}"
    return f"{ns:.0f} ns"


def fmt_bytes(n: float | int | None) -> str:
    if n is None:
        return "-"
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    """``count`` and ``noun`` in agreement: "1 thread", "2 threads", "1,024 GPUs" (``plural_form`` when the
    plural is not noun + "s")."""
    return f"{count:,} {noun if count == 1 else (plural_form or noun + 's')}"


def fmt_pct(fraction: float | None) -> str:
    return "-" if fraction is None else f"{100 * fraction:.1f}%"


# Key-name conventions of the analysis document (docs/json.md): *_ns nanoseconds, *bytes* bytes,
# fractions 0-1 under these names. Renderers use them to format values of sections they have no
# dedicated table for.
FRACTION_KEYS = ("utilization", "share", "fraction", "occupancy", "ratio", "efficiency")


def fmt_auto(key: str, value: object) -> str:
    """Format a JSON value for humans, choosing the unit from its key name (plain text, not escaped)."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        k = key.lower()
        if k.endswith("_ns") or k == "ns":
            return fmt_ns(value)
        if "bandwidth" in k or k.endswith("bytes_per_s"):
            return f"{fmt_bytes(value)}/s"
        if "bytes" in k:
            return fmt_bytes(value)
        if isinstance(value, float) and any(f in k for f in FRACTION_KEYS) and -1.0 <= value <= 1.0:
            return fmt_pct(value)
        if isinstance(value, int):
            return f"{value:,}"
        return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"
    return str(value)
