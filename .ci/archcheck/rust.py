"""Reading Rust source for the architecture check: comments and literals blanked, the
crate-root paths a file names (module edges), external crate names, and the items and
files under `#[cfg(test)]`."""

from __future__ import annotations

import re
from pathlib import Path

# Words after which `::name` starts a path from the extern prelude, not a path segment.
_KEYWORDS = {"as", "in", "use", "dyn", "impl", "for", "where", "return", "mut", "let", "const", "static",
             "type", "break", "else", "if", "match", "move", "ref", "unsafe", "async", "await", "yield"}
LIB_CRATE = "isto"  # how src/main.rs names the library

# ---------------------------------------------------------------- lexing


def _is_ident(c: str) -> bool:
    return c.isalnum() or c == "_"


def strip_rust(src: str) -> str:
    """`src` with comments (line, block and nested block, doc comments included), string
    literals (plain, raw, byte, C) and character literals replaced by spaces; newlines are
    kept so that offsets map to the same line numbers. Lifetimes (`'a`) are left alone."""
    out: list[str] = []
    i, n = 0, len(src)

    def blank(text: str) -> None:
        out.append("".join("\n" if ch == "\n" else " " for ch in text))

    while i < n:
        c = src[i]
        nxt = src[i + 1] if i + 1 < n else ""
        # Line comment (also /// and //!).
        if c == "/" and nxt == "/":
            j = src.find("\n", i)
            j = n if j < 0 else j
            blank(src[i:j])
            i = j
            continue
        # Block comment, nested (also /** */ and /*! */).
        if c == "/" and nxt == "*":
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            blank(src[i:j])
            i = j
            continue
        prev_ident = i > 0 and _is_ident(src[i - 1])
        # Raw strings: r"..", r#".."#, br#".."#, cr"..".
        if not prev_ident:
            m = re.compile(r'(?:b|c)?r(#*)"').match(src, i)
            if m:
                end = src.find('"' + m.group(1), m.end())
                j = n if end < 0 else end + 1 + len(m.group(1))
                blank(src[i:j])
                i = j
                continue
        # Plain strings, also b".." and c"..".
        if c == '"' or (c in "bc" and nxt == '"' and not prev_ident):
            j = i + (1 if c == '"' else 2)
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            j = min(j + 1, n)
            blank(src[i:j])
            i = j
            continue
        # Character literals ('x', '\n', '\u{1F600}', b'x'); a lone quote is a lifetime.
        if c == "'" or (c == "b" and nxt == "'" and not prev_ident):
            q = i if c == "'" else i + 1
            if q + 1 < n and src[q + 1] == "\\":
                end = src.find("'", q + 3)
                if end >= 0:
                    blank(src[i : end + 1])
                    i = end + 1
                    continue
            elif q + 2 < n and src[q + 2] == "'" and src[q + 1] != "'":
                blank(src[i : q + 3])
                i = q + 3
                continue
            out.append(src[i : q + 1])
            i = q + 1
            continue
        # An identifier whole, so that `br` inside `abr"` is not taken for a prefix.
        if _is_ident(c):
            j = i
            while j < n and _is_ident(src[j]):
                j += 1
            out.append(src[i:j])
            i = j
            continue
        out.append(c)
        i += 1
    return "".join(out)


def line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


# ---------------------------------------------------------------- module paths

_MOD_BLOCK = re.compile(r"\bmod\s+(r#)?([A-Za-z_][A-Za-z0-9_]*)\s*\{")
_ROOT_PATH = re.compile(r"(?<![A-Za-z0-9_])\$?crate\s*::\s*")
_SUPER_PATH = re.compile(r"(?<![A-Za-z0-9_:])(?:self\s*::\s*)?((?:super\s*::\s*)+)")
_IDENT = re.compile(r"(r#)?([A-Za-z_][A-Za-z0-9_]*)")


def file_module_path(rel: Path) -> list[str]:
    """The module path of a file under src/: `store/mod.rs` -> [store], `matching/engine.rs`
    -> [matching, engine]; the crate roots lib.rs and main.rs -> []."""
    parts = list(rel.parts)
    if parts in (["lib.rs"], ["main.rs"]):
        return []
    last = parts[-1][: -len(".rs")]
    return parts[:-1] if last == "mod" else parts[:-1] + [last]


def inline_modules(text: str) -> list[tuple[int, int, str]]:
    """(start, end, name) of every inline `mod name { ... }` in stripped `text`."""
    found: list[tuple[int, int, str]] = []
    for m in _MOD_BLOCK.finditer(text):
        depth, j = 1, m.end()
        while j < len(text) and depth:
            if text[j] == "{":
                depth += 1
            elif text[j] == "}":
                depth -= 1
            j += 1
        found.append((m.end(), j, m.group(2)))
    return found


def module_path_at(base: list[str], inline: list[tuple[int, int, str]], offset: int) -> list[str]:
    return base + [name for (s, e, name) in inline if s <= offset < e]


def _group_heads(text: str, start: int) -> list[tuple[str, int]]:
    """The first identifier of each top-level item of the `{...}` group opening at `start`."""
    heads: list[tuple[str, int]] = []
    depth, j, item_start = 0, start, start + 1
    while j < len(text):
        ch = text[j]
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if (ch == "," and depth == 1) or depth == 0:
            m = _IDENT.search(text, item_start, j)
            if m and not text[item_start : m.start()].strip() and m.group(2) != "self":
                heads.append((m.group(2), m.start()))
            item_start = j + 1
            if depth == 0:
                break
        j += 1
    return heads


def _heads_after(text: str, pos: int) -> list[tuple[str, int]]:
    """The top-level module names a root path continuing at `pos` reaches."""
    if pos < len(text) and text[pos] == "{":
        return _group_heads(text, pos)
    m = _IDENT.match(text, pos)
    return [(m.group(2), m.start())] if m else []


def root_references(text: str, base: list[str], is_bin: bool) -> list[tuple[str, int]]:
    """(top-level module, offset) for each crate-root path in stripped `text` of a file at
    module path `base`: `crate::x`, `crate::{x, y::z}`, `super::...` reaching the root, and
    (in the binary) `isto::x`. Names that are not modules are filtered out by the caller."""
    refs: list[tuple[str, int]] = []
    for m in _ROOT_PATH.finditer(text):
        refs += _heads_after(text, m.end())
    inline = inline_modules(text)
    for m in _SUPER_PATH.finditer(text):
        ups = m.group(1).count("super")
        here = module_path_at(base, inline, m.start())
        if ups > len(here):
            continue  # not valid Rust; rustc reports it
        target = here[: len(here) - ups]
        if target:
            refs.append((target[0], m.start()))
        else:
            refs += _heads_after(text, m.end())
    if is_bin:
        for m in re.finditer(r"(?<![A-Za-z0-9_:])(?:::\s*)?" + LIB_CRATE + r"\s*::\s*", text):
            refs += _heads_after(text, m.end())
    return refs


def crate_references(text: str, crate: str) -> list[int]:
    """Offsets where stripped `text` names external crate `crate` (`crate::`, `::crate::`,
    `use crate`, `extern crate crate`), not a same-named module further down a path."""
    ident = crate.replace("-", "_")
    hits: list[int] = []
    for m in re.finditer(r"(?<![A-Za-z0-9_$])" + re.escape(ident) + r"(?![A-Za-z0-9_])", text):
        before = text[: m.start()].rstrip()
        after = text[m.end() :].lstrip()
        if before.endswith("::"):
            lead = before[:-2].rstrip()
            word = re.search(r"[A-Za-z0-9_]*$", lead).group(0)
            # `x::crate` and `T<..>::crate` are path segments; a leading `::crate` (after `<`,
            # `(`, `->`, a keyword, ...) is the crate.
            if word and word not in _KEYWORDS or (lead.endswith(">") and not lead.endswith("->")):
                continue
            hits.append(m.start())
        elif after.startswith("::") or re.search(r"\b(use|extern\s+crate)\s*$", before):
            hits.append(m.start())
    return hits


_CFG_TEST = re.compile(r"#\s*\[\s*cfg\s*\(\s*test\s*\)\s*\]")
_INNER_CFG_TEST = re.compile(r"#\s*!\s*\[\s*cfg\s*\(\s*test\s*\)\s*\]")
_MOD_DECL = re.compile(r"(?:pub\s*(?:\([^)]*\))?\s*)?mod\s+(?:r#)?([A-Za-z_][A-Za-z0-9_]*)\s*;")


def _skip_attributes(text: str, j: int) -> int:
    """The offset of the item after the attributes (`#[...]`) and blanks from `j`."""
    while True:
        while j < len(text) and text[j].isspace():
            j += 1
        if not text.startswith("#", j):
            return j
        k = j + 1
        while k < len(text) and text[k].isspace():
            k += 1
        if not text.startswith("[", k):
            return j
        depth = 0
        while k < len(text):
            if text[k] == "[":
                depth += 1
            elif text[k] == "]":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        j = k + 1


def _item_end(text: str, j: int) -> int:
    """The end of the item starting at `j`: after its `;` or its closing `}` at depth 0."""
    depth = 0
    for k in range(j, len(text)):
        c = text[k]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth < 0:
                return k
            if depth == 0 and c == "}":
                return k + 1
        elif c == ";" and depth == 0:
            return k + 1
    return len(text)


def test_items(text: str, base: list[str]) -> tuple[list[tuple[int, int]], list[list[str]]]:
    """In stripped `text` of a file at module path `base`: the (start, end) spans of the
    items under `#[cfg(test)]`, and the module paths of the files it declares under
    `#[cfg(test)]` (`#[cfg(test)] mod tests;`)."""
    spans: list[tuple[int, int]] = []
    children: list[list[str]] = []
    inline = inline_modules(text)
    for m in _CFG_TEST.finditer(text):
        j = _skip_attributes(text, m.end())
        decl = _MOD_DECL.match(text, j)
        if decl:
            children.append(module_path_at(base, inline, m.start()) + [decl.group(1)])
            spans.append((m.start(), decl.end()))
        else:
            spans.append((m.start(), _item_end(text, j)))
    return spans, children
