"""The training templates: each scenario runs on CPU under its framework's profiler, the trace loads with
tracelens.load, and the table shows the tracelens ranges, the steps and the scenario's injected work.

Expected numbers are computed here from the loaded table with plain pandas/numpy (steps by step number,
data ranges clipped to step intervals); nothing below calls the analyses."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import tracelens
from tracelens.templates.scenarios import SCENARIOS

ROOT = Path(__file__).resolve().parent.parent
STEPS = 4
PHASES = ("tracelens/forward", "tracelens/backward", "tracelens/optimizer")


def named(frame: pd.DataFrame, name: str) -> pd.DataFrame:
    return frame[frame["name"].astype(str) == name]


def step_intervals(frame: pd.DataFrame) -> pd.DataFrame:
    """One interval per step number: earliest start to latest end of the step rows carrying it (a Kineto
    trace has both ProfilerStep#N and tracelens/step#N)."""
    steps = frame[frame["kind"].astype(str) == "step"]
    steps = steps[steps["step"].notna()]
    return (
        steps.groupby(steps["step"].astype("int64"))
        .agg(start=("start_ns", "min"), end=("end_ns", "max"))
        .sort_index()
    )


def inside(rows: pd.DataFrame, intervals: pd.DataFrame) -> np.ndarray:
    """Which rows lie wholly within one of the (disjoint, sorted) intervals."""
    starts = intervals["start"].to_numpy(np.int64)
    ends = intervals["end"].to_numpy(np.int64)
    idx = np.searchsorted(starts, rows["start_ns"].to_numpy(np.int64), side="right") - 1
    ok = idx >= 0
    ok[ok] &= rows["end_ns"].to_numpy(np.int64)[ok] <= ends[idx[ok]]
    return ok


def data_fetch_per_step(frame: pd.DataFrame) -> np.ndarray:
    """Nanoseconds inside ``tracelens/data`` ranges, per step."""
    steps = step_intervals(frame)
    data = named(frame, "tracelens/data")
    data = data[inside(data, steps)]
    idx = (
        np.searchsorted(steps["start"].to_numpy(np.int64), data["start_ns"].to_numpy(np.int64), side="right")
        - 1
    )
    return np.bincount(
        idx, weights=(data["end_ns"] - data["start_ns"]).to_numpy(np.float64), minlength=len(steps)
    )


# What the slow-input scenario injects: a sleep of this long inside every step's data fetch. The templates
# run on CPU beside other jobs, so no test asserts a measured share of a step: a busy machine stretches the
# compute (and the healthy fetch) but can never make a sleep shorter.
INJECTED_SLEEP_NS = SCENARIOS["slow-input"].data_sleep_s * 1e9


def check_slow_input_against_healthy(slow: pd.DataFrame, healthy: pd.DataFrame) -> None:
    """Every slow step's fetch holds the injected sleep (10% slack for the clock); the healthy fetch, batches
    already in memory, takes under half of it in a typical step: a margin no load on the machine closes."""
    assert (data_fetch_per_step(slow) >= 0.9 * INJECTED_SLEEP_NS).all()
    assert float(np.median(data_fetch_per_step(healthy))) < 0.5 * INJECTED_SLEEP_NS


def check_common(frame: pd.DataFrame, steps: int) -> pd.DataFrame:
    """The ranges and steps every annotated template run must show; returns the step intervals."""
    intervals = step_intervals(frame)
    assert list(intervals.index) == list(range(steps))
    assert (np.diff(intervals["start"].to_numpy()) > 0).all()
    for name in PHASES:
        rows = named(frame, name)
        assert len(rows) == steps, name
        assert inside(rows, intervals).all(), f"{name} outside its step"
        assert (rows["kind"].astype(str) == "annotation").all()
    data = named(frame, "tracelens/data")
    # one fetch per step inside the steps; the iterator's creation happens before step 0
    assert int(inside(data, intervals).sum()) == steps
    return intervals


@pytest.fixture(scope="module")
def pytorch_traces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    pytest.importorskip("torch")
    from tracelens.templates import pytorch_train

    out = tmp_path_factory.mktemp("pytorch")
    return {
        name: pytorch_train.train(
            [
                "--scenario",
                name,
                "--steps",
                str(STEPS),
                "--device",
                "cpu",
                "--profile",
                "torch",
                "--out",
                str(out),
            ]
        )
        for name in SCENARIOS
    }


@pytest.mark.slow
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_pytorch_scenario_trace(pytorch_traces: dict[str, Path], scenario: str) -> None:
    path = pytorch_traces[scenario]
    assert path.name == f"pytorch_{scenario}_cpu.pt.trace.json.gz"
    trace = tracelens.load(path)
    assert trace.metadata.source_format == "kineto"
    frame = trace.df
    intervals = check_common(frame, STEPS)
    step_names = set(frame.loc[frame["kind"].astype(str) == "step", "name"].astype(str))
    assert {f"tracelens/step#{i}" for i in range(STEPS)} <= step_names
    assert {f"ProfilerStep#{i}" for i in range(STEPS)} <= step_names

    cpu_ops = frame[frame["kind"].astype(str) == "cpu_op"]
    if scenario == "slow-input":
        check_slow_input_against_healthy(frame, tracelens.load(pytorch_traces["healthy"]).df)
    elif scenario == "pageable-copies":
        copies = named(frame, "pageable_copy")
        assert len(copies) == STEPS and inside(copies, intervals).all()
    elif scenario == "tiny-kernels":
        tiny = named(frame, "tiny_ops")
        assert len(tiny) == STEPS
        muls = named(cpu_ops, "aten::mul_")
        assert (
            int(inside(muls, tiny.rename(columns={"start_ns": "start", "end_ns": "end"})).sum())
            == STEPS * SCENARIOS[scenario].tiny_ops_per_step
        )
    elif scenario == "sync-every-step":
        readback = named(frame, "sync_readback")
        assert len(readback) == STEPS
        items = named(cpu_ops, "aten::item")
        assert (
            int(inside(items, readback.rename(columns={"start_ns": "start", "end_ns": "end"})).sum())
            == STEPS * SCENARIOS[scenario].sync_ops_per_step
        )
    if scenario in ("small-batch", "healthy"):
        # Every Linear is one aten::addmm(bias, input, weight^T); its input's first dimension is the batch.
        spec = SCENARIOS[scenario].on_device(False)  # these runs are on CPU: the CPU-sized model
        with gzip.open(path, "rt") as fh:
            addmm = [
                e["args"]["Input Dims"]
                for e in json.load(fh)["traceEvents"]
                if e.get("name") == "aten::addmm" and e.get("ph") == "X"
            ]
        assert len(addmm) == 3 * STEPS  # three layers, one forward each step
        assert {tuple(dims[1]) for dims in addmm} == {
            (spec.batch_size, spec.features),
            (spec.batch_size, spec.hidden),
        }
        assert len(named(cpu_ops, "aten::addmm")) == 3 * STEPS


def test_pytorch_template_command_line(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tracelens.templates.pytorch_train",
            "--scenario",
            "healthy",
            "--steps",
            "2",
            "--device",
            "cpu",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert Path(last) == tmp_path / "pytorch_healthy_cpu.pt.trace.json.gz"
    assert Path(last).stat().st_size > 0
    wrong = subprocess.run(
        [sys.executable, "-m", "tracelens.templates.pytorch_train", "--profile", "tf"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert wrong.returncode == 2 and "--profile tf cannot record a PyTorch program" in wrong.stderr


TF_STEPS = 6
TF_RUNS = [
    ("healthy", []),
    ("slow-input", []),
    ("healthy", ["--keras"]),
    ("pageable-copies", []),
    ("sync-every-step", []),
    ("tiny-kernels", []),
    ("small-batch", []),
]

TF_SCRIPT = textwrap.dedent(
    """
    import json, sys
    from tracelens.templates import tf_train

    out, runs = sys.argv[1], json.loads(sys.argv[2])
    paths = [str(tf_train.train(["--scenario", s, "--steps", sys.argv[3], "--device", "cpu", "--profile", "tf",
                                 "--out", f"{out}/{i}", *extra]))
             for i, (s, extra) in enumerate(runs)]
    print(json.dumps(paths))
    """
)


@pytest.fixture(scope="module")
def tf_traces(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    pytest.importorskip("tensorflow")
    out = tmp_path_factory.mktemp("tf")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-c", TF_SCRIPT, str(out), json.dumps(TF_RUNS), str(TF_STEPS)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return [Path(p) for p in json.loads(done.stdout.strip().splitlines()[-1])]


@pytest.mark.slow
def test_tf_healthy_and_slow_input(tf_traces: list[Path]) -> None:
    healthy, slow = (tracelens.load(p) for p in tf_traces[:2])
    for trace in (healthy, slow):
        assert trace.metadata.source_format == "xplane"
        assert trace.metadata.framework == "tensorflow"
        check_common(trace.df, TF_STEPS)
    check_slow_input_against_healthy(slow.df, healthy.df)


@pytest.mark.slow
@pytest.mark.parametrize("run", range(3, len(TF_RUNS)), ids=[name for name, _ in TF_RUNS[3:]])
def test_tf_other_scenarios(tf_traces: list[Path], run: int) -> None:
    scenario = TF_RUNS[run][0]
    spec = SCENARIOS[scenario]
    frame = tracelens.load(tf_traces[run]).df
    intervals = check_common(frame, TF_STEPS)
    eager = frame[frame["name"].astype(str).str.startswith("EagerLocalExecute: ")]
    extra_range, op, per_step = {
        "pageable-copies": ("pageable_copy", None, 0),
        "sync-every-step": ("sync_readback", "EagerLocalExecute: Sum", spec.sync_ops_per_step),
        "tiny-kernels": ("tiny_ops", "EagerLocalExecute: Mul", spec.tiny_ops_per_step),
        "small-batch": (None, None, 0),
    }[scenario]
    if extra_range is not None:
        rows = named(frame, extra_range)
        assert len(rows) == TF_STEPS and inside(rows, intervals).all()
        if op is not None:
            ops = named(eager, op)
            within = inside(ops, rows.rename(columns={"start_ns": "start", "end_ns": "end"}))
            assert int(within.sum()) == TF_STEPS * per_step


@pytest.mark.slow
def test_tf_keras_callback_marks_steps(tf_traces: list[Path]) -> None:
    frame = tracelens.load(tf_traces[2]).df
    assert list(step_intervals(frame).index) == list(range(TF_STEPS))
    assert named(frame, "tracelens/forward").empty  # model.fit: steps only, no phase ranges


def test_cpu_sizing_keeps_gpu_sizes_and_caps_cpu() -> None:
    healthy, slow = SCENARIOS["healthy"], SCENARIOS["slow-input"]
    assert healthy.on_device(True) == healthy  # a GPU runs the documented sizes unchanged
    cpu = healthy.on_device(False)
    # On CPU healthy runs exactly slow-input's model, so the pair differs only by the injected sleep.
    assert (
        (cpu.batch_size, cpu.features, cpu.hidden)
        == (slow.batch_size, slow.features, slow.hidden)
        == (64, 128, 128)
    )
    assert SCENARIOS["small-batch"].on_device(False).batch_size == 2  # already below the cap
