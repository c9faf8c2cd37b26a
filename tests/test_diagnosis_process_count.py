"""unexplained_idle.only_pids (the host rows' pids checked against a few candidates a block of rows at a time) and
_process_count equal the whole-array test and a plain count of the host rows' distinct pids: empty, one row, blocks
that end inside the rows, another pid in the first or last row only, negative pids, pids held as codes."""

from __future__ import annotations

import numpy as np
import pytest

from tracelens.analyses.coded import CodedInts
from tracelens.analyses.diagnosis import unexplained_idle as U


def _only_pids_reference(pid: np.ndarray, host_mask: np.ndarray, candidates: np.ndarray) -> bool:
    other = host_mask & (pid >= 0)
    for candidate in candidates:
        other &= pid != candidate
    return not other.any()


def _count_reference(pid: np.ndarray, host_mask: np.ndarray) -> int:
    picked = pid[host_mask]
    return int(np.unique(picked[picked >= 0]).size)


BLOCK = 16  # PID_BLOCK in these tests: many blocks on small arrays


def _cases(rng: np.random.Generator) -> list[tuple[np.ndarray, np.ndarray]]:
    cases = [(np.zeros(0, np.int32), np.zeros(0, bool)), (np.array([7], np.int32), np.array([True]))]
    for n in (1, 5, BLOCK - 1, BLOCK, BLOCK + 1, 3 * BLOCK + 7, 1000):
        for k in (1, 2, 5):
            pid = rng.choice(np.array([-1, 11, 12, 40, 2**31 - 1, 3, 9][: k + 1], np.int32), size=n)
            host = rng.random(n) < 0.8
            cases.append((pid, host))
            for at in (0, n - 1, n // 2):  # one row of another process, host or not
                odd = pid.copy()
                odd[at] = 99
                cases.append((odd, host))
                lone = host.copy()
                lone[at] = True
                cases.append((odd, lone))
    return cases


@pytest.mark.parametrize("seed", range(3))
def test_only_pids_equals_the_whole_array_test(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(U, "PID_BLOCK", BLOCK)
    rng = np.random.default_rng(seed)
    for pid, host in _cases(rng):
        present = np.unique(pid[host & (pid >= 0)])
        for candidates in (present, present[:-1], np.zeros(0, np.int32), np.append(present, 5)):
            expected = _only_pids_reference(pid, host, candidates)
            assert U.only_pids(pid, host, candidates) is expected
            with monkeypatch.context() as whole:  # one block: the whole array at once
                whole.setattr(U, "PID_BLOCK", 1 << 20)
                assert U.only_pids(pid, host, candidates) is expected
            coded = CodedInts(*_codes(pid))
            assert bool(U.only_pids(coded, host, candidates)) is expected


def _codes(pid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    table, codes = np.unique(pid, return_inverse=True)
    return codes.astype(np.int32).reshape(-1), table


@pytest.mark.parametrize("seed", range(3))
def test_process_count_equals_a_plain_count(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(U, "PID_BLOCK", BLOCK)
    rng = np.random.default_rng(seed)
    for pid, host in _cases(rng):
        assert U._process_count(pid, host) == _count_reference(pid, host)
        assert U._process_count(CodedInts(*_codes(pid)), host) == _count_reference(pid, host)
