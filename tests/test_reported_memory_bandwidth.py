"""The memory bandwidth a trace reports for its device (Nsight's TARGET_INFO_GPU.memoryBandwidth, xplane's
memory_bandwidth stat: the device table's ``memory_bandwidth_bytes_per_s``) is the one the replay's traffic floor
divides by, as the roofline and the memcpy section already did: the replay read a ``memory_bytes_per_s`` key the
device table does not have, so it always took the name table's figure, and none for a GPU the table does not name.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tracelens
from tests.conftest import fixture_path
from tracelens.gpu_specs import device_links, links_of_device
from tracelens.replay import occupancy_model
from tracelens.replay.remedies import Context

TRACE = (
    "gpu/pairs/occupancy_before.pt.trace.json.gz"  # an H200 (4.8 TB/s in the name table), no reported figure
)


def _floors(monkeypatch: pytest.MonkeyPatch, **device: Any) -> np.ndarray:
    trace = tracelens.load(fixture_path(TRACE))
    recorded_info = trace.device_info
    monkeypatch.setattr(trace, "device_info", lambda dev: {**recorded_info(dev), **device})
    g = Context(trace).graph
    return occupancy_model._traffic_floor(trace, g, np.arange(g.op_row.size))


def test_the_fixture_has_traffic_floors(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _floors(monkeypatch).max() > 1000  # ns: the cases below would not tell the figures apart otherwise


def test_a_reported_bandwidth_is_the_one_divided_by(monkeypatch: pytest.MonkeyPatch) -> None:
    # bytes / 1e30 B/s is far below a nanosecond: every floor rounds up to at most 1 ns
    assert _floors(monkeypatch, memory_bandwidth_bytes_per_s=1e30).max() <= 1


def test_a_gpu_the_name_table_lacks_takes_its_reported_bandwidth(monkeypatch: pytest.MonkeyPatch) -> None:
    by_name = _floors(monkeypatch)
    reported = _floors(monkeypatch, name="Mystery GPU", memory_bandwidth_bytes_per_s=4.8e12)
    np.testing.assert_array_equal(reported, by_name)
    assert _floors(monkeypatch, name="Mystery GPU").max() == 0  # neither figure: no floor


def test_links_of_device_reads_the_device_table_columns() -> None:
    info = {
        "name": "Mystery GPU",
        "compute_major": 9,
        "memory_bandwidth_bytes_per_s": 1.5e12,
        "vendor": "amd",
    }
    assert links_of_device(info) == device_links("Mystery GPU", 9, 1.5e12, "amd")
    assert links_of_device(info).memory_bytes_per_s == 1.5e12
    assert links_of_device({}).memory_bytes_per_s is None
