//! The MCP App's view input (`isto::mcp::view`) in the hidden-limit property test: what
//! a host hands the view — the tool result as a client that declared the extension
//! gets it, `structuredContent.view` included — for `intent_get_intent` and
//! `intent_list_matches` of every intent (with and without `since`) and for
//! `intent_search_offers`, on `/mcp` and `/mcp/buyer`. Compared like the plain answers
//! (see the parent module): searches always, the buyer's own answers when the
//! deliveries are the same (else `intent_get_intent` with `matchCount` masked).

use isto::mcp::Endpoint;
use serde_json::{json, Value};

use super::{result_text, structured, Kind, Side};
use crate::kit::{buyer_grant, START};

impl Side {
    /// One call as a host with the MCP App gets it (`isto::mcp::view::dispatch`).
    fn view_tool(&mut self, endpoint: Endpoint, label: &str, kind: Kind, tool: &'static str, args: Value) -> String {
        let path = if endpoint == Endpoint::Public { "/mcp" } else { "/mcp/buyer" };
        self.record(format!("{path} view {tool} {label}"), kind, |s| {
            let grant = buyer_grant(&s.buyer);
            result_text(isto::mcp::view::dispatch(&s.fx.holder, endpoint, Some(&grant), tool, &args))
        })
    }
}

/// The view's input for every intent and a search, on both endpoints.
pub(super) fn looks(s: &mut Side, when: &str) {
    for endpoint in [Endpoint::Public, Endpoint::Buyer] {
        s.view_tool(endpoint, when, Kind::Open, "intent_search_offers", json!({"statement": "Škoda Octavia"}));
    }
    for i in 0..s.intents.len() {
        let k = s.intents[i].clone();
        let label = format!("#{i} {when}");
        let (endpoint, own, list) = match &k.code {
            Some(code) => (Endpoint::Public, json!({"intentCode": code}), json!({"intentCode": code})),
            None => (Endpoint::Buyer, json!({"id": k.id}), json!({"intent": k.id})),
        };
        s.view_tool(endpoint, &label, Kind::Own, "intent_get_intent", own);
        let all = s.view_tool(endpoint, &label, Kind::OwnDeliveries, "intent_list_matches", list.clone());
        // The view marks what came after the previous nextSince: the same call with it
        // (with the clock's start when there was none, so both holders make the call).
        let since = structured(&all)["nextSince"].as_str().unwrap_or(START).to_owned();
        let mut with = list;
        with["since"] = json!(since);
        s.view_tool(endpoint, &format!("{label} since"), Kind::OwnDeliveries, "intent_list_matches", with);
    }
}
