# Type stub of the compiled start merge (_start_merge.c; optional: absent when no C compiler was found at install
# time, then ingest/kineto/start_order.py sorts all the starts with numpy, and ingest/kineto/placing.py builds and
# searches the launch index with numpy).
import numpy as np

def pack(
    start: np.ndarray, gpu_rows: np.ndarray, order: np.ndarray, relative: np.ndarray, shift: int
) -> int | None: ...
def merge(
    order: np.ndarray,
    relative: np.ndarray,
    shift: int,
    gpu_rows: np.ndarray,
    kept: np.ndarray,
    at: np.ndarray,
) -> None: ...
def exact_int64(floats: np.ndarray, out: np.ndarray) -> bool: ...
def pid_lookup(ids: np.ndarray, pids: np.ndarray, needles: np.ndarray, out: np.ndarray) -> int: ...
def id_keys(floats: np.ndarray, keys: np.ndarray, shift: int) -> bool: ...
def split_keys(keys: np.ndarray, pid: np.ndarray, pids: np.ndarray, shift: int) -> bool: ...
