"""Bad Nsight Systems input through the CLI (in process): one line on stderr naming the file, exit 2,
no traceback; or, where the input is merely unusual, a normal exit. Every input is built in tmp_path."""

from __future__ import annotations

import random
import sqlite3
import threading
import warnings
from pathlib import Path

import pytest
from conftest import copy_shared_trace

from tracelens.cli import main
from tracelens.ingest import load
from tracelens.ingest.nsys import database as nsys_database

TINY = "rtx3080_tiny_nsys2026.1.sqlite"
WINDOW = "h100x2_fastvideo_window_nsys2026.2.sqlite"


def _run(capsys: pytest.CaptureFixture, *args: str) -> tuple[int, str, list[str]]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err.strip().splitlines()


def _assert_one_line_error(code: int, err: list[str], path: Path, *words: str) -> None:
    assert code == 2
    assert len(err) == 1, err
    assert str(path) in err[0]
    assert "Traceback" not in err[0] and "internal error" not in err[0]
    for word in words:
        assert word in err[0]


def test_random_bytes_named_sqlite(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "random.sqlite"
    # Seeded: os.urandom opened like JSON ("{" or "[" after whitespace) about one run in 120 and then failed as invalid JSON.
    path.write_bytes(random.Random(8192).randbytes(8192))
    code, _, err = _run(capsys, "analyze", str(path))
    _assert_one_line_error(code, err, path, "SQLite")


@pytest.mark.parametrize("first", [b"\x0a", b"{", b" ["], ids=["protobuf-like", "json-like", "space-json"])
def test_random_bytes_named_sqlite_with_a_misleading_first_byte(
    first: bytes, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    # Random bytes start with one of these 1 time in ~256: the error must still be about the file, one line.
    path = tmp_path / "random.sqlite"
    path.write_bytes(first + bytes(range(256)) * 8)
    code, _, err = _run(capsys, "analyze", str(path))
    _assert_one_line_error(code, err, path)


def test_sqlite_file_that_is_not_an_nsys_export(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "other.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE users (id INTEGER, name TEXT)")
    conn.execute("INSERT INTO users VALUES (1, 'a')")
    conn.commit()
    conn.close()
    code, _, err = _run(capsys, "analyze", str(path))
    _assert_one_line_error(code, err, path, "not an Nsight Systems export")


def test_empty_sqlite_database(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "empty.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (x)")
    conn.execute("DROP TABLE t")
    conn.commit()
    conn.close()
    code, _, err = _run(capsys, "analyze", str(path))
    _assert_one_line_error(code, err, path)


def test_export_without_cuda_tables_reports_host_side(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = copy_shared_trace(tmp_path, "nsys", WINDOW)
    conn = sqlite3.connect(path)
    cupti = [
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name LIKE 'CUPTI_ACTIVITY_KIND_%'"
        )
    ]
    assert "CUPTI_ACTIVITY_KIND_KERNEL" in cupti
    for table in cupti:
        conn.execute(f"DROP TABLE {table}")
    nvtx = conn.execute("SELECT count(*) FROM NVTX_EVENTS WHERE eventType = 59").fetchone()[0]
    conn.commit()
    conn.close()
    code, out, err = _run(capsys, "analyze", str(path))
    assert code == 0, err
    assert "No GPU activity" in out
    assert "Traceback" not in "\n".join(err)
    trace = load(path)
    assert int((trace.df.kind == "annotation").sum()) == nvtx  # the host side is all there
    assert trace.gpu_ids == []
    assert any("no GPU activity" in w for w in trace.metadata.warnings)


def test_invalid_utf8_in_text_columns_is_replaced(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = copy_shared_trace(tmp_path, "nsys", WINDOW)
    conn = sqlite3.connect(path)
    name_id = conn.execute("SELECT demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL LIMIT 1").fetchone()[0]
    count = conn.execute(
        "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE demangledName = ?", (name_id,)
    ).fetchone()[0]
    # Bytes ff fe are never valid UTF-8; store them as TEXT so they reach the reader as text.
    conn.execute("UPDATE StringIds SET value = CAST(X'6b65726e656cfffe41' AS TEXT) WHERE id = ?", (name_id,))
    conn.execute("UPDATE NVTX_EVENTS SET text = CAST(X'72616e6765ff' AS TEXT) WHERE rowid = 1")
    conn.commit()
    conn.close()
    trace = load(path)
    kernels = trace.of_kind("kernel")
    assert int((kernels.name.astype(str) == "kernel\ufffd\ufffdA").sum()) == count
    assert (trace.of_kind("annotation").name.astype(str) == "range\ufffd").sum() == 1
    code, _, err = _run(capsys, "analyze", "-f", "json", str(path))
    assert code == 0, err


def test_truncated_export(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    source = copy_shared_trace(tmp_path, "nsys", WINDOW)
    path = tmp_path / "truncated.sqlite"
    data = source.read_bytes()
    path.write_bytes(data[: len(data) // 3])
    code, _, err = _run(capsys, "analyze", str(path))
    _assert_one_line_error(code, err, path)


def test_header_only_export(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    source = copy_shared_trace(tmp_path, "nsys", WINDOW)
    path = tmp_path / "header.sqlite"
    path.write_bytes(source.read_bytes()[:100])
    code, _, err = _run(capsys, "analyze", str(path))
    _assert_one_line_error(code, err, path)


def _hold_lock(path: Path, statement: str, ready: threading.Event, release: threading.Event) -> None:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute(statement)
    conn.execute("INSERT INTO StringIds (id, value) VALUES (999999, 'pending')")
    ready.set()
    release.wait(30)
    conn.execute("ROLLBACK")
    conn.close()


@pytest.mark.parametrize("statement", ["BEGIN IMMEDIATE", "BEGIN EXCLUSIVE"])
def test_export_held_open_for_writing(
    tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch, statement: str
) -> None:
    """A writer holds a RESERVED (IMMEDIATE) or EXCLUSIVE lock: reading works or fails in one line, quickly."""
    path = copy_shared_trace(tmp_path, "nsys", TINY)
    monkeypatch.setattr(nsys_database, "BUSY_TIMEOUT_S", 0.3)
    ready, release = threading.Event(), threading.Event()
    holder = threading.Thread(target=_hold_lock, args=(path, statement, ready, release))
    holder.start()
    try:
        assert ready.wait(10)
        code, out, err = _run(capsys, "analyze", "-f", "json", str(path))
    finally:
        release.set()
        holder.join(10)
    if statement == "BEGIN IMMEDIATE":
        # A RESERVED lock still admits readers; the uncommitted row is invisible to them.
        assert code == 0, err
        assert '"format": "nsys"' in out
    else:
        _assert_one_line_error(code, err, path, "locked")
    with sqlite3.connect(path) as conn:  # the writer rolled back: nothing of ours was left behind either
        assert conn.execute("SELECT count(*) FROM StringIds WHERE id = 999999").fetchone()[0] == 0


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "absent.sqlite"
    code, _, err = _run(capsys, "analyze", str(path))
    _assert_one_line_error(code, err, path)


def test_table_missing_required_column_is_skipped_with_warning(tmp_path: Path) -> None:
    path = copy_shared_trace(tmp_path, "nsys", WINDOW)
    conn = sqlite3.connect(path)
    conn.execute("ALTER TABLE CUPTI_ACTIVITY_KIND_MEMSET DROP COLUMN end")
    conn.commit()
    conn.close()
    trace = load(path)
    assert not (trace.df.kind == "memset").any()
    assert int((trace.df.kind == "kernel").sum()) == 3442  # README: KERNEL 3442
    assert any("CUPTI_ACTIVITY_KIND_MEMSET lacks column(s) end" in w for w in trace.metadata.warnings)


@pytest.mark.parametrize(
    "damage",
    [
        # SQLite types each cell: text or out-of-range numbers where nsys writes integers (a damaged export)
        (
            "text in an integer column",
            "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET streamId = 'x' WHERE rowid = 1",
            "unexpected type or size",
        ),
        (
            "a timestamp beyond 2^62 ns",
            'UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET "end" = 9223372036854775807 WHERE rowid = 1',
            "2^62",
        ),
        (
            "a string id beyond int64 (stored as a real)",
            "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET demangledName = 1e20 WHERE rowid = 1",
            "unexpected type or size",
        ),
        (
            # a grid dimension past the int32 column (CUDA's limit is 2^31 - 1): an internal error (exit 3) in the
            # occupancy enrichment before, where the stored int64 column was cast to the schema's int32
            "a launch dimension beyond int32",
            "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET gridY = 9007199254740993 WHERE rowid = 1",
            "unexpected type or size",
        ),
        (
            "text where a string id belongs",
            "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET nameId = 'x' WHERE rowid = 1",
            "unexpected type or size",
        ),
    ],
)
def test_cells_nsys_never_writes_are_one_input_error(
    damage: tuple[str, str, str], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """Found by an SQL-level fuzz (random cells set to NULL, text, blobs, 1e300, +-2^62): each of these
    was an internal error (exit 3)."""
    _, statement, words = damage
    path = copy_shared_trace(tmp_path, "nsys", TINY)
    conn = sqlite3.connect(path)
    conn.execute(statement)
    conn.commit()
    conn.close()
    code, _, err = _run(capsys, "analyze", "-f", "json", str(path))
    _assert_one_line_error(code, err, path, words)


def test_odd_cells_in_lookup_tables_are_skipped(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Lookup rows of another type (thread names, enums, device ids, session start) are left out, not fatal."""
    path = copy_shared_trace(tmp_path, "nsys", TINY)
    (tmp_path / "ref").mkdir()
    reference = load(copy_shared_trace(tmp_path / "ref", "nsys", TINY))
    conn = sqlite3.connect(path)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    for table, column in (
        ("ThreadNames", "globalTid"),
        ("ENUM_CUDA_MEM_KIND", "name"),
        ("TARGET_INFO_CUDA_DEVICE", "cudaId"),
        ("TARGET_INFO_SESSION_START_TIME", "utcEpochNs"),
    ):
        if table in tables:
            conn.execute(f'UPDATE "{table}" SET "{column}" = X\'fffe\'')
    conn.commit()
    conn.close()
    trace = load(path)
    assert trace.events.num_rows == reference.events.num_rows
    assert trace.of_kind("kernel")["start_ns"].tolist() == reference.of_kind("kernel")["start_ns"].tolist()
    code, _, err = _run(capsys, "analyze", "-f", "json", str(path))
    assert code == 0, err


# StringIds is declared "id INTEGER PRIMARY KEY": ids of other types need the table rebuilt without it.
_UNTYPED_STRING_IDS = (
    "CREATE TABLE S (id, value)",
    "INSERT INTO S SELECT id, value FROM StringIds",
    "DROP TABLE StringIds",
    "ALTER TABLE S RENAME TO StringIds",
)


@pytest.mark.parametrize(
    "damage",
    [
        # (StringIds edits, the id the kernel rows then name)
        (
            "a string id far past the table",
            ["UPDATE StringIds SET id = 4611686018427387904 WHERE id = {kernel}"],
            4611686018427387904,
        ),
        ("a negative string id", ["UPDATE StringIds SET id = -5 WHERE id = {kernel}"], -5),
        (
            "the largest int64 string id",
            ["UPDATE StringIds SET id = 9223372036854775807 WHERE id = {kernel}"],
            9223372036854775807,
        ),
        (
            "the smallest int64 string id",
            ["UPDATE StringIds SET id = -9223372036854775808 WHERE id = {kernel}"],
            -9223372036854775808,
        ),
        # rows whose id is no integer are left out: the kernel's id is then missing
        (
            "a string id beyond int64",
            [*_UNTYPED_STRING_IDS, "UPDATE StringIds SET id = 1e20 WHERE id = {kernel}"],
            None,
        ),
        (
            "a text string id",
            [*_UNTYPED_STRING_IDS, "UPDATE StringIds SET id = 'x' WHERE id = {kernel}"],
            None,
        ),
        (
            "a null string id",
            [*_UNTYPED_STRING_IDS, "UPDATE StringIds SET id = NULL WHERE id = {kernel}"],
            None,
        ),
        # ids in the event table that no StringIds row has
        ("a negative id in an event", [], -5),
        ("the largest int64 id in an event", [], 9223372036854775807),
        ("the smallest int64 id in an event", [], -9223372036854775808),
    ],
    ids=lambda d: d[0],
)
def test_absurd_string_ids_read_with_a_placeholder(
    damage: tuple[str, list[str], int | None], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """Ids are keys: any integer id is looked up as it is (the fuzz's id 2^62 was one InputError before);
    StringIds rows whose id is no integer are left out; an event's id StringIds lacks names it
    '<unknown string id N>', with one warning. No kernel row is lost either way."""
    _, statements, new_id = damage
    path = copy_shared_trace(tmp_path, "nsys", TINY)
    conn = sqlite3.connect(path)
    kernel, value = conn.execute(
        "SELECT k.demangledName, s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k "
        "JOIN StringIds s ON s.id = k.demangledName ORDER BY k.start LIMIT 1"
    ).fetchone()
    rows = conn.execute(
        "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE demangledName = ?", (kernel,)
    ).fetchone()[0]
    for statement in statements:
        conn.execute(statement.format(kernel=kernel))
    new_id = kernel if new_id is None else new_id
    # Both name columns name the new id, so that the short name cannot stand in.
    conn.execute(
        "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET demangledName = ?, shortName = ? WHERE demangledName = ?",
        (new_id, new_id, kernel),
    )
    conn.commit()
    found = conn.execute(
        "SELECT count(*) FROM StringIds WHERE id = ? AND typeof(id) = 'integer'", (new_id,)
    ).fetchone()[0]
    conn.close()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code, _, err = _run(capsys, "analyze", "-f", "json", str(path))
        names = load(path).of_kind("kernel").name.astype(str).tolist()
    assert code == 0, err
    assert len(names) == 2
    assert names.count(value if found else f"<unknown string id {new_id}>") == rows
    assert any("StringIds lacks" in str(w.message) for w in caught) == (not found)
