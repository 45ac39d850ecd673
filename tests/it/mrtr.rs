//! `/mcp` over raw JSON-RPC through the production router: the retry rules of MCP
//! 2026-07-28 "Multi Round-Trip Requests" for the consent page's URL-mode elicitation
//! (PROTOCOL.md §4 item 1) — a `requestState` lives `[limits] request_state_secs` (the
//! manual clock moves, nothing sleeps), belongs to its call only, and `inputResponses`
//! without one is refused, making no draft — and the version negotiation of an
//! `initialize` that names a newer version in its `MCP-Protocol-Version` header too
//! (MCP 2025-11-25 lifecycle, "Version Negotiation").

use axum::http::StatusCode;
use axum::Router;
use isto::store::Reads;
use serde_json::{json, Value};

use crate::kit::Fx;

const V2: &str = "2026-07-28";

fn publish_args(n: u32) -> Value {
    json!({"statement": format!("Hľadám Škoda Octavia kombi {n}"), "area": "SK",
           "criteria": {"category": "vehicles", "make": "skoda", "model": "Octavia"}})
}

/// One 2026-07-28 `tools/call` of `name` on `/mcp` by a client that declares
/// `elicitation.url`; `extra` adds `requestState` / `inputResponses` to the params.
fn call(f: &Fx, id: u32, name: &str, args: &Value, extra: Value) -> (StatusCode, Value) {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": V2,
        "io.modelcontextprotocol/clientInfo": {"name": "isto-it", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"url": {}}},
    });
    let mut params = json!({"name": name, "arguments": args, "_meta": meta});
    for (k, v) in extra.as_object().cloned().unwrap_or_default() {
        params[k] = v;
    }
    let headers = [
        ("mcp-protocol-version", V2.to_owned()),
        ("mcp-method", "tools/call".to_owned()),
        ("mcp-name", name.to_owned()),
    ];
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
    let (status, _, msg) = f.rpc(&f.app, "/mcp", None, &headers, body);
    (status, msg)
}

fn drafts(f: &Fx) -> usize {
    f.holder.base.store().read(|rx| rx.all_intents::<Value>()).unwrap().len()
}

/// The JSON-RPC error message of `msg`, failing when it is not an error.
fn error_message(msg: &Value) -> String {
    assert!(msg.get("result").is_none(), "answered instead of refused: {msg}");
    msg["error"]["message"].as_str().unwrap_or_else(|| panic!("no JSON-RPC error: {msg}")).to_owned()
}

/// The first answer of a publish with `args`: an `InputRequiredResult`; its `requestState`.
fn first_state(f: &Fx, id: u32, args: &Value) -> String {
    let (status, first) = call(f, id, "intent_publish_intent", args, json!({}));
    assert_eq!(status, StatusCode::OK, "{first}");
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    first["result"]["requestState"].as_str().unwrap().to_owned()
}

#[test]
fn a_request_state_expires_after_its_short_lifetime_not_with_the_draft() {
    let f = Fx::new();
    assert_eq!(f.holder.base.settings().limits.request_state_secs, 300, "the default lifetime");
    let args = publish_args(1);
    let state = first_state(&f, 1, &args);
    let answered = json!({"requestState": state, "inputResponses": {"consent": {"action": "accept"}}});
    // Within its lifetime the retry completes, with the intentCode.
    f.clock.advance(time::Duration::seconds(299));
    let (_, ok) = call(&f, 2, "intent_publish_intent", &args, answered.clone());
    assert!(ok["result"]["structuredContent"]["intentCode"].is_string(), "{ok}");
    // Replayed ten minutes after it was issued: refused, naming requestState and when it
    // expired, though the draft itself lives on for 24 hours.
    f.clock.advance(time::Duration::seconds(301));
    let (status, late) = call(&f, 3, "intent_publish_intent", &args, answered);
    assert_eq!(status, StatusCode::OK, "a JSON-RPC error, not an HTTP one: {late}");
    let m = error_message(&late);
    assert!(m.starts_with("requestState has expired (at 2026-12-01T10:05:00Z)"), "{m}");
    assert!(!late.to_string().contains("intentCode"), "{late}");
    assert_eq!(drafts(&f), 1, "the refused replay made a draft");
}

#[test]
fn a_request_state_is_refused_on_another_tool_or_other_arguments() {
    let f = Fx::new();
    let args = publish_args(2);
    let state = first_state(&f, 1, &args);
    let answered = json!({"requestState": state, "inputResponses": {"consent": {"action": "accept"}}});
    let (_, other_args) = call(&f, 2, "intent_publish_intent", &publish_args(3), answered.clone());
    assert!(error_message(&other_args).starts_with("requestState belongs to another call"), "{other_args}");
    // On another tool (here with the draft's code, as a replay would): refused, not
    // answered as if the state were absent.
    let (_, done) = call(&f, 3, "intent_publish_intent", &args, answered.clone());
    let code = done["result"]["structuredContent"]["intentCode"].as_str().unwrap().to_owned();
    for (id, tool) in [(4, "intent_get_intent"), (5, "intent_withdraw_intent"), (6, "intent_list_matches")] {
        let (_, out) = call(&f, id, tool, &json!({"intentCode": code}), answered.clone());
        assert!(error_message(&out).starts_with("requestState belongs to another call"), "{tool}: {out}");
        let (_, out) = call(&f, id, tool, &json!({"intentCode": code}), json!({"requestState": "isto-rs1.a.b.c"}));
        assert!(error_message(&out).starts_with("requestState is not one this holder issued"), "{tool}: {out}");
    }
    let (_, search) = call(&f, 7, "intent_search_offers", &json!({"statement": "Octavia"}), answered);
    assert!(error_message(&search).starts_with("requestState belongs to another call"), "{search}");
    let (_, get) = call(&f, 8, "intent_get_intent", &json!({"intentCode": code}), json!({}));
    assert_eq!(get["result"]["structuredContent"]["intent"]["status"], "awaiting_consent", "{get}");
    assert_eq!(drafts(&f), 1);
}

#[test]
fn input_responses_without_a_request_state_are_refused_and_make_no_draft() {
    let f = Fx::new();
    let answered = json!({"inputResponses": {"consent": {"action": "accept"}}});
    let (status, out) = call(&f, 1, "intent_publish_intent", &publish_args(4), answered.clone());
    assert_eq!(status, StatusCode::OK, "{out}");
    let m = error_message(&out);
    assert!(m.starts_with("inputResponses without requestState"), "{m}");
    assert!(m.contains("send back its requestState unchanged"), "the rule: {m}");
    assert_eq!(drafts(&f), 0, "a retry without its state made a draft");
    let (_, out) = call(&f, 2, "intent_search_offers", &json!({"statement": "Octavia"}), answered);
    assert!(error_message(&out).starts_with("inputResponses without requestState"), "{out}");
    // The ordinary first call still works.
    first_state(&f, 3, &publish_args(4));
    assert_eq!(drafts(&f), 1);
}

/// A 2025-11-25-era `initialize` on `path` of `app` naming `version` in its body and,
/// when given, in its `MCP-Protocol-Version` header; (status, message).
fn initialize(f: &Fx, app: &Router, path: &str, version: &str, header: Option<&str>) -> (StatusCode, Value) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": version, "capabilities": {},
                                 "clientInfo": {"name": "isto-it", "version": "0"}}});
    let headers: Vec<(&str, String)> = header.map(|h| ("mcp-protocol-version", h.to_owned())).into_iter().collect();
    let (status, _, msg) = f.rpc(app, path, None, &headers, body);
    (status, msg)
}

#[test]
fn an_initialize_naming_a_newer_version_in_header_and_body_is_negotiated_down() {
    let f = Fx::new();
    // The three endpoints' services as `isto serve` builds them, without the bearer check
    // of /mcp/buyer and /mcp/seller in front (which only admits or refuses the token).
    let mcp = isto::app::mcp_services(f.holder.clone(), f.stop.clone());
    for (path, app) in
        [("/mcp", &f.app), ("/mcp", &mcp.public), ("/mcp/buyer", &mcp.buyer), ("/mcp/seller", &mcp.seller)]
    {
        for (body, header) in
            [("2099-01-01", Some("2099-01-01")), ("2099-01-01", None), ("2025-11-25", Some("2025-11-25"))]
        {
            let (status, msg) = initialize(&f, app, path, body, header);
            assert_eq!(status, StatusCode::OK, "{path} {body} {header:?}: {msg}");
            assert_eq!(msg["result"]["protocolVersion"], "2025-11-25", "{path} {body} {header:?}: {msg}");
        }
        // A header that contradicts the body is still refused.
        let (status, _) = initialize(&f, app, path, "2025-11-25", Some("2099-01-01"));
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path}: header 2099-01-01, body 2025-11-25");
        let (status, _) = initialize(&f, app, path, "2099-01-01", Some("2098-01-01"));
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path}: two different newer versions");
    }
    // A newer version on a request other than initialize is still answered with the
    // supported versions (2026-07-28 negotiation), not stripped.
    let headers = [("mcp-protocol-version", "2099-01-01".to_owned()), ("mcp-method", "tools/list".to_owned())];
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2099-01-01",
                      "io.modelcontextprotocol/clientInfo": {"name": "isto-it", "version": "0"},
                      "io.modelcontextprotocol/clientCapabilities": {}});
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": meta}});
    let (_, _, msg) = f.rpc(&f.app, "/mcp", None, &headers, body);
    assert_eq!(msg["error"]["code"], -32022, "{msg}");
}
