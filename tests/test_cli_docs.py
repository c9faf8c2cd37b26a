"""docs/cli.md is generated from the live --help and documents every command."""

from __future__ import annotations

import importlib.util
import re

from tests.conftest import ROOT
from tracelens.cli import cli


def _generator():
    spec = importlib.util.spec_from_file_location("gen_cli_docs", ROOT / "docs" / "gen_cli_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cli_md_is_up_to_date() -> None:
    generated = _generator().render()
    current = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert current == generated, "docs/cli.md is stale: run python3 docs/gen_cli_docs.py"


def test_every_command_and_option_is_documented() -> None:
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    headings = set(re.findall(r"^## tracelens (\S+)$", text, flags=re.M))
    assert headings == set(cli.commands)
    for name, command in cli.commands.items():
        section = text.split(f"## tracelens {name}\n", 1)[1].split("\n## ", 1)[0]
        assert f"Usage: tracelens {name}" in section
        for param in command.params:
            for opt in getattr(param, "opts", []):
                if opt.startswith("-"):
                    assert opt in section, f"{opt} of {name} missing from docs/cli.md"
