"""The house's floors: no import climbs from a lower floor to a higher one.

The floors, bottom up (``docs/ARCHITECTURE.md`` says what lives on each):

0. ``core``: the machine, ISA, vocabulary, record formats, errors;
1. ``host`` (NVRTC and the driver) and ``compiler`` (the circuit's weights), side by side;
2. ``runtime``: where every launch happens;
3. ``splice``: the circuit inside a Qwen3.5 base;
4. ``chat``: the chat loop and its tools;
5. ``cli`` and ``tui``: the command line and the dashboard (the package root too).

The check reads every module with :mod:`ast` (lazy imports inside functions included, so
hiding an import in a function does not hide it from the floors). ``python -m
tests.core.test_floors`` prints the floor-to-floor import counts.
"""

from __future__ import annotations

import ast
import collections
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = "qwengpu_mlx"
# installed name -> folder: compiler/, host/ and tui/ sit at the top of the repository
SOURCE_DIRS = {PACKAGE: REPO / "qwengpu_mlx", f"{PACKAGE}.compiler": REPO / "compiler",
               f"{PACKAGE}.host": REPO / "host", f"{PACKAGE}.tui": REPO / "tui"}
FLOORS = {"core": 0, "host": 1, "compiler": 1, "runtime": 2, "splice": 3, "chat": 4, "cli": 5, "tui": 5}
TOP = max(FLOORS.values())


def modules() -> dict[str, Path]:
    """Every project module's dotted name and file."""
    out = {}
    for pkg, folder in SOURCE_DIRS.items():
        for f in folder.rglob("*.py"):
            parts = [p for p in f.relative_to(folder).with_suffix("").parts if p != "__init__"]
            out[".".join([pkg, *parts])] = f
    return out


def part_of(module: str) -> str:
    """The floor's package a module belongs to ('' for the package root)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in FLOORS else ""


def floor_of(module: str) -> int:
    return FLOORS.get(part_of(module), TOP)


def imports(path: Path) -> list[tuple[int, str]]:
    """(line, imported module) for every project import in the file, at any depth."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] if node.module != PACKAGE else [f"{PACKAGE}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        out += [(node.lineno, n) for n in names if n == PACKAGE or n.startswith(PACKAGE + ".")]
    return out


def allowed(src: str, dst: str) -> bool:
    """Down the floors, within one package, or between the two top-floor packages."""
    a, b = part_of(src), part_of(dst)
    if a == b or b == "":
        return a == b or floor_of(src) == TOP
    return floor_of(dst) < floor_of(src) or floor_of(src) == floor_of(dst) == TOP


def climbing_imports() -> list[str]:
    bad = []
    for name, path in sorted(modules().items()):
        for line, dst in imports(path):
            if not allowed(name, dst):
                bad.append(f"{path.relative_to(REPO)}:{line}: {name} (floor {floor_of(name)}) imports "
                           f"{dst} (floor {floor_of(dst)})")
    return bad


def relative_imports() -> list[str]:
    """Relative imports hide which floor they reach; the project writes them out."""
    bad = []
    for path in sorted(modules().values()):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.level:
                bad.append(f"{path.relative_to(REPO)}:{node.lineno}")
    return bad


def _block_above(lines: list[str], index: int) -> list[str]:
    """The comment and import lines right above ``lines[index]`` (a lazy import's reason)."""
    out = []
    while index > 0 and lines[index - 1].strip().startswith(("#", "from ", "import ")):
        index -= 1
        out.append(lines[index])
    return out


def unexplained_lazy_imports() -> list[str]:
    """Imports inside functions hide loops and the house's structure; one is kept only where
    start-up time needs it, and says so: a comment with "lazy" on its line, in the comments
    and imports right above it, or on its function's ``def`` line."""
    bad = []
    for path in sorted(modules().values()):
        lines = path.read_text().splitlines()
        for fn in ast.walk(ast.parse("\n".join(lines), str(path))):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    near = [lines[node.lineno - 1], lines[fn.lineno - 1], *_block_above(lines, node.lineno - 1)]
                    if not any("#" in t and "lazy" in t.split("#", 1)[1].lower() for t in near):
                        bad.append(f"{path.relative_to(REPO)}:{node.lineno}: {ast.unparse(node)}")
    return sorted(set(bad))


def test_imports_inside_functions_say_why():
    bad = unexplained_lazy_imports()
    assert not bad, "imports inside functions without a comment saying why they are lazy:\n" + "\n".join(bad)


def test_no_import_climbs_a_floor():
    bad = climbing_imports()
    assert not bad, "imports from a lower floor to a higher one:\n" + "\n".join(bad)


def test_imports_are_absolute():
    bad = relative_imports()
    assert not bad, "relative imports:\n" + "\n".join(bad)


def test_every_module_is_on_a_floor():
    """A new top-level package must be given a floor, not fall silently onto the top one."""
    names = modules()
    assert len(names) > 100  # the walk found the project, not an empty folder
    stray = sorted(n for n in names if part_of(n) == "" and n not in (PACKAGE, f"{PACKAGE}.__main__"))
    assert not stray, f"modules on no floor: {stray}"


def test_the_check_catches_a_climb():
    """The rule itself, on made-up names: down is fine, up and sideways on floor 1 are not."""
    assert allowed(f"{PACKAGE}.runtime.store", f"{PACKAGE}.core.machine")
    assert allowed(f"{PACKAGE}.cli.main", f"{PACKAGE}.tui.app")
    assert not allowed(f"{PACKAGE}.host.launch", f"{PACKAGE}.runtime")
    assert not allowed(f"{PACKAGE}.host.launch", PACKAGE)
    assert not allowed(f"{PACKAGE}.host.lowering", f"{PACKAGE}.compiler.levels")
    assert not allowed(f"{PACKAGE}.core.isa", f"{PACKAGE}.host.ptx")


def floor_graph() -> collections.Counter:
    graph = collections.Counter()
    for name, path in modules().items():
        for _, dst in imports(path):
            if part_of(name) != part_of(dst):
                graph[(part_of(name) or "(root)", part_of(dst) or "(root)")] += 1
    return graph


if __name__ == "__main__":
    for (a, b), n in sorted(floor_graph().items(), key=lambda kv: (-FLOORS.get(kv[0][0], TOP), kv[0][1])):
        print(f"{a:>8} ({FLOORS.get(a, TOP)}) -> {b:<8} ({FLOORS.get(b, TOP)}) {n:4d}")
    bad = climbing_imports()
    print(f"{len(modules())} modules, {len(bad)} climbing imports, "
          f"{len(unexplained_lazy_imports())} unexplained imports inside functions")
    for line in bad:
        print("  " + line)
