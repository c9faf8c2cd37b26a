"""A tiny TensorFlow training loop, annotated with tracelens.nvtx, with one injected performance problem.

    python -m tracelens.templates.tf_train --scenario slow-input --steps 20 --device auto --out traces/

With ``--profile tf`` (the default) the TF profiler writes a TensorBoard logdir
``<out>/tf_<scenario>_<device>/plugins/profile/<run>/<host>.xplane.pb``; the ``.xplane.pb`` path is printed
as the last line of stdout. The default loop is an eager custom loop with every phase annotated;
``--keras`` trains with ``model.fit`` and ``nvtx.KerasCallback`` (steps only) instead.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from tracelens import nvtx
from tracelens.templates.scenarios import Scenario, parse_args


def _resolve_device(tf: Any, requested: str) -> str:
    has_gpu = bool(tf.config.list_physical_devices("GPU"))
    if requested == "auto":
        return "cuda" if has_gpu else "cpu"
    if requested == "cuda" and not has_gpu:
        raise SystemExit("tf_train: --device cuda but TensorFlow sees no GPU")
    return requested


def _batches(np: Any, spec: Scenario, count: int, seed: int) -> tuple[Any, Any]:
    rng = np.random.default_rng(seed)
    inputs = rng.standard_normal((count, spec.batch_size, spec.features), dtype=np.float32)
    labels = rng.integers(0, spec.classes, (count, spec.batch_size), dtype=np.int64)
    return inputs, labels


def _dataset(tf: Any, np: Any, spec: Scenario, count: int, seed: int) -> Any:
    inputs, labels = _batches(np, spec, count, seed)

    def generate() -> Iterator[tuple[Any, Any]]:
        for index in range(count):
            if spec.data_sleep_s:
                time.sleep(spec.data_sleep_s)  # stands in for slow decoding/augmentation
            yield inputs[index], labels[index]

    signature = (
        tf.TensorSpec((spec.batch_size, spec.features), tf.float32),
        tf.TensorSpec((spec.batch_size,), tf.int64),
    )
    dataset = tf.data.Dataset.from_generator(generate, output_signature=signature)
    if not spec.data_sleep_s:
        return dataset.prefetch(2)  # healthy input overlaps with compute
    # Slow input must stall the loop, as a loader with no workers does; tf.data would otherwise inject a
    # prefetch on its own and hide most of the sleep in a background thread.
    options = tf.data.Options()
    options.experimental_optimization.inject_prefetch = False
    options.autotune.enabled = False
    return dataset.with_options(options)


def train(argv: Sequence[str] | None = None) -> Path | None:
    """Run the template; return the .xplane.pb path (None with ``--profile none``)."""
    args = parse_args(
        "python -m tracelens.templates.tf_train",
        "TensorFlow",
        "tf",
        argv,
        extra={
            "--keras": {
                "action": "store_true",
                "help": "train with model.fit and nvtx.KerasCallback instead of the annotated loop",
            },
        },
    )
    spec: Scenario = args.scenario_spec
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

    import numpy as np
    import tensorflow as tf

    tf.random.set_seed(args.seed)
    device = _resolve_device(tf, args.device)
    spec = spec.on_device(device == "cuda")
    tf_device = "/GPU:0" if device == "cuda" else "/CPU:0"
    if device == "cpu":
        # Tiny models: one intra-op thread is as fast and keeps step times steady on a busy machine.
        tf.config.threading.set_intra_op_parallelism_threads(1)

    with tf.device(tf_device):
        model = tf.keras.Sequential(
            [
                tf.keras.Input((spec.features,)),
                tf.keras.layers.Dense(spec.hidden, activation="relu"),
                tf.keras.layers.Dense(spec.hidden, activation="relu"),
                tf.keras.layers.Dense(spec.classes),
            ]
        )
        loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        opt = tf.keras.optimizers.SGD(0.01)
        dataset = _dataset(tf, np, spec, args.steps, args.seed)
        extra_floats = spec.extra_copy_floats_cuda if device == "cuda" else spec.extra_copy_floats_cpu
        pageable_host = np.ones(extra_floats, dtype=np.float32) if extra_floats else None  # numpy: pageable
        tiny = tf.ones(1024) if spec.tiny_ops_per_step else None
        width = spec.sync_probe_width
        signal = tf.random.normal((spec.batch_size, spec.scan_length)) if spec.scan_length else None
        probe = tf.random.normal((width, width)) / width**0.5 if spec.sync_ops_per_step else None

        # One step on a dummy batch before profiling builds the layers and the optimizer's state, so that
        # step 0 of the profile is a training step like the others rather than mostly one-off setup.
        if not args.keras:
            with tf.GradientTape() as tape:
                warm_loss = loss_fn(
                    tf.zeros((spec.batch_size,), tf.int64),
                    model(tf.zeros((spec.batch_size, spec.features)), training=True),
                )
            warm_grads = tape.gradient(warm_loss, model.trainable_variables)
            opt.apply_gradients(zip(warm_grads, model.trainable_variables, strict=True))

    logdir = args.out / f"tf_{spec.name}_{device}"
    if args.profile == "tf":
        logdir.mkdir(parents=True, exist_ok=True)
        tf.profiler.experimental.start(str(logdir))

    started = time.perf_counter()
    loss: Any = None
    with tf.device(tf_device):
        if args.keras:
            model.compile(optimizer=opt, loss=loss_fn)
            history = model.fit(
                dataset, epochs=1, steps_per_epoch=args.steps, verbose=0, callbacks=[nvtx.KerasCallback()]
            )
            loss = history.history["loss"][-1]
        else:
            batches = iter(nvtx.data_loading(dataset))
            for i in range(args.steps):
                with nvtx.step(i):
                    inputs, labels = next(batches)  # inside the step: input wait counts against the step
                    if pageable_host is not None:
                        with nvtx.range("pageable_copy"):
                            tf.identity(tf.convert_to_tensor(pageable_host))
                    with nvtx.forward(), tf.GradientTape() as tape:
                        loss = loss_fn(labels, model(inputs, training=True))
                    with nvtx.backward():
                        grads = tape.gradient(loss, model.trainable_variables)
                    with nvtx.optimizer():
                        opt.apply_gradients(zip(grads, model.trainable_variables, strict=True))
                    if spec.sync_ops_per_step:
                        with nvtx.range("sync_readback"):
                            for _ in range(spec.sync_ops_per_step):
                                tf.reduce_sum(tf.matmul(probe, probe)).numpy()  # host waits for the product
                    if signal is not None:
                        with nvtx.range("row_scan"):
                            tf.cumsum(signal, axis=1)  # one block per row: the batch size sets the grid
                    if tiny is not None:
                        with nvtx.range("tiny_ops"):
                            for _ in range(spec.tiny_ops_per_step):
                                tiny = tiny * 0.999
            loss = float(loss)
    elapsed = time.perf_counter() - started

    xplane: Path | None = None
    if args.profile == "tf":
        tf.profiler.experimental.stop()
        found = sorted(logdir.glob("plugins/profile/*/*.xplane.pb"), key=lambda p: p.stat().st_mtime)
        if not found:
            raise SystemExit(f"tf_train: the TF profiler wrote no .xplane.pb under {logdir}")
        xplane = found[-1]

    print(
        f"tf_train: {args.steps} steps of {spec.name} on {device} in {elapsed:.2f} s (final loss {loss:.4f})"
    )
    print(xplane if xplane is not None else "tf_train: no trace written (--profile none)")
    return xplane


def main(argv: Sequence[str] | None = None) -> int:
    train(argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
