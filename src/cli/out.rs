//! Standard output of every command: a reader that goes away is not an error.
//!
//! Rust ignores `SIGPIPE`, so a write to a pipe whose reader has exited (`isto admin
//! stats --json | head -c1`) fails with `EPIPE`, and `println!` turns that into a panic.
//! Everything a command prints goes through [`print()`] instead: on `EPIPE` it drops this
//! and every later write, so the command finishes its work (a backup is still written,
//! an import still stored) and exits with its own status.

use std::fmt::Display;
use std::io::{ErrorKind, Write as _};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once a write to standard output failed with `EPIPE` (the reader exited).
static CLOSED: AtomicBool = AtomicBool::new(false);

/// Writes `bytes` to standard output as they are and flushes it.
///
/// # Errors
/// A write error other than `EPIPE` ("cannot write to standard output: …"). After an
/// `EPIPE`, returns `Ok` and writes nothing more (see the module docs).
pub fn print(bytes: &[u8]) -> anyhow::Result<()> {
    if CLOSED.load(Ordering::Relaxed) {
        return Ok(());
    }
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::BrokenPipe => {
            CLOSED.store(true, Ordering::Relaxed);
            Ok(())
        }
        Err(e) => Err(anyhow::Error::new(e).context("cannot write to standard output")),
    }
}

/// Writes `line` and a newline to standard output, as [`print()`] (and its errors).
pub fn print_line(line: impl Display) -> anyhow::Result<()> {
    print(format!("{line}\n").as_bytes())
}

/// A command's report: with `json`, `report` as one line of JSON; else what `human`
/// prints of it.
///
/// # Errors
/// As [`print_line`]; `human`'s own error.
pub fn print_json_or<T: serde::Serialize>(
    json: bool,
    report: &T,
    human: impl FnOnce() -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    if json {
        print_line(serde_json::to_string(report)?)
    } else {
        human()
    }
}

/// Whether a write to standard output has met `EPIPE` in this process (its reader is
/// gone; [`print()`] drops every write since).
pub fn stdout_closed() -> bool {
    CLOSED.load(Ordering::Relaxed)
}
