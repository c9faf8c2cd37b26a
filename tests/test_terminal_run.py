"""A run document (several ranks) in the terminal: tables and sentences, no key: value dump."""

from __future__ import annotations

from pathlib import Path

from tests.test_multirank import write_handmade_run
from tracelens import run as runs
from tracelens.report import terminal
from tracelens.report.units import fmt_ns, fmt_pct


def test_run_document_draws_as_tables(tmp_path: Path) -> None:
    write_handmade_run(tmp_path / "run")
    doc, failures = runs.analyze_run([tmp_path / "run"], workers=1, cache_dir=tmp_path / "cache")
    assert not failures
    text = terminal.render(doc, width=80)
    lines = text.split("\n")
    assert max(len(line) for line in lines) <= 80
    for dump in ("participants:", "basis:", "total_lost_ns", "work_spread", "straggler_rank"):
        assert dump not in text  # the run keys are drawn, not listed
    straggler = doc["stragglers"]["steps"]["straggler"]
    assert f"Straggler: rank {straggler['rank']}: step starts {fmt_ns(straggler['delay_ns'])} late" in text
    assert (
        f"Imbalance: {doc['imbalance']['verdict']}: {fmt_ns(doc['imbalance']['lost_ns'])} lost per GPU"
        in text
    )
    for rank in doc["ranks"]:  # one table row per rank: its number, trace, utilization and busy time
        row = next(line for line in lines if line.split()[:2] == [str(rank["rank"]), Path(rank["path"]).name])
        assert fmt_pct(rank["utilization"]) in row and fmt_ns(rank["busy_ns"]) in row
