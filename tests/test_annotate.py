"""`tracelens annotate`: the annotated Chrome trace read back by tracelens's own Kineto reader, its added tracks
checked against the analysis document, its own events against the source trace."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tracelens
from tests.conftest import FIXTURES
from tracelens.analyses import analyze
from tracelens.analyses.columns import event_columns
from tracelens.analyses.completeness import recorder
from tracelens.cli import main
from tracelens.replay.annotate import ANNOTATION_PID, GAPS_TID, PATH_TID, STEPS_TID, WHATIF_TID

TRACE = FIXTURES / "gpu" / "pytorch_slow-input_cuda.pt.trace.json.gz"


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, object, Path]:
    out = tmp_path_factory.mktemp("annotate") / "annotated.json.gz"
    assert main(["annotate", str(TRACE), "-o", str(out)]) == 0
    return dict(analyze(tracelens.load(TRACE))), tracelens.load(out), out


def _file_events(path: Path) -> list[dict]:
    import gzip
    import json

    data = path.read_bytes()
    return json.loads(gzip.decompress(data) if path.name.endswith(".gz") else data)["traceEvents"]


def _track(path: Path, tid: int, pid: int = ANNOTATION_PID) -> tuple[list[str], np.ndarray, np.ndarray]:
    """A tracelens track as written (the reader skips them): names, starts and ends (ns) in time order."""
    rows = sorted(
        (round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000), e["name"])
        for e in _file_events(path)
        if e["ph"] == "X" and e["pid"] == pid and e["tid"] == tid
    )
    return (
        [n for _, _, n in rows],
        np.array([s for s, _, _ in rows], np.int64),
        np.array([e for _, e, _ in rows], np.int64),
    )


def test_own_events_survive(written: tuple) -> None:
    _, back, _ = written
    source = tracelens.load(TRACE)
    a, b = event_columns(source), event_columns(back)
    for kind in ("kernel", "memcpy", "runtime", "cpu_op", "step"):
        rows_a, rows_b = np.flatnonzero(a.of_kind(kind)), np.flatnonzero(b.of_kind(kind))
        assert np.array_equal(np.sort(a.start[rows_a]), np.sort(b.start[rows_b]))
        assert np.array_equal(np.sort(a.end[rows_a]), np.sort(b.end[rows_b]))
    # correlation survives: the read-back trace replays to the same step time
    doc_back = analyze(back, sections=["steps", "whatif"])
    assert (
        doc_back["whatif"]["replay_error"]["recorded_step_ns"]
        == written[0]["whatif"]["replay_error"]["recorded_step_ns"]
    )


def test_steps_track(written: tuple) -> None:
    doc, _, out = written
    names, starts, ends = _track(out, STEPS_TID)
    steps = doc["steps"]["steps"]
    assert names == [f"step {s['step']}" for s in steps]
    assert starts.tolist() == [s["start_ns"] for s in steps]
    assert ends.tolist() == [s["end_ns"] for s in steps]


def test_critical_path_track(written: tuple) -> None:
    doc, _, out = written
    names, starts, ends = _track(out, PATH_TID)
    path = doc["whatif"]["critical_path"]
    # slices tile the path: per category, their lengths add up to the document's figures
    for category, ns in path["ns"].items():
        got = int(sum(e - s for n, s, e in zip(names, starts, ends, strict=True) if n == category))
        assert got == ns, category
    assert int((ends - starts).sum()) == path["length_ns"]


def test_whatif_tracks(written: tuple) -> None:
    doc, _, out = written
    remedies = doc["whatif"]["remedies"]
    assert remedies
    for k, remedy in enumerate(remedies):
        names, starts, ends = _track(out, WHATIF_TID + k)
        assert len(names) == 1 and names[0].startswith(f"fixing {remedy['cause']}")
        assert int(ends[0] - starts[0]) == remedy["predicted_span_ns"]


def test_idle_gap_tracks(written: tuple) -> None:
    doc, _, out = written
    for device in doc["attribution"]["devices"]:
        names, starts, ends = _track(out, GAPS_TID + device["device"])
        largest = sorted(device["largest"], key=lambda g: g["start_ns"])
        assert starts.tolist() == [g["start_ns"] for g in largest]
        assert (ends - starts).tolist() == [g["duration_ns"] for g in largest]
        assert names == [f"idle: {max(g['by_cause'], key=g['by_cause'].get)}" for g in largest]
        # the slow-input fixture's largest gaps are its input waits (the first one, in step 0, start-up work)
        assert names.count("idle: input") >= len(names) - 1 >= 1


def test_annotate_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert main(["annotate", str(bad), "-o", str(tmp_path / "out.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bad.json" in err


SHIFT_NS = 5_000_000  # rank 1's recording starts 5 ms after rank 0's (its baseTimeNanoseconds moved by that)


@pytest.fixture(scope="module")
def run_written(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, object, dict, Path]:
    import gzip
    import json

    run = tmp_path_factory.mktemp("run")
    data = json.loads(gzip.decompress(TRACE.read_bytes()))
    (run / "rank0.pt.trace.json.gz").write_bytes(gzip.compress(json.dumps(data).encode()))
    data["baseTimeNanoseconds"] += SHIFT_NS
    (run / "rank1.pt.trace.json.gz").write_bytes(gzip.compress(json.dumps(data).encode()))
    out = run.parent / "run_annotated.json.gz"
    assert main(["annotate", str(run), "-o", str(out)]) == 0
    source = tracelens.load(TRACE)
    return source, tracelens.load(out), dict(analyze(source)), out


def test_run_ranks_on_one_timeline(run_written: tuple) -> None:
    from tracelens.replay.annotate import GPU_TID_BASE

    source, back, _, out = run_written
    a, b = event_columns(source), event_columns(back)
    assert np.unique(a.device[a.of_kind("kernel")]).tolist() == [0]  # one GPU per rank
    for rank, shift in ((0, 0), (1, SHIFT_NS)):
        # host rows: in the rank's process; GPU rows (the reader puts them on their device): on the run's GPU
        # number `rank` (each rank has one)
        host_mine = b.pid == rank
        gpu_mine = b.device == rank
        for kind, mine in (
            ("kernel", gpu_mine),
            ("memcpy", gpu_mine),
            ("runtime", host_mine),
            ("step", host_mine),
        ):
            rows_a, rows_b = np.flatnonzero(a.of_kind(kind)), np.flatnonzero(b.of_kind(kind) & mine)
            assert np.array_equal(np.sort(a.start[rows_a]) + shift, np.sort(b.start[rows_b])), (rank, kind)
            assert np.array_equal(np.sort(a.end[rows_a]) + shift, np.sort(b.end[rows_b])), (rank, kind)
    # in the file itself (what Perfetto shows), every event of a rank sits in its process; GPU streams on their tids
    import gzip
    import json

    events = json.loads(gzip.decompress(out.read_bytes()))["traceEvents"]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    assert {e["pid"] for e in kernels} == {0, 1}
    assert all(e["tid"] >= GPU_TID_BASE and e["args"]["local_device"] == 0 for e in kernels)
    assert all(e["args"]["device"] == e["pid"] for e in kernels)
    names = {(e["pid"], e["args"]["name"]) for e in events if e.get("name") == "process_name"}
    assert names == {(0, "rank 0 (rank0.pt.trace.json.gz)"), (1, "rank 1 (rank1.pt.trace.json.gz)")}


def test_run_tracks_per_rank(run_written: tuple) -> None:
    from tracelens.replay.annotate import TRACK_TID_BASE

    _, _, doc, out = run_written
    steps = doc["steps"]["steps"]
    for rank, shift in ((0, 0), (1, SHIFT_NS)):
        names, starts, _ = _track(out, TRACK_TID_BASE + STEPS_TID, pid=rank)
        assert names == [f"step {s['step']}" for s in steps]
        assert starts.tolist() == [s["start_ns"] + shift for s in steps]
        _, starts, ends = _track(out, TRACK_TID_BASE + PATH_TID, pid=rank)
        assert int((ends - starts).sum()) == doc["whatif"]["critical_path"]["length_ns"]
        for k, remedy in enumerate(doc["whatif"]["remedies"]):
            _, starts, ends = _track(out, TRACK_TID_BASE + WHATIF_TID + k, pid=rank)
            assert starts.size == 1 and int(ends[0] - starts[0]) == remedy["predicted_span_ns"]


def test_critical_path_slices_do_not_overlap(tmp_path: Path) -> None:
    """A sync call recorded as ending before the copy it waited for (host and GPU clocks a few µs apart: the
    pageable-copies fixture, twice) owns a negative time on the path. Its run's slice began at the copy's end and the
    next run's at the call's end, before the copy slice ended: slices on one track that overlap without nesting,
    which Perfetto drops (slice_drop_overlapping_complete_event). The slices tile the path end to end instead; each
    keeps the document's time in ``args.ns``."""
    import json

    trace = FIXTURES / "gpu" / "pytorch_pageable-copies_cuda.pt.trace.json.gz"
    out = tmp_path / "annotated.json"
    assert main(["annotate", str(trace), "-o", str(out)]) == 0
    doc = dict(analyze(tracelens.load(trace)))
    path = doc["whatif"]["critical_path"]
    events = json.loads(out.read_text())["traceEvents"]
    track = [e for e in events if e["ph"] == "X" and e["pid"] == ANNOTATION_PID and e["tid"] == PATH_TID]
    assert any(e["args"]["ns"] < 0 for e in track)  # the case this test is about
    # in file order (path order) each slice starts where the one before ended: no overlap, no hole (µs text, exact)
    ends = [round((e["ts"] + e["dur"]) * 1000) for e in track]
    starts = [round(e["ts"] * 1000) for e in track]
    assert starts[1:] == ends[:-1]
    assert all(e["dur"] >= 0 for e in track)
    assert ends[-1] - starts[0] == path["length_ns"]
    for category, ns in path["ns"].items():
        assert sum(e["args"]["ns"] for e in track if e["name"] == category) == ns, category


def test_thread_ids_fit_perfettos_and_stay_apart(tmp_path: Path) -> None:
    """Perfetto reads pid and tid as unsigned 32-bit numbers (json_utils CoerceToUint32) and puts an event whose tid
    does not fit on the track tid = pid. An xplane's host threads are line ids (-8577355865861345619 and -1 in this
    JAX fixture): in Perfetto every one of them fell onto one track, their slices overlapping (and dropped). Such a
    tid becomes a free 32-bit id, one per thread, named by a thread_name event with the thread's own id."""
    import json

    trace_path = FIXTURES / "gpu" / "jax_mlp_cuda.xplane.pb"
    out = tmp_path / "annotated.json"
    assert main(["annotate", str(trace_path), "-o", str(out)]) == 0
    events = json.loads(out.read_text())["traceEvents"]
    assert all(0 <= e["pid"] < 2**32 and 0 <= e.get("tid", 0) < 2**32 for e in events)
    cols = event_columns(tracelens.load(trace_path))
    host = ~cols.of_kind("kernel", "memcpy", "memset", "gpu_sync", "gpu_annotation")
    threads = {(int(p), int(t)) for p, t in zip(cols.pid[host], cols.tid[host], strict=True)}
    assert any(not 0 <= t < 2**32 for _, t in threads)  # the case this test is about
    gpu_cats = {"kernel", "gpu_memcpy", "gpu_memset", "cuda_sync", "gpu_user_annotation"}
    written = {
        (e["pid"], e["tid"])
        for e in events
        if e["ph"] == "X" and e["pid"] != ANNOTATION_PID and e["cat"] not in gpu_cats
    }
    streams = {(e["pid"], e["tid"]) for e in events if e["ph"] == "X" and e["cat"] in gpu_cats}
    assert len(written) == len(threads) and not written & streams  # one track per thread, none a GPU stream's
    names = {
        (e["pid"], e["tid"]): e["args"]["name"]
        for e in events
        if e["ph"] == "M" and e["name"] == "thread_name"
    }
    for _, tid in threads:
        if not 0 <= tid < 2**32:
            assert f"thread {tid}" in names.values()
    # each thread's rows on its own track: the written host rows' starts per track are the thread's starts
    from tracelens.replay.annotate import CATEGORY
    from tracelens.trace import ALL_KINDS

    track_of = {(p, t): (p, t) for p, t in threads if 0 <= t < 2**32}
    track_of.update({(key[0], int(n.split()[1])): key for key, n in names.items() if n.startswith("thread ")})
    written_kinds = np.isin(cols.kind, [ALL_KINDS.index(k) for k in CATEGORY])
    for thread, track in track_of.items():
        rows = host & written_kinds & (cols.pid == thread[0]) & (cols.tid == thread[1])
        starts = sorted(
            round(e["ts"] * 1000) for e in events if e["ph"] == "X" and (e["pid"], e["tid"]) == track
        )
        assert starts == sorted(cols.start[rows].tolist()), thread


def test_launch_to_gpu_op_flows(tmp_path: Path) -> None:
    """The source trace links each launch call to the GPU op it enqueued (Kineto's ac2g flow events); the annotated
    trace wrote no flow, so Perfetto drew no arrow from a launch to its kernel. A flow start ("s") on the launch
    call's track at its start and an end ("f", bound to the enclosing slice: bp "e") on the GPU op's track at its
    start, one id per GPU op, for every GPU op whose correlation id names exactly one launch call (counted here
    from the source file itself)."""
    import gzip
    import json
    from collections import Counter

    source = json.loads(gzip.decompress(TRACE.read_bytes()))["traceEvents"]
    launches = [e for e in source if e.get("cat") in ("cuda_runtime", "cuda_driver") and e.get("ph") == "X"]
    by_corr = Counter(e["args"].get("correlation") for e in launches)
    ops = [e for e in source if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    linked = [e for e in ops if by_corr.get(e["args"].get("correlation")) == 1]
    assert linked
    out = tmp_path / "annotated.json"
    assert main(["annotate", str(TRACE), "-o", str(out)]) == 0
    events = json.loads(out.read_text())["traceEvents"]
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    ends = {e["id"]: e for e in events if e["ph"] == "f"}
    assert len(starts) == len(ends) == len(linked) and starts.keys() == ends.keys()
    assert all(e["bp"] == "e" and e["cat"] == "ac2g" for e in ends.values())
    slices = {(e["pid"], e["tid"], round(e["ts"] * 1000)): e for e in events if e["ph"] == "X"}
    for flow_id, start in starts.items():
        end = ends[flow_id]
        launch = slices[(start["pid"], start["tid"], round(start["ts"] * 1000))]
        op = slices[(end["pid"], end["tid"], round(end["ts"] * 1000))]
        assert launch["cat"] in ("cuda_runtime", "cuda_driver") and op["cat"] in (
            "kernel",
            "gpu_memcpy",
            "gpu_memset",
        )
        assert launch["args"]["correlation"] == op["args"]["correlation"]


def test_tracks_are_not_read_back_as_the_programs(written: tuple) -> None:
    """tracelens's own tracks were written as user_annotation slices: the annotated trace read back by tracelens had
    them as the program's annotations ("fixing low_occupancy: no gain" named as what the host did while the GPU
    idled, "host" and "step 1" at the top of the host side). Written with their own category, ``tracelens``, which
    the Kineto reader skips; the read-back trace has none of them and the same host side as the source."""
    doc, back, _ = written
    cols = event_columns(back)
    assert not (cols.pid == ANNOTATION_PID).any()
    doc_back = analyze(back, sections=["host"])
    top = lambda d: [(r["kind"], r["name"], r["count"]) for r in d["host"]["top"]]  # noqa: E731
    assert top(doc_back) == top(doc)


def test_devices_and_kernel_shapes_survive(tmp_path: Path) -> None:
    """The annotated trace carried no deviceProperties and no kernel geometry: read back, the GPU had no name, SM
    count or compute capability, and no kernel its grid, block, registers or shared memory, so occupancy could not
    be computed ("compute capability unknown") where the source had it, and Perfetto showed none of them on a
    kernel. Written in Kineto's keys (deviceProperties; grid, block, registers per thread, shared memory)."""
    trace_path = FIXTURES / "gpu" / "pytorch_tiny-kernels_cuda.pt.trace.json.gz"
    out = tmp_path / "annotated.json"
    assert main(["annotate", str(trace_path), "-o", str(out)]) == 0
    source, back = tracelens.load(trace_path), tracelens.load(out)
    keep = ("id", "name", "sm_count", "compute_major", "compute_minor", "warp_size", "max_threads_per_sm")
    keep += (
        "max_threads_per_block",
        "regs_per_sm",
        "regs_per_block",
        "shared_mem_per_sm",
        "shared_mem_per_block",
    )
    keep += ("shared_mem_per_block_optin", "total_memory_bytes")
    rows = lambda t: [{k: d[k] for k in keep} for d in t.devices.to_pylist()]  # noqa: E731
    assert rows(back) == rows(source) and rows(source)[0]["sm_count"] == 132
    a, b = event_columns(source), event_columns(back)
    ka, kb = np.flatnonzero(a.of_kind("kernel")), np.flatnonzero(b.of_kind("kernel"))
    order_a = np.lexsort((a.end[ka], a.start[ka]))
    order_b = np.lexsort((b.end[kb], b.start[kb]))
    for column in ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "registers_per_thread"):
        assert np.array_equal(a.at(column, ka)[order_a], b.at(column, kb)[order_b]), column
    shared = lambda c, k: c.at("static_shared_bytes", k) + c.at("dynamic_shared_bytes", k)  # noqa: E731
    assert np.array_equal(shared(a, ka)[order_a], shared(b, kb)[order_b])
    occupancy = lambda t: analyze(t, sections=["occupancy"])["occupancy"]["per_device"]  # noqa: E731
    assert occupancy(back) == occupancy(source)


def test_op_shapes_and_collective_args_survive(tmp_path: Path) -> None:
    """The ops' recorded shapes and flops (record_shapes=True) and the collectives' message args were not written:
    read back, the annotated trace counted no FLOPs ("the trace records no input shapes") where the source counted
    2.41 TFLOP. Written under Kineto's keys (Input Dims, Input type, Concrete Inputs, flops, In/Out msg nelems, dtype,
    Group size, Collective name, Process Group Name/Ranks) where a row has them."""
    trace_path = FIXTURES / "gpu" / "pytorch_tiny-kernels_cuda.pt.trace.json.gz"
    out = tmp_path / "annotated.json"
    assert main(["annotate", str(trace_path), "-o", str(out)]) == 0
    source, back = tracelens.load(trace_path), tracelens.load(out)
    compute = lambda t: analyze(t, sections=["ops"])["ops"]["compute"]  # noqa: E731
    assert compute(source)["flops"] > 0 and compute(back) == compute(source)
    columns = ("input_dims", "input_types", "concrete_inputs", "flops")
    key = lambda t: sorted(  # noqa: E731
        (r["start_ns"], r["end_ns"], r["name"], *(r[c] for c in columns))
        for r in t.events.select(["start_ns", "end_ns", "name", *columns]).to_pylist()
        if any(r[c] is not None for c in columns)
    )
    assert key(back) == key(source)


def test_xplane_steps_read_back(tmp_path: Path) -> None:
    """An xplane's steps are rows the reader makes from step_num stats (named ``step#N``, a name no reader takes for a
    step marker): the annotated file read back said "no step markers in this trace". Written as tracelens's own step
    name, ``tracelens/step#N``, they read back as the same steps."""
    import test_xplane_helpers as pb

    us = 1_000_000  # ps
    steps = [pb.event(2, i * 100 * us, 90 * us, [pb.stat(2, int64=i + 3)]) for i in range(3)]
    calls = [pb.event(1, i * 100 * us + 5 * us, us, [pb.stat(1, int64=i + 1)]) for i in range(3)]
    kernels = [pb.event(1, i * 100 * us + 10 * us, 50 * us, [pb.stat(1, int64=i + 1)]) for i in range(3)]
    host = pb.plane(
        0,
        "/host:CPU",
        [pb.line(1, "python3", 0, steps + calls)],
        {1: "cuLaunchKernel", 2: "train"},
        {1: "correlation_id", 2: "step_num"},
    )
    gpu = pb.plane(1, "/device:GPU:0", [pb.line(7, "Stream #7", 0, kernels)], {1: "k"}, {1: "correlation_id"})
    source = tmp_path / "host.xplane.pb"
    source.write_bytes(pb.space([host, gpu]))
    out = tmp_path / "annotated.json"
    assert main(["annotate", str(source), "-o", str(out)]) == 0
    want = analyze(tracelens.load(source), sections=["steps"])["steps"]["steps"]
    got = analyze(tracelens.load(out), sections=["steps"])["steps"]["steps"]
    assert [s["step"] for s in want] == [3, 4, 5]
    assert [(s["step"], s["start_ns"], s["end_ns"]) for s in got] == [
        (s["step"], s["start_ns"], s["end_ns"]) for s in want
    ]


@pytest.mark.parametrize("name", ["jax_mlp_cuda.xplane.pb", "pytorch_healthy_cuda.pt.trace.json.gz"])
def test_annotated_trace_reads_back_as_its_producers(tmp_path: Path, name: str) -> None:
    """The annotated file is Chrome trace JSON, which the Kineto reader reads: an annotated JAX profile read back
    as "PyTorch Profiler (Kineto)", framework pytorch (and got PyTorch's remedies). The file now says what it
    was written from (``tracelensSource``), and reads back as that producer's trace; a PyTorch trace's file
    carries no such member and reads as before."""
    import gzip
    import json

    source = FIXTURES / "gpu" / name
    out = tmp_path / "annotated.json.gz"
    assert main(["annotate", str(source), "-o", str(out)]) == 0
    want, got = tracelens.load(source).metadata, tracelens.load(out).metadata
    assert (got.framework, got.producer, got.producer_version) == (
        want.framework,
        want.producer,
        want.producer_version,
    )
    # the profiler whose instructions apply (an incomplete trace's remedy): the source's, not PyTorch's
    assert recorder(tracelens.load(out)) == recorder(tracelens.load(source))
    # and the reason a figure is missing names the source's profiler (no XLA flops, not torch's record_shapes)
    reasons = [
        analyze(tracelens.load(p), sections=["ops"])["ops"]["compute"]["reason"] for p in (source, out)
    ]
    assert reasons[0] == reasons[1]
    written = json.loads(gzip.decompress(out.read_bytes()))
    if want.source_format == "xplane":
        assert (want.framework, want.producer) == ("jax", "JAX profiler")
        assert written["tracelensSource"]["format"] == "xplane"
        assert got.extra["annotated_from"]["format"] == "xplane"
    else:
        assert "tracelensSource" not in written and "annotated_from" not in got.extra
