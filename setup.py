"""The one compiled part of tracelens: the Kineto event scanner (``tracelens/ingest/_kineto_scan.c``).

Optional: where no C compiler is available the install still succeeds and the Kineto reader uses msgspec
(same table, slower). Everything else is declared in ``pyproject.toml``.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("tracelens.ingest._kineto_scan", ["tracelens/ingest/_kineto_scan.c"], optional=True)])
