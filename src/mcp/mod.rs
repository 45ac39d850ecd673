//! The three MCP endpoints (PROTOCOL.md §1, §3) over MCP Streamable HTTP through rmcp:
//! `/mcp` (the consent-link profile, seed §5), `/mcp/buyer` (acting for a signed-in
//! person: OAuth 2.1, scope `intents`) and `/mcp/seller` (the holder's registered
//! sellers: scopes `offers`, `demand`). Tools are declared by hand so that every input
//! schema rejects unknown properties (and has no contact field) and every error names the
//! field. On the two protected endpoints the bearer middleware ([`service::protect`]) puts
//! the request's [`Grant`] where each call finds it ([`from_request`]).
//!
//! The tools of each endpoint, their names, descriptions and schemas are the tool table
//! of [`crate::protocol::tools`]; their handlers are [`handlers`], the access policy's
//! requirement [`crate::policy::need`] — each an exhaustive match over the table's
//! [`ToolId`]. Every result carries `structuredContent` matching the tool's
//! `outputSchema` and a text content with the same data as JSON (the seed's bare arrays
//! for matches and offers).

use crate::base::PublicError;
use crate::net::{Charge, ClientAddr};
use crate::oauth::Grant;
use crate::policy::Denied;
pub use crate::protocol::tools::Endpoint;
use crate::protocol::tools::{Spec, ToolId};
use crate::protocol::AGGREGATOR_NOTE;
use crate::state::AppState;
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams,
    ReadResourceResponse, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::{MaybeSendFuture, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::Value;
use std::sync::{Arc, LazyLock};
use tracing::Instrument as _;

pub mod elicit;
pub(crate) mod handlers;
pub mod service;
pub mod sessions;
pub mod view;

/// An MCP server of one endpoint: one value per session, sharing the holder. The rmcp
/// handler is written once for the three endpoints; they differ in their instructions,
/// tool list and dispatch.
#[derive(Clone)]
pub struct IstoServer {
    holder: AppState,
    tools: Arc<Vec<Tool>>,
    /// The tool list for clients that declared the MCP Apps extension ([`view`]): the
    /// view linked from its tools on `/mcp` and `/mcp/buyer`, else `tools`.
    view_tools: Arc<Vec<Tool>>,
    endpoint: Endpoint,
    /// The `initialize` / `server/discover` answer, built once per endpoint: rmcp asks
    /// for it on every request (every 2026-07-28 request builds a server).
    info: Arc<ServerConfig>,
}

fn obj(v: Value) -> serde_json::Map<String, Value> {
    serde_json::from_value(v).unwrap_or_default()
}

/// The `tools/list` entry of one table row ([`crate::protocol::tools::Spec`]): name,
/// title, the description with the aggregator note, the schemas and the annotations.
fn tool(spec: Spec) -> Tool {
    let id = spec.id;
    let h = id.hints();
    let mut t = Tool::new(id.name(), format!("{} {AGGREGATOR_NOTE}", spec.description), obj(spec.input));
    t.title = Some(id.title().to_owned());
    t.output_schema = Some(Arc::new(obj(spec.output)));
    t.with_annotations(
        ToolAnnotations::new()
            .read_only(h.read_only)
            .destructive(h.destructive)
            .idempotent(h.idempotent)
            .open_world(false),
    )
}

/// The tool list of `endpoint` (PROTOCOL.md §1, §3), from the tool table, in its order.
pub fn tools_of(endpoint: Endpoint) -> Vec<Tool> {
    endpoint.tools().iter().filter_map(|t| t.spec(endpoint)).map(tool).collect()
}

impl IstoServer {
    /// A server of `endpoint` over `holder`. The tool lists (tens of KiB) are built once
    /// per endpoint and the `initialize` answer here, and every clone (one per session,
    /// one per 2026-07-28 request) shares them: a session costs only rmcp's own state.
    pub fn new(holder: AppState, endpoint: Endpoint) -> Self {
        // Indexed by `endpoint as usize`: `Endpoint::ALL` is in declaration order.
        static TOOLS: LazyLock<[Arc<Vec<Tool>>; 3]> = LazyLock::new(|| Endpoint::ALL.map(|e| Arc::new(tools_of(e))));
        let tools = Arc::clone(&TOOLS[endpoint as usize]);
        let info = Arc::new(server_info(&holder, endpoint));
        let view_tools = view::linked_tools(endpoint).unwrap_or_else(|| Arc::clone(&tools));
        Self { holder, tools, view_tools, endpoint, info }
    }

    /// One `tools/call`: [`IstoServer::run_tool`], and the view's data for a client that
    /// declared the MCP Apps extension only (an input-required answer unchanged).
    async fn answer(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        // Blocking: one store read.
        let view = view::Call::of(&context, self.endpoint, &request);
        Ok(match (view, self.run_tool(request, context).await?) {
            (Some(v), CallToolResponse::Complete(r)) => CallToolResponse::Complete(v.result(&self.holder, r)),
            (_, response) => response,
        })
    }

    /// One `tools/call` as every client gets it.
    async fn run_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let grant: Option<Grant> = from_request(&context);
        let client = from_request(&context).unwrap_or(ClientAddr(None));
        let (holder, endpoint) = (self.holder.clone(), self.endpoint);
        let issuer = endpoint == Endpoint::Public && request.name == elicit::PUBLISH;
        // A `requestState` only on the retry of the call it was issued for, and a retry's
        // `inputResponses` only with one (MCP 2026-07-28 multi round-trip requests).
        elicit::check_retry(holder.base.keys(), &request, issuer)?;
        if issuer {
            // Consent by URL-mode elicitation (PROTOCOL.md §4 item 1): only for a client
            // that declared `elicitation.url`, or a retry carrying a requestState.
            let mode = elicit::mode(&context);
            if mode.is_some() || request.request_state.is_some() {
                let h = holder.clone();
                return elicit::publish(&holder, request, &context, mode, move |tool, args| {
                    handlers::run(&h, Endpoint::Public, None, client, tool, args)
                })
                .await;
            }
        }
        if endpoint == Endpoint::Public && request.name == ToolId::PublishIntent.name() {
            let args = Value::Object(request.arguments.unwrap_or_default());
            let out = handlers::publish_public(&holder, client, &args).instrument(request_span(&context)).await;
            return Ok(complete(ToolId::PublishIntent, out));
        }
        // Only a search may run inline on an open index (no lock tried for other tools).
        let index_open = request.name == ToolId::SearchOffers.name() && holder.catalogue.index_is_open();
        call_blocking(
            endpoint,
            request_span(&context),
            from_request(&context),
            request,
            index_open,
            move |tool, args| handlers::run(&holder, endpoint, grant.as_ref(), client, tool, args),
        )
        .await
    }
}

/// The `initialize` answer of `endpoint`: tools, isto's name and version, and the
/// endpoint's instructions naming the holder, with the aggregator note; on `/mcp` and
/// `/mcp/buyer` also the MCP Apps extension and `resources` ([`view::offer`]).
fn server_info(holder: &AppState, endpoint: Endpoint) -> ServerConfig {
    let name = &holder.base.settings().holder_name;
    let about = match endpoint {
        Endpoint::Public => format!(
            "Isto Intents holder '{name}' (consent-link profile). Publish what a person wants to buy with \
             intent_publish_intent, hand the consentUrl to the person, keep the intentCode, and pull offers with \
             intent_list_matches."
        ),
        Endpoint::Buyer => format!(
            "Isto Intents holder '{name}', buyer endpoint: acts for the signed-in person. Publish what the person \
             wants to buy with intent_publish_intent, keep the intent id, and pull offers with \
             intent_list_matches. When a result carries consentUrl or renewUrl, hand the link to the person."
        ),
        Endpoint::Seller => format!(
            "Isto Intents holder '{name}', seller endpoint: for the holder's registered sellers. List the buying \
             intents open to you with intent_list_open_intents (buyers appear under pseudonyms, intents under ids \
             of your own) and reply with intent_submit_offer, giving that id as inReplyTo (at most 3 offers per \
             intent)."
        ),
    };
    let config = ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
        .with_server_info(Implementation::new("isto", env!("CARGO_PKG_VERSION")))
        .with_instructions(format!("{about} {AGGREGATOR_NOTE}"));
    if view::offered(endpoint) {
        view::offer(config)
    } else {
        config
    }
}

fn tool_error(msg: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(msg)])
}

/// The one mapping of a failed tool call to its result: an `isError` result with the
/// error's public message; an internal failure's cause is logged here, once (in the
/// request's span, see [`call_blocking`]), and answered with
/// [`crate::base::INTERNAL_MESSAGE`].
pub(crate) fn failure(tool: &str, e: &dyn PublicError) -> CallToolResult {
    if e.is_internal() {
        tracing::error!(tool, error = %e, "tool failed");
    }
    tool_error(e.public_message())
}

/// Runs one tool call of `endpoint` (blocking: store I/O) as [`IstoServer`] does, without
/// the transport, for the integration tests: with `grant` (the bearer's; none on `/mcp`)
/// for a caller at `client`; `None` when the endpoint has no tool of that name. Refusals,
/// bad input and failures are `isError` results ([`handlers::run`]).
#[cfg(any(test, feature = "testkit"))]
pub fn dispatch(
    holder: &AppState,
    endpoint: Endpoint,
    grant: Option<&Grant>,
    client: ClientAddr,
    name: &str,
    args: &Value,
) -> Option<CallToolResult> {
    let tool = endpoint.tool(name)?;
    Some(handlers::run(holder, endpoint, grant, client, tool, args))
}

/// The one mapping of an access-policy refusal to a tool result (`isError`, the text
/// naming the rule for the agent), for the tool `tool` of `endpoint`.
pub(crate) fn denied(endpoint: Endpoint, tool: &str, d: &Denied) -> CallToolResult {
    const BUYER: &str = "unauthorized: this endpoint acts for a signed-in person; connect with an OAuth access token \
                         for scope intents";
    const SELLER: &str = "unauthorized: this endpoint is for the holder's registered sellers; connect with an OAuth \
                          access token for /mcp/seller (scopes offers, demand)";
    let text = match (endpoint, d) {
        (_, Denied::NotOffered) => format!("unknown tool: {tool} is not offered on this endpoint"),
        (Endpoint::Public, d) => format!("unauthorized: {d}"),
        (Endpoint::Buyer, _) => BUYER.to_owned(),
        (Endpoint::Seller, Denied::MissingCredentials) => SELLER.to_owned(),
        (Endpoint::Seller, Denied::NotSeller | Denied::NotBuyer | Denied::WrongResource) => {
            "unauthorized: the access token is not a seller's token for /mcp/seller".to_owned()
        }
        (Endpoint::Seller, Denied::InsufficientScope { any_of }) => {
            format!("insufficient_scope: {tool} needs scope {}", any_of.join(" or "))
        }
        (Endpoint::Seller, Denied::SellerDisabled) => {
            "unauthorized: the seller account is disabled or unknown".to_owned()
        }
    };
    tool_error(text)
}

/// The span of the HTTP request that carried this call ([`from_request`]: the handler
/// runs in the session's task, outside it), else the current span.
pub(crate) fn request_span(context: &RequestContext<RoleServer>) -> tracing::Span {
    from_request(context).unwrap_or_else(tracing::Span::current)
}

/// What the app's middleware put into the extensions of the HTTP request that carried
/// this call (rmcp hands the request's parts to every call), by type: the [`Grant`] of
/// the bearer middleware, the [`ClientAddr`], the [`Charge`] of the front layer (the
/// client's rate bucket), the trace span. None for a call not over HTTP.
pub(crate) fn from_request<T: Clone + Send + Sync + 'static>(context: &RequestContext<RoleServer>) -> Option<T> {
    context.extensions.get::<http::request::Parts>().and_then(|p| p.extensions.get::<T>()).cloned()
}

/// Runs `run` and hands the CPU time the calling thread spent in it to `charge`.
fn charged<T>(charge: Option<&Charge>, run: impl FnOnce() -> T) -> T {
    let Some(charge) = charge else { return run() };
    let before = crate::clock::thread_cpu();
    let out = run();
    charge.cpu(crate::clock::thread_cpu().saturating_sub(before));
    out
}

/// The tools whose call is one short store read (a token lookup and one record, a few
/// microseconds from redb's cache): [`call_blocking`] runs them in the calling task,
/// since handing them to a blocking thread costs more than the read, and does not
/// measure their CPU time: it is bounded (a record of bounded size) and not the
/// client's to choose, and the request's own cell of the rate bucket pays for it
/// (reading the thread's CPU clock twice was 1.6 % of such a call's CPU).
const INLINE_TOOLS: &[ToolId] = &[ToolId::GetIntent];

/// The longest statement of a catalogue search that [`call_blocking`] runs in the calling
/// task, bytes (about six words: each one term lookup over the offer index, a few hundred
/// microseconds at most at 10^5 offers); see [`inline_search`].
const INLINE_SEARCH_BYTES: usize = 48;

/// Whether `intent_search_offers` with `args` is short enough to run in the calling task
/// (its CPU time still charged): a statement of at most [`INLINE_SEARCH_BYTES`] with a
/// letter or digit, no `area` or `category` (a filter without words lists all of its
/// offers), and a `limit` of at most 20. Handing a search to a blocking thread and back
/// cost about a seventh of its CPU in a profile of the load benchmark; longer or filtered
/// searches still go there, so that no client-chosen cost holds up a worker.
fn inline_search(args: &Value) -> bool {
    let short = |s: &str| s.len() <= INLINE_SEARCH_BYTES && s.chars().any(char::is_alphanumeric);
    args.get("statement").and_then(Value::as_str).is_some_and(short)
        && args.get("area").is_none()
        && args.get("category").is_none()
        && args.get("limit").is_none_or(|l| l.as_u64().is_some_and(|n| n <= 20))
}

/// Runs a `tools/call` for one endpoint: a name that is not one of `endpoint`'s tools
/// is a JSON-RPC invalid-params error; otherwise `run` (blocking: store I/O) gets the
/// tool and the arguments on a blocking thread (in the calling task for
/// [`INLINE_TOOLS`], and for short searches, [`inline_search`], when the offer index is
/// open, `index_open`), inside `span` so that what it
/// logs carries the request id, its CPU time charged to `charge` (not for
/// [`INLINE_TOOLS`]).
pub(crate) async fn call_blocking(
    endpoint: Endpoint,
    span: tracing::Span,
    charge: Option<Charge>,
    request: CallToolRequestParams,
    index_open: bool,
    run: impl FnOnce(ToolId, &Value) -> CallToolResult + Send + 'static,
) -> Result<CallToolResponse, McpError> {
    use crate::telemetry::{tool_call, ToolOutcome, OTHER};
    let Some(tool) = endpoint.tool(&request.name) else {
        // A client's name is never a label: only the endpoint's own tool names are.
        tool_call(OTHER, ToolOutcome::UnknownTool);
        let name = crate::protocol::input::echo(&request.name);
        return Err(McpError::invalid_params(format!("unknown tool: {name}"), None));
    };
    let args = Value::Object(request.arguments.unwrap_or_default());
    let out = if INLINE_TOOLS.contains(&tool) {
        span.in_scope(|| run(tool, &args))
    } else if tool == ToolId::SearchOffers && index_open && inline_search(&args) {
        span.in_scope(|| charged(charge.as_ref(), || run(tool, &args)))
    } else {
        tokio::task::spawn_blocking(move || span.in_scope(|| charged(charge.as_ref(), || run(tool, &args))))
            .await
            .map_err(|_| McpError::internal_error("tool task failed", None))?
    };
    Ok(complete(tool, out))
}

/// `out`, the result of a call of `tool`, counted in the tool-call metrics by its outcome.
fn complete(tool: ToolId, out: CallToolResult) -> CallToolResponse {
    use crate::telemetry::{tool_call, ToolOutcome};
    tool_call(tool.name(), if out.is_error == Some(true) { ToolOutcome::Error } else { ToolOutcome::Ok });
    CallToolResponse::Complete(out)
}

/// How long a client or cache may reuse a `tools/list` answer, milliseconds (SEP-2549
/// `ttlMs`, MCP 2026-07-28 "Caching"): one hour. The lists change only with a new isto
/// version, and a client that calls a tool an upgrade removed gets "unknown tool".
pub const TOOLS_TTL_MS: u64 = 60 * 60 * 1000;

/// The `tools/list` answer of an endpoint: all of `tools`, in their fixed order, one
/// page. It is the same for every caller (neither the token nor the client changes it),
/// so on 2026-07-28 and later it is cacheable by anyone (`ttlMs` [`TOOLS_TTL_MS`],
/// `cacheScope: "public"`); older revisions have no caching hints.
pub fn tool_list(tools: &[Tool], version: Option<&ProtocolVersion>) -> ListToolsResult {
    let list = ListToolsResult::with_all_items(tools.to_vec());
    if modern(version) {
        list.with_ttl_ms(TOOLS_TTL_MS).with_cache_scope(CacheScope::Public)
    } else {
        list
    }
}

/// Whether `version` is 2026-07-28 or later: caching hints, and no server-to-client
/// requests (stateless).
pub(crate) fn modern(version: Option<&ProtocolVersion>) -> bool {
    version.is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

impl ServerHandler for IstoServer {
    fn get_info(&self) -> ServerConfig {
        (*self.info).clone()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let tools = if view::declared(&context) { &self.view_tools } else { &self.tools };
        Ok(tool_list(tools, context.protocol_version().as_ref()))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        if !view::offered(self.endpoint) {
            return Err(McpError::method_not_found::<rmcp::model::ListResourcesRequestMethod>());
        }
        Ok(view::resource_list(view::declared(&context), context.protocol_version().as_ref()))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        if !view::offered(self.endpoint) {
            return Err(McpError::method_not_found::<rmcp::model::ReadResourceRequestMethod>());
        }
        view::read(&request.uri, context.protocol_version().as_ref()).map(ReadResourceResponse::Complete)
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.iter().find(|t| t.name == name).cloned()
    }

    /// [`IstoServer::answer`], boxed: rmcp moves the handler's future several times on
    /// its way into the request's task (its wrappers, the task's cell, each stage of the
    /// task), and the answer's future holds the request, its context and the
    /// elicitation's wait; boxed, each of those moves copies a pointer.
    fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl std::future::Future<Output = Result<CallToolResponse, McpError>> + MaybeSendFuture + '_ {
        Box::pin(self.answer(request, context))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::ServiceError;
    use crate::protocol::input::InputError;

    fn text(r: &CallToolResult) -> String {
        let v = serde_json::to_value(r).unwrap();
        assert_eq!(v["isError"], true, "{v}");
        v["content"][0]["text"].as_str().unwrap().to_owned()
    }

    #[test]
    fn only_short_unfiltered_searches_run_inline() {
        use serde_json::json;
        assert!(inline_search(&json!({"statement": "škoda octavia"})));
        assert!(inline_search(&json!({"statement": "toyota corolla automat", "limit": 20})));
        assert!(!inline_search(&json!({"statement": "toyota", "limit": 21})), "a longer answer");
        assert!(!inline_search(&json!({"statement": "x".repeat(INLINE_SEARCH_BYTES + 1)})), "a longer statement");
        assert!(!inline_search(&json!({"statement": "a do", "category": "vehicles"})), "a filter lists its offers");
        assert!(!inline_search(&json!({"statement": "byt", "area": {"country": "SK"}})));
        assert!(!inline_search(&json!({"statement": " ,. "})), "no word");
        assert!(!inline_search(&json!({"limit": 5})), "no statement");
    }

    #[test]
    fn each_refusal_has_its_tool_text() {
        let seller = |d: Denied| text(&denied(Endpoint::Seller, "intent_submit_offer", &d));
        assert_eq!(
            seller(Denied::MissingCredentials),
            "unauthorized: this endpoint is for the holder's registered sellers; connect with an OAuth access token \
             for /mcp/seller (scopes offers, demand)"
        );
        for d in [Denied::NotSeller, Denied::WrongResource] {
            assert_eq!(seller(d), "unauthorized: the access token is not a seller's token for /mcp/seller");
        }
        assert_eq!(
            seller(Denied::InsufficientScope { any_of: vec!["offers".into()] }),
            "insufficient_scope: intent_submit_offer needs scope offers"
        );
        assert_eq!(
            text(&denied(
                Endpoint::Seller,
                "intent_search_offers",
                &Denied::InsufficientScope { any_of: vec!["offers".into(), "demand".into()] }
            )),
            "insufficient_scope: intent_search_offers needs scope offers or demand"
        );
        assert_eq!(seller(Denied::SellerDisabled), "unauthorized: the seller account is disabled or unknown");
        for d in [Denied::MissingCredentials, Denied::InsufficientScope { any_of: vec!["intents".into()] }] {
            assert_eq!(
                text(&denied(Endpoint::Buyer, "intent_get_intent", &d)),
                "unauthorized: this endpoint acts for a signed-in person; connect with an OAuth access token for \
                 scope intents"
            );
        }
    }

    #[test]
    fn the_tool_list_is_cacheable_by_anyone_on_2026_07_28_only() {
        let tools = tools_of(Endpoint::Public);
        let modern = serde_json::to_value(tool_list(&tools, Some(&ProtocolVersion::V_2026_07_28))).unwrap();
        assert_eq!(modern["ttlMs"], TOOLS_TTL_MS);
        assert_eq!(modern["cacheScope"], "public");
        let legacy = serde_json::to_value(tool_list(&tools, Some(&ProtocolVersion::V_2025_11_25))).unwrap();
        assert!(legacy.get("ttlMs").is_none() && legacy.get("cacheScope").is_none(), "{legacy}");
        assert!(serde_json::to_value(tool_list(&tools, None)).unwrap().get("ttlMs").is_none());
        let names: Vec<_> = modern["tools"].as_array().unwrap().iter().map(|t| t["name"].clone()).collect();
        assert_eq!(names[0], "intent_publish_intent");
        assert_eq!(names.len(), tools.len());
    }

    #[test]
    fn a_failure_shows_its_public_message_only() {
        let internal = ServiceError::Index("segment 7 of /data/index is corrupt".into());
        let t = text(&failure("intent_search_offers", &internal));
        assert_eq!(t, crate::base::INTERNAL_MESSAGE);
        let input = ServiceError::Input(InputError("statement is required".into()));
        assert_eq!(text(&failure("intent_publish_intent", &input)), "statement is required");
        assert_eq!(text(&failure("intent_get_intent", &ServiceError::NotFound)), "not_found: no intent for this code");
    }
}
