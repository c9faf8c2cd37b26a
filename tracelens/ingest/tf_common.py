"""What the two TensorFlow/JAX profiler readers share: :mod:`.xplane` (``<host>.xplane.pb``) and
:mod:`.tf_trace_json` (the legacy ``<host>.trace.json.gz``).

Finding the files of a run (:func:`discover`), the event kind of a host event's name, API names without
their ``_vN`` suffix, the launch configuration in ``kernel_details`` strings and the copy direction in
a memcpy's name. Both readers import from here; neither imports the other (:mod:`.tf_profile` picks one).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InputError, not_found
from ..event_names import is_driver_call, is_step_marker
from ..trace import ANNOTATION, CPU_OP, DRIVER, OTHER, OVERHEAD, PYTHON, RUNTIME, STEP

# Files old TF wrote next to (or instead of) the xplane; their presence alone means "no raw trace".
DERIVED_FILE_SUFFIXES = (
    ".overview_page.pb",
    ".input_pipeline.pb",
    ".tensorflow_stats.pb",
    ".kernel_stats.pb",
    ".memory_profile.json.gz",
    ".pod_viewer.json",
    ".op_profile.json",
    ".memory_viewer.json",
)
COPY_KIND_LABELS = ("HtoD", "DtoH", "DtoD", "PtoP", "HtoH")
_COPY_KIND_BY_NAME = {
    "H2D": "HtoD",
    "D2H": "DtoH",
    "D2D": "DtoD",
    "P2P": "PtoP",
    "H2H": "HtoH",
    "HTOD": "HtoD",
    "DTOH": "DtoH",
    "DTOD": "DtoD",
    "PTOP": "PtoP",
    "HTOH": "HtoH",
}
_RUNTIME_NAME = re.compile(r"^(cuda|hip)[A-Z]")
# The profiler's own Python frames as its Python tracer names them ("$file.py:line function"): jax.profiler's
# start_trace/stop_trace/trace (jax/_src/profiler.py) and tf.profiler.experimental's start/stop (profiler_v2.py).
# The tracer records the call that started it: "$profiler.py:101 start_trace" spans 9.7 s before any GPU work in
# the shared JAX-on-ROCm XSpace. Profiler overhead, not the program's host code.
_PROFILER_FRAME = re.compile(
    r"^\$(profiler\.py:\d+ (start_trace|stop_trace|trace)|profiler_v2\.py:\d+ (start|stop))$"
)


# ---------------------------------------------------------------------------------------- discovery


def xplane_files(folder: Path) -> list[Path]:
    """The ``<host>.xplane.pb`` files of a run folder, and gzip-compressed ``<host>.xplane.pb.gz`` ones (a profile
    gzipped to be shared or stored; the reader inflates them): a host with both is read once, from the raw file."""
    raw = sorted(folder.glob("*.xplane.pb"))
    names = {f.name for f in raw}
    return sorted(raw + [f for f in folder.glob("*.xplane.pb.gz") if f.name[:-3] not in names])


def legacy_trace_files(folder: Path) -> list[Path]:
    """TF 2.2-2.10's ``<host>.trace.json.gz`` files of a folder; not a PyTorch capture that torch's
    tensorboard_trace_handler(use_gzip=True) named ``<worker>.<ts>.pt.trace.json.gz`` (read as TF's, it was "holds no
    host or GPU events", exit 2, in a logdir both profilers wrote to)."""
    return sorted(
        f for f in folder.glob("*.trace.json.gz") if not f.name.lower().endswith(".pt.trace.json.gz")
    )


# Trace files of the other formats (Kineto JSON, Nsight Systems, tracelens Parquet) by name
_OTHER_TRACE_SUFFIXES = (".json", ".json.gz", ".sqlite", ".parquet", ".nsys-rep", ".qdrep")


def other_traces(path: Path) -> list[Path]:
    """Trace files of another format at the top of the folder ``path`` (a PyTorch ``*.pt.trace.json`` beside the
    xplanes, or in the logdir both profilers wrote to): the profile read leaves them out, so the trace says so. TF's
    own legacy ``<host>.trace.json.gz`` (read when the run has no xplane) is none of them."""
    if not path.is_dir():
        return []
    found = []
    for f in sorted(path.iterdir()):
        name = f.name.lower()
        if not f.is_file() or not name.endswith(_OTHER_TRACE_SUFFIXES):
            continue
        if name.endswith(".trace.json.gz") and not name.endswith(".pt.trace.json.gz"):
            continue
        # a JSON file named as a trace (torch's tensorboard_trace_handler: <worker>.<ts>.pt.trace.json[.gz];
        # export_chrome_trace("trace.json")); not a config.json: its name alone, no file is opened
        if name.endswith((".json", ".json.gz")) and "trace" not in name:
            continue
        found.append(f)
    return found


def _profile_dirs(logdir: Path) -> list[Path]:
    """The ``plugins/profile`` folders at or under ``logdir``: below it, or ``logdir`` itself or its ``profile``
    child where ``logdir`` is one (a user points at the folder the runs lie in, or at ``plugins``)."""
    found = sorted(logdir.rglob("plugins/profile"))
    absolute = Path(os.path.abspath(logdir))  # "." inside plugins/profile has no name of its own
    if absolute.name == "profile" and absolute.parent.name == "plugins":
        found.insert(0, logdir)
    elif absolute.name == "plugins" and (logdir / "profile").is_dir():
        found.insert(0, logdir / "profile")
    return found


def _run_dirs(logdir: Path) -> dict[str, Path]:
    """Profile runs under a logdir: ``<...>/plugins/profile/<run>/`` -> {run name: folder}. A run name found in two
    places (the same timestamp under ``train/`` and ``eval/``: one was dropped, never read, and --run could not name
    it) is keyed by its folder under the logdir, ``train/plugins/profile/<run>``, each."""
    found = [
        run
        for profile_dir in _profile_dirs(logdir)
        if profile_dir.is_dir()
        for run in sorted(p for p in profile_dir.iterdir() if p.is_dir())
    ]
    unique: dict[Path, Path] = {}
    for run in found:  # a folder reached twice (the logdir is plugins/profile itself) is one run
        unique.setdefault(Path(os.path.abspath(run)), run)
    counts: dict[str, int] = {}
    for run in unique.values():
        counts[run.name] = counts.get(run.name, 0) + 1
    runs: dict[str, Path] = {}
    for run in unique.values():
        runs[run.name if counts[run.name] == 1 else _relative(run, logdir)] = run
    return runs


def _relative(folder: Path, logdir: Path) -> str:
    try:
        return folder.relative_to(logdir).as_posix()
    except ValueError:
        return folder.as_posix()


def _newest_first(runs: dict[str, Path]) -> list[str]:
    """Run keys newest first: by the run folder's name (TensorBoard's YYYY_MM_DD_HH_MM_SS), then by the key."""
    return sorted(runs, key=lambda key: (runs[key].name, key), reverse=True)


def discover(path: Path, run: str | None = None) -> tuple[list[Path], str | None]:
    """The trace files to read for ``path`` (file, run directory or logdir) and the run's name."""
    if path.is_file():
        return [path], None
    if not path.is_dir():
        raise not_found(path)
    direct = xplane_files(path) or legacy_trace_files(path)
    if direct and run is None:
        return direct, path.name
    runs = _run_dirs(path)
    if not runs:
        if direct:
            raise InputError(
                f"--run {run}: this is a single run directory (no plugins/profile/ runs)", path=path
            )
        _explain_empty(path, path)
    if run is not None:
        same = [key for key, folder in runs.items() if key != run and folder.name == run]
        if run not in runs and same:
            raise InputError(
                f"--run {run}: {len(same)} runs have this name ({', '.join(sorted(same))}): pass one of these",
                path=path,
            )
        if run not in runs:
            raise InputError(f"no profile run named {run!r} (runs: {', '.join(sorted(runs))})", path=path)
        chosen = run
    else:
        # TensorBoard names runs by their start time (YYYY_MM_DD_HH_MM_SS): the last name is the newest. A newer run
        # with no profile (a profile that failed, was interrupted or is still being written: an empty folder, or
        # empty files) is passed over for the newest that holds one, as TensorBoard lists only runs with data;
        # run_choice_note says so.
        newest_first = _newest_first(runs)
        chosen = next((name for name in newest_first if _run_files(runs[name])), newest_first[0])
    folder = runs[chosen]
    files = xplane_files(folder) or legacy_trace_files(folder)
    if not files:
        _explain_empty(folder, path)
    return files, chosen


def _run_files(folder: Path) -> list[Path]:
    """A run folder's trace files (xplanes, else legacy trace JSON), none where every one is empty (0 bytes)."""
    files = xplane_files(folder) or legacy_trace_files(folder)
    return files if any(f.stat().st_size for f in files) else []


def _empty_newer_runs(runs: dict[str, Path], chosen: str) -> list[str]:
    """The runs newer than ``chosen`` (by name) that hold no profile: passed over when no run was asked for."""
    order = _newest_first(runs)
    return [name for name in order[: order.index(chosen)] if not _run_files(runs[name])]


def older_runs(path: Path, run: str | None, chosen: str | None) -> list[str]:
    """The runs older than ``chosen`` (newest first) that hold a profile, where ``chosen`` was picked as the newest of
    a logdir's runs (no --run); none otherwise."""
    if run is not None or chosen is None or not path.is_dir() or xplane_files(path):
        return []
    runs = _run_dirs(path)
    order = _newest_first(runs)
    return (
        [name for name in order[order.index(chosen) + 1 :] if _run_files(runs[name])]
        if chosen in runs
        else []
    )


def run_choice_note(path: Path, run: str | None, chosen: str | None) -> str | None:
    """A warning naming the run read when ``path`` is a logdir holding several runs and none was asked for."""
    if run is not None or chosen is None or not path.is_dir() or xplane_files(path):
        return None
    runs = _run_dirs(path)
    if len(runs) < 2 or chosen not in runs:
        return None
    others = [name for name in _newest_first(runs) if name != chosen]
    shown = ", ".join(others[:5]) + (f", … ({len(others) - 5} more)" if len(others) > 5 else "")
    folder = runs[chosen].relative_to(path).as_posix()
    empty = _empty_newer_runs(runs, chosen)
    if empty:
        skipped = ", ".join(empty[:5]) + (f", … ({len(empty) - 5} more)" if len(empty) > 5 else "")
        return (
            f"{len(runs)} profile runs under this logdir: the newest with a profile is {chosen} ({folder}), read; "
            f"newer runs hold no .xplane.pb or only empty files (a profile that failed or was interrupted: "
            f"{skipped}); --run NAME reads another ({shown})"
        )
    return (
        f"{len(runs)} profile runs under this logdir: read the newest, {chosen} ({folder}); "
        f"--run NAME reads another ({shown})"
    )


def _explain_empty(folder: Path, shown: Path) -> None:
    derived = [p.name for p in folder.rglob("*") if p.name.endswith(DERIVED_FILE_SUFFIXES)]
    if derived:
        raise InputError(
            f"holds only derived profile files ({', '.join(sorted(derived)[:3])}); this TensorFlow version "
            "wrote no xplane.pb: re-profile with TensorFlow >= 2.4, or pass the <host>.trace.json.gz",
            path=shown,
        )
    raise InputError(
        "no profile found (expected plugins/profile/<run>/<host>.xplane.pb or a .xplane.pb file)", path=shown
    )


# ------------------------------------------------------------------------------ ids across hosts


def host_unique_ids(ids: np.ndarray, present: np.ndarray, host: np.ndarray) -> np.ndarray:
    """Correlation ids made unique across the hosts of a run: CUPTI and ROCm number them per process, so the same
    id on two hosts is two launches, and the analyses join a GPU op to its call by id. Host ``h``'s ids (>= 0,
    where ``present``) are shifted by the sum over the hosts before it of (their largest id + 1): a single host, and
    the first host of a run, keep theirs. Past 2^62 (ids near the int64 limit) they are renumbered densely instead,
    per (host, id) from 1."""
    sel = present & (ids >= 0)
    if not sel.any() or (host[sel] == host[sel][0]).all():
        return ids
    hosts = int(host[sel].max()) + 1
    largest = np.full(hosts, -1, np.int64)
    np.maximum.at(largest, host[sel], ids[sel])
    offsets = np.concatenate([[0], np.cumsum(largest + 1)[:-1]])
    out = ids.copy()
    if int(offsets[-1]) + int(largest[-1]) < 1 << 62 and int(largest.max()) < 1 << 62:
        out[sel] = ids[sel] + offsets[host[sel]]
    else:
        pairs = np.stack([host[sel].astype(np.int64), ids[sel]], axis=1)
        out[sel] = np.unique(pairs, axis=0, return_inverse=True)[1].reshape(-1) + 1
    return out


# ------------------------------------------------------------------------------ names and details


def classify_host_name(name: str) -> str:
    """The event kind of a host (``/host:CPU``) event from its name alone."""
    if _RUNTIME_NAME.match(name):
        return RUNTIME
    if is_driver_call(name):
        return DRIVER
    if name.startswith("$"):  # the Python tracer's frames: "$file.py:line function"
        return OVERHEAD if _PROFILER_FRAME.match(name) else PYTHON
    if is_step_marker(name):
        return STEP
    if name.startswith("tracelens/"):
        return ANNOTATION
    if name in ("MemoryAllocation", "MemoryDeallocation"):
        return OTHER
    return CPU_OP


def detect_framework(names: Iterable[str]) -> str:
    """ "jax" when a host event name is one JAX writes, else "tensorflow"."""
    for name in names:
        if name.startswith(("PjitFunction(", "PjRt", "PJRT_")) or (name.startswith("$") and "jax" in name):
            return "jax"
    return "tensorflow"


def copy_kind_code(name: str) -> int:
    """The copy direction a memcpy's name tells, as an index into :data:`COPY_KIND_LABELS` (-1: none)."""
    upper = name.upper()
    kind = next((kind for token, kind in _COPY_KIND_BY_NAME.items() if token in upper), None)
    return COPY_KIND_LABELS.index(kind) if kind else -1


def extract_int(strings: pa.Array, pattern: str) -> np.ndarray:
    """First capture group of ``pattern`` as float (NaN where absent) for each string."""
    if len(strings) == 0:
        return np.empty(0)
    found = pc.extract_regex(strings, pattern)
    values = pc.struct_field(found, [0]) if found.type.num_fields else None
    if values is None:
        return np.full(len(strings), np.nan)
    return pc.cast(values, pa.float64()).to_numpy(zero_copy_only=False)


def kernel_columns(details: pa.Array) -> dict[str, np.ndarray]:
    """Launch configuration from ``kernel_details`` in its three forms (see docs/formats/xplane.md).

    The strings repeat (one per distinct launch configuration), so the patterns run on distinct values.
    """
    encoded = pc.dictionary_encode(details)
    indices = encoded.indices.fill_null(len(encoded.dictionary)).to_numpy(zero_copy_only=False)
    per_value = _kernel_columns_of(pa.concat_arrays([encoded.dictionary, pa.nulls(1, pa.string())]))
    return {col: values[indices] for col, values in per_value.items()}


def _kernel_columns_of(details: pa.Array) -> dict[str, np.ndarray]:
    cols: dict[str, np.ndarray] = {
        "registers_per_thread": extract_int(details, r"(?:^|\s)regs:(?P<v>\d+)"),
        "static_shared_bytes": extract_int(details, r"(?:^|\s)static_shared:(?P<v>\d+)"),
        "dynamic_shared_bytes": extract_int(details, r"(?:^|\s)dynamic_shared:(?P<v>\d+)"),
    }
    # TF <= 2.5 wrote one total "shm:" (no split); occupancy needs only the total, so it goes to static.
    shm = extract_int(details, r"(?:^|\s)shm:(?P<v>\d+)")
    use_shm = np.isnan(cols["static_shared_bytes"]) & ~np.isnan(shm)
    cols["static_shared_bytes"] = np.where(use_shm, shm, cols["static_shared_bytes"])
    cols["dynamic_shared_bytes"] = np.where(use_shm, 0.0, cols["dynamic_shared_bytes"])
    for prefix, column in (("grid", "grid"), ("block", "block")):
        x = extract_int(details, rf"(?:^|\s){prefix}:(?P<v>\d+),\d+,\d+")
        y = extract_int(details, rf"(?:^|\s){prefix}:\d+,(?P<v>\d+),\d+")
        z = extract_int(details, rf"(?:^|\s){prefix}:\d+,\d+,(?P<v>\d+)")
        cols[f"{column}_x"], cols[f"{column}_y"], cols[f"{column}_z"] = x, y, z
    occ = extract_int(details, r"(?:^|\s)occ_pct:(?P<v>[0-9.]+)")
    # occ_pct:0 is what ROCm (and CUPTI without occupancy data) writes: a running kernel is never at 0.
    # The launch columns are int32 (docs/schema.md): a value past that is no real count (ROCm wrote
    # regs:2191500840), so it is absent, not wrapped to a negative number.
    for col, values in cols.items():
        cols[col] = np.where(values <= np.iinfo(np.int32).max, values, np.nan)
    cols["reported_occupancy"] = np.where(occ > 0, occ / 100.0, np.nan)
    return cols
