"""Module boundaries of the package, checked on its source (an AST walk; nothing is imported).

* No tracelens module uses a private name (one starting with ``_``) of another tracelens module:
  ``from .x import _y``, ``from tracelens.x import _y``, or ``x._y`` where ``x`` is an imported tracelens
  module. Dunder names are public (``__version__``), and so are the compiled helpers ``_kineto_scan``, ``_sqlite_pages``,
  ``_replay_solve``, ``_op_tree``, ``_array_pages``, ``_merge_search``, ``_kernel_stats`` and ``_start_merge`` (extension modules whose names are private only so that nobody
  imports them from outside).
  A helper two modules need is made public in one of them, or moved to a shared module
  (:mod:`tracelens.values`, :mod:`tracelens.ingest.tf_common`).
* The two TensorFlow readers share :mod:`tracelens.ingest.tf_common` and do not import each other.
* Every import follows the layer table of docs/architecture.md (read from the page): a module imports only
  its own layer and the layers its row allows, the rows allow only rows above them (no cycle between layers),
  and every module is in some layer.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "tracelens"
EXEMPT = frozenset(
    {
        "_kineto_scan",
        "_replay_solve",
        "_sqlite_pages",
        "_op_tree",
        "_array_pages",
        "_merge_search",
        "_kernel_stats",
        "_start_merge",
    }
)

# Violations in files still being reworked by their owners (analyses/__init__.py, report/, diff.py,
# run/, cli.py, ingest/kineto*), each "importing module: used module.name". The test fails
# on any violation not listed and on any entry that no longer occurs: remove an entry when it is fixed.
KNOWN: frozenset[str] = frozenset()


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_module(dotted: str) -> bool:
    """``dotted`` names a module or package of tracelens (source, or a compiled extension)."""
    if dotted != "tracelens" and not dotted.startswith("tracelens."):
        return False
    where = ROOT.joinpath(*dotted.split("."))
    return (
        where.with_suffix(".py").is_file()
        or (where / "__init__.py").is_file()
        or any(where.parent.glob(f"{where.name}.*.so"))
        or any(where.parent.glob(f"{where.name}.*.pyd"))
    )


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__")) and name not in EXEMPT


def _source_module(node: ast.ImportFrom, current: str, is_package: bool) -> str:
    """The absolute module an ``ImportFrom`` reads from (relative imports resolved against ``current``)."""
    if node.level == 0:
        return node.module or ""
    base = current.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def scan(source: str, current: str, is_package: bool = False) -> tuple[list[str], set[str]]:
    """Private tracelens names ``source`` uses (``used module.name``, one per use) and the tracelens
    modules it imports (anywhere in the file, function bodies included)."""
    tree = ast.parse(source)
    bound: dict[str, str] = {}  # local name -> tracelens module it is bound to
    used: list[str] = []
    imports: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = _source_module(node, current, is_package)
            if module != "tracelens" and not module.startswith("tracelens."):
                continue
            for alias in node.names:
                full = f"{module}.{alias.name}"
                if _is_module(full):
                    bound[alias.asname or alias.name] = full
                    imports.add(full)
                else:
                    imports.add(module)
                if _private(alias.name) and module.rsplit(".", 1)[-1] not in EXEMPT:
                    used.append(full)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "tracelens" or alias.name.startswith("tracelens."):
                    imports.add(alias.name)
                    if alias.asname:
                        bound[alias.asname] = alias.name
                    else:
                        bound["tracelens"] = "tracelens"

    def module_of(expr: ast.expr) -> str | None:
        if isinstance(expr, ast.Name):
            return bound.get(expr.id)
        if isinstance(expr, ast.Attribute):
            parent = module_of(expr.value)
            if parent and _is_module(f"{parent}.{expr.attr}"):
                return f"{parent}.{expr.attr}"
        return None

    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            module = module_of(node.value)
            if module is not None:
                used.append(f"{module}.{node.attr}")
    return used, imports


def _package_files() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def _package_scan() -> tuple[set[str], dict[str, set[str]]]:
    violations: set[str] = set()
    graph: dict[str, set[str]] = {}
    for path in _package_files():
        current = _module_name(path)
        used, imports = scan(path.read_text(encoding="utf-8"), current, path.name == "__init__.py")
        violations.update(f"{current}: {name}" for name in used)
        graph[current] = imports - {current}
    return violations, graph


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in graph.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def test_no_private_names_across_modules() -> None:
    violations, _ = _package_scan()
    new = sorted(violations - KNOWN)
    assert not new, (
        "private names of another tracelens module (make them public or move them):\n" + "\n".join(new)
    )
    fixed = sorted(KNOWN - violations)
    assert not fixed, "fixed: remove from KNOWN in tests/test_architecture.py:\n" + "\n".join(fixed)


def _collapsed(graph: dict[str, set[str]], package: str) -> dict[str, set[str]]:
    """``graph`` with ``package`` and its modules as one node (what any of them imports, outside it)."""

    def node(name: str) -> str:
        return package if name == package or name.startswith(package + ".") else name

    out: dict[str, set[str]] = {}
    for module, imports in graph.items():
        out.setdefault(node(module), set()).update(node(i) for i in imports)
    out[package].discard(package)
    return out


def test_tf_readers_do_not_import_each_other() -> None:
    # Explicit imports only (an import of a submodule also runs its package's __init__; that is not counted).
    _, graph = _package_scan()
    xplane, legacy, common = (
        "tracelens.ingest.xplane",
        "tracelens.ingest.tf_trace_json",
        "tracelens.ingest.tf_common",
    )
    graph = _collapsed(graph, xplane)  # the xplane reader is a package: its modules count as one reader
    assert legacy not in graph[xplane] and xplane not in graph[legacy]
    assert common in graph[xplane] and common in graph[legacy]
    assert not ({xplane, legacy} & _reachable(graph, common))
    assert not (legacy in _reachable(graph, xplane) and xplane in _reachable(graph, legacy)), "import cycle"


ARCHITECTURE_PAGE = ROOT / "docs" / "architecture.md"
# Imports that break the layer table, each "importing module -> imported module" with the reason it is still
# there. The test fails on a violation not listed and on an entry that no longer occurs (then remove it).
KNOWN_LAYER_EXCEPTIONS: dict[str, str] = {}


def _spec_modules(spec: str) -> tuple[str, bool]:
    """A module cell of the table as (dotted name, covers submodules): `ingest/` is the package and all its
    modules, `trace.py` one module, `__init__.py` the package itself, `analyses/__init__.py` that package only."""
    path = spec.strip()
    if path.endswith("/"):
        return "tracelens." + path.rstrip("/").replace("/", "."), True
    parts = path.removesuffix(".py").split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["tracelens", *parts]), False


def layer_table(
    text: str,
) -> tuple[
    list[str], dict[str, list[tuple[str, bool]]], dict[str, set[str]], dict[str, set[tuple[str, bool]]]
]:
    """The layer table of the architecture page: layer names in row order, each layer's modules, the layers
    each may import, and single modules (not whole layers) each may also import."""
    order: list[str] = []
    modules: dict[str, list[tuple[str, bool]]] = {}
    may: dict[str, set[str]] = {}
    extra: dict[str, set[tuple[str, bool]]] = {}
    lines = text.splitlines()
    header = lines.index("| layer | modules | may import |")
    for line in lines[header + 2 :]:  # after the |---| line, up to the end of the table
        if not line.startswith("|"):
            break
        layer, where, allowed = (c.strip() for c in line.strip().strip("|").split("|"))
        order.append(layer)
        modules[layer] = [_spec_modules(s) for s in re.findall(r"`([^`]+)`", where)]
        extra[layer] = {_spec_modules(s) for s in re.findall(r"`([^`]+)`", allowed)}
        words = set(re.findall(r"[a-z]+", re.sub(r"`[^`]+`|\([^)]*\)", "", allowed)))
        may[layer] = set(order[:-1]) if "every" in words else words & set(order)
    return order, modules, may, extra


def _layer_of(module: str, modules: dict[str, list[tuple[str, bool]]]) -> str | None:
    """The layer whose table entry names ``module`` most specifically."""
    best, best_len = None, -1
    for layer, specs in modules.items():
        for name, deep in specs:
            if (module == name or (deep and module.startswith(name + "."))) and len(name) > best_len:
                best, best_len = layer, len(name)
    return best


def layer_violations(graph: dict[str, set[str]], text: str) -> tuple[set[str], list[str]]:
    """Imports the table forbids ("importer -> imported"), and modules in no layer."""
    _, modules, may, extra = layer_table(text)
    unplaced = sorted(m for m in graph if _layer_of(m, modules) is None)
    bad = set()
    for importer, imported in graph.items():
        own = _layer_of(importer, modules)
        for target in imported:
            theirs = _layer_of(target, modules)
            named = any(
                target == name or (deep and target.startswith(name + ".")) for name, deep in extra[own]
            )
            if own is None or theirs is None or theirs == own or theirs in may[own] or named:
                continue
            bad.add(f"{importer} -> {target}")
    return bad, unplaced


def test_imports_follow_the_layer_table() -> None:
    _, graph = _package_scan()
    violations, unplaced = layer_violations(graph, ARCHITECTURE_PAGE.read_text(encoding="utf-8"))
    assert not unplaced, (
        f"modules in no layer of docs/architecture.md's table (add them to a row): {unplaced}"
    )
    new = sorted(violations - KNOWN_LAYER_EXCEPTIONS.keys())
    assert not new, "imports against the layer table in docs/architecture.md:\n" + "\n".join(new)
    fixed = sorted(KNOWN_LAYER_EXCEPTIONS.keys() - violations)
    assert not fixed, (
        "fixed: remove from KNOWN_LAYER_EXCEPTIONS in tests/test_architecture.py:\n" + "\n".join(fixed)
    )


def test_the_layers_have_no_cycle() -> None:
    """Each row may import only rows above it, and the table names every layer this test relies on."""
    order, modules, may, extra = layer_table(ARCHITECTURE_PAGE.read_text(encoding="utf-8"))
    assert order[:4] == ["base", "trace", "ingest", "document"] and order[-1] == "app"
    for i, layer in enumerate(order):
        assert may[layer] <= set(order[:i]), (
            f"{layer} may import a layer below it: {may[layer] - set(order[:i])}"
        )
        for module, _ in extra[
            layer
        ]:  # a module (or package) allowed beyond the layers: also from a row above
            assert order.index(_layer_of(module, modules)) < i, (layer, module)
    assert may["document"] == {"base"} and "analyses" not in may["trace"] | may["ingest"]
    # report reads the section registry and the cause registry, nothing else of analyses/
    assert extra["report"] == {("tracelens.analyses", False), ("tracelens.analyses.diagnosis", True)}
    assert "analyses" not in may["report"]


def test_the_layer_check_catches_each_kind_of_violation() -> None:
    table = """| layer | modules | may import |
|---|---|---|
| base | `errors.py` | nothing else |
| trace | `trace.py` | base |
| analyses | `analyses/` | base, trace |
| report | `report/` | base, and the registry `analyses/__init__.py` (order) |
| app | `cli.py` | every layer |
"""
    graph = {
        "tracelens.errors": set(),
        "tracelens.trace": {"tracelens.errors"},
        "tracelens.analyses": {"tracelens.trace", "tracelens.analyses.gaps"},
        "tracelens.analyses.gaps": {"tracelens.trace", "tracelens.report.units"},  # upward: a violation
        "tracelens.report.units": {"tracelens.analyses"},  # the registry: allowed
        "tracelens.report.markdown": {"tracelens.analyses.gaps", "tracelens.cli"},  # two violations
        "tracelens.cli": {"tracelens.report.markdown", "tracelens.analyses.gaps", "tracelens.errors"},
        "tracelens.stray": set(),  # in no layer
    }
    violations, unplaced = layer_violations(graph, table)
    assert violations == {
        "tracelens.analyses.gaps -> tracelens.report.units",
        "tracelens.report.markdown -> tracelens.analyses.gaps",
        "tracelens.report.markdown -> tracelens.cli",
    }
    assert unplaced == ["tracelens.stray"]


# Modules that still define their own int_or_none instead of tracelens.values.int_or_none (none left:
# run/crossrank's rounding twin is named for what it does, _rounded_int). The test fails on a new copy.
PENDING_INT_OR_NONE_AREAS: tuple[str, ...] = ()
PENDING_INT_OR_NONE = 0


def test_one_int_or_none() -> None:
    copies = []
    for path in _package_files():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        copies += [
            _module_name(path)
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef) and node.name.lstrip("_") in ("int_or_none", "int")
        ]
    copies.remove("tracelens.values")
    stray = [m for m in copies if not m.startswith(PENDING_INT_OR_NONE_AREAS)]
    assert not stray, f"use tracelens.values.int_or_none instead of a copy in {stray}"
    assert len(copies) == PENDING_INT_OR_NONE, (
        f"copies left: {copies}; set PENDING_INT_OR_NONE to {len(copies)}"
    )


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from .xplane import _kernel_columns", ["tracelens.ingest.xplane._kernel_columns"]),
        (
            "from tracelens.ingest.xplane import _strip_version as s",
            ["tracelens.ingest.xplane._strip_version"],
        ),
        ("from . import xplane\nxplane._detect_framework([])", ["tracelens.ingest.xplane._detect_framework"]),
        ("import tracelens.ingest.xplane as xp\nxp._lookup", ["tracelens.ingest.xplane._lookup"]),
        ("import tracelens\ntracelens.ingest.xplane._lookup", ["tracelens.ingest.xplane._lookup"]),
        ("from .. import trace\ndef f():\n    return trace._fill_depth", ["tracelens.trace._fill_depth"]),
        ("def f():\n    from ..values import _x\n", ["tracelens.values._x"]),
        ("from .. import __version__", []),
        ("from . import _kineto_scan\n_kineto_scan.scan", []),
        ("from . import xplane\nxplane.__name__\nxplane.read", []),
        ("from .xplane import read\nread._cache", []),  # attributes of functions/classes are not modules'
        ("import numpy as np\nnp._NoValue", []),
    ],
)
def test_scan_finds_each_form(source: str, expected: list[str]) -> None:
    used, _ = scan(source, "tracelens.ingest.tf_trace_json")
    assert used == expected


LONG_MODULE_LINES = 600  # docs/architecture.md: a longer module says why in its docstring


def test_a_long_module_says_why_in_its_docstring() -> None:
    """Every module over LONG_MODULE_LINES lines gives its reason in its docstring (a sentence naming its length
    or saying it stays one module on purpose)."""
    unexplained = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if text.count("\n") <= LONG_MODULE_LINES:
            continue
        doc = ast.get_docstring(ast.parse(text)) or ""
        if not re.search(r"\d+ lines|one module|on purpose", doc):
            unexplained.append(f"{path.relative_to(PACKAGE)} ({text.count(chr(10))} lines)")
    assert not unexplained, (
        f"modules over {LONG_MODULE_LINES} lines with no reason in their docstring: {unexplained}"
    )


def test_analyses_leave_the_trace_as_it_was() -> None:
    """Analyses are functions of the trace: running every section adds nothing to the Trace object (the shared
    derived values live beside it, keyed by identity, and go when the trace goes)."""
    import gc

    import tracelens
    from tracelens.analyses import derived

    trace = tracelens.load(ROOT / "fixtures" / "demo.pt.trace.json.gz")
    before = set(vars(trace))
    tracelens.analyze(trace)
    added = set(vars(trace)) - before
    assert added <= {"events"}, added  # the Arrow table, built on demand
    key = id(trace)
    assert key in derived._DERIVED
    del trace
    gc.collect()
    assert key not in derived._DERIVED
