"""Imports done ahead, and the objects alive before the work that follows kept out of the garbage collector's way
while it runs.

Importing numpy, pyarrow and tracelens before a read, and pandas and the section modules after it, creates some
hundred thousand objects (functions, classes, dicts) that live as long as the process. Every 700 new objects set
off a collection of the young ones, which finds nothing to free, and the survivors (with the trace's own objects)
are walked again by each older-generation collection while the sections run. On the 406 MB Kineto trace
``tracelens analyze`` spent 0.02-0.06 s of CPU in ~120 collections after the load and 8-15 ms in ~60 before it;
with the imports done here first, the collector paused, and what was alive then frozen (``gc.freeze``) while the
read and the sections run, ~1 ms.

The imports are the same ones, in the same thread, a moment earlier: a module that fails to import here is left
to the importer that needs it, which raises the error where it did before.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
from collections.abc import Callable, Iterable, Iterator


@contextlib.contextmanager
def frozen_imports() -> Iterator[Callable[[Iterable[str]], None]]:
    """A block in which ``import_ahead(modules)`` (the value it gives) imports ``modules`` in order with the
    garbage collector paused (stopping at the first that fails, without raising), then puts what is alive out of
    the collector's reach; on leaving the block everything frozen so is handed back (``gc.unfreeze``), so that
    later collections free what of it became garbage. Several calls in one block freeze what each imported.
    Nothing is frozen where objects already are on entering (someone else's freeze, which unfreezing would
    undo)."""
    owner = not gc.get_freeze_count()
    frozen = False

    def import_ahead(modules: Iterable[str]) -> None:
        nonlocal frozen
        enabled = gc.isenabled()
        gc.disable()
        try:
            try:
                for name in modules:
                    importlib.import_module(name)
            except Exception:  # raised again by the code that needs the module, where the error belongs
                pass
            if owner:
                gc.freeze()  # before the collector is enabled again: the imports' objects are never walked
                frozen = True
        finally:
            if enabled:
                gc.enable()

    try:
        yield import_ahead
    finally:
        if frozen:
            gc.unfreeze()


@contextlib.contextmanager
def imported_ahead(modules: Iterable[str]) -> Iterator[None]:
    """Import ``modules`` in order with the garbage collector paused (stopping at the first that fails, without
    raising); within the block, the objects alive by then are out of the collector's reach, and on leaving it
    they are handed back (``gc.unfreeze``), so that later collections free what of them became garbage. Nothing
    is frozen where objects already are (someone else's freeze, which unfreezing would undo)."""
    with frozen_imports() as import_ahead:
        import_ahead(modules)
        yield
