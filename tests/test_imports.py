"""`team/` has no import cycle: the packages layer, so each can be read (and replaced)
without the ones above it. Every import counts, function-level ones too (a lazy import
hides a cycle, it does not remove it); only `if TYPE_CHECKING:` blocks are left out."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "team"


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING"
    )


def imports(path: Path, modules: set[str], me: str) -> set[str]:
    """The modules of `modules` that `path` imports at run time."""
    found: set[str] = set()
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*up, base] if base else up)
            subs = {f"{base}.{a.name}" for a in node.names} & modules
            found.update(subs or {base})  # `from pkg import module` needs the module
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return {m for m in found if m in modules and m != me}


def graph(root: Path) -> dict[str, set[str]]:
    files = {module_name(p, root.parent): p for p in root.rglob("*.py")}
    mods = set(files)
    return {m: imports(p, mods, m) for m, p in files.items()}


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(g[v]):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            strong(v)
    return out


def test_team_has_no_import_cycle():
    assert cycles(graph(PACKAGE)) == []


def test_the_check_sees_a_cycle_even_through_a_lazy_import(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg.b import thing\n")
    (pkg / "b.py").write_text("def thing():\n    from pkg import a\n")
    (pkg / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import a\n"
    )
    assert cycles(graph(pkg)) == [["pkg.a", "pkg.b"]]


def packages(g: dict[str, set[str]]) -> dict[str, set[str]]:
    """The module graph folded to packages: `team.mailbox.maildir` counts as `team.mailbox`
    (a module at the top, such as `team.workspace.config`, is a package of its own)."""

    def top(module: str) -> str:
        return ".".join(module.split(".")[:2])

    out: dict[str, set[str]] = {}
    for m, deps in g.items():
        out.setdefault(top(m), set()).update(top(d) for d in deps)
    return {p: deps - {p} for p, deps in out.items()}


def test_team_packages_layer_without_a_cycle():
    # acyclic modules can still cross packages both ways (mailbox -> llm -> mailbox):
    # then neither package can be read or replaced without the other
    assert cycles(packages(graph(PACKAGE))) == []


def test_the_package_check_sees_modules_crossing_both_ways(tmp_path):
    root = tmp_path / "pkg"
    for sub in ("low", "high"):
        (root / sub).mkdir(parents=True)
        (root / sub / "__init__.py").write_text("")
    (root / "__init__.py").write_text("")
    (root / "low" / "a.py").write_text("X = 1\n")
    (root / "high" / "b.py").write_text("from pkg.low.a import X\n")
    (root / "low" / "c.py").write_text("from pkg.high.b import X\n")  # acyclic as modules
    g = graph(root)
    assert cycles(g) == []
    assert cycles(packages(g)) == [["pkg.high", "pkg.low"]]


def test_the_cli_loads_no_library_before_a_command_runs():
    """Each `team ...` is a new process: loading the commands must not load the runtime,
    the SDK or the backends (a command imports what it uses; docs/design.md, "CLI")."""
    code = "import sys, team.cli.app; print('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    heavy = ("anthropic", "pydantic", "redis", "rich", "watchfiles")
    ours = ("team.agents", "team.backends", "team.compaction", "team.mailbox", "team.study")
    loaded = [m for m in out if m.split(".")[0] in heavy or m.startswith(ours)]
    assert loaded == []
