"""Per-compute-capability SM limits and host/peer link bandwidths (documented tables, no guessing).

Sources: the CUDA C++ Programming Guide, "Technical Specifications per Compute Capability" table, and the
allocation rules of CUDA's occupancy calculator (``cuda_occupancy.h``): register allocation unit and
sub-partitions, shared-memory allocation unit and the 1 KiB per-block system reserve from cc 8.0 on.
Device-reported values (the trace's device table) override these where present; see
:func:`tracelens.occupancy_calc.device_limits`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

KIB = 1024


@dataclass(frozen=True)
class ArchLimits:
    """SM resources of one compute capability (per SM unless named per block)."""

    max_threads_per_sm: int
    max_blocks_per_sm: int
    regs_per_sm: int = 64 * KIB
    regs_per_block: int = 64 * KIB
    max_regs_per_thread: int = 255
    reg_alloc_unit: int = 256  # registers are allocated per warp in units of 256
    reg_sub_partitions: int = 4  # registers are split over this many warp schedulers
    shared_mem_per_sm: int = 64 * KIB  # largest shared-memory carveout
    shared_mem_per_block: int = 48 * KIB  # without opt-in
    shared_mem_per_block_optin: int = 48 * KIB
    shared_mem_alloc_unit: int = 256
    shared_mem_reserved_per_block: int = 0  # driver-reserved shared memory per block (cc >= 8.0)
    max_threads_per_block: int = 1024
    warp_size: int = 32


# cc 8.0 on: 128-byte shared-memory allocation unit and a 1 KiB per-block reserve.
_AMPERE_SMEM = {"shared_mem_alloc_unit": 128, "shared_mem_reserved_per_block": KIB}

ARCH_LIMITS: dict[tuple[int, int], ArchLimits] = {
    (5, 0): ArchLimits(2048, 32, shared_mem_per_sm=64 * KIB),
    (5, 2): ArchLimits(2048, 32, shared_mem_per_sm=96 * KIB),
    (5, 3): ArchLimits(2048, 32, shared_mem_per_sm=64 * KIB, regs_per_block=32 * KIB),
    # GP100 has two register sub-partitions per SM; GP10x four.
    (6, 0): ArchLimits(2048, 32, shared_mem_per_sm=64 * KIB, reg_sub_partitions=2),
    (6, 1): ArchLimits(2048, 32, shared_mem_per_sm=96 * KIB),
    (6, 2): ArchLimits(2048, 32, shared_mem_per_sm=64 * KIB, regs_per_block=32 * KIB),
    (7, 0): ArchLimits(2048, 32, shared_mem_per_sm=96 * KIB, shared_mem_per_block_optin=96 * KIB),
    (7, 2): ArchLimits(2048, 32, shared_mem_per_sm=96 * KIB, shared_mem_per_block_optin=96 * KIB),
    (7, 5): ArchLimits(1024, 16, shared_mem_per_sm=64 * KIB, shared_mem_per_block_optin=64 * KIB),
    (8, 0): ArchLimits(
        2048, 32, shared_mem_per_sm=164 * KIB, shared_mem_per_block_optin=163 * KIB, **_AMPERE_SMEM
    ),
    (8, 6): ArchLimits(
        1536, 16, shared_mem_per_sm=100 * KIB, shared_mem_per_block_optin=99 * KIB, **_AMPERE_SMEM
    ),
    (8, 7): ArchLimits(
        1536, 16, shared_mem_per_sm=164 * KIB, shared_mem_per_block_optin=163 * KIB, **_AMPERE_SMEM
    ),
    (8, 9): ArchLimits(
        1536, 24, shared_mem_per_sm=100 * KIB, shared_mem_per_block_optin=99 * KIB, **_AMPERE_SMEM
    ),
    (9, 0): ArchLimits(
        2048, 32, shared_mem_per_sm=228 * KIB, shared_mem_per_block_optin=227 * KIB, **_AMPERE_SMEM
    ),
    (10, 0): ArchLimits(
        2048, 32, shared_mem_per_sm=228 * KIB, shared_mem_per_block_optin=227 * KIB, **_AMPERE_SMEM
    ),
    (10, 3): ArchLimits(
        2048, 32, shared_mem_per_sm=228 * KIB, shared_mem_per_block_optin=227 * KIB, **_AMPERE_SMEM
    ),
    (12, 0): ArchLimits(
        1536, 32, shared_mem_per_sm=100 * KIB, shared_mem_per_block_optin=99 * KIB, **_AMPERE_SMEM
    ),
}


def arch_limits(major: int, minor: int) -> ArchLimits | None:
    """The built-in limits for a compute capability, or None when it is not in the table."""
    return ARCH_LIMITS.get((int(major), int(minor)))


# --- Links ------------------------------------------------------------------------------------------
# Theoretical one-direction bandwidth of a x16 PCIe link, bytes/s: lanes x transfer rate x encoding.
# gen3 8 GT/s 128b/130b -> 15.75 GB/s; gen4 16 GT/s -> 31.5 GB/s; gen5 32 GT/s -> 63.0 GB/s.
PCIE_X16_BYTES_PER_S = {3: 15.754e9, 4: 31.508e9, 5: 63.015e9}

# Host link generation by compute capability (the PCIe generation of the parts that shipped with it).
_PCIE_GEN_BY_CC = {6: 3, 7: 3, 8: 4, 9: 5, 10: 5, 12: 5}


@dataclass(frozen=True)
class DeviceLinks:
    """What a device's copies can reach, per direction, in bytes/s, and where each figure comes from."""

    host_link: str | None  # "PCIe gen4 x16", "NVLink-C2C", ...
    host_bytes_per_s: float | None
    host_source: str | None
    peer_link: str | None
    peer_bytes_per_s: float | None
    peer_source: str | None
    memory_bytes_per_s: float | None  # DRAM/HBM bandwidth (a DtoD copy reads and writes every byte)
    memory_source: str | None


# (name pattern, host link, host B/s, peer link, peer one-direction B/s, memory B/s), first match wins.
# Peer figures are one-direction NVLink totals of the SXM parts (half the marketed bidirectional figure).
_NAME_TABLE: list[tuple[str, str, float, str | None, float | None, float | None]] = [
    (r"GH200", "NVLink-C2C", 450e9, "NVLink 4", 450e9, 4.0e12),
    (r"H100.*PCIe", "PCIe gen5 x16", PCIE_X16_BYTES_PER_S[5], None, None, 2.0e12),
    (r"H100.*NVL", "PCIe gen5 x16", PCIE_X16_BYTES_PER_S[5], "NVLink 4", 300e9, 3.9e12),
    (r"H100", "PCIe gen5 x16", PCIE_X16_BYTES_PER_S[5], "NVLink 4", 450e9, 3.35e12),
    (r"H200", "PCIe gen5 x16", PCIE_X16_BYTES_PER_S[5], "NVLink 4", 450e9, 4.8e12),
    (r"B200", "PCIe gen5 x16", PCIE_X16_BYTES_PER_S[5], "NVLink 5", 900e9, 8.0e12),
    (r"A100.*PCIe", "PCIe gen4 x16", PCIE_X16_BYTES_PER_S[4], None, None, 1.555e12),
    (r"A100.*80GB", "PCIe gen4 x16", PCIE_X16_BYTES_PER_S[4], "NVLink 3", 300e9, 2.039e12),
    (r"A100", "PCIe gen4 x16", PCIE_X16_BYTES_PER_S[4], "NVLink 3", 300e9, 1.555e12),
    (r"A10G|A10\b", "PCIe gen4 x16", PCIE_X16_BYTES_PER_S[4], None, None, 600e9),
    (r"L40S|L40\b", "PCIe gen4 x16", PCIE_X16_BYTES_PER_S[4], None, None, 864e9),
    (r"L4\b", "PCIe gen4 x16", PCIE_X16_BYTES_PER_S[4], None, None, 300e9),
    (r"V100.*SXM2", "PCIe gen3 x16", PCIE_X16_BYTES_PER_S[3], "NVLink 2", 150e9, 900e9),
    (r"V100", "PCIe gen3 x16", PCIE_X16_BYTES_PER_S[3], None, None, 900e9),
    (r"T4\b", "PCIe gen3 x16", PCIE_X16_BYTES_PER_S[3], None, None, 320e9),
    (r"RTX 3080", "PCIe gen4 x16", PCIE_X16_BYTES_PER_S[4], None, None, 760e9),
    (r"RTX 3090", "PCIe gen4 x16", PCIE_X16_BYTES_PER_S[4], None, None, 936e9),
    (r"RTX 4090", "PCIe gen4 x16", PCIE_X16_BYTES_PER_S[4], None, None, 1008e9),
]


def device_links(
    name: str | None,
    compute_major: int | None,
    memory_bytes_per_s: float | None,
    vendor: str | None = None,
) -> DeviceLinks:
    """Expected link bandwidths: device name table first, then the PCIe generation of the compute capability.

    ``memory_bytes_per_s`` is the device-reported memory bandwidth (device table), preferred when present. The
    compute capability table is NVIDIA's: an AMD device (``vendor`` "amd") reports its gfx major there (9 for
    MI100, MI250 and MI300 alike, PCIe gen4 and gen5 parts), which says nothing of its link.
    """
    host_link = peer_link = host_src = peer_src = mem_src = None
    host_bw = peer_bw = mem_bw = None
    for pattern, h_link, h_bw, p_link, p_bw, m_bw in _NAME_TABLE:
        if name and re.search(pattern, name):
            host_link, host_bw, host_src = h_link, h_bw, f"device name table ({pattern})"
            if p_link:
                peer_link, peer_bw, peer_src = p_link, p_bw, f"device name table ({pattern})"
            if m_bw:
                mem_bw, mem_src = m_bw, f"device name table ({pattern})"
            break
    major = int(compute_major) if compute_major is not None and (vendor or "").lower() != "amd" else None
    if host_bw is None and major is not None and major in _PCIE_GEN_BY_CC:
        gen = _PCIE_GEN_BY_CC[major]
        host_link, host_bw = f"PCIe gen{gen} x16", PCIE_X16_BYTES_PER_S[gen]
        host_src = f"compute capability {major}.x table (PCIe gen{gen})"
    if memory_bytes_per_s:
        mem_bw, mem_src = float(memory_bytes_per_s), "device table (reported by the trace)"
    return DeviceLinks(host_link, host_bw, host_src, peer_link, peer_bw, peer_src, mem_bw, mem_src)


# --- Collective links ---------------------------------------------------------------------------------
# Collectives inside a node run over the GPUs' peer link. nccl-tests' bus bandwidth is one-direction and is
# meant to be compared with the "hardware peak bandwidth" of that link (NVIDIA/nccl-tests doc/PERFORMANCE.md),
# so the figures here are one-direction aggregates per GPU.
# AMD MI300X: 7 Infinity Fabric (xGMI) links of 16 lanes at 32 Gb/s = 128 GB/s bidirectional each (AMD's MI300
# launch, Dec 2023) -> 7 x 64 GB/s = 448 GB/s per direction. MI250/MI250X GCDs have links of unequal width
# (quad/dual/single): no single figure, left unknown.
_XGMI_TABLE: list[tuple[str, str, float]] = [
    (r"MI300X", "Infinity Fabric (xGMI), 7 links", 448e9),
]


@dataclass(frozen=True)
class CollectiveLink:
    """The link a GPU's collectives run over, its one-direction peak, and why it is unknown when it is."""

    link: str | None
    peak_bytes_per_s: float | None
    source: str | None
    unknown_reason: str | None


def links_of_device(info: Mapping[str, Any]) -> DeviceLinks:
    """:func:`device_links` of a row of the trace's device table (``Trace.device_info``): its name, compute
    capability, reported memory bandwidth and vendor read by their column names in one place."""
    return device_links(
        info.get("name"),
        info.get("compute_major"),
        info.get("memory_bandwidth_bytes_per_s"),
        info.get("vendor"),
    )


def collective_link(name: str | None, compute_major: int | None) -> CollectiveLink:
    """NVLink where the part has it (the peer table above), xGMI for MI300X, PCIe for parts without either.

    A PCIe card's optional NVLink bridge and collectives that leave the node (the NIC is then the bottleneck)
    are not visible in a trace: the figure is the link inside one node.
    """
    if not name:
        return CollectiveLink(None, None, None, "the trace does not name the GPU model")
    for pattern, link, peak in _XGMI_TABLE:
        if re.search(pattern, name):
            return CollectiveLink(link, peak, f"xGMI table ({pattern})", None)
    links = device_links(name, None, None)
    if links.peer_link:
        return CollectiveLink(links.peer_link, links.peer_bytes_per_s, links.peer_source, None)
    if links.host_link:
        return CollectiveLink(
            links.host_link,
            links.host_bytes_per_s,
            f"{links.host_source}: no NVLink on this part, peers share PCIe",
            None,
        )
    return CollectiveLink(None, None, None, f"no link figure for GPU model {name!r}")
