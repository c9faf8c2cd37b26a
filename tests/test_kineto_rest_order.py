"""The Kineto reader reads the document's last piece while the blocks before it are still being scanned
(reader._rest before the drain): the table is the one read in one piece, and where both an earlier block and the
last piece are broken, the earlier block's error is the one reported, as when the pieces were read in order."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tracelens.errors import InputError
from tracelens.ingest import kineto
from tracelens.ingest.kineto import reader

ENGINES = ["msgspec", *(["native"] if kineto.native_scanner_built() else [])]


def _kineto_text(n: int) -> str:
    """A bare event list in Kineto's layout (events at two spaces: cut at its separator)."""
    events = [
        {
            "ph": "X",
            "cat": "kernel" if i % 2 else "cpu_op",
            "name": f"op{i % 7}",
            "ts": 1000 + 3 * i,
            "dur": 2,
            "pid": 0 if i % 2 else 12,
            "tid": 7,
            "args": {"correlation": i},
        }
        for i in range(n)
    ]
    return json.dumps(events, indent=2)


def _error(path: Path, engine: str) -> str:
    with pytest.raises(InputError) as caught:
        kineto.read(path, engine=engine)
    return str(caught.value)


@pytest.mark.parametrize("engine", ENGINES)
def test_the_last_piece_read_early_gives_the_same_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, engine: str
) -> None:
    path = tmp_path / "many.json"
    path.write_text(_kineto_text(400))
    whole = kineto.read(path, engine="msgspec")  # one piece
    monkeypatch.setattr(reader, "BLOCK_BYTES", 4096)  # ~20 blocks and a last piece
    assert kineto.read(path, engine=engine).events.equals(whole.events)


@pytest.mark.parametrize("engine", ENGINES)
def test_an_earlier_broken_block_is_reported_before_a_broken_last_piece(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, engine: str
) -> None:
    text = _kineto_text(400)
    # invalid JSON in one of the last blocks, still being scanned when the last piece is read
    bad_at = text.index('"ts": ', len(text) - 3 * 4096) + len('"ts": ')
    early = text[:bad_at] + "1x" + text[bad_at + 1 :]
    monkeypatch.setattr(reader, "BLOCK_BYTES", 4096)
    only_early = tmp_path / "early.json"
    only_early.write_text(early)
    both = tmp_path / "both.json"
    both.write_text(early[:-300])  # and truncated: the last piece is broken too
    only_rest = tmp_path / "rest.json"
    only_rest.write_text(text[:-300])
    expected = _error(only_early, engine).replace(str(only_early), "FILE")
    assert _error(both, engine).replace(str(both), "FILE") == expected
    assert _error(only_rest, engine).replace(str(only_rest), "FILE") != expected
