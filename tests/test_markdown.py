"""Markdown report: escaping of traced names, table shape, folding, the plot beside the report."""

from __future__ import annotations

import re
from pathlib import Path

from tracelens.analyses import analyze
from tracelens.report.escape import html_text, md, shorten
from tracelens.report.markdown import figures, plot_path_for, render
from tracelens.trace import Trace

HOSTILE = "a|b</details><script>x</script>"
# Longer than the 60-character table limit, so it is shortened and listed in full under the table.
LONG_HOSTILE = "void gemm<float, `tick`*bold*_x_ [link](http://e) ~~s~~ " + "x" * 40 + "|</summary>\n<b>"
ALLOWED_TAGS = {"<details>", "</details>", "</summary>", "<wbr>"}  # <wbr>: escape.unlinked


def hostile_trace() -> Trace:
    rows = []
    for i in range(3):
        base = i * 1_000_000
        rows += [
            {
                "kind": "step",
                "name": f"ProfilerStep#{i}",
                "start_ns": base,
                "end_ns": base + 1_000_000,
                "pid": 1,
                "tid": 1,
                "step": i,
            },
            {
                "kind": "annotation",
                "name": HOSTILE,
                "start_ns": base,
                "end_ns": base + 400_000,
                "pid": 1,
                "tid": 1,
            },
            {
                "kind": "cpu_op",
                "name": LONG_HOSTILE,
                "start_ns": base + 400_000,
                "end_ns": base + 450_000,
                "pid": 1,
                "tid": 1,
            },
            {
                "kind": "runtime",
                "name": "cudaLaunchKernel",
                "start_ns": base + 450_000,
                "end_ns": base + 460_000,
                "pid": 1,
                "tid": 1,
                "correlation_id": 10 + i,
            },
            {
                "kind": "kernel",
                "name": HOSTILE,
                "start_ns": base + 470_000,
                "end_ns": base + 700_000,
                "device": 0,
                "stream": 7,
                "correlation_id": 10 + i,
            },
            {
                "kind": "runtime",
                "name": "cudaLaunchKernel",
                "start_ns": base + 460_000,
                "end_ns": base + 465_000,
                "pid": 1,
                "tid": 1,
                "correlation_id": 20 + i,
            },
            {
                "kind": "kernel",
                "name": LONG_HOSTILE,
                "start_ns": base + 700_000,
                "end_ns": base + 900_000,
                "device": 0,
                "stream": 7,
                "correlation_id": 20 + i,
            },
        ]
    return Trace.from_rows(rows)


def unescaped_pipes(line: str) -> int:
    return len(re.findall(r"(?<!\\)\|", line))


def table_blocks(text: str) -> list[list[str]]:
    blocks: list[list[str]] = []
    current: list[str] = []
    for line in text.split("\n"):
        if line.startswith("|"):
            current.append(line)
        elif current:
            blocks.append(current)
            current = []
    if current:
        blocks.append(current)
    return blocks


def assert_tables_well_formed(text: str) -> int:
    """Every table: a delimiter row second, and every row with its header's column count."""
    blocks = table_blocks(text)
    for block in blocks:
        assert len(block) >= 2, block
        assert re.fullmatch(r"\|( *:?-{3,}:? *\|)+", block[1]), block[1]
        columns = unescaped_pipes(block[0])
        for row in block:
            assert unescaped_pipes(row) == columns, (block[0], row)
            assert row.endswith("|")
    return len(blocks)


def assert_details_balanced(text: str) -> None:
    depth = 0
    for tag in re.findall(r"</?details>", text):
        depth += 1 if tag == "<details>" else -1
        assert depth >= 0, "a </details> closes a block that was never opened"
    assert depth == 0


def assert_only_our_tags(text: str) -> None:
    """The only raw HTML in the report is the report's own <details>/<summary> folding."""
    for tag in re.findall(r"<[^>\n]*>", text):
        assert tag in ALLOWED_TAGS or tag.startswith("<details><summary>") or tag == "<summary>", tag


def test_md_escapes_every_active_character() -> None:
    assert md(HOSTILE) == "a&#124;b&lt;/details&gt;&lt;script&gt;x&lt;/script&gt;"
    assert md("*a*_b_`c`[d](e)~f~\\") == "\\*a\\*\\_b\\_&#96;c&#96;\\[d\\](e)\\~f\\~\\\\"
    assert md("line1\nline2\r\n\tx") == "line1 line2 x"
    assert md("a & b") == "a &amp; b"
    # no @-mention in a PR comment: an empty element splits the text node GitHub's filter reads, and copies as nothing
    assert md("kernel@octocat") == "kernel@<wbr>octocat"
    assert html_text('x"<y>&') == "x&quot;&lt;y&gt;&amp;"


def test_shorten_keeps_head_and_tail() -> None:
    name = "a" * 50 + "MIDDLE" + "z" * 50
    short = shorten(name, 60)
    assert len(short) == 60
    assert short.startswith("a" * 39) and short.endswith("z" * 20) and "…" in short
    assert shorten("short", 60) == "short"


def test_hostile_names_are_escaped_everywhere(tmp_path: Path) -> None:
    doc = analyze(hostile_trace())
    text = render(doc, output=str(tmp_path / "r.md"), plots=False)
    assert "<script>" not in text and "</script>" not in text and "<b>" not in text
    assert "a&#124;b&lt;/details&gt;&lt;script&gt;x&lt;/script&gt;" in text
    assert assert_tables_well_formed(text) >= 3
    assert_details_balanced(text)
    assert_only_our_tags(text)
    # The long name is shortened in the kernel table and given in full (escaped) in a folded list.
    assert md(LONG_HOSTILE) in text
    full_list = text.split("<details><summary>Full names</summary>")[1].split("</details>")[0]
    assert f"1. {md(LONG_HOSTILE)}" in full_list


def test_hostile_names_in_diagnosis_and_unknown_sections() -> None:
    doc = analyze(hostile_trace(), sections=["devices", "kernels"])
    doc["diagnosis"] = {
        "primary": {
            "cause": "input_pipeline",
            "lost_ns": 500,
            "share": 0.5,
            "evidence": {"top_range": HOSTILE, "ranges": [HOSTILE, LONG_HOSTILE]},
            "fix": HOSTILE,
        },
        "causes": [
            {
                "cause": "input_pipeline",
                "lost_ns": 500,
                "share": 0.5,
                "evidence": [HOSTILE],
                "fix": [HOSTILE, "use `pin_memory`"],
            }
        ],
    }
    doc["future_section"] = {
        "names": [{"name": HOSTILE, "total_ns": 5}],
        "note": LONG_HOSTILE,
        "nested": {"deeper": [{HOSTILE: HOSTILE}]},
    }
    text = render(doc)
    assert "<script>" not in text
    assert_tables_well_formed(text)
    assert_details_balanced(text)
    assert_only_our_tags(text)


def test_tables_have_consistent_columns_on_every_section() -> None:
    text = render(analyze(hostile_trace()))
    assert assert_tables_well_formed(text) >= 3


def test_plot_rendered_as_a_figure_and_linked(tmp_path: Path) -> None:
    doc = analyze(hostile_trace(), sections=["devices"])
    # A hand-made timeline in the gaps section's documented shape: 2 buckets, busy 100% then 25%.
    doc["gaps"] = {
        "devices": [{"device": 0, "timeline": {"edges_ns": [0, 500, 1000], "utilization": [1.0, 0.25]}}]
    }
    out = tmp_path / "review.md"
    pngs = figures(doc, out)
    assert [(f.role, f.path) for f in pngs] == [("utilization", tmp_path / "review.utilization.png")]
    assert pngs[0].data[:8] == b"\x89PNG\r\n\x1a\n"
    text = render(doc, plots=True, figures=pngs)
    assert "![GPU utilization over time](review.utilization.png)" in text
    assert not list(tmp_path.iterdir())  # rendering writes no file: the CLI does


def test_no_plot_link_without_figures_or_when_disabled(tmp_path: Path) -> None:
    doc = analyze(hostile_trace())
    pngs = figures(doc, tmp_path / "review.md")
    text = render(doc, plots=False, figures=pngs)
    assert "utilization.png" not in text
    assert "```mermaid" not in text  # plots=False turns off the inline charts too
    assert "utilization.png" not in render(doc, plots=True)


def test_inline_charts_by_default(tmp_path: Path) -> None:
    doc = analyze(hostile_trace())
    text = render(doc)  # defaults: plots=True, no figures
    assert "utilization.png" not in text
    # The trace has GPU 0 busy part of the time, so the busy-over-time chart is drawn inline.
    assert "```mermaid" in text and "GPU busy over time (%)" in text


def test_plot_path_derived_from_report_name() -> None:
    assert plot_path_for("out/review.md") == Path("out/review.utilization.png")
    assert plot_path_for("report") == Path("report.utilization.png")
    assert plot_path_for("a.b.md") == Path("a.b.utilization.png")


def test_long_kernel_table_is_folded() -> None:
    # 13 distinct kernels: 10 shown, 3 folded into <details>.
    rows = [
        {
            "kind": "kernel",
            "name": f"k{i:02d}",
            "start_ns": i * 100,
            "end_ns": i * 100 + 50 + i,
            "device": 0,
            "stream": 1,
        }
        for i in range(13)
    ]
    text = render(analyze(Trace.from_rows(rows), sections=["devices", "kernels"]))
    kernel_part = text.split("## Top kernels")[1]
    assert "<details><summary>3 more kernels</summary>" in kernel_part
    shown = kernel_part.split("<details>")[0]
    # Sorted by total time: k12 (62 ns) first, k03 (53 ns) tenth, k02..k00 folded.
    assert "| 1 | k12 |" in shown and "| 10 | k03 |" in shown and "k02" not in shown
    assert_tables_well_formed(text)


# An escape sequence (clear screen, set the window title, bell) and bidirectional overrides in traced names.
CONTROL = "evil\x1b[2J\x1b]0;title\x07name\x9b"
BIDI = "tiny_ops\u202e REVERSED \u2067x\u2069\u200f"
_ACTIVE = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def test_control_and_bidi_characters_are_inert() -> None:
    """A markdown report or diff printed to a terminal (report without -o) wrote a kernel name's ESC sequences and bell
    as they were: the terminal cleared the screen and took the title; a right-to-left override (U+202E) showed the
    rest of its line or list item (the numbers after the name) reversed, on a terminal and on GitHub. Each becomes a
    space, as on the terminal summary; the readable rest of the name stays."""
    rows = [
        {"kind": "kernel", "name": CONTROL, "start_ns": 0, "end_ns": 100, "device": 0, "stream": 1},
        {"kind": "kernel", "name": BIDI, "start_ns": 200, "end_ns": 250, "device": 0, "stream": 1},
        {"kind": "cpu_op", "name": CONTROL, "start_ns": 0, "end_ns": 300, "pid": 1, "tid": 1},
        {"kind": "annotation", "name": BIDI, "start_ns": 0, "end_ns": 280, "pid": 1, "tid": 1},
    ]
    doc = analyze(Trace.from_rows(rows))
    text = render(doc, plots=False)
    assert "evil" in text and "REVERSED" in text
    assert not _ACTIVE.search(text), repr(_ACTIVE.findall(text))
    assert md(CONTROL) == "evil \\[2J \\]0;title name "
    assert html_text(BIDI) == "tiny_ops  REVERSED  x "
    from tracelens.report.escape import code, terminal

    assert code(CONTROL) == "` evil [2J ]0;title name  `"  # padded: a trailing space stays in the span
    assert terminal(BIDI) == "tiny_ops  REVERSED  x "


def test_shorten_cuts_between_characters_as_shown() -> None:
    """The head…tail cut fell inside a character as shown: an accent (a combining mark) whose letter was cut away
    then sat on the ellipsis ("…́"), a zero-width joiner dangled at the end of the head. The cut moves to the
    nearest boundary: the kept parts start and end on whole characters, within the limit."""
    import unicodedata

    joiners = ("\u200d", "\ufe0f")
    for name in (
        "a" * 40 + "e\u0301\u0308" * 30,
        "👩\u200d👩\u200d👧\u200d👦" * 20,
        "x" * 39 + "\u200d" * 3 + "y" * 40,
    ):
        short = shorten(name, 60)
        assert len(short) <= 60 and "…" in short, name
        head, tail = short.split("…", 1)
        assert not unicodedata.combining(tail[0]) and tail[0] not in joiners, repr(short)
        assert head[-1] != "\u200d", repr(short)
        assert name.startswith(head) and name.endswith(tail)
