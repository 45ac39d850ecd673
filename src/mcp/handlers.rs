//! The handlers of the tool table ([`crate::protocol::tools`]): one typed call per
//! [`ToolId`] and endpoint, chosen by an exhaustive `match` (a tool without a handler
//! does not compile), once the access policy allowed it ([`run`]). Every handler parses
//! its arguments into a typed value (unknown properties refused, errors naming the field)
//! and answers an [`Output`]; [`finish`] turns that into the tool result.

use super::{denied, failure, tool_error};
use crate::base::{ServiceError, INTERNAL_MESSAGE};
use crate::net::ClientAddr;
use crate::oauth::Grant;
use crate::policy::{self, Action, Principal, Refusal};
use crate::protocol::input::{self, Fields, InputError, UpdateArgs};
use crate::protocol::tools::{Endpoint, ToolId};
use crate::protocol::{AreaObject, Intent};
use crate::sellers::{self, SellerError};
use crate::state::AppState;
use rmcp::model::{CallToolResult, ContentBlock};
use serde::Serialize;
use serde_json::{json, Value};

/// A handler's answer: `structuredContent` (an object) and the text content (JSON: the
/// same data, or the seed's bare array for matches and offers).
#[derive(Debug, Clone)]
pub(crate) struct Output {
    /// The `structuredContent`.
    pub structured: Value,
    /// The text content.
    pub text: String,
}

impl Output {
    /// `v` as both the structured content and the text: the text is written from the
    /// value tree (its keys in order, as clients have always read them) straight into a
    /// buffer, not through `Display`'s formatter.
    pub(crate) fn of<T: Serialize>(v: &T) -> Result<Self, CallError> {
        let no_result = |e: serde_json::Error| CallError::NoResult(e.to_string());
        let structured = serde_json::to_value(v).map_err(no_result)?;
        let text = serde_json::to_string(&structured).map_err(no_result)?;
        Ok(Self { structured, text })
    }

    /// `{key: items, "nextSince": next}` as structured content, the bare `items` array as
    /// the text (the seed's shape of matches and open intents). The items' tree is moved
    /// in, not copied (`json!` would serialize it again).
    fn page<T: Serialize>(key: &str, items: &T, next: Option<String>) -> Result<Self, CallError> {
        let Self { structured, text } = Self::of(items)?;
        let mut page = serde_json::Map::new();
        page.insert(key.to_owned(), structured);
        page.insert("nextSince".to_owned(), next.map_or(Value::Null, Value::String));
        Ok(Self { structured: Value::Object(page), text })
    }
}

/// `{"intent": …}`, the result of `intent_get_intent`: serialized once into the
/// structured content (a `json!` wrapper would build the intent's tree, then copy it).
#[derive(Serialize)]
struct IntentResult {
    intent: Intent,
}

/// Why a call did not succeed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CallError {
    /// A domain or internal failure of the services.
    #[error(transparent)]
    Service(#[from] ServiceError),
    /// A seller operation's failure.
    #[error(transparent)]
    Seller(#[from] SellerError),
    /// Refused with this text (the seller without a profile).
    #[error("{0}")]
    Refused(String),
    /// The handler produced no result object (the cause, for the log).
    #[error("{0}")]
    NoResult(String),
}

impl From<InputError> for CallError {
    fn from(e: InputError) -> Self {
        Self::Service(ServiceError::Input(e))
    }
}

/// `intent_get_intent` / `intent_withdraw_intent` arguments on `/mcp`: the intentCode
/// and the optional id.
fn code_args(args: &Value) -> Result<(String, Option<String>), InputError> {
    let mut f = Fields::new(args, "")?;
    let code = f.req_str("intentCode", 200)?;
    let id = f.opt_str("id", 64)?;
    f.finish("")?;
    Ok((code, id))
}

/// `intent_get_intent` / `intent_withdraw_intent` arguments on `/mcp/buyer`: the id.
fn id_arg(args: &Value) -> Result<String, InputError> {
    let mut f = Fields::new(args, "")?;
    let id = f.req_str("id", 64)?;
    f.finish("")?;
    Ok(id)
}

/// `intent_search_offers` arguments.
struct SearchArgs {
    statement: String,
    area: Option<AreaObject>,
    category: Option<&'static str>,
    limit: usize,
}

impl SearchArgs {
    fn parse(args: &Value) -> Result<Self, InputError> {
        let mut f = Fields::new(args, "")?;
        let statement = f.req_str("statement", input::STATEMENT_MAX)?;
        let area = f.get("area").map(|a| input::parse_area(a, "area")).transpose()?;
        let known = |c: String| crate::protocol::category(&c).map(|c| c.key);
        let bad = || InputError("category must be one of vehicles, property".into());
        let category = f.opt_str("category", 40)?.map(|c| known(c).ok_or_else(bad)).transpose()?;
        let limit = f.opt_int("limit", 1, 100)?.unwrap_or(20) as usize;
        f.finish("")?;
        Ok(Self { statement, area, category, limit })
    }
}

/// Runs one call of `tool` on `endpoint` (blocking: store I/O) for the caller of
/// `grant` (none on `/mcp`) at `client`: the policy's decision ([`super::denied`]), the
/// handler, [`finish`].
pub(crate) fn run(
    holder: &AppState,
    endpoint: Endpoint,
    grant: Option<&Grant>,
    client: ClientAddr,
    tool: ToolId,
    args: &Value,
) -> CallToolResult {
    match authorize(holder, endpoint, grant, tool) {
        Ok(principal) => finish(endpoint, tool, handle(holder, endpoint, &principal, client, tool, args)),
        Err(refused) => refused,
    }
}

/// The policy's decision on a call of `tool` on `endpoint` by the caller of `grant`: its
/// principal, or the tool result that refuses it ([`super::denied`], [`super::failure`]).
fn authorize(
    holder: &AppState,
    endpoint: Endpoint,
    grant: Option<&Grant>,
    tool: ToolId,
) -> Result<Principal, CallToolResult> {
    let who = Grant::credential(grant, &holder.base.settings().public_url.base);
    let base = &holder.base;
    policy::authorize(&who, Action::Call(endpoint, tool), |acc| sellers::enabled_seller(base, acc)).map_err(|r| match r
    {
        Refusal::Denied(d) => denied(endpoint, tool.name(), &d),
        Refusal::Failed(e) => failure(tool.name(), &e),
    })
}

/// [`run`] of `intent_publish_intent` on `/mcp` in the calling task: the draft is made
/// there and its durable write awaited ([`crate::intents::Intents::publish_draft_from_async`]),
/// so a publish holds no thread of its own. The same policy, answer and errors.
pub(crate) async fn publish_public(holder: &AppState, client: ClientAddr, args: &Value) -> CallToolResult {
    let (endpoint, tool) = (Endpoint::Public, ToolId::PublishIntent);
    if let Err(refused) = authorize(holder, endpoint, None, tool) {
        return refused;
    }
    let intents = &holder.intents;
    let out = async {
        let p = intents.parse_publish(args)?;
        Output::of(&intents.publish_draft_from_async(p, client.key()).await?)
    };
    finish(endpoint, tool, out.await)
}

/// The handler of `tool` on `endpoint`. The combinations an endpoint does not offer
/// were refused by the policy already; here they fail closed.
fn handle(
    holder: &AppState,
    endpoint: Endpoint,
    principal: &Principal,
    client: ClientAddr,
    tool: ToolId,
    args: &Value,
) -> Result<Output, CallError> {
    use Endpoint::{Buyer, Public, Seller};
    use ToolId::*;
    let intents = &holder.intents;
    let account = || {
        principal.account_id().ok_or_else(|| CallError::NoResult(format!("{} allowed without an account", tool.name())))
    };
    match (endpoint, tool) {
        (Public, PublishIntent) => Output::of(&intents.publish_draft_from(intents.parse_publish(args)?, client.key())?),
        (Public, GetIntent) => {
            let (code, id) = code_args(args)?;
            Output::of(&IntentResult { intent: intents.get_by_code(&code, id.as_deref())? })
        }
        (Public, WithdrawIntent) => {
            let (code, id) = code_args(args)?;
            intents.withdraw_by_code(&code, id.as_deref())?;
            Output::of(&json!({"status": "withdrawn"}))
        }
        (Public, ListMatches) => {
            let (matches, next) = intents.list_matches_by_code(&input::ListMatches::parse(args, true)?)?;
            Output::page("matches", &matches, next)
        }
        (Buyer, PublishIntent) => Output::of(&intents.publish_for(account()?, intents.parse_publish(args)?)?),
        (Buyer, GetIntent) => Output::of(&IntentResult { intent: intents.get_owned(account()?, &id_arg(args)?)? }),
        (Buyer, UpdateIntent) => Output::of(&intents.update_owned(account()?, &UpdateArgs::parse(args)?)?),
        (Buyer, WithdrawIntent) => {
            intents.withdraw_owned(account()?, &id_arg(args)?)?;
            Output::of(&json!({"status": "withdrawn"}))
        }
        (Buyer, ListMatches) => {
            let (matches, next) = intents.list_matches_owned(account()?, &input::ListMatches::parse(args, false)?)?;
            Output::page("matches", &matches, next)
        }
        (_, SearchOffers) => search(holder, &SearchArgs::parse(args)?),
        (_, DemandSummary) => {
            let (category, cell) = crate::demand::parse_request(holder.base.settings(), args)?;
            Output::of(&crate::demand::summary(&holder.base, &category, &cell)?)
        }
        (Seller, SubmitOffer) => {
            let profile = seller_profile(holder, account()?)?;
            let reply = sellers::parse_reply(&holder.base, &profile, args)?;
            Output::of(&sellers::submit_reply(&holder.base, &profile, &reply)?)
        }
        (Seller, ListOpenIntents) => {
            let profile = seller_profile(holder, account()?)?;
            let page = sellers::open_intents(&holder.base, &profile, &sellers::parse_open_query(args)?)?;
            Output::page("intents", &page.intents, page.next_since)
        }
        (Seller, PublishIntent | GetIntent | UpdateIntent | WithdrawIntent | ListMatches)
        | (Public, UpdateIntent | SubmitOffer | ListOpenIntents)
        | (Buyer, SubmitOffer | ListOpenIntents) => {
            Err(CallError::NoResult(format!("{} is not offered here", tool.name())))
        }
    }
}

/// The seller profile of `account` (categories and regions), or the refusal naming the
/// way to get one.
fn seller_profile(holder: &AppState, account: &str) -> Result<sellers::SellerProfile, CallError> {
    sellers::profile(&holder.base, account)?.ok_or_else(|| {
        CallError::Refused(
            "this seller account has no seller profile (categories and regions): ask the holder's operator to \
             register it with `isto admin seller add`"
                .into(),
        )
    })
}

fn search(holder: &AppState, a: &SearchArgs) -> Result<Output, CallError> {
    let index = holder.catalogue.offer_index()?;
    let offers =
        crate::catalogue::search_json(&index, &holder.base, &a.statement, a.area.as_ref(), a.category, a.limit)?;
    let (structured, text) =
        crate::catalogue::search_answer(&offers).map_err(|e| ServiceError::Index(format!("stored offer: {e}")))?;
    Ok(Output { structured, text })
}

/// The tool result of a call: a success only for an [`Output`] whose structured content
/// is a JSON object (MCP spec "Tools"); `null` or any other value, and
/// [`CallError::NoResult`], are internal errors (logged here, answered with
/// [`INTERNAL_MESSAGE`]). Domain failures are answered by [`super::failure`]; on
/// `/mcp/buyer` an unknown or other account's id gets the endpoint's one not-found answer
/// (PROTOCOL.md §3).
pub(crate) fn finish(endpoint: Endpoint, tool: ToolId, r: Result<Output, CallError>) -> CallToolResult {
    let name = tool.name();
    match r {
        Ok(out) if out.structured.is_object() => {
            let mut r = CallToolResult::success(vec![ContentBlock::text(out.text)]);
            r.structured_content = Some(out.structured);
            r
        }
        Ok(_) => {
            tracing::error!(tool = name, "tool failed: the handler's result is not an object");
            tool_error(INTERNAL_MESSAGE.to_owned())
        }
        Err(CallError::NoResult(cause)) => {
            tracing::error!(tool = name, error = %cause, "tool failed: no result");
            tool_error(INTERNAL_MESSAGE.to_owned())
        }
        Err(CallError::Refused(text)) => tool_error(text),
        Err(CallError::Service(ServiceError::NotFound)) if endpoint == Endpoint::Buyer => {
            tool_error("not_found: no intent with this id".into())
        }
        Err(CallError::Service(e)) => failure(name, &e),
        Err(CallError::Seller(e)) => failure(name, &e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_text(r: &CallToolResult) -> String {
        let v = serde_json::to_value(r).unwrap();
        assert_eq!(v["isError"], true, "{v}");
        v["content"][0]["text"].as_str().unwrap().to_owned()
    }

    #[test]
    fn a_null_or_missing_result_is_an_error_not_a_success() {
        // Before: `ok(Value::Null, …)` answered `isError: false` with `structuredContent: null`.
        let null = Output { structured: Value::Null, text: "null".into() };
        let r = finish(Endpoint::Public, ToolId::GetIntent, Ok(null));
        assert_eq!(error_text(&r), INTERNAL_MESSAGE);
        assert!(r.structured_content.is_none());
        let array = Output { structured: json!([1]), text: "[1]".into() };
        assert_eq!(error_text(&finish(Endpoint::Buyer, ToolId::ListMatches, Ok(array))), INTERNAL_MESSAGE);
        let missing = Err(CallError::NoResult("nothing".into()));
        assert_eq!(error_text(&finish(Endpoint::Seller, ToolId::SubmitOffer, missing)), INTERNAL_MESSAGE);
        let fine = finish(Endpoint::Public, ToolId::WithdrawIntent, Output::of(&json!({"status": "withdrawn"})));
        assert_eq!(fine.is_error, Some(false));
        assert_eq!(fine.structured_content, Some(json!({"status": "withdrawn"})));
    }

    #[test]
    fn a_value_that_cannot_be_serialized_is_no_result() {
        struct Broken;
        impl Serialize for Broken {
            fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
                Err(serde::ser::Error::custom("broken"))
            }
        }
        assert!(matches!(Output::of(&Broken), Err(CallError::NoResult(m)) if m == "broken"));
    }

    #[test]
    fn not_found_reads_per_endpoint() {
        let nf = || Err(CallError::Service(ServiceError::NotFound));
        assert_eq!(error_text(&finish(Endpoint::Buyer, ToolId::GetIntent, nf())), "not_found: no intent with this id");
        assert_eq!(
            error_text(&finish(Endpoint::Public, ToolId::GetIntent, nf())),
            "not_found: no intent for this code"
        );
    }
}
