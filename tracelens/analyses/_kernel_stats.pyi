# Type stub of the compiled per-name moments (_kernel_stats.c; optional: absent when no C compiler was found at
# install time, then kernels.py groups with pandas).
from typing import Any

def group_moments(
    codes: Any, values: Any, count: Any, total: Any, lo: Any, hi: Any, mean: Any, m2: Any
) -> None: ...
