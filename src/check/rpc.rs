//! The check's MCP client: JSON-RPC over Streamable HTTP (MCP 2025-11-25 "Transports")
//! for the two revisions, over [`crate::outbound::Probe`] — every request bounded in time
//! and size. 2025-11-25: `initialize`, `notifications/initialized`, then requests with
//! `Mcp-Session-Id` and `MCP-Protocol-Version`, `DELETE` at the end. 2026-07-28:
//! stateless, `server/discover` first, every request with its `_meta` (protocol
//! version, client info, capabilities) and the `MCP-Protocol-Version`, `Mcp-Method` and
//! `Mcp-Name` headers. An answer is read as JSON or from an SSE stream (the event that
//! carries the response to the request's id).

use crate::outbound::{Probe, ProbeResponse};
use serde_json::{json, Value};
use url::Url;

/// The MCP revisions the check speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Revision {
    /// MCP 2025-11-25: `initialize` and sessions.
    V2025,
    /// MCP 2026-07-28: stateless, `server/discover`.
    V2026,
}

impl Revision {
    /// The revision's date string.
    pub fn as_str(self) -> &'static str {
        ["2025-11-25", "2026-07-28"][self as usize]
    }
}

/// Both Accept forms of the transport: an MCP client sends the first; a client that
/// accepts only JSON must be answered too (RFC 9110 §12.5.1).
pub const ACCEPT_BOTH: &str = "application/json, text/event-stream";
/// The JSON-only Accept form.
pub const ACCEPT_JSON: &str = "application/json";

/// One JSON-RPC exchange: the HTTP answer and the JSON-RPC response found in it.
#[derive(Debug, Clone)]
pub struct Exchange {
    /// The HTTP answer (status, headers, body).
    pub http: ProbeResponse,
    /// The JSON-RPC response to the request, if the body held one.
    pub message: Option<Value>,
}

/// A tool call's outcome as a client sees it.
#[derive(Debug, Clone)]
pub struct ToolAnswer {
    /// `result.isError`.
    pub is_error: bool,
    /// A JSON-RPC error instead of a result (`{code, message, data?}`).
    pub rpc_error: Option<Value>,
    /// Every text content, joined by newlines.
    pub text: String,
    /// `result.structuredContent`.
    pub structured: Option<Value>,
    /// The whole HTTP body as received (what the secrets are searched in).
    pub raw: String,
}

impl ToolAnswer {
    /// Whether the call was refused (a tool error or a JSON-RPC error).
    pub fn refused(&self) -> bool {
        self.is_error || self.rpc_error.is_some()
    }

    /// The error a client sees (tool error text or JSON-RPC error message), for the
    /// "names the field" and "indistinguishable" checks.
    pub fn error_text(&self) -> String {
        match &self.rpc_error {
            Some(e) => format!(
                "{} {}",
                e.get("message").and_then(Value::as_str).unwrap_or(""),
                e.get("data").map(Value::to_string).unwrap_or_default()
            ),
            None => self.text.clone(),
        }
    }

    /// The answer's shape and text with the request id left out: two refusals a
    /// client cannot tell apart have the same signature.
    pub fn signature(&self) -> String {
        match &self.rpc_error {
            Some(e) => format!("jsonrpc-error {e}"),
            None => format!(
                "isError={} text={} structured={}",
                self.is_error,
                self.text,
                self.structured.as_ref().map(Value::to_string).unwrap_or_default()
            ),
        }
    }
}

/// An MCP client session on one endpoint in one revision.
pub struct Session {
    probe: Probe,
    url: Url,
    /// The revision spoken.
    pub revision: Revision,
    session_id: Option<String>,
    next_id: u64,
    /// The opening answer: the `initialize` or `server/discover` result.
    pub opened: Value,
    /// The Content-Type of the opening answer.
    pub opened_content_type: String,
}

/// The `_meta` every 2026-07-28 request carries (SEP "stateless requests").
fn meta_2026() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": Revision::V2026.as_str(),
        "io.modelcontextprotocol/clientInfo": {"name": "isto-check", "version": env!("CARGO_PKG_VERSION")},
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

/// The opening request of `revision` (id 1): `initialize` or `server/discover`.
pub fn opening_body(revision: Revision) -> Value {
    match revision {
        Revision::V2025 => json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": Revision::V2025.as_str(),
            "capabilities": {},
            "clientInfo": {"name": "isto-check", "version": env!("CARGO_PKG_VERSION")}
        }}),
        Revision::V2026 => {
            json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta_2026()}})
        }
    }
}

/// The headers of the opening request of `revision` besides `Accept`: on 2026-07-28
/// `MCP-Protocol-Version` and `Mcp-Method`.
pub fn opening_headers(revision: Revision) -> Vec<(&'static str, &'static str)> {
    match revision {
        Revision::V2025 => Vec::new(),
        Revision::V2026 => vec![("mcp-protocol-version", Revision::V2026.as_str()), ("mcp-method", "server/discover")],
    }
}

/// Ends the 2025-11-25 session `id` (`DELETE` with the session id; errors ignored).
pub async fn delete_session(probe: &Probe, url: &Url, revision: Revision, id: &str) {
    let h = [("mcp-session-id", id), ("mcp-protocol-version", revision.as_str())];
    let _ = probe.send("DELETE", url, &h, None, &|_| false).await;
}

/// The JSON-RPC response with `id` in an SSE body, if one has arrived.
fn sse_response(body: &[u8], id: u64) -> Option<Value> {
    let text = String::from_utf8_lossy(body);
    let text = text.replace("\r\n", "\n");
    for event in text.split("\n\n") {
        let data: Vec<&str> =
            event.lines().filter_map(|l| l.strip_prefix("data:")).map(|d| d.strip_prefix(' ').unwrap_or(d)).collect();
        if data.is_empty() {
            continue;
        }
        if let Ok(v) = serde_json::from_str::<Value>(&data.join("\n")) {
            let is_response = v.get("result").is_some() || v.get("error").is_some();
            if is_response && v.get("id").and_then(Value::as_u64) == Some(id) {
                return Some(v);
            }
        }
    }
    None
}

/// Longest `Retry-After` (seconds) a request waits out before it is sent again: a
/// holder that limits the check's pace slows it down rather than failing it.
pub const MAX_RETRY_AFTER_SECS: u64 = 10;
/// How many times one request is sent again after a 429.
const RETRIES_AFTER_429: usize = 3;

/// Whether a 429 is waited out and the request sent again ([`Pace::Patient`]) or
/// returned as it is ([`Pace::Once`], the rate-limit probe).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pace {
    /// Wait `Retry-After` (at most [`MAX_RETRY_AFTER_SECS`], 1 s when absent or a date)
    /// and send again, up to three times.
    Patient,
    /// One send; a 429 is the answer.
    Once,
}

/// The error text of a probe failure of `what` (a method or URL).
pub fn describe(what: &str, e: &crate::outbound::ProbeError) -> String {
    match e {
        crate::outbound::ProbeError::Timeout => {
            format!("{what}: no complete answer within {} s", super::REQUEST_TIMEOUT.as_secs())
        }
        crate::outbound::ProbeError::Deadline => {
            format!("{what}: not sent, the check's overall time limit ({} s) is spent", super::RUN_TIMEOUT.as_secs())
        }
        e => format!("{what}: {e}"),
    }
}

/// One HTTP request of the check: method, URL, headers, body.
pub struct Outgoing<'a> {
    /// `GET`, `POST`, ...
    pub method: &'a str,
    /// Where to.
    pub url: &'a Url,
    /// Header names (lower-case) and values.
    pub headers: &'a [(&'a str, &'a str)],
    /// The body, if any.
    pub body: Option<Vec<u8>>,
}

/// [`Probe::send`] of `out`, waiting out 429 answers as `pace` says; `what` names the
/// request in errors.
///
/// # Errors
/// The probe's error ([`describe`]d with `what`).
pub async fn send_paced(
    probe: &Probe,
    what: &str,
    out: Outgoing<'_>,
    stop_sse: &(dyn Fn(&[u8]) -> bool + Sync),
    pace: Pace,
) -> Result<ProbeResponse, String> {
    let mut attempt = 0;
    loop {
        let r = probe
            .send(out.method, out.url, out.headers, out.body.clone(), stop_sse)
            .await
            .map_err(|e| describe(what, &e))?;
        if r.status != 429 || pace == Pace::Once || attempt == RETRIES_AFTER_429 {
            return Ok(r);
        }
        let wait = r.header("retry-after").and_then(|v| v.trim().parse::<u64>().ok()).unwrap_or(1).max(1);
        if wait > MAX_RETRY_AFTER_SECS {
            return Ok(r);
        }
        attempt += 1;
        tokio::time::sleep(std::time::Duration::from_secs(wait)).await;
    }
}

/// What an HTTP answer that held no JSON-RPC response was: status, content type, and
/// the body's start, a `Location`, or that it was cut at the size limit.
pub fn no_response(what: &str, http: &ProbeResponse) -> String {
    let mut out = format!(
        "{what} answered HTTP {} ({}) without a JSON-RPC response",
        http.status,
        http.header("content-type").unwrap_or("no content type")
    );
    if let Some(loc) = http.header("location") {
        out.push_str(&format!("; Location: {} (redirects are not followed)", super::scan::short(loc)));
    }
    if http.truncated {
        out.push_str(&format!("; the body was over {} bytes and was cut", super::MAX_BODY_BYTES));
    } else if !http.body.is_empty() {
        out.push_str(&format!("; body: \"{}\"", super::scan::short(&String::from_utf8_lossy(&http.body))));
    }
    out
}

/// Sends one JSON-RPC `body` (a request with `id`, or a notification with `id` 0) to
/// `url` with `headers`, and finds its response; a 429 is waited out as `pace` says.
///
/// # Errors
/// The probe's error, as text naming the method.
pub async fn post(
    probe: &Probe,
    url: &Url,
    headers: &[(&str, &str)],
    body: &Value,
    id: u64,
    pace: Pace,
) -> Result<Exchange, String> {
    let mut all: Vec<(&str, &str)> = vec![("content-type", "application/json")];
    all.extend_from_slice(headers);
    let bytes = serde_json::to_vec(body).map_err(|e| e.to_string())?;
    let stop = move |b: &[u8]| sse_response(b, id).is_some();
    let what = body["method"].as_str().unwrap_or("request");
    let out = Outgoing { method: "POST", url, headers: &all, body: Some(bytes) };
    let http = send_paced(probe, what, out, &stop, pace).await?;
    let sse = http.header("content-type").is_some_and(|c| c.starts_with("text/event-stream"));
    let message = if sse {
        sse_response(&http.body, id)
    } else {
        serde_json::from_slice::<Value>(&http.body)
            .ok()
            .filter(|v| v.get("result").is_some() || v.get("error").is_some())
    };
    Ok(Exchange { http, message })
}

impl Session {
    /// Opens a session: `initialize` + `notifications/initialized` (2025-11-25) or
    /// `server/discover` (2026-07-28), with both Accept forms.
    ///
    /// # Errors
    /// What went wrong, for the report (unreachable, an HTTP status, no JSON-RPC result).
    pub async fn open(probe: &Probe, url: &Url, revision: Revision) -> Result<Self, String> {
        let body = opening_body(revision);
        let mut headers = opening_headers(revision);
        headers.push(("accept", ACCEPT_BOTH));
        let ex = post(probe, url, &headers, &body, 1, Pace::Patient).await?;
        let Some(msg) = ex.message else {
            return Err(no_response(body["method"].as_str().unwrap_or(""), &ex.http));
        };
        let Some(result) = msg.get("result").cloned() else {
            return Err(format!("{} was refused: {}", body["method"].as_str().unwrap_or(""), msg["error"]));
        };
        let s = Self {
            probe: probe.clone(),
            url: url.clone(),
            revision,
            session_id: ex.http.header("mcp-session-id").map(str::to_owned),
            next_id: 2,
            opened: result,
            opened_content_type: ex.http.header("content-type").unwrap_or("").to_owned(),
        };
        if revision == Revision::V2025 {
            let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
            let headers = s.headers(None, None);
            let h: Vec<(&str, &str)> = headers.iter().map(|(a, b)| (*a, b.as_str())).collect();
            post(&s.probe, &s.url, &h, &note, 0, Pace::Patient).await?;
        }
        Ok(s)
    }

    /// Sends the session's later requests with `probe` (the cleanup's later deadline).
    pub fn set_probe(&mut self, probe: Probe) {
        self.probe = probe;
    }

    /// The headers of a request in this session.
    fn headers(&self, method: Option<&str>, name: Option<&str>) -> Vec<(&'static str, String)> {
        let mut h =
            vec![("accept", ACCEPT_BOTH.to_owned()), ("mcp-protocol-version", self.revision.as_str().to_owned())];
        if let Some(id) = &self.session_id {
            h.push(("mcp-session-id", id.clone()));
        }
        if self.revision == Revision::V2026 {
            if let Some(m) = method {
                h.push(("mcp-method", m.to_owned()));
            }
            if let Some(n) = name {
                h.push(("mcp-name", n.to_owned()));
            }
        }
        h
    }

    /// Sends `method` with `params` and returns the exchange, a 429 handled as `pace`
    /// says.
    ///
    /// # Errors
    /// The probe's error, as text.
    pub async fn request(
        &mut self,
        method: &str,
        params: Value,
        name: Option<&str>,
        pace: Pace,
    ) -> Result<Exchange, String> {
        let id = self.next_id;
        self.next_id += 1;
        let mut params = params;
        if self.revision == Revision::V2026 {
            if let Some(p) = params.as_object_mut() {
                p.insert("_meta".into(), meta_2026());
            }
        }
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let headers = self.headers(Some(method), name);
        let h: Vec<(&str, &str)> = headers.iter().map(|(a, b)| (*a, b.as_str())).collect();
        post(&self.probe, &self.url, &h, &body, id, pace).await
    }

    /// `tools/list` (every page, at most 10).
    ///
    /// # Errors
    /// Transport failures and JSON-RPC errors, as text.
    pub async fn list_tools(&mut self) -> Result<Vec<Value>, String> {
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..10 {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let ex = self.request("tools/list", params, None, Pace::Patient).await?;
            let msg = ex.message.ok_or_else(|| no_response("tools/list", &ex.http))?;
            let result = msg.get("result").ok_or_else(|| format!("tools/list refused: {}", msg["error"]))?;
            tools.extend(result.get("tools").and_then(Value::as_array).cloned().unwrap_or_default());
            cursor = result.get("nextCursor").and_then(Value::as_str).map(str::to_owned);
            if cursor.is_none() {
                break;
            }
        }
        Ok(tools)
    }

    /// `tools/call` of `name` with `arguments`.
    ///
    /// # Errors
    /// Transport failures, or an HTTP answer without a JSON-RPC response, as text.
    pub async fn call(&mut self, name: &str, arguments: Value) -> Result<ToolAnswer, String> {
        let args = json!({"name": name, "arguments": arguments});
        let ex = self.request("tools/call", args, Some(name), Pace::Patient).await?;
        let raw = String::from_utf8_lossy(&ex.http.body).into_owned();
        let msg = ex.message.ok_or_else(|| no_response(name, &ex.http))?;
        // A JSON-RPC error instead of a result: nothing of a result is read.
        let rpc_error = msg.get("error").cloned();
        let result = if rpc_error.is_some() { &Value::Null } else { msg.get("result").unwrap_or(&Value::Null) };
        let text = result
            .get("content")
            .and_then(Value::as_array)
            .map(|c| c.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect::<Vec<_>>().join("\n"))
            .unwrap_or_default();
        Ok(ToolAnswer {
            is_error: result.get("isError").and_then(Value::as_bool).unwrap_or(false),
            rpc_error,
            text,
            structured: result.get("structuredContent").cloned(),
            raw,
        })
    }

    /// A request the holder answers cheaply (the rate-limit probe; a 429 is returned,
    /// not waited out): `ping` on
    /// 2025-11-25, `tools/list` on 2026-07-28 (which has no `ping` outside a request);
    /// returns the HTTP answer.
    ///
    /// # Errors
    /// The probe's error, as text.
    pub async fn cheap(&mut self) -> Result<ProbeResponse, String> {
        let method = match self.revision {
            Revision::V2025 => "ping",
            Revision::V2026 => "tools/list",
        };
        Ok(self.request(method, json!({}), None, Pace::Once).await?.http)
    }

    /// Ends the session (2025-11-25: `DELETE` with the session id; errors ignored).
    pub async fn close(self) {
        if let Some(id) = &self.session_id {
            delete_session(&self.probe, &self.url, self.revision, id).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_finds_the_response_to_its_id() {
        let body = b"id: 0\nretry: 3000\ndata: \n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"a\":1}}\n\n";
        assert_eq!(sse_response(body, 7).unwrap()["result"]["a"], 1);
        assert!(sse_response(body, 8).is_none());
        assert!(sse_response(b"data: {\"jsonrpc\":\"2.0\",\"id\":7,\"res", 7).is_none());
    }
}
