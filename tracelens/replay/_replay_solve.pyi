# Type stub of the compiled replay solver (_replay_solve.c; optional: absent when no C compiler was found at
# install time, then engine.solve uses the numpy batches).
from typing import Any

def solve_in_order(
    order: Any,
    chain_first: Any,
    lag: Any,
    anchor: Any,
    recorded: Any,
    e_ptr: Any,
    e_src: Any,
    e_lag: Any,
    e_stale: Any,
    out: Any,
) -> None: ...
