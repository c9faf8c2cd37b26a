"""The analysis sections' imports done ahead, and the objects alive before they run kept out of the garbage
collector's way while they do.

Importing pandas and the section modules creates some hundred thousand objects (functions, classes, dicts) that
live as long as the process. Every 700 new objects set off a collection of the young ones, which finds nothing to
free, and the survivors (with the trace's own objects) are walked again by each older-generation collection while
the sections run. On the 406 MB Kineto trace ``tracelens analyze`` spent 0.02-0.06 s of CPU in ~120 collections
after the load; with the imports done here first, the collector paused, and what was alive then frozen
(``gc.freeze``) while the sections run, ~1 ms.

The imports are the same ones, in the same thread, a moment earlier: a module that fails to import here is left
to the importer that needs it, which raises the error where it did before.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
from collections.abc import Iterable, Iterator


@contextlib.contextmanager
def imported_ahead(modules: Iterable[str]) -> Iterator[None]:
    """Import ``modules`` in order with the garbage collector paused (stopping at the first that fails, without
    raising); within the block, the objects alive by then are out of the collector's reach, and on leaving it
    they are handed back (``gc.unfreeze``), so that later collections free what of them became garbage. Nothing
    is frozen where objects already are (someone else's freeze, which unfreezing would undo)."""
    enabled = gc.isenabled()
    gc.disable()
    frozen = False
    try:
        try:
            for name in modules:
                importlib.import_module(name)
        except Exception:  # raised again by the code that needs the module, where the error belongs
            pass
        if not gc.get_freeze_count():
            gc.freeze()  # before the collector is enabled again: the imports' objects are never walked
            frozen = True
    finally:
        if enabled:
            gc.enable()
    try:
        yield
    finally:
        if frozen:
            gc.unfreeze()
