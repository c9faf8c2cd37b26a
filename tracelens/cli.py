"""The ``tracelens`` command line: a thin layer over the library.

Data flows one way: file -> Trace (``tracelens.load``) -> results (``analyses.analyze``) -> renderer.
Errors are caught in one place, :func:`main`, which prints one line and returns the error's exit code.
"""

from __future__ import annotations

import glob
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from . import __version__
from .errors import TracelensError

if TYPE_CHECKING:
    from .document import Document

FORMATS = ("terminal", "json", "markdown")


def _write_output(text: str, output: str | None) -> None:
    if output is None or output == "-":
        click.echo(text, nl=False)
    else:
        Path(output).write_text(text, encoding="utf-8")
        click.echo(f"wrote {output}", err=True)


def _write_report(doc: Document | dict[str, Any], fmt: str, output: str | None, *, plots: bool, png: bool) -> None:
    """Render ``doc``; write the PNG figures a markdown report links (``--png``) beside it, then the text."""
    from .report import figures, render

    pngs = figures(doc, fmt, output, plots=plots, png=png)
    text = render(doc, fmt, plots=plots, figures=pngs)
    for figure in pngs:
        figure.path.write_bytes(figure.data)
    _write_output(text, output)


def load_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Options shared by every command that reads a trace."""
    func = click.option("--run", "run_name", default=None, metavar="NAME",
                        help="TensorBoard logdir: which profile run to read (default: the newest).")(func)
    return func


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="tracelens")
def cli() -> None:
    """Why is my GPU utilization low? Reads Nsight Systems (.sqlite/.nsys-rep), PyTorch profiler
    (.json/.json.gz) and TensorFlow profiler (logdir/.xplane.pb) traces and says where the GPU time went."""


@cli.command()
@click.argument("paths", nargs=-1, required=True, metavar="TRACE...")
@click.option("--format", "-f", "fmt", type=click.Choice(FORMATS), default=None,
              help="Output format (default: terminal, or from the -o file's extension).")
@click.option("--output", "-o", default=None, metavar="FILE", help="Write to FILE instead of stdout.")
@click.option("--no-plots", is_flag=True, help="Markdown: no charts (no inline mermaid charts, no PNG).")
@click.option("--png", is_flag=True,
              help="Markdown to a file: also write the utilization plot as a PNG beside it (and, for several "
                   "ranks, the per-rank plot).")
@click.option("--workers", type=int, default=None, metavar="N",
              help="Several traces: parallel worker processes (default: CPU count).")
@click.option("--engine", type=click.Choice(["local", "dask"]), default="local",
              help="Several traces: run per-trace work in local processes or on a Dask cluster.")
@click.option("--cache", "cache_dir", default=None, metavar="DIR",
              help="Several traces: Parquet cache and run manifest (default: <traces' dir>/.tracelens-cache).")
@load_options
def analyze(paths: Sequence[str], fmt: str | None, output: str | None, no_plots: bool, png: bool,
            workers: int | None, engine: str, cache_dir: str | None, run_name: str | None) -> None:
    """Analyze one trace (or all ranks of a run) and print where the GPU time went."""
    from .report import format_for_path

    fmt = fmt or format_for_path(output)
    if len(paths) > 1 or _is_run_directory(paths[0]) or (not os.path.exists(paths[0]) and glob.has_magic(paths[0])):
        from .run import analyze_run

        doc, failures = analyze_run(list(paths), workers=workers, engine=engine, cache_dir=cache_dir)
    else:
        doc, failures = _analyze_one(paths[0], run_name=run_name), []
    _write_report(doc, fmt, output, plots=not no_plots, png=png)
    if failures:
        from .errors import PartialFailure

        shown = "; ".join(" ".join(f.split()) for f in failures[:5])  # one line, however many failed
        more = f"; and {len(failures) - 5} more" if len(failures) > 5 else ""
        raise PartialFailure(f"{len(failures)} of {len(failures) + len(doc.get('ranks', []))} traces failed "
                             f"(the others were analyzed): {shown}{more}")


def _is_run_directory(path: str) -> bool:
    """A directory holding several traces (one per rank) rather than one TF logdir."""
    try:
        from .run import is_run_directory
    except ImportError:
        return False
    return is_run_directory(path)


def _analyze_one(path: str, *, run_name: str | None = None) -> Document:
    """The analysis document of a trace, or the one a ``--format json`` file saved (detected by content)."""
    from .document import load_document, looks_like_document

    if looks_like_document(path):
        return load_document(path)
    from . import load
    from .analyses import analyze as run_analyses

    options = {"run": run_name} if run_name else {}
    return run_analyses(load(path, **options))


@cli.command()
@click.argument("path", metavar="TRACE")
@click.option("--output", "-o", default=None, metavar="FILE",
              help="Markdown file to write (default: stdout); a --png plot goes beside it.")
@click.option("--no-plots", is_flag=True, help="No charts (no inline mermaid charts, no PNG).")
@click.option("--png", is_flag=True,
              help="With -o FILE: also write the utilization plot as a PNG beside the report.")
@load_options
def report(path: str, output: str | None, no_plots: bool, png: bool, run_name: str | None) -> None:
    """Write a GitHub-flavoured markdown report for pull-request review (TRACE may also be a document saved
    with analyze --format json)."""
    doc = _analyze_one(path, run_name=run_name)
    _write_report(doc, "markdown", output, plots=not no_plots, png=png)


@cli.command()
@click.argument("path", metavar="TRACE")
@click.option("--output", "-o", required=True, metavar="FILE.parquet", help="Parquet file to write.")
@load_options
def convert(path: str, output: str, run_name: str | None) -> None:
    """Write the normalized timeline table as Parquet (columns in docs/schema.md)."""
    from . import load

    options = {"run": run_name} if run_name else {}
    trace = load(path, **options)
    trace.save(output)
    click.echo(f"wrote {output} ({trace.num_events:,} events)", err=True)


@cli.command()
@click.argument("base", metavar="BASE")
@click.argument("head", metavar="HEAD")
@click.option("--format", "-f", "fmt", type=click.Choice(["markdown", "json"]), default=None,
              help="Output format (default: markdown, or from the -o file's extension).")
@click.option("--output", "-o", default=None, metavar="FILE", help="Write to FILE instead of stdout.")
@click.option("--fail-on-regression", type=float, default=None, metavar="PCT",
              help="Exit 1 when HEAD's GPU utilization is lower by more than PCT points or its mean step "
                   "time is longer by more than PCT percent.")
def diff(base: str, head: str, fmt: str | None, output: str | None, fail_on_regression: float | None) -> None:
    """Compare two traces (any formats, or documents saved with analyze --format json): metrics side by side,
    deltas and a verdict."""
    from .diff import compare, regression_reasons
    from .report import format_for_path
    from .report.diff_renderer import render_diff

    fmt = fmt or format_for_path(output, default="markdown")
    result = compare(_analyze_one(base), _analyze_one(head))
    _write_output(render_diff(result, fmt), output)
    if fail_on_regression is not None:
        reasons = regression_reasons(result, fail_on_regression)
        if reasons:
            from .errors import RegressionError

            raise RegressionError("regression: " + "; ".join(reasons))


@cli.command()
@click.argument("path", metavar="TRACE")
@click.option("--output", "-o", required=True, metavar="FILE.json",
              help="Chrome trace-event file to write (gzip when FILE ends in .gz).")
@load_options
def annotate(path: str, output: str, run_name: str | None) -> None:
    """Write TRACE as a Chrome trace-event file (Perfetto, chrome://tracing) with added tracks: steps, the
    critical path, each remedy's what-if gain, and the largest GPU idle gaps named by cause."""
    from . import load
    from .analyses import analyze as run_analyses
    from .replay.annotate import write_annotated

    options = {"run": run_name} if run_name else {}
    trace = load(path, **options)
    count = write_annotated(trace, dict(run_analyses(trace)), output)
    click.echo(f"wrote {output} ({count:,} events)", err=True)


@cli.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@click.option("--out", "out_dir", default="tracelens-record", metavar="DIR", help="Where the report goes.")
def record(command: Sequence[str], out_dir: str) -> None:
    """Profile COMMAND with Nsight Systems, export it and analyze it: tracelens record -- python train.py"""
    from .record import record_and_analyze

    click.echo(record_and_analyze(list(command), Path(out_dir)), nl=False)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: run the CLI and turn every error into one line on stderr and an exit code."""
    try:
        cli.main(args=list(argv) if argv is not None else None, prog_name="tracelens", standalone_mode=False)
    except TracelensError as err:
        click.echo(f"tracelens: {err}", err=True)
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
    except Exception as err:  # a bug: still one line, the traceback only on request
        if os.environ.get("TRACELENS_DEBUG"):
            raise
        click.echo(f"tracelens: internal error: {type(err).__name__}: {err} "
                   "(set TRACELENS_DEBUG=1 for the traceback)", err=True)
        return 3
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
