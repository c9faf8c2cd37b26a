"""The ``devices`` section's row type, :class:`DeviceUtilization`: the one class of the document's types that code
builds at run time (``analyses/devices.py``). It has its own module so that ``tracelens.document`` can be imported
without :mod:`.types` (its ~100 TypedDicts cost ~6 ms of an ``analyze`` process, which only needs them for typing);
``tracelens.document.types`` and ``tracelens.document`` still export it.
"""

from dataclasses import dataclass


@dataclass
class DeviceUtilization:
    """One GPU's row of the ``devices`` section, as ``analyses/devices.py`` computes it (defined in the document
    layer, so that the document layer imports nothing from ``analyses/``)."""

    id: int
    name: str | None
    busy_ns: int
    span_ns: int
    utilization: float
    first_start_ns: int
    last_end_ns: int
    kernel_count: int
    kernel_ns: int
    memcpy_count: int
    memcpy_ns: int
    memset_count: int
    memset_ns: int
    kernel_union_ns: int
    copies_only_ns: int
    memsets_only_ns: int
