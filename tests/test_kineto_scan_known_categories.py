"""The scanner's codes of the categories it recognizes by their bytes (cpu_op, cuda_runtime, kernel,
gpu_memcpy: kept from the first row of each, no hash and probe after): every row's category must be the one
msgspec reads, in any order of the blocks' events, where a later "cat" member replaces the recognized one
(msgspec keeps the last), where it is null, and next to the same text written with an escape or in another
layout (which the scanner reads as other texts)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_kineto_native import needs_scanner
from test_kineto_scan_sequences import _compare, _kineto_layout


def _event(category: str, extra: str = "", name: str = "aten::mm") -> str:
    return (
        f'{{"ph":"X","cat":{category},"name":"{name}","pid":1102,"tid":1262,"ts":1712195497316362.0,'
        f'"dur":63.813,"args":{{"External id":6350469,"Ev Idx":0}}{extra}}}'
    )


_EVENTS = [
    _event('"cpu_op"'),
    _event('"kernel"', name="void k<float>(float*)"),
    _event('"cuda_runtime"', name="cudaLaunchKernel"),
    _event('"gpu_memcpy"', name="Memcpy HtoD (Pageable -> Device)"),
    _event('"cpu_op"', ',"cat":"kernel"'),  # a later member replaces the recognized category
    _event('"kernel"', ',"cat":"cpu_op"'),
    _event('"cpu_op"', ',"cat":null'),
    _event('"cpu_op"', ',"cat":"cpu_op"'),
    _event('"\\u0063pu_op"'),  # the same string, written with an escape: another JSON text
    _event('"cpu_opx"'),
    _event("null"),
    _event('"cpu_op"').replace('"cat":"cpu_op"', '"cat": "cpu_op"'),  # read by the member loop
    '{"ph":"f","id":1,"pid":0,"tid":7,"ts":1712195495537798.5,"cat":"ac2g","name":"ac2g","bp":"e"}',
]


@needs_scanner
@pytest.mark.parametrize("first", range(len(_EVENTS)))
def test_each_event_after_every_other(first: int) -> None:
    for second in range(len(_EVENTS)):
        _compare(_kineto_layout([_EVENTS[first], _EVENTS[second], _EVENTS[first], _EVENTS[second]]))


@needs_scanner
@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(_EVENTS), min_size=1, max_size=12))
def test_blocks_of_any_order(events: list[str]) -> None:
    _compare(_kineto_layout(events))


@needs_scanner
def test_all_in_one_block_in_each_rotation() -> None:
    for shift in range(len(_EVENTS)):
        _compare(
            _kineto_layout(list(itertools.islice(itertools.cycle(_EVENTS), shift, shift + len(_EVENTS))))
        )


# Flows' ids and times of Kineto's shapes are checked, not converted (a flow is no row): a flow that a later
# "ph" member makes a complete event is read again with every number converted; its row must be msgspec's.
_FLOW = '"ph":"f","id":140696,"pid":0,"tid":7,"ts":1712195495537798.5,"cat":"ac2g","name":"ac2g","bp":"e"'
_FLOWS = [
    "{" + _FLOW + "}",
    "{" + _FLOW + ',"ph":"X"}',
    "{" + _FLOW + ',"ph":"X","dur":1.5,"args":{"External id":7,"correlation":9}}',
    "{" + _FLOW.replace('"pid":0', '"pid":"0"') + ',"ph":"X"}',
    "{" + _FLOW.replace("1712195495537798.5", "1712195495537798.25") + ',"ph":"X"}',
    "{" + _FLOW.replace('"tid":7', '"tid":1e400') + "}",  # out of range: msgspec fails, the scanner declines
    "{" + _FLOW.replace('"tid":7', '"tid":1e400') + ',"ph":"X"}',
    "{" + _FLOW + ',"ph":"s"}',
    "{" + _FLOW + ',"ph":"X","ph":"f"}',
]


@needs_scanner
@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(_FLOWS + _EVENTS), min_size=1, max_size=10))
def test_flows_made_complete_by_a_later_phase(events: list[str]) -> None:
    _compare(_kineto_layout(events))


@needs_scanner
@pytest.mark.parametrize("flow", _FLOWS)
def test_each_flow_twice_after_a_flow(flow: str) -> None:
    _compare(_kineto_layout([_FLOWS[0], flow, flow]))
