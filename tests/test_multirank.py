"""Multi-rank runs: inputs, rank numbering, cache, cross-rank numbers, failures, engines.

Expected numbers come from hand derivation (the hand-built run below) or from brute force written here.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import numpy as np
import pytest

from tracelens import run as runs
from tracelens.cli import main
from tracelens.errors import InputError
from tracelens.trace import Trace, TraceMetadata

NCCL = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)"


def handmade_rank(rank: int, *, clock: str = "unix", origin_skew: int = 10) -> Trace:
    """One rank of a hand-built 3-rank run (4 steps of 800 ns, one every 1000 ns).

    Rank 2 is the straggler: from step 3 on its steps start 100 ns late and its compute kernel takes
    400 ns instead of 300. Each step ends with an all-reduce starting 500 ns into the step; every rank's
    all-reduce ends 50 ns (the transfer) after the last rank arrives. Each rank's clock origin differs by
    ``origin_skew`` ns and its table times compensate, so the absolute times agree across ranks.

    Hand-derived expectations (clock alignment):
      step lateness vs the median of the other ranks: rank 2 = 0, 0, 100, 100 -> mean 50, max 100;
        ranks 0, 1 at steps 3-4: others are {late, on time} -> median 50 early -> mean -25.
      all-reduce durations: steps 1-2 all 50; steps 3-4 ranks 0, 1 wait 100 more (150), rank 2 50.
        transfer = 4 x 50 = 200 per rank; wait = 2 x 100 = 200 for ranks 0 and 1, 0 for rank 2; total 400.
      non-NCCL GPU work: 4 x 300 = 1200 (ranks 0, 1), 4 x 400 = 1600 (rank 2) -> spread 2 x 400 = 800.
    """
    rows = []
    for k in range(1, 5):
        late = 100 if k >= 3 else 0
        start = k * 1000 + (late if rank == 2 else 0) - rank * origin_skew
        rows.append(
            {
                "kind": "step",
                "name": f"ProfilerStep#{k}",
                "start_ns": start,
                "end_ns": start + 800,
                "step": k,
                "pid": 1,
                "tid": 1,
            }
        )
        compute = 400 if rank == 2 else 300
        rows.append(
            {
                "kind": "kernel",
                "name": "gemm",
                "start_ns": start + 100,
                "end_ns": start + 100 + compute,
                "device": 0,
                "stream": 7,
            }
        )
        last_arrival = k * 1000 + late + 500 - rank * origin_skew
        rows.append(
            {
                "kind": "kernel",
                "name": NCCL,
                "start_ns": start + 500,
                "end_ns": last_arrival + 50,
                "device": 0,
                "stream": 9,
            }
        )
    meta = TraceMetadata(
        source_format="handmade",
        clock=clock,
        time_origin_ns=10**18 + rank * origin_skew,
        rank=rank,
        world_size=3,
    )
    return Trace.from_rows(rows, metadata=meta)


def write_handmade_run(directory: Path, **kwargs) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for rank in range(3):
        path = directory / f"rank{rank}.parquet"
        handmade_rank(rank, **kwargs).save(path)
        paths.append(path)
    return paths


def by_rank(rows: list[dict]) -> dict[int, dict]:
    return {row["rank"]: row for row in rows}


# ---------------------------------------------------------------------------------------- inputs


@pytest.mark.parametrize(
    ("name", "rank"),
    [
        ("rank-3.json.gz", 3),
        ("rank_12.pt.trace.json", 12),
        ("trainer_rank7_2024.json.gz", 7),
        ("a100_nccl_2rank_rank0_2024.json.gz", 0),
        ("worker_5.pt.trace.json.gz", 5),
        ("job-2.sqlite", 2),
        ("host.1700000000.pt.trace.json", None),
        ("trace.json", None),
    ],
)
def test_rank_from_name(name: str, rank: int | None) -> None:
    assert runs.rank_from_name(name) == rank


def test_resolve_ranks_prefers_trace_then_name_then_order() -> None:
    paths = [Path("b_rank1.json"), Path("a_rank0.json")]
    assert runs.resolve_ranks([5, 4], paths) == ([5, 4], [])
    assert runs.resolve_ranks([None, None], paths) == ([1, 0], [])
    ranks, warnings = runs.resolve_ranks([0, 0], paths)
    assert ranks == [0, 1] and "collide" in warnings[0]
    ranks, warnings = runs.resolve_ranks([None, None], [Path("x.json"), Path("y.json")])
    assert ranks == [0, 1] and "missing" in warnings[0]


def test_run_directory_and_glob_expansion(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    for name in ("rank10.json.gz", "rank2.json.gz", "rank1.json.gz", "notes.txt"):
        (run / name).write_bytes(b"x")
    assert runs.is_run_directory(run)
    expected = [run / "rank1.json.gz", run / "rank2.json.gz", run / "rank10.json.gz"]  # natural order
    assert runs.expand_paths([run]) == expected
    assert runs.expand_paths([str(run / "rank*.json.gz")]) == expected
    assert runs.expand_paths([run / "rank2.json.gz", str(run / "rank*.json.gz")]) == [
        run / "rank2.json.gz",
        run / "rank1.json.gz",
        run / "rank10.json.gz",
    ]  # duplicates dropped
    with pytest.raises(InputError, match="no trace file matches"):
        runs.expand_paths([str(run / "nothing*.json")])

    logdir = tmp_path / "logdir"
    (logdir / "plugins" / "profile" / "run1").mkdir(parents=True)
    (logdir / "plugins" / "profile" / "run1" / "host.xplane.pb").write_bytes(b"\x0a")
    (logdir / "a.json").write_bytes(b"{}")
    (logdir / "b.json").write_bytes(b"{}")
    assert not runs.is_run_directory(logdir)  # a TF logdir is one trace
    assert not runs.is_run_directory(run / "rank1.json.gz")
    single = tmp_path / "single"
    single.mkdir()
    (single / "only.json").write_bytes(b"{}")
    assert not runs.is_run_directory(single)


# ------------------------------------------------------------------------------------------ math


def test_leave_one_out_median_matches_brute_force() -> None:
    rng = np.random.default_rng(7)
    matrix = rng.integers(0, 1000, size=(9, 13)).astype(float)
    matrix[rng.random(matrix.shape) < 0.25] = np.nan
    matrix[:, 0] = np.nan
    matrix[1:, 1] = np.nan  # a column with one value: no other rank to compare with
    got = runs.leave_one_out_median(matrix)
    for i in range(matrix.shape[0]):
        for j in range(matrix.shape[1]):
            others = np.delete(matrix[:, j], i)
            others = others[~np.isnan(others)]
            if np.isnan(matrix[i, j]) or others.size == 0:
                assert np.isnan(got[i, j])
            else:
                assert got[i, j] == pytest.approx(float(np.median(others)))


# ------------------------------------------------------------------------------------ hand-built run


def test_handmade_run_numbers(tmp_path: Path) -> None:
    write_handmade_run(tmp_path / "run")
    doc, failures = runs.analyze_run([tmp_path / "run"], workers=2, cache_dir=tmp_path / "cache")
    assert failures == []
    assert doc["source"]["format"] == "run" and doc["source"]["traces"] == 3
    ranks = by_rank(doc["ranks"])
    assert sorted(ranks) == [0, 1, 2]

    steps = doc["stragglers"]["steps"]
    assert steps["alignment"] == "clock" and steps["compared"] == 4
    assert steps["straggler"] == {
        "rank": 2,
        "device": None,
        "delay_ns": 50,
        "max_lateness_ns": 100,
        "significant": True,
    }  # 50 >= 5% of the 800 ns median step
    lateness = {row["rank"]: row["mean_lateness_ns"] for row in steps["per_rank"]}
    assert lateness == {0: -25, 1: -25, 2: 50}
    assert all(ranks[r]["step_count"] == 4 and ranks[r]["mean_step_ns"] == 800 for r in ranks)

    coll = doc["collectives"]
    assert coll["participants"] == 3 and coll["matched"] == 4 and coll["unmatched_kernels"] == 0
    assert {r: (ranks[r]["collective_transfer_ns"], ranks[r]["collective_wait_ns"]) for r in ranks} == {
        0: (200, 200),
        1: (200, 200),
        2: (200, 0),
    }
    assert coll["wait_ns"] == 400 and coll["transfer_ns"] == 600
    # 400 of 1000 ns matched collective time is waiting: neither mostly waiting nor mostly transfer.
    assert coll["wait_share"] == pytest.approx(0.4) and coll["verdict"] == "mixed"
    coll_straggler = doc["stragglers"]["collectives"]["straggler"]
    assert (coll_straggler["rank"], coll_straggler["device"], coll_straggler["delay_ns"]) == (2, 0, 50)

    imbalance = doc["imbalance"]
    # lost per GPU: the 400 ns of waiting spread over the 3 participants
    assert imbalance["total_lost_ns"] == 400 and imbalance["lost_ns"] == 133
    assert imbalance["basis"] == "collective_wait" and imbalance["participants"] == 3
    assert imbalance["work_spread_ns"] == 800
    assert imbalance["max_over_mean_work"] == pytest.approx(1600 / (4000 / 3))
    assert imbalance["straggler_rank"] == 2
    spans = sum(d["span_ns"] for d in doc["devices"])
    assert imbalance["lost_fraction"] == pytest.approx(400 / spans)
    assert {d["rank"] for d in doc["devices"]} == {0, 1, 2}
    # the victim of the wait is reported, not the straggler (ties go to the lower rank)
    assert doc["representative_rank"] == 0
    # the run's diagnosis is rank 0's, re-run with the run's imbalance as the across-ranks loss
    causes = {c["cause"]: c for c in doc["diagnosis"]["causes"]}
    assert causes["multi_gpu_imbalance"]["evidence"]["across_ranks_ns"] == 133
    assert causes["multi_gpu_imbalance"]["lost_ns"] >= 133
    json.dumps(doc, allow_nan=False)  # JSON-able, no NaN


def test_unaligned_clocks_measure_from_first_common_step(tmp_path: Path) -> None:
    # On clocks that do not agree, the origins' 1 ms skew must not count as lateness: each rank is
    # re-based on step 1, so rank 2 is late by 100 ns from step 3 on, as in the aligned case.
    write_handmade_run(tmp_path / "run", clock="nsys-session", origin_skew=1_000_000)
    doc, failures = runs.analyze_run([tmp_path / "run"], workers=1, cache_dir=tmp_path / "cache")
    steps = doc["stragglers"]["steps"]
    assert failures == [] and steps["alignment"] == "first_common"
    assert {r["rank"]: r["mean_lateness_ns"] for r in steps["per_rank"]} == {0: -25, 1: -25, 2: 50}
    assert any("clocks" in w for w in doc["source"]["warnings"])


def test_cache_manifest_reuse_and_invalidation(tmp_path: Path) -> None:
    paths = write_handmade_run(tmp_path / "run")
    cache = tmp_path / "cache"
    first, _ = runs.analyze_run(paths, workers=1, cache_dir=cache)
    assert [r["cached"] for r in first["ranks"]] == [False, False, False]
    manifest = json.loads((cache / runs.MANIFEST_NAME).read_text())
    entry = manifest["entries"][os.path.realpath(paths[1])]
    assert entry["size"] == paths[1].stat().st_size and entry["mtime_ns"] == paths[1].stat().st_mtime_ns
    assert entry["rank"] == 1 and (cache / entry["parquet"]).is_file()

    second, _ = runs.analyze_run(paths, workers=1, cache_dir=cache)
    assert [r["cached"] for r in second["ranks"]] == [True, True, True]
    assert second["imbalance"] == first["imbalance"] and second["stragglers"] == first["stragglers"]

    handmade_rank(1).save(paths[1])  # rewritten: new mtime
    os.utime(paths[1], ns=(paths[1].stat().st_atime_ns, paths[1].stat().st_mtime_ns + 10**9))
    third, _ = runs.analyze_run(paths, workers=1, cache_dir=cache)
    assert [r["cached"] for r in third["ranks"]] == [True, False, True]


def test_default_cache_in_the_user_cache_not_beside_the_traces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = write_handmade_run(tmp_path / "run")
    before = sorted(p.name for p in (tmp_path / "run").iterdir())
    monkeypatch.setenv("TRACELENS_CACHE_DIR", str(tmp_path / "mine"))
    doc, _ = runs.analyze_run([tmp_path / "run"], workers=1)
    cache = Path(doc["source"]["cache_dir"])
    assert cache.parent == tmp_path / "mine" / "runs" and cache == runs.default_cache_dir(paths)
    assert (cache / runs.MANIFEST_NAME).is_file()
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == before  # nothing written beside the traces
    (tmp_path / "run" / runs.CACHE_DIRNAME).mkdir()  # an older version's cache folder
    assert runs.is_run_directory(tmp_path / "run")  # does not count as a rank


# ------------------------------------------------------------------------------------------ failures


def test_corrupt_rank_is_reported_and_the_rest_analyzed(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    run = tmp_path / "run"
    write_handmade_run(run)
    corrupt = run / "rank3.json.gz"
    corrupt.write_bytes(gzip.compress(b'{"traceEvents": [' + b"1," * 1000)[:200])  # truncated gzip
    doc, failures = runs.analyze_run([run], workers=2, cache_dir=tmp_path / "cache")
    assert len(failures) == 1 and str(corrupt) in failures[0]
    assert sorted(r["rank"] for r in doc["ranks"]) == [0, 1, 2]

    code = main(
        ["analyze", str(run), "--cache", str(tmp_path / "cache"), "--format", "json", "--workers", "2"]
    )
    captured = capsys.readouterr()
    assert code == 1
    err_lines = captured.err.strip().splitlines()
    assert len(err_lines) == 1 and "1 of 4 traces failed" in err_lines[0] and "rank3.json.gz" in err_lines[0]
    assert "Traceback" not in captured.err
    printed = json.loads(captured.out)
    assert sorted(r["rank"] for r in printed["ranks"]) == [0, 1, 2]


def test_a_failed_rank_is_named_in_every_output(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """A rank that failed to read was said on stderr only: the markdown report (a PR comment), the terminal summary
    and the JSON read as a complete run of the ranks left, the failed trace not named. Named in source.warnings, which
    every renderer shows; the exit code stays 1."""
    run = tmp_path / "run"
    write_handmade_run(run)
    corrupt = run / "rank3.json.gz"
    corrupt.write_bytes(gzip.compress(b'{"traceEvents": [' + b"1," * 1000)[:200])
    doc, _ = runs.analyze_run([run], workers=1, cache_dir=tmp_path / "cache")
    (warning,) = [w for w in doc["source"]["warnings"] if "rank3.json.gz" in w]
    assert warning.startswith("1 of 4 traces could not be read and is left out:")
    cache = ["--cache", str(tmp_path / "cache"), "--workers", "1"]
    for fmt in ("terminal", "markdown"):
        assert main(["analyze", str(run), "--format", fmt, *cache]) == 1
        out = " ".join(capsys.readouterr().out.split())
        assert "1 of 4 traces could not be read" in out and "rank3.json.gz" in out, fmt


def test_a_saved_document_in_the_run_directory_is_no_rank(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """analyze DIR -f json -o DIR/summary.json, then analyze DIR again: the saved document was taken for a rank's
    trace, failed to read ("not a PyTorch profiler trace"), and the run exited 1 (a CI job failing on its own
    output). A run directory's saved analysis documents (by content) are no traces of it."""
    run = tmp_path / "run"
    write_handmade_run(run)
    cache = ["--cache", str(tmp_path / "cache"), "--workers", "1"]
    assert main(["analyze", str(run), "-f", "json", "-o", str(run / "summary.json"), *cache]) == 0
    assert main(["diff", str(run), str(run), "-f", "json", "-o", str(run / "diff.json")]) == 0
    capsys.readouterr()
    assert main(["analyze", str(run), "-f", "json", *cache]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert sorted(r["rank"] for r in doc["ranks"]) == [0, 1, 2]  # the three ranks' traces alone
    assert not any("summary.json" in w or "diff.json" in w for w in doc["source"]["warnings"])


@pytest.mark.parametrize(
    ("bad", "given"),
    [
        ("missing", "as files"),
        ("device", "as files"),
        ("link loop", "as files"),
        ("link loop", "in the run directory"),
        ("dangling link", "in the run directory"),
        ("named pipe", "in the run directory"),
    ],
)
def test_a_trace_that_cannot_be_opened_is_one_failed_rank(
    tmp_path: Path, capsys: pytest.CaptureFixture, bad: str, given: str
) -> None:
    """A run naming a trace it cannot open (analyze a b missing.json; a run directory holding a link to a moved
    file, a link loop or a pipe named as a rank's trace) was refused whole, exit 2 (named files), or analyzed
    without the rank and without a word, exit 0 (directory entries, which were not regular files). Now as a rank
    whose trace fails to read: left out and named on stderr and in the document, the others analyzed, exit 1."""
    run = tmp_path / "run"
    paths = write_handmade_run(run)
    target = run / "rank3.json"
    if bad == "link loop":
        os.symlink(target, target)
    elif bad == "dangling link":
        os.symlink("moved/rank3.json", target)
    elif bad == "named pipe":
        os.mkfifo(target)  # never opened: no writer, a read would wait forever
    elif bad == "device":
        target = Path("/dev/null")
    args = [str(run)] if given == "in the run directory" else [*map(str, paths), str(target)]
    cache = ["--cache", str(tmp_path / "cache"), "--workers", "1"]
    assert main(["analyze", *args, "--format", "json", *cache]) == 1
    captured = capsys.readouterr()
    (line,) = captured.err.strip().splitlines()
    assert (
        line.startswith("tracelens: 1 of 4 traces failed (the others were analyzed): ")
        and str(target) in line
    )
    reason = {
        "missing": "no such file or directory",
        "link loop": "a symbolic link loop",
        "dangling link": "a symbolic link to a missing file (moved/rank3.json)",
        "named pipe": "not a regular file (a named pipe)",
        "device": "not a regular file (a character device)",
    }[bad]
    assert reason in line
    doc = json.loads(captured.out)
    assert sorted(r["rank"] for r in doc["ranks"]) == [0, 1, 2]
    (warning,) = [w for w in doc["source"]["warnings"] if "left out" in w]
    assert warning.startswith("1 of 4 traces could not be read and is left out: ") and reason in warning
    if given == "in the run directory":  # annotate too (it refused the whole run, exit 2)
        assert main(["annotate", str(run), "-o", str(tmp_path / "a.json")]) == 1
        (line,) = [x for x in capsys.readouterr().err.splitlines() if not x.startswith("wrote ")]
        assert line.startswith("tracelens: 1 of 4 traces failed") and reason in line
        assert {e.get("pid") for e in json.loads((tmp_path / "a.json").read_text())["traceEvents"]} >= {
            0,
            1,
            2,
        }


def test_a_diff_of_two_runs_names_both_sides_failures(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """diff BASE HEAD where both runs lost a trace: the one stderr line said BASE's only; HEAD's went unsaid."""
    base, head = tmp_path / "base", tmp_path / "head"
    write_handmade_run(base)
    write_handmade_run(head)
    os.symlink("moved.json", base / "rank3.json")
    (head / "rank4.json.gz").write_bytes(b"not gzip")
    assert main(["diff", str(base), str(head), "-f", "json"]) == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("tracelens: BASE: 1 of 4 traces failed") and "rank3.json" in line
    assert "; HEAD: 1 of 4 traces failed" in line and "rank4.json.gz" in line
    assert main(["diff", str(head), str(head / "rank0.parquet"), "-f", "json"]) == 1
    assert capsys.readouterr().err.startswith("tracelens: BASE: 1 of 4 traces failed")


def test_a_trace_named_twice_is_read_once_and_said(tmp_path: Path) -> None:
    """analyze rank0 rank1 rank0 (a slip for rank2) read two ranks without a word."""
    paths = write_handmade_run(tmp_path / "run")
    link = tmp_path / "again.parquet"
    os.symlink(paths[0], link)
    doc, failures = runs.analyze_run(
        [paths[0], paths[1], paths[0], link], workers=1, cache_dir=tmp_path / "c"
    )
    assert failures == [] and sorted(r["rank"] for r in doc["ranks"]) == [0, 1]
    notes = [w for w in doc["source"]["warnings"] if "named more than once" in w]
    assert notes == [
        f"{paths[0]}: named more than once: read once",
        f"{link}: named more than once (as {paths[0]}): read once",
    ]


def test_the_output_is_never_a_trace_of_the_run(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """analyze RUN -o RUN/rank0.parquet wrote the analysis over rank 0's trace (only a trace named on the command
    line was compared with the output, not the files a run directory stands for). Refused before anything is read
    or written, on every command that reads a run directory."""
    run = tmp_path / "run"
    paths = write_handmade_run(run)
    before = paths[0].read_bytes()
    for argv in (
        ["analyze", str(run), "-f", "json", "-o", str(paths[0])],
        ["report", str(run), "-o", str(paths[0])],
        ["annotate", str(run), "-o", str(paths[1])],
        ["diff", str(run), str(run), "-f", "json", "-o", str(paths[2])],
    ):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "the output is a file this command reads" in err, (argv, err)
    assert paths[0].read_bytes() == before


def test_all_ranks_failing_is_an_input_error(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    for i in range(2):
        (tmp_path / f"rank{i}.json").write_text("{ not json")
    with pytest.raises(InputError, match="no trace of the run could be read"):
        runs.analyze_run([tmp_path], workers=1, cache_dir=tmp_path / "cache")
    assert main(["analyze", str(tmp_path / "rank*.json"), "--cache", str(tmp_path / "cache")]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


# ------------------------------------------------------------------------------------------ engines


def test_dask_engine_gives_the_same_document(tmp_path: Path) -> None:
    distributed = pytest.importorskip("dask.distributed")
    paths = write_handmade_run(tmp_path / "run")
    local, _ = runs.analyze_run(paths, workers=2, cache_dir=tmp_path / "local")
    with distributed.LocalCluster(
        n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None
    ) as cluster:
        remote, failures = runs.analyze_run(
            paths, engine="dask", scheduler=cluster.scheduler_address, cache_dir=tmp_path / "dask"
        )
    assert failures == []
    for key in ("stragglers", "collectives", "imbalance"):
        assert remote[key] == local[key]
    assert [r["rank"] for r in remote["ranks"]] == [0, 1, 2]


# ------------------------------------------------------------------------------------------ plot


def test_rank_plot_is_written(tmp_path: Path) -> None:
    write_handmade_run(tmp_path / "run")
    doc, _ = runs.analyze_run([tmp_path / "run"], workers=1, cache_dir=tmp_path / "cache")
    from tracelens.report.plots import ranks_png

    png = ranks_png(doc)
    assert png is not None and png[:8] == b"\x89PNG\r\n\x1a\n"


def test_markdown_report_has_a_ranks_section(tmp_path: Path) -> None:
    paths = write_handmade_run(tmp_path / "run")
    odd = paths[0].with_name("rank0|<b>x.parquet")  # a name that could break a table or inject a tag
    paths[0].rename(odd)
    doc, _ = runs.analyze_run([odd, *paths[1:]], workers=1, cache_dir=tmp_path / "cache")
    from tracelens.report import figures, render

    out = tmp_path / "run.md"
    pngs = figures(doc, "markdown", out, plots=True, png=True)
    assert sorted(f.role for f in pngs) == ["ranks", "utilization"] or [f.role for f in pngs] == ["ranks"]
    text = render(doc, "markdown", plots=True, figures=pngs)
    assert "## Ranks" in text and "rank0&#124;&lt;b&gt;x.parquet" in text and "<b>" not in text
    rows = [line for line in text.splitlines() if line.startswith("| 2 | rank2.parquet")]
    assert len(rows) == 1 and "| 50 ns |" in rows[0] and "| 0 ns |" in rows[0]  # lateness 50, wait 0
    assert "rank 2: step starts 50 ns late" in text
    assert (
        "400 ns waiting for slower ranks (40.0% of it): partly waiting for late ranks, partly transfer"
        in text
    )
    assert "](run.ranks.png)" in text and not (tmp_path / "run.ranks.png").exists()  # the CLI writes it
    # Without png=True no PNG (the mermaid charts stay inline).
    assert figures(doc, "markdown", tmp_path / "plain.md", plots=True) == []
    assert ".png" not in render(doc, "markdown", plots=True)


def test_read_only_trace_folder_caches_in_the_user_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = tmp_path / "run"
    paths = write_handmade_run(run)
    monkeypatch.delenv("TRACELENS_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    run.chmod(0o555)
    try:
        cache = runs.default_cache_dir(paths)
        assert cache.parent == tmp_path / "xdg" / "tracelens" / "runs"
        doc, failures = runs.analyze_run([run], workers=1)
        assert failures == [] and Path(doc["source"]["cache_dir"]) == cache
        assert not (run / runs.CACHE_DIRNAME).exists()
    finally:
        run.chmod(0o755)
    other = tmp_path / "elsewhere" / "rank9.parquet"
    other.parent.mkdir()
    other.write_bytes(b"x")
    # traces in two folders: the user cache too, a folder per set of traces
    assert runs.default_cache_dir([paths[0], other]).parent == tmp_path / "xdg" / "tracelens" / "runs"
    assert runs.default_cache_dir([paths[0], other]) != runs.default_cache_dir(paths)


def _collectives(durations: dict[int, list[int]], lateness: dict[int, int]) -> dict:
    """Two or more ranks running collectives c = 0.. every 1000 ns; rank r's kernel c starts lateness[r] late and
    lasts durations[r][c]."""
    import pandas as pd

    from tracelens.run.crossrank import collective_analysis

    rows = [
        {"rank": r, "device": 0, "collective": c, "start_abs_ns": 1000 * c + lateness.get(r, 0), "dur_ns": d}
        for r, ds in durations.items()
        for c, d in enumerate(ds)
    ]
    return collective_analysis(pd.DataFrame(rows), comparable=True)


def test_slow_link_vs_straggler():
    # Slow link: every rank's all-reduce takes 400 ns, all start together: no waiting, wait share 0.
    link = _collectives({0: [400, 400, 400], 1: [400, 400, 400]}, {})
    assert (link["wait_ns"], link["wait_share"], link["verdict"]) == (0, 0.0, "transfer_bound")
    # Straggler: rank 1 arrives 300 ns late to each collective and rank 0 waits for it inside the kernel
    # (400 ns against rank 1's 100 ns): transfer 100 x 2 ranks x 3, wait 300 x 3 = 900 of 1500; rank 1's
    # lateness 300 >= 5% of the 1000 ns between collectives.
    late = _collectives({0: [400, 400, 400], 1: [100, 100, 100]}, {1: 300})
    assert (late["transfer_ns"], late["wait_ns"]) == (600, 900)
    assert late["wait_share"] == pytest.approx(0.6) and late["verdict"] == "straggler"
    assert late["straggler"]["straggler"]["rank"] == 1


def test_markdown_names_the_rank_its_diagnosis_is_of(tmp_path: Path) -> None:
    # The headline's figures cover every rank; the primary cause and findings are one rank's: the report says
    # which (the terminal's "diagnosis and host side of rank N"), and a one-trace report says nothing of it.
    paths = write_handmade_run(tmp_path / "run")
    doc, _ = runs.analyze_run(paths, workers=1, cache_dir=tmp_path / "cache")
    from tracelens.report import render

    rank = doc["representative_rank"]
    text = render(doc, "markdown")
    line = f"- **Diagnosed rank:** rank {rank} (the rank waiting longest in collectives, else the least utilized)"
    assert line in text
    assert text.index(line) < text.index("- **Primary cause:**")
    from tracelens import load
    from tracelens.analyses import analyze

    one = render(analyze(load(paths[0])), "markdown")
    assert "Diagnosed rank" not in one


# ------------------------------------------------------------------ imbalance of captures of different lengths


def _plain_rank(rank: int, steps: int, gemm: int, clock: str = "unix", streams: int = 1) -> Trace:
    """A rank without collectives: a ``gemm`` of ``gemm`` ns 100 ns into each 800 ns step (one every 1000 ns),
    on each of ``streams`` streams at once."""
    rows: list[dict] = []
    for k in range(1, steps + 1):
        start = k * 1000
        rows.append(
            {
                "kind": "step",
                "name": f"ProfilerStep#{k}",
                "start_ns": start,
                "end_ns": start + 800,
                "step": k,
                "pid": 1,
                "tid": 1,
            }
        )
        rows += [
            {
                "kind": "kernel",
                "name": "gemm",
                "start_ns": start + 100,
                "end_ns": start + 100 + gemm,
                "device": 0,
                "stream": 7 + s,
            }
            for s in range(streams)
        ]
    meta = TraceMetadata(
        source_format="handmade", clock=clock, time_origin_ns=10**18, rank=rank, world_size=2
    )
    return Trace.from_rows(rows, metadata=meta)


@pytest.mark.parametrize("clock", ["unix", "nsys-session"])
def test_captures_of_different_lengths_are_not_an_imbalance(tmp_path: Path, clock: str) -> None:
    """Rank 0 captured 4 steps, rank 1 40 (10x longer), no collective: the work spread (800 vs 12,000 ns) was
    reported as 5.6 us lost per GPU, 175% of rank 0's 3.2 us span. The captures cannot be compared: null with
    a reason, and no multi_gpu_imbalance in the diagnosis."""
    run = tmp_path / "run"
    run.mkdir()
    _plain_rank(0, 4, 200, clock).save(run / "rank0.parquet")
    _plain_rank(1, 40, 300, clock).save(run / "rank1.parquet")
    doc, failures = runs.analyze_run([run], workers=1, cache_dir=tmp_path / "cache")
    assert failures == []
    imbalance = doc["imbalance"]
    assert (
        imbalance["lost_ns"] is None and imbalance["lost_fraction"] is None and imbalance["verdict"] is None
    )
    assert "differ in length" in imbalance["reason"] and "rank 0: 3.2" in imbalance["reason"]
    for cause in doc["diagnosis"]["causes"]:
        assert cause["share"] <= 1.0, cause
        assert cause["cause"] != "multi_gpu_imbalance"
    json.dumps(doc, allow_nan=False)


def test_work_spread_of_captures_of_one_length(tmp_path: Path) -> None:
    """The same 4 steps on both ranks, gemm 200 ns (rank 0) vs 300 ns (rank 1): captures 3,200 and 3,300 ns
    (within 10%), work 800 vs 1,200 -> spread 400, 200 per GPU, 400 / 6,500 of GPU time (unchanged)."""
    run = tmp_path / "run"
    run.mkdir()
    _plain_rank(0, 4, 200).save(run / "rank0.parquet")
    _plain_rank(1, 4, 300).save(run / "rank1.parquet")
    doc, failures = runs.analyze_run([run], workers=1, cache_dir=tmp_path / "cache")
    assert failures == []
    imbalance = doc["imbalance"]
    assert imbalance["basis"] == "work_spread" and imbalance["reason"] is None
    assert imbalance["work_spread_ns"] == 400 and imbalance["total_lost_ns"] == 400
    assert imbalance["lost_ns"] == 200
    assert imbalance["lost_fraction"] == pytest.approx(400 / 6500) and imbalance["verdict"] == "imbalanced"
    causes = {c["cause"]: c for c in doc["diagnosis"]["causes"]}
    assert doc["representative_rank"] == 0
    assert causes["multi_gpu_imbalance"]["evidence"]["across_ranks_ns"] == 200
    assert causes["multi_gpu_imbalance"]["share"] == pytest.approx(200 / 3200)


def test_concurrent_streams_are_not_more_work(tmp_path: Path) -> None:
    """Same 4 steps; rank 0 runs its 400 ns gemm on 8 streams at once, rank 1 on one. Both GPUs are busy
    1,600 ns of a 3,400 ns capture: balanced. Summed kernel durations (12,800 vs 1,600) made it 5.6 us lost
    per GPU, 165% of the span."""
    run = tmp_path / "run"
    run.mkdir()
    _plain_rank(0, 4, 400, streams=8).save(run / "rank0.parquet")
    _plain_rank(1, 4, 400).save(run / "rank1.parquet")
    doc, failures = runs.analyze_run([run], workers=1, cache_dir=tmp_path / "cache")
    assert failures == []
    imbalance = doc["imbalance"]
    assert imbalance["basis"] == "work_spread" and imbalance["work_spread_ns"] == 0
    assert imbalance["lost_ns"] == 0 and imbalance["verdict"] == "balanced"
    assert all(c["share"] <= 1.0 for c in doc["diagnosis"]["causes"])
