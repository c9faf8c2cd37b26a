"""The XSpace protobuf schema, built in code in a private descriptor pool (no TensorFlow import).

Field numbers are those of ``tsl/profiler/protobuf/xplane.proto`` (package ``tensorflow.profiler``).
Two variants of the schema are built:

* ``full``: the schema as published (every message typed), for tools and debugging.
* ``lite``: identical on the wire, except that ``XLine.events`` is declared ``repeated bytes``, so that
  upb hands the reader each event's serialized bytes instead of building one Python message per event;
  the reader walks those bytes with numpy (:mod:`tracelens.ingest.xplane.wire`).

A private :class:`~google.protobuf.descriptor_pool.DescriptorPool` keeps these names out of the default
pool, so this works in a process that has imported TensorFlow (which registers its own
``tensorflow.profiler.XSpace`` there).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_F = descriptor_pb2.FieldDescriptorProto

# (name, number, type, label, message type name or None, oneof index or None)
_XSTAT_FIELDS = [
    ("metadata_id", 1, _F.TYPE_INT64, _F.LABEL_OPTIONAL, None, None),
    ("double_value", 2, _F.TYPE_DOUBLE, _F.LABEL_OPTIONAL, None, 0),
    ("uint64_value", 3, _F.TYPE_UINT64, _F.LABEL_OPTIONAL, None, 0),
    ("int64_value", 4, _F.TYPE_INT64, _F.LABEL_OPTIONAL, None, 0),
    ("str_value", 5, _F.TYPE_STRING, _F.LABEL_OPTIONAL, None, 0),
    ("bytes_value", 6, _F.TYPE_BYTES, _F.LABEL_OPTIONAL, None, 0),
    ("ref_value", 7, _F.TYPE_UINT64, _F.LABEL_OPTIONAL, None, 0),
]


def _message(
    file: descriptor_pb2.FileDescriptorProto,
    name: str,
    fields: list[tuple[Any, ...]],
    oneofs: tuple[str, ...] = (),
) -> descriptor_pb2.DescriptorProto:
    msg = file.message_type.add(name=name)
    for oneof in oneofs:
        msg.oneof_decl.add(name=oneof)
    for fname, number, ftype, label, type_name, oneof_index in fields:
        field = msg.field.add(name=fname, number=number, type=ftype, label=label)
        if type_name:
            field.type_name = type_name
        if oneof_index is not None:
            field.oneof_index = oneof_index
    return msg


def _map_entry(parent: descriptor_pb2.DescriptorProto, entry_name: str, value_type: str) -> None:
    entry = parent.nested_type.add(name=entry_name)
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=_F.TYPE_INT64, label=_F.LABEL_OPTIONAL)
    entry.field.add(
        name="value", number=2, type=_F.TYPE_MESSAGE, label=_F.LABEL_OPTIONAL, type_name=value_type
    )


def _file(package: str, lite: bool) -> descriptor_pb2.FileDescriptorProto:
    file = descriptor_pb2.FileDescriptorProto(
        name=f"{package.replace('.', '/')}/xplane.proto", package=package, syntax="proto3"
    )
    p = f".{package}."
    rep, opt = _F.LABEL_REPEATED, _F.LABEL_OPTIONAL
    _message(
        file,
        "XSpace",
        [
            ("planes", 1, _F.TYPE_MESSAGE, rep, p + "XPlane", None),
            ("errors", 2, _F.TYPE_STRING, rep, None, None),
            ("warnings", 3, _F.TYPE_STRING, rep, None, None),
            ("hostnames", 4, _F.TYPE_STRING, rep, None, None),
        ],
    )
    plane = _message(
        file,
        "XPlane",
        [
            ("id", 1, _F.TYPE_INT64, opt, None, None),
            ("name", 2, _F.TYPE_STRING, opt, None, None),
            ("lines", 3, _F.TYPE_MESSAGE, rep, p + "XLine", None),
            ("event_metadata", 4, _F.TYPE_MESSAGE, rep, p + "XPlane.EventMetadataEntry", None),
            ("stat_metadata", 5, _F.TYPE_MESSAGE, rep, p + "XPlane.StatMetadataEntry", None),
            ("stats", 6, _F.TYPE_MESSAGE, rep, p + "XStat", None),
        ],
    )
    _map_entry(plane, "EventMetadataEntry", p + "XEventMetadata")
    _map_entry(plane, "StatMetadataEntry", p + "XStatMetadata")
    events = (
        ("events", 4, _F.TYPE_BYTES, rep, None, None)
        if lite
        else ("events", 4, _F.TYPE_MESSAGE, rep, p + "XEvent", None)
    )
    _message(
        file,
        "XLine",
        [
            ("id", 1, _F.TYPE_INT64, opt, None, None),
            ("display_id", 10, _F.TYPE_INT64, opt, None, None),
            ("name", 2, _F.TYPE_STRING, opt, None, None),
            ("display_name", 11, _F.TYPE_STRING, opt, None, None),
            ("timestamp_ns", 3, _F.TYPE_INT64, opt, None, None),
            ("duration_ps", 9, _F.TYPE_INT64, opt, None, None),
            events,
        ],
    )
    if not lite:
        _message(
            file,
            "XEvent",
            [
                ("metadata_id", 1, _F.TYPE_INT64, opt, None, None),
                ("offset_ps", 2, _F.TYPE_INT64, opt, None, 0),
                ("num_occurrences", 5, _F.TYPE_INT64, opt, None, 0),
                ("duration_ps", 3, _F.TYPE_INT64, opt, None, None),
                ("stats", 4, _F.TYPE_MESSAGE, rep, p + "XStat", None),
            ],
            oneofs=("data",),
        )
    _message(file, "XStat", _XSTAT_FIELDS, oneofs=("value",))
    _message(
        file,
        "XEventMetadata",
        [
            ("id", 1, _F.TYPE_INT64, opt, None, None),
            ("name", 2, _F.TYPE_STRING, opt, None, None),
            ("display_name", 4, _F.TYPE_STRING, opt, None, None),
            ("metadata", 3, _F.TYPE_BYTES, opt, None, None),
            ("stats", 5, _F.TYPE_MESSAGE, rep, p + "XStat", None),
            ("child_id", 6, _F.TYPE_INT64, rep, None, None),
        ],
    )
    _message(
        file,
        "XStatMetadata",
        [
            ("id", 1, _F.TYPE_INT64, opt, None, None),
            ("name", 2, _F.TYPE_STRING, opt, None, None),
            ("description", 3, _F.TYPE_STRING, opt, None, None),
        ],
    )
    return file


@cache
def xspace_class(lite: bool = True) -> type:
    """The XSpace message class (``lite``: events as raw bytes), from a private descriptor pool."""
    pool = descriptor_pool.DescriptorPool()
    package = "tracelens.xplane_lite" if lite else "tracelens.xplane"
    pool.Add(_file(package, lite))
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{package}.XSpace"))


def protobuf_backend() -> str:
    """Which protobuf implementation is in use ("upb" is the fast C one; "python" is pure Python)."""
    from google.protobuf.internal import api_implementation

    return str(api_implementation.Type())
