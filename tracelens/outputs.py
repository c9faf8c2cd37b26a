"""The CLI's output files: an output that cannot be written, or that is one of the command's inputs, is the
user's to fix (one line naming the file, exit 2), not an internal error, and never replaces a trace."""

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
        if same:
            from .errors import OutputError

            named = "" if path == output else f" ({path})"
            raise OutputError(
                f"the output is a file this command reads{named}: writing it would replace it; name another "
                "output file",
                path=output,
            )
