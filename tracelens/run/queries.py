"""Cross-rank DuckDB queries over the cached Parquet files (only the columns needed, rows filtered)."""

from __future__ import annotations

import pandas as pd


class RunEvents:
    """One DuckDB connection with the view ``events``: every rank's cached events joined to its rank and
    clock origin. The cross-rank queries below run on it one after another (one connection, one view)."""

    def __init__(self, ranks: pd.DataFrame) -> None:
        import duckdb

        self.connection = duckdb.connect(":memory:")
        self.connection.execute("SET threads TO 2")
        self.connection.register("rank_map", ranks[["parquet", "rank", "origin_ns"]])
        # a view cannot take a bound parameter: the file list goes in as SQL string literals
        files = ", ".join("'" + f.replace("'", "''") + "'" for f in ranks["parquet"])
        self.connection.execute(
            "CREATE TEMP VIEW events AS SELECT e.*, m.rank, m.origin_ns FROM "
            f"read_parquet([{files}], filename = true) e JOIN rank_map m ON e.filename = m.parquet"
        )

    def __enter__(self) -> RunEvents:
        return self

    def __exit__(self, *exc: object) -> None:
        self.connection.close()

    def query(self, sql: str) -> pd.DataFrame:
        return self.connection.execute(sql).df()


def query_steps(events: RunEvents) -> pd.DataFrame:
    """One row per (rank, step): first start and last end of the rank's ``step`` rows, on its own clock
    (``*_abs_ns`` = origin + table time) as integers."""
    return events.query("""
        SELECT rank, step, min(start_ns) + any_value(origin_ns) AS start_abs_ns,
               max(end_ns) + any_value(origin_ns) AS end_abs_ns
        FROM events WHERE kind = 'step' AND step IS NOT NULL
        GROUP BY rank, step ORDER BY rank, step""")


def query_collectives(events: RunEvents) -> pd.DataFrame:
    """One row per NCCL kernel (``nccl`` in the name, any case): rank, device (-1 when unknown), the
    collective it belongs to (``collective``: a dense id of (name, ordinal among same-named kernels on that
    rank's device)), absolute start and duration. Names stay in DuckDB: only integers come back."""
    return events.query("""
        WITH nccl AS (
            SELECT rank, coalesce(device, -1) AS device, name, start_ns + origin_ns AS start_abs_ns,
                   end_ns - start_ns AS dur_ns,
                   row_number() OVER (PARTITION BY rank, device, name ORDER BY start_ns, end_ns) AS ordinal
            FROM events WHERE kind = 'kernel' AND lower(name) LIKE '%nccl%')
        SELECT rank, device, dense_rank() OVER (ORDER BY name, ordinal) AS collective, start_abs_ns, dur_ns
        FROM nccl""")


def query_gpu_work(events: RunEvents) -> pd.DataFrame:
    """Per (rank, device): busy time of kernels, copies and memsets other than NCCL kernels (``work_ns``: the
    length of the union of their intervals, so ops on concurrent streams count once, as in ``busy_ns``), their
    count, and their first start and last end (table times: a capture's length is the same on any clock)."""
    return events.query("""
        WITH ops AS (
            SELECT rank, device, start_ns AS s, end_ns AS e,
                   max(end_ns) OVER (PARTITION BY rank, device ORDER BY start_ns, end_ns
                                     ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before_end
            FROM events
            WHERE kind IN ('kernel', 'memcpy', 'memset') AND device IS NOT NULL
              AND NOT (kind = 'kernel' AND lower(coalesce(name, '')) LIKE '%nccl%'))
        SELECT rank, device, sum(greatest(e - greatest(s, coalesce(before_end, s)), 0)) AS work_ns,
               count(*) AS ops, min(s) AS first_ns, max(e) AS last_ns
        FROM ops GROUP BY rank, device ORDER BY rank, device""")
