//! The MCP endpoint `/mcp/buyer` (PROTOCOL.md §1, §3): buyer agents acting for a
//! signed-in person, authorised by OAuth 2.1 (resource `<public>/mcp/buyer`, scope
//! `intents`).
//!
//! Tools: intent_publish_intent, intent_get_intent `{id}`, intent_update_intent
//! `{id, ...changed fields}`, intent_withdraw_intent `{id}`, intent_list_matches
//! `{intent, since?, limit?}` — all limited to the account's own intents — and
//! intent_search_offers (as on `/mcp`). Schemas are declared by hand (no contact field,
//! unknown properties refused); results carry `structuredContent` and the same data as
//! JSON text.
//!
//! The account comes from the HTTP request: the bearer middleware in front of the
//! endpoint ([`super::service::require_bearer`]) checks the bearer token with
//! [`crate::oauth::check_bearer`] and puts the [`Grant`] into the request's extensions; rmcp hands the request's
//! [`http::request::Parts`] to every tool call, so each call uses the grant of its own
//! HTTP request. Without a grant every account tool answers "unauthorized".

use super::{denied, failure, ok, search, to_value, tool, tool_error};
use crate::base::ServiceError;
use crate::oauth::Grant;
use crate::policy::{self, Action, Resource};
use crate::protocol::input::{ListMatches, UpdateArgs};
use crate::protocol::schema;
use crate::state::AppState;
use rmcp::model::{CallToolResult, Tool, ToolAnnotations};
use rmcp::service::RequestContext;
use rmcp::RoleServer;
use serde_json::{json, Value};

/// The tool list of `/mcp/buyer` (PROTOCOL.md §3).
pub fn buyer_tools() -> Vec<Tool> {
    vec![
        tool(
            "intent_publish_intent",
            "Publish a buying intent",
            "Publishes what the signed-in person wants to buy (vehicles or property in Slovakia and Czechia). Takes no \
             contact data: offers go to the person's verified account e-mail. The intent is active at once when the \
             person has accepted the holder's current consent text; otherwise the result has a consentUrl on the \
             holder's own page — give that link to the person, who consents there. Do not open or fill in the link \
             yourself. Keep the returned intent id. An optional hiddenLimit is sealed by the holder and never shown \
             to anyone.",
            schema::publish_input(),
            schema::buyer_publish_output(),
            ToolAnnotations::new().read_only(false).destructive(false).idempotent(false).open_world(false),
        ),
        tool(
            "intent_get_intent",
            "Get an intent",
            "Returns one of the person's intents by id with its status (awaiting_consent, awaiting_email_confirmation, \
             active, expired, withdrawn). Never returns contact data or the hidden limit's value.",
            schema::id_input(),
            schema::get_output(),
            ToolAnnotations::new().read_only(true).destructive(false).idempotent(true).open_world(false),
        ),
        tool(
            "intent_update_intent",
            "Change an intent",
            "Changes one of the person's intents: give the id and only the fields that change (the same rules as \
             intent_publish_intent; null removes criteria, budget, hiddenLimit or buyBy). Changes apply at once and \
             the intent is matched again (an offer is never delivered twice). Moving validUntil later, or renewing an \
             expired intent, is not applied at once: the result has a renewUrl on the holder's page where the person \
             confirms it. Do not open the link yourself. Moving validUntil earlier applies at once. Withdrawn \
             intents cannot be changed.",
            schema::update_input(),
            schema::update_output(),
            ToolAnnotations::new().read_only(false).destructive(false).idempotent(false).open_world(false),
        ),
        tool(
            "intent_withdraw_intent",
            "Withdraw an intent",
            "Withdraws one of the person's intents at once: nothing more is delivered or e-mailed for it. Idempotent.",
            schema::id_input(),
            schema::withdraw_output(),
            ToolAnnotations::new().read_only(false).destructive(true).idempotent(true).open_world(false),
        ),
        tool(
            "intent_list_matches",
            "List delivered offers",
            "Lists the offers the holder has delivered for one of the person's intents (input `intent`: its id), \
             oldest first. Pass the previous nextSince as since to get only new ones. Offers are also e-mailed to \
             the person.",
            schema::buyer_list_matches_input(),
            schema::list_matches_output(),
            ToolAnnotations::new().read_only(true).destructive(false).idempotent(true).open_world(false),
        ),
        super::search_tool(),
        super::demand_summary_tool(),
    ]
}

/// The result of a failed call: [`super::failure`], except that unknown and other
/// accounts' ids get the one not-found answer of this endpoint (PROTOCOL.md §3).
fn buyer_failure(tool: &str, e: &ServiceError) -> CallToolResult {
    match e {
        ServiceError::NotFound => tool_error("not_found: no intent with this id".into()),
        e => failure(tool, e),
    }
}

fn id_arg(args: &Value) -> Result<String, ServiceError> {
    let mut f = crate::protocol::input::Fields::new(args, "")?;
    let id = f.req_str("id", 64)?;
    f.finish("")?;
    Ok(id)
}

/// Runs one tool call for `grant`'s account (blocking: store I/O). `None` for an unknown
/// tool. The account tools need a grant with scope `intents` ([`policy::authorize`];
/// refused: "unauthorized"); domain failures become `isError` results; internal ones
/// are logged and answered generically.
pub fn dispatch(holder: &AppState, grant: Option<&Grant>, name: &str, args: &Value) -> Option<CallToolResult> {
    let who = Grant::credential(grant, &holder.base.settings().public_url.base);
    let principal = match policy::authorize(&who, Action::Call(Resource::Buyer, name), policy::no_lookup) {
        Ok(p) => p,
        Err(r) => return Some(denied(Resource::Buyer, name, &r.denied())),
    };
    let account = principal.account_id();
    let result: Result<CallToolResult, ServiceError> = match (name, account) {
        ("intent_search_offers", _) => search(holder, args),
        ("intent_demand_summary", _) => crate::demand::parse_request(holder.base.settings(), args)
            .map_err(ServiceError::from)
            .and_then(|(category, cell)| crate::demand::summary(&holder.base, &category, &cell))
            .map(|a| {
                let v = to_value(&a);
                ok(v.clone(), &v)
            }),
        ("intent_publish_intent", Some(acc)) => {
            holder.intents.parse_publish(args).and_then(|p| holder.intents.publish_for(acc, p)).map(|r| {
                let v = to_value(&r);
                ok(v.clone(), &v)
            })
        }
        ("intent_get_intent", Some(acc)) => id_arg(args).and_then(|id| holder.intents.get_owned(acc, &id)).map(|i| {
            let v = json!({"intent": i});
            ok(v.clone(), &v)
        }),
        ("intent_update_intent", Some(acc)) => UpdateArgs::parse(args)
            .map_err(ServiceError::from)
            .and_then(|u| holder.intents.update_owned(acc, &u))
            .map(|r| {
                let v = to_value(&r);
                ok(v.clone(), &v)
            }),
        ("intent_withdraw_intent", Some(acc)) => {
            id_arg(args).and_then(|id| holder.intents.withdraw_owned(acc, &id)).map(|()| {
                let v = json!({"status": "withdrawn"});
                ok(v.clone(), &v)
            })
        }
        ("intent_list_matches", Some(acc)) => ListMatches::by_id(args)
            .map_err(ServiceError::from)
            .and_then(|q| holder.intents.list_matches_owned(acc, &q))
            .map(|(matches, next)| {
                let arr = to_value(&matches);
                ok(json!({"matches": arr, "nextSince": next}), &arr)
            }),
        _ => return None,
    };
    Some(result.unwrap_or_else(|e| buyer_failure(name, &e)))
}

/// The grant the middleware put into the HTTP request of this call, if any.
pub fn grant_of(context: &RequestContext<RoleServer>) -> Option<Grant> {
    context.extensions.get::<http::request::Parts>().and_then(|p| p.extensions.get::<Grant>()).cloned()
}
