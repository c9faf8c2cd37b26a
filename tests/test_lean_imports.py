"""``tracelens analyze --format json`` of a Kineto trace imports neither the document's TypedDicts
(``tracelens.document.types``: ~6 ms of the process's one-core start, needed only for typing) nor ``json`` (the
document is written with msgspec; the FLOP model reads recorded JSON texts only when a trace has them), and the
document package still exports every type by name (kimp17)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import tracelens.document
import tracelens.document.types

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "fixtures" / "demo.pt.trace.json.gz"
LAZY = ("tracelens.document.types", "json")


def test_analyze_json_leaves_document_types_and_json_unimported(tmp_path: Path) -> None:
    out = tmp_path / "demo.json"
    code = (
        "import sys\n"
        "from tracelens.cli import main\n"
        f"assert main(['analyze', '--format', 'json', {str(DEMO)!r}, '-o', {str(out)!r}]) == 0\n"
        f"print(*(m in sys.modules for m in {LAZY!r}))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.split()[-len(LAZY) :] == ["False"] * len(LAZY)
    assert out.stat().st_size > 0


def test_document_package_exports_every_type() -> None:
    for name in tracelens.document.__all__:
        assert getattr(tracelens.document, name) is not None
    assert tracelens.document.Summary is tracelens.document.types.Summary
    assert tracelens.document.DeviceUtilization is tracelens.document.types.DeviceUtilization
    from tracelens.document import Document, RunDocument  # noqa: F401  (a from-import of a lazily exported type)
