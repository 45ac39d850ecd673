//! The rmcp Streamable HTTP services of the three MCP endpoints (`/mcp`, `/mcp/buyer`,
//! `/mcp/seller`), built in one place for `isto serve` and the tests alike: Host and
//! Origin checks derived from the public URL (DNS-rebinding protection), a body limit,
//! the server's cancellation token; and the one bearer middleware in front of the two
//! OAuth-protected endpoints ([`require_bearer`], [`protect`]).

use super::sessions::BoundedSessions;
use super::{Endpoint, IstoServer};
use crate::base::Base;
use crate::oauth::Grant;
use crate::policy::{self, Action, Denied, Refusal, Resource};
use crate::state::AppState;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::handler::Handler as _;
use axum::http::{header, Method, StatusCode};
use axum::middleware::Next;
use axum::response::IntoResponse;
use axum::response::Response;
use axum::Router;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::Value;
use std::convert::Infallible;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// rmcp's Streamable HTTP service of an endpoint, shared: rmcp's own `call` clones it
/// (its settings, with the Host and Origin lists) for every request, and so did each
/// layer in front of it; held in an `Arc`, a request costs one reference count.
type Rmcp = Arc<StreamableHttpService<IstoServer, BoundedSessions>>;

/// The MCP endpoint `endpoint` mounted at `path` (`/mcp`, `/mcp/buyer`, `/mcp/seller`,
/// and every path under it): rmcp's Streamable HTTP service with Host and Origin checks
/// derived from the public URL (DNS-rebinding protection) and at most `[limits]
/// max_mcp_sessions` sessions (`max_mcp_sessions_per_client` of them for one client
/// address), each closed after `mcp_session_idle_secs` without a request
/// ([`BoundedSessions`]), behind [`serve`]: the front of every MCP request. The bearer
/// checks of the token endpoints are layered on by `app::router` ([`protect`]).
pub fn mcp_service(holder: AppState, endpoint: Endpoint, path: &str, stop: CancellationToken) -> Router {
    let server = IstoServer::new(holder.clone(), endpoint);
    let limits = holder.base.settings().limits;
    let sessions = BoundedSessions::new(
        limits.max_mcp_sessions,
        limits.max_mcp_sessions_per_client,
        std::time::Duration::from_secs(limits.mcp_session_idle_secs),
    );
    let service: Rmcp = Arc::new(StreamableHttpService::new(
        // A clone shares the tool list and the `initialize` answer (built once here).
        move || Ok(server.clone()),
        Arc::new(sessions),
        mcp_config(&holder, stop),
    ));
    // The handler as a service of its own (no method router around it: any method).
    Router::new().nest_service(path, serve.with_state(service))
}

/// The front of every MCP request, in one handler (a layer per step would clone what is
/// under it per request): an `initialize` naming a newer version in its header too is
/// negotiated down ([`negotiate_initialize`]); a client that accepts only JSON gets JSON
/// ([`json_only_request`], [`json_answer`]); a session refused at the cap gets 503
/// ([`super::sessions::refusal_answer`]); rmcp answers the rest.
async fn serve(State(rmcp): State<Rmcp>, req: Request) -> Response {
    let mut req = match negotiate_initialize(req).await {
        Ok(req) => req,
        Err(refused) => return refused,
    };
    let json = json_only_request(&mut req);
    let post = req.method() == Method::POST;
    let slot = super::sessions::refusal_slot(&mut req);
    let res = rmcp.handle(req).await.map(Body::new);
    let res = super::sessions::refusal_answer(res, slot.as_ref());
    if json {
        json_answer(res).await
    } else if post {
        with_priming_held(res).await
    } else {
        res
    }
}

/// Streamable HTTP settings shared by the three MCP endpoints: Host and Origin from the
/// public URL, a body limit.
fn mcp_config(holder: &AppState, stop: CancellationToken) -> StreamableHttpServerConfig {
    let url = &holder.base.settings().public_url;
    StreamableHttpServerConfig::default()
        .with_allowed_hosts(url.allowed_hosts())
        .with_allowed_origins(url.allowed_origins())
        .enforce_origin_validation()
        // A 2026-07-28 (stateless) request whose handler answers at once gets its
        // response as `application/json` rather than a one-event SSE stream.
        .with_json_response(true)
        .with_cancellation_token(stop)
        .with_max_request_body_bytes(MAX_BODY_BYTES)
}

/// Largest MCP request body, bytes (rmcp's limit, and the bearer middleware's when it
/// reads a body for its tool names).
const MAX_BODY_BYTES: usize = 256 * 1024;

/// The bearer middleware of `/mcp/buyer` and `/mcp/seller`: checks the request's bearer
/// token with [`crate::oauth::admit`] for what the access policy asks at the guarded
/// endpoint ([`crate::policy::Action::connect`]: scope `intents` on `/mcp/buyer`, any
/// scope on `/mcp/seller`) and puts the [`crate::oauth::Grant`] into the request's extensions
/// (where the tools find it), or answers with its 401/403/500.
///
/// A POST's body (at most 256 KiB, else 413) is read first for its `tools/call` names
/// (a JSON-RPC message or a batch): a tool the token's scopes do not allow
/// ([`crate::policy::authorize`] of [`Action::Call`], the seller's standing left to the
/// tool) is refused here with HTTP 403 and `WWW-Authenticate: Bearer
/// error="insufficient_scope", scope="…", resource_metadata="…"` (MCP authorization,
/// "Scope challenge handling"), before rmcp dispatches anything. In place with [`protect`].
async fn require_bearer(State((base, resource)): State<(Arc<Base>, Resource)>, req: Request, next: Next) -> Response {
    // A header that is not visible ASCII reads as none: the plain 401 challenge.
    let authorization = req.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
    let grant = match crate::oauth::admit(&base, authorization, resource) {
        Ok(grant) => grant,
        // The response of an `OAuthError` is built by the web face (`crate::web::oauth`).
        Err(refused) => return refused.into_response(),
    };
    let mut req = if req.method() == Method::POST {
        let (parts, body) = req.into_parts();
        let Ok(bytes) = axum::body::to_bytes(body, MAX_BODY_BYTES).await else {
            return (StatusCode::PAYLOAD_TOO_LARGE, "the request body is over 256 KiB or could not be read\n")
                .into_response();
        };
        let who = Grant::credential(Some(&grant), &base.settings().public_url.base);
        let endpoint = resource.endpoint();
        // A name the endpoint does not offer is left to rmcp ("unknown tool").
        for tool in tool_calls(&bytes).iter().filter_map(|n| endpoint.tool(n)) {
            let asked = policy::authorize(&who, Action::Call(endpoint, tool), |_| Ok::<_, Infallible>(true));
            if let Err(Refusal::Denied(d @ Denied::InsufficientScope { .. })) = asked {
                return crate::oauth::refuse(&base, resource, Some(&grant), &d).into_response();
            }
        }
        Request::from_parts(parts, Body::from(bytes))
    } else {
        req
    };
    req.extensions_mut().insert(grant);
    next.run(req).await
}

/// The tool names of the `tools/call` requests in a JSON-RPC body (one message or a
/// batch); nothing for a body that is not JSON (rmcp answers it).
fn tool_calls(body: &[u8]) -> Vec<String> {
    let Ok(v) = serde_json::from_slice::<Value>(body) else { return Vec::new() };
    let messages = match v {
        Value::Array(a) => a,
        other => vec![other],
    };
    messages
        .iter()
        .filter(|m| m.get("method").and_then(Value::as_str) == Some("tools/call"))
        .filter_map(|m| m.pointer("/params/name").and_then(Value::as_str).map(str::to_owned))
        .collect()
}

/// The `Accept` value rmcp needs on a POST (it answers 406 without both types).
const ACCEPT_BOTH: &str = "application/json, text/event-stream";

/// Largest SSE answer [`accept_json`] turns into JSON, bytes.
const MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;

/// How long [`accept_json`] waits for the JSON-RPC response in an SSE answer.
const ANSWER_WAIT: std::time::Duration = std::time::Duration::from_secs(120);

/// Whether a POST's `Accept` lets the client read JSON but not an SSE stream: no
/// `Accept` at all (RFC 9110 §12.5.1: any type), or `application/json`, `application/*`
/// or `*/*` without `text/event-stream` (weights of 0 excluded).
fn json_only(headers: &axum::http::HeaderMap) -> bool {
    let mut values = headers.get_all(header::ACCEPT).iter().peekable();
    if values.peek().is_none() {
        return true;
    }
    let (mut json, mut sse) = (false, false);
    for value in values {
        let Ok(value) = value.to_str() else { return false };
        for item in value.split(',') {
            let mut parts = item.split(';');
            let essence = parts.next().unwrap_or("").trim();
            let refused = parts
                .any(|p| p.trim().strip_prefix("q=").is_some_and(|q| q.trim().parse::<f32>().is_ok_and(|q| q <= 0.0)));
            if refused {
                continue;
            }
            let is = |t: &str| essence.eq_ignore_ascii_case(t);
            sse |= is("text/event-stream");
            json |= is("application/json") || is("application/*") || is("*/*");
        }
    }
    json && !sse
}

/// Whether `req` comes from a client that accepts only JSON (MCP Streamable HTTP lets a
/// server answer a POST with either `application/json` or an SSE stream): a POST whose
/// `Accept` reads JSON only ([`json_only`]) is passed to rmcp (which refuses anything
/// without both types with 406) as accepting both, and marked
/// [`super::elicit::JsonOnly`] so that no request is sent to it during the call; its
/// answer goes through [`json_answer`].
fn json_only_request(req: &mut Request) -> bool {
    if req.method() != Method::POST || !json_only(req.headers()) {
        return false;
    }
    req.headers_mut().insert(header::ACCEPT, axum::http::HeaderValue::from_static(ACCEPT_BOTH));
    req.extensions_mut().insert(super::elicit::JsonOnly);
    true
}

/// The answer for a client that accepts only JSON ([`json_only_request`]): an SSE answer
/// is read (at most 16 MiB, 120 s) up to its JSON-RPC response, answered alone as
/// `application/json` with the same status and headers; notifications and progress before
/// it are dropped (such a client cannot read them). Any other answer is `res` unchanged.
async fn json_answer(res: Response) -> Response {
    if !is_sse(&res) {
        return res;
    }
    let (mut parts, body) = res.into_parts();
    let Ok(Some(answer)) = tokio::time::timeout(ANSWER_WAIT, first_response(body)).await else {
        return (StatusCode::BAD_GATEWAY, "the MCP answer ended without a JSON-RPC response\n").into_response();
    };
    for h in ["content-type", "content-length", "cache-control", "x-accel-buffering"] {
        parts.headers.remove(h);
    }
    parts.headers.insert(header::CONTENT_TYPE, axum::http::HeaderValue::from_static("application/json"));
    Response::from_parts(parts, Body::from(answer))
}

/// Whether `res` is an SSE stream (`Content-Type: text/event-stream`).
fn is_sse(res: &Response) -> bool {
    res.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with("text/event-stream"))
}

/// How long the SSE answer to a POST may hold back its head and rmcp's priming event
/// waiting for its first message ([`with_priming_held`]).
const PRIMING_HOLD: std::time::Duration = std::time::Duration::from_millis(100);

/// The SSE answer to a POST (a 2025-11-25 session's request) with its head and rmcp's
/// priming event (SEP-1699: an event id and a retry hint, no data) held until the
/// answer's first message is ready, at most [`PRIMING_HOLD`]: hyper then writes the
/// head, the priming event and the message in one socket write instead of two (the
/// second was a tenth of a publish's CPU). A longer call gets its head and priming
/// event after [`PRIMING_HOLD`], its messages as they come. Chunks pass unchanged and
/// in order; a stream that ends or fails during the hold ends or fails after what it
/// sent. Any other answer is `res` unchanged.
async fn with_priming_held(res: Response) -> Response {
    if !is_sse(&res) {
        return res;
    }
    let (parts, body) = res.into_parts();
    let mut rest = Some(body.into_data_stream());
    let mut held = std::collections::VecDeque::new();
    // Chunks up to the first that carries a message (a JSON object), the end, an error
    // or the hold's end, whichever comes first.
    let _ = tokio::time::timeout(PRIMING_HOLD, async {
        while let Some(stream) = rest.as_mut() {
            match next_chunk(stream).await {
                Some(Ok(chunk)) => {
                    let message = chunk.contains(&b'{');
                    held.push_back(Ok(chunk));
                    if message {
                        return;
                    }
                }
                Some(Err(e)) => {
                    held.push_back(Err(e));
                    rest = None;
                }
                None => rest = None,
            }
        }
    })
    .await;
    Response::from_parts(parts, Body::from_stream(Prepend { first: held, rest }))
}

/// The next chunk of a body; `None` at its end.
async fn next_chunk(stream: &mut axum::body::BodyDataStream) -> Option<Result<axum::body::Bytes, axum::Error>> {
    use futures_core::Stream;
    std::future::poll_fn(|cx| std::pin::Pin::new(&mut *stream).poll_next(cx)).await
}

/// A body stream of `first`, then `rest` ([`with_priming_held`]).
struct Prepend {
    first: std::collections::VecDeque<Result<axum::body::Bytes, axum::Error>>,
    rest: Option<axum::body::BodyDataStream>,
}

impl futures_core::Stream for Prepend {
    type Item = Result<axum::body::Bytes, axum::Error>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        if let Some(item) = self.first.pop_front() {
            return std::task::Poll::Ready(Some(item));
        }
        match self.rest.as_mut() {
            Some(rest) => std::pin::Pin::new(rest).poll_next(cx),
            None => std::task::Poll::Ready(None),
        }
    }
}

/// Reads an SSE body event by event until one whose data is a JSON-RPC response (an
/// object with `id` and `result` or `error`); that data. None when the stream ends (or
/// passes [`MAX_ANSWER_BYTES`]) without one.
async fn first_response(body: Body) -> Option<String> {
    let mut stream = body.into_data_stream();
    let mut buf: Vec<u8> = Vec::new();
    loop {
        while let Some(end) = event_end(&buf) {
            let event: Vec<u8> = buf.drain(..end.1).collect();
            if let Some(data) = response_data(&event[..end.0]) {
                return Some(data);
            }
        }
        let chunk = next_chunk(&mut stream).await?.ok()?;
        buf.extend_from_slice(&chunk);
        if buf.len() > MAX_ANSWER_BYTES {
            return None;
        }
    }
}

/// The end of the first SSE event in `buf`: (end of its text, end of its blank-line
/// separator), for `\n\n`, `\r\n\r\n` or `\r\r`.
fn event_end(buf: &[u8]) -> Option<(usize, usize)> {
    [&b"\r\n\r\n"[..], b"\n\n", b"\r\r"]
        .iter()
        .filter_map(|sep| buf.windows(sep.len()).position(|w| w == *sep).map(|i| (i, i + sep.len())))
        .min()
}

/// The data of one SSE event (its `data:` lines joined with newlines) when it is a
/// JSON-RPC response.
fn response_data(event: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(event).ok()?;
    let lines: Vec<&str> =
        text.lines().filter_map(|l| l.strip_prefix("data:")).map(|d| d.strip_prefix(' ').unwrap_or(d)).collect();
    if lines.is_empty() {
        return None;
    }
    let data = lines.join("\n");
    let v: Value = serde_json::from_str(&data).ok()?;
    (v.get("id").is_some() && (v.get("result").is_some() || v.get("error").is_some())).then_some(data)
}

/// The header that carries the protocol version on HTTP (MCP 2025-11-25 transports,
/// "Protocol Version Header"; MCP 2026-07-28 Streamable HTTP, the same name).
const PROTOCOL_VERSION_HEADER: &str = "mcp-protocol-version";

/// The step of [`serve`] that lets an `initialize` naming a newer
/// protocol version than isto knows be negotiated down rather than refused (MCP
/// 2025-11-25 lifecycle, "Version Negotiation": the server MUST answer with a version it
/// supports; the `MCP-Protocol-Version` header belongs to the requests *after*
/// initialization, and MCP 2026-07-28 keeps `initialize` on those semantics). rmcp
/// refuses a header naming a version it does not know with 400 before it looks at the
/// method, so a POST whose header names such a version and whose body (at most 256 KiB)
/// is one `initialize` request naming that same version goes on without the header: rmcp
/// negotiates from the body. A header that differs from the body is left for rmcp to
/// refuse (400); every other request passes unchanged, unread. The error is the 413
/// answer to a body over 256 KiB.
async fn negotiate_initialize(req: Request) -> Result<Request, Response> {
    let unknown = req.method() == Method::POST
        && req.headers().get(PROTOCOL_VERSION_HEADER).is_some_and(|v| !known_version(v.as_bytes()));
    if !unknown {
        return Ok(req);
    }
    let (mut parts, body) = req.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_BODY_BYTES).await else {
        return Err(
            (StatusCode::PAYLOAD_TOO_LARGE, "the request body is over 256 KiB or could not be read\n").into_response()
        );
    };
    let header = parts.headers.get(PROTOCOL_VERSION_HEADER).map(|v| v.as_bytes().to_vec());
    if header.is_some_and(|h| initialize_version(&bytes).is_some_and(|b| b.as_bytes() == h)) {
        parts.headers.remove(PROTOCOL_VERSION_HEADER);
    }
    Ok(Request::from_parts(parts, Body::from(bytes)))
}

/// Whether rmcp knows the protocol version `v` (a header's bytes).
fn known_version(v: &[u8]) -> bool {
    rmcp::model::ProtocolVersion::KNOWN_VERSIONS.iter().any(|k| k.as_str().as_bytes() == v)
}

/// The `params.protocolVersion` of a body that is one JSON-RPC `initialize` request.
fn initialize_version(body: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(body).ok()?;
    if v.get("method").and_then(Value::as_str) != Some("initialize") || v.get("id").is_none() {
        return None;
    }
    v.pointer("/params/protocolVersion").and_then(Value::as_str).map(str::to_owned)
}

/// `router` behind [`require_bearer`] for `resource`.
pub fn protect(router: Router, holder: &AppState, resource: Resource) -> Router {
    router.layer(axum::middleware::from_fn_with_state((holder.base.clone(), resource), require_bearer))
}

#[cfg(test)]
mod tests {
    use super::{event_end, initialize_version, json_only, known_version, response_data, tool_calls};
    use super::{next_chunk, with_priming_held, Body, Response, PRIMING_HOLD};
    use axum::body::Bytes;
    use std::time::Duration;
    use tokio::time::Instant;

    /// A body of the chunks sent on the channel it returns, ended when the sender drops.
    struct Chunks(tokio::sync::mpsc::Receiver<Bytes>);

    impl futures_core::Stream for Chunks {
        type Item = Result<Bytes, std::convert::Infallible>;
        fn poll_next(
            mut self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Self::Item>> {
            self.0.poll_recv(cx).map(|c| c.map(Ok))
        }
    }

    fn sse(rx: tokio::sync::mpsc::Receiver<Bytes>) -> Response {
        let mut res = Response::new(Body::from_stream(Chunks(rx)));
        res.headers_mut().insert(axum::http::header::CONTENT_TYPE, "text/event-stream".parse().unwrap());
        res
    }

    async fn frames(res: Response) -> Vec<Bytes> {
        let mut stream = res.into_body().into_data_stream();
        let mut out = Vec::new();
        while let Some(chunk) = next_chunk(&mut stream).await {
            out.push(chunk.unwrap());
        }
        out
    }

    const PRIMING: &[u8] = b"id: 0\nretry: 3000\ndata: \n\n";
    const ANSWER: &[u8] = b"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n";

    // The tests run on tokio's paused clock: a sleep ends when every task waits, so the
    // times below are exact.
    #[tokio::test(start_paused = true)]
    async fn a_prompt_answer_goes_out_with_its_head_and_priming_event() {
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        tx.send(Bytes::from_static(PRIMING)).await.unwrap();
        let answer = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(5)).await;
            tx.send(Bytes::from_static(ANSWER)).await.unwrap();
        });
        let t = Instant::now();
        let res = with_priming_held(sse(rx)).await;
        assert_eq!(t.elapsed(), Duration::from_millis(5), "the head waits for the answer");
        assert_eq!(frames(res).await, vec![Bytes::from_static(PRIMING), Bytes::from_static(ANSWER)]);
        answer.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_answer_gets_its_head_and_priming_event_after_the_hold() {
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        tx.send(Bytes::from_static(PRIMING)).await.unwrap();
        let t = Instant::now();
        let res = with_priming_held(sse(rx)).await;
        assert_eq!(t.elapsed(), PRIMING_HOLD);
        tx.send(Bytes::from_static(ANSWER)).await.unwrap();
        drop(tx);
        assert_eq!(frames(res).await, vec![Bytes::from_static(PRIMING), Bytes::from_static(ANSWER)]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_stream_that_ends_during_the_hold_ends_after_what_it_sent() {
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        tx.send(Bytes::from_static(PRIMING)).await.unwrap();
        drop(tx);
        let t = Instant::now();
        let res = with_priming_held(sse(rx)).await;
        assert_eq!(t.elapsed(), Duration::ZERO, "nothing to wait for");
        assert_eq!(frames(res).await, vec![Bytes::from_static(PRIMING)]);
    }

    #[tokio::test]
    async fn other_answers_pass_unchanged() {
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        tx.send(Bytes::from_static(ANSWER)).await.unwrap();
        drop(tx);
        // A first message is not held; an ended stream ends.
        assert_eq!(frames(with_priming_held(sse(rx)).await).await, vec![Bytes::from_static(ANSWER)]);
        let json = Response::new(Body::from("{}"));
        assert_eq!(frames(with_priming_held(json).await).await, vec![Bytes::from_static(b"{}")]);
    }

    #[test]
    fn json_only_clients_are_those_that_cannot_read_sse() {
        let accept = |v: &str| {
            let mut h = axum::http::HeaderMap::new();
            h.insert(axum::http::header::ACCEPT, v.parse().unwrap());
            json_only(&h)
        };
        assert!(accept("application/json"));
        assert!(accept("*/*"));
        assert!(accept("application/*;q=0.5"));
        assert!(accept("application/json, text/event-stream;q=0"));
        assert!(json_only(&axum::http::HeaderMap::new()), "no Accept: any type");
        assert!(!accept("application/json, text/event-stream"));
        assert!(!accept("text/event-stream"));
        assert!(!accept("text/html"));
        assert!(!accept("application/json;q=0"));
    }

    #[test]
    fn the_response_is_found_among_sse_events() {
        let stream = b"data: \nid: 0\nretry: 3000\n\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n";
        let mut rest = &stream[..];
        let mut found = Vec::new();
        while let Some((text, next)) = event_end(rest) {
            found.push(response_data(&rest[..text]));
            rest = &rest[next..];
        }
        assert_eq!(found, vec![None, None, Some(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#.to_owned())]);
        assert_eq!(event_end(b"data: x\r\n\r\nmore"), Some((7, 11)));
        assert!(response_data(br#"data: {"jsonrpc":"2.0","id":2,"error":{"code":1,"message":"m"}}"#).is_some());
    }

    #[test]
    fn tool_names_come_from_tools_call_messages_and_batches_only() {
        let one = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"intent_submit_offer"}}"#;
        assert_eq!(tool_calls(one), vec!["intent_submit_offer"]);
        let batch = br#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"},
            {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"a"}},
            {"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":7}}]"#;
        assert_eq!(tool_calls(batch), vec!["a"]);
        assert!(tool_calls(br#"{"method":"initialize"}"#).is_empty());
        assert!(tool_calls(b"not json").is_empty());
        assert!(tool_calls(b"").is_empty());
    }

    #[test]
    fn only_a_single_initialize_request_names_its_version() {
        let init = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2099-01-01"}}"#;
        assert_eq!(initialize_version(init).as_deref(), Some("2099-01-01"));
        let note = br#"{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":"2099-01-01"}}"#;
        assert_eq!(initialize_version(note), None, "a notification is no request");
        let batch = br#"[{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2099-01-01"}}]"#;
        assert_eq!(initialize_version(batch), None);
        let other = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"protocolVersion":"2099-01-01"}}"#;
        assert_eq!(initialize_version(other), None);
        assert_eq!(initialize_version(b"not json"), None);
        assert!(known_version(b"2025-11-25") && known_version(b"2026-07-28"));
        assert!(!known_version(b"2099-01-01") && !known_version(b""));
    }
}
