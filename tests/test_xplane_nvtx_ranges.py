"""tracelens.nvtx user ranges under the TF profiler: a TraceMe with the stat tracelens=1, read as an annotation."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import test_xplane_helpers as pb

import tracelens

ROOT = Path(__file__).resolve().parents[1]
US = 1_000_000  # ps


def test_range_stat_makes_an_annotation_not_host_work(tmp_path: Path) -> None:
    # A user range "train_loop" [0, 100] µs around 10 kernels (i x 10 µs, 5 µs long) launched 2 µs before each (1 µs
    # calls). Read as a framework op, the range was host cpu work covering every gap: 36 µs "cpu". As an annotation
    # (what record_function ranges are in Kineto) it is no activity: the 9 gaps' 45 µs are 9 µs launch, 36 µs nothing.
    calls = [pb.event(1, i * 10 * US - 2 * US, US, [pb.stat(1, int64=i + 1)]) for i in range(1, 10)]
    calls.insert(0, pb.event(1, 0, US, [pb.stat(1, int64=1)]))
    host_events = [pb.event(2, 0, 100 * US, [pb.stat(2, int64=1)]), *calls]
    host = pb.plane(
        0,
        "/host:CPU",
        [pb.line(1, "python3", 0, host_events)],
        {1: "cuLaunchKernel", 2: "train_loop"},
        {1: "correlation_id", 2: "tracelens"},
    )
    kernels = [pb.event(1, i * 10 * US, 5 * US, [pb.stat(1, int64=i + 1)]) for i in range(10)]
    gpu = pb.plane(1, "/device:GPU:0", [pb.line(7, "Stream #7", 0, kernels)], {1: "k"}, {1: "correlation_id"})
    path = tmp_path / "host.xplane.pb"
    path.write_bytes(pb.space([host, gpu]))
    trace = tracelens.load(path)
    df = trace.df
    assert df.loc[df["name"] == "train_loop", "kind"].tolist() == ["annotation"]
    (device,) = tracelens.analyze(trace)["attribution"]["devices"]
    assert device["idle_ns"] == 45_000
    assert device["by_cause"]["launch"] == 9_000 and device["by_cause"]["nothing"] == 36_000
    assert device["by_cause"]["cpu"] == 0


TF_SCRIPT = textwrap.dedent(
    """
    import sys
    import tensorflow as tf
    from tracelens import nvtx

    tf.profiler.experimental.start(sys.argv[1])
    for i in range(2):
        with nvtx.step(i):
            with nvtx.range("my_block"):
                tf.reduce_sum(tf.ones((8, 8))).numpy()
            with nvtx.range("loss#1"):  # '#' starts TraceMe metadata: recorded without the stat
                pass
    tf.profiler.experimental.stop()
    """
)


@pytest.mark.slow
def test_user_range_recorded_by_tensorflow_is_an_annotation(tmp_path: Path) -> None:
    pytest.importorskip("tensorflow")
    logdir = tmp_path / "logdir"
    done = subprocess.run(
        [sys.executable, "-c", TF_SCRIPT, str(logdir)],
        capture_output=True,
        text=True,
        timeout=300,
        env={"TF_CPP_MIN_LOG_LEVEL": "3", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    df = tracelens.load(logdir).df
    assert df.loc[df["name"] == "my_block", "kind"].tolist() == ["annotation", "annotation"]
    assert sorted(df.loc[df["kind"] == "step", "step"].tolist()) == [0, 1]
    assert set(df.loc[df["name"] == "loss#1", "kind"]) == {"cpu_op"}  # as docs/nvtx.md says
