//! The MCP endpoint `/mcp/seller` (PROTOCOL.md §1, §3): the holder's registered sellers
//! and their agents, authorised by OAuth 2.1 (resource `<public>/mcp/seller`, scopes
//! `offers` and `demand`).
//!
//! Tools:
//! * `intent_submit_offer` (scope `offers`): an Offer with `source: {"kind": "reply"}`
//!   and `inReplyTo` (the seller's handle `hdl_…` of the intent, PROTOCOL.md §2) →
//!   `{accepted, offerId?, reason?}` (see [`crate::sellers`]: accepted
//!   only for active pseudonymous intents in the seller's categories and regions, one
//!   refusal text either way, at most 3 replies per intent, never dependent on the
//!   hidden limit);
//! * `intent_list_open_intents` (scope `offers`, isto extension): `{category?, area?,
//!   since?, limit?}` → `{intents: [{id, pseudonym, statement, category, criteria, area,
//!   budget, buyBy, validUntil}], nextSince}` — `id` is the seller's handle, never the
//!   intent id, and times are whole minutes; never contact, hidden limit or
//!   hasHiddenLimit;
//! * `intent_search_offers` (any seller scope) and `intent_demand_summary` (scope
//!   `demand`): the `/mcp` tools, answered by [`crate::mcp::dispatch`].
//!
//! Every call takes the [`Grant`] of its own HTTP request (put there by the bearer
//! middleware; see [`crate::mcp::buyer::grant_of`]) and is refused ([`crate::policy::authorize`]) unless the
//! grant is a seller's token for this endpoint with the tool's scope and the account —
//! read on every call — is an enabled seller: a disabled seller's tools stop working at
//! once, whatever its tokens.

use super::{denied, failure, ok, public_tools, tool, tool_error};
use crate::oauth::Grant;
use crate::policy::{self, Action, Refusal, Resource};
use crate::protocol::schema;
use crate::sellers;
use crate::state::AppState;
use rmcp::model::{CallToolResult, Tool, ToolAnnotations};
use serde_json::{json, Value};

/// The `/mcp` tools the seller endpoint also offers (when the public server has them).
const SHARED: [&str; 2] = ["intent_search_offers", "intent_demand_summary"];

fn offer_input() -> Value {
    let area = schema::area_input();
    json!({"type": "object", "additionalProperties": false,
        "required": ["source", "inReplyTo", "title", "category", "price", "area"],
        "properties": {
            "source": {"type": "object", "additionalProperties": false, "required": ["kind"],
                "properties": {"kind": {"type": "string", "const": "reply"}}},
            "inReplyTo": {"type": "string", "minLength": 1, "maxLength": sellers::IN_REPLY_TO_MAX,
                "description": "The id (hdl_…) of the open intent this offer answers, as intent_list_open_intents gave it to this seller."},
            "title": {"type": "string", "minLength": 1, "maxLength": 300},
            "description": {"type": "string", "maxLength": 10000},
            "category": {"type": "string", "enum": ["vehicles", "property"]},
            "attributes": {"type": "object", "description": "The offer's attributes, same keys and units as intent criteria. Vehicles: make, model, body, fuel, transmission, year, mileageKm, powerKw, color. Property: type, transaction, disposition, rooms, floorAreaM2, landAreaM2, floor.",
                "additionalProperties": {"anyOf": [{"type": "string"}, {"type": "number"}]}},
            "price": {"type": "object", "additionalProperties": false, "required": ["amount", "currency"], "properties": {
                "amount": {"type": "number", "exclusiveMinimum": 0}, "currency": {"type": "string", "minLength": 3, "maxLength": 3}}},
            "area": {"description": "Where the offered item is: one region or town (\"Košice\", \"SK-KI\").", "anyOf": area["anyOf"]},
            "url": {"type": "string", "maxLength": 2000, "description": "The offer's own page (http or https)."},
            "validUntil": {"type": "string", "description": "RFC 3339 time (or a date: the end of that day, UTC) when the offer lapses; in the future."}
        }
    })
}

fn offer_output() -> Value {
    json!({"type": "object", "required": ["accepted"], "properties": {
        "accepted": {"type": "boolean", "description": "true: stored and valid. Whether it is delivered to the buyer is not shown."},
        "offerId": {"type": "string"},
        "reason": {"type": "string", "description": "Why it was not accepted: \"not open for replies\" or \"reply limit reached\"."}
    }})
}

fn open_input() -> Value {
    json!({"type": "object", "additionalProperties": false, "properties": {
        "category": {"type": "string", "enum": ["vehicles", "property"]},
        "area": schema::area_input(),
        "since": {"type": "string", "format": "date-time", "description": "Only intents that opened or changed in this minute or later (use the previous nextSince; the current minute comes again, so skip ids already seen)."},
        "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 50}
    }})
}

fn open_output() -> Value {
    let intent = schema::intent();
    let p = &intent["properties"];
    json!({"type": "object", "required": ["intents", "nextSince"], "properties": {
        "intents": {"type": "array", "items": {"type": "object",
            "required": ["id", "pseudonym", "statement", "category", "criteria", "area", "validUntil"],
            "properties": {
                "id": {"type": "string", "pattern": "^hdl_", "description": "This seller's handle for the intent (inReplyTo of intent_submit_offer): the same on every call, different for every seller."},
                "pseudonym": {"type": "string", "description": "This seller's pseudonym for the buyer: the same for all of one buyer's intents, different for every seller."},
                "statement": p["statement"],
                "category": p["category"],
                "criteria": p["criteria"],
                "area": p["area"],
                "budget": p["budget"],
                "buyBy": p["buyBy"],
                "validUntil": {"type": "string", "format": "date-time", "description": "RFC 3339, the day only: 00:00 UTC of the day the intent lapses (rounded down)."}
            }}},
        "nextSince": {"type": ["string", "null"]}
    }})
}

/// The tool list of `/mcp/seller` (PROTOCOL.md §1, §3).
pub fn seller_tools() -> Vec<Tool> {
    let mut tools = vec![
        tool(
            "intent_submit_offer",
            "Reply to an open intent",
            "Sends one offer in reply to an open buying intent (an id from intent_list_open_intents): the Offer fields \
             with source {\"kind\": \"reply\"} and inReplyTo. accepted: true means the offer is stored and valid; the \
             holder then checks it against the intent's criteria, area and price ceiling and, when it fits, delivers \
             it to the buyer — the result never says whether it was delivered. Refused with \"not open for replies\" \
             when the intent does not take replies from this seller, and after 3 replies to the same intent. The \
             buyer's contact data is never given out.",
            offer_input(),
            offer_output(),
            ToolAnnotations::new().read_only(false).destructive(false).idempotent(false).open_world(false),
        ),
        tool(
            "intent_list_open_intents",
            "List open intents",
            "Lists the active buying intents whose buyers allow replies (visibility pseudonymous) in this seller's \
             categories and regions, oldest change first: statement, criteria, area, visible budget, buyBy and \
             validUntil, with this seller's pseudonym for each buyer and this seller's own id for each intent (use it \
             as inReplyTo). Pass the previous nextSince as since to get the intents that opened or changed since \
             (to the minute: the current minute comes again). Never includes contact data or hidden limits.",
            open_input(),
            open_output(),
            ToolAnnotations::new().read_only(true).destructive(false).idempotent(true).open_world(false),
        ),
    ];
    tools.extend(public_tools().into_iter().filter(|t| SHARED.contains(&t.name.as_ref())));
    tools
}

/// Runs one tool call for `grant` (blocking: store I/O). `None` for an unknown tool.
/// Refused calls and bad input are `isError` results naming the reason or field;
/// internal failures are logged and answered generically.
pub fn dispatch(holder: &AppState, grant: Option<&Grant>, name: &str, args: &Value) -> Option<CallToolResult> {
    let own = matches!(name, "intent_submit_offer" | "intent_list_open_intents");
    if !own && !SHARED.contains(&name) {
        return None;
    }
    let who = Grant::credential(grant, &holder.base.settings().public_url.base);
    let base = &holder.base;
    let account =
        match policy::authorize(&who, Action::Call(Resource::Seller, name), |acc| sellers::enabled_seller(base, acc)) {
            Ok(p) => p.account_id().unwrap_or_default().to_owned(),
            Err(Refusal::Denied(d)) => return Some(denied(Resource::Seller, name, &d)),
            Err(Refusal::Failed(e)) => return Some(failure(name, &e)),
        };
    if !own {
        return super::dispatch(holder, name, args);
    }
    let result = sellers::profile(&holder.base, &account).and_then(|p| {
        let Some(profile) = p else {
            return Ok(tool_error(
                "this seller account has no seller profile (categories and regions): ask the holder's operator to \
                 register it with `isto admin seller add`"
                    .into(),
            ));
        };
        if name == "intent_submit_offer" {
            let reply = sellers::parse_reply(&holder.base, &profile, args)?;
            let out = sellers::submit_reply(&holder.base, &profile, &reply)?;
            let v = serde_json::to_value(&out).unwrap_or(Value::Null);
            Ok(ok(v.clone(), &v))
        } else {
            let q = sellers::parse_open_query(args)?;
            let page = sellers::open_intents(&holder.base, &profile, &q)?;
            let arr = serde_json::to_value(&page.intents).unwrap_or(Value::Null);
            Ok(ok(json!({"intents": arr, "nextSince": page.next_since}), &arr))
        }
    });
    Some(result.unwrap_or_else(|e| failure(name, &e)))
}
