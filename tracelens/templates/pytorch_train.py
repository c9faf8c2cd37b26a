"""A tiny PyTorch training loop, annotated with tracelens.nvtx, with one injected performance problem.

    python -m tracelens.templates.pytorch_train --scenario slow-input --steps 20 --device auto --out traces/

With ``--profile torch`` (the default) it writes ``<out>/pytorch_<scenario>_<device>.pt.trace.json.gz`` with
``torch.profiler`` (a ``ProfilerStep#N`` per step) and prints that path as the last line of stdout. Under
Nsight Systems use ``--profile none`` (docs/templates.md has the command lines).
"""

from __future__ import annotations

import sys
import time
import warnings
from collections.abc import Iterator, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from tracelens import nvtx
from tracelens.templates.scenarios import Scenario, parse_args


def _resolve_device(torch: Any, requested: str) -> str:
    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested == "cuda" and not torch.cuda.is_available():
        raise SystemExit("pytorch_train: --device cuda but torch sees no CUDA device")
    return requested


class SyntheticBatches:
    """A map-style dataset whose items are whole batches (used with ``DataLoader(batch_size=None)``).

    Batches are generated once up front so that only ``data_sleep_s`` (the slow-input scenario's injected
    stall) costs time at fetch.
    """

    def __init__(self, torch: Any, spec: Scenario, count: int, seed: int, pinned: bool) -> None:
        generator = torch.Generator().manual_seed(seed)
        self.inputs = torch.randn(count, spec.batch_size, spec.features, generator=generator)
        self.labels = torch.randint(0, spec.classes, (count, spec.batch_size), generator=generator)
        if pinned:
            # Pinned once here, not per batch at fetch (DataLoader(pin_memory=True) with num_workers=0 pins on
            # the training thread, and the caching host allocator's cudaHostAlloc takes milliseconds).
            self.inputs, self.labels = self.inputs.pin_memory(), self.labels.pin_memory()
        self.sleep_s = spec.data_sleep_s

    def __len__(self) -> int:
        return int(self.inputs.shape[0])

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        if self.sleep_s:
            time.sleep(self.sleep_s)  # stands in for slow decoding/augmentation on the main process
        return self.inputs[index], self.labels[index]


def train(argv: Sequence[str] | None = None) -> Path | None:
    """Run the template; return the trace path (None with ``--profile none``)."""
    args = parse_args("python -m tracelens.templates.pytorch_train", "PyTorch", "torch", argv)
    spec: Scenario = args.scenario_spec

    import torch
    import torch.nn.functional as F
    from torch import nn
    from torch.utils.data import DataLoader

    torch.manual_seed(args.seed)
    device = _resolve_device(torch, args.device)
    on_gpu = device == "cuda"
    spec = spec.on_device(on_gpu)
    if not on_gpu:
        # These models are tiny: one intra-op thread is as fast, and on a busy machine extra OpenMP threads
        # wait on each other for tens of milliseconds per op, which would swamp the injected cause.
        torch.set_num_threads(1)
    pinned = spec.pinned_memory and on_gpu

    model = nn.Sequential(
        nn.Linear(spec.features, spec.hidden),
        nn.ReLU(),
        nn.Linear(spec.hidden, spec.hidden),
        nn.ReLU(),
        nn.Linear(spec.hidden, spec.classes),
    ).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(
        SyntheticBatches(torch, spec, args.steps, args.seed, pinned),
        batch_size=None,
        shuffle=False,
        num_workers=0,
    )
    extra_floats = spec.extra_copy_floats_cuda if on_gpu else spec.extra_copy_floats_cpu
    # Plain torch.empty memory is pageable: copying it to the GPU is synchronous and staged.
    pageable_host = torch.ones(extra_floats) if extra_floats else None
    tiny = torch.ones(1024, device=device) if spec.tiny_ops_per_step else None
    signal = torch.randn(spec.batch_size, spec.scan_length, device=device) if spec.scan_length else None
    width = spec.sync_probe_width
    probe: Any = torch.randn(width, width, device=device) / width**0.5 if spec.sync_ops_per_step else None

    trace_path: Path | None = None
    if args.profile == "torch":
        activities = [torch.profiler.ProfilerActivity.CPU]
        if on_gpu:
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        # A schedule makes prof.step() write ProfilerStep#N markers; one active window covers every step.
        with warnings.catch_warnings():  # "won't be using warmup": intended, every step is recorded
            warnings.simplefilter("ignore", UserWarning)
            schedule = torch.profiler.schedule(wait=0, warmup=0, active=args.steps, repeat=1)
        # Shapes let a reader see the batch size in every op ("Input Dims"), e.g. small-batch's 2.
        profiler: Any = torch.profiler.profile(activities=activities, schedule=schedule, record_shapes=True)
        args.out.mkdir(parents=True, exist_ok=True)
        trace_path = args.out / f"pytorch_{spec.name}_{device}.pt.trace.json.gz"
    else:
        profiler = nullcontext()

    def run_step(batch: Any) -> Any:
        inputs, labels = batch
        inputs = inputs.to(device, non_blocking=pinned)
        labels = labels.to(device, non_blocking=pinned)
        if pageable_host is not None:
            with nvtx.range("pageable_copy"):
                pageable_host.to(device)
        with nvtx.forward():
            loss = F.cross_entropy(model(inputs), labels)
        with nvtx.backward():
            opt.zero_grad(set_to_none=True)
            loss.backward()
        with nvtx.optimizer():
            opt.step()
        if spec.sync_ops_per_step:
            with nvtx.range("sync_readback"), torch.no_grad():
                for _ in range(spec.sync_ops_per_step):
                    (probe @ probe).sum().item()  # blocks until the product is done
                    if on_gpu:
                        torch.cuda.synchronize()
        if signal is not None:
            with nvtx.range("row_scan"), torch.no_grad():
                torch.cumsum(signal, dim=1)  # one block per row: the batch size sets the grid
        if tiny is not None:
            with nvtx.range("tiny_ops"), torch.no_grad():
                for _ in range(spec.tiny_ops_per_step):
                    tiny.mul_(0.999)
        return loss

    # One warm-up step on a dummy batch before the profiler starts, as users profile the steady state
    # (torch.profiler.schedule's wait/warmup): CUDA context, cuBLAS handles and first-use module loading
    # otherwise fill the first recorded step (hundreds of ms on a GPU against a few ms per step).
    dummy = (torch.zeros(spec.batch_size, spec.features), torch.zeros(spec.batch_size, dtype=torch.long))
    with nvtx.range("warmup"):
        run_step(dummy)
    if on_gpu:
        torch.cuda.synchronize()

    started = time.perf_counter()
    batches: Iterator[Any] = iter(nvtx.data_loading(loader))
    with profiler as prof:
        for i in range(args.steps):
            with nvtx.step(i):
                loss = run_step(next(batches))  # fetched inside the step: input wait counts against it
            if prof is not None:
                prof.step()
        if on_gpu:
            torch.cuda.synchronize()
    elapsed = time.perf_counter() - started

    print(
        f"pytorch_train: {args.steps} steps of {spec.name} on {device} in {elapsed:.2f} s "
        f"(final loss {loss.item():.4f})"
    )
    if trace_path is not None:
        profiler.export_chrome_trace(str(trace_path))
        print(trace_path)
    else:
        print("pytorch_train: no trace written (--profile none)")
    return trace_path


def main(argv: Sequence[str] | None = None) -> int:
    train(argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
