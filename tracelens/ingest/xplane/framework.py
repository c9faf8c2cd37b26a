"""Which framework wrote an XSpace (``metadata.framework``, ``metadata.producer``): the host plane's event names
first (:func:`..tf_common.detect_framework`), then what a profile without host events still shows (a JAX profile
of the GPU side alone): the ``/host:metadata`` plane's ``jax_version``/``jaxlib_version`` stats, and the XLA
module each GPU op ran in (its ``hlo_module`` stat)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..tf_common import detect_framework

METADATA_PLANE = "/host:metadata"
JAX_VERSION_STATS = frozenset({"jax_version", "jaxlib_version"})
# jax.jit, pjit and pmap name the module after the function: jit_train_step, pjit_f, pmap_step.
JAX_MODULE = re.compile(r"^(jit|pjit|pmap|xmap)_")
# TensorFlow's XLA modules: tf.function(jit_compile=True) "a_inference_<fn>_<n>__...", auto-clustering "cluster_<n>".
TF_MODULE = re.compile(r"^(a_inference_|cluster_\d)")
PRODUCERS = {"jax": "JAX profiler", "tensorflow": "TensorFlow Profiler", "unknown": "TensorFlow/JAX profiler"}


def _jax_versions(spaces: Iterable[Any]) -> bool:
    for space in spaces:
        for plane in space.planes:
            if plane.name == METADATA_PLANE:
                names = {key: meta.name for key, meta in plane.stat_metadata.items()}
                if any(names.get(s.metadata_id) in JAX_VERSION_STATS for s in plane.stats):
                    return True
    return False


def detect(host_names: list[str], spaces: Iterable[Any], modules: pa.Array) -> str:
    """``jax``, ``tensorflow`` or ``unknown`` (no host event and nothing on the GPU side that tells)."""
    if detect_framework(host_names) == "jax" or _jax_versions(spaces):
        return "jax"
    distinct = [str(m) for m in pc.unique(modules.drop_null()).to_pylist()] if len(modules) else []
    if any(JAX_MODULE.match(m) for m in distinct):
        return "jax"
    if host_names or any(TF_MODULE.match(m) for m in distinct):
        return "tensorflow"
    return "unknown"
