//! The real `isto admin …`, `isto generate …` and `isto check …` commands with a
//! standard output whose reader has gone away (`isto admin stats --json | head -c1`):
//! every write fails with `EPIPE`. The command exits quietly with its own status, as
//! coreutils do — no panic message, no "Broken pipe" error — and its work is done as if
//! the output went to `/dev/null`.
//!
//! The pipe's read end is closed before the command starts, so every write of the
//! command meets `EPIPE` (no race with a reader that reads a little first).

use std::path::Path;
use std::process::Output;

use crate::fixture;

/// `isto ARGS` with `work/data` as its data directory, stdout a pipe with no reader; to
/// its end (at most 60 s).
fn run_with_closed_stdout(work: &Path, args: &[&str]) -> Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    fixture::run_with_stdout(&work.join("data"), args, writer)
}

/// The command ended with `code`, and said nothing on stderr about the pipe or a panic.
fn assert_quiet(o: &Output, args: &[&str], code: i32) {
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(code), "isto {args:?}: {:?}, stderr: {stderr}", o.status);
    for word in ["panicked", "Broken pipe", "os error 32", "standard output"] {
        assert!(!stderr.contains(word), "isto {args:?} printed {word:?} on stderr: {stderr}");
    }
}

#[test]
fn admin_commands_exit_quietly_when_the_reader_of_stdout_is_gone() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path();

    // init prints a line per step: the first write fails, the store is still made.
    let args = ["admin", "init"];
    assert_quiet(&run_with_closed_stdout(w, &args), &args, 0);
    assert!(w.join("data/isto.redb").is_file(), "admin init did not finish its work");

    let backup = w.join("b.isto-backup");
    let b = backup.to_str().unwrap();
    for args in [
        &["admin", "init", "--json"][..],
        &["admin", "check-config"],
        &["admin", "check-config", "--json"],
        &["admin", "stats"],
        &["admin", "stats", "--json"],
        &["admin", "keys", "status", "--json"],
        &["admin", "seller", "list"],
        &["admin", "backup", "--out", b, "--json"],
    ] {
        assert_quiet(&run_with_closed_stdout(w, args), args, 0);
    }
    // The backup was written and is whole, though nobody read its report.
    let args = ["admin", "backup", "--verify", b];
    assert_quiet(&run_with_closed_stdout(w, &args), &args, 0);
    let ok = fixture::run(&w.join("data"), &args);
    assert!(
        String::from_utf8_lossy(&ok.stdout).contains("is a good backup"),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );

    // A failing command keeps its failure status, and with the JSON report undeliverable
    // says why on stderr.
    let missing = w.join("missing.isto-backup");
    let args = ["admin", "backup", "--verify", missing.to_str().unwrap(), "--json"];
    let o = run_with_closed_stdout(w, &args);
    assert_quiet(&o, &args, 1);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("missing.isto-backup"), "no error on stderr: {stderr}");
}

#[test]
fn generate_and_check_exit_quietly_when_the_reader_of_stdout_is_gone() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let (man, reference) = (w.join("man"), w.join("reference"));
    let (man, reference) = (man.to_str().unwrap(), reference.to_str().unwrap());
    for args in [
        &["generate", "completions", "bash"][..],
        &["generate", "config"],
        &["generate", "man", "--out", man],
        &["generate", "man", "--out", man, "--json"],
        &["generate", "reference", "--out", reference, "--json"],
        &["generate", "reference", "--out", reference, "--check"],
    ] {
        assert_quiet(&run_with_closed_stdout(w, args), args, 0);
    }
    // The pages were written, though nobody read the report.
    assert!(std::path::Path::new(man).join("isto.1").is_file(), "generate man wrote no isto.1");

    // A check that cannot run (nothing listens on port 1) keeps its status 2, and with its
    // JSON report undeliverable says why on stderr.
    let args = ["check", "http://127.0.0.1:1/mcp", "--json"];
    let o = run_with_closed_stdout(w, &args);
    assert_quiet(&o, &args, 2);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("the check could not run"), "no error on stderr: {stderr}");
}
