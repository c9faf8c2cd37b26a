"""StringIds ids are keys, not positions: exports cut out of a bigger one keep the original, sparse ids, and an
id StringIds lacks names its rows '<unknown string id N>' with one warning per file (docs/formats/nsys.md,
Strings). Every modified export is built in tmp_path from a shared one; expectations come from SQL on the
original file."""

from __future__ import annotations

import sqlite3
import warnings
from collections import Counter
from pathlib import Path

import pytest
from conftest import copy_shared_trace, shared_params

from tracelens.cli import main
from tracelens.ingest import load
from tracelens.ingest.nsys import strings as nsys_strings

WINDOW = "h100x2_fastvideo_window_nsys2026.2.sqlite"
TINY = "rtx3080_tiny_nsys2026.1.sqlite"
SHIFT = 3_000_000
# Every column of the nsys schema that holds a StringIds id (those the reader reads, and the others).
STRING_ID_COLUMNS = (
    ("CUPTI_ACTIVITY_KIND_KERNEL", "demangledName"),
    ("CUPTI_ACTIVITY_KIND_KERNEL", "shortName"),
    ("CUPTI_ACTIVITY_KIND_KERNEL", "mangledName"),
    ("CUPTI_ACTIVITY_KIND_RUNTIME", "nameId"),
    ("CUPTI_ACTIVITY_KIND_OVERHEAD", "nameId"),
    ("PROFILER_OVERHEAD", "nameId"),
    ("OSRT_API", "nameId"),
    ("NVTX_EVENTS", "textId"),
    ("NVTX_EVENTS", "jsonTextId"),
    ("ThreadNames", "nameId"),
    ("ProcessStreams", "filenameId"),
    ("ProcessStreams", "contentId"),
    ("ANALYSIS_FILE", "contentId"),
)


def _sql(path: Path, query: str, *args: object) -> list[tuple]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute(query, args).fetchall()
    finally:
        conn.close()


def _edit(path: Path, *statements: str) -> None:
    conn = sqlite3.connect(path)
    try:
        for statement in statements:
            conn.execute(statement)
        conn.commit()
    finally:
        conn.close()


def _load_with_warnings(path: Path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trace = load(path)
    return trace, [str(w.message) for w in caught if "StringIds lacks" in str(w.message)]


def _trim(path: Path) -> None:
    """Keep only the strings the kernel and runtime tables name, and move every id SHIFT up (in StringIds
    and in every column holding one): ids stay sparse and far beyond the row count, as in an export cut
    out of a bigger one. Thread and overhead names are left behind, as a cut can leave them."""
    conn = sqlite3.connect(path)
    try:
        have = {
            (t, c)
            for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            for (c,) in conn.execute(f"SELECT name FROM pragma_table_info('{t}')")
        }
        conn.execute("""DELETE FROM StringIds WHERE id NOT IN (
            SELECT demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL UNION SELECT shortName FROM CUPTI_ACTIVITY_KIND_KERNEL
            UNION SELECT mangledName FROM CUPTI_ACTIVITY_KIND_KERNEL UNION SELECT nameId FROM CUPTI_ACTIVITY_KIND_RUNTIME)""")
        conn.execute(
            "UPDATE StringIds SET id = id + ?", (SHIFT,)
        )  # SHIFT > every id: no collision on the way
        for table, column in STRING_ID_COLUMNS:
            if (table, column) in have:
                conn.execute(
                    f'UPDATE "{table}" SET "{column}" = "{column}" + ? WHERE "{column}" IS NOT NULL', (SHIFT,)
                )
        conn.commit()
    finally:
        conn.close()


@pytest.fixture
def window_pair(tmp_path: Path) -> tuple[Path, Path]:
    """(an untouched copy of the 2026.2 window export, its trimmed copy)."""
    original = copy_shared_trace(tmp_path, "nsys", WINDOW)
    (tmp_path / "trimmed").mkdir()
    trimmed = copy_shared_trace(tmp_path / "trimmed", "nsys", WINDOW)
    _trim(trimmed)
    return original, trimmed


def test_trimmed_export_with_sparse_ids_keeps_kernel_names(window_pair: tuple[Path, Path]) -> None:
    original, trimmed = window_pair
    count, top = _sql(trimmed, "SELECT count(*), max(id) FROM StringIds")[0]
    assert count < _sql(original, "SELECT count(*) FROM StringIds")[0][0]
    assert top > SHIFT + 300_000 and top > 16 * count + 2**20  # far past the rows: the old bound refused it
    # _DENSE_SLACK (private): the reader's dense/sorted threshold, read here to prove which lookup is taken
    assert top >= count + nsys_strings._DENSE_SLACK  # so the sorted-id search serves it, not a dense table
    # Kernel names by a direct join on the original (demangled name, else short name), as a multiset.
    expected = Counter(
        name
        for (name,) in _sql(
            original,
            """
        SELECT coalesce(d.value, s.value) FROM CUPTI_ACTIVITY_KIND_KERNEL k
        LEFT JOIN StringIds d ON d.id = k.demangledName LEFT JOIN StringIds s ON s.id = k.shortName""",
        )
    )
    assert sum(expected.values()) == 3442 and None not in expected

    reference = load(original)
    trace, caught = _load_with_warnings(trimmed)
    kernels = Counter(trace.of_kind("kernel").name.astype(str))
    assert kernels == expected == Counter(reference.of_kind("kernel").name.astype(str))
    assert trace.metadata.extra["kernel_short_names"] == reference.metadata.extra["kernel_short_names"]
    runtime = ["runtime", "driver"]
    assert Counter(trace.df[trace.df.kind.isin(runtime)].name.astype(str)) == Counter(
        reference.df[reference.df.kind.isin(runtime)].name.astype(str)
    )
    # Same rows, same times: only names can differ.
    assert trace.events.num_rows == reference.events.num_rows
    assert trace.df.start_ns.tolist() == reference.df.start_ns.tolist()

    # The overhead rows' name was cut away: a placeholder with the id, counted in one warning.
    lost = _sql(
        trimmed,
        """SELECT nameId, count(*) FROM CUPTI_ACTIVITY_KIND_OVERHEAD
                            WHERE nameId NOT IN (SELECT id FROM StringIds) GROUP BY nameId""",
    )
    assert len(lost) == 1 and lost[0][1] == 198
    overhead = trace.of_kind("overhead")
    assert overhead.name.astype(str).tolist() == [f"<unknown string id {lost[0][0]}>"] * 198
    assert len(caught) == 1
    mine = [w for w in trace.metadata.warnings if "StringIds lacks" in w]
    assert len(mine) == 1 and mine[0] in caught[0]
    assert f"{lost[0][0]}" in mine[0] and "198 row(s)" in mine[0]
    # Thread names whose string is gone are left out (a thread name is not a row's name).
    assert trace.metadata.extra["thread_names"] == {}


def test_trimmed_export_analyzes(window_pair: tuple[Path, Path], capsys: pytest.CaptureFixture) -> None:
    _, trimmed = window_pair
    with pytest.warns(UserWarning, match="StringIds lacks"):
        code = main(["analyze", "-f", "json", str(trimmed)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert '"format": "nsys"' in captured.out and "StringIds lacks" in captured.out


@pytest.mark.parametrize("path", shared_params("nsys", "*.sqlite"))
def test_dense_and_sorted_lookups_agree(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Compact ids use a dense table, sparse ones a binary search: forcing the search gives the same trace."""
    dense = load(path)
    # private on purpose: no public option picks the lookup; the threshold is the one switch
    monkeypatch.setattr(nsys_strings, "_DENSE_SLACK", -(2**62))
    searched = load(path)
    assert searched.events.equals(dense.events)
    assert searched.metadata.extra == dense.metadata.extra
    assert searched.metadata.warnings == dense.metadata.warnings


def test_missing_ids_get_placeholder_names_and_one_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    path = copy_shared_trace(tmp_path, "nsys", TINY)
    # Ids no StringIds row has, in a dense table (the file's ids run 0..163): a kernel with neither name,
    # a kernel with only its short name left, and one runtime call.
    _edit(
        path,
        "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET demangledName = 987654321, shortName = 987654322 "
        "WHERE correlationId = 143",
        "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET demangledName = 987654323 WHERE correlationId = 159",
        "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET nameId = 987654324 WHERE correlationId = 143",
    )
    short_159 = _sql(
        path,
        "SELECT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName "
        "WHERE k.correlationId = 159",
    )[0][0]
    trace, caught = _load_with_warnings(path)
    kernels = trace.of_kind("kernel")
    names = dict(zip(kernels.correlation_id.astype(int), kernels.name.astype(str), strict=True))
    assert names == {143: "<unknown string id 987654321>", 159: short_159}  # the demangled id is named first
    runtime = trace.df[trace.df.kind.isin(["runtime", "driver"]) & (trace.df.correlation_id == 143)]
    assert runtime.name.astype(str).tolist() == ["<unknown string id 987654324>"]
    assert len(caught) == 1
    assert (
        "2 row(s) named '<unknown string id N>'" in caught[0]
        and "2 string id(s) (987654321, 987654324)" in caught[0]
    )

    with pytest.warns(UserWarning, match="StringIds lacks"):
        code = main(["analyze", str(path)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "warning: 2 row(s) named '<unknown string id N>'" in captured.out
    assert "tracelens:" not in captured.err  # no error line, only Python's warning


def test_missing_nvtx_text_id(tmp_path: Path) -> None:
    path = copy_shared_trace(tmp_path, "nsys", WINDOW)
    rowid, text = _sql(
        path,
        "SELECT rowid, text FROM NVTX_EVENTS WHERE eventType = 59 AND text IS NOT NULL "
        "ORDER BY rowid LIMIT 1",
    )[0]
    before = _sql(path, "SELECT count(*) FROM NVTX_EVENTS WHERE eventType = 59 AND text = ?", text)[0][0]
    _edit(path, f"UPDATE NVTX_EVENTS SET text = NULL, textId = 4242424242 WHERE rowid = {rowid}")
    trace, caught = _load_with_warnings(path)
    names = Counter(trace.of_kind("annotation").name.astype(str))
    assert names["<unknown string id 4242424242>"] == 1
    assert names[text] == before - 1
    assert len(caught) == 1 and "(4242424242)" in caught[0]


def test_export_without_string_table(tmp_path: Path) -> None:
    """No StringIds at all (a crash before): every named row gets its placeholder, one warning."""
    path = copy_shared_trace(tmp_path, "nsys", TINY)
    kernel_ids = Counter(i for (i,) in _sql(path, "SELECT demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL"))
    _edit(path, "DROP TABLE StringIds")
    trace, caught = _load_with_warnings(path)
    assert Counter(trace.of_kind("kernel").name.astype(str)) == Counter(
        {f"<unknown string id {i}>": n for i, n in kernel_ids.items()}
    )
    assert len(caught) == 1
