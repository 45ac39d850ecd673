//! The accepted TCP stream wrapped so that its traffic is recorded: the idle timeout and
//! the header timeout of [`super::serve_http`] read the record.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// What [`Watched`] saw of its connection: when it was opened, and the last read or write
/// (milliseconds since opening), and whether a byte was ever read.
#[derive(Debug)]
pub(super) struct Activity {
    pub(super) opened: std::time::Instant,
    last_ms: AtomicU64,
    read_any: AtomicBool,
}

impl Activity {
    fn touch(&self, read: bool) {
        let ms = u64::try_from(self.opened.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.store(ms, Ordering::Relaxed);
        if read {
            self.read_any.store(true, Ordering::Relaxed);
        }
    }
    /// Time since the connection was opened.
    pub(super) fn age(&self) -> Duration {
        self.opened.elapsed()
    }
    /// Time since the last byte read or written (or since opening).
    pub(super) fn silent_for(&self) -> Duration {
        let last = Duration::from_millis(self.last_ms.load(Ordering::Relaxed));
        self.opened.elapsed().saturating_sub(last)
    }
    /// Whether any byte has been read.
    pub(super) fn read_any(&self) -> bool {
        self.read_any.load(Ordering::Relaxed)
    }
}

/// A TCP stream that records its traffic in an [`Activity`] (for the idle timeout).
#[derive(Debug)]
pub(super) struct Watched {
    tcp: tokio::net::TcpStream,
    activity: Arc<Activity>,
}

impl Watched {
    pub(super) fn new(tcp: tokio::net::TcpStream) -> (Self, Arc<Activity>) {
        let activity = Self::activity();
        (Self { tcp, activity: activity.clone() }, activity)
    }

    /// A fresh record: opened now, nothing read or written.
    pub(super) fn activity() -> Arc<Activity> {
        Arc::new(Activity {
            opened: std::time::Instant::now(),
            last_ms: AtomicU64::new(0),
            read_any: AtomicBool::new(false),
        })
    }

    /// `r`, a write's outcome, recorded when it wrote a byte.
    fn wrote(&self, r: Poll<io::Result<usize>>) -> Poll<io::Result<usize>> {
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch(false);
        }
        r
    }
}

impl AsyncRead for Watched {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.tcp).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.touch(true);
        }
        r
    }
}

impl AsyncWrite for Watched {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.tcp).poll_write(cx, data);
        self.wrote(r)
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.tcp).poll_write_vectored(cx, bufs);
        self.wrote(r)
    }
    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_shutdown(cx)
    }
}
