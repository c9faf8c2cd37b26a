"""Annotate training code once; the same range names show up in Nsight Systems, PyTorch and TF profiles.

``from tracelens import nvtx``::

    for i, batch in enumerate(nvtx.data_loading(loader)):   # each batch fetch: "tracelens/data"
        with nvtx.step(i):                                    # "tracelens/step#i"
            with nvtx.forward():                              # "tracelens/forward"
                loss = model(batch)
            with nvtx.backward():                             # "tracelens/backward"
                loss.backward()
            with nvtx.optimizer():                            # "tracelens/optimizer"
                opt.step()

    @nvtx.range("my_block")                                    # user ranges keep their own name
    def my_block(): ...

Every range is an NVTX push/pop range in domain ``"tracelens"`` (seen by ``nsys profile -t nvtx``) and,
only while that framework's profiler is recording, a ``torch.profiler.record_function`` (when torch is
already imported) and a ``tf.profiler.experimental.Trace`` (when tensorflow is already imported). Nothing
here imports torch or TensorFlow, and with no NVTX tool attached and no profiler running every helper costs
a few hundred nanoseconds (``benchmarks/bench_nvtx_overhead.py``). The name scheme is in ``docs/nvtx.md``.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

import nvtx as _nvtx

DOMAIN = "tracelens"
STEP_PREFIX = "tracelens/step#"
# TensorFlow's TraceMe treats '#' as the start of its "name#key=value#" metadata, so under the TF profiler a
# step is the range STEP_NAME_TF with stats step_num=N and _r=1 (the form XProf recognises as a step root).
STEP_NAME_TF = "tracelens/step"
DATA = "tracelens/data"
FORWARD = "tracelens/forward"
BACKWARD = "tracelens/backward"
OPTIMIZER = "tracelens/optimizer"
RESERVED_NAMES = (DATA, FORWARD, BACKWARD, OPTIMIZER)

# Colours Nsight shows for the reserved ranges (names from nvtx.colors, which needs no matplotlib).
_COLORS = {DATA: "yellow", FORWARD: "green", BACKWARD: "blue", OPTIMIZER: "purple", STEP_PREFIX: "orange"}
_STEP_COLOR = _COLORS[STEP_PREFIX]

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")

_NOT_YET = object()
_domain: Any = _NOT_YET  # the nvtx Domain, or None when no NVTX tool is attached (decided on first use)


def _nvtx_domain() -> Any:
    """The "tracelens" NVTX domain, or None when NVTX is disabled or no tool (nsys) is injected."""
    global _domain
    if _domain is _NOT_YET:
        domain = _nvtx.get_domain(DOMAIN) if _nvtx.enabled() else None
        # With no collector the nvtx package hands back its do-nothing DummyDomain.
        _domain = domain if domain is not None and hasattr(domain, "handle") else None
    return _domain


@functools.lru_cache(maxsize=4096)
def _attributes(name: str, color: str | int | None) -> Any:
    # Registering the string and resolving the colour once per (name, colour) keeps the hot path a push.
    return _nvtx_domain().get_event_attributes(message=name, color=color)


def _never() -> bool:
    return False


_torch_recording: Callable[[], bool] | None = None  # resolved once torch is imported
_tf_recording: Callable[[], bool] | None = None  # likewise for TensorFlow


def _resolve_torch_recording() -> Callable[[], bool]:
    """torch's cheap "is a profiler recording?" check (about 0.1 µs), looked up once."""
    global _torch_recording
    torch = sys.modules["torch"]
    check = getattr(getattr(getattr(torch, "_C", None), "_autograd", None), "_profiler_enabled", None)
    if check is None:  # a torch without this private hook: the Python-level flag, read on each call

        def check() -> bool:
            return bool(getattr(sys.modules.get("torch.autograd.profiler"), "_is_profiler_enabled", False))

    _torch_recording = check
    return check


def _resolve_tf_recording() -> Callable[[], bool]:
    """TensorFlow's TraceMe "enabled" check, looked up once (never when TF is only partly imported)."""
    global _tf_recording
    trace = sys.modules.get("tensorflow.python.profiler.trace")
    if trace is None:
        return _never  # TF still importing: look again next time
    _tf_recording = trace.enabled
    return _tf_recording


def _torch_enter(name: str) -> Any:
    annotation = sys.modules["torch"].autograd.profiler.record_function(name)
    annotation.__enter__()
    return annotation


def _tf_enter(name: str, step_num: int | None) -> Any:
    trace = sys.modules["tensorflow.python.profiler.trace"]
    if step_num is None:
        # A stat tracelens=1 marks the range as an annotation: a TraceMe is otherwise a framework op to a reader. Not
        # on a name with '#': TraceMe would take the name up to its first '#' (and lose the stat).
        return trace.Trace(name) if "#" in name else trace.Trace(name, tracelens=1)
    return trace.Trace(STEP_NAME_TF, step_num=step_num, _r=1)  # Trace starts its clock on creation


class _Range:
    """One annotated region: NVTX push/pop plus the framework profilers' own annotation when recording."""

    __slots__ = ("name", "color", "step_num", "_torch", "_tf", "_pushed")

    def __init__(self, name: str, color: str | int | None = None, step_num: int | None = None) -> None:
        self.name = name
        self.color = color
        self.step_num = step_num

    def __enter__(self) -> _Range:
        # The hot path when nothing records: a global read, two dict look-ups, a cached check per framework.
        domain = _domain if _domain is not _NOT_YET else _nvtx_domain()
        if domain is not None:
            domain.push_range(_attributes(self.name, self.color))
        self._pushed = domain is not None
        self._torch = self._tf = None
        modules = sys.modules
        if "torch" in modules and (_torch_recording or _resolve_torch_recording())():
            self._torch = _torch_enter(self.name)
        if "tensorflow" in modules and (_tf_recording or _resolve_tf_recording())():
            self._tf = _tf_enter(self.name, self.step_num)
        return self

    def __exit__(self, *exc: object) -> None:
        # Close in reverse order of opening so the nesting is the same in every profiler.
        if self._tf is not None:
            self._tf.__exit__(None, None, None)
            self._tf = None
        if self._torch is not None:
            self._torch.__exit__(None, None, None)
            self._torch = None
        if self._pushed:
            _domain.pop_range()
            self._pushed = False

    def __call__(self, func: F) -> F:
        """Use as a decorator: every call of ``func`` is one range (a fresh one, so recursion nests)."""
        name, color, step_num = self.name, self.color, self.step_num

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with _Range(name, color, step_num):
                return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]


def range(name: str, color: str | int | None = None) -> _Range:  # noqa: A001 - the name the issue asks for
    """A named range, as a context manager (``with nvtx.range("x"):``) or decorator (``@nvtx.range("x")``)."""
    return _Range(name, color)


def collector_attached() -> bool:
    """Whether an NVTX collector (e.g. ``nsys profile -t nvtx``) records this process's ranges; decided once,
    on first use. Without one every range skips its NVTX call."""
    return _nvtx_domain() is not None


def step_name(i: int) -> str:
    """The range name of step ``i``: ``tracelens/step#i``."""
    return f"{STEP_PREFIX}{int(i)}"


def step(i: int) -> _Range:
    """Mark iteration ``i`` (a context manager around one whole training step)."""
    i = int(i)
    return _Range(f"{STEP_PREFIX}{i}", _STEP_COLOR, i)


def forward() -> _Range:
    """The forward pass of a step."""
    return _Range(FORWARD, _COLORS[FORWARD])


def backward() -> _Range:
    """The backward pass (gradient computation) of a step."""
    return _Range(BACKWARD, _COLORS[BACKWARD])


def optimizer() -> _Range:
    """The optimizer update of a step."""
    return _Range(OPTIMIZER, _COLORS[OPTIMIZER])


class data_loading(Iterable[T]):  # noqa: N801 - reads as a function at the call site
    """Wrap any iterable (DataLoader, tf.data dataset, generator): each fetch of the next batch is one
    ``tracelens/data`` range, so time the loop spends waiting for input is visible. ``len()`` passes through."""

    def __init__(self, iterable: Iterable[T]) -> None:
        self.iterable = iterable

    def __iter__(self) -> Iterator[T]:
        # Creating the iterator can be input work too (a DataLoader starts its workers): it is a data range,
        # run now rather than at the first next() as a generator body would.
        with _Range(DATA, _COLORS[DATA]):
            iterator = iter(self.iterable)
        return self._fetch(iterator)

    @staticmethod
    def _fetch(iterator: Iterator[T]) -> Iterator[T]:
        fetch = _Range(DATA, _COLORS[DATA])  # reused: this generator's fetches never overlap
        while True:
            with fetch:
                try:
                    item = next(iterator)
                except StopIteration:
                    return
            yield item

    def __len__(self) -> int:
        return len(self.iterable)  # type: ignore[arg-type]


class _KerasCallbackMethods:
    """Marks each Keras training batch as ``tracelens/step#N`` (N counts batches across epochs)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.global_step = 0
        self._open: _Range | None = None

    def on_train_batch_begin(self, batch: int, logs: dict | None = None) -> None:
        self._close()
        self._open = step(self.global_step)
        self._open.__enter__()

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        self._close()
        self.global_step += 1

    def on_train_end(self, logs: dict | None = None) -> None:
        self._close()

    def _close(self) -> None:
        if self._open is not None:
            self._open.__exit__(None, None, None)
            self._open = None


@functools.cache
def _keras_callback_class(base: type | None) -> type:
    bases = (_KerasCallbackMethods,) if base is None else (_KerasCallbackMethods, base)
    return type("KerasCallback", bases, {"__module__": __name__, "__doc__": _KerasCallbackMethods.__doc__})


def _keras_base() -> type | None:
    """keras.callbacks.Callback when Keras/TensorFlow is already imported (never imported from here)."""
    for module_name in ("keras", "tensorflow"):
        module = sys.modules.get(module_name)
        if module is None:
            continue
        try:
            return (
                module.keras.callbacks.Callback if module_name == "tensorflow" else module.callbacks.Callback
            )
        except AttributeError:
            continue
    return None


def __getattr__(attr: str) -> Any:
    # KerasCallback is built on first access so that importing tracelens.nvtx never imports TensorFlow;
    # it subclasses keras.callbacks.Callback when Keras is loaded, a plain class otherwise.
    if attr == "KerasCallback":
        return _keras_callback_class(_keras_base())
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")
