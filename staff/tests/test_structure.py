"""The kit's shape: each file small enough to do one job, and no import cycle
among the Python modules (a cycle makes the order of imports matter and
hides which module owns a fact).

  python3 -m pytest staff/tests/test_structure.py -q      (in a git checkout; make check and make check-fast run it)
"""
import ast
import os
import subprocess

from kit.paths import KIT_DIR

MAX_LINES = 400

# Text that is read rather than maintained as code may run long: the
# students' handout and the docs are prose, and data files hold values
# (expected results, the allowlist, the course, settings) one per line,
# where splitting would only scatter one table over several files.
EXEMPT_DIRS = ("handout/", "docs/")
EXEMPT_KINDS = {
    ".md": "prose: READMEs and docs",
    ".txt": "data: expected values, the link allowlist, feedback text",
    ".toml": "data: the course file",
    ".json": "data: settings such as the dev container's",
    ".csv": "data: tables",
    ".ini": "data: tool settings",
    ".idx": "data: IDX images and labels",
    ".gz": "data: archives",
}

PACKAGES = ("kit", "grader", "staff")


def tracked_files():
    out = subprocess.run(["git", "-C", KIT_DIR, "ls-files", "-z"], capture_output=True, check=True)
    return [name for name in out.stdout.decode().split("\0") if name]


def exempt(name: str) -> bool:
    if name.startswith(EXEMPT_DIRS):
        return True
    return os.path.splitext(name)[1].lower() in EXEMPT_KINDS


def line_count(path: str) -> int:
    with open(path, "rb") as f:
        return f.read().count(b"\n")


def test_no_tracked_file_but_prose_and_data_is_over_the_line_limit():
    files = tracked_files()
    assert files, "git ls-files listed nothing: run this test in the kit's git checkout"
    too_long = []
    for name in files:
        path = os.path.join(KIT_DIR, name)
        if exempt(name) or not os.path.isfile(path):
            continue
        lines = line_count(path)
        if lines > MAX_LINES:
            too_long.append(f"{name}: {lines} lines")
    assert not too_long, f"files over {MAX_LINES} lines (split each by job):\n  " + "\n  ".join(too_long)


def module_files():
    """{dotted module name: path} of every Python file of the kit's packages."""
    modules = {}
    for package in PACKAGES:
        for folder, dirs, files in os.walk(os.path.join(KIT_DIR, package)):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for f in files:
                if not f.endswith(".py"):
                    continue
                rel = os.path.relpath(os.path.join(folder, f), KIT_DIR)[:-3]
                parts = rel.split(os.sep)
                if parts[-1] == "__init__":
                    parts.pop()
                modules[".".join(parts)] = os.path.join(folder, f)
    return modules


def imported_modules(name: str, path: str, modules) -> set:
    """The kit's modules that `name` imports anywhere in its text, functions
    included: an import run late still closes a cycle."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), filename=path)
    is_package = os.path.basename(path) == "__init__.py"
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".")
                anchor = anchor[:len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join(anchor + ([base] if base else []))
            # `from pkg import name` imports the module pkg.name when there is one.
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                       for alias in node.names]
        else:
            continue
        for target in targets:
            # `import a.b.c` runs a.b.c; its longest known prefix is the kit's module.
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def find_cycle(graph):
    """One cycle of the graph as a list of nodes (first == last), or None."""
    WHITE, GREY, BLACK = 0, 1, 2
    colour = {node: WHITE for node in graph}
    for start in sorted(graph):
        if colour[start] != WHITE:
            continue
        stack = [(start, iter(sorted(graph[start])))]
        path = [start]
        colour[start] = GREY
        while stack:
            node, edges = stack[-1]
            nxt = next(edges, None)
            if nxt is None:
                colour[node] = BLACK
                stack.pop()
                path.pop()
            elif colour[nxt] == GREY:
                return path[path.index(nxt):] + [nxt]
            elif colour[nxt] == WHITE:
                colour[nxt] = GREY
                stack.append((nxt, iter(sorted(graph[nxt]))))
                path.append(nxt)
    return None


def import_graph():
    modules = module_files()
    return {name: imported_modules(name, path, modules) for name, path in modules.items()}


def all_cycles(graph):
    """One cycle through each tangle of mutually importing modules: remove
    each cycle's first edge and look again, so every tangle is named once."""
    graph = {node: set(edges) for node, edges in graph.items()}
    cycles = []
    while True:
        cycle = find_cycle(graph)
        if cycle is None:
            return cycles
        cycles.append(cycle)
        graph[cycle[0]].discard(cycle[1])


def test_the_cycle_finder_sees_a_cycle_and_only_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None
    assert all_cycles({"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"c"}}) == [["a", "b", "a"], ["c", "d", "c"]]


def test_the_import_graph_sees_imports_inside_functions_and_relative_ones(tmp_path):
    text = "def late():\n    from kit import parts\n    import kit.records.sub\nfrom . import judge\n"
    (tmp_path / "m.py").write_text(text)
    modules = {"kit": "", "kit.parts": "", "kit.records": "", "kit.judge": "", "kit.m": ""}
    assert imported_modules("kit.m", str(tmp_path / "m.py"), modules) == {"kit.parts", "kit.records", "kit.judge"}


def test_no_import_cycle_among_the_kits_modules():
    cycles = all_cycles(import_graph())
    assert not cycles, "import cycles:\n  " + "\n  ".join(" -> ".join(c) for c in cycles)
