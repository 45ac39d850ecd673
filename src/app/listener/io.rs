//! The accepted TCP stream wrapped so that its traffic is recorded: the idle timeout and
//! the header timeout of [`super::serve_http`] read the record.

use std::sync::Arc;
use std::time::Duration;

/// What [`Watched`] saw of its connection: when it was opened, and the last read or write
/// (milliseconds since opening), and whether a byte was ever read.
#[derive(Debug)]
pub(super) struct Activity {
    pub(super) opened: std::time::Instant,
    last_ms: std::sync::atomic::AtomicU64,
    read_any: std::sync::atomic::AtomicBool,
}

impl Activity {
    fn touch(&self, read: bool) {
        use std::sync::atomic::Ordering;
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
        let last = Duration::from_millis(self.last_ms.load(std::sync::atomic::Ordering::Relaxed));
        self.opened.elapsed().saturating_sub(last)
    }
    /// Whether any byte has been read.
    pub(super) fn read_any(&self) -> bool {
        self.read_any.load(std::sync::atomic::Ordering::Relaxed)
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
            last_ms: std::sync::atomic::AtomicU64::new(0),
            read_any: std::sync::atomic::AtomicBool::new(false),
        })
    }
}

impl tokio::io::AsyncRead for Watched {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = std::pin::Pin::new(&mut self.tcp).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.touch(true);
        }
        r
    }
}

impl tokio::io::AsyncWrite for Watched {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        data: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let r = std::pin::Pin::new(&mut self.tcp).poll_write(cx, data);
        if matches!(r, std::task::Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch(false);
        }
        r
    }
    fn poll_write_vectored(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let r = std::pin::Pin::new(&mut self.tcp).poll_write_vectored(cx, bufs);
        if matches!(r, std::task::Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch(false);
        }
        r
    }
    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }
    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.tcp).poll_flush(cx)
    }
    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.tcp).poll_shutdown(cx)
    }
}
