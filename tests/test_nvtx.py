"""tracelens.nvtx: the name scheme, no-op behaviour without any tool or framework, NVTX push/pop balance
(through a recording stand-in for the NVTX domain), and the framework profilers' own annotations."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tracelens import nvtx

ROOT = Path(__file__).resolve().parent.parent


class RecordingDomain:
    """Stands in for an nvtx Domain with a collector attached: records every push and pop."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str | None]] = []

    def get_event_attributes(self, message: str, color: object = None) -> str:
        return message

    def push_range(self, attributes: str) -> None:
        self.calls.append(("push", attributes))

    def pop_range(self) -> None:
        self.calls.append(("pop", None))

    def pushed_names(self) -> list[str]:
        return [name for op, name in self.calls if op == "push"]

    def balanced(self) -> bool:
        depth = 0
        for op, _ in self.calls:
            depth += 1 if op == "push" else -1
            if depth < 0:
                return False
        return depth == 0


@pytest.fixture
def domain(monkeypatch: pytest.MonkeyPatch) -> RecordingDomain:
    recorder = RecordingDomain()
    # Private on purpose: the stand-in replaces the module's NVTX domain (a real collector is only attached by
    # NVTX_INJECTION64_PATH, test_ranges_reach_an_injected_nvtx_collector), and the attribute cache holds handles
    # of the domain it replaces.
    nvtx._attributes.cache_clear()
    monkeypatch.setattr(nvtx, "_domain", recorder)
    yield recorder
    nvtx._attributes.cache_clear()


def test_names_follow_the_scheme() -> None:
    assert nvtx.DOMAIN == "tracelens"
    assert nvtx.step_name(0) == "tracelens/step#0"
    assert nvtx.step_name(12) == "tracelens/step#12"
    assert (nvtx.DATA, nvtx.FORWARD, nvtx.BACKWARD, nvtx.OPTIMIZER) == (
        "tracelens/data",
        "tracelens/forward",
        "tracelens/backward",
        "tracelens/optimizer",
    )
    assert nvtx.step(7).name == "tracelens/step#7"
    assert nvtx.forward().name == "tracelens/forward"
    assert nvtx.backward().name == "tracelens/backward"
    assert nvtx.optimizer().name == "tracelens/optimizer"
    assert nvtx.range("my block").name == "my block"  # user ranges keep the user's name


def test_context_managers_push_and_pop_in_nesting_order(domain: RecordingDomain) -> None:
    with nvtx.step(3):
        with nvtx.forward():
            pass
        with nvtx.backward():
            with nvtx.range("inner", color="red"):
                pass
        with nvtx.optimizer():
            pass
    assert domain.calls == [
        ("push", "tracelens/step#3"),
        ("push", "tracelens/forward"),
        ("pop", None),
        ("push", "tracelens/backward"),
        ("push", "inner"),
        ("pop", None),
        ("pop", None),
        ("push", "tracelens/optimizer"),
        ("pop", None),
        ("pop", None),
    ]


def test_decorator_is_one_range_per_call_and_nests_on_recursion(domain: RecordingDomain) -> None:
    @nvtx.range("fib")
    def fib(n: int) -> int:
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    assert fib.__name__ == "fib"  # functools.wraps keeps the identity
    assert fib(4) == 3
    # fib(4) makes 9 calls in all (1 + 1 + 2 + 2 + 3 by depth): one range each.
    assert domain.pushed_names() == ["fib"] * 9
    assert domain.balanced()


def test_exception_inside_a_range_propagates_and_pops(domain: RecordingDomain) -> None:
    with pytest.raises(ZeroDivisionError):
        with nvtx.step(0):
            with nvtx.forward():
                1 / 0  # noqa: B018
    assert domain.balanced()
    assert domain.pushed_names() == ["tracelens/step#0", "tracelens/forward"]


def test_data_loading_is_one_range_per_fetch(domain: RecordingDomain) -> None:
    batches = nvtx.data_loading([10, 20, 30])
    assert len(batches) == 3
    seen = []
    for batch in batches:
        seen.append(batch)
        with nvtx.range("use"):
            pass
    assert seen == [10, 20, 30]
    # One range creating the iterator, one per batch, one for the fetch that ends the loop.
    assert domain.pushed_names() == [
        "tracelens/data",
        "tracelens/data",
        "use",
        "tracelens/data",
        "use",
        "tracelens/data",
        "use",
        "tracelens/data",
    ]
    assert domain.balanced()


def test_data_loading_range_closes_before_the_batch_is_used(domain: RecordingDomain) -> None:
    iterator = iter(nvtx.data_loading(iter(["a", "b"])))
    assert next(iterator) == "a"
    assert domain.balanced()  # the fetch's range is closed while the loop body runs


def test_keras_callback_without_keras_marks_steps_across_epochs(domain: RecordingDomain) -> None:
    if "keras" in sys.modules or "tensorflow" in sys.modules:
        pytest.skip("Keras already imported in this process; the subprocess test covers the no-Keras class")
    callback = nvtx.KerasCallback()
    for epoch_batches in (2, 2):
        for batch in range(epoch_batches):
            callback.on_train_batch_begin(batch)
            callback.on_train_batch_end(batch)
    callback.on_train_batch_begin(0)
    callback.on_train_end()  # closes a step left open by an interrupted fit
    assert domain.pushed_names() == [f"tracelens/step#{i}" for i in range(5)]
    assert domain.balanced()


def test_no_profiler_means_no_torch_annotation(monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    # private: forget the cached "is torch's profiler recording?" check, so the first range below resolves it
    monkeypatch.setattr(nvtx, "_torch_recording", None)
    assert not torch._C._autograd._profiler_enabled()
    # current._torch (private): the record_function the range opened, or None; no public accessor, and only
    # the profiler's output (test_record_function_annotations_appear_in_the_torch_trace) shows it otherwise
    for _ in range(2):  # resolving, then the cached check
        with nvtx.forward() as current:
            assert current._torch is None
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
        with nvtx.forward() as current:
            assert current._torch is not None
    with nvtx.forward() as current:
        assert current._torch is None


NO_FRAMEWORKS_SCRIPT = textwrap.dedent(
    """
    import io, sys, contextlib
    import importlib.abc

    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("torch", "tensorflow", "keras", "jax"):
                raise ImportError(f"blocked: {name}")
            return None

    sys.meta_path.insert(0, Block())
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        from tracelens import nvtx

        @nvtx.range("decorated")
        def add(a, b):
            return a + b

        results = []
        for i, batch in enumerate(nvtx.data_loading(range(3))):
            with nvtx.step(i):
                with nvtx.forward():
                    results.append(add(batch, 1))
                with nvtx.backward():
                    pass
                with nvtx.optimizer():
                    pass
                with nvtx.range("user", color="red"):
                    pass
        callback = nvtx.KerasCallback()
        callback.on_train_batch_begin(0)
        callback.on_train_batch_end(0)
        callback.on_train_end()
    assert results == [1, 2, 3], results
    assert not nvtx.collector_attached()  # no NVTX tool attached
    assert not any(m.split(".")[0] in ("torch", "tensorflow", "keras") for m in sys.modules)
    assert [c.__name__ for c in type(callback).__mro__] == ["KerasCallback", "_KerasCallbackMethods", "object"]
    sys.stdout.write("captured=" + repr(out.getvalue()))
    """
)


def test_silent_no_op_without_torch_tensorflow_or_nvtx_collector(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}  # no NVTX_INJECTION64_PATH: no collector
    done = subprocess.run(
        [sys.executable, "-c", NO_FRAMEWORKS_SCRIPT],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "captured=''"  # the helpers printed and warned nothing
    assert done.stderr == ""


def test_record_function_annotations_appear_in_the_torch_trace(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    path = tmp_path / "trace.pt.trace.json.gz"
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        batches = nvtx.data_loading([torch.ones(4), torch.ones(4)])
        for i, batch in enumerate(batches):
            with nvtx.step(i):
                with nvtx.forward():
                    total = (batch * 2).sum()
                with nvtx.range("user/block"):
                    total.item()
    prof.export_chrome_trace(str(path))

    with gzip.open(path, "rt") as fh:
        events = [e for e in json.load(fh)["traceEvents"] if e.get("ph") == "X"]
    annotations = [e for e in events if e.get("cat") == "user_annotation"]
    names = sorted(e["name"] for e in annotations)
    assert names == sorted(
        ["tracelens/data"] * 4
        + ["tracelens/step#0", "tracelens/step#1"]
        + ["tracelens/forward"] * 2
        + ["user/block"] * 2
    )

    def spans(name: str) -> list[tuple[float, float]]:
        return sorted((e["ts"], e["ts"] + e["dur"]) for e in annotations if e["name"] == name)

    steps = spans("tracelens/step#0") + spans("tracelens/step#1")
    for name in ("tracelens/forward", "user/block"):
        for (start, end), (step_start, step_end) in zip(spans(name), steps, strict=True):
            assert step_start <= start and end <= step_end  # nested inside its own step
    # The aten::mul of the forward pass is recorded inside the forward range.
    forward = spans("tracelens/forward")
    muls = sorted(e["ts"] for e in events if e["name"] == "aten::mul")
    assert len(muls) == 2
    assert all(f0 <= ts <= f1 for ts, (f0, f1) in zip(muls, forward, strict=True))


TF_SCRIPT = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    import tensorflow as tf
    from tensorflow.tsl.profiler.protobuf import xplane_pb2
    from tracelens import nvtx

    logdir = Path(sys.argv[1])
    with nvtx.step(5):  # no profiler yet: must record nothing
        pass
    tf.profiler.experimental.start(str(logdir))
    for i, batch in enumerate(nvtx.data_loading(tf.data.Dataset.range(2))):
        with nvtx.step(i):
            with nvtx.forward():
                tf.reduce_sum(tf.ones((8, 8)) * tf.cast(batch, tf.float32))
    tf.profiler.experimental.stop()

    space = xplane_pb2.XSpace()
    space.ParseFromString(next(logdir.glob("plugins/profile/*/*.xplane.pb")).read_bytes())
    found = []
    for plane in space.planes:
        names = {k: v.name for k, v in plane.event_metadata.items()}
        stat_names = {k: v.name for k, v in plane.stat_metadata.items()}
        for line in plane.lines:
            for event in line.events:
                name = names[event.metadata_id]
                if name.startswith("tracelens/"):
                    stats = {stat_names[s.metadata_id]: s.int64_value or s.uint64_value for s in event.stats}
                    found.append([name, line.timestamp_ns * 1000 + event.offset_ps, event.duration_ps, stats])
    print(json.dumps(found))
    """
)


@pytest.mark.slow
def test_tf_trace_annotations_appear_in_the_xplane(tmp_path: Path) -> None:
    pytest.importorskip("tensorflow")
    done = subprocess.run(
        [sys.executable, "-c", TF_SCRIPT, str(tmp_path / "logdir")],
        capture_output=True,
        text=True,
        timeout=300,
        env={"TF_CPP_MIN_LOG_LEVEL": "3", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    by_name: dict[str, list] = {}
    for name, start_ps, duration_ps, stats in found:
        by_name.setdefault(name, []).append((start_ps, start_ps + duration_ps, stats))
    # '#' starts TraceMe metadata, so TF steps are "tracelens/step" with step_num (and _r=1: a step root).
    assert sorted(stats["step_num"] for _, _, stats in by_name["tracelens/step"]) == [0, 1]
    assert all(stats["_r"] == 1 for _, _, stats in by_name["tracelens/step"])
    assert len(by_name["tracelens/forward"]) == 2
    assert len(by_name["tracelens/data"]) == 4  # iterator creation, two batches, the final fetch
    steps = sorted(by_name["tracelens/step"])
    for (start, end, _), (step_start, step_end, _) in zip(
        sorted(by_name["tracelens/forward"]), steps, strict=True
    ):
        assert step_start <= start and end <= step_end


# A minimal NVTX collector (the role nsys plays): the NVTX library loads the shared object named by
# NVTX_INJECTION64_PATH and calls InitializeInjectionNvtx2, which installs our callbacks. They log domain
# creation and every push/pop with its registered-string message, so the test sees what a real tool sees.
FAKE_COLLECTOR_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <nvtx3/nvToolsExt.h>

static FILE *out;
static const char *strings[4096];
static int n_strings;
static const char *domains[64];
static int n_domains;

static const char *domain_name(nvtxDomainHandle_t d) {
    intptr_t i = (intptr_t)d;
    return (i > 0 && i <= n_domains) ? domains[i - 1] : "?";
}

static nvtxDomainHandle_t on_domain_create(const char *name) {
    domains[n_domains++] = name;  /* caller keeps the string alive for the domain's life */
    if (out) fprintf(out, "domain %s\n", name);
    return (nvtxDomainHandle_t)(intptr_t)n_domains;
}

static nvtxStringHandle_t on_register_string(nvtxDomainHandle_t d, const char *s) {
    if (n_strings >= 4096) return (nvtxStringHandle_t)0;  /* full: later messages log as "?" */
    char *copy = malloc(strlen(s) + 1);
    strcpy(copy, s);
    strings[n_strings++] = copy;
    return (nvtxStringHandle_t)(intptr_t)n_strings;
}

static int on_push(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
    const char *msg = "?";
    if (a->messageType == NVTX_MESSAGE_TYPE_REGISTERED) {
        intptr_t i = (intptr_t)a->message.registered;
        if (i > 0 && i <= n_strings) msg = strings[i - 1];
    } else if (a->messageType == NVTX_MESSAGE_TYPE_ASCII) {
        msg = a->message.ascii;
    }
    if (out) fprintf(out, "push %s %s\n", domain_name(d), msg);
    return 0;
}

static int on_pop(nvtxDomainHandle_t d) {
    if (out) fprintf(out, "pop %s\n", domain_name(d));
    return 0;
}

NVTX_DYNAMIC_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
    const NvtxExportTableCallbacks *callbacks = get_export_table(NVTX_ETID_CALLBACKS);
    NvtxFunctionTable table = 0;
    unsigned int size = 0;
    const char *log_path = getenv("FAKE_NVTX_LOG");  /* unset: collect silently (benchmarks) */
    out = log_path ? fopen(log_path, "w") : NULL;
    if (out) setvbuf(out, NULL, _IOLBF, 0);
    if (!callbacks || !callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size)) return 0;
    *table[NVTX_CBID_CORE2_DomainCreateA] = (NvtxFunctionPointer)on_domain_create;
    *table[NVTX_CBID_CORE2_DomainRegisterStringA] = (NvtxFunctionPointer)on_register_string;
    *table[NVTX_CBID_CORE2_DomainRangePushEx] = (NvtxFunctionPointer)on_push;
    *table[NVTX_CBID_CORE2_DomainRangePop] = (NvtxFunctionPointer)on_pop;
    return 1;
}
"""

NVTX_HEADERS = sorted(Path("/usr/local").glob("cuda*/include/nvtx3/nvToolsExt.h"))

COLLECTED_SCRIPT = textwrap.dedent(
    """
    from tracelens import nvtx

    @nvtx.range("user/decorated")
    def work():
        return 1

    for i, batch in enumerate(nvtx.data_loading([10, 20])):
        with nvtx.step(i):
            with nvtx.forward():
                work()
            with nvtx.backward():
                pass
            with nvtx.optimizer():
                pass
    assert nvtx.collector_attached()
    """
)


@pytest.mark.skipif(
    shutil.which("gcc") is None or not NVTX_HEADERS, reason="needs gcc and the NVTX v3 headers"
)
def test_ranges_reach_an_injected_nvtx_collector(tmp_path: Path) -> None:
    source = tmp_path / "collector.c"
    source.write_text(FAKE_COLLECTOR_C)
    library = tmp_path / "libcollector.so"
    include = NVTX_HEADERS[-1].parent.parent
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-O1", f"-I{include}", "-o", str(library), str(source)],
        check=True,
        capture_output=True,
    )
    log = tmp_path / "nvtx.log"
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(ROOT),
        "NVTX_INJECTION64_PATH": str(library),
        "FAKE_NVTX_LOG": str(log),
    }
    done = subprocess.run(
        [sys.executable, "-c", COLLECTED_SCRIPT], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    lines = log.read_text().splitlines()
    assert lines[0] == "domain tracelens"

    def step(i: int) -> list[str]:
        return [
            "push tracelens tracelens/data",
            "pop tracelens",
            f"push tracelens tracelens/step#{i}",
            "push tracelens tracelens/forward",
            "push tracelens user/decorated",
            "pop tracelens",
            "pop tracelens",
            "push tracelens tracelens/backward",
            "pop tracelens",
            "push tracelens tracelens/optimizer",
            "pop tracelens",
            "pop tracelens",
        ]

    # iterator creation, two steps each opening with its fetch, the fetch that ends the loop
    assert lines[1:] == [
        "push tracelens tracelens/data",
        "pop tracelens",
        *step(0),
        *step(1),
        "push tracelens tracelens/data",
        "pop tracelens",
    ]
