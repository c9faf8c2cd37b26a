"""TensorFlow / JAX profiler reader: XSpace protobuf (``<host>.xplane.pb``) and TensorBoard logdirs.

Format notes, what is read from which plane/line/stat, time rounding and quirks: ``docs/formats/xplane.md``.
Decoding uses the plain ``protobuf`` package with a descriptor built in code (:mod:`.schema`); events are
walked in bulk with numpy (:mod:`.wire`), never one Python object per event.

One job per module:

- :mod:`.reader`: :func:`read` (file, run directory or logdir) and :func:`read_files` (one run's files);
- :mod:`.space`: one file's bytes and parsed XSpace, and which planes are read (:class:`.space.Host`);
- :mod:`.lines`: which lines of those planes are read, and what each is; :mod:`.threads`: the API-callback lines
  (``Host Threads/<tid>``) read as the thread whose events nest their calls;
- :mod:`.events`: where the lines' events lie in the file's bytes, and their fields decoded for all events
  at once; :mod:`.names` (event and stat metadata lookups) and :mod:`.stats` (the stats read) serve it;
- :mod:`.build`: the event table in named steps (kinds, rows and steps, timeline columns, GPU details,
  metadata), with :mod:`.steps`, :mod:`.details`, :mod:`.devices` and :mod:`.columns`;
- :mod:`.schema` (the XSpace descriptor) and :mod:`.wire` (vectorized protobuf wire decoding).
"""

from __future__ import annotations

from .reader import read, read_files
from .space import parse_xspace, plane_stats

__all__ = ["parse_xspace", "plane_stats", "read", "read_files"]
