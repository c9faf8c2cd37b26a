"""TensorFlow 2.x CPU profiles recorded here (Keras model, tf.data pipeline, step markers), then read
with TensorFlow imported in the same process (the reader's private descriptor pool must not clash)."""

from __future__ import annotations

from pathlib import Path

import pytest

import tracelens
from tracelens.analyses.devices import device_utilization

STEPS = 5


@pytest.fixture(scope="module")
def recorded_logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tf = pytest.importorskip("tensorflow")
    logdir = tmp_path_factory.mktemp("tf_profile")
    features = tf.random.normal([256, 32], seed=1)
    labels = tf.random.uniform([256], maxval=4, dtype=tf.int32, seed=2)
    dataset = tf.data.Dataset.from_tensor_slices((features, labels)).map(lambda x, y: (x * 2.0, y))
    dataset = dataset.batch(32).repeat().prefetch(2)
    model = tf.keras.Sequential(
        [tf.keras.Input((32,)), tf.keras.layers.Dense(64, activation="relu"), tf.keras.layers.Dense(4)]
    )
    optimizer = tf.keras.optimizers.SGD(0.01)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        optimizer.apply_gradients(
            zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables, strict=True)
        )
        return loss

    batches = iter(dataset)
    train_step(*next(batches))  # trace the function before profiling
    tf.profiler.experimental.start(str(logdir))
    for step in range(STEPS):
        with tf.profiler.experimental.Trace("train", step_num=step, _r=1):
            train_step(*next(batches))
    tf.profiler.experimental.stop()
    return logdir


@pytest.mark.slow
def test_recorded_logdir_layout(recorded_logdir: Path) -> None:
    files = list(recorded_logdir.glob("plugins/profile/*/*.xplane.pb"))
    assert len(files) == 1


@pytest.mark.slow
def test_reads_steps_with_tensorflow_imported(recorded_logdir: Path) -> None:
    import sys

    assert "tensorflow" in sys.modules  # TF registered its own tensorflow.profiler.XSpace already
    trace = tracelens.load(recorded_logdir)
    df = trace.df
    steps = df[df["kind"] == "step"].sort_values("step")
    assert steps["step"].tolist() == list(range(STEPS))
    assert (steps["end_ns"] > steps["start_ns"]).all()
    # consecutive steps do not overlap (one row per step, not one per marker)
    assert (steps["start_ns"].to_numpy()[1:] >= steps["end_ns"].to_numpy()[:-1]).all()
    assert trace.metadata.framework == "tensorflow"
    assert trace.metadata.clock == "unix"  # TF 2.21 writes the Task Environment plane
    assert device_utilization(trace) == []  # CPU only: no GPU rows


@pytest.mark.slow
def test_input_pipeline_events_present(recorded_logdir: Path) -> None:
    df = tracelens.load(recorded_logdir).df
    names = df["name"].astype(str)
    iterator = df[names.str.startswith("Iterator::") | names.str.contains("IteratorGetNext")]
    assert len(iterator) >= STEPS
    assert (iterator["end_ns"] - iterator["start_ns"]).sum() > 0
    assert names.str.contains("IteratorGetNext").any()
    assert (df.loc[iterator.index, "kind"] == "cpu_op").all()
