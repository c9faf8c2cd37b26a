"""A process that only imports tracelens or loads a Kineto trace stays lean: no pandas (~0.4 s to import), no
numpy or pyarrow for ``import tracelens`` alone (the CLI's --help and --version), the garbage collector
paused during the read and restored after; and the helpers that build Arrow arrays without pa.array give
what pa.array gives."""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracelens
from tracelens.arrow_read import arrow_numpy
from tracelens.errors import InputError
from tracelens.trace import DEVICE_SCHEMA, build_devices, numpy_array, string_array

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "fixtures" / "demo.pt.trace.json.gz"


def _modules_after(code: str) -> dict[str, bool]:
    check = "; import sys; print(*(m in sys.modules for m in ('numpy', 'pyarrow', 'pandas')))"
    out = subprocess.run(
        [sys.executable, "-c", code + check], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    return dict(zip(("numpy", "pyarrow", "pandas"), (v == "True" for v in out), strict=True))


def test_import_tracelens_imports_no_numpy_pyarrow_or_pandas() -> None:
    assert _modules_after("import tracelens") == {"numpy": False, "pyarrow": False, "pandas": False}


def test_kineto_load_imports_no_pandas() -> None:
    # (the full event table computes the deferred depth column, whose thread numbering uses pandas)
    code = f"import tracelens; t = tracelens.load({str(DEMO)!r}); t.devices; t.take('start_ns', [0, 1])"
    assert _modules_after(code)["pandas"] is False


@pytest.mark.parametrize(
    "command", [["analyze", "--format", "json"], ["analyze", "--format", "markdown"], ["analyze"]]
)
def test_kineto_analyze_imports_no_pandas(command: list[str]) -> None:
    """The whole analysis of a Kineto trace, and each renderer, runs without pandas (0.17 s and ~38 MiB of every
    process): the sections use numpy (values.first_seen_codes for pd.factorize, values.distinct for pd.unique)."""
    code = (
        "import contextlib, io\n"
        "from tracelens.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main({[*command, str(DEMO)]!r}) == 0\n"
        "pass"
    )
    assert _modules_after(code)["pandas"] is False


@pytest.mark.parametrize("command", [["analyze", "--format", "json"], ["analyze"]])
def test_kineto_analyze_imports_no_pyarrow_compute(command: list[str]) -> None:
    """Nor pyarrow.compute (~25 ms to import, wrapping every Arrow kernel): the few kernels the analyses call go
    through tracelens.arrow_calls."""
    code = (
        "import contextlib, io, sys\n"
        "from tracelens.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main({[*command, str(DEMO)]!r}) == 0\n"
        "print('pyarrow.compute' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.split()[-1] == "False"


def test_kineto_load_imports_no_pyarrow_compute_nor_ctypes_util() -> None:
    """pyarrow.compute (~30 ms to import) and ctypes.util (which imports subprocess) are not needed to load a
    Kineto trace with kernels (the enrich step's occupancy included)."""
    code = (
        f"import sys, tracelens; t = tracelens.load({str(DEMO)!r}); "
        "assert t.store.has('theoretical_occupancy'); "
        "print('pyarrow.compute' in sys.modules, 'ctypes.util' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["False", "False"]


@pytest.mark.parametrize("enabled", [True, False])
def test_gc_state_restored_after_read(enabled: bool) -> None:
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        tracelens.load(DEMO)
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()


def test_gc_state_restored_after_failed_read(tmp_path: Path) -> None:
    bad = tmp_path / "bad.pt.trace.json"
    bad.write_text('{"traceEvents": [{"ph": "X", "ts": 1, "dur": 2,')
    assert gc.isenabled()
    with pytest.raises(InputError):
        tracelens.load(bad)
    assert gc.isenabled()


_TEXT = st.one_of(st.none(), st.text(max_size=8))


@settings(max_examples=60, deadline=None)
@given(st.lists(_TEXT, max_size=12))
def test_string_array_is_pa_array(values: list[str | None]) -> None:
    try:
        expected = pa.array(values, pa.string())
    except (pa.ArrowException, UnicodeEncodeError) as err:  # lone surrogates: the same error
        with pytest.raises(type(err)):
            string_array(values)
        return
    built = string_array(values)
    built.validate(full=True)
    assert built.equals(expected)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(-(2**40), 2**40), st.booleans()), max_size=20),
    st.sampled_from([pa.int32(), pa.int64(), pa.float32(), pa.float64()]),
    st.integers(0, 3),
)
def test_numpy_array_and_arrow_numpy_round_trip(
    rows: list[tuple[int, bool]], typ: pa.DataType, offset: int
) -> None:
    dtype = np.dtype(typ.to_pandas_dtype())
    values = np.array([v % 1000 for v, _ in rows], dtype=dtype)
    valid = np.array([ok for _, ok in rows], dtype=bool)
    built = numpy_array(values, typ, valid)
    built.validate(full=True)
    assert built.equals(pa.array(values, typ, mask=~valid))
    sliced = built.slice(min(offset, len(built)))
    np.testing.assert_array_equal(arrow_numpy(sliced), sliced.to_numpy(zero_copy_only=False))
    assert arrow_numpy(sliced).dtype == sliced.to_numpy(zero_copy_only=False).dtype


_DEVICE_VALUE = st.one_of(
    st.none(), st.integers(-(2**33), 2**33), st.floats(allow_nan=False), st.text(max_size=4), st.booleans()
)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.fixed_dictionaries(
            {"id": st.one_of(st.integers(0, 7), st.none())},
            optional={name: _DEVICE_VALUE for name in DEVICE_SCHEMA.names[1:]},
        ),
        max_size=3,
    )
)
def test_build_devices_is_from_pydict(rows: list[dict]) -> None:
    data = {name: [row.get(name) for row in rows] for name in DEVICE_SCHEMA.names}
    try:
        expected = pa.Table.from_pydict(data, schema=DEVICE_SCHEMA)
    except (pa.ArrowException, TypeError, OverflowError) as err:
        with pytest.raises(type(err)):
            build_devices(rows)
        return
    built = build_devices(rows)
    built.validate(full=True)
    assert built.equals(expected) and built.schema.equals(expected.schema)
