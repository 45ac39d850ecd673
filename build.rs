//! Build script: names the commit a binary was built from, for `isto --version`:
//! `isto 0.1.0 (abc1234 2026-12-02)`.
//!
//! Sets the compile-time variable `ISTO_BUILD` to `<commit> <date>`, the first source
//! that answers winning:
//! 1. `ISTO_BUILD_COMMIT` (and optionally `ISTO_BUILD_DATE`, YYYY-MM-DD) from the
//!    environment, for package builds from a tarball that has no `.git`;
//! 2. `git rev-parse --short=7 HEAD` and the commit's date (`%cs`, committer date, so a
//!    rebuild of the same commit says the same), when the crate's directory has a
//!    `.git` (a clone or a worktree) and `git` runs;
//! 3. `unknown`.
//!
//! Cargo reruns this script when those variables change and, in a git checkout, when
//! HEAD or the branch it names moves (`.git/HEAD`, the ref file, `packed-refs`).
//!
//! Debug builds (`PROFILE=debug`: `cargo build`, `cargo test`) are not stamped from git
//! and say `debug build`: a stamp would rebuild the whole crate, its tests and the e2e
//! binary after every commit. `ISTO_BUILD_COMMIT` still stamps them.
//!
//! It also writes the page texts of each language (`assets/i18n/<lang>.toml`) as the
//! Rust statics and structs `web::i18n` includes, the e-mail texts
//! (`assets/i18n/mail/<lang>.toml`) as those `mail` includes, and the words of match
//! explanations (`assets/i18n/explain/<lang>.toml`) as those `matching::explain`
//! includes ([`i18n`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() -> Result<(), String> {
    i18n()?;
    println!("cargo:rerun-if-env-changed=ISTO_BUILD_COMMIT");
    println!("cargo:rerun-if-env-changed=ISTO_BUILD_DATE");
    let release = std::env::var("PROFILE").is_ok_and(|p| p != "debug");
    let build = match from_env() {
        Some(b) => b,
        None if !release => "debug build".to_owned(),
        None => from_git().unwrap_or_else(|| "unknown".to_owned()),
    };
    println!("cargo:rustc-env=ISTO_BUILD={build}");
    Ok(())
}

/// The languages of the texts: `<dir>/<lang>.toml` each (as `web::i18n::LANGUAGES`).
const LANGUAGES: [&str; 3] = ["sk", "cs", "en"];

/// The language whose file defines a set's structs: its keys are the fields (every other
/// file must have the same, the compiler checks) and the comment lines right above a key
/// or a `[section]` are that field's docstring.
const REFERENCE: &str = "en";

/// A part of a set's root struct: a `[section]` of its files (section name, Rust type;
/// the comment above the section in the reference file is the docstring of the type and
/// of the root's field). Any other section is a table of pairs (key → label).
type Part = (&'static str, &'static str);

/// One set of texts: a TOML file per language, made a Rust static of a root struct.
struct Texts {
    /// The directory of the files (`<dir>/<lang>.toml`).
    dir: &'static str,
    /// The output file, `$OUT_DIR/<out>.rs`.
    out: &'static str,
    /// The root struct and its docstring.
    root: (&'static str, &'static str),
    /// The function that gives a language's root (`fn <name>(lang: &str) -> &'static
    /// <root>`, [`REFERENCE`] for any language not in [`LANGUAGES`]) and its docstring.
    lookup: (&'static str, &'static str),
    /// The sections that are parts of the root struct.
    parts: &'static [Part],
}

/// The page texts (`web::i18n`), the e-mail texts (`mail`) and the explanation words
/// (`matching::explain`).
const TEXTS: [Texts; 3] = [
    Texts {
        dir: "assets/i18n",
        out: "i18n",
        root: ("Ui", "UI strings of one language."),
        lookup: ("ui", "The strings of `lang` (`sk`, `cs`; anything else is English)."),
        parts: &[
            ("account", "AccountText"),
            ("authorize", "AuthorizeText"),
            ("sellers", "SellerText"),
            ("demand", "DemandText"),
            ("mine", "MineText"),
            ("cadence", "CadenceText"),
            ("links", "LinkText"),
        ],
    },
    Texts {
        dir: "assets/i18n/mail",
        out: "mail",
        root: ("MailText", "The texts of the e-mails the holder sends, in one language."),
        lookup: ("texts", "The e-mail texts of `lang` (`sk`, `cs`; anything else is English)."),
        parts: &[("intent", "IntentMailText"), ("account", "AccountMailText")],
    },
    Texts {
        dir: "assets/i18n/explain",
        out: "explain",
        root: ("Words", "The words of match explanations in one language."),
        lookup: ("words_of", "The explanation words of `lang` (`sk`, `cs`; anything else is English)."),
        parts: &[],
    },
];

/// Writes, for each of [`TEXTS`], `$OUT_DIR/<out>.rs`: the structs (the root and one
/// per part) from the [`REFERENCE`] file; `static <LANG>: <root> = <root> { ... };` for
/// each of [`LANGUAGES`], one field a line, so that the compiler checks every key against
/// the structs (a key missing from a file or unknown to the structs fails the build with
/// the key and that file's name); and the lookup function of the set. Errors: a file
/// unreadable or not TOML, a value that is no string, array or table, a part's section
/// missing from the reference file, or a key of it without a comment above it.
fn i18n() -> Result<(), String> {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").ok_or("OUT_DIR is not set")?);
    for set in &TEXTS {
        let (root, mut code, mut arms) = (set.root.0, String::new(), String::new());
        for lang in LANGUAGES {
            let path = format!("{}/{lang}.toml", set.dir);
            println!("cargo:rerun-if-changed={path}");
            let text = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
            let table: toml::Table = text.parse().map_err(|e| format!("{path}: {e}"))?;
            if lang == REFERENCE {
                code.push_str(&set.types(&table, &comments(&text)).map_err(|e| format!("{path}: {e}"))?);
            } else {
                arms.push_str(&format!("        {lang:?} => &{},\n", lang.to_uppercase()));
            }
            let value = set.literal(root, &table).map_err(|e| format!("{path}: {e}"))?;
            code.push_str(&format!("// From {path}.\nstatic {}: {root} = {value};\n", lang.to_uppercase()));
        }
        let fallback = REFERENCE.to_uppercase();
        code.push_str(&doc_attrs("", set.lookup.1.lines()));
        code.push_str(&format!(
            "pub fn {}(lang: &str) -> &'static {root} {{\n    match lang {{\n{arms}        _ => &{fallback},\n    }}\n}}\n",
            set.lookup.0
        ));
        let name = format!("{}.rs", set.out);
        std::fs::write(out.join(&name), code).map_err(|e| format!("{name}: {e}"))?;
    }
    Ok(())
}

/// The comment lines above the keys of a texts file, by `(section, key)`.
type Comments = HashMap<(String, String), Vec<String>>;

/// The comment lines (`# ` taken off) right above each key of a texts file, by
/// `(section, key)` (the section `""` before the first `[section]`); a `[section]`
/// line's own comment is under `("", section)`. A blank line ends a comment.
fn comments(text: &str) -> Comments {
    let (mut docs, mut section, mut pending) = (HashMap::new(), String::new(), Vec::new());
    for line in text.lines().map(str::trim) {
        if let Some(c) = line.strip_prefix('#') {
            pending.push(c.strip_prefix(' ').unwrap_or(c).to_owned());
        } else if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            docs.insert((String::new(), name.to_owned()), std::mem::take(&mut pending));
            section = name.to_owned();
        } else if let Some((key, _)) = line.split_once('=') {
            docs.insert((section.clone(), key.trim().to_owned()), std::mem::take(&mut pending));
        } else {
            pending.clear();
        }
    }
    docs
}

/// `#[doc = " line"]` lines, indented by `indent`.
fn doc_attrs<'a>(indent: &str, lines: impl Iterator<Item = &'a str>) -> String {
    lines.map(|l| format!("{indent}#[doc = {:?}]\n", format!(" {l}"))).collect()
}

impl Texts {
    /// The part a key (a `[section]`) of the root table stands for, if any.
    fn part(&self, key: &str) -> Option<&Part> {
        self.parts.iter().find(|(section, _)| *section == key)
    }

    /// The Rust definitions of the root struct and of each part from the reference
    /// table: a field a key, typed by its value ([`Texts::field_type`]), with the key's
    /// comment as its docstring (a part's own is the comment above its `[section]`).
    fn types(&self, table: &toml::Table, docs: &Comments) -> Result<String, String> {
        let mut structs = vec![("", self.root.0, self.root.1.to_owned(), table)];
        for &(section, ty) in self.parts {
            let doc = docs.get(&(String::new(), section.to_owned())).filter(|d| !d.is_empty());
            let doc = doc.ok_or_else(|| format!("[{section}]: no comment above it (it is the part's docstring)"))?;
            match table.get(section) {
                Some(toml::Value::Table(t)) => structs.push((section, ty, doc.join("\n"), t)),
                _ => return Err(format!("[{section}]: the section is missing")),
            }
        }
        let mut code = String::from("// Written by build.rs: the structs, from the reference texts file.\n");
        for (section, ty, doc, t) in structs {
            code.push_str(&doc_attrs("", doc.lines()));
            code.push_str(&format!("#[derive(Debug)]\npub struct {ty} {{\n"));
            for (key, value) in t {
                let doc = docs.get(&(section.to_owned(), key.clone())).filter(|d| !d.is_empty());
                let doc = doc.ok_or_else(|| format!("{key}: no comment above it (it is the field's docstring)"))?;
                code.push_str(&doc_attrs("    ", doc.iter().map(String::as_str)));
                code.push_str(&format!("    pub {key}: {},\n", self.field_type(key, value)?));
            }
            code.push_str("}\n");
        }
        Ok(code)
    }

    /// The Rust type of a value of the reference file: a string `&'static str`, an array
    /// of `n` strings `[&'static str; n]`, a part `&'static <Part>`, any other table a
    /// slice of pairs.
    fn field_type(&self, key: &str, value: &toml::Value) -> Result<String, String> {
        match value {
            toml::Value::String(_) => Ok("&'static str".to_owned()),
            toml::Value::Array(items) => Ok(format!("[&'static str; {}]", items.len())),
            toml::Value::Table(_) => Ok(match self.part(key) {
                Some((_, ty)) => format!("&'static {ty}"),
                None => "&'static [(&'static str, &'static str)]".to_owned(),
            }),
            other => Err(format!("{key}: a {} where a text belongs", other.type_str())),
        }
    }

    /// The struct literal `ty { key: value, ... }` of a table, one field a line.
    fn literal(&self, ty: &str, table: &toml::Table) -> Result<String, String> {
        let mut fields = String::new();
        for (key, value) in table {
            fields.push_str(&format!("    {key}: {},\n", self.value(key, value)?));
        }
        Ok(format!("{ty} {{\n{fields}}}"))
    }

    /// A value as a Rust expression: a string literal, an array of them, a reference to
    /// a part, or a slice of `(key, value)` pairs for any other table.
    fn value(&self, key: &str, value: &toml::Value) -> Result<String, String> {
        match value {
            toml::Value::String(s) => Ok(format!("{s:?}")),
            toml::Value::Array(items) => {
                let items = items.iter().map(|v| self.value(key, v)).collect::<Result<Vec<_>, _>>()?;
                Ok(format!("[{}]", items.join(", ")))
            }
            toml::Value::Table(t) => match self.part(key) {
                Some((_, ty)) => Ok(format!("&{}", self.literal(ty, t)?)),
                None => {
                    let pairs = t.iter().map(|(k, v)| Ok(format!("({k:?}, {})", self.value(k, v)?)));
                    Ok(format!("&[{}]", pairs.collect::<Result<Vec<_>, String>>()?.join(", ")))
                }
            },
            other => Err(format!("{key}: a {} where a text belongs", other.type_str())),
        }
    }
}

/// `ISTO_BUILD_COMMIT [ISTO_BUILD_DATE]`, when the commit is set and not blank.
fn from_env() -> Option<String> {
    let commit = std::env::var("ISTO_BUILD_COMMIT").ok().map(|c| c.trim().to_owned()).filter(|c| !c.is_empty())?;
    let date = std::env::var("ISTO_BUILD_DATE").ok().map(|d| d.trim().to_owned()).filter(|d| !d.is_empty());
    Some(match date {
        Some(d) => format!("{commit} {d}"),
        None => commit,
    })
}

/// The output of `git ARGS` run in `dir`, trimmed; `None` when git is missing or fails.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (!text.is_empty()).then_some(text)
}

/// The short commit and its date from the checkout the crate is in.
fn from_git() -> Option<String> {
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR")?);
    // Only this crate's own checkout: a tarball unpacked inside some other repository
    // must not take that repository's commit.
    if !dir.join(".git").exists() {
        return None;
    }
    // HEAD, the branch it names and packed-refs, wherever git keeps them (a worktree's
    // `.git` is a file pointing elsewhere). Only existing files: cargo reruns a script
    // on every build for a path that does not exist.
    let mut watched = vec![git(&dir, &["rev-parse", "--git-path", "HEAD"])];
    if let Some(branch) = git(&dir, &["symbolic-ref", "-q", "HEAD"]) {
        watched.push(git(&dir, &["rev-parse", "--git-path", &branch]));
    }
    watched.push(git(&dir, &["rev-parse", "--git-path", "packed-refs"]));
    for path in watched.into_iter().flatten() {
        let path = if Path::new(&path).is_absolute() { PathBuf::from(path) } else { dir.join(path) };
        if path.exists() {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
    let commit = git(&dir, &["rev-parse", "--short=7", "HEAD"])?;
    Some(match git(&dir, &["log", "-1", "--format=%cs", "HEAD"]) {
        Some(date) => format!("{commit} {date}"),
        None => commit,
    })
}
