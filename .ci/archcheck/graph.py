"""ARCHITECTURE.md's blocks, the module graph of src/ and the checks between them."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .rust import (
    _INNER_CFG_TEST,
    crate_references,
    file_module_path,
    line_of,
    root_references,
    strip_rust,
    test_items,
)

BIN_MODULE = "main"  # src/main.rs
CHECKED_BLOCKS = ("layers", "modules", "test-modules", "crates")
# Layers whose modules no test-only edge of a lower module may reach.
FACE_LAYERS = ("faces", "app")


class DocError(Exception):
    pass


@dataclass
class Doc:
    layers: list[tuple[str, list[str]]]  # top to bottom
    modules: dict[str, set[str]]
    crates: dict[str, list[str]]  # crate -> allowed module paths ("catalogue::index")
    crates_present: bool
    test_modules: dict[str, set[str]] = field(default_factory=dict)  # the test-only edges

    def layer_of(self) -> dict[str, int]:
        return {m: i for i, (_, mods) in enumerate(self.layers) for m in mods}


def fenced_blocks(markdown: str) -> dict[str, list[tuple[int, str]]]:
    """The fenced blocks of `markdown` by info string: {info: [(line number, line), ...]}."""
    blocks: dict[str, list[tuple[int, str]]] = {}
    current: str | None = None
    fence = ""
    for no, line in enumerate(markdown.splitlines(), 1):
        stripped = line.strip()
        if current is None:
            m = re.match(r"^(`{3,}|~{3,})\s*([A-Za-z0-9_-]*)", stripped)
            if m:
                fence, info = m.group(1), m.group(2)
                current = info
                if info in blocks and info in CHECKED_BLOCKS:
                    raise DocError(f"ARCHITECTURE.md:{no}: a second ```{info} block (one is read)")
                blocks.setdefault(info, [])
        elif stripped.startswith(fence) and not stripped[len(fence) :].strip():
            current = None
        else:
            blocks[current].append((no, line))
    if current is not None:
        raise DocError(f"ARCHITECTURE.md: the ```{current} block is not closed")
    return blocks


def _content(lines: list[tuple[int, str]]):
    for no, line in lines:
        line = line.split("#", 1)[0].strip()
        if line:
            yield no, line


def parse_doc(markdown: str) -> Doc:
    blocks = fenced_blocks(markdown)
    for need in ("layers", "modules"):
        if need not in blocks:
            raise DocError(f"ARCHITECTURE.md has no ```{need} block")
    name_re = r"[A-Za-z_][A-Za-z0-9_]*"
    layers: list[tuple[str, list[str]]] = []
    seen: dict[str, int] = {}
    for no, line in _content(blocks["layers"]):
        m = re.fullmatch(rf"({name_re})\s*:\s*(.*)", line)
        if not m or not all(re.fullmatch(name_re, x) for x in m.group(2).split()):
            raise DocError(f"ARCHITECTURE.md:{no}: a layers line is `<layer>: <module> <module> ...`, not {line!r}")
        for mod in m.group(2).split():
            if mod in seen:
                raise DocError(f"ARCHITECTURE.md:{no}: module {mod} is already in a layer (line {seen[mod]})")
            seen[mod] = no
        layers.append((m.group(1), m.group(2).split()))
    modules = _edge_lines(blocks["modules"], "modules")
    test_modules = _edge_lines(blocks.get("test-modules", []), "test-modules")
    crates: dict[str, list[str]] = {}
    for no, line in _content(blocks.get("crates", [])):
        m = re.fullmatch(r"([A-Za-z0-9_-]+)\s*:\s*(.+)", line)
        paths = m.group(2).split() if m else []
        if not m or not all(re.fullmatch(rf"{name_re}(::{name_re})*", p) for p in paths):
            raise DocError(f"ARCHITECTURE.md:{no}: a crates line is `<crate>: <module> <module::sub> ...`, not {line!r}")
        crates[m.group(1)] = paths
    return Doc(layers, modules, crates, "crates" in blocks, test_modules)


def _edge_lines(lines: list[tuple[int, str]], block: str) -> dict[str, set[str]]:
    """The `<module> -> <module> ...` lines of a modules or test-modules block."""
    name_re = r"[A-Za-z_][A-Za-z0-9_]*"
    modules: dict[str, set[str]] = {}
    for no, line in _content(lines):
        m = re.fullmatch(rf"({name_re})\s*(?:->\s*(.*))?", line)
        if not m or not all(re.fullmatch(name_re, x) for x in (m.group(2) or "").split()):
            raise DocError(f"ARCHITECTURE.md:{no}: a {block} line is `<module> -> <module> ...`, not {line!r}")
        if m.group(1) in modules:
            raise DocError(f"ARCHITECTURE.md:{no}: module {m.group(1)} has a second {block} line")
        modules[m.group(1)] = set((m.group(2) or "").split())
    return modules


# ---------------------------------------------------------------- the source tree


@dataclass
class Tree:
    modules: set[str] = field(default_factory=set)
    # edges[a][b] = "src/file.rs:line" of the first use seen
    edges: dict[str, dict[str, str]] = field(default_factory=dict)
    # test_edges[a][b]: the same, for references in test code only
    test_edges: dict[str, dict[str, str]] = field(default_factory=dict)
    # crate_uses[crate] = [(module path, "src/file.rs:line"), ...]
    crate_uses: dict[str, list[tuple[list[str], str]]] = field(default_factory=dict)
    # "src/lib.rs:line" of each `use` in the crate root (a re-export hides edges)
    root_uses: list[str] = field(default_factory=list)


def scan(src_dir: Path, crates: list[str]) -> Tree:
    tree = Tree()
    files = sorted(p for p in src_dir.rglob("*.rs") if p.is_file())
    for p in files:
        rel = p.relative_to(src_dir)
        path = file_module_path(rel)
        if path:
            tree.modules.add(path[0])
        elif rel.parts == ("main.rs",):
            tree.modules.add(BIN_MODULE)
    texts = {p: strip_rust(p.read_text(encoding="utf-8")) for p in files}
    test_spans: dict[Path, list[tuple[int, int]]] = {}
    test_paths: list[list[str]] = []
    for p in files:
        rel = p.relative_to(src_dir)
        spans, children = test_items(texts[p], file_module_path(rel))
        test_spans[p] = spans
        test_paths += children
    for p in files:
        rel = p.relative_to(src_dir)
        text = texts[p]
        if rel.parts == ("lib.rs",):
            # The crate root only declares the modules: a `pub use` there would let
            # `crate::Item` reach into a module without naming it.
            tree.root_uses += [f"src/lib.rs:{line_of(text, m.start())}" for m in re.finditer(r"\buse\b", text)]
            continue
        is_bin = rel.parts == ("main.rs",)
        base = file_module_path(rel)
        owner = BIN_MODULE if is_bin else base[0]
        modpath = [BIN_MODULE] if is_bin else base
        where = lambda off: f"src/{rel.as_posix()}:{line_of(text, off)}"  # noqa: E731
        whole_file_test = bool(_INNER_CFG_TEST.search(text)) or any(base[: len(t)] == t for t in test_paths)
        edges = tree.edges.setdefault(owner, {})
        test_edges = tree.test_edges.setdefault(owner, {})
        for name, off in root_references(text, base, is_bin):
            if name != owner and name in tree.modules and name != BIN_MODULE:
                in_test = whole_file_test or any(a <= off < b for a, b in test_spans[p])
                (test_edges if in_test else edges).setdefault(name, where(off))
        for crate in crates:
            for off in crate_references(text, crate):
                tree.crate_uses.setdefault(crate, []).append((modpath, where(off)))
    for m in tree.modules:
        tree.edges.setdefault(m, {})
        tree.test_edges.setdefault(m, {})
    return tree


def test_only(tree: Tree) -> dict[str, dict[str, str]]:
    """The edges only test code makes: {a: {b: where}} without the production edges."""
    return {a: {b: w for b, w in bs.items() if b not in tree.edges.get(a, {})} for a, bs in tree.test_edges.items()}


# ---------------------------------------------------------------- checks


def cycles(edges: dict[str, dict[str, str]]) -> list[list[str]]:
    """One cycle (as a closed path) per strongly connected component of more than one node."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    comps: list[list[str]] = []
    counter = [0]

    def strong(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, {})):
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
                comps.append(sorted(comp))

    sys.setrecursionlimit(max(1000, 10 * len(edges) + 100))
    for v in sorted(edges):
        if v not in index:
            strong(v)
    out: list[tuple[list[str], list[str]]] = []
    seen: set[tuple[str, ...]] = set()
    for comp in sorted(comps):
        # The shortest cycle through each member, each cycle once.
        for start in comp:
            path = _shortest_cycle(edges, set(comp), start)
            key = tuple(sorted(path[:-1]))
            if path and key not in seen:
                seen.add(key)
                out.append((path, comp))
    return out


def _shortest_cycle(edges: dict[str, dict[str, str]], members: set[str], start: str) -> list[str]:
    """The shortest closed path start -> ... -> start inside `members` (breadth first)."""
    prev: dict[str, str] = {start: start}
    queue = [start]
    while queue:
        nxt = []
        for v in queue:
            for w in sorted(edges.get(v, {})):
                if w not in members:
                    continue
                if w == start:
                    path = [start]
                    while v != start:
                        path.insert(1, v)
                        v = prev[v]
                    return path + [start]
                if w not in prev:
                    prev[w] = v
                    nxt.append(w)
        queue = nxt
    return []


def check(root: Path) -> list[str]:
    """The problems found in the tree at `root` (empty when it passes)."""
    arch = root / "ARCHITECTURE.md"
    if not arch.is_file():
        return [f"{arch.name} not found in {root}"]
    try:
        doc = parse_doc(arch.read_text(encoding="utf-8"))
    except DocError as e:
        return [str(e)]
    tree = scan(root / "src", sorted(doc.crates))
    problems: list[str] = []
    layer_of = doc.layer_of()
    if BIN_MODULE in tree.modules and BIN_MODULE not in layer_of and doc.layers:
        layer_of[BIN_MODULE] = 0
    layer_name = {i: name for i, (name, _) in enumerate(doc.layers)}

    for where in tree.root_uses:
        problems.append(f"{where}: a `use` in the crate root hides which module `crate::` paths reach; import from the module")
    for m in sorted(tree.modules - set(layer_of)):
        problems.append(f"module {m} (src/) is in no layer of the ```layers block")
    for m in sorted(set(layer_of) - tree.modules):
        problems.append(f"the ```layers block names {m}, which is not a module in src/")
    for m in sorted(set(doc.modules) - tree.modules):
        problems.append(f"the ```modules block names {m}, which is not a module in src/")
    for m in sorted(tree.modules - set(doc.modules)):
        problems.append(f"module {m} has no line in the ```modules block (write `{m} -> ...`)")
    for a, targets in sorted(doc.modules.items()):
        for b in sorted(targets - tree.modules):
            problems.append(f"the ```modules block line of {a} names {b}, which is not a module in src/")

    comps_seen: set[tuple[str, ...]] = set()
    for path, comp in cycles(tree.edges):
        if tuple(comp) not in comps_seen:
            comps_seen.add(tuple(comp))
            problems.append(f"modules tied in import cycles ({len(comp)}): {' '.join(comp)}; among them:")
        steps = " -> ".join(path)
        wit = "; ".join(f"{x} -> {y} at {tree.edges[x][y]}" for x, y in zip(path, path[1:]))
        problems.append(f"import cycle: {steps}  ({wit})")

    for a in sorted(tree.edges):
        for b, where in sorted(tree.edges[a].items()):
            la, lb = layer_of.get(a), layer_of.get(b)
            if la is not None and lb is not None and lb < la:
                problems.append(
                    f"upward edge {a} ({layer_name[la]}) -> {b} ({layer_name[lb]}) at {where}: "
                    "imports go only downward or sideways"
                )

    for a in sorted(tree.modules & set(doc.modules)):
        actual, documented = set(tree.edges[a]), doc.modules[a]
        for b in sorted(actual - documented):
            problems.append(f"undocumented edge {a} -> {b} at {tree.edges[a][b]}: add it to the ```modules block or remove the import")
        for b in sorted((documented - actual) & tree.modules):
            if b in tree.test_edges[a]:
                problems.append(
                    f"documented edge {a} -> {b} is used only by tests (at {tree.test_edges[a][b]}): "
                    "move it to the ```test-modules block"
                )
            else:
                problems.append(f"documented edge {a} -> {b} is not in the code: remove it from the ```modules block")
    problems += _test_edge_problems(tree, doc, layer_of, layer_name)

    for crate, allowed in sorted(doc.crates.items()):
        for path in {tuple(p.split("::")) for p in allowed}:
            if path[0] not in tree.modules:
                problems.append(f"the ```crates block confines {crate} to {'::'.join(path)}, which is not a module in src/")
        outside: dict[str, list[str]] = {}
        for modpath, where in tree.crate_uses.get(crate, []):
            if not any(tuple(modpath[: len(p.split("::"))]) == tuple(p.split("::")) for p in allowed):
                file, line = where.rsplit(":", 1)
                outside.setdefault(f"{file} (module {'::'.join(modpath)})", []).append(line)
        for place, lines in sorted(outside.items()):
            file, rest = place.split(" ", 1)
            more = f" (also line {', '.join(lines[1:])})" if len(lines) > 1 else ""
            problems.append(f"crate {crate} is used at {file}:{lines[0]}{more} {rest}, outside {' '.join(allowed)}")
    return problems


def _test_edge_problems(tree: Tree, doc: Doc, layer_of: dict[str, int], layer_name: dict[int, str]) -> list[str]:
    """The test-only edges against the test-modules block, and none into a face from below."""
    problems: list[str] = []
    only = test_only(tree)
    for m in sorted(set(doc.test_modules) - tree.modules):
        problems.append(f"the ```test-modules block names {m}, which is not a module in src/")
    for a in sorted(tree.modules):
        documented = doc.test_modules.get(a, set())
        for b in sorted(set(only[a]) - documented - doc.modules.get(a, set())):
            problems.append(
                f"undocumented test-only edge {a} -> {b} at {only[a][b]}: add it to the ```test-modules block "
                "or remove the import"
            )
        for b in sorted(documented - set(only[a])):
            if b in tree.edges[a]:
                problems.append(
                    f"the ```test-modules block lists {a} -> {b}, which production code has "
                    f"(at {tree.edges[a][b]}): keep it in the ```modules block only"
                )
            elif b in tree.modules:
                problems.append(f"documented test-only edge {a} -> {b} is not in the tests: remove it from the ```test-modules block")
        faces = {i for i, n in layer_name.items() if n in FACE_LAYERS}
        for b, where in sorted(only[a].items()):
            la, lb = layer_of.get(a), layer_of.get(b)
            if la is not None and lb is not None and lb < la and lb in faces:
                problems.append(
                    f"test-only edge {a} ({layer_name[la]}) -> {b} ({layer_name[lb]}) at {where}: "
                    "a module's tests do not reach up into the faces or app; test through the face there"
                )
    return problems


def print_graph(root: Path) -> None:
    order: list[str] = []
    crates: list[str] = []
    arch = root / "ARCHITECTURE.md"
    if arch.is_file():
        try:
            doc = parse_doc(arch.read_text(encoding="utf-8"))
            order = [m for _, mods in doc.layers for m in mods]
            crates = sorted(doc.crates)
        except DocError:
            pass
    tree = scan(root / "src", crates)
    if BIN_MODULE in tree.modules and BIN_MODULE not in order:
        order.insert(0, BIN_MODULE)
    rank = {m: i for i, m in enumerate(order)}
    key = lambda m: (rank.get(m, len(order)), m)  # noqa: E731
    print("```modules")
    for m in sorted(tree.modules, key=key):
        deps = " ".join(sorted(tree.edges[m], key=key))
        print(f"{m} -> {deps}".rstrip())
    print("```")
    only = test_only(tree)
    print("\n```test-modules")
    for m in sorted((m for m in tree.modules if only[m]), key=key):
        print(f"{m} -> {' '.join(sorted(only[m], key=key))}")
    print("```")
    if crates:
        # Not a block of ARCHITECTURE.md: where each confined crate is named now.
        print("\n```crate-uses")
        for crate in crates:
            users = sorted({"::".join(path[:1]) for path, _ in tree.crate_uses.get(crate, [])}, key=key)
            print(f"{crate}: {' '.join(users)}".rstrip())
        print("```")
