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
//! [`crate::oauth::check_bearer`] and puts the [`crate::oauth::Grant`] into the request's extensions; rmcp hands the request's
//! [`http::request::Parts`] to every tool call, so each call uses the grant of its own
//! HTTP request ([`super::from_request`]). Without a grant every account tool answers
//! "unauthorized".
//!
//! Its tool list is [`super::tools_of`] and its calls run through [`super::dispatch`].
