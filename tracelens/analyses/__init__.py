"""Analyses: pure functions from a :class:`~tracelens.trace.Trace` to JSON-ready results.

Each section module exposes ``section(trace, done) -> object`` where ``done`` holds the sections computed
before it (read-only) and the return value is JSON-serialisable (dicts, lists, str, int, float, None).
Typed, reusable functions live beside ``section`` in each module. :func:`analyze` runs them in order and
returns the document that ``analyze --format json`` prints (keys documented in ``docs/json.md``; its
shape typed in :mod:`tracelens.document`).

:data:`REGISTRY` is the one list of sections: its key, the title a report gives it, whether it is empty
without GPU activity, its compute function, and where reports show it. ``analyze`` and every renderer
iterate it; a new section is one entry here, one module beside this file and (optionally) one drawing
function per renderer (without one, a renderer shows the section in a generic form).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from ..document import summarize
from ..memory import MID_ARRAYS_MIN_ROWS, release_free_memory, reusing_array_pages
from ..trace import Trace
from .column_release import ColumnRelease, run_readers, value_held
from .derived import forget, reading_as
from .schedule import LastReaders, run_sections, threads_limit, usable_threads

if TYPE_CHECKING:  # types only: the document's TypedDicts are not imported by analyze (kimp17)
    from ..document import Document

JSON_SCHEMA_VERSION = "1.1"


@dataclass(frozen=True)
class Section:
    """One section of the analysis document.

    ``key``: its key in the document (and the module ``tracelens.analyses.<key>``). ``title``: its heading
    in a report. ``gpu_only``: nothing to show without GPU activity (reports omit it when ``devices`` is
    empty). ``report_order``: position in the markdown and terminal reports (None: not a section of its
    own there; diagnosis is the headline and the findings). ``early``: computed before the others, whatever
    its place in the document: it reads no other section and needs large working arrays of its own (one per
    kernel launch), so it runs before the shared joins (launch pairs, host rows) are held in memory.
    ``needs``: the sections its compute function reads from ``done``; :func:`analyze` computes them first,
    whatever sections it is asked for (they come before it in the registry). ``exclusive``: its working
    arrays are the size of the event table (on the 41M-event benchmark export each of these adds 0.6 to 1.1 GB
    at its peak, and two of them at once took analyze's peak from 1.30x to 1.55x the export; the what-if
    replay's graph holds about 175 bytes a point, and beside another big section it took the 27M-event export's
    peak from 2.9x to 3.2x), so it never runs beside another exclusive section when the sections run on two
    threads (:mod:`.schedule`), on traces of :data:`EXCLUSIVE_MIN_EVENTS` events and more.
    """

    key: str
    title: str
    gpu_only: bool
    report_order: int | None
    early: bool = False
    needs: tuple[str, ...] = ()
    exclusive: bool = False

    @property
    def compute(self) -> Callable[[Trace, dict[str, Any]], Any]:
        """``section(trace, done)`` of the section's module (imported on first use)."""
        return importlib.import_module(f"{__name__}.{self.key}").section


# Document (and compute) order: later sections may read earlier ones (diagnosis reads everything); ``early``
# sections are computed first.
REGISTRY: tuple[Section, ...] = (
    Section("devices", "GPUs", gpu_only=False, report_order=0),
    Section("kernels", "Top kernels", gpu_only=True, report_order=4),
    Section("host", "Host side", gpu_only=False, report_order=10),
    Section("gaps", "GPU idle gaps", gpu_only=True, report_order=2),
    Section("steps", "Step-time breakdown", gpu_only=False, report_order=1),
    Section("attribution", "GPU idle time by cause", gpu_only=True, report_order=3, exclusive=True),
    Section("launch", "Kernel launches", gpu_only=True, report_order=5, exclusive=True),
    Section("sync", "Synchronization", gpu_only=False, report_order=6),
    Section("ranges", "Ranges (NVTX / annotations)", gpu_only=False, report_order=9, exclusive=True),
    Section("memcpy", "Memory copies", gpu_only=True, report_order=7, exclusive=True),
    Section("occupancy", "Occupancy", gpu_only=True, report_order=8, early=True, exclusive=True),
    Section(
        "communication",
        "Communication and the GPU time breakdown",
        gpu_only=True,
        report_order=11,
        exclusive=True,
    ),
    Section("ops", "Top ops", gpu_only=False, report_order=12, exclusive=True),
    Section("whatif", "What fixing each cause would give", gpu_only=True, report_order=13, exclusive=True),
    Section(
        "diagnosis",
        "Findings",
        gpu_only=False,
        report_order=None,
        needs=(
            "devices",
            "host",
            "steps",
            "attribution",
            "launch",
            "sync",
            "memcpy",
            "occupancy",
            "communication",
            "whatif",
        ),
    ),
)
BY_KEY: dict[str, Section] = {s.key: s for s in REGISTRY}
SECTIONS: list[str] = [s.key for s in REGISTRY]  # the keys, in document order


# The exclusive sections' priority (analyze starts the first one that may run; occupancy, ``early``, comes
# before all), and the pairs of them that may run at once on the two threads: after attribution, ranges (the
# longest of the serial chain) runs beside memcpy and then communication, the two sections of the chain whose
# working arrays fit beside its own. Measured on the x1512 benchmark export (41M events, 2,882 MiB):
# ranges + memcpy and ranges + communication peaked at 3,796 and 3,852 MiB (1.32x and 1.34x the export, under
# 1.4x; the whole process at 1.33x, 1.29x before); launch and ops beside another big section took 1.41-1.49x
# (benchmarks/results/section_peaks.md, section_memory_nfree5.md).
EXCLUSIVE_ORDER: tuple[str, ...] = (
    "occupancy",
    "attribution",
    "ranges",
    "memcpy",
    "communication",
    "launch",
    "ops",
    "whatif",
)
EXCLUSIVE_PAIRS: frozenset[frozenset[str]] = frozenset(
    frozenset(pair)
    for pair in (("ranges", "memcpy"), ("ranges", "communication"), ("memcpy", "communication"))
)

# The diagnosis's work that reads the trace alone (diagnosis.prepare: the completeness judge, unexplained_idle's host
# activity, the top host names; 1.3 s of CPU at x1512), a task of the two threads where the diagnosis is in the
# run: last in priority, and from EXCLUSIVE_MIN_EVENTS events on, only beside the sections after attribution (it reads
# the values attribution computes): on the core the serial chain of big sections leaves idle, not after them.
DIAGNOSIS_AHEAD = "diagnosis (ahead)"
AHEAD_PAIRS = frozenset(
    frozenset((DIAGNOSIS_AHEAD, key))
    for key in ("ranges", "memcpy", "communication", "launch", "ops", "whatif")
)

# Below this many events the exclusive sections run beside each other like the rest: their working arrays are
# then small next to what the load and the what-if graph already take, so pairing them raised no peak, and
# keeping them apart left a core idle through the serial chain. Measured with both rules in turn (same
# documents): the 406 MB Kineto trace (1.5M events) 3.3-3.8 -> 2.9-3.4 s at the same 0.6-0.8 GiB peak; the x100
# export (2.7M) 4.0-4.9 -> 3.4-3.9 s, peak +1%; the x400 export (11M) 14.8-17.6 -> 13.9-14.9 s, peak 2.51 ->
# 2.50 GiB; at x1512 (41M) the peak rose 3.6-3.7 -> 4.2-4.3 GiB, so there they stay apart.
EXCLUSIVE_MIN_EVENTS = 16_000_000


# From this many events on analyze hands what a section freed back to the OS (numpy's big-array page cache, glibc's
# heaps, Arrow's pool) after each section: the peaks of the big exports are what the release keeps down. Below it,
# after none: the memory so kept between the sections is a few event columns' worth, while handing it back made
# every section fault in and zero fresh pages again (a quarter of analyze's CPU was the kernel's;
# benchmarks/results/kan9.md). Releases after occupancy, host, steps, attribution, ops and whatif had kept the 526
# MiB tile's (1.9M events) peak down while the masks (1-4 MiB at these sizes) sat in glibc's per-thread heaps; since
# the page cache serves them too (memory.reusing_array_pages, from 1 MiB) the two section threads reuse each other's
# freed arrays, and releasing nowhere keeps the peak at what it was with those releases, for ~37K fewer page faults
# (fresh processes, 3-6 rounds: 406 MB tile 1.5M events, peak 422-439 MiB against 456 before the page-cache change;
# 526 MiB tile 547 MiB against 548; benchmarks/results/kflt15.md).
RELEASE_EACH_MIN_EVENTS = 2_000_000


def keeps_read_pages(num_events: int) -> bool:
    """Whether analyze's sections take the big arrays' pages the read freed, where the caller keeps one page scope
    open across the read and the analysis (memory.reusing_array_pages: the CLI): from MID_ARRAYS_MIN_ROWS events
    (the page cache serves the masks too) to RELEASE_EACH_MIN_EVENTS (no section hands memory back); on the 406
    MB Kineto trace 20K page faults fewer at the same peak. Elsewhere analyze hands them back first: on smaller
    traces the sections would not take them all (held through them, +10% peak at 136K events), on bigger ones
    each section's release would (benchmarks/results/kflt15.md)."""
    return MID_ARRAYS_MIN_ROWS <= num_events < RELEASE_EACH_MIN_EVENTS


def exclusive_keys(keys: list[str], num_events: int) -> list[str]:
    """The sections of ``keys`` that must not run beside each other on a trace of ``num_events`` events: the
    ``exclusive`` ones from :data:`EXCLUSIVE_MIN_EVENTS` events on, else none."""
    if num_events < EXCLUSIVE_MIN_EVENTS:
        return []
    return [key for key in keys if BY_KEY[key].exclusive]


def run_order(keys: list[str]) -> list[str]:
    """The sections of ``keys`` that read no other, in the priority the two threads take them: ``early`` ones,
    then the exclusive ones (the longest work, which the other thread's small sections run beside) in
    :data:`EXCLUSIVE_ORDER`, then the rest in document order."""
    return sorted(
        (key for key in keys if not BY_KEY[key].needs),
        key=lambda key: (
            not BY_KEY[key].early,
            not BY_KEY[key].exclusive,
            EXCLUSIVE_ORDER.index(key) if key in EXCLUSIVE_ORDER else 0,
        ),
    )


# The sections that read each shared derived value (``columns.memo``, by :func:`.derived.memo_family`), directly or
# through the values derived from it: analyze drops a value once the last of them in its run has finished and
# sections are still to run, so its memory is not held through them (a value read again later is computed again:
# slower, never wrong; values whose last reader is the run's last section stay, as before). A value not listed
# stays until the trace goes (``event_columns``, which every section reads). ``tests/test_memo_release.py``
# checks the table against the reads analyze makes on the fixtures and real traces. A big value the diagnosis reads
# stays held to the end (it runs last): it reads small summaries instead where it can, which the last section
# holding the big value computes (the ops it names: ops.diagnosis_ops; benchmarks/results/section_memory_nfree5.md,
# section_memory_nheld7.md).
_PAIRS_READERS = (
    *("steps", "attribution", "launch", "sync", "ranges", "ops", "whatif", "diagnosis"),
    *("memcpy", "communication"),  # their GPU ops' columns
)
MEMO_READERS: dict[str, frozenset[str]] = {
    family: frozenset(readers)
    for family, readers in {
        "device_busy": (
            "devices",
            "gaps",
            "steps",
            "attribution",
            "launch",
            "ranges",
            "memcpy",
            "communication",
            "ops",
            "whatif",
            "diagnosis",
        ),
        # computed inside the launch pairs, by whichever of their readers asks first: their readers too
        "api_correlation": _PAIRS_READERS,
        "call_ids_unique": _PAIRS_READERS,
        "launch_pairs": _PAIRS_READERS,
        "kernel_union": ("memcpy", "communication"),
        # the unified-memory migrations' rows: computed by the memcpy section (it reads the copy kinds), read by the
        # completeness judge and the replay's count of unlaunched ops (.migrations)
        "migration_rows": ("memcpy", "whatif", "diagnosis"),  # one value per device (kernel_union/0, ...)
        "step_windows": ("steps", "attribution", "sync", "whatif"),
        "host_categories": ("steps", "attribution", "whatif", "diagnosis"),
        "one_time_work": ("steps", "attribution", "whatif", "diagnosis"),
        "host_rows": ("steps", "attribution"),  # and the diagnosis, which computes it again: RECOMPUTED
        "feeding_name_sums": ("attribution", "diagnosis"),
        "unexplained_intervals": ("attribution", "diagnosis"),
        # the diagnosis reads the few ops it names, which the ops section finds (ops.diagnosis_ops), not these
        "op_names": ("ops",),
        "op_tree": ("ops", "whatif"),
        "gpu_op_name_codes": ("ops",),
        "emit_nvtx_rows": ("ops",),
        "framework_op_rows": ("ops",),
        "op_evidence": ("ops", "diagnosis"),
        "flop_ops": ("ops",),
        "modules": ("ops",),
    }.items()
}


# Values a section reads but computes again rather than have them held until it runs: the host rows (163 MiB on
# the x1512 benchmark export), which the diagnosis reads only where the attribution section's lists do not name
# every thread feeding a GPU (over 64) and without GPU activity (its evidence picks a host category's rows from the
# host categories and one-time work, diagnosis.cause.category_rows); computing them took 0.3 s of CPU at x1512
# (benchmarks/results/section_memory_nfree5.md).
# The op tree and the values it derives from are read by the diagnosis only where the ops section is not in the
# run (analyze(sections=["diagnosis"])): it then finds the ops it names itself (ops.diagnosis_ops).
RECOMPUTED: dict[str, frozenset[str]] = {
    family: frozenset({"diagnosis"})
    for family in (
        "host_rows",
        "op_names",
        "op_tree",
        "gpu_op_name_codes",
        "emit_nvtx_rows",
        "framework_op_rows",
    )
}


def report_sections() -> list[Section]:
    """The sections a report draws one by one, in report order (diagnosis is drawn as the headline)."""
    return sorted((s for s in REGISTRY if s.report_order is not None), key=lambda s: s.report_order or 0)


def with_needs(sections: list[str]) -> list[str]:
    """``sections`` and every section they need (transitively), in document order."""
    wanted: set[str] = set()
    todo = list(sections)
    while todo:
        key = todo.pop()
        if key not in BY_KEY:
            raise ValueError(f"unknown analysis section {key!r} (known: {', '.join(SECTIONS)})")
        if key not in wanted:
            wanted.add(key)
            todo.extend(BY_KEY[key].needs)
    return [key for key in SECTIONS if key in wanted]


def analyze(
    trace: Trace,
    *,
    sections: list[str] | None = None,
    threads: int | None = None,
    release_columns: bool = False,
) -> Document:
    """Run every analysis section (or those in ``sections``, after the sections they need) and return the
    result document, its ``summary`` (the headline figures) computed once from the sections and placed after
    ``source``. The document holds the sections asked for; the ones computed only as inputs are left out.

    The sections that read no other section run on ``threads`` threads (default: two where the process may
    use two cores; see :mod:`.schedule`), the others after them; the document is the same either way.

    ``release_columns``: the caller owns ``trace`` and reads nothing of it afterwards (the CLI): each event column
    is released once the last section that reads it has finished (:mod:`.column_release`), so that its memory
    goes back to the OS before the sections that follow; the trace cannot be analyzed again. Off by default: a
    caller's trace is left as it was given."""
    meta = trace.metadata
    doc: dict[str, Any] = {
        "schema_version": JSON_SCHEMA_VERSION,
        "source": {
            "path": meta.source_path,
            "format": meta.source_format,
            "producer": meta.producer,
            "producer_version": meta.producer_version,
            "format_version": meta.format_version,
            "framework": meta.framework,
            "rank": meta.rank,
            "world_size": meta.world_size,
            "event_count": trace.num_events,
            "warnings": list(meta.warnings),
        },
    }
    wanted = sections or SECTIONS
    keys = with_needs(wanted)
    done: dict[str, Any] = {}

    last_readers = LastReaders(MEMO_READERS, keys)
    columns = None
    if release_columns:
        columns = ColumnRelease(*run_readers(trace, keys, MEMO_READERS), keys, RECOMPUTED)

    def release(after: str | None) -> None:
        """Release the event columns no section still to run reads (where the trace is analyze's to release)."""
        if columns is not None:
            from .columns import release_columns as release_event_columns  # imports pandas: not at import

            due = columns.due(after, lambda value: value_held(trace, value))
            release_event_columns(trace, due, after or "none: no section of this run reads it")

    def compute(name: str) -> Any:
        # not a section: memoizes what the diagnosis reads, nothing to release after it
        if name == DIAGNOSIS_AHEAD:
            with reading_as("diagnosis"):
                return importlib.import_module(f"{__name__}.diagnosis").prepare(trace)
        with reading_as(name):
            value = BY_KEY[name].compute(trace, {**doc, **done})
        forget(trace, last_readers.finished(name))  # the shared values no section still to run reads
        release(name)
        if release_each:
            release_free_memory()  # what the section freed goes back to the OS
        return value

    release_each = trace.num_events >= RELEASE_EACH_MIN_EVENTS
    independent = run_order(keys)  # the sections that read no other first, in priority order
    exclusive = exclusive_keys(independent, trace.num_events)
    ahead = [DIAGNOSIS_AHEAD] if "diagnosis" in keys else []
    if not keeps_read_pages(trace.num_events):
        release_free_memory()  # the read's freed pages, where a caller's page scope still holds them (the CLI)
    with threads_limit(threads), reusing_array_pages(trace.num_events):
        # the columns no section of this run reads (kernel launch geometry: the load kept what it gives)
        release(None)
        done.update(
            run_sections(
                independent + ahead,
                compute,
                threads=usable_threads(),
                exclusive=exclusive + ahead if exclusive else [],
                pairs=EXCLUSIVE_PAIRS | AHEAD_PAIRS,
            )
        )
        done.pop(DIAGNOSIS_AHEAD, None)
        for name in keys:  # the sections that read others (diagnosis), in document order
            if name not in done:
                done[name] = compute(name)
    doc.update((name, done[name]) for name in wanted)
    head = {
        "schema_version": doc.pop("schema_version"),
        "source": doc.pop("source"),
        "summary": summarize(doc),
    }
    return cast("Document", {**head, **doc})
