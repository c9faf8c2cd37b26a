"""The install: what `pip install -e .` (no extras) gives is everything the commands need.

Every third-party module imported anywhere in ``tracelens/`` must be a core dependency in pyproject.toml,
except the few that only the framework templates, the NVTX annotation helpers and the Dask engine import
(EXTRA_ONLY: which files may import them, and which extras must provide them). Every core dependency must
be imported by something (no dead weight in the install). The real install is checked end to end by
``.ci/core_install_check`` (a fresh venv, the README's first command, every command); these tests catch
the same mistakes statically, in the ordinary test run.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "tracelens"

try:
    import tomllib
except ImportError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

# Import name -> distribution name, where they differ.
DISTRIBUTION = {
    "google": "protobuf",
    "adbc_driver_sqlite": "adbc-driver-sqlite",
    "tensorflow": "tensorflow-cpu",
}

# Modules that are not core dependencies: the files that may import them (relative to tracelens/) and the
# extras that must install them. Nothing a command (analyze, report, convert, diff) runs may import these.
EXTRA_ONLY = {
    "torch": ({"templates/pytorch_train.py"}, {"torch", "test"}),
    "tensorflow": ({"templates/tf_train.py"}, {"tf", "test"}),
    # analyze --engine dask, behind an ImportError that names the extra
    "dask": ({"run/executors.py"}, {"distributed", "test"}),
}


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_name(spec: str) -> str:
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", spec)
    assert match, spec
    return _normalize(match.group(1))


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _core() -> set[str]:
    return {_requirement_name(spec) for spec in _project()["dependencies"]}


def _extras() -> dict[str, list[str]]:
    return _project()["optional-dependencies"]


def _third_party_imports() -> dict[str, set[str]]:
    """Top-level module -> files (relative to tracelens/) importing it, for every non-stdlib import."""
    found: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            else:
                continue
            for module in modules:
                top = module.split(".")[0]
                if top in sys.stdlib_module_names or top in ("tracelens", "__future__"):
                    continue
                found.setdefault(top, set()).add(path.relative_to(PACKAGE).as_posix())
    return found


def _distribution(module: str) -> str:
    return _normalize(DISTRIBUTION.get(module, module))


def test_every_import_is_a_core_dependency_or_an_extra_only_import() -> None:
    core = _core()
    problems = []
    for module, files in sorted(_third_party_imports().items()):
        if _distribution(module) in core:
            continue
        if module in EXTRA_ONLY:
            allowed, _ = EXTRA_ONLY[module]
            if files - allowed:
                problems.append(f"{module} (not a core dependency) imported by {sorted(files - allowed)}")
            continue
        problems.append(
            f"{module} imported by {sorted(files)} is not a core dependency in pyproject.toml "
            f"(add {_distribution(module)!r} to [project] dependencies, or to DISTRIBUTION above "
            "if its distribution has another name)"
        )
    assert not problems, "\n".join(problems)


def test_every_core_dependency_is_imported() -> None:
    imported = {_distribution(module) for module in _third_party_imports()}
    unused = sorted(_core() - imported)
    assert not unused, f"core dependencies nothing in tracelens/ imports: {unused}"


def test_extra_only_modules_are_in_their_extras_and_not_core() -> None:
    extras = _extras()
    core = _core()
    for module, (_, needed_in) in EXTRA_ONLY.items():
        dist = _distribution(module)
        assert dist not in core, f"{dist} is core: take it out of EXTRA_ONLY"
        for extra in needed_in:
            names = {_requirement_name(spec) for spec in extras.get(extra, [])}
            assert dist in names, f"extra {extra!r} must install {dist} (for {module})"


def test_the_fast_engines_are_core() -> None:
    # The Nsight reader without ADBC (sqlite3 fetchall), multi-rank runs and big Kineto files without DuckDB,
    # gzip without ISA-L: each works but slowly or not at all; none may hide behind an extra.
    assert {"duckdb", "adbc-driver-sqlite", "isal", "msgspec"} <= _core()


def test_torch_extra_takes_the_users_torch_and_tests_pin_the_cpu_build() -> None:
    extras = _extras()
    torch_specs = [spec for spec in extras["torch"] if _requirement_name(spec) == "torch"]
    assert torch_specs and not any("==" in spec for spec in torch_specs), torch_specs
    assert "torch==2.13.0" in [spec.replace(" ", "") for spec in extras["test"]]


def test_readme_first_command_installs_without_extras_and_ci_checks_it() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first = re.search(r"^```bash\n(.+)$", readme, re.MULTILINE)
    assert first, "README.md opens with a bash block"
    assert first.group(1).startswith("python3 -m pip install -e . && tracelens analyze "), first.group(1)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "core_install_check" in ci
    assert (ROOT / ".ci" / "core_install_check").is_file()
