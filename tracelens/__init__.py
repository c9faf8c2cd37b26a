"""tracelens: why is my GPU utilization low?

``tracelens.load(path)`` reads an Nsight Systems export, a PyTorch profiler trace or a TensorFlow profile
into one :class:`Trace`; ``tracelens.analyze(trace)`` says where the GPU time went.
"""

from __future__ import annotations

__version__ = "0.1.0"

from .analyses import analyze
from .errors import InputError, TracelensError
from .ingest import load
from .trace import Trace, TraceMetadata

__all__ = ["InputError", "Trace", "TraceMetadata", "TracelensError", "__version__", "analyze", "load"]
