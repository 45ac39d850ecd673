//! Build script: names the commit a binary was built from, for `isto --version`
//! (issue 11 point 6): `isto 0.1.0 (abc1234 2026-12-02)`.
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
//! Rust static `web::i18n` includes ([`i18n`]).

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

/// The page languages: `assets/i18n/<lang>.toml` each (as `web::i18n::LANGUAGES`).
const LANGUAGES: [&str; 3] = ["sk", "cs", "en"];

/// The sections of a texts file that are parts of `Ui` (section name → Rust type); any
/// other section is a table of pairs (`attributes`: key → label).
const PARTS: [(&str, &str); 7] = [
    ("account", "AccountText"),
    ("authorize", "AuthorizeText"),
    ("sellers", "SellerText"),
    ("demand", "DemandText"),
    ("mine", "MineText"),
    ("cadence", "CadenceText"),
    ("links", "LinkText"),
];

/// Writes `$OUT_DIR/i18n_<lang>.rs` for each of [`LANGUAGES`]: `static <LANG>: Ui = Ui {
/// ... };`, one field a line, so that the compiler checks every key against the
/// structs of `web::i18n` (a key missing from a file or unknown to the structs fails
/// the build with the key and that file's name). Errors: a file unreadable or not TOML,
/// or a value that is no string, array or table.
fn i18n() -> Result<(), String> {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").ok_or("OUT_DIR is not set")?);
    for lang in LANGUAGES {
        let path = format!("assets/i18n/{lang}.toml");
        println!("cargo:rerun-if-changed={path}");
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
        let table: toml::Table = text.parse().map_err(|e| format!("{path}: {e}"))?;
        let ui = rust_struct("Ui", &table).map_err(|e| format!("{path}: {e}"))?;
        let code = format!("// From {path} by build.rs.\nstatic {}: Ui = {ui};\n", lang.to_uppercase());
        std::fs::write(out.join(format!("i18n_{lang}.rs")), code).map_err(|e| format!("i18n_{lang}.rs: {e}"))?;
    }
    Ok(())
}

/// The struct literal `ty { key: value, ... }` of a table, one field a line.
fn rust_struct(ty: &str, table: &toml::Table) -> Result<String, String> {
    let mut fields = String::new();
    for (key, value) in table {
        fields.push_str(&format!("    {key}: {},\n", rust_value(key, value)?));
    }
    Ok(format!("{ty} {{\n{fields}}}"))
}

/// A value as a Rust expression: a string literal, an array of them, a reference to a
/// part of [`PARTS`], or a slice of `(key, value)` pairs for any other table.
fn rust_value(key: &str, value: &toml::Value) -> Result<String, String> {
    match value {
        toml::Value::String(s) => Ok(format!("{s:?}")),
        toml::Value::Array(items) => {
            let items = items.iter().map(|v| rust_value(key, v)).collect::<Result<Vec<_>, _>>()?;
            Ok(format!("[{}]", items.join(", ")))
        }
        toml::Value::Table(t) => match PARTS.iter().find(|(section, _)| *section == key) {
            Some((_, ty)) => Ok(format!("&{}", rust_struct(ty, t)?)),
            None => {
                let pairs = t.iter().map(|(k, v)| Ok(format!("({k:?}, {})", rust_value(k, v)?)));
                Ok(format!("&[{}]", pairs.collect::<Result<Vec<_>, String>>()?.join(", ")))
            }
        },
        other => Err(format!("{key}: a {} where a text belongs", other.type_str())),
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
