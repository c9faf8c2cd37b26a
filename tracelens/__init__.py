"""tracelens: why is my GPU utilization low?

``tracelens.load(path)`` reads an Nsight Systems export, a PyTorch profiler trace or a TensorFlow profile
into one :class:`Trace`; ``tracelens.analyze(trace)`` says where the GPU time went, as a
:class:`~tracelens.document.Document`; ``tracelens.load_document(path)`` reads one saved with
``tracelens analyze --format json`` back.
"""

from __future__ import annotations

__version__ = "0.1.0"

from .analyses import analyze
from .document import Document, load_document
from .errors import InputError, TracelensError
from .ingest import load
from .trace import Trace, TraceMetadata

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
