"""One error family. Every error the CLI can meet carries its exit code and a one-line message.

The CLI catches :class:`TracelensError` in one place (``cli.main``) and prints ``tracelens: <message>``
on stderr: never a traceback for bad input.
"""

from __future__ import annotations

import errno
import os
import stat


def shown(text: str) -> str:
    """``text`` as valid UTF-8: a file name whose bytes are not UTF-8 comes from the OS with lone surrogates
    (Python's surrogateescape), which no UTF-8 output can hold; each such byte is written ``\\xNN`` (as ``ls -b``
    would show it). Other text is returned as it is."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate that no byte made (a JSON "\\ud800" escape): its code point
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


class TracelensError(Exception):
    """Base class: ``str(err)`` is the one line shown to the user; ``exit_code`` what the CLI returns."""

    exit_code = 2

    def __init__(self, message: str, *, path: str | os.PathLike[str] | None = None) -> None:
        self.path = shown(str(path)) if path is not None else None
        self.message = message
        super().__init__(f"{self.path}: {message}" if self.path else message)


class InputError(TracelensError):
    """The input cannot be read: missing, empty, truncated, corrupt, or not a trace at all."""


class UnsupportedFormatError(InputError):
    """The input is readable but is no format tracelens knows."""


class UsageError(TracelensError):
    """The command line asks for something impossible."""


class OutputError(TracelensError):
    """The output file cannot be written (its folder missing, a folder, no permission), or it is one of the
    inputs (writing it would replace the trace read)."""


class ToolMissingError(TracelensError):
    """An external tool (``nsys``) is needed and absent; the message says the manual command."""


class RegressionError(TracelensError):
    """``diff --fail-on-regression`` found a regression."""

    exit_code = 1


class PartialFailure(TracelensError):
    """Some inputs of a multi-trace run failed; the rest were analyzed."""

    exit_code = 1


def not_found(path: str | os.PathLike[str]) -> InputError:
    """The error for ``path`` where it names no file or directory a reader can open: "no such file or directory",
    or what it is instead: a symbolic link that loops (``ln -s a b; ln -s b a``: the OS says ELOOP, and
    ``Path.exists`` False, as for a missing file), a symbolic link to a missing file (naming its target), or a
    path the OS refuses otherwise (a folder on the way without search permission: "cannot read: Permission
    denied")."""
    if str(path) == "-":
        return InputError(
            "reading a trace from standard input is not supported: write it to a file", path=path
        )
    try:
        os.stat(path)
    except OSError as err:
        if err.errno == errno.ELOOP:
            return InputError(
                "a symbolic link loop (too many levels of symbolic links): no file at its end", path=path
            )
        if err.errno not in (errno.ENOENT, errno.ENOTDIR):
            return InputError(f"cannot read: {err.strerror or err}", path=path)
    if os.path.islink(path) and not os.path.exists(path):
        return InputError(f"a symbolic link to a missing file ({shown(os.readlink(path))})", path=path)
    return InputError("no such file or directory", path=path)


# What a path is when it is no regular file or directory (stat's file types).
_FILE_TYPES = (
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def input_problem(path: str | os.PathLike[str]) -> InputError | None:
    """What keeps a reader from reading ``path``, checked without reading it: nothing there (:func:`not_found`), a
    pipe, device or socket (a named pipe without a writer would block the read), a file whose open fails (no read
    permission); None for a directory or a regular file that opens. The CLI refuses a trace with it
    (``outputs.readable_input``); a run of several traces leaves such a trace out, named (``run.analyze_run``)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return not_found(path)
    if stat.S_ISDIR(mode):
        return None
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in _FILE_TYPES if test(mode)), "not a file")
        return InputError(
            f"not a regular file ({kind}): tracelens reads a trace file or directory; write the trace to a file",
            path=path,
        )
    try:
        with open(path, "rb"):
            pass
    except OSError as err:
        return InputError(f"cannot read: {err.strerror or err}", path=path)
    return None
