"""Nsight Systems reader: ``nsys export --type sqlite`` files (and ``.nsys-rep`` through a cached export).

The export is opened read-only (``file:...?mode=ro`` URI) and nothing is ever written to it: no temp
tables, no indexes, no pragmas that write. Event tables are read as Arrow through ADBC's SQLite driver when
it is installed (several tables at once, one connection per thread), else through the standard library.
Columns and tables are looked up by name first, so exports from 2022 (schema 2.x) to 2026 (3.25) read the
same way; see ``docs/formats/nsys.md`` for the tables, columns and enum mappings used.

One job per module:

- :mod:`.database`: read-only access (stdlib ``sqlite3`` for small lookups, ADBC for bulk Arrow queries);
- :mod:`.pages`: the page reader, which answers the event tables' SELECTs off the B-tree pages in C (the
  same tables ADBC gives, faster), declining anything unusual to ADBC;
- :mod:`.strings`: ``StringIds`` as one Arrow dictionary (ids -> names, placeholders for missing ids);
- :mod:`.enums`: ENUM_* tables or the built-in ids -> copy, memory and sync kind labels;
- :mod:`.queries`: which tables are read and the SELECT for each;
- :mod:`.fetch`: the tables fetched in parallel, each mapped to rows as it arrives;
- :mod:`.mappers` (CUPTI and host tables) and :mod:`.nvtx` (NVTX_EVENTS, chunked): rows as a
  :class:`.columns.Part`; :mod:`.nvtx_payload`: NCCL's message sizes from NVTX payloads;
- :mod:`.processes`: correlation ids made unique per process in exports of several processes, and each
  process's CUDA device mapped to its GPU;
- :mod:`.assembly`: the parts -> one sorted event store, and the host rows' nesting depth;
- :mod:`.threads`: the pid and tid columns as one small code a row per thread (for the assembly);
- :mod:`.metadata`: export metadata and checks, devices, framework, ``metadata.extra``;
- :mod:`.reader`: :func:`read` and :class:`NsysReader`, which run the steps above in order;
- :mod:`.rep`: ``.nsys-rep`` reports exported once to a cached SQLite file.
"""

from __future__ import annotations

from .database import sqlite_uri
from .reader import NsysReader, read

__all__ = ["NsysReader", "read", "sqlite_uri"]
