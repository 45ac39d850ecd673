//! The book's operator commands run for real: the restore drill
//! (`docs/src/operators/restore-drill.sh`, included as it is in "Backups and the restore
//! drill") against a data directory with offers, with the debug `isto` first on `PATH`
//! as the package installs it — and the same drill fails on a damaged backup.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn drill_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src/operators/restore-drill.sh")
}

/// A `PATH` whose first entry holds `isto` (a link to the test build).
fn path_with_isto(dir: &Path) -> String {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_isto"), bin.join("isto")).unwrap();
    format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default())
}

/// `cmd` with the holder's environment: its data directory and an empty config.
fn holder(cmd: &mut Command, work: &Path, path: &str) -> Output {
    cmd.env("PATH", path)
        .env("ISTO_DATA_DIR", work.join("data"))
        .env("ISTO_CONFIG", work.join("isto.toml"))
        .env("TMPDIR", work)
        .env_remove("ISTO_SMTP_URL")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn isto(work: &Path, path: &str, args: &[&str]) -> String {
    let o = holder(Command::new("isto").args(args), work, path);
    let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "isto {args:?}: {text}");
    text
}

#[test]
fn the_restore_drill_of_the_book_passes_on_a_good_backup_and_fails_on_a_damaged_one() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    std::fs::write(w.join("isto.toml"), "").unwrap();
    let path = path_with_isto(w);
    isto(w, &path, &["admin", "init"]);
    let feed = w.join("offers.jsonl");
    std::fs::write(
        &feed,
        "{\"ref\":\"a1\",\"title\":\"Škoda Octavia Combi 2.0 TDI\",\"category\":\"vehicles\",\
          \"attributes\":{\"make\":\"Škoda\",\"model\":\"Octavia\"},\"price\":{\"amount\":12500,\"currency\":\"EUR\"},\
          \"area\":\"SK-BL\",\"seller\":{\"name\":\"AutoPredaj\"},\"url\":\"https://autopredaj.example/1\"}\n\
         {\"ref\":\"a2\",\"title\":\"Škoda Fabia 1.0 TSI\",\"category\":\"vehicles\",\
          \"attributes\":{\"make\":\"Škoda\",\"model\":\"Fabia\"},\"price\":{\"amount\":9000,\"currency\":\"EUR\"},\
          \"area\":\"SK-BL\",\"seller\":{\"name\":\"AutoPredaj\"},\"url\":\"https://autopredaj.example/2\"}\n",
    )
    .unwrap();
    isto(w, &path, &["admin", "offers", "import", feed.to_str().unwrap()]);
    let backup = w.join("nightly.isto-backup");
    let keys = w.join("isto-keys.json");
    isto(w, &path, &["admin", "backup", "--out", backup.to_str().unwrap()]);
    isto(w, &path, &["admin", "keys", "export", "--out", keys.to_str().unwrap()]);

    let drill = |file: &Path| holder(Command::new("sh").arg(drill_script()).arg(file).arg(&keys), w, &path);
    let o = drill(&backup);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "the drill failed:\n{out}\n{err}");
    assert!(out.contains("is a good backup"), "{out}");
    assert!(out.contains("all") && out.contains("sealed values open with the key ring"), "{out}");
    let restored = out.split("== 3.").nth(1).and_then(|s| s.split("== 4.").next()).unwrap_or_default();
    assert!(restored.lines().any(|l| l.split_whitespace().collect::<Vec<_>>() == ["offers", "2"]), "{restored}");
    assert!(
        out.ends_with(&format!("restore drill passed: {} restores with {}\n", backup.display(), keys.display())),
        "{out}"
    );
    let left: Vec<_> = std::fs::read_dir(w)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("isto-drill-"))
        .collect();
    assert!(left.is_empty(), "the drill left its scratch directory behind");

    // A damaged backup: the drill stops at its first step, with the checksum named.
    let mut bytes = std::fs::read(&backup).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x55;
    let bad = w.join("damaged.isto-backup");
    std::fs::write(&bad, &bytes).unwrap();
    let o = drill(&bad);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(!o.status.success(), "a damaged backup passed the drill:\n{out}");
    assert!(!out.contains("== 2."), "the drill went on after a failed check:\n{out}");
    assert!(err.starts_with("error: "), "{err}");
}

/// The `.rs` files under `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Each run of path characters that follows `prefix` in `text`.
fn paths_after<'a>(text: &'a str, prefix: &str) -> Vec<&'a str> {
    text.match_indices(prefix)
        .map(|(i, _)| {
            let rest = &text[i + prefix.len()..];
            let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || "/._-".contains(c))).unwrap_or(rest.len());
            rest[..end].trim_end_matches('.')
        })
        .collect()
}

/// What isto's messages tell an operator to read is in the book, and exists: no message
/// sends them to the README (a short page of links), each `docs/src/….md` a message
/// names is a page of the book, and each page of the packaged book
/// (`/usr/share/doc/isto/book/….html`) is made from one.
#[test]
fn messages_point_to_pages_of_the_book_that_exist() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    let mut problems = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let rel = f.strip_prefix(root).unwrap().display().to_string();
        if text.contains("the README") {
            problems.push(format!("{rel}: sends the reader to the README"));
        }
        for page in paths_after(&text, "docs/src/") {
            if page.ends_with(".md") && !root.join("docs/src").join(page).is_file() {
                problems.push(format!("{rel}: docs/src/{page} is no page of the book"));
            }
        }
        for page in paths_after(&text, "/usr/share/doc/isto/book/") {
            let md = Path::new(page).with_extension("md");
            if page.ends_with(".html") && !root.join("docs/src").join(&md).is_file() {
                problems.push(format!("{rel}: /usr/share/doc/isto/book/{page} has no docs/src/{}", md.display()));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
