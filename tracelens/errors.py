"""One error family. Every error the CLI can meet carries its exit code and a one-line message.

The CLI catches :class:`TracelensError` in one place (``cli.main``) and prints ``tracelens: <message>``
on stderr: never a traceback for bad input.
"""

from __future__ import annotations

from pathlib import Path


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

    def __init__(self, message: str, *, path: str | Path | None = None) -> None:
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
