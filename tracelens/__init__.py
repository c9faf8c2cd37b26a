"""tracelens: why is my GPU utilization low?

``tracelens.load(path)`` reads an Nsight Systems export, a PyTorch profiler trace or a TensorFlow profile
into one :class:`Trace`; ``tracelens.analyze(trace)`` says where the GPU time went, as a
:class:`~tracelens.document.Document`; ``tracelens.load_document(path)`` reads one saved with
``tracelens analyze --format json`` back.
"""

from __future__ import annotations

__version__ = "0.1.0"

import importlib
from typing import TYPE_CHECKING, Any

from .errors import InputError, TracelensError

if TYPE_CHECKING:
    from .analyses import analyze
    from .document import Document, load_document
    from .ingest import load
    from .trace import Trace, TraceMetadata

# Imported when first used: `import tracelens` and `tracelens.load` leave the analyses and the document
# model unimported (0.05-0.15 s of a process that only reads a trace), and `import tracelens` alone (the
# CLI's --help and --version) leaves numpy and pyarrow unimported too (~0.2 s).
_LAZY = {
    "analyze": ".analyses",
    "Document": ".document",
    "load_document": ".document",
    "load": ".ingest",
    "Trace": ".trace",
    "TraceMetadata": ".trace",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # later lookups find it without coming here
    return value


__all__ = [
    "Document",
    "InputError",
    "Trace",
    "TraceMetadata",
    "TracelensError",
    "__version__",
    "analyze",
    "load",
    "load_document",
]
