import gc
import sys

from .cli import main

status = main()
# The interpreter's exit runs full garbage collections over every object still alive (the modules of numpy,
# pyarrow, pandas and tracelens: ~60 ms of the analyze process on the 406 MB Kineto trace). Nothing left at this
# point needs the collector to be freed or finalized (tracelens's files are closed, its output is written and
# stdout is flushed by the interpreter whatever the collector does), so the survivors are moved out of its reach.
gc.freeze()
sys.exit(status)
