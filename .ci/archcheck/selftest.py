"""The architecture check's own tests: the lexer, and `check` on fixture trees that
pass or fail one rule each."""

from __future__ import annotations

import contextlib
import io
import sys
import tempfile
from pathlib import Path

from .graph import check, print_graph
from .rust import crate_references, root_references, strip_rust


_FIXTURE_DOC = """# Fixture

```layers
app: app
faces: web
services: intents
model: records
infra: store clock
```

```modules
main -> app
app -> web intents
web -> intents records
intents -> records store clock
records -> clock
store -> clock
clock ->
```

```test-modules
web -> store
records -> store
```

```crates
redb: store
maud: web::pages
axum: app web
```
"""

_FIXTURE_SRC = {
    "lib.rs": "pub mod app; pub mod web; pub mod intents; pub mod records; pub mod store; pub mod clock;\n",
    "main.rs": "fn main() { isto::app::serve(); }\n",
    "app.rs": "use crate::{web::router, intents::{self, Intents}};\npub fn serve() {}\n",
    "web/mod.rs": (
        "//! Pages. Not an edge: crate::store in a doc comment.\n"
        "mod pages;\n"
        "use crate::intents::Intents;\n"
        "/* crate::store in /* a nested */ block comment */\n"
        "#[cfg(test)]\nmod tests;\n"
        "pub fn router() { let _ = \"crate::store::x in a string\"; let _ = r#\"crate::clock\"#; }\n"
        "pub fn show(r: &crate :: records::Record) -> char { let _: &'static str = \"\"; '\"' }\n"
    ),
    "web/pages.rs": "use maud::html;\nuse super::router;\nuse axum::Router;\n",
    "web/tests.rs": "use crate::store::Store;\nmod more { use crate::store::Store; }\n",
    "intents/mod.rs": (
        "use crate::records::Record;\nuse crate::store;\nuse crate::clock::Clock;\n"
        "pub struct Intents;\n"
        "#[cfg(test)]\nmod tests {\n    use super::super::store::Store;\n    use super::*;\n}\n"
    ),
    "records.rs": (
        "pub struct Record(pub crate::clock::Time);\n"
        "#[cfg(test)]\nmod tests {\n    use crate::store::Store;\n}\n"
        "#[cfg(test)]\n#[allow(dead_code)]\nfn made(_: &[u8; 2]) -> crate::clock::Time { crate::clock::Time }\n"
    ),
    "store/mod.rs": "mod tables;\npub struct Store;\n",
    "store/tables.rs": "use redb::TableDefinition;\nuse super::super::clock::Time;\nfn f() -> ::redb::Error { todo() }\n",
    "clock.rs": "pub struct Clock; pub struct Time; fn x() { let redb = 1; let _ = my::redb::Y; }\n",
}


def _fixture(base: Path, doc: str = _FIXTURE_DOC, change: dict[str, str] | None = None) -> Path:
    root = Path(tempfile.mkdtemp(dir=base))
    files = dict(_FIXTURE_SRC)
    files.update(change or {})
    for rel, text in files.items():
        if text is None:
            continue
        p = root / "src" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    (root / "ARCHITECTURE.md").write_text(doc, encoding="utf-8")
    return root


def self_test() -> int:
    from .cli import main

    failures: list[str] = []

    def expect(name: str, cond: bool, detail: object = "") -> None:
        if not cond:
            failures.append(f"{name}: {detail}")

    # The lexer.
    s = strip_rust('a // crate::x\nb /* /* crate::y */ */ c "crate::z \\" q" r##"crate::w"## \'c\' \'\\n\' b\'x\' d\n')
    expect("strip removes comments and literals", "crate" not in s, s)
    expect("strip keeps code and lines", s.split() == ["a", "b", "c", "d"] and s.count("\n") == 2, s)
    s = strip_rust("fn f<'a>(x: &'a str) -> &'a str { crate::m::g(x) }")
    expect("strip keeps lifetimes", "crate::m::g" in s and "'a str" in s, s)
    s = strip_rust('let q = \'"\'; crate::n::h(); let r = br"crate::k"; let ident_r = abr; c"x"')
    expect("a quote character literal does not open a string", "crate::n::h" in s and "crate::k" not in s, s)

    # Root references.
    refs = lambda src, base: sorted(n for n, _ in root_references(strip_rust(src), base, False))  # noqa: E731
    expect("grouped use", refs("use crate::{a::b, c, d::{e, f}, self};", ["z"]) == ["a", "c", "d"], refs("use crate::{a::b, c, d::{e, f}, self};", ["z"]))
    expect("super within the module is its own module", refs("use super::x;", ["m", "n"]) == ["m"])
    expect("super from a top-level file reaches the root", refs("use super::store::S;", ["m"]) == ["store"])
    expect(
        "super inside an inline mod",
        refs("mod tests { use super::super::store::S; }", ["m"]) == ["store"],
        refs("mod tests { use super::super::store::S; }", ["m"]),
    )
    expect("crate paths across lines", refs("let x = crate\n  ::\n  clock::now();", ["m"]) == ["clock"])
    expect(
        "crate references",
        [strip_rust("use redb;")[o:o + 4] for o in crate_references(strip_rust("use redb;"), "redb")] == ["redb"]
        and len(crate_references("use a::redb::X; let redb = 1; ::redb::Y; <T as ::redb::K>", "redb")) == 2,
        crate_references("use a::redb::X; let redb = 1; ::redb::Y; <T as ::redb::K>", "redb"),
    )

    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        ok = _fixture(base)
        problems = check(ok)
        expect("the matching acyclic fixture passes", problems == [], problems)
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            print_graph(ok)
        block = _FIXTURE_DOC.split("```modules\n", 1)[1].split("```", 1)[0]
        tests_block = _FIXTURE_DOC.split("```test-modules\n", 1)[1].split("```", 1)[0]
        expect(
            "--print gives the modules and test-modules blocks back, and the crates' users",
            printed.getvalue() == f"```modules\n{block}```\n\n```test-modules\n{tests_block}```\n\n"
            "```crate-uses\naxum: web\nmaud: web\nredb: store\n```\n",
            printed.getvalue(),
        )
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            codes = (main(["--root", str(ok)]), main(["--root", str(_fixture(base, change={"text.rs": ""}))]))
        expect("exit status 0 on a pass, 1 on a failure", codes == (0, 1), codes)

        def fails(name: str, needle: str, **kw: object) -> None:
            problems = check(_fixture(base, **kw))
            expect(name, any(needle in p for p in problems), problems)

        fails(
            "a cycle fails",
            "import cycle: records -> store -> records",
            change={
                "records.rs": "pub struct Record(pub crate::clock::Time, crate::store::Store);\n",
                "store/mod.rs": "mod tables;\npub struct Store(Vec<crate::records::Record>);\n",
            },
            doc=_FIXTURE_DOC.replace("records -> clock", "records -> clock store").replace(
                "store -> clock", "store -> clock records"
            ),
        )
        fails(
            "an upward edge fails",
            "upward edge store (infra) -> intents (services)",
            change={"store/mod.rs": "mod tables;\npub struct Store(crate::intents::Intents);\n"},
            doc=_FIXTURE_DOC.replace("store -> clock", "store -> clock intents"),
        )
        fails(
            "an undocumented edge fails",
            "undocumented edge web -> clock",
            change={"web/pages.rs": "use maud::html;\nuse super::router;\nuse crate::clock::Clock;\n"},
        )
        fails(
            "a documented edge missing from the code fails",
            "documented edge app -> intents is not in the code",
            change={"app.rs": "use crate::web::router;\npub fn serve() {}\n"},
        )
        fails(
            "a confined crate used elsewhere fails",
            "crate redb is used at src/intents/mod.rs:2",
            change={"intents/mod.rs": "use crate::records::Record;\nfn f(_: redb::Database) {}\n"
                    "use crate::store;\nuse crate::clock::Clock;\n"},
        )
        fails(
            "a crate confined to a submodule used in its parent module fails",
            "crate maud is used at src/web/mod.rs:3",
            change={"web/mod.rs": "mod pages;\nuse crate::intents::Intents;\nuse maud;\n"
                    "pub fn show(r: &crate::records::Record) {}\n"},
        )
        fails(
            "a module missing from the layers block fails",
            "module text (src/) is in no layer",
            change={"text.rs": "pub fn fold() {}\n"},
            doc=_FIXTURE_DOC.replace("clock ->", "clock ->\ntext ->"),
        )
        fails("the binary is checked too", "undocumented edge main -> clock",
              change={"main.rs": "fn main() { isto::app::serve(); let _ = isto::clock::Clock; }\n"})
        fails("a re-export in the crate root fails", "src/lib.rs:2: a `use` in the crate root",
              change={"lib.rs": _FIXTURE_SRC["lib.rs"] + "pub use store::Store;\n"})
        fails(
            "a test-only edge missing from the test-modules block fails",
            "undocumented test-only edge records -> store at src/records.rs:4",
            doc=_FIXTURE_DOC.replace("records -> store\n", ""),
        )
        fails(
            "an edge of a file declared under cfg(test) is test-only",
            "undocumented test-only edge web -> store at src/web/tests.rs:1",
            doc=_FIXTURE_DOC.replace("web -> store\n", ""),
        )
        fails(
            "a test-only edge in the modules block fails",
            "documented edge records -> store is used only by tests (at src/records.rs:4)",
            doc=_FIXTURE_DOC.replace("records -> clock\n", "records -> clock store\n").replace("records -> store\n", ""),
        )
        fails(
            "the same import outside cfg(test) is a production edge",
            "undocumented edge records -> store at src/records.rs:3",
            change={"records.rs": "pub struct Record(pub crate::clock::Time);\nmod tests {\n    use crate::store::Store;\n}\n"},
            doc=_FIXTURE_DOC.replace("records -> store\n", ""),
        )
        fails(
            "a test-only edge listed that production code has fails",
            "the ```test-modules block lists web -> intents, which production code has",
            doc=_FIXTURE_DOC.replace("web -> store\n", "web -> store intents\n"),
        )
        fails(
            "a documented test-only edge the tests lack fails",
            "documented test-only edge records -> store is not in the tests",
            change={"records.rs": "pub struct Record(pub crate::clock::Time);\n"},
        )
        fails(
            "a test reaching up into a face fails",
            "test-only edge intents (services) -> web (faces) at src/intents/mod.rs:8",
            change={"intents/mod.rs": _FIXTURE_SRC["intents/mod.rs"].replace("use super::*;", "use crate::web::router;")},
            doc=_FIXTURE_DOC.replace("web -> store\n", "web -> store\nintents -> web\n"),
        )
        fails(
            "a face-only crate in a service fails, in tests too",
            "crate axum is used at src/intents/mod.rs:8 (module intents), outside app web",
            change={"intents/mod.rs": _FIXTURE_SRC["intents/mod.rs"].replace("use super::*;", "use axum::Json;")},
        )
        fails("a missing modules block fails", "no ```modules block",
              doc=_FIXTURE_DOC.replace("```modules", "```text"))

    for f in failures:
        print(f"self-test FAILED: {f}", file=sys.stderr)
    if failures:
        return 1
    print("check-architecture self-test: all cases pass")
    return 0
