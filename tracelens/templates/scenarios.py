"""The training scenarios both templates can run, each with one injected cause of low GPU utilization.

A scenario is a small set of knobs; ``pytorch_train`` and ``tf_train`` read the same knobs so the same
scenario means the same thing in both frameworks. ``expected_cause`` is the diagnosis category tracelens
must name for a trace recorded on a GPU (documented in ``docs/templates.md``).
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Scenario:
    name: str
    expected_cause: str | None  # diagnosis category the analysis must name; None = healthy
    description: str
    # The model on a GPU: big enough that a step's kernels take milliseconds (fp32, ~260 GFLOP per step,
    # ~5 ms on an H100), so the GPU, not the host's launches, sets the pace unless a cause is injected.
    batch_size: int = 2048
    features: int = 1024
    hidden: int = 4096
    classes: int = 10
    data_sleep_s: float = 0.0  # per-batch sleep in the data loader (slow-input)
    pinned_memory: bool = True  # pin host batches so copies are async (False: pageable copies)
    extra_copy_floats_cuda: int = 0  # a big pageable host->device copy per step, on a GPU
    extra_copy_floats_cpu: int = 0  # the same copy's size on CPU, kept small so CPU runs stay fast
    sync_ops_per_step: int = 0  # matrix products each followed by .item() / synchronize
    sync_probe_width: int = 2048  # the square matrix each readback multiplies (~0.3 ms fp32 on an H100)
    tiny_ops_per_step: int = 0  # tiny elementwise ops per step (each one kernel launch on a GPU)
    scan_length: int = 0  # a running sum over each sample's sequence of this length (one block per row)

    def on_device(self, on_gpu: bool) -> Scenario:
        """The scenario as run on the chosen device.

        On a CPU every model shrinks to at most the CPU size below, so runs take seconds and scenarios that
        differ only in their injected cause (healthy vs slow-input) differ only in that cause's cost: the
        healthy run is then the known-better one of the pair, as `tracelens diff` demonstrations need.
        """
        if on_gpu:
            return self
        return dataclasses.replace(
            self,
            batch_size=min(self.batch_size, CPU_MAX_BATCH),
            features=min(self.features, CPU_MAX_WIDTH),
            hidden=min(self.hidden, CPU_MAX_WIDTH),
            sync_probe_width=min(self.sync_probe_width, CPU_MAX_WIDTH),
            scan_length=min(self.scan_length, CPU_MAX_SCAN),
        )


# Model size ceiling on a CPU (see Scenario.on_device).
CPU_MAX_BATCH = 64
CPU_MAX_WIDTH = 128
CPU_MAX_SCAN = 4096


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario(
            "healthy",
            None,
            "Pinned, prefetched batches and a model big enough to keep the GPU busy; nothing injected.",
        ),
        Scenario(
            "slow-input",
            "input_pipeline",
            "The data loader sleeps 50 ms per batch in the training process (num_workers=0): the GPU "
            "waits for input every step.",
            data_sleep_s=0.050,
            batch_size=64,
            features=128,
            hidden=128,  # little compute: the wait stands out
        ),
        Scenario(
            "pageable-copies",
            "memcpy",
            "Every step copies a large pageable (not pinned) host tensor to the GPU (64 MiB on a GPU): "
            "synchronous, slow host->device copies.",
            pinned_memory=False,
            extra_copy_floats_cuda=16 * 1024 * 1024,
            extra_copy_floats_cpu=256 * 1024,
        ),
        Scenario(
            "sync-every-step",
            "synchronization",
            "After the update, 64 checks each multiply a 2048x2048 matrix and read back a scalar of the result "
            "(.item() / torch.cuda.synchronize()): the host waits for every product, then queues the next one "
            "while the GPU idles, instead of queueing them all ahead.",
            sync_ops_per_step=64,
        ),
        Scenario(
            "tiny-kernels",
            "host_launch_overhead",
            "1,000 tiny elementwise ops per step on a 1,024-element tensor: each is a kernel launch whose "
            "host cost exceeds its GPU time.",
            tiny_ops_per_step=1000,
        ),
        Scenario(
            "small-batch",
            "low_occupancy",
            "Batch of 2 through 64-wide layers, plus a running sum (cumsum) over each sample's 4M-long "
            "sequence: the scan kernel gets one block per row, so 2 blocks run on a GPU of 100+ SMs for "
            "milliseconds.",
            batch_size=2,
            features=64,
            hidden=64,
            scan_length=4 * 1024 * 1024,
        ),
    )
}


def build_parser(prog: str, framework: str) -> argparse.ArgumentParser:
    """The command line both templates share."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description=f"A tiny {framework} training loop annotated with tracelens.nvtx, with an injected "
        "performance problem. Prints the trace's path as the last line of stdout.",
    )
    parser.add_argument(
        "--scenario",
        choices=sorted(SCENARIOS),
        default="healthy",
        help="which problem to inject (docs/templates.md)",
    )
    parser.add_argument("--steps", type=int, default=20, help="training steps to run (default 20)")
    parser.add_argument(
        "--device",
        choices=("cpu", "cuda", "auto"),
        default="auto",
        help="where to train (auto: a GPU when there is one)",
    )
    parser.add_argument(
        "--profile",
        choices=("torch", "tf", "none"),
        default=None,
        help="profiler to record with (default: this template's own); 'none' for running under nsys profile",
    )
    parser.add_argument(
        "--out", type=Path, default=Path("tracelens-traces"), help="directory the trace is written to"
    )
    parser.add_argument("--seed", type=int, default=0)
    return parser


def parse_args(
    prog: str,
    framework: str,
    own_profiler: str,
    argv: Sequence[str] | None,
    extra: dict[str, dict] | None = None,
) -> argparse.Namespace:
    """Parse and check the shared options; a profiler of the other framework is a usage error."""
    parser = build_parser(prog, framework)
    for flag, kwargs in (extra or {}).items():
        parser.add_argument(flag, **kwargs)
    args = parser.parse_args(argv)
    if args.profile is None:
        args.profile = own_profiler
    if args.profile not in (own_profiler, "none"):
        parser.error(
            f"--profile {args.profile} cannot record a {framework} program; use "
            f"--profile {own_profiler}, or --profile none under nsys"
        )
    if args.steps < 1:
        parser.error("--steps must be at least 1")
    args.scenario_spec = SCENARIOS[args.scenario]
    return args
