"""analyses/busy_scan.py: the merged busy intervals handed over by the compiled pass (``busy_handover``: its own
buffers) equal those copied out (``busy_take``, the path where the hand-over is not built) and the
definition (``intervals.merge`` of each device's GPU ops), on random columns: no GPU op, one, touching and nested
ops, several devices; and the handed-over arrays stay valid once the pass's capsule is gone."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from test_busy_scan import reference

from tracelens.analyses import busy_scan
from tracelens.trace import ALL_KINDS

pytestmark = pytest.mark.skipif(
    busy_scan._compiled is None or not hasattr(busy_scan._compiled, "busy_handover"),
    reason="the compiled pass is not built",
)


class _WithoutHandover:
    """The compiled module as a build without busy_handover shows it."""

    real = busy_scan._compiled

    def __getattr__(self, name: str) -> object:
        if name == "busy_handover":
            raise AttributeError(name)
        return getattr(self.real, name)


def columns(seed: int, n: int, devices: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    kind = rng.integers(-1, len(ALL_KINDS), n).astype(np.int8)
    device = rng.integers(-1, devices + 1, n).astype(np.int32)
    start = np.sort(rng.integers(0, 60 if n < 100 else 30_000, n)).astype(np.int64)
    end = start + rng.integers(0, 13, n)
    return kind, device, start, end


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("n", [0, 1, 2, 9, 50, 9000])
@pytest.mark.parametrize("devices", [0, 1, 3])
def test_handover_equals_copy_and_reference(
    seed: int, n: int, devices: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    args = columns(seed, n, devices)
    handed = busy_scan.merged_busy(*args)
    with monkeypatch.context() as m:
        m.setattr(busy_scan, "_compiled", _WithoutHandover())
        copied = busy_scan.merged_busy(*args)
    assert handed is not None and copied is not None
    expected = reference(*args)
    gc.collect()  # the capsule gone: the handed-over buffers are the arrays' own
    for found in (handed, copied):
        assert len(found) == len(expected)
        for (d, s, e, lo, hi), (d2, s2, e2, lo2, hi2) in zip(found, expected, strict=True):
            assert (d, lo, hi) == (d2, lo2, hi2)
            assert s.dtype == np.int64 and e.dtype == np.int64
            assert np.array_equal(s, s2) and np.array_equal(e, e2)
