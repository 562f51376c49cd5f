"""bot/'s packages import one way, top to bottom: Slack in, answering, Slack out (docs/DESIGN.md, the module map).

Read from the source with `ast`, every import counted, those inside functions too (a cycle hidden in a function
is still a cycle). kb_index/ and citebot_core/ never import bot/.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Top to bottom: a package may import only packages of a lower layer (bot/'s own top-level modules, config.py,
# models.py, i18n.py and the like, are everyone's; cli.py and wiring.py are the composition roots).
LAYERS = [
    {"commands"},
    {"inbound"},
    {"home", "answering"},
    {"helpdesk"},
    {"review"},
    {"jobs", "access"},
    {"slack"},
    {"store", "answer"},
]
LAYER_OF = {package: n for n, layer in enumerate(LAYERS) for package in layer}


def imported_modules(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found += [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names]
    return found


def package_of(module: str) -> str | None:
    """bot.<package> of a module, None for bot's own top-level modules and anything outside bot/."""
    parts = module.split(".")
    if parts[0] != "bot" or len(parts) < 2 or not (ROOT / "bot" / parts[1]).is_dir():
        return None
    return parts[1]


def upward_imports() -> list[str]:
    wrong = []
    for path in sorted((ROOT / "bot").rglob("*.py")):
        source = package_of(".".join(path.relative_to(ROOT).with_suffix("").parts))
        if source is None:
            continue
        for module in imported_modules(path):
            target = package_of(module)
            if target is None or target == source:
                continue
            if LAYER_OF[target] <= LAYER_OF[source]:
                wrong.append(f"{path.relative_to(ROOT)} imports {module} ({source} -> {target})")
    return sorted(set(wrong))


def test_every_package_of_bot_has_its_layer():
    packages = {p.name for p in (ROOT / "bot").iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert packages == set(LAYER_OF)


def test_bots_packages_import_only_downwards():
    assert upward_imports() == []


def test_an_import_upwards_is_found(tmp_path, monkeypatch):
    # The check itself: a module of slack/ (outbound) importing inbound/ is one.
    fake = tmp_path / "bot"
    for package in LAYER_OF:
        (fake / package).mkdir(parents=True)
        (fake / package / "__init__.py").write_text("")
    (fake / "slack" / "replies.py").write_text("def f():\n    from bot.inbound.intake import AppDeps\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert upward_imports() == ["bot/slack/replies.py imports bot.inbound.intake (slack -> inbound)",
                                "bot/slack/replies.py imports bot.inbound.intake.AppDeps (slack -> inbound)"]


def test_the_index_and_the_core_never_import_the_bot():
    for folder in ("kb_index", "citebot_core"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            assert not [m for m in imported_modules(path) if m == "bot" or m.startswith("bot.")], path
