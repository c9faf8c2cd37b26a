"""The markdown report and diff as GitHub shows them: rendered by a CommonMark + GFM-tables parser
(markdown-it-py), then checked on the rendered text, not on the markdown source.

- Names from the traced program (``_ * | < > ` [ ] # -``) appear in the rendered text exactly as written, and
  never as HTML: ``<script>`` arrives HTML-escaped.
- Code spans (cause names) hold the name itself: no backslash or entity inside (GitHub shows them literally).
- Every table row splits into its header's cell count, as GFM splits it; every source table is a table.
- Nothing a name holds becomes a link, a mention, an emoji or math on GitHub: GitHub turns text outside code into
  mentions (``@user``, ``@org/team``), issue and commit references (``#123``, ``GH-1``, ``owner/repo#1``, a 7-40
  digit hex word), emoji (``:tada:``, also ``::x::`` in a C++ name) and URLs (``https://``, ``www.``, e-mail),
  and ``$...$`` into math. Checked with those patterns (GitHub's filters run on the HTML's text, skipping code)
  on every text run the rendered report shows outside code; ``$`` must reach the parser escaped.
- A report, and a diff, stay under 60,000 characters (GitHub refuses comments over 65,536), proved on a
  synthetic 5,000-step Kineto trace written here.
"""

from __future__ import annotations

import gzip
import html
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from markdown_it import MarkdownIt
from markdown_it.rules_block.table import escapedSplit

from tests.conftest import FIXTURES, shared_params
from tracelens.analyses import analyze
from tracelens.cli import main
from tracelens.diff import compare
from tracelens.report.budget import MAX_CHARS
from tracelens.report.diff_renderer import render_markdown as render_diff
from tracelens.report.markdown import render
from tracelens.report.units import fmt_ns
from tracelens.trace import Trace

GFM = MarkdownIt("commonmark").enable(["table", "strikethrough"])
# The same parser with escapes kept as their own tokens (text_join merges them into the text): where "$" came
# from "\\$" (no math) and where it came unescaped (GitHub's math).
GFM_ESCAPES = MarkdownIt("commonmark").enable(["table", "strikethrough"]).disable("text_join")

# What GitHub makes of text outside code (its mention, reference, emoji and autolink filters, and cmark-gfm's
# autolink extension), written from GitHub's documentation of autolinked references; broader, not narrower.
GITHUB_AUTO = {
    "mention": re.compile(r"@[A-Za-z0-9]"),
    "issue": re.compile(r"#\d|\bGH-\d", re.IGNORECASE),
    "commit": re.compile(r"(?<![0-9A-Za-z])[0-9a-fA-F]{7,40}(?![0-9A-Za-z])"),
    "emoji": re.compile(r":[\w+-]+:"),
    "url": re.compile(r"://|(?<![0-9A-Za-z])www\.", re.IGNORECASE),
}

ALL_TRACES = (
    shared_params("nsys", "*.sqlite")
    + shared_params("pytorch", "*.json.gz")
    + shared_params("tf", "*.xplane.pb")
)
FIXTURE_TRACES = [
    pytest.param(p, id=p.name)
    for p in sorted(
        [
            *FIXTURES.glob("*.json.gz"),
            *(FIXTURES / "gpu").glob("*.json.gz"),
            *(FIXTURES / "kineto").glob("*.json"),
        ]
    )
]

# Names that exercise every context: emphasis, code, table pipes, HTML, a list marker or heading at the start
# of a "Full names" item, and lengths over the 60-character table limit.
NASTY = [
    "my_kernel*x*|<script>alert(1)</script>",
    "tick`s`kernel__with``two",
    "# heading_like " + "y" * 60,
    "- list_like [link](http://e.x) ~~s~~ " + "z" * 40,
    "1. numbered <b>bold</b> & co " + "w" * 50,
]
# Names GitHub would otherwise turn into pings, references, emoji, links or math.
GITHUB_NAMES = [
    "@octocat_kernel ping @github/security-team",
    "fix #123 GH-45 owner/repo#7 1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b " + "q" * 30,
    ":tada: kernel<at::x::y>{lambda()#1} :+1:",
    "https://evil.example/x www.evil.example mail user@example.com",
    "sum $x^2$ and $$y$$ " + "m" * 50,
]


def rendered(text: str) -> dict[str, Any]:
    """Parse ``text`` as GitHub would and collect what a reader sees."""
    tokens = GFM.parse(text)
    plain: list[str] = []
    codes: list[str] = []
    tables = 0
    lines = text.split("\n")
    header_cells = 0
    for tok in tokens:
        if tok.type == "table_open":
            tables += 1
            header_cells = len(_cells(lines[tok.map[0]]))
        if tok.type == "tr_open":  # each row, as GFM splits it, has the header's cell count
            assert len(_cells(lines[tok.map[0]])) == header_cells, (lines[tok.map[0]], header_cells)
            plain.append("\n")
        if tok.type == "inline":
            for child in tok.children or []:
                if child.type in ("text", "text_special"):
                    plain.append(child.content)
                elif child.type == "code_inline":
                    codes.append(child.content)
                    plain.append(child.content)
                elif child.type in ("softbreak", "hardbreak"):
                    plain.append(" ")
            plain.append("\n")
    source_tables = sum(
        1
        for i, line in enumerate(lines)
        if line.startswith("|") and (i == 0 or not lines[i - 1].startswith("|"))
    )
    assert tables == source_tables, "a table in the source does not render as a table"
    return {
        "text": "".join(plain),  # as copied from the page: raw HTML (<wbr>) adds no text
        "codes": codes,
        "html": GFM.render(text),
        "tables": tables,
    }


def _cells(line: str) -> list[str]:
    """A table row split into cells the way GFM does (escaped pipes stay in the cell)."""
    cells = escapedSplit(line.strip())
    if cells and cells[0] == "":
        cells = cells[1:]
    if cells and cells[-1].strip() == "":
        cells = cells[:-1]
    return cells


def auto_references(text: str) -> list[str]:
    """What GitHub would turn into a mention, reference, emoji, link or math in ``text``: each text run outside
    code (GitHub's filters skip code and read each HTML text node), and each ``$`` that reaches the text
    unescaped."""
    found: list[str] = []
    for tok in GFM_ESCAPES.parse(text):
        if tok.type != "inline":
            continue
        runs, run = [], ""
        for child in tok.children or []:
            if child.type in ("text", "text_special"):
                run += child.content
                if child.type == "text" and "$" in child.content:
                    found.append(f"math: {child.content!r}")
            else:  # code, emphasis, a break: another text node
                runs.append(run)
                run = ""
        runs.append(run)
        for r in runs:
            found.extend(
                f"{kind}: {m.group(0)!r} in {r!r}" for kind, p in GITHUB_AUTO.items() for m in p.finditer(r)
            )
    return found


def check_github_view(text: str) -> dict[str, Any]:
    """The checks every report and diff passes."""
    assert len(text) <= MAX_CHARS, len(text)
    assert auto_references(text) == []
    view = rendered(text)
    assert "<script" not in view["html"].lower()
    tags = set(re.findall(r"</?([a-zA-Z][a-zA-Z0-9]*)", view["html"]))
    assert tags <= {
        "h1",
        "h2",
        "h3",
        "p",
        "ul",
        "ol",
        "li",
        "strong",
        "em",
        "code",
        "pre",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
        "details",
        "summary",
        "hr",
        "blockquote",
        "a",
        "img",
        "br",
        "wbr",
    }, tags
    for content in view["codes"]:  # code spans show their content literally: no escape may be inside
        assert not re.search(r"\\[_*|`\[\]~!]|&#\d+;|&(lt|gt|amp);", content), content
    return view


def nasty_trace() -> Trace:
    rows = []
    for i in range(3):
        base = i * 1_000_000
        rows.append(
            {
                "kind": "step",
                "name": f"ProfilerStep#{i}",
                "start_ns": base,
                "end_ns": base + 1_000_000,
                "pid": 1,
                "tid": 1,
                "step": i,
            }
        )
        rows.append(
            {
                "kind": "annotation",
                "name": NASTY[i],
                "start_ns": base,
                "end_ns": base + 300_000,
                "pid": 1,
                "tid": 1,
            }
        )
        for j, name in enumerate(NASTY):
            corr = 100 * i + j
            start = base + 300_000 + j * 100_000
            rows.append(
                {
                    "kind": "runtime",
                    "name": "cudaLaunchKernel",
                    "start_ns": start,
                    "end_ns": start + 5_000,
                    "pid": 1,
                    "tid": 1,
                    "correlation_id": corr,
                }
            )
            rows.append(
                {
                    "kind": "kernel",
                    "name": name,
                    "start_ns": start + 10_000,
                    "end_ns": start + 60_000 + j,
                    "device": 0,
                    "stream": 7,
                    "correlation_id": corr,
                }
            )
    return Trace.from_rows(rows)


def test_nasty_names_render_as_written() -> None:
    doc = analyze(nasty_trace())
    text = render(doc, plots=False)
    view = check_github_view(text)
    for name in NASTY:  # in a table cell, or (long) in full in the "Full names" list under it
        assert name in view["text"], name
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in view["html"]
    # The primary cause in its code span is the cause's name, underscores and all.
    cause = doc["diagnosis"]["primary"]["cause"]
    assert cause in view["codes"]
    assert any("_" in c for c in view["codes"])


def test_github_auto_references_in_names_render_as_written() -> None:
    """A kernel, op or range name holding a mention, an issue or commit reference, emoji, a URL or math shows as
    written, and copies as written, pinging and linking nothing: the patterns are broken by empty <wbr> elements
    (GitHub's filters read each text node alone), not by zero-width spaces, which came along when a reader copied a
    name from the rendered report (and then matched nothing in a grep of the code)."""
    rows = [
        {**r, "name": GITHUB_NAMES[NASTY.index(r["name"])]} if r["name"] in NASTY else r
        for r in nasty_trace().events.to_pylist()
    ]
    for text in (
        render(analyze(Trace.from_rows(rows)), plots=False),
        render_diff(compare(analyze(nasty_trace()), analyze(Trace.from_rows(rows)))),
    ):
        view = check_github_view(text)
        for name in GITHUB_NAMES:
            assert name in view["text"], name
    # Each pattern alone, whichever of its characters it starts with.
    from tracelens.report.escape import html_text, md

    for name in GITHUB_NAMES + ["x::ok::y", "GH-1", "gh-2", "WWW.E.COM", "ftp://e", "deadbeef1", "a@b"]:
        assert auto_references(md(name)) == [], name
        assert rendered(md(name))["text"].strip() == name, name
        # In raw HTML (a fold's <summary>), the text nodes between tags, each read alone, as GitHub's filters do.
        summary = html_text(name)
        nodes = [html.unescape(node) for node in re.split(r"<[^>]*>", summary)]
        assert "".join(nodes) == name, name
        for node in nodes:
            assert not [k for k, p in GITHUB_AUTO.items() if p.search(node)], (name, node)
    for text in (md(" ".join(GITHUB_NAMES)), html_text(" ".join(GITHUB_NAMES))):
        assert "\u200b" not in text


def test_diff_of_nasty_names_renders_as_written() -> None:
    base = analyze(nasty_trace())
    head_trace = nasty_trace()
    head = analyze(
        Trace.from_rows(
            [
                {**r, "name": r["name"] + "_v2"} if r["kind"] == "kernel" else r
                for r in head_trace.events.to_pylist()
            ]
        )
    )
    view = check_github_view(render_diff(compare(base, head)))
    for name in NASTY:
        assert name in view["text"] and name + "_v2" in view["text"], name


@pytest.mark.parametrize("path", FIXTURE_TRACES + ALL_TRACES)
def test_report_renders_on_github(path: Path) -> None:
    import tracelens

    doc = tracelens.analyze(tracelens.load(path))
    view = check_github_view(render(doc))
    assert view["tables"] >= 1
    primary = (doc.get("diagnosis") or {}).get("primary") or {}
    if primary.get("cause") not in (None, "none"):
        assert primary["cause"] in view["codes"]
    # The ten largest kernels appear as written (whole in a cell, or whole in the "Full names" list).
    for kernel in ((doc.get("kernels") or {}).get("by_name") or [])[:10]:
        name = " ".join(kernel["name"].split())
        if len(name) <= 200:
            assert name in " ".join(view["text"].split()), name


# --------------------------------------------------------------------------- the 5,000-step cap

STEPS = 5_000
SLOW_EVERY = 500  # steps 0, 500, 1000, ... run 10x longer: the outliers
KERNEL_NAMES = 300  # distinct kernels, each name ~2,100 characters: 50 full names alone would be ~100 KB


def kernel_name(k: int) -> str:
    args = ", ".join(f"cutlass::layout::RowMajor<{k}, {j}>" for j in range(60))
    return f"void cutlass::Kernel_{k:03d}<cutlass::gemm::GemmUniversal<{args}>>(Params)"


def step_trace_json(path: Path, *, steps: int = STEPS, suffix: str = "") -> list[float]:
    """A Kineto trace: per step a ProfilerStep annotation, one launch and one kernel; returns durations (µs)."""
    events: list[dict[str, Any]] = []
    ts = 1000.0
    durations = []
    for i in range(steps):
        dur = 1000.0 if i % SLOW_EVERY else 10_000.0
        durations.append(dur)
        events.append(
            {
                "ph": "X",
                "cat": "user_annotation",
                "name": f"ProfilerStep#{i}",
                "pid": 1,
                "tid": 1,
                "ts": ts,
                "dur": dur,
                "args": {"External id": i + 1},
            }
        )
        events.append(
            {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": "cudaLaunchKernel",
                "pid": 1,
                "tid": 1,
                "ts": ts + 10,
                "dur": 5,
                "args": {"correlation": i + 1, "External id": i + 1},
            }
        )
        events.append(
            {
                "ph": "X",
                "cat": "kernel",
                "name": kernel_name(i % KERNEL_NAMES) + suffix,
                "pid": 0,
                "tid": 7,
                "ts": ts + 20,
                "dur": 100 + i % KERNEL_NAMES,
                "args": {"correlation": i + 1, "External id": i + 1, "device": 0, "stream": 7},
            }
        )
        ts += dur + 1
    doc = {
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-40GB", "numSms": 108}],
        "traceEvents": events,
    }
    with gzip.open(path, "wt") as fh:
        json.dump(doc, fh)
    return durations


@pytest.fixture(scope="module")
def long_trace(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[float]]:
    path = tmp_path_factory.mktemp("steps") / "long.pt.trace.json.gz"
    return path, step_trace_json(path)


def test_report_of_5000_steps_stays_under_the_cap(
    long_trace: tuple[Path, list[float]], tmp_path: Path
) -> None:
    path, durations = long_trace
    out = tmp_path / "review.md"
    assert main(["report", str(path), "-o", str(out)]) == 0
    text = out.read_text()
    view = check_github_view(text)
    doc = json.loads(_json_of(path, tmp_path))
    assert doc["steps"]["count"] == STEPS
    listed = doc["steps"]["listed"]
    # The per-step table is summarized: percentiles over the listed steps, computed here independently.
    listed_ns = np.array(durations[:listed]) * 1000
    p50, p90, p99 = np.percentile(listed_ns, [50, 90, 99])
    assert (
        f"Duration p50 {fmt_ns(p50)}, p90 {fmt_ns(p90)}, p99 {fmt_ns(p99)}, max {fmt_ns(listed_ns.max())}"
        in text
    )
    slow = [i for i in range(listed) if i % SLOW_EVERY == 0]  # Tukey fence: all other steps are equal
    assert f"{len(slow)} outliers longer than" in text
    assert "step" + "s " + ", ".join(map(str, slow)) + "." in text
    # Only the slowest steps' rows, longest first: the summary replaced the 2,000-row table.
    slowest = text.split("<summary>The 10 slowest steps</summary>")[1].split("</details>")[0]
    rows = [line for line in slowest.split("\n") if line.startswith("| ")][2:]
    assert [int(r.split("|")[1]) for r in rows] == slow + list(range(1, 11 - len(slow)))
    assert text.count("| ---: | ---: | ---: |") < 20
    # The kernels table is capped and counts the rest; long names are cut in the full-name list.
    assert "more kernels in the JSON output" in text
    assert "characters; whole in the JSON output)" in text
    assert view["tables"] >= 3


def test_diff_of_long_traces_stays_under_the_cap(
    long_trace: tuple[Path, list[float]], tmp_path: Path
) -> None:
    path, _ = long_trace
    head = tmp_path / "head.pt.trace.json.gz"
    step_trace_json(
        head, steps=1200, suffix="_v2"
    )  # every kernel renamed: 15 added and 15 removed, long names
    out = tmp_path / "diff.md"
    assert main(["diff", str(path), str(head), "-o", str(out)]) == 0
    text = out.read_text()
    check_github_view(text)
    assert "### Added (only in head)" in text and "### Removed (only in base)" in text


def _json_of(path: Path, tmp_path: Path) -> str:
    out = tmp_path / "doc.json"
    assert main(["analyze", str(path), "--format", "json", "-o", str(out)]) == 0
    return out.read_text()


def test_fit_leaves_out_the_largest_blocks_then_cuts() -> None:
    from tracelens.report.budget import cut, fit

    head = ("Headline", ["# title", "short"])
    big = (
        "Big",
        ["", "## Big", "", "<details><summary>x</summary>", "", *["| a |"] * 5000, "", "</details>"],
    )
    small = ("Small", ["", "## Small", "", "kept"])
    text = fit(lambda: [head, big, small], max_chars=2_000)
    assert len(text) <= 2_000
    assert "**Big:** left out to keep this comment under 2,000 characters" in text and "kept" in text
    # A text that must be cut: the <details> left open is closed, and the note says where the rest is.
    cut_text = cut("\n".join(big[1]), 500)
    assert len(cut_text) <= 500 and cut_text.count("<details>") == cut_text.count("</details>") == 1
    assert cut_text.endswith("the JSON output (`--format json`) has everything.\n")


def test_plot_link_to_an_oddly_named_file_renders_as_that_image(tmp_path: Path) -> None:
    from tracelens.report.markdown import figures

    doc = analyze(nasty_trace(), sections=["devices"])
    doc["gaps"] = {
        "devices": [{"device": 0, "timeline": {"edges_ns": [0, 500, 1000], "utilization": [1.0, 0.25]}}]
    }
    pngs = figures(doc, tmp_path / "my review (v2) [draft].md")
    view = check_github_view(render(doc, plots=True, figures=pngs))
    src = re.findall(r'<img src="([^"]*)" alt="([^"]*)"', view["html"])
    assert src == [("my%20review%20%28v2%29%20%5Bdraft%5D.utilization.png", "GPU utilization over time")]
