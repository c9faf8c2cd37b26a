"""Input waits in the Python tracer's frames of an XSpace (``$file.py:line function``): a JAX program fed by a
PyTorch DataLoader, grain or tf.data shows its wait as ``$dataloader.py:631 __next__``, ``$data_loader.py:N
__next__`` or ``$iterator_ops.py:N __next__``. Only Kineto's spelling of the DataLoader frame
(``dataloader.py(631): __next__``) was an input wait: an input-bound JAX step was host_launch_overhead
("jit the whole step, bigger batches")."""

from __future__ import annotations

from pathlib import Path

import pytest
import test_xplane_helpers as pb

import tracelens
from tracelens.analyses import analyze
from tracelens.analyses.names import is_input

US = 1_000_000  # ps
STEPS = 5


@pytest.mark.parametrize(
    ("name", "wait"),
    [
        ("$dataloader.py:631 __next__", True),  # torch.utils.data.DataLoader
        ("$dataloader.py:675 _next_data", True),
        ("$data_loader.py:412 __next__", True),  # grain.python.DataLoader
        ("$iterator_ops.py:809 __next__", True),  # tf.data's Python iterator
        ("$train.py:20 __next__", False),
        ("$dataloader.py:631 collate", False),
        ("dataloader.py(631): __next__", True),  # Kineto's spelling, as before
    ],
)
def test_python_tracer_input_frames(name: str, wait: bool) -> None:
    assert is_input(name) is wait


def test_jax_step_waiting_on_its_data_loader_is_input_bound(tmp_path: Path) -> None:
    # per step at t0 = 1000 i us: the data loader's __next__ [0, 700) us, then PjitFunction(f) [700, 800) with the
    # launch [710, 720) in it; the kernel [730, 980). GPU idle per gap: [980, 1730) of the next step, 750 us: 700 us
    # in __next__ ([1000, 1700)) and 30 us in PjitFunction ([1700, 1730), its launch [1710, 1720) in it).
    host, kernels = [], []
    for i in range(STEPS):
        t0 = i * 1000 * US
        host += [
            pb.event(1, t0, 700 * US),
            pb.event(2, t0 + 700 * US, 100 * US),
            pb.event(3, t0 + 710 * US, 10 * US, [pb.stat(1, int64=i + 1)]),
        ]
        kernels.append(pb.event(1, t0 + 730 * US, 250 * US, [pb.stat(1, int64=i + 1)]))
    host_plane = pb.plane(
        0,
        "/host:CPU",
        [pb.line(9, "python3", 0, host)],
        {1: "$dataloader.py:631 __next__", 2: "PjitFunction(f)", 3: "cuLaunchKernel"},
        {1: "correlation_id"},
    )
    gpu = pb.plane(
        1, "/device:GPU:0", [pb.line(2, "Stream #2", 0, kernels)], {1: "fusion"}, {1: "correlation_id"}
    )
    path = tmp_path / "h.xplane.pb"
    path.write_bytes(pb.space([host_plane, gpu]))
    doc = analyze(tracelens.load(path))
    (device,) = doc["attribution"]["devices"]
    assert device["by_cause"]["input"] == (STEPS - 1) * 700_000
    assert device["by_cause"]["launch"] == (STEPS - 1) * 10_000
    assert device["by_cause"]["cpu"] == (STEPS - 1) * 20_000
    assert doc["diagnosis"]["primary"]["cause"] == "input_pipeline"
