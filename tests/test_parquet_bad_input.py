"""Damaged tracelens Parquet files (``tracelens convert`` output, the run cache) through the CLI (in process):
one line on stderr naming the file, exit 2, no traceback. Every input is built in tmp_path from a small fixture.

Found by corrupting copies of a converted fixture (2026-11-28): pyarrow's messages end in newlines (a
damaged page header gave three lines on stderr), and a file damaged past the Parquet footer's own checks
(a column name that is not UTF-8, tracelens metadata that is not JSON, a column of another type) stopped
analyze with an internal error (exit 3), as did a dictionary index out of range (pyarrow reads it as it is)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import FIXTURES

import tracelens
from tracelens.cli import main


@pytest.fixture
def converted(tmp_path: Path) -> Path:
    path = tmp_path / "small.parquet"
    tracelens.load(FIXTURES / "kineto" / "nested_ranges.json").save(path)
    return path


def _assert_one_line_error(capsys: pytest.CaptureFixture, path: Path) -> None:
    code = main(["analyze", str(path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1, err
    assert str(path) in err[0]
    assert "internal error" not in err[0]


def test_damaged_page_header(converted: Path, capsys: pytest.CaptureFixture) -> None:
    data = bytearray(converted.read_bytes())
    data[4:20] = bytes(16)  # the first page header, right after the magic "PAR1"
    converted.write_bytes(bytes(data))
    _assert_one_line_error(capsys, converted)


def test_column_name_not_utf8(converted: Path, capsys: pytest.CaptureFixture) -> None:
    data = converted.read_bytes()
    assert b"correlation_id" in data
    # same length: the footer still parses, the name does not decode
    converted.write_bytes(data.replace(b"correlation_id", b"\xf5orrelation_id"))
    _assert_one_line_error(capsys, converted)


@pytest.mark.parametrize("metadata", [b"{damaged", b"\xf5\xff"])
def test_tracelens_metadata_not_json(converted: Path, capsys: pytest.CaptureFixture, metadata: bytes) -> None:
    table = pq.read_table(converted)
    pq.write_table(
        table.replace_schema_metadata({**table.schema.metadata, b"tracelens.metadata": metadata}), converted
    )
    _assert_one_line_error(capsys, converted)


def test_column_of_another_type(converted: Path, capsys: pytest.CaptureFixture) -> None:
    table = pq.read_table(converted)
    at = table.column_names.index("start_ns")
    strings = pa.array(["x"] * table.num_rows)
    pq.write_table(table.set_column(at, "start_ns", strings), converted)
    _assert_one_line_error(capsys, converted)


def _dictionary_index_out_of_range(path: Path) -> bytes:
    """``path`` with one byte of its ``kind`` column's data page changed so that the file still reads and an
    index of that dictionary column lies past its dictionary (pyarrow reads it as it is). Built by trying each
    byte in turn: a table with such an index cannot be written (the writer reads past the dictionary)."""
    data = path.read_bytes()
    column = pq.ParquetFile(path).metadata.row_group(0).column(0)
    assert column.path_in_schema == "kind"
    page = column.data_page_offset
    for at in range(page, page + column.total_compressed_size - (page - column.dictionary_page_offset)):
        damaged = data[:at] + b"\x4f" + data[at + 1 :]
        path.write_bytes(damaged)
        try:
            table = pq.read_table(path)
        except (pa.ArrowException, OSError):
            continue
        try:
            table.validate(full=True)
        except pa.ArrowInvalid:
            return damaged
    raise AssertionError("no single byte gives an index past the dictionary")


def test_dictionary_index_out_of_range(converted: Path, capsys: pytest.CaptureFixture) -> None:
    """Found: a dictionary index past the dictionary stopped analyze with an IndexError in the kind lookup."""
    converted.write_bytes(_dictionary_index_out_of_range(converted))
    _assert_one_line_error(capsys, converted)
