"""CUDA occupancy calculator, vectorized over kernel launches (numpy, no per-kernel Python loop).

Follows the rules of CUDA's occupancy calculator (``cudaOccMaxActiveBlocksPerMultiprocessor``) with the
default device state (largest shared-memory carveout). Active blocks per SM is the minimum of four limits:

- warps:     floor(max warps per SM / warps per block), warps per block = ceil(threads / warp size)
- registers: registers are allocated per warp, rounded up to the allocation unit (256);
             warps that fit = floor((regs per SM / sub-partitions) / regs per warp) x sub-partitions;
             limit = floor(warps that fit / warps per block); a block needing more than regs per block
             (warps rounded up to the sub-partitions) cannot launch; 0 registers -> no limit
- shared:    per-block usage = static + dynamic + reserve (1 KiB from cc 8.0), rounded up to the allocation
             unit (256 B before cc 8.0, 128 B from it); limit = floor(shared per SM / per-block usage);
             0 bytes -> no limit
- blocks:    the architecture's maximum resident blocks per SM

A launch that cannot fit at all (0 active blocks) is invalid input — the kernel did run — and yields NaN
("not computed") instead of a 0 that would look like a real measurement. Unlike CUDA's default-config
calculator (which Kineto uses), the per-block shared-memory limit is the opt-in maximum: a kernel that
launched with more than 48 KiB had opted in. See ``docs/occupancy.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from . import gpu_specs

# Limiter codes (index into LIMITER_NAMES); ties resolve in this order, as the CUDA calculator lists them.
LIMIT_WARPS, LIMIT_REGISTERS, LIMIT_SHARED_MEMORY, LIMIT_BLOCKS = 0, 1, 2, 3
LIMITER_NAMES = ("warps", "registers", "shared_memory", "blocks")
_NO_LIMIT = np.iinfo(np.int64).max // 4


@dataclass(frozen=True)
class DeviceLimits:
    """Everything the calculator needs about one device; ``sources`` says where each value came from."""

    compute_major: int
    compute_minor: int
    sm_count: int | None
    warp_size: int
    max_threads_per_sm: int
    max_threads_per_block: int
    max_blocks_per_sm: int
    regs_per_sm: int
    regs_per_block: int
    max_regs_per_thread: int
    reg_alloc_unit: int
    reg_sub_partitions: int
    shared_mem_per_sm: int
    shared_mem_per_block_optin: int
    shared_mem_alloc_unit: int
    shared_mem_reserved_per_block: int
    sources: dict[str, str]

    @property
    def max_warps_per_sm(self) -> int:
        return self.max_threads_per_sm // self.warp_size


class LimitsUnavailable(Exception):
    """Why the calculator cannot run for a device (the message is shown as the "not computed" reason)."""


# device-table column -> DeviceLimits field it overrides
_DEVICE_OVERRIDES = {
    "warp_size": "warp_size",
    "max_threads_per_sm": "max_threads_per_sm",
    "max_threads_per_block": "max_threads_per_block",
    "max_blocks_per_sm": "max_blocks_per_sm",
    "regs_per_sm": "regs_per_sm",
    "regs_per_block": "regs_per_block",
    "shared_mem_per_sm": "shared_mem_per_sm",
    "shared_mem_per_block_optin": "shared_mem_per_block_optin",
}


def device_limits(info: dict[str, Any]) -> DeviceLimits:
    """Merge a device-table row over the built-in table for its compute capability.

    Raises :class:`LimitsUnavailable` for AMD devices (different rules; their traces carry no registers),
    unknown compute capability, or a compute capability outside the table.
    """
    if (info.get("vendor") or "").lower() == "amd":
        raise LimitsUnavailable(
            "AMD GPU: CUDA occupancy rules do not apply and the trace carries no register counts"
        )
    major, minor = info.get("compute_major"), info.get("compute_minor")
    if major is None or minor is None:
        raise LimitsUnavailable("compute capability unknown (the trace does not record it)")
    arch = gpu_specs.arch_limits(int(major), int(minor))
    if arch is None:
        raise LimitsUnavailable(f"compute capability {major}.{minor} is not in tracelens's limits table")
    values: dict[str, Any] = {
        "warp_size": arch.warp_size,
        "max_threads_per_sm": arch.max_threads_per_sm,
        "max_threads_per_block": arch.max_threads_per_block,
        "max_blocks_per_sm": arch.max_blocks_per_sm,
        "regs_per_sm": arch.regs_per_sm,
        "regs_per_block": arch.regs_per_block,
        "shared_mem_per_sm": arch.shared_mem_per_sm,
        "shared_mem_per_block_optin": arch.shared_mem_per_block_optin,
    }
    sources = {k: f"built-in table cc {major}.{minor}" for k in values}
    for column, name in _DEVICE_OVERRIDES.items():
        reported = info.get(column)
        if reported is not None and int(reported) > 0:
            values[name] = int(reported)
            sources[name] = "device table"
    sm_count = info.get("sm_count")
    return DeviceLimits(
        compute_major=int(major),
        compute_minor=int(minor),
        sm_count=int(sm_count) if sm_count else None,
        max_regs_per_thread=arch.max_regs_per_thread,
        reg_alloc_unit=arch.reg_alloc_unit,
        reg_sub_partitions=arch.reg_sub_partitions,
        shared_mem_alloc_unit=arch.shared_mem_alloc_unit,
        shared_mem_reserved_per_block=arch.shared_mem_reserved_per_block,
        sources=sources,
        **values,
    )


@dataclass
class OccupancyResult:
    """Per-launch results, arrays aligned with the inputs. NaN / -1 where not computable."""

    active_blocks_per_sm: np.ndarray  # int64, -1 where not computed
    limiter: np.ndarray  # int8 code into LIMITER_NAMES, -1 where not computed
    theoretical: np.ndarray  # float64: active warps / max warps per SM
    estimated_achieved: np.ndarray  # float64: min(active, grid/SMs) x threads / max threads per SM
    waves: np.ndarray  # float64: grid blocks / (active blocks x SMs)
    blocks_per_sm: np.ndarray  # float64: grid blocks / SMs


def _round_up(x: np.ndarray, unit: int) -> np.ndarray:
    return -(-x // unit) * unit


def compute(
    limits: DeviceLimits,
    threads_per_block: np.ndarray,
    registers_per_thread: np.ndarray,
    shared_bytes_per_block: np.ndarray,
    grid_blocks: np.ndarray | None = None,
) -> OccupancyResult:
    """Occupancy of every launch. Inputs are equal-length arrays; NaN/negative inputs give "not computed".

    ``shared_bytes_per_block`` is static + dynamic shared memory (the reserve is added here).
    """
    threads_f = np.asarray(threads_per_block, dtype=np.float64)
    regs_f = np.asarray(registers_per_thread, dtype=np.float64)
    smem_f = np.asarray(shared_bytes_per_block, dtype=np.float64)
    valid = np.isfinite(threads_f) & np.isfinite(regs_f) & np.isfinite(smem_f)
    valid &= (threads_f > 0) & (regs_f >= 0) & (smem_f >= 0)
    valid &= (threads_f <= limits.max_threads_per_block) & (regs_f <= limits.max_regs_per_thread)
    threads = np.where(valid, threads_f, 1).astype(np.int64)
    regs = np.where(valid, regs_f, 0).astype(np.int64)
    smem = np.where(valid, smem_f, 0).astype(np.int64)

    warps_per_block = -(-threads // limits.warp_size)
    limit_warps = limits.max_warps_per_sm // warps_per_block

    regs_per_warp = _round_up(regs * limits.warp_size, limits.reg_alloc_unit)
    sub = limits.reg_sub_partitions
    regs_checked_per_block = regs_per_warp * _round_up(warps_per_block, sub)
    fits_regs = (regs_checked_per_block <= limits.regs_per_block) & (
        regs_per_warp * warps_per_block <= limits.regs_per_block
    )
    warps_by_regs = (limits.regs_per_sm // sub) // np.maximum(regs_per_warp, 1) * sub
    limit_regs = np.where(regs_per_warp > 0, warps_by_regs // warps_per_block, _NO_LIMIT)
    limit_regs = np.where(fits_regs, limit_regs, 0)

    smem_alloc = _round_up(smem + limits.shared_mem_reserved_per_block, limits.shared_mem_alloc_unit)
    smem_block_limit = limits.shared_mem_per_block_optin + limits.shared_mem_reserved_per_block
    limit_smem = np.where(smem_alloc > 0, limits.shared_mem_per_sm // np.maximum(smem_alloc, 1), _NO_LIMIT)
    limit_smem = np.where(smem_alloc <= smem_block_limit, limit_smem, 0)

    limit_blocks = np.full(threads.shape, limits.max_blocks_per_sm, dtype=np.int64)

    stacked = np.stack([limit_warps, limit_regs, limit_smem, limit_blocks])
    active = stacked.min(axis=0)
    limiter = stacked.argmin(axis=0).astype(np.int8)  # first minimum = tie order of LIMITER_NAMES
    valid &= active > 0
    active = np.where(valid, active, -1)
    limiter = np.where(valid, limiter, -1).astype(np.int8)

    theoretical = np.where(valid, active * warps_per_block / limits.max_warps_per_sm, np.nan)

    n = threads.shape[0]
    if grid_blocks is None or limits.sm_count is None:
        blocks_per_sm = np.full(n, np.nan)
    else:
        grid = np.asarray(grid_blocks, dtype=np.float64)
        blocks_per_sm = np.where(np.isfinite(grid) & (grid > 0), grid / limits.sm_count, np.nan)
    resident = np.minimum(active.astype(np.float64), blocks_per_sm)
    estimated = np.where(valid, resident * threads / limits.max_threads_per_sm, np.nan)
    waves = np.where(valid, blocks_per_sm / np.maximum(active, 1), np.nan)
    return OccupancyResult(active, limiter, theoretical, estimated, waves, blocks_per_sm)


def shape_occupancy(limits: DeviceLimits, threads_per_block: np.ndarray) -> np.ndarray:
    """Occupancy the block shape alone allows, whatever the registers and shared memory.

    min(floor(max warps per SM / warps per block), max blocks per SM) x threads per block / max threads per SM:
    thread slots an SM can fill with blocks of this size. Tiny blocks hit the blocks-per-SM cap (16 threads on
    cc 8.0: 32 x 16 / 2048 = 25%), partial warps waste lanes, big blocks waste the warps left over. NaN where
    the size is invalid for the device.
    """
    threads = np.asarray(threads_per_block, dtype=np.float64)
    ok = np.isfinite(threads) & (threads > 0) & (threads <= limits.max_threads_per_block)
    t = np.where(ok, threads, 1).astype(np.int64)
    warps_per_block = -(-t // limits.warp_size)
    blocks = np.minimum(limits.max_warps_per_sm // warps_per_block, limits.max_blocks_per_sm)
    return np.where(ok & (blocks > 0), blocks * t / limits.max_threads_per_sm, np.nan)


def single(
    limits: DeviceLimits,
    threads_per_block: int,
    registers_per_thread: int,
    shared_bytes_per_block: int,
    grid_blocks: int | None = None,
) -> dict[str, Any]:
    """One launch as a dict (for docs, tests and interactive use)."""
    res = compute(
        limits,
        np.array([threads_per_block]),
        np.array([registers_per_thread]),
        np.array([shared_bytes_per_block]),
        None if grid_blocks is None else np.array([grid_blocks]),
    )
    code = int(res.limiter[0])
    return {
        "active_blocks_per_sm": int(res.active_blocks_per_sm[0]),
        "limiter": LIMITER_NAMES[code] if code >= 0 else None,
        "theoretical": _f(res.theoretical[0]),
        "estimated_achieved": _f(res.estimated_achieved[0]),
        "waves": _f(res.waves[0]),
    }


def _f(x: float) -> float | None:
    return None if not np.isfinite(x) else float(x)
