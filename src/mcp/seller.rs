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
//!   `demand`): the `/mcp` tools, answered by the same handlers as there.
//!
//! Every call takes the [`crate::oauth::Grant`] of its own HTTP request (put there by the bearer
//! middleware; see [`crate::mcp::from_request`]) and is refused ([`crate::policy::authorize`]) unless the
//! grant is a seller's token for this endpoint with the tool's scope and the account —
//! read on every call — is an enabled seller: a disabled seller's tools stop working at
//! once, whatever its tokens.
//!
//! Its tool list is [`super::tools_of`] and its calls run through [`super::dispatch`].
