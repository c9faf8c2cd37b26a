"""No silent surprises: TensorBoard plugin files point to the xplane beside them, a warning about fields of
unexpected types names the field and an example event, counted nouns agree with their numbers."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

import tracelens
from tests.conftest import FIXTURES
from tests.test_xplane_bad_input import _valid_space
from tests.test_xplane_trace_json import _trace
from tracelens.cli import main
from tracelens.report.units import plural


@pytest.mark.parametrize("name", ["host.overview_page.pb", "host.input_pipeline.pb"])
def test_plugin_file_reads_the_xplane_beside_it(name: str, tmp_path: Path) -> None:
    (tmp_path / "host.xplane.pb").write_bytes(_valid_space())
    (tmp_path / name).write_bytes(
        b"\x0a\x00"
    )  # not an XSpace: read as one it would be "truncated or corrupt"
    trace = tracelens.load(tmp_path / name)
    direct = tracelens.load(tmp_path / "host.xplane.pb")
    assert trace.events.equals(direct.events) and trace.num_events == 50
    assert trace.metadata.warnings[-1] == (
        f"{name} is a TensorBoard plugin file (a summary, not a trace): read host.xplane.pb beside it"
    )


def test_plugin_file_without_an_xplane_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    path = tmp_path / "host.overview_page.pb"
    path.write_bytes(b"\x0a\x00")
    assert main(["analyze", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(path) in err and "plugin file" in err and ".xplane.pb" in err
    assert "truncated or corrupt" not in err


def test_legacy_trace_json_beside_an_xplane_reads_the_xplane(tmp_path: Path) -> None:
    (tmp_path / "host.xplane.pb").write_bytes(_valid_space())
    (tmp_path / "host.trace.json.gz").write_bytes(gzip.compress(json.dumps(_trace()).encode()))
    trace = tracelens.load(tmp_path / "host.trace.json.gz")
    assert trace.events.equals(tracelens.load(tmp_path / "host.xplane.pb").events)
    assert "host.trace.json.gz is the legacy trace JSON" in trace.metadata.warnings[-1]
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copyfile(tmp_path / "host.trace.json.gz", alone / "host.trace.json.gz")
    assert not tracelens.load(alone / "host.trace.json.gz").metadata.warnings  # no xplane: read as it is


@pytest.mark.parametrize("layout", ["minified", "kineto"])
def test_unexpected_field_type_warning_names_field_and_event(layout: str, tmp_path: Path) -> None:
    doc = json.loads((FIXTURES / "kineto" / "time_origin_relative.json").read_text())
    doc["traceEvents"][0]["args"]["correlation"] = "abc"  # a string where a number belongs
    path = tmp_path / "t.json"
    if layout == "minified":
        path.write_text(json.dumps(doc))
    else:
        import importlib.util

        spec = importlib.util.spec_from_file_location("make_handmade", FIXTURES / "make_handmade.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        path.write_text(module.kineto_json(doc))
    warnings = tracelens.load(path).metadata.warnings
    assert len(warnings) == 1
    assert warnings[0].startswith(
        "some events had fields of unexpected types; numbers written as strings were read, other such values left "
        "empty"
    )
    assert 'field args.correlation = "abc"' in warnings[0]
    assert 'in event "cudaLaunchKernel" at ts 519689.25' in warnings[0]


def test_plural() -> None:
    assert [plural(n, "GPU") for n in (0, 1, 2, 1024)] == ["0 GPUs", "1 GPU", "2 GPUs", "1,024 GPUs"]
    assert plural(1, "copy", "copies") == "1 copy" and plural(3, "copy", "copies") == "3 copies"


def test_one_gpu_and_one_thread_read_in_the_singular() -> None:
    from tracelens.report import render

    doc = tracelens.analyze(tracelens.load(FIXTURES / "demo.pt.trace.json.gz"))
    assert len(doc["devices"]) == 1
    markdown = render(doc, "markdown")
    terminal = render(doc, "terminal")
    # One GPU: the utilization headline names no count at all (several: "mean over 2 GPUs").
    assert "- **GPU busy " in markdown and "device(s)" not in markdown and "over 1 device" not in markdown
    assert "GPU busy " in terminal and "mean over" not in terminal
    assert "over 1 GPUs" not in terminal and "1 threads" not in terminal and "1 threads" not in markdown
    threads = doc["host"]["threads"]
    assert f"{plural(threads, 'thread')}" in markdown


def test_one_pageable_copy_reads_in_the_singular() -> None:
    raw = json.loads((FIXTURES / "kineto" / "old_format.json").read_text())
    pageable = [e for e in raw["traceEvents"] if "(Pageable" in e.get("name", "") and e.get("ph") == "X"]
    assert len(pageable) == 1
    doc = tracelens.analyze(tracelens.load(FIXTURES / "kineto" / "old_format.json"))
    from tracelens.analyses.diagnosis.memcpy import check_sentence

    messages = [check_sentence(f) for f in doc["memcpy"]["findings"] if f["id"] == "memcpy_pageable"]
    assert messages and messages[0].startswith("1 copy uses pageable host memory")
