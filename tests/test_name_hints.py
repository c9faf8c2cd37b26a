"""The name predicates' quick pre-checks (a substring or a prefix tested before the regular expression) give the
same answer as the rule alone, written here from its definition: the regular expression on the whole name."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.analyses import names
from tracelens.analyses.diagnosis import unexplained_idle
from tracelens.event_names import strip_api_suffix

_WORD = re.compile(r"dynamo_timed|[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def _words(name: str) -> list[str]:
    found = [w.lower() for w in _WORD.findall(name)]
    return found + ["warmup" for a, b in zip(found, found[1:], strict=False) if a == "warm" and b == "up"]


COMPILE_WORDS = set(
    "compile compiler compilation compiling autotune autotuner autotuning dynamo_timed".split()
)
REFERENCE = {
    names.is_compile_name: lambda n: n in names.ONE_TIME_NAMES or bool(COMPILE_WORDS & set(_words(n))),
    names.is_warmup_name: lambda n: "warmup" in _words(n),
    names.is_input: lambda n: bool(names.INPUT_PATTERN.search(n)),
    names.is_one_time_api: lambda n: bool(names.ONE_TIME_API_PATTERN.match(strip_api_suffix(n))),
    names.is_allocation: lambda n: bool(names.ALLOCATION_PATTERN.match(strip_api_suffix(n))),
    unexplained_idle.is_rank_wait: lambda n: bool(unexplained_idle.RANK_WAIT_PATTERN.search(n)),
}

# Pieces of names each rule looks for, and their near misses, joined in any order with separators.
PIECES = (
    "compile|Compile|COMPILE|compiled|Compiled|XlaCompile|autotune|AutoTuner|autotuning|dynamo_timed|compil|"
    "inductor_do_bench_using_profiling|warm|Warm|WARM|up|Up|UP|warmup|WarmUp|warm_up|Warm-Up|swarm|DataLoader|"
    "enumerate(DataLoader)|_MultiProcessingDataLoaderIter.__next__|dataloader.py(12): __next__|"
    "dataloader.py(3): _next_data|IteratorGetNext|Iterator::Model|tracelens/data|cuInit|hipInit|cuCtxCreate|"
    "cuCtxCreate_v2|hipDevicePrimaryCtxRetain|cuModuleLoadData|cublasCreate_v2|cudnnCreate|miopenCreate|"
    "rocblasCreate|hipblasLtCreate|cufftPlan1d|hipfftPlanMany|ncclCommInitRank|rcclCommInitAll|cudaMalloc|"
    "cudaMalloc_v3020|hipHostMalloc|cuMemAlloc_v2|cuStreamCreate|cudaFree|aten::mm|İ|ß|Σ|_|::| |, op_id = 5|#|0|12|MPI_Allreduce|"
    "MPI|ncclAllReduce|rcclBroadcast|nccl:all_reduce|ncclx|c10d::allreduce_|ProcessGroupNCCL|gloo:all_reduce|"
    "RemoteCall|CollectiveReduceV2"
).split("|")
SEPARATORS = ["", " ", "_", "."]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES) | st.text(max_size=4), max_size=5), st.sampled_from(SEPARATORS))
def test_quick_checks_agree_with_the_rule(parts: list[str], sep: str) -> None:
    name = sep.join(parts)
    for predicate, reference in REFERENCE.items():
        assert predicate(name) == reference(name), (predicate.__name__, name)


def test_quick_checks_on_each_piece() -> None:
    found = {predicate.__name__: 0 for predicate in REFERENCE}
    for name in PIECES:
        for predicate, reference in REFERENCE.items():
            assert predicate(name) == reference(name), (predicate.__name__, name)
            found[predicate.__name__] += predicate(name)
    assert all(found.values()), found  # every rule matches some piece: the comparison is not vacuous
