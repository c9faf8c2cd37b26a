"""What a profiler's own log says it lost: the messages each reader keeps as ``metadata.extra["profiler_drops"]``.

Only what the formats record is read (docs/analyses.md, "Trace completeness"):

* Kineto writes the messages it logged while tracing into the trace's top-level ``INFO``, ``WARNING`` and
  ``ERROR`` lists (libkineto ``LoggerCollector``): ``Record counts: ... CUPTI stopped early? = N`` (GPU
  collection stopped when the buffer limit was hit), ``Exceeded max GPU buffer count (...) - terminating
  tracing``, ``Dropped N activity records``.
* Nsight Systems exports its diagnostics as ``DIAGNOSTIC_EVENT`` rows (text per row).
* An XSpace carries ``errors`` and ``warnings`` lists.

Messages are few (tens), so they are read one by one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

MAX_MESSAGES = 5

# Kineto's per-trace record counts line: "Record counts: Out-of-range = 3829, ..., CUPTI stopped early? = 0".
STOPPED_EARLY = re.compile(r"CUPTI stopped early\?\s*=\s*(\d+)")
BUFFER_LIMIT = re.compile(r"(?i)exceeded max GPU buffer count")
DROPPED_COUNT = re.compile(
    r"(?i)\bdropped\s+([\d,]+)\s+(?:\w+\s+)?(?:records?|events?)\b"
    r"|\b([\d,]+)\s+(?:\w+\s+)?(?:records?|events?)\s+(?:were\s+|was\s+)?(?:dropped|lost)\b"
)
# Any other message that says events or records were dropped or lost.
DROP_WORDS = re.compile(
    r"(?i)\b(dropped|lost|discarded)\b.*\b(events?|records?|activit(y|ies))\b"
    r"|\b(events?|records?|activit(y|ies))\b.*\b(dropped|lost|discarded)\b"
)


def profiler_drops(messages: Iterable[Any]) -> dict[str, Any] | None:
    """``{dropped_records, collection_stopped_early, messages, message_count}`` from the profiler's messages,
    or None when none of them says anything was lost. ``dropped_records`` sums the counts the messages state
    (null when none states one)."""
    kept: list[str] = []
    dropped = 0
    counted = False
    stopped = False
    for message in messages:  # a loop over a profiler's log lines (tens), not over events
        if not isinstance(message, str):
            continue
        early = STOPPED_EARLY.search(message)
        if early:
            if int(early.group(1)) > 0:
                stopped = True
                kept.append(message)
            continue  # "CUPTI stopped early? = 0" is the record-counts line saying nothing was lost
        if BUFFER_LIMIT.search(message):
            stopped = True
            kept.append(message)
            continue
        count = DROPPED_COUNT.search(message)
        if count:
            dropped += int((count.group(1) or count.group(2)).replace(",", ""))
            counted = True
            kept.append(message)
        elif DROP_WORDS.search(message):
            kept.append(message)
    if not kept:
        return None
    return {
        "dropped_records": dropped if counted else None,
        "collection_stopped_early": stopped,
        "messages": kept[:MAX_MESSAGES],
        "message_count": len(kept),
    }


def kineto_log_lines(document: dict[str, Any]) -> list[Any]:
    """The messages a Kineto trace carries in its top-level INFO, WARNING and ERROR lists."""
    lines: list[Any] = []
    for level in ("INFO", "WARNING", "ERROR"):
        value = document.get(level)
        if isinstance(value, list):
            lines.extend(value)
        elif isinstance(value, str):
            lines.append(value)
    return lines
