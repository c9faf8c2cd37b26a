"""Event columns released after their last reader, when ``analyze`` owns the trace (``release_columns=True``: the
CLI, which reads nothing of the trace once the document is built).

The event store holds every column to the end of ``analyze`` (1,720 MiB on the 41M-event benchmark export), though
most sections read a few columns and many columns are read only by the first sections: kernel launch geometry only
by the load's occupancy calculator, whose results ``tracelens.enrich`` keeps. :data:`COLUMN_READERS` names, per
column, the sections that read it, directly or through a shared value they compute (``analyses.MEMO_READERS``,
:data:`KERNEL_LAUNCHES`); :class:`ColumnRelease` says, as sections finish, which columns no section still to run
can read, and :func:`.columns.release_columns` drops them (the store's arrays and the numpy views of them), so that
their memory goes back to the OS before the big sections that follow. A read of a released column raises
:class:`tracelens.reads.ColumnReleasedError` naming the column and the reader: a missing reader is an internal
error, never a wrong number. ``tests/test_column_release.py`` checks the table against the reads analyze makes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Mapping

from ..enrich import launches_held
from ..trace import Trace
from .derived import held

# The shared value of the kernel launches' geometry that ``tracelens.enrich`` computes at load (per trace) and the
# occupancy section and the what-if replay read (``KernelOccupancy``): computed again from the geometry columns
# only where the load did not keep it.
KERNEL_LAUNCHES = "kernel_launches"
KERNEL_LAUNCHES_READERS = ("occupancy", "whatif")

_GEOMETRY = (
    "grid_x",
    "grid_y",
    "grid_z",
    "block_x",
    "block_y",
    "block_z",
    "registers_per_thread",
    "static_shared_bytes",
    "dynamic_shared_bytes",
)

# Per event column, its readers: sections (``analyses.REGISTRY`` keys) and shared values (``MEMO_READERS`` families,
# :data:`KERNEL_LAUNCHES`) whose computation reads it. A column not listed is held to the end (kind, start_ns,
# end_ns, name, pid, tid: the diagnosis reads them). Released once every section reader of the run has finished
# and each shared value reader is held (no reader computes it again) or has no reader left to run.
COLUMN_READERS: dict[str, frozenset[str]] = {
    column: frozenset(readers)
    for column, readers in {
        **{column: (KERNEL_LAUNCHES,) for column in _GEOMETRY},
        "depth": (),  # the documented table's nesting depth, computed on demand: no analysis reads it
        "correlation_id": ("memcpy", "whatif", "diagnosis", "launch_pairs", "api_correlation"),
        "stream": ("communication", "whatif", "launch_pairs"),
        "graph_id": ("launch_pairs",),
        "device": (
            "devices",
            "host",
            "memcpy",
            "communication",
            "whatif",
            "device_busy",
            "launch_pairs",
            "op_names",  # the GPU ops' own recorded op (xplane), per device
            # the threads feeding a device where no launch call is matched to its ops (attribution.feeding_threads)
            "attribution",
            "unexplained_intervals",
            "diagnosis",
        ),
        "bytes": ("memcpy", "launch_pairs"),
        "copy_kind": ("memcpy", "whatif", "launch_pairs", "migration_rows"),
        "src_kind": ("memcpy", "whatif"),
        "dst_kind": ("memcpy", "whatif"),
        "sync_kind": ("sync", "whatif"),
        "step": ("step_windows",),
        "external_id": ("communication", "sync", "launch_pairs"),
        "reported_occupancy": ("occupancy", "whatif"),
        "theoretical_occupancy": ("occupancy", "whatif"),
        "estimated_achieved_occupancy": ("occupancy", "whatif"),
        "domain": ("communication",),
        "msg_in_elems": ("communication",),
        "msg_out_elems": ("communication",),
        "msg_dtype": ("communication",),
        "group_size": ("communication",),
        "collective_name": ("communication",),
        "process_group": ("communication",),
        "group_ranks": ("communication",),
        "input_dims": ("whatif", "flop_ops"),
        "input_types": ("whatif", "flop_ops"),
        "concrete_inputs": ("whatif", "flop_ops"),
        "flops": ("flop_ops",),
        "op": ("op_names",),
    }.items()
}


# What the what-if section reads where the trace is too large to replay (``whatif.graph_points`` above
# ``whatif.MAX_POINTS``: it says so and stops): the graph's size alone, from kind, tid and device.
WHATIF_SKIPPED_READS = frozenset({"device"})


def run_readers(
    trace: Trace, keys: Collection[str], memo_readers: Mapping[str, Collection[str]]
) -> tuple[dict[str, frozenset[str]], dict[str, Collection[str]]]:
    """The readers of a run of the sections ``keys`` on ``trace``: per column (:data:`COLUMN_READERS`), and per
    shared value (``memo_readers``, ``analyses.MEMO_READERS``, and the kernel launches'); without the what-if
    section's reads of the replay where it will not replay the trace (on the 41M-event benchmark export: stream and
    the copy kinds then go after communication and memcpy, not just before the diagnosis)."""
    shared = {**memo_readers, KERNEL_LAUNCHES: KERNEL_LAUNCHES_READERS}
    if "whatif" not in keys:
        return COLUMN_READERS, shared
    from .derived import reading_as
    from .whatif import MAX_POINTS, graph_points  # the section's own test, computed once more (0.1 s at 41M)

    if 2 * trace.num_events <= MAX_POINTS:  # graph_points counts at most 2 an event: no need to count them
        return COLUMN_READERS, shared
    with reading_as("whatif"):
        replays = graph_points(trace) <= MAX_POINTS
    if replays:
        return COLUMN_READERS, shared
    readers = {
        column: readers if column in WHATIF_SKIPPED_READS else readers - {"whatif"}
        for column, readers in COLUMN_READERS.items()
    }
    return readers, {**shared, KERNEL_LAUNCHES: tuple(s for s in KERNEL_LAUNCHES_READERS if s != "whatif")}


def value_held(trace: Trace, value: str) -> bool:
    """Whether the shared value ``value`` (a ``MEMO_READERS`` family held under its own name, or
    :data:`KERNEL_LAUNCHES`) is held for ``trace`` now: its readers then read it, not the columns it came from."""
    if value == KERNEL_LAUNCHES:
        return launches_held(trace)
    return held(trace, value) is not None


class ColumnRelease:
    """Which event columns no section still to run reads, as sections finish.

    ``readers``: per column, its readers (:data:`COLUMN_READERS`); ``shared``: per shared value, the sections that
    read it (``MEMO_READERS`` and the kernel launches'); ``recomputed``: per shared value, the sections that compute
    it again rather than read it held (``analyses.RECOMPUTED``: readers of its columns whatever is held); ``keys``:
    the sections of this run. :meth:`due` returns each column once, when it may go; none after the run's last
    section (nothing is left to run: the columns stay, as :class:`.schedule.LastReaders` keeps shared values).
    """

    def __init__(
        self,
        readers: Mapping[str, Collection[str]],
        shared: Mapping[str, Collection[str]],
        keys: Collection[str],
        recomputed: Mapping[str, Collection[str]] = {},
    ) -> None:
        run = set(keys)
        self._sections: dict[str, set[str]] = {}
        self._values: dict[str, set[str]] = {}
        for column, names in readers.items():
            values = {name for name in names if name in shared}
            sections = set(names) - values
            for value in values:
                sections |= set(recomputed.get(value, ()))
            self._sections[column] = sections & run
            self._values[column] = values
        self._waiting = {value: set(sections) & run for value, sections in shared.items()}
        self._left = len(run)
        self._lock = threading.Lock()  # sections finish on two threads

    def due(self, finished: str | None, is_held: Callable[[str], bool]) -> list[str]:
        """The columns that may go now that section ``finished`` has (None: before the first section)."""
        with self._lock:
            if finished is not None:
                self._left -= 1
                for waiting in (*self._sections.values(), *self._waiting.values()):
                    waiting.discard(finished)
            if self._left <= 0:
                return []
            done = [
                column
                for column, sections in self._sections.items()
                if not sections
                and all(not self._waiting[value] or is_held(value) for value in self._values[column])
            ]
            for column in done:
                del self._sections[column]
            return done
