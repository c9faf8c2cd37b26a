"""Short names for kernels and ops that stay distinct: what a table row shows when the whole name is too long.

A demangled C++ kernel name is mostly noise for a reader: the return type, the namespaces and the parameter
list repeat across rows, while what tells two kernels apart (a tile shape, a template argument) sits in the
middle, where a head…tail cut removes it. :func:`distinct_short_names` keeps the function name (namespaces,
``void`` and the parameter list dropped; template arguments kept with their namespaces dropped) and, where two
names would still print alike, the part where they differ.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence

ELLIPSIS = "…"
# A namespace or class qualifier: "at::native::", "(anonymous namespace)::".
_QUALIFIER = re.compile(r"(?:\(anonymous namespace\)|[A-Za-z_]\w*)::")
_WHITESPACE = re.compile(r"\s+")
# Token boundaries: a differing part is widened to whole tokens (tile shapes, template arguments).
_BOUNDARY = set("_<>,:() []{}#")


def _strip_parameters(name: str) -> str:
    """``name`` without its trailing top-level parameter list (``f<T>(int, float*)`` -> ``f<T>``)."""
    if not name.endswith(")"):
        return name
    depth = 0
    for i in range(len(name) - 1, -1, -1):  # a loop over one name's characters
        ch = name[i]
        if ch in ")>]}":
            depth += 1
        elif ch in "(<[{":
            depth -= 1
            if depth == 0:
                return name[:i].rstrip() if ch == "(" and i > 0 else name
    return name


def simplify(name: str) -> str:
    """The readable core of a kernel or op name: no return type, no parameter list, no namespaces.

    ``void cudnn::ampere::scudnn_128x32_dgrad_small_nn_v1(cudnn::conv::ConvParams)`` ->
    ``scudnn_128x32_dgrad_small_nn_v1``; a name that is no C++ signature comes back with only its
    whitespace collapsed.
    """
    s = _WHITESPACE.sub(" ", str(name)).strip()
    if s.startswith("void "):
        s = s[5:]
    s = _strip_parameters(s)
    s = _QUALIFIER.sub("", s)
    s = s.replace(" >", ">")
    return s or _WHITESPACE.sub(" ", str(name)).strip()


def _cut(text: str, width: int) -> str:
    """``text`` kept from its start, with an ellipsis, in ``width`` characters."""
    return text if len(text) <= width else text[: max(width - 1, 0)] + ELLIPSIS


def _token_start(s: str, i: int) -> int:
    while i > 0 and s[i - 1] not in _BOUNDARY:
        i -= 1
    return i


def _token_end(s: str, i: int) -> int:
    while i < len(s) and s[i] not in _BOUNDARY:
        i += 1
    return i


HEAD = 12  # characters of the name's start kept before a differing part shown from its middle


def _lcp(a: str, b: str) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def _neighbour_overlap(texts: list[str]) -> list[int]:
    """For each text, its longest common prefix with any other (the largest is with a sorted neighbour)."""
    order = sorted(range(len(texts)), key=texts.__getitem__)
    best = [0] * len(texts)
    for a, b in zip(order, order[1:], strict=False):  # a loop over the long names of one table
        n = _lcp(texts[a], texts[b])
        best[a], best[b] = max(best[a], n), max(best[b], n)
    return best


def _with_difference(s: str, prefix: int, suffix: int, width: int) -> str:
    """``s`` in ``width`` characters: its start, an ellipsis and the tokens that differ from the names most
    like it (``s[prefix:len(s) - suffix]`` widened to whole tokens)."""
    start = _token_start(s, min(prefix, len(s)))
    end = _token_end(s, max(len(s) - suffix, start))
    if len(s) - end <= 1:  # only a closing bracket left: keep it
        end = len(s)
    if end <= start or start <= HEAD:  # the difference starts near the beginning: the plain cut shows it
        return _cut(s, width)
    middle = s[start:end]
    tail = ELLIPSIS if end < len(s) else ""
    if start + len(middle) + len(tail) <= width:
        return s[:start] + middle + tail
    head = s[: max(width - len(middle) - len(tail) - 1, HEAD)]
    return (
        _cut(head + ELLIPSIS + middle + tail, width)
        if len(head + middle + tail) + 1 > width
        else head + ELLIPSIS + middle + tail
    )


_WORD = re.compile(r"[A-Za-z0-9]+")
_PARTS = re.compile(r"[A-Za-z0-9]+|[^A-Za-z0-9]+")  # words and the separators between them
STEM_WORDS = 3  # a family's shared leading words kept before the ellipsis: "sm80_xmma_gemm"


def _without_shared_words(texts: list[str]) -> dict[str, str]:
    """Names of one family (library kernels with the same first word, no template arguments), each as its
    first shared words, an ellipsis and only the words not every member has: the tile shape, layout,
    split-k of ``sm80_xmma_gemm_…_tn_n_tilesize64x256x8_stage3_warpsize1x4x1_…_kernel__5x_cublas`` ->
    ``sm80_xmma_gemm…tn_tilesize64x256x8_warpsize1x4x1``."""
    shared = set.intersection(*(set(_WORD.findall(t)) for t in texts))
    out = {}
    for t in texts:
        parts = _PARTS.findall(t)
        stem, words = 0, 0
        for i, part in enumerate(parts):  # a loop over one name's words
            if part[0].isalnum():
                if part not in shared or words == STEM_WORDS:
                    break
                words += 1
            stem = i + 1
        kept = [
            part + (parts[i + 1] if i + 1 < len(parts) and not parts[i + 1][0].isalnum() else "")
            for i, part in enumerate(parts)
            if i >= stem and part[0].isalnum() and part not in shared
        ]
        body = "".join(kept).rstrip("_-.:, ")
        head = "".join(parts[:stem]).rstrip("_-.:, ")
        out[t] = f"{head}{ELLIPSIS}{body}" if body and head else t
    return out


def _fit_family_form(form: str, width: int) -> str:
    """A family form (head…words) in ``width``: whole words from the start of the differing words (the tile
    shape), then whole words from their end (a suffix such as ``split_k``), an ellipsis between."""
    if len(form) <= width:
        return form
    head, _, body = form.partition(ELLIPSIS)
    room = width - len(head) - 2  # two ellipses
    words = re.findall(r"[A-Za-z0-9]+[^A-Za-z0-9]*", body)
    front: list[str] = []
    for word in words:  # a loop over one name's words
        if len("".join(front)) + len(word) > room:
            break
        front.append(word)
    back: list[str] = []
    for word in reversed(words[len(front) :]):
        if len("".join(front + back)) + len(word) > room:
            break
        back.insert(0, word)
    if not front:
        return _cut(form, width)
    shown = "".join(front).rstrip("_-.:, ") + ELLIPSIS + "".join(back)
    return f"{head}{ELLIPSIS}{shown}"


def _library_families(texts: list[str]) -> list[list[str]]:
    """Long names without template arguments grouped by first word, groups of two or more."""
    families: dict[str, list[str]] = defaultdict(list)
    for t in texts:
        words = _WORD.findall(t)
        if words and "<" not in t and "(" not in t:
            families[words[0]].append(t)
    return [f for f in families.values() if len(f) > 1]


def distinct_short_names(names: Sequence[str], width: int) -> list[str]:
    """A short form of each name, at most ``width`` characters, distinct for distinct names.

    A name longer than ``width`` is :func:`simplify`-ed (names alike once simplified keep their whole
    text). One still longer than ``width`` keeps its start, or, when it differs from the names most like it
    only past that start, its start and the tokens where it differs (``fft2d_r2c_32x32<flo…0u, false>``);
    library kernels of one family without template arguments show their first words and the words that not
    all of them share (``sm80_xmma_gemm…tn_tilesize64x256x8_warpsize1x4x1``). Any left alike after that get a
    ``~N`` suffix, so two rows never look the same. ``width`` below 8 is taken as 8.
    """
    width = max(int(width), 8)
    full = [str(n) for n in names]
    distinct = list(dict.fromkeys(full))  # first-seen order
    # a name that fits (its runs of white space as one space, as it is shown) is shown as it is ("aten::mm"
    # keeps its namespace)
    shown = {n: _WHITESPACE.sub(" ", n).strip() for n in distinct}
    simple = {n: (shown[n] if len(shown[n]) <= width else simplify(n)) for n in distinct}
    counts: dict[str, int] = defaultdict(int)
    for text in simple.values():
        counts[text] += 1
    for n in distinct:  # alike once simplified (they differ in namespaces or parameters): the whole text
        if counts[simple[n]] > 1:
            simple[n] = shown[n]
    short = {n: simple[n] for n in distinct}
    long = [n for n in distinct if len(simple[n]) > width]
    texts = [simple[n] for n in long]
    prefixes = _neighbour_overlap(texts)
    suffixes = _neighbour_overlap([t[::-1] for t in texts])
    for n, text, p, q in zip(long, texts, prefixes, suffixes, strict=True):
        q = min(q, len(text) - p)
        short[n] = _cut(text, width) if len(text) - q <= width - 1 else _with_difference(text, p, q, width)
    # Library kernels of one family (cuBLAS xmma, cuDNN): the words that differ, wherever they are, when that
    # keeps the family's names apart.
    owner = {simple[n]: n for n in long}
    for family in _library_families(texts):
        forms = {t: _fit_family_form(f, width) for t, f in _without_shared_words(family).items()}
        if len(set(forms.values())) == len(forms):
            for t, form in forms.items():
                short[owner[t]] = form
    # Whatever is still alike (or equal to another name's short form): numbered, so rows stay distinct.
    taken: dict[str, str] = {}
    seen: dict[str, int] = defaultdict(int)
    for n in distinct:
        s = short[n]
        if s in taken and taken[s] != n:
            candidate = s
            while candidate in taken:
                seen[s] += 1
                tag = f"~{seen[s] + 1}"
                candidate = _cut(s, width - len(tag)) + tag
            short[n] = s = candidate
        taken[s] = n
    return [short[n] for n in full]
