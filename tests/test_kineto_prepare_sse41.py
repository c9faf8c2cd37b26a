"""prepare_scanned's SSE4.1 build (``tracelens/ingest/_kineto_scan.c``: the pass compiled for SSE4.1 where the
compiler can and the processor has it, for its floor and rint in one instruction each) gives the baseline build's
table: each trace here is loaded with that build off and on, and every event column, the devices and the metadata
must be equal. The times and durations are those of the six real traces and of a copy of one whose ts and dur
are redrawn at random around every rounding case (halves of a nanosecond, negative, -0, tiny, beyond the
timeline, integers past 2**53)."""

from __future__ import annotations

import gzip
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import shared_params, shared_traces
from test_kineto_native import needs_scanner

import tracelens
from tracelens.ingest import kineto

pytestmark = needs_scanner

TRACES = shared_traces("pytorch", "*.json.gz")


@pytest.fixture
def module() -> Iterator[Any]:
    scanner = kineto._kineto_scan
    yield scanner
    scanner._prepare_sse41(True)


def _loaded(module: Any, path: Path, sse41: bool) -> tuple[Any, Any, Any]:
    module._prepare_sse41(sse41)
    trace = tracelens.load(str(path))
    return trace.events, trace.devices, trace.metadata


def _same_both_ways(module: Any, path: Path) -> None:
    base = _loaded(module, path, False)
    fast = _loaded(module, path, True)
    assert base[0].equals(fast[0]), path
    assert base[1:] == fast[1:] or repr(base[1:]) == repr(fast[1:]), path


@pytest.mark.parametrize("path", shared_params("pytorch", "*.json.gz"))
def test_real_traces(module: Any, path: Path) -> None:
    _same_both_ways(module, path)


def _redrawn(rng: random.Random, magnitude: float) -> str:
    whole = rng.choice([0, 1, 2, 7, 999, 2**20, int(magnitude), int(magnitude) + rng.randrange(10**6)])
    fraction = rng.choice(
        [
            "",
            ".5",
            ".0005",
            ".0015",
            ".0025",
            ".4995",
            ".5005",
            ".999",
            ".9995",
            ".25",
            ".75",
            "." + str(rng.randrange(10**6)).zfill(6),
            ".1",
            ".3",
            ".7",
        ]
    )
    sign = "-" if rng.random() < 0.1 else ""
    return sign + str(whole) + fraction


def test_times_at_every_rounding_case(module: Any, tmp_path: Path) -> None:
    sources = [p for p in TRACES if "v100_ns_resolution" in p.name]
    if not sources:
        pytest.skip("../shared/traces/pytorch not present")
    source = sources[0]
    text = gzip.decompress(source.read_bytes()).decode()
    rng = random.Random(26)

    def ts(match: re.Match[str]) -> str:
        return match.group(1) + _redrawn(rng, 1712195495519689.0)

    def dur(match: re.Match[str]) -> str:
        return match.group(1) + rng.choice(
            [_redrawn(rng, 50.0), "0", "-0", "-0.0", "9007199254740993", "1e-7"]
        )

    text = re.sub(r'("ts": )[0-9.]+', ts, text)
    text = re.sub(r'("dur": )[0-9.]+', dur, text)
    path = tmp_path / "redrawn.json.gz"
    path.write_bytes(gzip.compress(text.encode()))
    _same_both_ways(module, path)


def test_the_switch(module: Any) -> None:
    assert module._prepare_sse41(False) is False
    module._prepare_sse41(True)  # True where this build has the SSE4.1 pass and the processor SSE4.1
