"""The CLI's files: an output that cannot be written, or that is one of the command's inputs, and an input that
is no file a reader can open (a pipe, a device, a file without read permission), are the user's to fix (one line
naming the file, exit 2), not an internal error, never a hang, and never replace a trace."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path


@contextlib.contextmanager
def writing(output: str | Path) -> Iterator[None]:
    """Writing ``output``: an OS error (its folder missing, a folder, no permission, a full disk) is the user's to
    fix, one line naming the file and exit 2, not an internal error."""
    from .errors import OutputError

    try:
        yield
    except OSError as err:  # pyarrow's write errors are OSErrors too, their text in its own words
        import re

        code = err.errno or next((int(n) for n in re.findall(r"\[errno (\d+)\]", str(err))), None)
        reason = os.strerror(code) if code else (err.strerror or str(err))
        raise OutputError(f"cannot write: {reason}", path=output) from None


def refuse_input_as_output(output: str | None, inputs: Sequence[str]) -> None:
    """``-o`` naming a file the command reads (by any name: a link, another relative path) would replace the
    user's trace by the output: refused before anything is read or written."""
    if output is None or output == "-" or not os.path.isfile(output):
        return
    for path in inputs:
        try:
            same = os.path.isfile(path) and os.path.samefile(output, path)
        except OSError:
            same = False
        if same or _trace_under(output, path):
            from .errors import OutputError

            named = "" if path == output else f" ({path})"
            raise OutputError(
                f"the output is a file this command reads{named}: writing it would replace it; name another "
                "output file",
                path=output,
            )


def _trace_under(output: str, directory: str) -> bool:
    """Whether ``output`` (an existing file) is a trace the command reads from the directory ``directory``: a
    rank's file of a run directory, a TF logdir's host file (``analyze RUN -o RUN/rank0.json`` replaced rank 0's
    trace by the analysis): a file at any depth under it named as a trace and not a saved analysis document."""
    from .document import looks_like_document
    from .run.inputs import TRACE_FILE_SUFFIXES

    if not os.path.isdir(directory) or not os.path.basename(output).lower().endswith(TRACE_FILE_SUFFIXES):
        return False
    inside, folder = os.path.realpath(output), os.path.realpath(directory)
    return os.path.commonpath([inside, folder]) == folder and not looks_like_document(output)


def check_files(output: str | None, inputs: Sequence[str], *, run: bool = False) -> None:
    """Before anything is read or written: each input that exists is a directory or a regular file this process
    can read (a missing one, or a glob pattern, is left to the reader, which says so), and ``output`` is none of
    them (:func:`refuse_input_as_output`). ``run``: the inputs are the traces of a run, where one that cannot be
    opened is left out and named by the run (exit 1, the others analyzed), as one that fails to read is."""
    for path in [] if run else inputs:
        readable_input(path)
    refuse_input_as_output(output, inputs)


def readable_input(path: str) -> None:
    """Refuse ``path`` where it is a pipe, device or socket (a named pipe without a writer would block the read,
    and its size reads 0), a file whose open fails (no read permission), a symbolic link loop or a link to a
    missing file (:func:`errors.input_problem`): one line naming it, exit 2. A path that names nothing (or a glob
    pattern) is left to the reader, which says so."""
    from .errors import input_problem

    problem = input_problem(path)
    if problem is not None and os.path.lexists(path):
        raise problem


def refuse_png(png: bool, fmt: str, output: str | None, *, plots: bool) -> None:
    """``--png`` writes the plot beside a markdown report written to a file (``-o FILE.md``); anywhere else, or with
    ``--no-plots``, no PNG could be written: a usage error before anything is read, not an option ignored."""
    from .errors import UsageError

    if not png:
        return
    if not plots:
        raise UsageError("--png: no plot is written with --no-plots; leave out one of the two")
    if fmt != "markdown" or output in (None, "-"):
        raise UsageError(
            "--png writes the plot beside a markdown report written to a file: add -o FILE.md "
            f"(this writes {fmt} to {'stdout' if output in (None, '-') else output})"
        )


def refuse_document(path: str, command: str) -> None:
    """``command`` needs a trace's events: a document saved with ``analyze --format json`` (detected by content)
    is refused as what it is, not read as a broken PyTorch trace ("JSON object without a 'traceEvents' list")."""
    from .document import looks_like_document

    if os.path.isfile(path) and looks_like_document(path):
        from .errors import InputError

        raise InputError(
            f"a tracelens analysis document (analyze --format json), not a trace: {command} needs the trace it was "
            "made from",
            path=path,
        )


def refuse_run_directory(path: str, command: str, does: str) -> None:
    """``command`` reads one trace: a directory of ranks' traces (``analyze DIR``'s run) is refused naming them
    (torch.profiler's ``*.pt.trace.json.gz`` otherwise read as a TensorFlow logdir's ``<host>.trace.json.gz``:
    "trace.json holds no host or GPU events")."""
    if not os.path.isdir(path):
        return
    from .run import expand_paths, is_run_directory

    if is_run_directory(path):
        from .errors import UsageError

        files = [f.name for f in expand_paths([path])]
        named = ", ".join(files[:4]) + (", ..." if len(files) > 4 else "")
        raise UsageError(
            f"directory holds {len(files)} traces, one per rank ({named}): {command} {does}; name the one to "
            f"{command}",
            path=path,
        )
