//! isto's MCP App (the MCP Apps extension `io.modelcontextprotocol/ui`, SEP-1865, stable
//! 2026-01-26): one view, `ui://isto/offers` (`text/html;profile=mcp-app`), that a host
//! renders in a sandboxed iframe for the results of four tools on `/mcp` and
//! `/mcp/buyer` — offer cards for `intent_search_offers` and `intent_list_matches`, the
//! intent's status card for `intent_publish_intent` and `intent_get_intent`.
//!
//! **Negotiation.** Both endpoints declare the extension (`capabilities.extensions
//! ["io.modelcontextprotocol/ui"]: {}`) and `resources` in their `initialize` (2025-11-25)
//! and `server/discover` (2026-07-28) answers. A client declares it in its capabilities —
//! at `initialize` on 2025-11-25, in each request's `_meta` on 2026-07-28 — with
//! `mimeTypes` holding [`MIME_TYPE`] ([`accepts`]). Only such a client gets the tool list
//! whose four tools carry `_meta.ui.resourceUri` (and the older flat `_meta
//! ["ui/resourceUri"]`, as the official SDK's `registerAppTool` writes both), the view in
//! `resources/list`, and the view's data in those tools' results ([`Call::result`]).
//! Every other client gets the ordinary tool list and results, byte for byte.
//!
//! **The view's data.** The view draws only what the host passes it: the tool result's
//! `structuredContent` (and the call's arguments: `since` marks new matches). For a
//! client that declared the extension, the results of `intent_publish_intent`,
//! `intent_get_intent` and `intent_list_matches` carry one more `structuredContent`
//! member, `view`: `{"language": "sk"|"cs"|"en"|…, "cadence": "as_they_come"|"daily"|
//! "weekly"|"pause", "resultsUrl"?: "<public>/me/intents/<id>"}` (the results page on
//! `/mcp/buyer` only: on `/mcp` the results page's link holds a token and is in the
//! person's e-mails). Nothing there depends on the hidden limit. The text content is the
//! same as for any client.
//!
//! **The resource.** Static per isto version: the HTML, CSS and JS of `assets/app/`
//! (embedded with rust-embed), put together once with the region names of
//! [`crate::gazetteer`] and isto's version; under [`MAX_VIEW_BYTES`]. It declares empty
//! CSP domain lists (no connection, no resource, no frame from any origin) and loads
//! nothing: listing links and the consent and results pages open through the host
//! (`ui/open-link`). On 2026-07-28 `resources/list` and `resources/read` are cacheable
//! by anyone for [`VIEW_TTL_MS`].

use super::{modern, Endpoint};
use crate::oauth::Grant;
use crate::protocol::tools::ToolId;
use crate::state::AppState;
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResult, ClientCapabilities, ListResourcesResult, MetaObject,
    ProtocolVersion, ReadResourceResult, Resource, ResourceContents, ResourcesCapability, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use rust_embed::RustEmbed;
use serde_json::{json, Map, Value};
use std::sync::{Arc, LazyLock};

/// The extension's identifier (SEP-1865 "Extension Identifier").
pub const EXTENSION: &str = "io.modelcontextprotocol/ui";

/// The view's MIME type (SEP-1865 "UI Resource Format").
pub const MIME_TYPE: &str = "text/html;profile=mcp-app";

/// The view's resource URI.
pub const VIEW_URI: &str = "ui://isto/offers";

/// The flat tool `_meta` key of the resource URI that SEP-1865 deprecates but hosts
/// still read; written beside `_meta.ui.resourceUri`.
pub const LEGACY_URI_KEY: &str = "ui/resourceUri";

/// The tools linked to the view (on `/mcp` and `/mcp/buyer`).
pub const LINKED: [ToolId; 4] = [ToolId::SearchOffers, ToolId::ListMatches, ToolId::PublishIntent, ToolId::GetIntent];

/// Whether the tool named `name` is linked to the view.
fn is_linked(name: &str) -> bool {
    LINKED.iter().any(|t| t.name() == name)
}

/// How long a 2026-07-28 client or cache may reuse `resources/list` and
/// `resources/read`, milliseconds: as the tool list ([`super::TOOLS_TTL_MS`]); both
/// change only with a new isto version.
pub const VIEW_TTL_MS: u64 = super::TOOLS_TTL_MS;

/// The most the view (its HTML, CSS and JS together, as served) may weigh, bytes.
pub const MAX_VIEW_BYTES: usize = 60 * 1024;

/// The view's files: `view.html` with the markers `/*ISTO:STYLE*/`, `/*ISTO:DATA*/` and
/// `/*ISTO:SCRIPT*/`, `view.css`, `view.js`.
#[derive(RustEmbed)]
#[folder = "assets/app/"]
struct Files;

/// Whether client capabilities `caps` declare the extension with [`MIME_TYPE`] among
/// its `mimeTypes` (SEP-1865 "Client (Host) Capabilities": `mimeTypes` is required).
pub fn accepts(caps: &ClientCapabilities) -> bool {
    caps.extensions
        .as_ref()
        .and_then(|e| e.get(EXTENSION))
        .and_then(|s| s.get("mimeTypes"))
        .and_then(Value::as_array)
        .is_some_and(|types| types.iter().any(|t| t.as_str() == Some(MIME_TYPE)))
}

/// Whether the client of this request declared the extension ([`accepts`]).
pub fn declared(context: &RequestContext<RoleServer>) -> bool {
    context.client_capabilities().is_some_and(|c| accepts(&c))
}

/// Whether `endpoint` offers the view (`/mcp` and `/mcp/buyer`).
pub fn offered(endpoint: Endpoint) -> bool {
    matches!(endpoint, Endpoint::Public | Endpoint::Buyer)
}

/// `config` with the extension and `resources` declared (for [`offered`] endpoints).
pub fn offer(mut config: ServerConfig) -> ServerConfig {
    let mut ext = config.capabilities.extensions.take().unwrap_or_default();
    ext.insert(EXTENSION.to_owned(), Map::new());
    config.capabilities.extensions = Some(ext);
    config.capabilities.resources = Some(ResourcesCapability::default());
    config
}

/// The view's `_meta` (SEP-1865 `UIResourceMeta`): empty CSP domain lists, a border.
fn resource_meta() -> MetaObject {
    let empty: [&str; 0] = [];
    let ui = json!({"ui": {
        "csp": {"connectDomains": empty, "resourceDomains": empty, "frameDomains": empty, "baseUriDomains": empty},
        "prefersBorder": true
    }});
    MetaObject(super::obj(ui))
}

/// `tools` with the view linked from the [`LINKED`] ones.
pub fn linked(tools: &[Tool]) -> Vec<Tool> {
    tools
        .iter()
        .map(|t| {
            let mut t = t.clone();
            if is_linked(&t.name) {
                let mut meta = t.meta.take().unwrap_or_default();
                meta.0.insert("ui".into(), json!({"resourceUri": VIEW_URI}));
                meta.0.insert(LEGACY_URI_KEY.into(), json!(VIEW_URI));
                t.meta = Some(meta);
            }
            t
        })
        .collect()
}

/// The tool lists with the view linked, built once: `/mcp`'s and `/mcp/buyer`'s.
pub fn linked_tools(endpoint: Endpoint) -> Option<Arc<Vec<Tool>>> {
    static LISTS: LazyLock<[Arc<Vec<Tool>>; 3]> =
        LazyLock::new(|| Endpoint::ALL.map(|e| Arc::new(linked(&super::tools_of(e)))));
    offered(endpoint).then(|| Arc::clone(&LISTS[endpoint as usize]))
}

/// The view as listed (`resources/list`).
pub fn resource() -> Resource {
    let mut r = Resource::new(VIEW_URI, "isto-offers")
        .with_title("Offers and the intent's status")
        .with_description(
            "isto's view of intent_search_offers and intent_list_matches (offer cards) and of \
             intent_publish_intent and intent_get_intent (the intent's status card).",
        )
        .with_mime_type(MIME_TYPE);
    r.meta = Some(resource_meta());
    r
}

/// The `resources/list` answer: the view for a client that declared the extension
/// (SEP-1865 lets a server leave UI-only resources out of the list for the others);
/// cacheable by anyone on 2026-07-28.
pub fn resource_list(declared: bool, version: Option<&ProtocolVersion>) -> ListResourcesResult {
    let list = ListResourcesResult::with_all_items(if declared { vec![resource()] } else { Vec::new() });
    if modern(version) {
        list.with_ttl_ms(VIEW_TTL_MS).with_cache_scope(CacheScope::Public)
    } else {
        list
    }
}

/// The `resources/read` answer for `uri`: the view (for any client: it is static and
/// public), cacheable by anyone on 2026-07-28.
///
/// # Errors
/// A JSON-RPC resource-not-found error (-32002) naming `uri` for any other URI; an
/// internal error when the view is not in the binary.
pub fn read(uri: &str, version: Option<&ProtocolVersion>) -> Result<ReadResourceResult, McpError> {
    if uri != VIEW_URI {
        return Err(McpError::resource_not_found(
            format!("uri: no resource {}; this holder has one, {VIEW_URI}", crate::protocol::input::echo(uri)),
            None,
        ));
    }
    let html = VIEW.as_ref().map_err(|e| {
        tracing::error!(error = %e, "the MCP App view is not in the binary");
        McpError::internal_error("the view is unavailable", None)
    })?;
    let contents = ResourceContents::TextResourceContents {
        uri: VIEW_URI.to_owned(),
        mime_type: Some(MIME_TYPE.to_owned()),
        text: html.clone(),
        meta: Some(resource_meta()),
    };
    let result = ReadResourceResult::new(vec![contents]);
    Ok(if modern(version) { result.with_ttl_ms(VIEW_TTL_MS).with_cache_scope(CacheScope::Public) } else { result })
}

/// The view's HTML, put together once ([`assemble`]).
static VIEW: LazyLock<Result<String, String>> = LazyLock::new(assemble);

fn file(name: &str) -> Result<String, String> {
    let f = Files::get(name).ok_or_else(|| format!("assets/app/{name} is missing"))?;
    String::from_utf8(f.data.into_owned()).map_err(|_| format!("assets/app/{name} is not UTF-8"))
}

/// `view.html` with `view.css`, the data (isto's version and the region names of the
/// gazetteer in sk, cs and en) and `view.js` put in place of its three markers.
///
/// # Errors
/// A file missing, not UTF-8 or a marker missing; a style or script that would end its
/// element early.
pub fn assemble() -> Result<String, String> {
    let (html, css, js) = (file("view.html")?, file("view.css")?, file("view.js")?);
    if css.contains("</") || js.contains("</") {
        return Err("view.css or view.js contains \"</\"".into());
    }
    let regions: Map<String, Value> = crate::gazetteer::all_regions()
        .map(|(code, _)| {
            let name = |l| crate::gazetteer::region_name(code, l).unwrap_or(code);
            (code.to_owned(), json!({"sk": name("sk"), "cs": name("cs"), "en": name("en")}))
        })
        .collect();
    let data = json!({"version": env!("CARGO_PKG_VERSION"), "regions": regions}).to_string().replace('<', "\\u003c");
    let mut out = html;
    for (marker, with) in [("/*ISTO:STYLE*/", css), ("/*ISTO:DATA*/", data), ("/*ISTO:SCRIPT*/", js)] {
        let at = out.find(marker).ok_or_else(|| format!("view.html has no {marker}"))?;
        out.replace_range(at..at + marker.len(), &with);
    }
    Ok(out)
}

/// A `tools/call` whose result feeds the view: a [`LINKED`] tool on an [`offered`]
/// endpoint, from a client that declared the extension.
#[derive(Debug, Clone)]
pub struct Call {
    endpoint: Endpoint,
    name: String,
    args: Value,
    grant: Option<Grant>,
}

impl Call {
    /// The call of `request`, if its result feeds the view.
    pub fn of(
        context: &RequestContext<RoleServer>,
        endpoint: Endpoint,
        request: &CallToolRequestParams,
    ) -> Option<Call> {
        if !offered(endpoint) || !is_linked(&request.name) || !declared(context) {
            return None;
        }
        Some(Call {
            endpoint,
            name: request.name.to_string(),
            args: Value::Object(request.arguments.clone().unwrap_or_default()),
            grant: super::from_request(context),
        })
    }

    /// `result` of this call with the view's data: for the intent tools,
    /// `structuredContent.view` (see the module docs), read from the intent the result
    /// names. An error result, a search result, or an intent that cannot be read again
    /// (withdrawn meanwhile is still read; gone is not) is returned unchanged.
    pub fn result(&self, holder: &AppState, mut result: CallToolResult) -> CallToolResult {
        let (endpoint, name, args) = (self.endpoint, self.name.as_str(), &self.args);
        if result.is_error == Some(true) || name == ToolId::SearchOffers.name() {
            return result;
        }
        let Some(Value::Object(sc)) = result.structured_content.as_mut() else { return result };
        let str_at = |v: &Value, p: &str| v.pointer(p).and_then(Value::as_str).map(str::to_owned);
        let structured = Value::Object(sc.clone());
        let id = str_at(&structured, "/intent/id").or_else(|| str_at(args, "/id")).or_else(|| str_at(args, "/intent"));
        let record = match endpoint {
            Endpoint::Public => {
                let Some(code) = str_at(args, "/intentCode").or_else(|| str_at(&structured, "/intentCode")) else {
                    return result;
                };
                holder.intents.intent_by_code(&code, id.as_deref())
            }
            Endpoint::Buyer => {
                let (Some(grant), Some(id)) = (&self.grant, id) else { return result };
                holder.intents.owned(&grant.account_id, &id)
            }
            Endpoint::Seller => return result,
        };
        let rec = match record {
            Ok(r) => r,
            Err(e) => {
                if e.is_internal() {
                    tracing::error!(tool = name, error = %e, "the view's data could not be read");
                }
                return result;
            }
        };
        let mut view = json!({"language": rec.language, "cadence": rec.cadence.key()});
        if endpoint == Endpoint::Buyer {
            view["resultsUrl"] = json!(format!("{}/me/intents/{}", holder.base.settings().public_url.base, rec.id));
        }
        sc.insert("view".into(), view);
        result
    }
}

/// Runs one tool call as a client that declared the extension gets it (blocking: store
/// I/O): the endpoint's dispatch, then [`Call::result`]. `None` for an unknown tool.
/// For the integration tests.
#[cfg(any(test, feature = "testkit"))]
pub fn dispatch(
    holder: &AppState,
    endpoint: Endpoint,
    grant: Option<&Grant>,
    name: &str,
    args: &Value,
) -> Option<CallToolResult> {
    let result = super::dispatch(holder, endpoint, grant, crate::net::ClientAddr(None), name, args)?;
    Some(if offered(endpoint) && is_linked(name) {
        let call = Call { endpoint, name: name.to_owned(), args: args.clone(), grant: grant.cloned() };
        call.result(holder, result)
    } else {
        result
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(v: Value) -> ClientCapabilities {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn the_extension_is_declared_only_with_the_mime_type() {
        assert!(accepts(&caps(json!({"extensions": {EXTENSION: {"mimeTypes": [MIME_TYPE]}}}))));
        assert!(accepts(&caps(json!({"extensions": {EXTENSION: {"mimeTypes": ["text/x-other", MIME_TYPE]}}}))));
        assert!(!accepts(&caps(json!({}))));
        assert!(!accepts(&caps(json!({"extensions": {EXTENSION: {}}}))), "mimeTypes is required");
        assert!(!accepts(&caps(json!({"extensions": {EXTENSION: {"mimeTypes": ["text/html"]}}}))));
        assert!(!accepts(&caps(json!({"extensions": {"io.modelcontextprotocol/apps": {"mimeTypes": [MIME_TYPE]}}}))));
        assert!(!accepts(&caps(json!({"experimental": {EXTENSION: {"mimeTypes": [MIME_TYPE]}}}))));
    }

    #[test]
    fn the_view_is_one_self_contained_document_under_its_size() {
        let html = assemble().unwrap();
        assert!(html.len() < MAX_VIEW_BYTES, "the view weighs {} bytes", html.len());
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(!html.contains("/*ISTO:"), "a marker was left");
        assert!(html.contains("\"SK-BL\":{\"cs\":\"Bratislavský kraj\",\"en\":\"Bratislava Region\""), "region names");
        assert!(html.contains(env!("CARGO_PKG_VERSION")));
        // Nothing is loaded from anywhere: no external script, style, image, font or frame.
        for needle in ["src=", "href=", "@import", "url(", "fetch(", "XMLHttpRequest", "WebSocket", "<iframe", "<link"]
        {
            assert!(!html.contains(needle), "the view holds {needle}");
        }
    }

    #[test]
    fn only_the_four_tools_link_the_view_and_nothing_else_changes() {
        let plain = super::super::tools_of(Endpoint::Public);
        let ui = linked(&plain);
        assert_eq!(plain.len(), ui.len());
        for (p, u) in plain.iter().zip(&ui) {
            let (mut p, mut u) = (serde_json::to_value(p).unwrap(), serde_json::to_value(u).unwrap());
            if is_linked(p["name"].as_str().unwrap()) {
                assert_eq!(u["_meta"], json!({"ui": {"resourceUri": VIEW_URI}, LEGACY_URI_KEY: VIEW_URI}));
                u.as_object_mut().unwrap().remove("_meta");
                p.as_object_mut().unwrap().remove("_meta");
            }
            assert_eq!(p, u);
        }
        let linked_names: Vec<_> = ui.iter().filter(|t| t.meta.is_some()).map(|t| t.name.to_string()).collect();
        assert_eq!(linked_names.len(), 4, "{linked_names:?}");
    }

    #[test]
    fn the_resource_declares_empty_csp_lists_and_is_cacheable_on_2026_07_28() {
        let modern = serde_json::to_value(read(VIEW_URI, Some(&ProtocolVersion::V_2026_07_28)).unwrap()).unwrap();
        assert_eq!((modern["ttlMs"].clone(), modern["cacheScope"].clone()), (json!(VIEW_TTL_MS), json!("public")));
        let c = &modern["contents"][0];
        assert_eq!((c["uri"].as_str(), c["mimeType"].as_str()), (Some(VIEW_URI), Some(MIME_TYPE)));
        for list in ["connectDomains", "resourceDomains", "frameDomains", "baseUriDomains"] {
            assert_eq!(c["_meta"]["ui"]["csp"][list], json!([]), "{list}");
        }
        let legacy = serde_json::to_value(read(VIEW_URI, Some(&ProtocolVersion::V_2025_11_25)).unwrap()).unwrap();
        assert!(legacy.get("ttlMs").is_none() && legacy.get("cacheScope").is_none());
        assert_eq!(legacy["contents"][0]["text"], c["text"], "one view for both revisions");
        let err = read("ui://isto/other", None).unwrap_err();
        assert_eq!(err.code.0, -32002);
        assert!(err.message.starts_with("uri: no resource"), "{}", err.message);
        let listed = serde_json::to_value(resource_list(true, None)).unwrap();
        assert_eq!(listed["resources"][0]["uri"], VIEW_URI);
        assert_eq!(serde_json::to_value(resource_list(false, None)).unwrap()["resources"], json!([]));
    }

    #[test]
    fn the_endpoints_offer_the_extension_and_resources() {
        let v = serde_json::to_value(offer(ServerConfig::new(
            rmcp::model::ServerCapabilities::builder().enable_tools().build(),
        )))
        .unwrap();
        assert_eq!(v["capabilities"]["extensions"][EXTENSION], json!({}));
        assert!(v["capabilities"]["resources"].is_object());
        assert!(v["capabilities"]["tools"].is_object());
    }
}
