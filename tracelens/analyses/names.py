"""Name patterns shared by the analyses: which host calls are input waits, blocking syncs, launches.

Classification works on the *distinct* names of a trace (a categorical column's categories), never per
event, so it stays cheap on millions of rows. Names follow the table conventions: runtime names without
``_vNNNN`` suffixes (readers strip them; the predicates below strip them again for names from elsewhere,
:func:`tracelens.event_names.strip_api_suffix`); CUDA and HIP spellings both appear.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from ..arrow_calls import call, match_substring_regex, starts_with
from ..arrow_read import arrow_bools
from ..event_names import strip_api_suffix
from ..trace import ALL_KINDS, ANNOTATION, CPU_OP, DRIVER, PYTHON, RUNTIME, STEP, string_array
from .kinds import kind_mask

if TYPE_CHECKING:  # imported where a function needs it: analyze's path runs without pandas
    import pandas as pd

# Host categories used by gap attribution and the step breakdown, in priority order: when host activity
# of several categories overlaps an instant, the instant goes to the first one listed. `startup` (one-time
# work, found by tracelens/analyses/startup.py) comes first: a first call that waits in a sync or a launch
# is still start-up.
STARTUP = "startup"
SYNC = "sync"
INPUT = "input"
LAUNCH = "launch"
CPU = "cpu"
NOTHING = "nothing"
# Gap time whose next GPU op was already queued (its launch call had returned before the gap began): the GPU's own
# gaps, not split among the host's categories (attribution.py).
QUEUED = "queued"
HOST_CATEGORY_PRIORITY: tuple[str, ...] = (STARTUP, SYNC, INPUT, LAUNCH, CPU)
CAUSES: tuple[str, ...] = (*HOST_CATEGORY_PRIORITY, NOTHING)

# Waiting for the next batch: PyTorch DataLoader (record_function and Python frames), tf.data iterators,
# and tracelens's own `tracelens/data` range.
INPUT_PATTERN = re.compile(
    r"enumerate\(DataLoader\)"
    r"|DataLoader\w*Iter\w*\.__next__"
    r"|dataloader\.py\(\d+\): (__next__|_next_data)"
    # the same frames as the XLA/TF Python tracer names them ("$file.py:line function"), and grain's and tf.data's
    # Python iterators: a JAX program fed by a torch DataLoader, grain or tf.data
    r"|^\$(dataloader\.py:\d+ (__next__|_next_data)|data_loader\.py:\d+ __next__|iterator_ops\.py:\d+ __next__)$"
    r"|IteratorGetNext"
    r"|Iterator::"
    r"|^tracelens/data$"
)

# Calls that block the host until GPU work finishes. Synchronous (non-Async) memcpy blocks as well;
# hipMemcpyWithStream is HIP's blocking copy despite its stream argument.
SYNC_CALL_PATTERN = re.compile(
    r"^(cuda|hip)(Device|Thread|Stream|Event)Synchronize$"
    r"|^cu(Ctx|Stream|Event)Synchronize$"
)
SYNC_COPY_PATTERN = re.compile(
    r"^(cuda|hip)Memcpy(2D|3D|Peer|ToSymbol|FromSymbol|2DToArray|2DFromArray|ToArray|FromArray|WithStream|DtoH|HtoD|DtoD)?$"
    r"|^cuMemcpy(DtoH|HtoD|DtoD|Peer|2D|3D|AtoH|HtoA)?$"
)

# JAX's host waits for device values, as the XLA Python tracer names its frames ("$file.py:line function"):
# jax.block_until_ready and Array.block_until_ready (jax/_src/api.py, array.py), jax.device_get, and Array._value
# (array.py; device_array.py before JAX 0.4: the device-to-host fetch behind np.asarray(x), float(x), x.item(),
# print(x)). XLA records no CUDA/HIP synchronize for them (the host waits on a buffer's ready event): the shared
# JAX-on-ROCm XSpace spends 8.1 ms in 5 block_until_ready frames and has no synchronize call at all.
FRAMEWORK_WAIT_PATTERN = re.compile(
    r"^\$\S+\.py:\d+ (block_until_ready|device_get)$|^\$(array|device_array)\.py:\d+ _value$"
)

# Kernel launch calls (a GPU op enqueued by them) and CUDA/HIP graph launches. XLA's profiler names a graph
# launch with the graph's id after it, "cuGraphLaunch (CudaGraph:12)": a parenthesised suffix is allowed there.
_GRAPH_LAUNCH = r"^(cuda|hip|cu)GraphLaunch(?: \([^()]*\))?$"
KERNEL_LAUNCH_PATTERN = re.compile(
    r"^(cuda|hip)(Ext)?(Module)?Launch(Cooperative)?Kernel\w*$"
    r"|^cuLaunch(Cooperative)?Kernel\w*$"
    r"|" + _GRAPH_LAUNCH
)
GRAPH_LAUNCH_PATTERN = re.compile(_GRAPH_LAUNCH)

# One-time work, by name. API calls that set up the CUDA/HIP context, load modules or create library
# handles; every library's handle/plan creation; NCCL communicator set-up.
ONE_TIME_API_PATTERN = re.compile(
    r"^cuInit$|^hipInit$"
    r"|^(cu|hip)(Ctx|DevicePrimaryCtx)(Create|Retain)\w*$"
    r"|^(cu|hip)(Module|Library)Load\w*$"
    r"|^(cublas|cublasLt|cudnn|cusparse|cusolverDn|cusolverSp|curand|miopen|rocblas|hipblas|hipblasLt|hipsparse)Create\w*$"
    r"|^(cufft|hipfft)Plan\w*$"
    r"|^(nccl|rccl)CommInit\w*$"
)
# Allocation and creation calls: absent from a framework's steady state (caching allocators, stream and
# event pools), so inside the warm-up window they are the first iteration's growth.
ALLOCATION_PATTERN = re.compile(
    r"^(cuda|hip)(Malloc|MallocHost|MallocManaged|MallocPitch|Malloc3D|HostAlloc|HostMalloc|Free|FreeHost|"
    r"HostFree|HostRegister|HostUnregister|StreamCreate|StreamCreateWithFlags|StreamCreateWithPriority|"
    r"EventCreate|EventCreateWithFlags)$"
    r"|^cuMem(Alloc|AllocPitch|AllocHost|AllocManaged|HostAlloc|Free|FreeHost|HostRegister|HostUnregister|"
    r"Create|Release|Map|Unmap|AddressReserve|AddressFree|SetAccess)\w*$"
    r"|^cu(Stream|Event)Create\w*$"
)
# Words (from names split at punctuation and camelCase) that mark compilation or autotuning: torch.compile's
# `... (dynamo_timed)` ranges, XLA/TF/PJRT compile events, autotuners. "Compiled" is not among them:
# `Torch-Compiled Region` is every call of a compiled function.
COMPILE_WORDS = frozenset(
    {"compile", "compiler", "compilation", "compiling", "autotune", "autotuner", "autotuning", "dynamo_timed"}
)
ONE_TIME_NAMES = frozenset({"inductor_do_bench_using_profiling"})  # inductor's autotuning benchmark
ONE_TIME_OVERHEAD_PATTERN = re.compile(r"(?i)module load|function load|context (creat|init)")
_WORD = re.compile(r"dynamo_timed|[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")

# Collective-communication kernels (NCCL, RCCL): they use a few blocks on purpose and wait on other GPUs.
COLLECTIVE_KERNEL_PATTERN = re.compile(r"(?i)(^|[^a-z])(nccl|rccl)[A-Z_a-z]*(kernel|dev)")

# Kernels of vendor math libraries (cuBLAS/cuBLASLt incl. nvjet, cuDNN incl. its cask/xmma engines, CUTLASS,
# flash/fused attention, rocBLAS/hipBLASLt Tensile `Cijk_`, MIOpen, composable_kernel): their grid and block
# shape are chosen by the library's heuristics or autotuning for the problem size, so an under-filled grid or
# a low occupancy is the library's tuned choice, not a launch parameter the user set.
LIBRARY_KERNEL_PATTERN = re.compile(
    r"(?i)cublas|nvjet|splitKreduce|gemv2[NT]|gemmSN|gemmk1_kernel"
    r"|\b(maxwell|pascal|volta|turing|ampere|ada|hopper|blackwell|sm\d{2,3})_\w*(gemm|conv|fprop|dgrad|wgrad|fmha)"
    r"|cudnn|cask_|xmma|cutlass|flash_?(fwd|bwd|attn)|flash::|fmha|implicit_convolve|winograd"
    r"|Cijk_|miopen|rocblas|hipblas|\bck::|ck_tile"
)

# PyTorch's emit_nvtx(): one NVTX range per op call, "aten::mm, seq = 12, op_id = 5, sizes = [[8, 64], [64, 32]]"
# (older: "aten::mm, seq = 12", "aten::linear, sizes = [...]"); the op name is the text before the first ", ".
EMIT_NVTX_PATTERN = re.compile(r"^([^,]+), (?:seq|op_id|sizes|input_op_ids) = ")
# A numbered marker, one name per instance: "ProfilerStep#12".
_NUMBERED = re.compile(r"^(.*\S#)\d+$")
# The root frames of a Python thread (Thread.start -> _bootstrap -> _bootstrap_inner -> run) and of a
# multiprocessing child (spawn_main -> _main -> BaseProcess._bootstrap -> run): each spans its thread's whole
# life, so its time is the thread's, not work done in it.
THREAD_BOOTSTRAP_PATTERN = re.compile(
    r"^(?:.*/)?threading\.py\(\d+\): (_bootstrap|_bootstrap_inner|run)$"
    r"|^(?:.*/)?multiprocessing/(process\.py\(\d+\): (_bootstrap|run)|spawn\.py\(\d+\): (spawn_main|_main))$"
)


def words(name: str) -> list[str]:
    """Lower-case words of a name split at punctuation and camelCase ("XlaCompile" -> xla, compile)."""
    found = [w.lower() for w in _WORD.findall(name)]
    # "warm_up", "Warm-Up", "WarmUp" -> warmup
    return [*found, *("warmup" for a, b in zip(found, found[1:], strict=False) if a == "warm" and b == "up")]


# How the sections list rows recorded without a name (a null or empty name: an NVTX range with neither text nor
# textId), rather than as a blank row: the ranges section, the host section's top names.
NO_NAME = "(no name)"


def name_template(name: str) -> str:
    """The name that instances of one thing share: an emit_nvtx op range's op name (``aten::mm, op_id = 5``
    -> ``aten::mm``), a numbered marker with ``N`` for its number (``ProfilerStep#12`` ->
    ``ProfilerStep#N``); any other name is its own template."""
    if m := EMIT_NVTX_PATTERN.match(name):
        return m.group(1)
    if m := _NUMBERED.match(name):
        return m.group(1) + "N"
    return name


def is_thread_bootstrap(name: str) -> bool:
    return bool(THREAD_BOOTSTRAP_PATTERN.match(name))


# Every alternative of ONE_TIME_API_PATTERN and ALLOCATION_PATTERN starts with one of these (stripping a suffix
# keeps the start): other names are not tested further.
_ONE_TIME_API_STARTS = ("cu", "hip", "miopen", "rocblas", "nccl", "rccl")


def is_one_time_api(name: str) -> bool:
    return name.startswith(_ONE_TIME_API_STARTS) and bool(ONE_TIME_API_PATTERN.match(strip_api_suffix(name)))


def is_allocation(name: str) -> bool:
    return name.startswith(("cu", "hip")) and bool(ALLOCATION_PATTERN.match(strip_api_suffix(name)))


# Substrings of the lower-cased name that every compile word, and "warmup" (a word, or "warm" then "up"),
# contains: a name without them has no such word, so the word split is skipped (the predicates below run on
# every distinct name, tens of thousands of NVTX op ranges on an emit_nvtx export).
_COMPILE_HINTS = ("compil", "autotun", "dynamo_timed")


def is_compile_name(name: str) -> bool:
    if name in ONE_TIME_NAMES:
        return True
    lower = name.lower()
    if not any(hint in lower for hint in _COMPILE_HINTS):
        return False
    return not COMPILE_WORDS.isdisjoint(words(name))


def is_warmup_name(name: str) -> bool:
    """A user range or step named as warm-up ("warmup", "warm_up", "WarmUp" as a word)."""
    return "warm" in name.lower() and "warmup" in words(name)


def is_one_time_overhead(name: str) -> bool:
    return bool(ONE_TIME_OVERHEAD_PATTERN.search(name))


# The kernel-name rules' answers, by name: the occupancy section, the what-if model, its critical path and run_join
# each test the same kernel names (C++ template names of hundreds of characters, where the regexes' searches are
# the cost). An answer depends on the name's text alone, so a name's kept answer is never stale; at most
# KEPT_ANSWERS names are kept per rule (then all are dropped: memory stays bounded on any number of traces).
KEPT_ANSWERS = 1 << 14
_collective_answers: dict[str, bool] = {}
_library_answers: dict[str, bool] = {}
# Every match of each pattern in an ASCII name contains, lower-cased, one of these texts (a non-ASCII name is always
# searched: the patterns' case folding reaches beyond ASCII): a name without them is no match, found by one search
# of plain texts (5x faster than the library pattern's case-insensitive alternatives on a Kineto trace's names).
_COLLECTIVE_HINTS = re.compile("nccl|rccl")
_LIBRARY_HINTS = re.compile(
    "|".join(
        re.escape(hint)
        for hint in (
            *("cublas", "nvjet", "splitkreduce", "gemv2", "gemm", "conv", "fprop", "dgrad", "wgrad", "fmha"),
            *(
                "cudnn",
                "cask_",
                "xmma",
                "cutlass",
                "flash",
                "winograd",
                "cijk_",
                "miopen",
                "rocblas",
                "hipblas",
            ),
            *("ck::", "ck_tile"),
        )
    )
)


def _kept_answer(
    answers: dict[str, bool], pattern: re.Pattern[str], hints: re.Pattern[str], name: str
) -> bool:
    found = answers.get(name)
    if found is None:
        found = (not name.isascii() or hints.search(name.lower()) is not None) and bool(pattern.search(name))
        if len(answers) >= KEPT_ANSWERS:
            answers.clear()
        answers[name] = found  # (two threads may both test a new name: the same answer)
    return found


def is_collective_kernel(name: str) -> bool:
    return _kept_answer(_collective_answers, COLLECTIVE_KERNEL_PATTERN, _COLLECTIVE_HINTS, name)


def is_library_kernel(name: str) -> bool:
    return _kept_answer(_library_answers, LIBRARY_KERNEL_PATTERN, _LIBRARY_HINTS, name)


# Every alternative of INPUT_PATTERN contains one of these: a name without them is not an input wait.
_INPUT_HINTS = (
    "DataLoader",
    "dataloader.py(",
    "Iterator",
    "tracelens/data",
    "$dataloader.py:",
    "$data_loader.py:",
    "$iterator_ops.py:",
)


def is_input(name: str) -> bool:
    return any(hint in name for hint in _INPUT_HINTS) and bool(INPUT_PATTERN.search(name))


def is_blocking_sync(name: str) -> bool:
    """A host call that waits for the GPU: an explicit synchronize or a synchronous copy."""
    base = strip_api_suffix(name)
    return bool(SYNC_CALL_PATTERN.match(base) or SYNC_COPY_PATTERN.match(base))


def is_framework_wait(name: str) -> bool:
    """A Python frame in which the host waits for device values (JAX: FRAMEWORK_WAIT_PATTERN)."""
    return name.startswith("$") and bool(FRAMEWORK_WAIT_PATTERN.match(name))


def is_sync_copy(name: str) -> bool:
    return bool(SYNC_COPY_PATTERN.match(strip_api_suffix(name)))


def is_kernel_launch(name: str) -> bool:
    return bool(KERNEL_LAUNCH_PATTERN.match(strip_api_suffix(name)))


def is_graph_launch(name: str) -> bool:
    return bool(GRAPH_LAUNCH_PATTERN.match(strip_api_suffix(name)))


def name_mask(names: pd.Series, predicate: Callable[[str], bool]) -> np.ndarray:
    """Boolean array: ``predicate(name)`` per row, evaluated once per distinct name."""
    import pandas as pd

    if isinstance(names.dtype, pd.CategoricalDtype):
        categories = names.cat.categories
        lookup = np.fromiter((bool(predicate(str(c))) for c in categories), dtype=bool, count=len(categories))
        codes = names.cat.codes.to_numpy()
        return (
            np.where(codes >= 0, lookup[np.maximum(codes, 0)], False)
            if len(lookup)
            else np.zeros(len(names), bool)
        )
    values = names.astype("string").fillna("")
    uniques, inverse = np.unique(values.to_numpy(dtype=object).astype(str), return_inverse=True)
    lookup = np.fromiter((bool(predicate(u)) for u in uniques), dtype=bool, count=len(uniques))
    return lookup[inverse] if len(uniques) else np.zeros(len(names), bool)


def names_in_use(codes: np.ndarray, size: int) -> np.ndarray:
    """Dictionary positions that some row uses (O(rows), no sort): a column's dictionary can be far larger than
    the names of the rows asked about (every NVTX text, when the kernel rows are tested)."""
    used = np.zeros(size + 1, bool)
    used[codes] = True  # code -1 marks the extra slot
    return np.flatnonzero(used[:size])


def code_map(codes: np.ndarray, dictionary: np.ndarray, fn: Callable[[str], Any], fill: Any) -> np.ndarray:
    """Object array: ``fn`` of each row's name (``fill`` for null), computed once per distinct name used."""
    lookup = np.full(len(dictionary) + 1, fill, dtype=object)  # code -1 picks the last slot
    for i in names_in_use(codes, len(dictionary)):  # a loop over distinct names, not rows
        lookup[i] = fn(str(dictionary[i]))
    return lookup[codes]


def code_mask(codes: np.ndarray, dictionary: np.ndarray, predicate: Callable[[str], bool]) -> np.ndarray:
    """Boolean array: ``predicate`` of each row's name, given dictionary codes (-1 = null -> False)."""
    lookup = np.zeros(len(dictionary) + 1, bool)  # code -1 picks the last slot
    used = names_in_use(codes, len(dictionary))
    lookup[used] = np.fromiter(
        (bool(predicate(str(dictionary[i]))) for i in used), dtype=bool, count=used.size
    )
    return lookup[codes]


def code_masks(
    codes: np.ndarray, dictionary: np.ndarray, predicates: tuple[Callable[[str], bool], ...]
) -> list[np.ndarray]:
    """:func:`code_mask` for several predicates (at most 8) at once: the used names found once, one gather."""
    row_bits = code_bits(codes, dictionary, predicates)[codes]
    return [(row_bits & (1 << k)) != 0 for k in range(len(predicates))]


def code_bits(
    codes: np.ndarray, dictionary: np.ndarray, predicates: tuple[Callable[[str], bool], ...]
) -> np.ndarray:
    """Per dictionary code (and a last slot for -1, all clear): bit k set where ``predicates[k]`` (at most 8) holds
    for the name; tested at the names ``codes`` use only."""
    bits = np.zeros(len(dictionary) + 1, np.uint8)  # code -1 picks the last slot
    for i in names_in_use(codes, len(dictionary)):  # a loop over distinct names, not rows
        name = str(dictionary[i])
        bits[i] = sum(1 << k for k, predicate in enumerate(predicates) if predicate(name))
    return bits


# Every name that a predicate the host categories or the name rules test accepts (input waits, blocking syncs,
# one-time APIs, allocations, compile words, warm-up, module loading) starts with one of these prefixes or,
# lower-cased, contains one of these hints; a non-ASCII name is always tested (Python's lower() and the regexes'
# case folding reach beyond ASCII). Arrow finds the names with them in a few passes over the dictionary, so the
# predicates run in Python on those few names only and no pass over the rows collects the names in use.
_NAME_PREFIXES = ("cu", "hip", "miopen", "rocblas", "nccl", "rccl")  # APIs, allocations, syncs
_NAME_HINTS = (
    *("compil", "autotun", "dynamo_timed", "inductor_do_bench_using_profiling"),  # is_compile_name
    "warm",  # is_warmup_name
    *("module load", "function load", "context creat", "context init"),  # is_one_time_overhead
    *("dataloader", "iterator", "tracelens/data"),  # is_input's hints, lower-cased
    *("block_until_ready", "device_get", " _value"),  # is_framework_wait
)
_HINTS_PATTERN = "|".join(_NAME_HINTS)  # letters, digits, "_", "/" and spaces: no regex syntax
assert all(c.isalnum() or c in "_/ " for c in _HINTS_PATTERN.replace("|", ""))
# Rows whose name is one of this many codes or fewer are found by one comparison per code: a pass over the int32
# codes each, 6x cheaper than a gather of a table by code (numpy widens the index to int64 first).
_FEW_CODES = 4


def candidate_names(names: np.ndarray) -> np.ndarray:
    """Dictionary positions of the names a predicate of this module may accept (a superset: _NAME_HINTS)."""
    try:
        text = string_array(list(names))  # (pa.array imports pandas)
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # not all strings: every name is tested, as str(name)
        return np.arange(len(names))
    maybe = call("invert", call("string_is_ascii", text))
    for prefix in _NAME_PREFIXES:
        maybe = call("or", maybe, starts_with(text, prefix))
    maybe = call(
        "or", maybe, match_substring_regex(call("ascii_lower", text), _HINTS_PATTERN)
    )  # one pass for all
    return np.flatnonzero(arrow_bools(maybe, True))  # null: tested as "None"


def dictionary_bits(names: np.ndarray, predicates: tuple[Callable[[str], bool], ...]) -> np.ndarray:
    """Per dictionary code (and a last slot for -1, all clear): bit k set where ``predicates[k]`` (at most 8, each
    one whose names _NAME_HINTS covers) holds for the name. ``:func:`code_bits` tests the names the rows use,
    found by a pass over every row; this tests the dictionary's candidates."""
    bits = np.zeros(len(names) + 1, np.uint8)
    for i in candidate_names(names):  # a loop over the few candidate names, not rows
        name = str(names[i])
        bits[i] = sum(1 << k for k, predicate in enumerate(predicates) if predicate(name))
    return bits


def rows_named(name: np.ndarray, table: np.ndarray) -> np.ndarray | None:
    """Boolean per row: ``table[name]`` (``table``: a bool per code, and a False last slot for code -1); None
    where no code is set (no row is)."""
    codes = np.flatnonzero(table[:-1])
    if codes.size == 0:
        return None
    if codes.size > _FEW_CODES:
        return table[name]
    mask = name == int(codes[0])
    for code in codes[1:]:
        mask |= name == int(code)
    return mask


def _kinds_table(*wanted: str) -> np.ndarray:
    lookup = np.zeros(len(ALL_KINDS) + 1, bool)  # the extra slot is kind -1 (unknown)
    lookup[[ALL_KINDS.index(k) for k in wanted]] = True
    return lookup


_INPUT_KINDS = _kinds_table(RUNTIME, DRIVER, CPU_OP, PYTHON, ANNOTATION, STEP)


def host_category_codes(kind: np.ndarray, name: np.ndarray, names: np.ndarray) -> np.ndarray:
    """:func:`host_category` on numpy columns (``kind`` indexes ALL_KINDS, ``name`` indexes ``names``): cpu and
    launch by comparisons of the kinds (no gather of a per-kind table), input waits and blocking syncs tested on
    the dictionary's candidate names, their rows found by comparisons where they are few names (often none: no
    row read)."""
    # -1, cpu or launch by arithmetic on the two (disjoint) kind masks as int8: 4x cheaper than a masked store
    out = kind_mask(kind, (CPU_OP, PYTHON)).view(np.int8) * np.int8(HOST_CATEGORY_PRIORITY.index(CPU) + 1)
    api = kind_mask(kind, (RUNTIME, DRIVER))
    out += api.view(np.int8) * np.int8(HOST_CATEGORY_PRIORITY.index(LAUNCH) + 1)
    out -= np.int8(1)
    bits = dictionary_bits(names, (is_input, is_blocking_sync, is_framework_wait))
    inputs = rows_named(name, (bits & 1) != 0)
    if inputs is not None:
        rows = np.flatnonzero(inputs)
        del inputs
        out[rows[_INPUT_KINDS[kind[rows]]]] = HOST_CATEGORY_PRIORITY.index(INPUT)
    sync = rows_named(name, (bits & 2) != 0)
    if sync is not None:
        sync &= api
    waits = rows_named(name, (bits & 4) != 0)
    if waits is not None:  # a framework's wait: a Python frame
        waits &= kind_mask(kind, (PYTHON,))
        sync = waits if sync is None else sync | waits
    if sync is not None:  # after input: a sync is never input
        change = np.subtract(np.int8(HOST_CATEGORY_PRIORITY.index(SYNC)), out)  # out += sync * (SYNC - out)
        change *= sync.view(np.int8)
        out += change
    return out


def host_category(kinds: pd.Series, names: pd.Series) -> np.ndarray:
    """Per-row host category as an int8 index into :data:`HOST_CATEGORY_PRIORITY` (-1: not host work).

    - sync: runtime/driver calls that block (synchronize, synchronous memcpy), and Python frames of a framework's
      waits for device values (:func:`is_framework_wait`: JAX's block_until_ready, device_get, Array._value);
    - input: any host row whose name is an input wait (DataLoader next, tf.data iterator, tracelens/data);
    - launch: every other runtime/driver call (launches, async copies, allocations: the CUDA/HIP API);
    - cpu: framework ops and Python frames;
    - -1: annotations, steps, OS-runtime calls, overhead and GPU rows (containers or not host work).
    """
    api = name_mask(kinds, lambda k: k in (RUNTIME, DRIVER))
    host_work = name_mask(kinds, lambda k: k in (RUNTIME, DRIVER, CPU_OP, PYTHON, ANNOTATION, STEP))
    cpu = name_mask(kinds, lambda k: k in (CPU_OP, PYTHON))
    python = name_mask(kinds, lambda k: k == PYTHON)
    sync = (api & name_mask(names, is_blocking_sync)) | (python & name_mask(names, is_framework_wait))
    inp = host_work & ~sync & name_mask(names, is_input)
    out = np.full(len(api), -1, dtype=np.int8)
    out[cpu] = HOST_CATEGORY_PRIORITY.index(CPU)
    out[api] = HOST_CATEGORY_PRIORITY.index(LAUNCH)
    out[inp] = HOST_CATEGORY_PRIORITY.index(INPUT)
    out[sync] = HOST_CATEGORY_PRIORITY.index(SYNC)
    return out
