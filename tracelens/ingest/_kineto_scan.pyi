# Type stub of the compiled Kineto scanner (_kineto_scan.c; optional: absent when no C compiler was found at
# install time). Only what Python code reads by name is declared; the scan functions are looked up at run time.
from typing import Any

N_FLOATS: int
N_STRINGS: int
N_ROW_FLOATS: int
N_OP_FLOATS: int
N_OP_STRINGS: int

def __getattr__(name: str) -> Any: ...
