//! The MCP App (`io.modelcontextprotocol/ui`, SEP-1865; `isto::mcp::view`) over the
//! production MCP services, in both MCP revisions (2025-11-25 with a session,
//! 2026-07-28 stateless with the client's capabilities in each request's `_meta`):
//!
//! - a client that does not declare the extension (no capabilities, another extension,
//!   the extension without `mimeTypes` or without the view's MIME type) gets the tool
//!   lists of `isto::mcp::tool_list` over the unchanged tool lists, no resource, and for
//!   every linked tool the very result of `isto::mcp::dispatch` on `/mcp` and
//!   `/mcp/buyer` (every member, and the text content byte for byte);
//! - a client that declares it gets the four tools linked to `ui://isto/offers`, the
//!   view in `resources/list` and `resources/read`, and in the intent tools' results
//!   the `view` member (language, cadence, the results page on `/mcp/buyer`) with the
//!   text content unchanged; the extension is offered in `initialize` and
//!   `server/discover`.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::Router;
use isto::mcp::view::{EXTENSION, MIME_TYPE, VIEW_URI};
use rmcp::model::ProtocolVersion;
use serde_json::{json, Value};

use crate::explain::{car, publish_confirmed};
use crate::kit::{buyer_grant, send, Fx};

/// The two MCP revisions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rev {
    /// 2025-11-25: `initialize`, a session.
    Legacy,
    /// 2026-07-28: stateless, `_meta` in every request.
    Modern,
}

impl Rev {
    fn version(self) -> ProtocolVersion {
        match self {
            Rev::Legacy => ProtocolVersion::V_2025_11_25,
            Rev::Modern => ProtocolVersion::V_2026_07_28,
        }
    }
}

/// A raw JSON-RPC client of one endpoint with given capabilities.
struct Client<'a> {
    f: &'a Fx,
    app: Router,
    path: &'static str,
    rev: Rev,
    caps: Value,
    account: Option<String>,
    session: Option<String>,
}

impl<'a> Client<'a> {
    fn new(f: &'a Fx, app: Router, path: &'static str, rev: Rev, caps: Value, account: Option<String>) -> Self {
        let mut c = Client { f, app, path, rev, caps, account, session: None };
        if rev == Rev::Legacy {
            let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": c.caps, "clientInfo": {"name": "t", "version": "1"}}});
            let (status, sid, msg) = c.post(&init, &[]);
            assert_eq!(status, StatusCode::OK, "{msg}");
            c.session = Some(sid.expect("a session"));
            c.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}), &[]);
        }
        c
    }

    fn post(&self, body: &Value, extra: &[(&str, String)]) -> (StatusCode, Option<String>, Value) {
        let host = self.f.holder.base.settings().public_url.allowed_hosts().into_iter().next().unwrap();
        let mut b = Request::post(self.path)
            .header("host", host)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(s) = &self.session {
            b = b.header("mcp-session-id", s).header("mcp-protocol-version", "2025-11-25");
        }
        if let Some(a) = &self.account {
            b = b.header("x-test-account", a);
        }
        for (k, v) in extra {
            b = b.header(*k, v);
        }
        let res = send(&self.f.rt, &self.app, b.body(Body::from(body.to_string())).unwrap());
        let sid = res.headers.get("mcp-session-id").map(|v| v.to_str().unwrap().to_owned());
        let msg = res
            .body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .or_else(|| serde_json::from_str(&res.body).ok())
            .unwrap_or(Value::Null);
        (res.status, sid, msg)
    }

    /// One request; its JSON-RPC message.
    fn request(&self, method: &str, mut params: Value) -> Value {
        let mut extra = Vec::new();
        if self.rev == Rev::Modern {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": self.caps,
            });
            extra.push(("mcp-protocol-version", "2026-07-28".to_owned()));
            extra.push(("mcp-method", method.to_owned()));
            if let Some(n) = params.get("name").or_else(|| params.get("uri")).and_then(Value::as_str) {
                extra.push(("mcp-name", n.to_owned()));
            }
        }
        let (status, _, msg) =
            self.post(&json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}), &extra);
        assert_eq!(status, StatusCode::OK, "{method}: {msg}");
        msg
    }

    /// A `tools/call`'s result.
    fn call(&self, tool: &str, args: &Value) -> Value {
        let msg = self.request("tools/call", json!({"name": tool, "arguments": args}));
        assert!(msg.get("result").is_some(), "{tool}: {msg}");
        msg["result"].clone()
    }
}

/// `v` without `resultType` (rmcp writes it for 2026-07-28 peers only).
fn bare(mut v: Value) -> Value {
    if let Some(o) = v.as_object_mut() {
        o.remove("resultType");
    }
    v
}

/// The production `/mcp` and `/mcp/buyer` services; on `/mcp/buyer` a test header names
/// the account in place of a bearer token (as `buyer_flow.rs` does).
fn services(f: &Fx) -> (Router, Router) {
    async fn test_grant(mut req: axum::extract::Request, next: axum::middleware::Next) -> axum::response::Response {
        if let Some(a) = req.headers().get("x-test-account").and_then(|v| v.to_str().ok()).map(str::to_owned) {
            req.extensions_mut().insert(buyer_grant(&a));
        }
        next.run(req).await
    }
    let s = isto::app::mcp_services(f.holder.clone(), f.stop.clone());
    (s.public, s.buyer.layer(axum::middleware::from_fn(test_grant)))
}

/// A holder with three offers in Bratislava, an active intent (published on `/mcp`,
/// consented, confirmed: the offers delivered), a draft on `/mcp`, and a signed-in
/// buyer's active intent on `/mcp/buyer`: (fixture, code, draft code, account, buyer
/// intent id, the first delivery time).
fn holder() -> (Fx, String, String, String, String, String) {
    let f = Fx::new();
    let h = &f.holder;
    let offers = vec![
        car("a1", "Škoda Octavia 2.0 TDI", 12900.0, "Bratislava"),
        car("a2", "Škoda Octavia Combi", 9900.0, "Bratislava"),
        car("a3", "Škoda Octavia RS", 19900.0, "Bratislava"),
    ];
    h.catalogue.import_offers(offers).unwrap();
    let code = publish_confirmed(h, "Hľadám ojazdenú Škodu Octavia na naftu", 30000.0);
    let draft =
        crate::kit::mcp_call(h, "intent_publish_intent", &json!({"statement": "Hledám byt v Brně", "area": "Brno"}))
            .unwrap();
    let draft = serde_json::to_value(draft).unwrap()["structuredContent"]["intentCode"].as_str().unwrap().to_owned();
    let (account, _) = f.buyer("owner@example.com");
    let published = crate::kit::mcp_call_as(
        h,
        isto::mcp::Endpoint::Buyer,
        Some(&buyer_grant(&account)),
        "intent_publish_intent",
        &json!({"statement": "Looking for a Skoda Octavia diesel", "area": "SK-BL",
                "criteria": {"category": "vehicles", "make": "Škoda", "model": "Octavia"}, "hiddenLimit": 15000}),
    )
    .unwrap();
    let published = serde_json::to_value(published).unwrap();
    assert_eq!(published["structuredContent"]["intent"]["status"], "active", "{published}");
    let id = published["structuredContent"]["intent"]["id"].as_str().unwrap().to_owned();
    let listed = crate::kit::mcp_call(h, "intent_list_matches", &json!({"intentCode": code})).unwrap();
    let listed = serde_json::to_value(listed).unwrap();
    let first = listed["structuredContent"]["matches"][0]["deliveredAt"].as_str().unwrap().to_owned();
    (f, code, draft, account, id, first)
}

/// The capabilities of clients that do not declare the view's extension.
fn without_the_extension() -> Vec<Value> {
    vec![
        json!({}),
        json!({"extensions": {"io.modelcontextprotocol/other": {"mimeTypes": [MIME_TYPE]}}}),
        json!({"extensions": {EXTENSION: {}}}),
        json!({"extensions": {EXTENSION: {"mimeTypes": ["text/html"]}}}),
        json!({"experimental": {EXTENSION: {"mimeTypes": [MIME_TYPE]}}}),
    ]
}

fn with_the_extension() -> Value {
    json!({"extensions": {EXTENSION: {"mimeTypes": [MIME_TYPE]}}})
}

/// The calls of the four linked tools on `/mcp` (reads: their answer is the same each time).
fn public_reads(code: &str, draft: &str, first: &str) -> Vec<(&'static str, Value)> {
    vec![
        ("intent_search_offers", json!({"statement": "Škoda Octavia", "limit": 5})),
        ("intent_search_offers", json!({"statement": "nothing like this anywhere"})),
        ("intent_get_intent", json!({"intentCode": code})),
        ("intent_get_intent", json!({"intentCode": draft})),
        ("intent_get_intent", json!({"intentCode": "x".repeat(32)})),
        ("intent_list_matches", json!({"intentCode": code})),
        ("intent_list_matches", json!({"intentCode": code, "since": first})),
        ("intent_list_matches", json!({"intentCode": draft})),
    ]
}

fn buyer_reads(id: &str) -> Vec<(&'static str, Value)> {
    vec![
        ("intent_search_offers", json!({"statement": "Octavia"})),
        ("intent_get_intent", json!({"id": id})),
        ("intent_get_intent", json!({"id": "int_nobody"})),
        ("intent_list_matches", json!({"intent": id})),
    ]
}

/// Asserts that `got` is `want`: every member equal, the text content byte for byte.
fn assert_same(got: &Value, want: &Value, what: &str) {
    assert_eq!(bare(got.clone()), bare(want.clone()), "{what}");
    assert_eq!(got["content"][0]["text"].as_str(), want["content"][0]["text"].as_str(), "{what}: text");
}

#[test]
fn clients_without_the_extension_get_todays_tool_lists_and_results_in_both_revisions() {
    let (f, code, draft, account, id, first) = holder();
    let h = &f.holder;
    let (public, buyer) = services(&f);
    let grant = buyer_grant(&account);
    for rev in [Rev::Legacy, Rev::Modern] {
        for caps in without_the_extension() {
            let what = format!("{rev:?} {caps}");
            let c = Client::new(&f, public.clone(), "/mcp", rev, caps.clone(), None);
            let list = c.request("tools/list", json!({}));
            let today = serde_json::to_value(isto::mcp::tool_list(
                &isto::mcp::tools_of(isto::mcp::Endpoint::Public),
                Some(&rev.version()),
            ))
            .unwrap();
            assert_eq!(bare(list["result"].clone()), bare(today), "/mcp tools/list, {what}");
            assert!(!list.to_string().contains("ui://"), "{what}");
            let resources = c.request("resources/list", json!({}));
            assert_eq!(resources["result"]["resources"], json!([]), "{what}: {resources}");
            for (tool, args) in public_reads(&code, &draft, &first) {
                let today = serde_json::to_value(crate::kit::mcp_call(h, tool, &args).unwrap()).unwrap();
                assert_same(&c.call(tool, &args), &today, &format!("/mcp {tool} {args}, {what}"));
            }
            let published = c.call("intent_publish_intent", &json!({"statement": "Hľadám Fabiu", "area": "SK"}));
            let sc = published["structuredContent"].as_object().unwrap();
            let keys: Vec<&str> = sc.keys().map(String::as_str).collect();
            assert_eq!(keys, ["consentUrl", "expiresAt", "intent", "intentCode"], "{what}");
            let text: Value = serde_json::from_str(published["content"][0]["text"].as_str().unwrap()).unwrap();
            assert_eq!(text, published["structuredContent"], "{what}: the text is the structured content");

            let c = Client::new(&f, buyer.clone(), "/mcp/buyer", rev, caps.clone(), Some(account.clone()));
            let list = c.request("tools/list", json!({}));
            let today = serde_json::to_value(isto::mcp::tool_list(
                &isto::mcp::tools_of(isto::mcp::Endpoint::Buyer),
                Some(&rev.version()),
            ))
            .unwrap();
            assert_eq!(bare(list["result"].clone()), bare(today), "/mcp/buyer tools/list, {what}");
            for (tool, args) in buyer_reads(&id) {
                let today = serde_json::to_value(
                    crate::kit::mcp_call_as(h, isto::mcp::Endpoint::Buyer, Some(&grant), tool, &args).unwrap(),
                )
                .unwrap();
                assert_same(&c.call(tool, &args), &today, &format!("/mcp/buyer {tool} {args}, {what}"));
            }
        }
    }
}

#[test]
fn a_client_with_the_extension_gets_the_view_and_its_data_in_both_revisions() {
    let (f, code, draft, account, id, first) = holder();
    let h = &f.holder;
    let (public, buyer) = services(&f);
    let grant = buyer_grant(&account);
    for rev in [Rev::Legacy, Rev::Modern] {
        let c = Client::new(&f, public.clone(), "/mcp", rev, with_the_extension(), None);
        let list = c.request("tools/list", json!({}))["result"]["tools"].clone();
        let linked: Vec<&str> = list
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["_meta"]["ui"]["resourceUri"] == VIEW_URI)
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            linked,
            ["intent_publish_intent", "intent_get_intent", "intent_list_matches", "intent_search_offers"],
            "{rev:?}"
        );
        let resources = c.request("resources/list", json!({}))["result"].clone();
        assert_eq!(resources["resources"][0]["uri"], VIEW_URI, "{rev:?}: {resources}");
        assert_eq!(resources["resources"][0]["mimeType"], MIME_TYPE);
        let read = c.request("resources/read", json!({"uri": VIEW_URI}))["result"].clone();
        assert_eq!(read["contents"][0]["mimeType"], MIME_TYPE);
        assert!(read["contents"][0]["text"].as_str().unwrap().starts_with("<!DOCTYPE html>"));
        assert_eq!(read["contents"][0]["_meta"]["ui"]["csp"]["connectDomains"], json!([]));
        if rev == Rev::Modern {
            assert_eq!((read["ttlMs"].as_u64(), read["cacheScope"].as_str()), (Some(3_600_000), Some("public")));
        }
        let missing = c.request("resources/read", json!({"uri": "ui://isto/nothing"}));
        // -32002 until 2026-07-28, which answers an unknown resource with invalid params.
        let want = if rev == Rev::Legacy { -32002 } else { -32602 };
        assert_eq!(missing["error"]["code"], want, "{missing}");
        assert!(missing["error"]["message"].as_str().unwrap().starts_with("uri: no resource"), "{missing}");
        for (tool, args) in public_reads(&code, &draft, &first) {
            let plain = serde_json::to_value(crate::kit::mcp_call(h, tool, &args).unwrap()).unwrap();
            let got = c.call(tool, &args);
            let what = format!("{rev:?} /mcp {tool} {args}");
            assert_eq!(got["content"], plain["content"], "{what}: the text content is unchanged");
            let mut want = plain.clone();
            let intent_tool = tool != "intent_search_offers" && plain["isError"] != true;
            if intent_tool {
                let lang = if args["intentCode"] == code.as_str() { "sk" } else { "cs" };
                want["structuredContent"]["view"] = json!({"language": lang, "cadence": "as_they_come"});
            }
            assert_eq!(bare(got), bare(want), "{what}");
        }
        let published = c.call("intent_publish_intent", &json!({"statement": "Hľadám Fabiu", "area": "SK"}));
        assert_eq!(published["structuredContent"]["view"], json!({"language": "sk", "cadence": "as_they_come"}));
        assert_eq!(published["structuredContent"]["intent"]["status"], "awaiting_consent");

        let c = Client::new(&f, buyer.clone(), "/mcp/buyer", rev, with_the_extension(), Some(account.clone()));
        for (tool, args) in buyer_reads(&id) {
            let plain = serde_json::to_value(
                crate::kit::mcp_call_as(h, isto::mcp::Endpoint::Buyer, Some(&grant), tool, &args).unwrap(),
            )
            .unwrap();
            let got = c.call(tool, &args);
            let mut want = plain.clone();
            if tool != "intent_search_offers" && plain["isError"] != true {
                want["structuredContent"]["view"] = json!({"language": "en", "cadence": "as_they_come",
                    "resultsUrl": format!("https://holder.example/me/intents/{id}")});
            }
            assert_eq!(bare(got), bare(want), "{rev:?} /mcp/buyer {tool} {args}");
        }
    }
}

#[test]
fn both_revisions_offer_the_extension_on_mcp_and_mcp_buyer_only() {
    let (f, ..) = holder();
    let s = isto::app::mcp_services(f.holder.clone(), f.stop.clone());
    for (app, path, offered) in
        [(s.public, "/mcp", true), (s.buyer, "/mcp/buyer", true), (s.seller, "/mcp/seller", false)]
    {
        let legacy = Client::new(&f, app.clone(), path, Rev::Modern, json!({}), None);
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
        let (status, _, init) = legacy.post(&init, &[]);
        assert_eq!(status, StatusCode::OK, "{path}: {init}");
        let discover = legacy.request("server/discover", json!({}));
        for (what, caps) in
            [("initialize", &init["result"]["capabilities"]), ("discover", &discover["result"]["capabilities"])]
        {
            assert_eq!(caps["extensions"][EXTENSION].is_object(), offered, "{path} {what}: {caps}");
            assert_eq!(caps["resources"].is_object(), offered, "{path} {what}: {caps}");
        }
    }
}
