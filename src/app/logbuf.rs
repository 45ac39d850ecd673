//! The log writer of `isto serve` ([`Buffered`]): a line at info level or below (the
//! access line of every request above all) is appended to a buffer in memory, which one
//! thread writes to stderr every [`FLUSH_EVERY`], or the caller at once when it holds
//! [`FLUSH_AT`] bytes; a warning or an error is written at once, after what the buffer
//! holds, so lines keep their order. A request's line then costs a copy, not a
//! `write(2)` to the journal (docs/choices.md, "The log is written in batches").
//!
//! What a crash loses: at most the last [`FLUSH_EVERY`] of info lines on `kill -9`;
//! [`flush`] runs at the end of `serve` and before a panic's message ([`install`]).

use std::cell::Cell;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, Once, PoisonError};
use std::time::Duration;
use tracing_subscriber::fmt::MakeWriter;

/// How often the buffered lines are written to stderr.
pub const FLUSH_EVERY: Duration = Duration::from_millis(100);

/// Bytes in the buffer at which the line that reaches them writes them at once (and the
/// capacity the spare buffer keeps between writes).
pub const FLUSH_AT: usize = 64 << 10;

/// The lines not yet written.
static PENDING: Mutex<Vec<u8>> = Mutex::new(Vec::new());

/// Held while a batch is written (so batches reach stderr in the order they were taken);
/// the spare buffer swapped with [`PENDING`].
static WRITING: Mutex<Vec<u8>> = Mutex::new(Vec::new());

/// Whether the thread of [`install`] runs: until it does, every line is written at once.
static FLUSHING: AtomicBool = AtomicBool::new(false);

/// The `MakeWriter` of the log layer: a [`Line`] per event, written at once for a
/// warning or an error.
#[derive(Debug, Clone, Copy, Default)]
pub struct Buffered;

/// One event's text (tracing-subscriber's fmt layer writes an event in one `write_all`).
#[derive(Debug)]
pub struct Line {
    at_once: bool,
}

impl<'a> MakeWriter<'a> for Buffered {
    type Writer = Line;

    fn make_writer(&'a self) -> Line {
        Line { at_once: !FLUSHING.load(Ordering::Relaxed) }
    }

    fn make_writer_for(&'a self, meta: &tracing::Metadata<'_>) -> Line {
        Line { at_once: *meta.level() <= tracing::Level::WARN || !FLUSHING.load(Ordering::Relaxed) }
    }
}

impl Write for Line {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let _here = Here::enter();
        let full = {
            let mut pending = PENDING.lock().unwrap_or_else(PoisonError::into_inner);
            pending.extend_from_slice(bytes);
            pending.len() >= FLUSH_AT
        };
        if self.at_once || full {
            flush();
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

thread_local! {
    /// Whether this thread is inside [`Line::write`] or [`flush`] (and may hold a lock).
    static HERE: Cell<bool> = const { Cell::new(false) };
}

/// Marks this thread as inside the writer until dropped (nested marks keep it marked).
struct Here(bool);

impl Here {
    fn enter() -> Here {
        Here(HERE.with(|h| h.replace(true)))
    }
}

impl Drop for Here {
    fn drop(&mut self) {
        HERE.with(|h| h.set(self.0));
    }
}

/// Writes the buffered lines to stderr (nothing when there are none). A failed write
/// drops them: there is nowhere else to report it.
pub fn flush() {
    let _here = Here::enter();
    let mut batch = WRITING.lock().unwrap_or_else(PoisonError::into_inner);
    std::mem::swap(&mut *PENDING.lock().unwrap_or_else(PoisonError::into_inner), &mut *batch);
    if batch.is_empty() {
        return;
    }
    let _ = io::stderr().lock().write_all(&batch);
    batch.clear();
    batch.shrink_to(FLUSH_AT);
}

/// Starts the thread that writes the buffer every [`FLUSH_EVERY`] and makes a panic
/// write it before its message (once per process; the log layer is given [`Buffered`]).
pub fn install() {
    static STARTED: Once = Once::new();
    STARTED.call_once(|| {
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            // Not when this thread panicked inside the writer: it may hold a lock. Another
            // thread's write is waited for.
            if !HERE.with(Cell::get) {
                flush();
            }
            hook(info);
        }));
        let spawned = std::thread::Builder::new().name("isto-log".into()).spawn(|| loop {
            std::thread::sleep(FLUSH_EVERY);
            flush();
        });
        // Without the thread every line is written as it comes.
        FLUSHING.store(spawned.is_ok(), Ordering::Relaxed);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_wait_in_the_buffer_until_a_flush_or_a_warning() {
        // Only this test writes through `Line` in the unit tests' process.
        let mut info = Line { at_once: false };
        info.write_all(b"one\n").unwrap();
        assert_eq!(&*PENDING.lock().unwrap(), b"one\n");
        flush();
        assert!(PENDING.lock().unwrap().is_empty());
        info.write_all(b"two\n").unwrap();
        let mut warn = Line { at_once: true };
        warn.write_all(b"three\n").unwrap();
        assert!(PENDING.lock().unwrap().is_empty(), "a warning writes what the buffer holds, itself last");
        let big = vec![b'x'; FLUSH_AT];
        info.write_all(&big).unwrap();
        assert!(PENDING.lock().unwrap().is_empty(), "a full buffer is written at once");
    }
}
