"""Derived per-event columns filled in after any reader (format-independent): each kernel's theoretical and
estimated achieved occupancy (``docs/occupancy.md``), from its launch geometry and the device's limits.

Part of the timeline layer with ``trace.py`` (docs/architecture.md): ``ingest.load`` runs :func:`enrich`, and
the occupancy section (``analyses/occupancy.py``) builds on the same :class:`KernelOccupancy`.

One module on purpose (about 610 lines): the launches' numbering and the calculator's per-configuration results
are one cache (``_LAUNCHES``), read by the load, the occupancy section and the what-if replay alike.
"""

from __future__ import annotations

import dataclasses
import weakref
from typing import Any, Protocol

import numpy as np
import pyarrow as pa

from . import occupancy_calc
from .arrow_read import arrow_numpy
from .intervals import search_sorted
from .occupancy_calc import LimitsUnavailable
from .trace import KERNEL, SparseColumn, Trace, numpy_array
from .values import first_seen_codes, first_seen_rows


def enrich(trace: Trace) -> Trace:
    """Return the trace with derived columns filled (the kernels' occupancy, :func:`annotate_occupancy`)."""
    return annotate_occupancy(trace)


class _Columns(Protocol):
    def column(self, name: str) -> np.ndarray: ...


def _float_column(rows: _Columns, name: str) -> np.ndarray:
    """A numeric column of the rows as float64 with NaN for nulls."""
    return rows.column(name)


def _product(table: _Columns, prefix: str) -> np.ndarray:
    """x*y*z of a launch dimension; missing y/z count as 1, missing x makes the product unknown (NaN)."""
    x = _float_column(table, f"{prefix}_x")
    y = np.nan_to_num(_float_column(table, f"{prefix}_y"), nan=1.0)
    z = np.nan_to_num(_float_column(table, f"{prefix}_z"), nan=1.0)
    return x * y * z


def _shared_bytes(table: _Columns) -> np.ndarray:
    """static + dynamic shared memory; one missing counts as 0, both missing is unknown (NaN)."""
    static = _float_column(table, "static_shared_bytes")
    dynamic = _float_column(table, "dynamic_shared_bytes")
    both_missing = np.isnan(static) & np.isnan(dynamic)
    return np.where(both_missing, np.nan, np.nan_to_num(static) + np.nan_to_num(dynamic))


class _Rows:
    """Some rows of the events, read column by column as numpy."""

    def __init__(self, trace: Trace, rows: np.ndarray) -> None:
        self.trace = trace
        self.rows = rows  # ascending, distinct

    def column(self, name: str) -> np.ndarray:
        stored = self.trace.store.columns.get(name)
        values = stored.values if isinstance(stored, SparseColumn) else stored
        if values is None or (isinstance(values, pa.Array) and _exact_in_float64(values.type)):
            # read with numpy (the same float64s as the Arrow take and cast below), so that a load does not
            # import pyarrow.compute (~30 ms) for them
            return self._numpy_column(stored)
        import pyarrow.compute as pc  # other types (none that a reader stores for these columns)

        if isinstance(stored, SparseColumn) and stored.rows.size != self.rows.size:
            at = self._positions_in(stored.rows)
            if at is not None:  # every row carries it: its values at those positions, no null
                return arrow_numpy(pc.cast(stored.values.take(numpy_array(at, pa.int64())), pa.float64()))
        return arrow_numpy(pc.cast(self.trace.take(name, self.rows), pa.float64()))

    def _numpy_column(self, stored: pa.Array | SparseColumn | None) -> np.ndarray:
        """:meth:`column` of a stored column whose values float64 holds exactly: gathered from a numpy view (NaN
        at nulls, as arrow_numpy reads them)."""
        if stored is None:  # no row carries it
            return np.full(self.rows.size, np.nan)
        if not isinstance(stored, SparseColumn):
            return arrow_numpy(stored)[self.rows].astype(np.float64)
        values = arrow_numpy(stored.values)
        if stored.rows.size == self.rows.size and np.array_equal(stored.rows, self.rows):
            return values.astype(np.float64)  # exactly the rows that carry it (the kernels' geometry)
        at = self._positions_in(stored.rows)
        if at is not None:  # every row carries it: its values at those positions
            return values[at].astype(np.float64)
        out = np.full(self.rows.size, np.nan)
        if stored.rows.size:
            at = np.minimum(np.searchsorted(stored.rows, self.rows), stored.rows.size - 1)
            hit = stored.rows[at] == self.rows
            out[hit] = values[at[hit]]
        return out

    def _positions_in(self, carried: np.ndarray) -> np.ndarray | None:
        """Where the rows sit in a sparse column's ascending rows ``carried``, if all of them do (the kernels in
        the rows of every GPU op that carry ``device``): one walk through both ascending lists where the search
        is compiled (intervals.search_sorted), instead of a binary search per row (EventStore.take's) or a
        table-long mask."""
        if carried.size < self.rows.size:
            return None
        at = search_sorted(carried, self.rows)
        if at.size and (at[-1] >= carried.size or not np.array_equal(carried[at], self.rows)):
            return None
        return at

    def int64(self, name: str) -> np.ndarray:
        stored = self.trace.store.columns.get(name)
        if isinstance(stored, pa.Array) and stored.type == pa.int64() and stored.null_count == 0:
            return arrow_numpy(stored)[self.rows]  # a numpy gather from a view: no Arrow take (start, end)
        return arrow_numpy(self.trace.take(name, self.rows)).astype(np.int64)


def _kind_rows(trace: Trace, kind: str) -> np.ndarray:
    """Rows of one kind, from the kind column's dictionary indices (no numpy columns of the whole trace: this
    runs at load time, for :func:`annotate_occupancy`)."""
    kinds = trace.store.column("kind")
    codes = np.flatnonzero(np.asarray(kinds.dictionary.to_pylist(), dtype=object) == kind)
    if codes.size == 0:
        return np.zeros(0, np.int64)
    indices = arrow_numpy(kinds.indices)
    # a comparison per code (one, unless the dictionary repeats a value): no lookup table gathered per row
    mask = indices == codes[0]
    for code in codes[1:]:
        mask |= indices == code
    return np.flatnonzero(mask)


# Mixes the bits of a launch's five calculator inputs into one 64-bit key (an odd multiplier, wrapping): launches
# with equal inputs get equal keys; unequal inputs that collide are caught by the check in _configurations.
_MIX = np.int64(-7046029254386353131)


def _configurations(inputs: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(each launch's configuration number, one launch of each configuration): launches numbered by the exact bits
    of their calculator inputs (equal float64 arrays), so that any elementwise function of the inputs computed once
    per configuration and gathered back equals the function computed per launch.

    One hash of a mixed key (Arrow's, no pandas at load); where two different inputs share a key (checked: every
    launch's inputs equal its configuration's), every launch is its own configuration."""
    numbered = _numbered_by_mixed_key(inputs)
    if numbered is None:
        n = inputs[0].size
        return np.arange(n, dtype=np.int32 if n < 2**31 else np.int64), np.arange(n)
    return numbered


def _numbered_by_mixed_key(inputs: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`_configurations`' numbering, None where two different inputs share a mixed key."""
    key = inputs[0].view(np.int64).copy()
    for values in inputs[1:]:
        key *= _MIX
        key += values.view(np.int64)
    config, first = first_appearance_codes(key)
    del key
    for values in inputs:
        bits = values.view(np.int64)
        if not np.array_equal(bits[first][config], bits):
            return None
    return config, first


def first_appearance_codes(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values of int64 ``key`` numbered in order of first appearance (as Arrow's dictionary_encode
    numbers them), as int32 codes per element, and the position of each value's first appearance. With numpy
    sorts, not Arrow's hash: a load then leaves pyarrow.compute unimported (~30 ms of a fresh process)."""
    n = key.size
    if n == 0:
        return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.intp)
    order = np.argsort(key)  # any order among equal keys: only the groups and their smallest position count
    ordered = key[order]
    starts = np.empty(n, dtype=bool)
    starts[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=starts[1:])
    del ordered
    group_at = np.flatnonzero(starts)
    # each value's first position: the smallest of its run of ``order`` (one reduceat, not a minimum.at scatter)
    first = np.minimum.reduceat(order, group_at)
    group = np.cumsum(starts, dtype=np.int32)
    group -= 1
    del starts
    by_first = np.argsort(first)
    renumber = np.empty(group_at.size, dtype=np.int32)
    renumber[by_first] = np.arange(group_at.size, dtype=np.int32)
    codes = np.empty(n, dtype=np.int32)
    codes[order] = renumber[group]
    return codes, first[by_first]


def _exact_in_float64(typ: pa.DataType) -> bool:
    """Whether float64 holds every value of ``typ`` (integers of up to 32 bits, floats)."""
    return (
        (pa.types.is_integer(typ) and typ.bit_width <= 32)
        or pa.types.is_float32(typ)
        or pa.types.is_float64(typ)
    )


class _Launches:
    """What :class:`KernelOccupancy` keeps of a trace between its uses (load, the occupancy section, the what-if
    replay): the kernel rows, each launch's configuration number (4 bytes each) and each configuration's inputs,
    not the ~15 per-launch arrays (0.6 GB on the 41M-event benchmark export)."""

    def __init__(self, trace: Trace) -> None:
        rows = trace.store.kernel_rows
        if rows is None:
            rows = _kind_rows(trace, KERNEL)
        kernels = _Rows(trace, rows)
        # (a copy of its own: a reader's rows are its store's too)
        self.rows = np.array(rows, dtype=np.int32 if trace.num_events < 2**31 else np.int64)
        # kernels of a green context run on fewer SMs than their device's: the context's SM count is a sixth
        # input where any kernel carries one (the float64 path; the geometry path numbers the five)
        green = _carries_values(trace, "context_sm_count")
        numbered = None if green else _numbered_by_geometry(trace, kernels)
        if numbered is None:
            inputs = _calculator_inputs(kernels)
            if green:
                inputs.append(_float_column(kernels, "context_sm_count"))
            config, first = _configurations(inputs)
            numbered = config, [values[first] for values in inputs]
        self.config, per_config = numbered
        self.device, self.threads, self.grid, self.registers, self.shared = per_config[:5]
        # per configuration, the SMs of its kernels' context where fewer than the device's (NaN: the device's)
        self.context_sms: np.ndarray | None = per_config[5] if len(per_config) > 5 else None


def _carries_values(trace: Trace, name: str) -> bool:
    """Whether some row of the stored column ``name`` holds a value (False: absent, or null everywhere)."""
    stored = trace.store.columns.get(name)
    values = stored.values if isinstance(stored, SparseColumn) else stored
    return values is not None and (not isinstance(values, pa.Array) or len(values) > values.null_count)


def _calculator_inputs(kernels: _Columns) -> list[np.ndarray]:
    """The calculator's five inputs per row as float64: device, threads per block, grid blocks, registers per
    thread, shared bytes per block."""
    return [
        _float_column(kernels, "device"),
        _product(kernels, "block"),
        _product(kernels, "grid"),
        _float_column(kernels, "registers_per_thread"),
        _shared_bytes(kernels),
    ]


# The integer columns the calculator's inputs are made of (each input an elementwise function of them).
_GEOMETRY = (
    "device",
    "block_x",
    "block_y",
    "block_z",
    "grid_x",
    "grid_y",
    "grid_z",
    "registers_per_thread",
    "static_shared_bytes",
    "dynamic_shared_bytes",
)


class _Picked:
    """Some of the launches' geometry columns, read as float64 (a :class:`_Rows` stand-in for the inputs)."""

    def __init__(self, raw: dict[str, np.ndarray], at: np.ndarray) -> None:
        self.raw, self.at = raw, at

    def column(self, name: str) -> np.ndarray:
        return self.raw[name][self.at].astype(np.float64)


def _numbered_by_geometry(trace: Trace, kernels: _Rows) -> tuple[np.ndarray, list[np.ndarray]] | None:
    """The launches' configuration numbers as :func:`_configurations` gives them and each configuration's
    calculator inputs, made from the launches' integer geometry (a Kineto trace's: 32-bit, no null, carried by
    every kernel row) without the five float64 inputs of every launch: the launches numbered first by their exact
    geometry (each column's own codes, then their mixed-radix key: equal keys are equal columns, no collision),
    the five inputs computed once per geometry, and the geometries numbered by those inputs as _configurations
    numbers launches (in the same order: a configuration's first launch is the first launch of its first
    geometry). None where a column is not such (the float64 path then) or the inputs' mixed keys collide."""
    raw: dict[str, np.ndarray] = {}
    on_kernels: list[
        np.ndarray
    ] = []  # stored row arrays found equal to the kernel rows (the reader shares one)
    for name in _GEOMETRY:
        values = _int32_geometry(trace, kernels, name, on_kernels)
        if values is None:
            return None
        raw[name] = values
    key: np.ndarray | None = None
    span = 1
    lows = 0  # the codes' lows in the key, subtracted once (int64 wraps: the key less them is exact)
    for name in _GEOMETRY:
        values, low, count = _exact_codes(raw[name])  # the codes: values - low
        if count == 1:  # one value (device, block_z, dynamic shared memory): code 0, the key unchanged
            continue
        if key is None:
            key, span, lows = values.astype(np.int64), count, low
            continue
        if span * count >= 2**62:  # renumber the key so far: fewer distinct values than rows
            key, first_keys = first_seen_codes(_less(key, lows))
            span, lows = first_keys.size, 0
        # in place (the int32 values cast as they are added): no int64 copy of each column
        key *= count
        key += values
        lows = lows * count + low
        span *= count
    key = np.zeros(kernels.rows.size, np.int64) if key is None else _less(key, lows)
    # each launch's geometry number and each geometry's first launch: the compiled hash pass finds both at once
    # (no running maximum over the launches' numbers to find the first ones again)
    found = first_seen_rows(key) if key.size else None
    if found is None:
        geometry, _ = first_seen_codes(key)
        geometry_first = _first_rows(geometry)
    else:
        geometry, geometry_first = found
    del key
    inputs = _calculator_inputs(_Picked(raw, geometry_first))
    numbered = _numbered_by_mixed_key(inputs)
    if numbered is None:
        return None
    config_of_geometry, first_geometry = numbered
    config = config_of_geometry[geometry]
    return config, [values[first_geometry] for values in inputs]


def _int32_geometry(
    trace: Trace, kernels: _Rows, name: str, on_kernels: list[np.ndarray]
) -> np.ndarray | None:
    """A geometry column's 32-bit values at the kernel rows, where it is stored sparse, with no null, on every
    kernel row (a view where it is on the kernel rows only: their row array is then added to ``on_kernels``, and
    one already there is not compared again); None otherwise."""
    stored = trace.store.columns.get(name)
    if not (
        isinstance(stored, SparseColumn)
        and stored.values.type == pa.int32()
        and stored.values.null_count == 0
    ):
        return None
    values = arrow_numpy(stored.values)
    if any(stored.rows is rows for rows in on_kernels):
        return values
    if stored.rows.size == kernels.rows.size and np.array_equal(stored.rows, kernels.rows):
        on_kernels.append(stored.rows)
        return values
    at = kernels._positions_in(stored.rows)
    return None if at is None else values[at]


def _less(key: np.ndarray, lows: int) -> np.ndarray:
    """``key - lows`` in place, as int64 arithmetic wraps (``lows`` a Python int of any size)."""
    if lows:
        key -= np.int64((lows + 2**63) % 2**64 - 2**63)
    return key


# A geometry column whose values span at most this many integers is coded by its values less their minimum.
_NARROW_SPAN = 1 << 16


def _exact_codes(values: np.ndarray) -> tuple[np.ndarray, int, int]:
    """An int32 column's codes as (values, low, count): ``values - low`` in range(count), equal exactly where the
    column's values are. The column itself less its minimum where its values span few integers (block sizes,
    registers: two passes, no hash), else its first-seen codes (low 0)."""
    if values.size == 0:
        return values, 0, 1
    low, high = int(values.min()), int(values.max())
    if high - low < _NARROW_SPAN:
        return values, low, high - low + 1
    codes, uniques = first_seen_codes(values)
    return codes, 0, uniques.size


def _first_rows(codes: np.ndarray) -> np.ndarray:
    """Where each code of a first-appearance numbering (0, then each new code one more) first appears."""
    if codes.size == 0:
        return np.zeros(0, np.intp)
    new = np.empty(codes.size, bool)
    new[0] = True
    running = np.maximum.accumulate(codes)
    np.not_equal(running[1:], running[:-1], out=new[1:])
    return np.flatnonzero(new)


# Per trace (a load's result and the reader's trace it enriched share one): freed with the trace.
_LAUNCHES: weakref.WeakKeyDictionary[Trace, _Launches] = weakref.WeakKeyDictionary()


def launches_held(trace: Trace) -> bool:
    """Whether the trace's kernel launches (rows, configurations and their calculator inputs) are held: then
    :class:`KernelOccupancy` reads no event column of launch geometry (``analyze`` may release them)."""
    return trace in _LAUNCHES


def held_kernel_rows(trace: Trace) -> np.ndarray | None:
    """The trace's kernel rows (ascending; the rows whose kind is ``kernel``) where its launches are held (a
    load's trace: :func:`launches_held`), else None (nothing is read to find them)."""
    launches = _LAUNCHES.get(trace)
    return None if launches is None else launches.rows


def _launches_of(trace: Trace) -> _Launches:
    launches = _LAUNCHES.get(trace)
    if launches is None:
        launches = _LAUNCHES[trace] = _Launches(trace)
    return launches


class _PerLaunch:
    """A per-launch array of :class:`KernelOccupancy`: its per-configuration values gathered to the launches on
    first read, then kept in the instance (a non-data descriptor: the instance's attribute wins after that)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, occ: Any, owner: type | None = None) -> Any:
        if occ is None:
            return self
        values = occ._per_config[self.name][occ._config]
        occ.__dict__[self.name] = values
        return values


class KernelOccupancy:
    """Calculator results for every kernel row of a trace, plus why devices were skipped.

    The calculator runs once per launch configuration (device, threads, grid, registers, shared memory: a few
    hundred on a training trace), its results gathered to the launches."""

    def __init__(self, trace: Trace) -> None:
        launches = _launches_of(trace)
        self.rows = launches.rows.astype(np.int64)
        self._trace = trace  # for the reported occupancy, read when asked (``reported``, ``reported_at``)
        # per configuration
        device, threads, grid = launches.device, launches.threads, launches.grid
        registers, shared = launches.registers, launches.shared
        n = device.size
        theoretical = np.full(n, np.nan)
        estimated = np.full(n, np.nan)
        waves = np.full(n, np.nan)
        blocks_per_sm = np.full(n, np.nan)
        active = np.full(n, -1, dtype=np.int32)
        limiter = np.full(n, -1, dtype=np.int8)
        grid_fill = np.full(n, np.nan)  # min(1, grid blocks / SMs)
        shape = np.full(n, np.nan)  # occupancy the block shape alone allows
        self.device_notes: dict[int, dict[str, Any]] = {}
        present = np.sort(device[~np.isnan(device)])  # distinct: not np.unique, which imports numpy.ma
        first = np.ones(present.size, dtype=bool)
        first[1:] = present[1:] != present[:-1]
        sm_of = np.full(n, np.nan)  # the SMs each configuration's kernels may use (NaN: unknown)
        context_sms = launches.context_sms
        for dev in present[first].astype(np.int64):
            on_device = device == dev
            info = trace.device_info(int(dev))
            sm_count = info.get("sm_count")
            if not sm_count or sm_count < 0:  # unknown, or a damaged header's count: no grid fill
                sm_count = info["sm_count"] = None
            note: dict[str, Any] = {
                "name": info.get("name"),
                "reason": None,
                "limits": None,
                "sm_count": sm_count,
            }
            self.device_notes[int(dev)] = note
            sm_of[on_device] = float(sm_count) if sm_count else np.nan
            if context_sms is not None:  # a green context's kernels: its SMs (never more than the device's)
                own = on_device & np.isfinite(context_sms) & (context_sms > 0)
                sm_of[own] = np.fmin(context_sms[own], sm_of[own])
            known = on_device & np.isfinite(sm_of)
            grid_fill[known] = np.minimum(1.0, grid[known] / sm_of[known])
            try:
                limits = occupancy_calc.device_limits(info)
            except LimitsUnavailable as why:
                note["reason"] = str(why)
                continue
            note["limits"] = limits
            shape[on_device] = occupancy_calc.shape_occupancy(limits, threads[on_device])
            if np.isnan(registers[on_device]).all():
                note["reason"] = "the trace records no registers per thread for this device's kernels"
                continue
            values = sm_of[
                on_device
            ]  # its kernels' SM counts: the device's, each green context's (NaN: unknown)
            distinct = np.sort(values[np.isfinite(values)])  # (not np.unique, which imports numpy.ma)
            counts = [
                float(c) for c in distinct[np.append(True, distinct[1:] != distinct[:-1])[: distinct.size]]
            ]
            for c in counts + ([np.nan] if np.isnan(values).any() else []):  # a calculator run per SM count
                mask = on_device & (np.isnan(sm_of) if np.isnan(c) else sm_of == c)
                sm_limits = dataclasses.replace(limits, sm_count=None if np.isnan(c) else int(c))
                res = occupancy_calc.compute(
                    sm_limits, threads[mask], registers[mask], shared[mask], grid[mask]
                )
                theoretical[mask] = res.theoretical
                estimated[mask] = res.estimated_achieved
                waves[mask] = res.waves
                blocks_per_sm[mask] = res.blocks_per_sm
                active[mask] = res.active_blocks_per_sm
                limiter[mask] = res.limiter
        # per launch, each gathered on first read (_PerLaunch): the load reads two of them
        self._config = launches.config.astype(
            np.intp
        )  # once: a gather by int32 indices converts them each time
        self._per_config = {
            "device": device,
            "threads": threads,
            "grid": grid,
            "registers": registers,
            "shared": shared,
            "theoretical": theoretical,
            "estimated": estimated,
            "waves": waves,
            "blocks_per_sm": blocks_per_sm,
            "active": active,
            "limiter": limiter,
            "grid_fill": grid_fill,  # min(1, grid blocks / SMs)
            "shape": shape,  # occupancy the block shape alone allows
        }
        if context_sms is not None:  # the SMs of the configurations' green contexts (NaN: the device's)
            self._per_config["context_sms"] = context_sms

    @property
    def per_config(self) -> dict[str, np.ndarray]:
        """Each configuration's calculator inputs and results (``config``: each launch's configuration): a
        per-launch value is ``per_config[name][config]``; readers that work per configuration (a few hundred)
        gather only their result to the launches."""
        return self._per_config

    @property
    def config(self) -> np.ndarray:
        return self._config

    @property
    def duration(self) -> np.ndarray:
        """Each launch's end minus start (int64): read on first use, then kept (the load's enrich needs none)."""
        if "_duration" not in self.__dict__:
            kernels = _Rows(self._trace, self.rows)
            self._duration = kernels.int64("end_ns") - kernels.int64("start_ns")
        return self._duration

    @property
    def reported(self) -> np.ndarray:
        """The occupancy the trace reports per launch (float64, NaN where none): read on first use, then kept."""
        if "_reported" not in self.__dict__:
            self._reported = _float_column(_Rows(self._trace, self.rows), "reported_occupancy")
        return self._reported

    def reported_at(self, at: np.ndarray) -> np.ndarray:
        """``reported[at]`` (``at``: ascending launch positions) without the whole column (a section reading one
        device's launches at a time)."""
        if "_reported" in self.__dict__:
            return self._reported[at]
        return _float_column(_Rows(self._trace, self.rows[at]), "reported_occupancy")

    device = _PerLaunch()
    threads = _PerLaunch()
    grid = _PerLaunch()
    registers = _PerLaunch()
    shared = _PerLaunch()
    theoretical = _PerLaunch()
    estimated = _PerLaunch()
    waves = _PerLaunch()
    blocks_per_sm = _PerLaunch()
    active = _PerLaunch()
    limiter = _PerLaunch()
    grid_fill = _PerLaunch()
    shape = _PerLaunch()


def annotate_occupancy(trace: Trace) -> Trace:
    """The trace with ``theoretical_occupancy`` and ``estimated_achieved_occupancy`` filled for kernels.

    Values the calculator cannot compute keep whatever the reader wrote (normally null).
    """
    if trace.num_events == 0:
        return trace
    occ = KernelOccupancy(trace)
    # (per configuration: every configuration is some launch's, so all launches' values are NaN where all its are)
    if occ.rows.size == 0 or np.isnan(occ.per_config["theoretical"]).all():
        return trace
    kernels = _Rows(trace, occ.rows)
    updates: dict[str, SparseColumn] = {}
    row_type = np.int32 if trace.num_events < 2**31 else np.int64
    every_row: np.ndarray | None = None  # (the kernel rows in their stored type: shared by both columns)
    for column, name in (
        ("theoretical_occupancy", "theoretical"),
        ("estimated_achieved_occupancy", "estimated"),
    ):
        per_config = occ.per_config[name]
        if trace.store.columns.get(column) is None and not np.isnan(per_config).any():
            # Nothing reported to keep and a value for every launch (each configuration computed): the column
            # holds every kernel row, so no merge and no selection, and its float32 values are gathered from the
            # configurations' (no float64 array per launch): the same values as below.
            every_row = occ.rows.astype(row_type) if every_row is None else every_row
            values32 = np.take(per_config.astype(np.float32), occ.config)
            updates[column] = SparseColumn(every_row, numpy_array(values32, pa.float32()))
            continue
        values = getattr(occ, name)  # (per launch, gathered on first read)
        merged = np.where(np.isnan(values), kernels.column(column), values)
        known = ~np.isnan(merged)
        if not known.any():
            continue
        # Kernel rows only: the other rows of the column stay as the reader left them (null; no reader fills them)
        updates[column] = SparseColumn(
            occ.rows[known].astype(row_type),
            numpy_array(merged[known].astype(np.float32), pa.float32()),
        )
    enriched = Trace(events=trace.store.with_columns(updates), devices=trace.devices, metadata=trace.metadata)
    _LAUNCHES[enriched] = _launches_of(trace)  # same rows and launch geometry: the sections reuse it
    return enriched
