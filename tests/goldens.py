"""The golden files: what they hold, how a test compares with them, and the one command that writes them.

* ``tests/golden/json/``: the full ``analyze`` document (``--format json``) of every fixture trace and of the
  real traces in ../shared/traces named in ``SHARED_NAMES`` (``tests/test_golden_json.py``).
* ``tests/golden/{core,full}.{md,txt}``: the markdown report and terminal summary of a hand-built trace
  (``tests/test_report_golden.py``).

Tests only compare: a difference fails and names the command below. After an intended change, regenerate
with ``python3 -m tests.goldens --regen`` (from the repository root; ``--regen json`` or ``--regen report``
for one kind) and review the diff of ``tests/golden/`` like code. ``TRACELENS_REGEN_GOLDEN=1 python3 -m
pytest tests/test_golden_json.py tests/test_report_golden.py`` is kept as an alias: each golden test then
writes its file and is reported as *skipped* ("regenerated"), never as passed.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import tracelens
from tests.conftest import SHARED_TRACES
from tracelens.report.json_renderer import render as render_json

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
SHARED = SHARED_TRACES
GOLDEN = Path(__file__).parent / "golden"
JSON_GOLDEN = GOLDEN / "json"
REGEN_COMMAND = "python3 -m tests.goldens --regen"
REGEN_ENV = "TRACELENS_REGEN_GOLDEN"

# Every fixture trace: the Kineto/xplane recordings (.gz, .pb), the hand-written Kineto files in kineto/ and
# the hand-built Nsight exports in nsys/ (not fixtures/causes: those are documents, not traces).
FIXTURE_TRACES = sorted(
    p
    for p in FIXTURES.rglob("*")
    if p.is_file() and (p.suffix in (".gz", ".pb", ".sqlite") or p.parent.name == "kineto")
)
SHARED_NAMES = [
    "nsys/a100_saxpy_nsys2022.2.sqlite",
    "nsys/h100x2_fastvideo_window_nsys2026.2.sqlite",
    "nsys/rtx3080_tiny_nsys2026.1.sqlite",
    "pytorch/a100_alexnet_cuda_sync_2023.json.gz",
    "pytorch/a100_nccl_2rank_rank0_2024.json.gz",
    "pytorch/h100_bert_small_inference_torch2.6.json.gz",
    "pytorch/mi250_rocm6.2_minitoy_train.json.gz",
    "pytorch/v100_ns_resolution_2024.json.gz",
    "pytorch/v100_resnet50_2021_oldformat.json.gz",
    "tf/amd_gpu_jax_te_fused_attn.xplane.pb",
    "tf/v100x8_tf2.4_bert_multiworker.xplane.pb",
]


def fixture_name(path: Path) -> str:
    return str(path.relative_to(FIXTURES))


def json_golden_path(name: str) -> Path:
    """``name`` is a trace's path relative to fixtures/ or to ../shared/traces."""
    return JSON_GOLDEN / (name.replace("/", "__") + ".json")


def document(path: Path) -> dict:
    """The ``--format json`` document of one trace, with the input's location left out (not a result)."""
    doc = json.loads(render_json(tracelens.analyze(tracelens.load(path))))
    doc["source"]["path"] = path.name
    return doc


def json_differences(got: object, want: object, where: str = "") -> list[str]:
    """Key-by-key differences; floats equal to 1e-9 relative, every other value (and its type) exactly."""
    if isinstance(want, dict) and isinstance(got, dict):
        out = [f"{where}.{k}: missing" for k in want if k not in got]
        out += [f"{where}.{k}: unexpected" for k in got if k not in want]
        for k in want:
            if k in got:
                out += json_differences(got[k], want[k], f"{where}.{k}")
        return out
    if isinstance(want, list) and isinstance(got, list):
        if len(got) != len(want):
            return [f"{where}: {len(got)} items, golden {len(want)}"]
        return [
            d
            for i, (g, w) in enumerate(zip(got, want, strict=True))
            for d in json_differences(g, w, f"{where}[{i}]")
        ]
    if isinstance(want, float) and isinstance(got, (int, float)) and not isinstance(got, bool):
        return (
            [] if math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12) else [f"{where}: {got!r} != {want!r}"]
        )
    return [] if got == want and type(got) is type(want) else [f"{where}: {got!r} != {want!r}"]


def json_text(doc: dict) -> str:
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def _regenerate_in_test(path: Path, text: str) -> None:
    """The env-var alias: write the file, then skip, so a regenerating run never reports a pass."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    pytest.skip(f"regenerated {_shown(path)} ({REGEN_ENV} set): not compared")


def _shown(path: Path) -> Path:
    """``path`` relative to the repository root when it lies inside it."""
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path


def _missing(path: Path) -> str:
    return f"{_shown(path)} does not exist: write it with `{REGEN_COMMAND}` and review it"


def check_json(name: str, doc: dict) -> None:
    """Fail unless ``doc`` equals the JSON golden of ``name``."""
    path = json_golden_path(name)
    if os.environ.get(REGEN_ENV):
        _regenerate_in_test(path, json_text(doc))
    assert path.is_file(), _missing(path)
    differences = json_differences(doc, json.loads(path.read_text(encoding="utf-8")))
    assert differences == [], (
        f"{name}: {len(differences)} differences from {_shown(path)}, first: "
        f"{differences[:10]}. If the change is intended: `{REGEN_COMMAND} json`, "
        "then review the diff"
    )


def check_text(name: str, text: str) -> None:
    """Fail unless ``text`` equals the golden file ``tests/golden/<name>`` byte for byte."""
    path = GOLDEN / name
    if os.environ.get(REGEN_ENV):
        _regenerate_in_test(path, text)
    assert path.is_file(), _missing(path)
    expected = path.read_text(encoding="utf-8")
    if text != expected:
        got, want = text.split("\n"), expected.split("\n")
        line = next(
            (i for i, (g, w) in enumerate(zip(got, want, strict=False)) if g != w), min(len(got), len(want))
        )
        raise AssertionError(
            f"{_shown(path)} differs from the output from line {line + 1} on "
            f"(output {got[line : line + 1]!r}, golden {want[line : line + 1]!r}). If the change "
            f"is intended: `{REGEN_COMMAND} report`, then review the diff"
        )


def _json_goldens() -> dict[Path, Callable[[], str]]:
    out: dict[Path, Callable[[], str]] = {}
    for path in FIXTURE_TRACES:
        out[json_golden_path(fixture_name(path))] = lambda path=path: json_text(document(path))
    for name in SHARED_NAMES:
        if (SHARED / name).is_file():
            out[json_golden_path(name)] = lambda name=name: json_text(document(SHARED / name))
        else:
            print(
                f"skipped {name}: ../shared/traces is absent (its golden is kept as it is)", file=sys.stderr
            )
    return out


def _report_goldens() -> dict[Path, Callable[[], str]]:
    from tests.test_report_golden import rendered  # the cases live beside their tests
    from tests.test_terminal_width import rendered as rendered_at_widths

    return {GOLDEN / name: producer for name, producer in {**rendered(), **rendered_at_widths()}.items()}


def regenerate(kinds: list[str]) -> list[Path]:
    """Write the goldens of ``kinds`` ("json", "report"); returns the files whose content changed."""
    targets: dict[Path, Callable[[], str]] = {}
    if "json" in kinds:
        targets.update(_json_goldens())
    if "report" in kinds:
        targets.update(_report_goldens())
    changed = []
    for path, produce in targets.items():
        text = produce()
        if path.is_file() and (
            path.read_text(encoding="utf-8") == text
            or (
                path.suffix == ".json"  # float noise below the tests' tolerance is not a change
                and not json_differences(json.loads(text), json.loads(path.read_text(encoding="utf-8")))
            )
        ):
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        changed.append(path)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m tests.goldens", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--regen",
        nargs="*",
        choices=["json", "report"],
        metavar="KIND",
        required=True,
        help="write the goldens (all, or only json / report)",
    )
    args = parser.parse_args(argv)
    changed = regenerate(args.regen or ["json", "report"])
    for path in changed:
        print(f"wrote {_shown(path)}")
    print(f"{len(changed)} golden file(s) changed; review `git diff tests/golden` like code")
    return 0


if __name__ == "__main__":
    sys.exit(main())
