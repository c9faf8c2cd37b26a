"""The ``tracelens`` command line: a thin layer over the library.

Data flows one way: file -> Trace (``tracelens.load``) -> results (``analyses.analyze``) -> renderer.
Errors are caught in one place, :func:`main`, which prints one line and returns the error's exit code.
"""

from __future__ import annotations

import contextlib
import gc
import glob
import os
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import click

from . import __version__, process
from .errors import TracelensError, shown
from .outputs import check_files, refuse_document, refuse_png, refuse_run_directory, writing

if TYPE_CHECKING:
    from .document import Document, RunDocument

FORMATS = ("terminal", "json", "markdown")


def _write_output(text: str, output: str | None) -> None:
    text = shown(
        text
    )  # a path named with bytes that are not UTF-8 (the report's title): each such byte as \xNN
    if output is None or output == "-":
        click.echo(text, nl=False)
    else:
        with writing(output):
            Path(output).write_text(text, encoding="utf-8")
        click.echo(f"wrote {shown(output)}", err=True)


def _write_report(
    doc: Document, fmt: str, output: str | None, *, plots: bool, png: bool, full_names: bool = False
) -> None:
    """Render ``doc``; write the PNG figures a markdown report links (``--png``) beside it, then the text."""
    from .report import figures, render

    pngs = figures(doc, fmt, output, plots=plots, png=png)
    if png and not pngs:
        click.echo("tracelens: --png: no plot written: the trace has no GPU timeline", err=True)
    options: dict[str, Any] = {}
    if fmt == "terminal":  # only the terminal report has a width (and imports rich): not for JSON or markdown
        from .report.terminal import terminal_width

        options["width"] = terminal_width(sys.stdout if output in (None, "-") else None)
    text = render(doc, fmt, plots=plots, figures=pngs, full_names=full_names, **options)
    for figure in pngs:
        with writing(figure.path):
            figure.path.write_bytes(figure.data)
    _write_output(text, output)


@contextlib.contextmanager
def _saved_documents_checked(paths: Sequence[str]) -> Iterator[None]:
    """Rendering or comparing a document saved with ``analyze --format json`` and edited since is bad input: one
    line naming the file, exit 2, not an internal error. ``load_document`` refuses a document of this schema
    version whose keys hold values of another type than declared (the key's path named) before anything renders
    it; what reaches here is what that check lets through: a key missing that a renderer needs (a document saved
    by an earlier tracelens of this version may lack keys added since, so a missing key is not refused there), a
    cause's, finding's or problem's ``evidence`` (``dict[str, Any]``: its keys and types depend on the cause)
    edited to another type, and a document of an older schema version (read unchecked: the types are this
    version's). Where no input is a saved document the error stays what it is (a trace's own analysis renders
    whatever the trace: an error there is a bug)."""
    from .document.saved import DAMAGED_DOCUMENT_ERRORS

    try:
        yield
    except DAMAGED_DOCUMENT_ERRORS as err:
        from .document import looks_like_document

        saved = [p for p in paths if looks_like_document(p)]
        if not saved:
            raise
        from .errors import InputError

        raise InputError(
            f"a saved analysis document tracelens cannot render: damaged or edited ({type(err).__name__}: {err})",
            path=" or ".join(saved),
        ) from None


def load_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Options shared by every command that reads a trace."""
    func = click.option(
        "--run",
        "run_name",
        default=None,
        metavar="NAME",
        help="TensorBoard logdir: which profile run to read (default: the newest).",
    )(func)
    return func


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="tracelens")
def cli() -> None:
    """Why is my GPU utilization low? Reads Nsight Systems (.sqlite/.nsys-rep), PyTorch profiler
    (.json/.json.gz) and TensorFlow profiler (logdir/.xplane.pb) traces and says where the GPU time went."""


@cli.command()
@click.argument("paths", nargs=-1, required=True, metavar="TRACE...")
@click.option(
    "--format",
    "-f",
    "fmt",
    type=click.Choice(FORMATS),
    default=None,
    help="Output format (default: terminal, or from the -o file's extension).",
)
@click.option("--output", "-o", default=None, metavar="FILE", help="Write to FILE instead of stdout.")
@click.option("--no-plots", is_flag=True, help="Markdown: no charts (no inline mermaid charts, no PNG).")
@click.option(
    "--png",
    is_flag=True,
    help="Markdown to a file: also write the utilization plot as a PNG beside it (and, for several "
    "ranks, the per-rank plot).",
)
@click.option(
    "--full-names",
    is_flag=True,
    help="Terminal: show kernel, op and range names whole (wrapped) instead of shortened.",
)
@click.option(
    "--workers",
    type=int,
    default=None,
    metavar="N",
    help="Several traces: parallel worker processes (default: CPU count).",
)
@click.option(
    "--engine",
    type=click.Choice(["local", "dask"]),
    default="local",
    help="Several traces: run per-trace work in local processes or on a Dask cluster.",
)
@click.option(
    "--cache",
    "cache_dir",
    default=None,
    metavar="DIR",
    help="Several traces: Parquet cache and run manifest (default: $TRACELENS_CACHE_DIR, else "
    "$XDG_CACHE_HOME/tracelens or ~/.cache/tracelens, under runs/<hash>).",
)
@load_options
def analyze(
    paths: Sequence[str],
    fmt: str | None,
    output: str | None,
    no_plots: bool,
    png: bool,
    workers: int | None,
    engine: str,
    cache_dir: str | None,
    run_name: str | None,
    full_names: bool,
) -> None:
    """Analyze one trace (or all ranks of a run) and print where the GPU time went."""
    from .report import format_for_path

    several = (
        len(paths) > 1
        or _is_run_directory(paths[0])
        or (not os.path.exists(paths[0]) and glob.has_magic(paths[0]))
    )
    check_files(output, paths, run=several)
    _refuse_run_option(paths, run_name)
    fmt = fmt or format_for_path(output)
    refuse_png(png, fmt, output, plots=not no_plots)
    doc: Document  # a run's document is a Document with the run's keys
    if several:
        from .run import analyze_run

        doc, failures = analyze_run(list(paths), workers=workers, engine=engine, cache_dir=cache_dir)
    else:
        doc, failures = _analyze_one(paths[0], run_name=run_name)
    with _saved_documents_checked(paths):
        _write_report(doc, fmt, output, plots=not no_plots, png=png, full_names=full_names)
    _raise_partial_failure(doc, failures)


def _raise_partial_failure(doc: Document | dict[str, Any], failures: list[str], side: str = "") -> None:
    """After the output is written: some ranks of a run failed, or some host files of one trace (an xplane run,
    its one line from :func:`_unread_hosts`) could not be read (one line, however many; ``side``: its prefix)."""
    if message := _partial_message(doc, failures):
        from .errors import PartialFailure

        raise PartialFailure(side + message)


def _partial_message(doc: Document | dict[str, Any], failures: list[str]) -> str | None:
    if not failures or "ranks" not in doc:
        return failures[0] if failures else None
    shown = "; ".join(" ".join(f.split()) for f in failures[:5])
    shown += f"; and {len(failures) - 5} more" if len(failures) > 5 else ""
    n, ranks = len(failures), cast("RunDocument", doc).get("ranks", [])  # failures come only from a run
    return f"{n} of {n + len(ranks)} traces failed (the others were analyzed): {shown}"


def _document(path: str, *, run_name: str | None = None) -> tuple[Document | dict[str, Any], list[str]]:
    """What ``report`` and ``diff`` read: a run directory (one trace per rank, as ``analyze DIR``), a trace,
    or a saved document; with the failures of a run's ranks."""
    if _is_run_directory(path):
        from .run import analyze_run

        return analyze_run([path])
    return _analyze_one(path, run_name=run_name)


# Output formats by file extension, for the commands whose -o picks the format.
SUFFIX_FORMATS = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".json": "json",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".csv": "csv",
}


def _format_for_output(output: str | None, default: str, allowed: Sequence[str], command: str) -> str:
    """The format ``output``'s extension names (``default`` without one), or a refusal naming the choices."""
    if output is None or output == "-":
        return default
    suffix = Path(output).suffix.lower()
    fmt = SUFFIX_FORMATS.get(suffix, default if not suffix else None)
    if fmt is not None and fmt in allowed:
        return fmt
    from .errors import UsageError

    names = " or ".join(f"{f} ({', '.join(x for x, y in SUFFIX_FORMATS.items() if y == f)})" for f in allowed)
    raise UsageError(f"{output}: {command} writes {names}, not {suffix}: rename the file or pass --format")


def _threshold(value: str | None) -> float | None:
    """--fail-on-regression's PCT (:func:`.diff.parse_threshold`: a bad one is one line, not click's usage block)."""
    from .diff import parse_threshold

    return None if value is None else parse_threshold(value)


def _refuse_run_option(paths: Sequence[str], run_name: str | None) -> None:
    """--run picks a profile run in a TensorBoard logdir: with a trace file or a directory of ranks' traces it would
    be ignored without a word, so it is a usage error there."""
    if run_name is None:
        return
    for path in paths:
        if os.path.isfile(path) or _is_run_directory(path):
            from .errors import UsageError

            what = "a trace file" if os.path.isfile(path) else "a directory of traces (one per rank)"
            raise UsageError(
                f"--run {run_name} picks a profile run in a TensorBoard logdir; this is {what}", path=path
            )


def _is_run_directory(path: str) -> bool:
    """A directory holding several traces (one per rank) rather than one TF logdir."""
    if not os.path.isdir(path):  # a file: no need to import tracelens.run (and pandas with it)
        return False
    try:
        from .run import is_run_directory
    except ImportError:
        return False
    return is_run_directory(path)


def _analyze_one(path: str, *, run_name: str | None = None) -> tuple[Document, list[str]]:
    """The analysis document of a trace, or the one a ``--format json`` file saved (detected by content); with
    the host files of the trace that could not be read (an xplane run's, one line; else none)."""
    from .preload import frozen_imports

    # The imports before the read (numpy, pyarrow, tracelens, the trace's reader) and after it (the sections) each
    # done without the collections their objects set off, and the collections while the read and the sections run
    # kept off those objects (tracelens.preload)
    with frozen_imports() as import_ahead:
        import_ahead(["tracelens.document"])
        from .document import load_document, looks_like_document

        if looks_like_document(path):
            return load_document(path), []
        import_ahead(["tracelens.ingest", "tracelens.analyses", "tracelens.memory"])
        from . import load
        from .analyses import SECTIONS
        from .analyses import analyze as run_analyses
        from .memory import reusing_array_pages, small_pages

        options = {"run": run_name} if run_name else {}
        # not pandas: a section imports it only where it needs a frame (none on a Kineto trace)
        sections = [f"{run_analyses.__module__}.{key}" for key in SECTIONS]
        # the load's and the analyses' buffers, and the reader's and the sections' imports' heap (memory.small_pages);
        # the big arrays the read freed serve the sections' arrays (memory.reusing_array_pages: one scope across
        # both) where analyze keeps them (analyses.keeps_read_pages; elsewhere it hands them back first)
        with small_pages(), reusing_array_pages():
            import_ahead(_reader_module(path))
            trace = load(path, **options)
            failures = _unread_hosts(trace.metadata.extra)
            import_ahead(sections)
            # the trace is this call's alone: its event columns go as soon as no section still to run reads them
            return run_analyses(trace, release_columns=True), failures


def _unread_hosts(extra: dict[str, Any]) -> list[str]:
    """The xplane reader's host files left out of a run (``unread_host_files``) as one line, or none."""
    unread = extra.get("unread_host_files") or []
    if not unread:
        return []
    shown = "; ".join(f"{Path(u['file']).name}: {u['error']}" for u in unread[:5])
    more = f"; and {len(unread) - 5} more" if len(unread) > 5 else ""
    return [
        f"{len(unread)} of {extra.get('host_files', len(unread))} host files of the run could not be read "
        f"(the other hosts were analyzed): {shown}{more}"
    ]


def _reader_module(path: str) -> list[str]:
    """The module that reads ``path`` (none where ``path`` is not a file or its format is unknown: the read says
    why, or finds the format of a directory itself)."""
    if not os.path.isfile(path):
        return []
    from .ingest import READERS, detect_format

    try:
        return [f"tracelens.ingest.{READERS[detect_format(path)]}"]
    except TracelensError:  # raised again by the read, where it was before
        return []


@cli.command()
@click.argument("path", metavar="TRACE")
@click.option(
    "--format",
    "-f",
    "fmt",
    type=click.Choice(["markdown", "json"]),
    default=None,
    help="Output format (default: markdown, or from the -o file's extension: .md, .json).",
)
@click.option(
    "--output",
    "-o",
    default=None,
    metavar="FILE",
    help="File to write (default: stdout); a --png plot goes beside a markdown report.",
)
@click.option("--no-plots", is_flag=True, help="No charts (no inline mermaid charts, no PNG).")
@click.option(
    "--png", is_flag=True, help="With -o FILE: also write the utilization plot as a PNG beside the report."
)
@load_options
def report(
    path: str, fmt: str | None, output: str | None, no_plots: bool, png: bool, run_name: str | None
) -> None:
    """Write a GitHub-flavoured markdown report for pull-request review (TRACE may also be a run directory,
    one trace per rank, or a document saved with analyze --format json)."""
    check_files(output, [path])
    _refuse_run_option([path], run_name)
    fmt = fmt or _format_for_output(output, "markdown", ("markdown", "json"), "report")
    refuse_png(png, fmt, output, plots=not no_plots)
    doc, failures = _document(path, run_name=run_name)
    with _saved_documents_checked([path]):
        _write_report(cast("Document", doc), fmt, output, plots=not no_plots, png=png)
    _raise_partial_failure(doc, failures)


@cli.command()
@click.argument("path", metavar="TRACE")
@click.option("--output", "-o", required=True, metavar="FILE", help="File to write: .parquet or .csv.")
@click.option(
    "--format",
    "-f",
    "fmt",
    type=click.Choice(["parquet", "csv"]),
    default=None,
    help="Output format (default: from the -o file's extension, .parquet or .csv).",
)
@load_options
def convert(path: str, output: str, fmt: str | None, run_name: str | None) -> None:
    """Write the normalized timeline table as Parquet or CSV (columns in docs/schema.md; the device table and
    trace metadata travel only in Parquet)."""
    from . import load

    check_files(output, [path])
    _refuse_run_option([path], run_name)
    fmt = fmt or _format_for_output(output, "parquet", ("parquet", "csv"), "convert")
    refuse_run_directory(path, "convert", "writes one trace's table")
    refuse_document(path, "convert")
    options = {"run": run_name} if run_name else {}
    trace = load(path, **options)
    if fmt == "csv":
        import pyarrow.csv

        with writing(output):
            pyarrow.csv.write_csv(trace.events, output)
        click.echo(
            f"wrote {shown(output)} ({trace.num_events:,} events; CSV holds the event table only: the device "
            "table and metadata need Parquet)",
            err=True,
        )
    else:
        with writing(output):
            trace.save(output)
        click.echo(f"wrote {shown(output)} ({trace.num_events:,} events)", err=True)
    _raise_partial_failure({}, _unread_hosts(trace.metadata.extra))


@cli.command()
@click.argument("base", metavar="BASE")
@click.argument("head", metavar="HEAD")
@click.option(
    "--format",
    "-f",
    "fmt",
    type=click.Choice(FORMATS),
    default=None,
    help="Output format (default: from the -o file's extension, .md markdown, .json JSON; terminal "
    "text otherwise and on stdout).",
)
@click.option(
    "--full-names", is_flag=True, help="Terminal: show kernel names whole (wrapped) instead of shortened."
)
@click.option("--output", "-o", default=None, metavar="FILE", help="Write to FILE instead of stdout.")
@click.option(
    "--fail-on-regression",
    type=str,
    default=None,
    callback=lambda _ctx, _param, value: _threshold(value),
    metavar="PCT",
    help="Exit 1 when HEAD's GPU utilization is lower by more than PCT points (unless its mean step "
    "time improved) or its mean step time is longer by more than PCT percent, or when either trace "
    "cannot answer (its GPU side is missing: diagnosis incomplete_trace) or only one has steps. "
    "PCT is a number >= 0, with or without a trailing % (5 and 5% are the same).",
)
@click.option(
    "--allow-inconclusive",
    is_flag=True,
    help="With --fail-on-regression: do not fail because a trace cannot answer or only one has steps; "
    "gate on the figures both traces have.",
)
def diff(
    base: str,
    head: str,
    fmt: str | None,
    output: str | None,
    fail_on_regression: float | None,
    allow_inconclusive: bool,
    full_names: bool,
) -> None:
    """Compare two traces (any formats, run directories, or documents saved with analyze --format json):
    metrics side by side, deltas and a verdict."""
    from .diff import cannot_answer, compare, regression_reasons
    from .report import format_for_path
    from .report.diff_renderer import render_diff
    from .report.terminal import terminal_width

    check_files(output, [base, head])
    fmt = fmt or format_for_path(output)
    (base_doc, base_failures), (head_doc, head_failures) = _document(base), _document(head)
    with _saved_documents_checked([base, head]):
        result = compare(cast("Document", base_doc), cast("Document", head_doc))
        width = terminal_width(sys.stdout if output in (None, "-") else None)
        text = render_diff(result, fmt, width=width, full_names=full_names)
    _write_output(text, output)
    if fail_on_regression is not None:
        from .errors import RegressionError

        blocked = result.get("inconclusive_reason") or cannot_answer(result)
        if blocked and not allow_inconclusive:
            raise RegressionError(f"inconclusive: {blocked} (--allow-inconclusive to pass)")
        reasons = regression_reasons(result, fail_on_regression)
        if reasons:
            raise RegressionError("regression: " + "; ".join(reasons))
    base_said = _partial_message(base_doc, base_failures)  # one line for both sides
    _raise_partial_failure(head_doc, head_failures, f"BASE: {base_said}; HEAD: " if base_said else "HEAD: ")
    _raise_partial_failure(base_doc, base_failures, "BASE: ")


@cli.command()
@click.argument("path", metavar="TRACE")
@click.option(
    "--output",
    "-o",
    required=True,
    metavar="FILE.json",
    help="Chrome trace-event file to write (gzip when FILE ends in .gz).",
)
@load_options
def annotate(path: str, output: str, run_name: str | None) -> None:
    """Write TRACE as a Chrome trace-event file (Perfetto, chrome://tracing) with added tracks: steps, the
    critical path, each remedy's what-if gain, and the largest GPU idle gaps named by cause. A run directory
    (one trace per rank) becomes one timeline, a process per rank."""
    from . import load
    from .analyses import analyze as run_analyses
    from .replay.annotate import write_annotated, write_annotated_run
    from .run import is_run_directory, read_ranks, resolve_ranks

    check_files(output, [path])
    _refuse_run_option([path], run_name)
    refuse_document(path, "annotate")
    options = {"run": run_name} if run_name else {}
    if run := is_run_directory(path):
        files, traces, failures = read_ranks(path, **options)  # (a trace that fails: left out, exit 1)
        ranks, warnings = resolve_ranks([t.metadata.rank for t in traces], files)
        for warning in warnings:
            click.echo(f"tracelens: {warning}", err=True)
        annotated = [
            (r, f.name, t, dict(run_analyses(t))) for r, f, t in zip(ranks, files, traces, strict=True)
        ]
        with writing(output):
            count = write_annotated_run(annotated, output)
    else:
        trace = load(path, **options)
        failures = _unread_hosts(trace.metadata.extra)
        doc = dict(run_analyses(trace))
        with writing(output):
            count = write_annotated(trace, doc, output)
    click.echo(f"wrote {shown(output)} ({count:,} events)", err=True)
    _raise_partial_failure({"ranks": traces} if run else {}, failures)


@cli.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@click.option("--out", "out_dir", default="tracelens-record", metavar="DIR", help="Where the report goes.")
def record(command: Sequence[str], out_dir: str) -> None:
    """Profile COMMAND with Nsight Systems, export it and analyze it: tracelens record -- python train.py"""
    from .record import record_and_analyze

    click.echo(record_and_analyze(list(command), Path(out_dir)), nl=False)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: run the CLI and turn every error into one line on stderr and an exit code."""
    # tracelens does no BLAS work: one OpenBLAS thread (numpy is not imported yet) spares the ~50 ms of CPU
    # its idle worker threads spin through after numpy's import.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        cli.main(args=list(argv) if argv is not None else None, prog_name="tracelens", standalone_mode=False)
    except TracelensError as err:
        click.echo(shown(f"tracelens: {err}"), err=True)
        return err.exit_code
    except click.exceptions.Abort:
        click.echo("tracelens: aborted", err=True)
        return 130
    except click.ClickException as err:
        err.show()
        return 2 if err.exit_code == 1 else err.exit_code  # usage errors are 2, like bad input
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        return 130
    except Exception as err:
        if isinstance(err, OSError) and err.filename is not None:
            # A file the command needs and the OS refuses (a run's rank without read permission): one line naming it.
            click.echo(f"tracelens: {shown(os.fsdecode(err.filename))}: {err.strerror or err}", err=True)
            return 2
        if os.environ.get("TRACELENS_DEBUG"):  # a bug: still one line, the traceback only on request
            raise
        click.echo(
            shown(
                f"tracelens: internal error: {type(err).__name__}: {err} (set TRACELENS_DEBUG=1 for the traceback)"
            ),
            err=True,
        )
        return 3
    return 0


def entry() -> int:
    """The program's entry (``python -m tracelens``): :func:`main`, whose exit status it returns for the process to
    exit with, then what is still alive frozen out of the garbage collector's reach. The interpreter's exit runs
    full collections over every object left (the modules of numpy, pyarrow, pandas and tracelens: ~60 ms of an
    analyze of the 406 MB Kineto trace); nothing left then needs the collector to be freed or finalized (tracelens's
    files are closed and its output written; the interpreter flushes stdout whatever the collector does).
    Where nothing else runs, the process then ends without the interpreter's teardown (:func:`.process.exit_at_once`).
    Before anything runs: warnings shown as one line, and one OpenBLAS thread (process.py)."""
    warnings.showwarning = process.show_warning
    process.one_blas_thread()  # (before numpy is imported)
    status = main()
    gc.freeze()
    process.exit_at_once(status)
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(entry())
