//! The real `isto admin …` commands with a standard output whose reader has gone away
//! (`isto admin stats --json | head -c1`): every write fails with `EPIPE`. The command
//! exits quietly with its own status, as coreutils do — no panic message, no "Broken
//! pipe" error — and its work is done as if the output went to `/dev/null`.
//!
//! The pipe's read end is closed before the command starts, so every write of the
//! command meets `EPIPE` (no race with a reader that reads a little first).

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `isto ARGS` with `data` as its data directory, an empty config, stdout a pipe with
/// no reader; to its end (at most 60 s).
fn run_with_closed_stdout(work: &Path, args: &[&str]) -> Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let mut child = Command::new(env!("CARGO_BIN_EXE_isto"))
        .args(args)
        .env("ISTO_DATA_DIR", work.join("data"))
        .env("ISTO_CONFIG", work.join("isto.toml"))
        .env_remove("ISTO_SMTP_URL")
        .env_remove("NOTIFY_SOCKET")
        .env_remove("RUST_LOG")
        .env_remove("RUST_BACKTRACE")
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("isto {args:?} did not finish in 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
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
    std::fs::write(w.join("isto.toml"), "").unwrap();

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
    let ok = Command::new(env!("CARGO_BIN_EXE_isto")).args(args).output().unwrap();
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
