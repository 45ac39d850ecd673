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
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::IntoResponse;
use axum::response::Response;
use axum::Router;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::Value;
use std::convert::Infallible;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The MCP Streamable HTTP service of `endpoint` (`/mcp`, `/mcp/buyer`, `/mcp/seller`),
/// with Host and Origin checks derived from the public URL (DNS-rebinding protection) and
/// at most `[limits] max_mcp_sessions` sessions (`max_mcp_sessions_per_client` of them
/// for one client address), each closed after `mcp_session_idle_secs` without a request
/// ([`BoundedSessions`]);
/// the token endpoints are bearer-checked in front by `app::router` ([`protect`]).
pub fn mcp_service(
    holder: AppState,
    endpoint: Endpoint,
    stop: CancellationToken,
) -> StreamableHttpService<IstoServer, BoundedSessions> {
    let h = holder.clone();
    let limits = holder.base.settings.limits;
    let sessions = BoundedSessions::new(
        limits.max_mcp_sessions,
        limits.max_mcp_sessions_per_client,
        std::time::Duration::from_secs(limits.mcp_session_idle_secs),
    );
    StreamableHttpService::new(
        move || Ok(IstoServer::new(h.clone(), endpoint)),
        Arc::new(sessions),
        mcp_config(&holder, stop),
    )
}

/// Streamable HTTP settings shared by the three MCP endpoints: Host and Origin from the
/// public URL, a body limit.
fn mcp_config(holder: &AppState, stop: CancellationToken) -> StreamableHttpServerConfig {
    let url = &holder.base.settings.public_url;
    StreamableHttpServerConfig::default()
        .with_allowed_hosts(url.allowed_hosts())
        .with_allowed_origins(url.allowed_origins())
        .enforce_origin_validation()
        .with_cancellation_token(stop)
        .with_max_request_body_bytes(MAX_BODY_BYTES)
}

/// Largest MCP request body, bytes (rmcp's limit, and the bearer middleware's when it
/// reads a body for its tool names).
const MAX_BODY_BYTES: usize = 256 * 1024;

/// The state of [`require_bearer`]: the handles and the resource it guards.
#[derive(Debug, Clone)]
pub struct BearerGate {
    /// Settings and store (the token lookup).
    pub base: Arc<Base>,
    /// The endpoint guarded.
    pub resource: Resource,
}

/// The bearer middleware of `/mcp/buyer` and `/mcp/seller`: checks the request's bearer
/// token with [`crate::oauth::admit`] for what the access policy asks at the gate's
/// endpoint ([`crate::policy::Action::connect`]: scope `intents` on `/mcp/buyer`, any
/// scope on `/mcp/seller`) and puts the [`crate::oauth::Grant`] into the request's extensions
/// (where the tools find it), or answers with its 401/403/500.
///
/// A POST's body (at most 256 KiB, else 413) is read first for its `tools/call` names
/// (a JSON-RPC message or a batch): a tool the token's scopes do not allow
/// ([`crate::policy::authorize`] of [`Action::Call`], the seller's standing left to the
/// tool) is refused here with HTTP 403 and `WWW-Authenticate: Bearer
/// error="insufficient_scope", scope="…", resource_metadata="…"` (MCP authorization,
/// "Scope challenge handling"), before rmcp dispatches anything.
/// Use with `axum::middleware::from_fn_with_state(gate, require_bearer)`, or [`protect`].
pub async fn require_bearer(State(gate): State<BearerGate>, req: Request, next: Next) -> Response {
    let grant = match crate::oauth::admit(&gate.base, req.headers(), gate.resource) {
        Ok(grant) => grant,
        Err(res) => return res,
    };
    let mut req = if req.method() == Method::POST {
        let (parts, body) = req.into_parts();
        let Ok(bytes) = axum::body::to_bytes(body, MAX_BODY_BYTES).await else {
            return (StatusCode::PAYLOAD_TOO_LARGE, "the request body is over 256 KiB or could not be read\n")
                .into_response();
        };
        let who = Grant::credential(Some(&grant), &gate.base.settings.public_url.base);
        for name in tool_calls(&bytes) {
            let asked = policy::authorize(&who, Action::Call(gate.resource, &name), |_| Ok::<_, Infallible>(true));
            if let Err(Refusal::Denied(d @ Denied::InsufficientScope { .. })) = asked {
                return crate::oauth::refuse(&gate.base, gate.resource, Some(&grant), &d);
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

/// `router` behind [`require_bearer`] for `resource`.
pub fn protect(router: Router, holder: &AppState, resource: Resource) -> Router {
    let gate = BearerGate { base: holder.base.clone(), resource };
    router.layer(axum::middleware::from_fn_with_state(gate, require_bearer))
}

#[cfg(test)]
mod tests {
    use super::tool_calls;

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
}
