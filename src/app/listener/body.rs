//! The bodies [`super::serve_http`] wraps: [`DeadlineBody`] (`limits.body_read_timeout_secs`)
//! and [`CountedBody`] (`limits.stream_idle_secs`).

use axum::body::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::{Instant, Sleep};

/// Why a [`DeadlineBody`] failed.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// Reading from the connection failed.
    #[error(transparent)]
    Read(#[from] hyper::Error),
    /// The body was not complete within its deadline (seconds from the head).
    #[error("the request body was not complete within {0} s of its head")]
    Late(u64),
}

/// A request body that fails with [`BodyError::Late`] when it is not complete within
/// `limit` of its head, however its bytes are spaced: a body trickled a byte at a time
/// cannot keep its request (and its connection) in flight (unlike a timer restarted on
/// every frame).
pub struct DeadlineBody {
    body: hyper::body::Incoming,
    deadline: Pin<Box<Sleep>>,
    limit: Duration,
    /// Set once the deadline failed a read, so that the request's answer, whatever the
    /// handler made of the error, can be a 408 ([`late_response`]).
    was_late: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl DeadlineBody {
    /// `body`, to be complete within `limit` from now (the head was just read); `was_late`
    /// is set when the deadline fails a read.
    pub fn new(
        body: hyper::body::Incoming,
        limit: Duration,
        was_late: std::sync::Arc<std::sync::atomic::AtomicBool>,
    ) -> Self {
        Self { body, deadline: Box::pin(tokio::time::sleep(limit)), limit, was_late }
    }

    fn late(&self) -> BodyError {
        self.was_late.store(true, std::sync::atomic::Ordering::Release);
        BodyError::Late(self.limit.as_secs())
    }
}

/// The answer to a request whose body came too late, on every route alike (a handler
/// would otherwise answer its read error as it sees fit: 400, 413, 500): 408 Request
/// Timeout (RFC 9110 §15.5.9) with `Connection: close`.
pub fn late_response() -> axum::response::Response {
    use axum::response::IntoResponse;
    let body = "The request body did not arrive in time: send it whole, then try again.\n";
    (axum::http::StatusCode::REQUEST_TIMEOUT, [(axum::http::header::CONNECTION, "close")], body).into_response()
}

impl Body for DeadlineBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let this = &mut *self;
        match Pin::new(&mut this.body).poll_frame(cx) {
            Poll::Ready(Some(Ok(_))) if this.deadline.deadline() <= Instant::now() => {
                Poll::Ready(Some(Err(this.late())))
            }
            Poll::Ready(frame) => Poll::Ready(frame.map(|f| f.map_err(BodyError::Read))),
            Poll::Pending => match this.deadline.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Some(Err(this.late()))),
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// Whether a response with these headers is an event stream (`text/event-stream`).
pub fn is_event_stream(headers: &axum::http::HeaderMap) -> bool {
    headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with("text/event-stream"))
}

/// Whether an event-stream chunk carries an event: a line that is neither empty nor a
/// comment (`:` first, the keep-alive rmcp sends every 15 s; WHATWG HTML §9.2.6).
///
/// Decided by each line's first bytes: an event line (a whole JSON-RPC message, often
/// kilobytes) is not scanned for its end; only comment lines are.
pub fn carries_event(chunk: &[u8]) -> bool {
    let mut rest = chunk;
    loop {
        match rest {
            [] => return false,
            // An empty line, `\n` or `\r\n` (or a last `\r`).
            [b'\n', more @ ..] | [b'\r', b'\n', more @ ..] => rest = more,
            [b'\r'] => return false,
            [b':', ..] => match rest.iter().position(|b| *b == b'\n') {
                Some(end) => rest = &rest[end + 1..],
                None => return false,
            },
            _ => return true,
        }
    }
}

/// A response body that holds `G` (the request's in-flight guard) until it is finished
/// or dropped, and — for an event stream, `idle` set — ends (a clean end of the stream)
/// once `idle` has passed without a chunk that [`carries_event`].
pub struct CountedBody<G> {
    body: axum::body::Body,
    _guard: G,
    idle: Option<(Duration, Pin<Box<Sleep>>)>,
    ended: bool,
}

impl<G> CountedBody<G> {
    /// `body` holding `guard`; an event stream ends after `idle` without an event.
    pub fn new(body: axum::body::Body, guard: G, idle: Option<Duration>) -> Self {
        Self { body, _guard: guard, idle: idle.map(|d| (d, Box::pin(tokio::time::sleep(d)))), ended: false }
    }
}

impl<G: Unpin> Body for CountedBody<G> {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = &mut *self;
        if this.ended {
            return Poll::Ready(None);
        }
        let polled = Pin::new(&mut this.body).poll_frame(cx);
        let Some((idle, timer)) = this.idle.as_mut() else {
            return polled;
        };
        let expired = match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if frame.data_ref().is_some_and(|d| carries_event(d)) {
                    timer.as_mut().reset(Instant::now() + *idle);
                    false
                } else {
                    timer.deadline() <= Instant::now()
                }
            }
            Poll::Pending => timer.as_mut().poll(cx).is_ready(),
            Poll::Ready(_) => false,
        };
        if expired {
            tracing::debug!(idle_secs = idle.as_secs(), "event stream closed: no event within the stream idle time");
            this.ended = true;
            return Poll::Ready(None);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.ended || self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keep_alive_comments_carry_no_event() {
        assert!(!carries_event(b":\n\n"));
        assert!(!carries_event(b": keep-alive\r\n\r\n"));
        assert!(!carries_event(b""));
        assert!(carries_event(b"data: {\"jsonrpc\":\"2.0\"}\n\n"));
        assert!(carries_event(b"id: 3\nretry: 3000\ndata:\n\n"));
        assert!(carries_event(b": hi\ndata: x\n\n"));
        // Lines end with `\n`; a `\r` before it is dropped, one elsewhere is content.
        assert!(!carries_event(b"\r\n\r\n\n\r"));
        assert!(!carries_event(b": a\r\n:b"));
        assert!(carries_event(b"\r\n\rdata\n"));
        assert!(carries_event(b"\n\nevent: message"));
        assert!(carries_event(b": a\r\nx"));
    }

    #[test]
    fn event_streams_are_recognised_by_content_type() {
        let mut h = axum::http::HeaderMap::new();
        assert!(!is_event_stream(&h));
        h.insert(axum::http::header::CONTENT_TYPE, "application/json".parse().unwrap());
        assert!(!is_event_stream(&h));
        h.insert(axum::http::header::CONTENT_TYPE, "Text/Event-Stream; charset=utf-8".parse().unwrap());
        assert!(is_event_stream(&h));
    }

    /// A body of `chunks`, each after `gap`, then nothing without ending.
    fn spaced(chunks: Vec<&'static str>, gap: Duration) -> axum::body::Body {
        struct Spaced(std::vec::IntoIter<&'static str>, Duration, Pin<Box<Sleep>>);
        impl futures_core::Stream for Spaced {
            type Item = Result<Bytes, std::io::Error>;
            fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
                let this = &mut *self;
                if this.2.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                let next = Instant::now() + this.1;
                this.2.as_mut().reset(next);
                match this.0.next() {
                    Some(c) => Poll::Ready(Some(Ok(Bytes::from_static(c.as_bytes())))),
                    None => {
                        this.2.as_mut().reset(Instant::now() + Duration::from_secs(1 << 20));
                        let _ = this.2.as_mut().poll(cx);
                        Poll::Pending
                    }
                }
            }
        }
        axum::body::Body::from_stream(Spaced(chunks.into_iter(), gap, Box::pin(tokio::time::sleep(gap))))
    }

    /// Reads `body` to its end: the chunks read.
    async fn read_all(mut body: CountedBody<()>) -> Vec<String> {
        let mut out = Vec::new();
        while let Some(frame) = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
            if let Ok(d) = frame.unwrap().into_data() {
                out.push(String::from_utf8_lossy(&d).into_owned());
            }
        }
        out
    }

    #[tokio::test]
    async fn a_stream_of_keep_alives_ends_after_the_idle_time_and_events_keep_it_open() {
        let ms = Duration::from_millis;
        let idle = ms(300);
        // Keep-alives every 50 ms: ended about 300 ms after the start, no event seen.
        let started = Instant::now();
        let chunks = read_all(CountedBody::new(spaced(vec![":\n\n"; 100], ms(50)), (), Some(idle))).await;
        let took = started.elapsed();
        assert!(took >= idle && took < ms(1000), "ended after {took:?}");
        assert!(chunks.len() >= 4 && chunks.len() <= 6 && chunks.iter().all(|c| c == ":\n\n"), "{chunks:?}");
        // An event every 200 ms keeps it open until the events stop, then 300 ms more.
        let started = Instant::now();
        let events = vec!["data: a\n\n", "data: b\n\n", "data: c\n\n", "data: d\n\n"];
        let chunks = read_all(CountedBody::new(spaced(events, ms(200)), (), Some(idle))).await;
        assert_eq!(chunks.len(), 4);
        let took = started.elapsed();
        assert!(took >= ms(1100) && took < ms(2000), "ended after {took:?}");
        // Not an event stream (no idle time): never ended early.
        let mut body = CountedBody::new(spaced(vec![":\n\n"; 3], ms(400)), (), None);
        for _ in 0..3 {
            let f = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await;
            assert!(f.is_some(), "a plain body is never ended early");
        }
    }
}
