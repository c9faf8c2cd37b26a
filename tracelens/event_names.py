"""Rules on event names that every reader and the analyses share, each written once.

**Step markers.** ``ProfilerStep#N`` (the PyTorch profiler's step ranges) and ``tracelens/step#N``
(:func:`tracelens.nvtx.step`) mark step N, where N is a non-negative decimal integer below 2^63 (steps are int64
columns; a longer number in a range name is user text, not a step). A name such as
``ProfilerStep#-1`` or ``tracelens/step#x`` is not a step marker: the row keeps its own kind (an annotation or
an op). Negative numbers are rejected in every reader because no profiler writes them: PyTorch numbers
``ProfilerStep#N`` from 0 (``profiler.step()`` counts up), TensorFlow's ``step_num`` and XLA's ``Steps`` lines
count from 0, ``tracelens.nvtx.step(i)`` documents ``i`` as a batch counter, and none of the recorded traces
(``fixtures/``, ``../shared/traces``) holds a negative marker; the readers also use -1 for "no step".

**API suffixes.** CUDA and HIP API names carry suffixes that do not change what the call does: the ABI
version (``cudaLaunchKernel_v7000``, ``cuMemAlloc_v2``, ``cudaGetDeviceProperties_v2_v12000``) and the
per-thread default stream variant (``cudaMemcpyAsync_ptsz``, ``cudaMemcpy_ptds``). Every reader names an API
call without them, so one call has one name whatever the profiler or CUDA version. Only API names
(``cuda``/``cu``/``hip`` then letters and digits, no underscore before the suffixes) are stripped: kernel
names such as ``volta_scudnn_128x64_relu_interior_nn_v1`` keep theirs.
"""

from __future__ import annotations

import re

# group 1: the step number
STEP_MARKER_PATTERN = r"^(?:ProfilerStep|tracelens/step)#(\d+)$"
_STEP_MARKER = re.compile(STEP_MARKER_PATTERN)

# One regular expression for Python's re and Arrow's RE2 (pyarrow.compute.replace_substring_regex):
# replacing a match with API_SUFFIX_REPLACEMENT leaves the name without its suffixes.
API_SUFFIX_PATTERN = r"^((?:cuda|cu|hip)[A-Za-z0-9]*)(?:_v\d+|_ptsz|_ptds)+$"
API_SUFFIX_REPLACEMENT = r"\1"
_API_SUFFIX = re.compile(API_SUFFIX_PATTERN)


_STEP_LIMIT = 2**63  # steps are int64 columns: a number past them (user text) marks no step


def step_number(name: str) -> int | None:
    """N of a step marker (``ProfilerStep#N``, ``tracelens/step#N``, 0 <= N < 2^63), None for any other name."""
    match = _STEP_MARKER.match(name)
    if not match:
        return None
    number = int(match.group(1))
    return number if number < _STEP_LIMIT else None


def is_step_marker(name: str) -> bool:
    """Whether ``name`` marks a step (see :func:`step_number`)."""
    return step_number(name) is not None


_DRIVER_NAME = re.compile(r"^cu[A-Z]")


def is_driver_call(name: str) -> bool:
    """Whether ``name`` is a CUDA driver API call (``cuLaunchKernel``, ``cuMemcpyHtoDAsync``; runtime calls begin
    ``cuda``)."""
    return _DRIVER_NAME.match(name) is not None


def strip_api_suffix(name: str) -> str:
    """A CUDA/HIP API name without its version and per-thread-stream suffixes (other names unchanged)."""
    return _API_SUFFIX.sub(API_SUFFIX_REPLACEMENT, name)
