//! The one tool table (PROTOCOL.md §3; seed §5.4 for the consent-link profile): every
//! MCP tool this holder knows is one [`ToolId`] variant, carrying its exact wire name
//! (the seed's), its title, its behaviour hints, and — for each [`Endpoint`] that offers
//! it — its description and input and output JSON Schemas ([`ToolId::spec`]).
//!
//! Everything else reads this table: the MCP face (`tools/list`, the handler chosen by
//! an exhaustive `match` on the variant), the access policy (also an exhaustive `match`:
//! a new variant without a policy entry does not compile) and `isto check`. A name a
//! client sends is looked up with [`ToolId::from_name`]; no other list of tool names
//! exists.

use super::schema;
use serde_json::Value;

/// Which of the three MCP endpoints (PROTOCOL.md §1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Endpoint {
    /// `/mcp`: the consent-link profile, no sign-in (seed §5).
    Public,
    /// `/mcp/buyer`: a signed-in person's intents (bearer token, PROTOCOL.md §7).
    Buyer,
    /// `/mcp/seller`: registered sellers (bearer token, PROTOCOL.md §7).
    Seller,
}

impl Endpoint {
    /// Every endpoint.
    pub const ALL: [Self; 3] = [Self::Public, Self::Buyer, Self::Seller];

    /// The endpoint's tools in their `tools/list` order (fixed: clients and caches may
    /// compare lists).
    pub fn tools(self) -> &'static [ToolId] {
        use ToolId::*;
        match self {
            Self::Public => &[PublishIntent, GetIntent, ListMatches, WithdrawIntent, SearchOffers, DemandSummary],
            Self::Buyer => {
                &[PublishIntent, GetIntent, UpdateIntent, WithdrawIntent, ListMatches, SearchOffers, DemandSummary]
            }
            Self::Seller => &[SubmitOffer, ListOpenIntents, SearchOffers, DemandSummary],
        }
    }

    /// The tool of this endpoint named `name` (exactly, as on the wire); `None` for a
    /// name no tool has or a tool this endpoint does not offer.
    pub fn tool(self, name: &str) -> Option<ToolId> {
        ToolId::from_name(name).filter(|t| self.tools().contains(t))
    }
}

/// Every MCP tool of the holder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ToolId {
    /// `intent_publish_intent`: a draft (`/mcp`) or the person's intent (`/mcp/buyer`).
    PublishIntent,
    /// `intent_get_intent`: by intentCode (`/mcp`) or id (`/mcp/buyer`).
    GetIntent,
    /// `intent_update_intent`: `/mcp/buyer` only.
    UpdateIntent,
    /// `intent_withdraw_intent`: by intentCode (`/mcp`) or id (`/mcp/buyer`).
    WithdrawIntent,
    /// `intent_list_matches`: the delivered offers of one intent.
    ListMatches,
    /// `intent_search_offers`: the catalogue's full-text search.
    SearchOffers,
    /// `intent_demand_summary`: one cell of the band grid (PROTOCOL.md §5).
    DemandSummary,
    /// `intent_submit_offer`: a seller's reply to an open intent (`/mcp/seller`).
    SubmitOffer,
    /// `intent_list_open_intents`: the intents open to a seller (`/mcp/seller`).
    ListOpenIntents,
}

/// The MCP tool annotations (MCP spec "Tools", `ToolAnnotations`); every tool here is
/// closed-world (`openWorldHint: false`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hints {
    /// `readOnlyHint`.
    pub read_only: bool,
    /// `destructiveHint`.
    pub destructive: bool,
    /// `idempotentHint`.
    pub idempotent: bool,
}

/// What one endpoint says about one tool: the description (without the aggregator
/// note, which the face appends) and the input and output schemas (JSON Schema 2020-12).
#[derive(Debug, Clone)]
pub struct Spec {
    /// The tool.
    pub id: ToolId,
    /// The endpoint's description of it.
    pub description: &'static str,
    /// The input schema (unknown properties refused).
    pub input: Value,
    /// The output schema of `structuredContent`.
    pub output: Value,
}

/// The four tools of the consent-link profile on `/mcp` (seed §5.4, PROTOCOL.md §3),
/// which `isto check` requires of any holder.
pub const CONSENT_LINK_PROFILE: [ToolId; 4] =
    [ToolId::PublishIntent, ToolId::GetIntent, ToolId::ListMatches, ToolId::WithdrawIntent];

const READ: Hints = Hints { read_only: true, destructive: false, idempotent: true };
const WRITE: Hints = Hints { read_only: false, destructive: false, idempotent: false };
const DESTROY: Hints = Hints { read_only: false, destructive: true, idempotent: true };

/// Each tool's wire name, title and hints, indexed by `ToolId as usize` (the declaration
/// order, which [`ToolId::ALL`] keeps).
const TABLE: [(&str, &str, Hints); 9] = [
    ("intent_publish_intent", "Publish a buying intent", WRITE),
    ("intent_get_intent", "Get an intent", READ),
    ("intent_update_intent", "Change an intent", WRITE),
    ("intent_withdraw_intent", "Withdraw an intent", DESTROY),
    ("intent_list_matches", "List delivered offers", READ),
    ("intent_search_offers", "Search the catalogue", READ),
    ("intent_demand_summary", "Demand in one cell", READ),
    ("intent_submit_offer", "Reply to an open intent", WRITE),
    ("intent_list_open_intents", "List open intents", READ),
];

impl ToolId {
    /// Every tool.
    pub const ALL: [Self; 9] = [
        Self::PublishIntent,
        Self::GetIntent,
        Self::UpdateIntent,
        Self::WithdrawIntent,
        Self::ListMatches,
        Self::SearchOffers,
        Self::DemandSummary,
        Self::SubmitOffer,
        Self::ListOpenIntents,
    ];

    /// The wire name (the seed's, PROTOCOL.md §3).
    pub const fn name(self) -> &'static str {
        TABLE[self as usize].0
    }

    /// The tool named exactly `name`, on any endpoint.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }

    /// The human title (`tools/list` `title`).
    pub const fn title(self) -> &'static str {
        TABLE[self as usize].1
    }

    /// The behaviour hints.
    pub const fn hints(self) -> Hints {
        TABLE[self as usize].2
    }

    /// What `endpoint` says about this tool; `None` when it does not offer it.
    pub fn spec(self, endpoint: Endpoint) -> Option<Spec> {
        use Endpoint::{Buyer, Public, Seller};
        let (description, input, output) = match (self, endpoint) {
            (Self::PublishIntent, Public) => (PUBLISH_PUBLIC, schema::publish_input(), schema::publish_output()),
            (Self::PublishIntent, Buyer) => (PUBLISH_BUYER, schema::publish_input(), schema::buyer_publish_output()),
            (Self::GetIntent, Public) => (GET_PUBLIC, schema::code_input(), schema::get_output()),
            (Self::GetIntent, Buyer) => (GET_BUYER, schema::id_input(), schema::get_output()),
            (Self::UpdateIntent, Buyer) => (UPDATE_BUYER, schema::update_input(), schema::update_output()),
            (Self::WithdrawIntent, Public) => (WITHDRAW_PUBLIC, schema::code_input(), schema::withdraw_output()),
            (Self::WithdrawIntent, Buyer) => (WITHDRAW_BUYER, schema::id_input(), schema::withdraw_output()),
            (Self::ListMatches, Public) => {
                (LIST_MATCHES_PUBLIC, schema::list_matches_input(), schema::list_matches_output())
            }
            (Self::ListMatches, Buyer) => {
                (LIST_MATCHES_BUYER, schema::buyer_list_matches_input(), schema::list_matches_output())
            }
            (Self::SearchOffers, _) => (SEARCH, schema::search_input(), schema::search_output()),
            (Self::DemandSummary, _) => (DEMAND, schema::demand_summary_input(), schema::demand_summary_output()),
            (Self::SubmitOffer, Seller) => (SUBMIT_OFFER, schema::offer_input(), schema::offer_output()),
            (Self::ListOpenIntents, Seller) => (LIST_OPEN, schema::open_input(), schema::open_output()),
            (Self::PublishIntent | Self::GetIntent | Self::WithdrawIntent | Self::ListMatches, Seller)
            | (Self::UpdateIntent, Public | Seller)
            | (Self::SubmitOffer | Self::ListOpenIntents, Public | Buyer) => return None,
        };
        Some(Spec { id: self, description, input, output })
    }
}

const PUBLISH_PUBLIC: &str =
    "Publishes what a person wants to buy (vehicles or property in Slovakia and Czechia) as a \
     draft intent. Takes no contact data: the result has a consentUrl on the holder's own page; give that link to the \
     person, who enters their e-mail and consents there, then confirms by e-mail (double opt-in). Do not open or fill \
     in the link yourself. Keep the returned intentCode: it reads matches and withdraws the intent. A draft without \
     consent expires after 24 hours. An optional hiddenLimit is sealed by the holder and never shown to anyone.";

const PUBLISH_BUYER: &str = "Publishes what the signed-in person wants to buy (vehicles or property in Slovakia and \
     Czechia). Takes no contact data: offers go to the person's verified account e-mail. The intent is active at once \
     when the person has accepted the holder's current consent text; otherwise the result has a consentUrl on the \
     holder's own page — give that link to the person, who consents there. Do not open or fill in the link yourself. \
     Keep the returned intent id. An optional hiddenLimit is sealed by the holder and never shown to anyone.";

const GET_PUBLIC: &str = "Returns the intent of an intentCode with its status (awaiting_consent, \
     awaiting_email_confirmation, active, expired, withdrawn). Never returns contact data or the hidden limit's value.";

const GET_BUYER: &str = "Returns one of the person's intents by id with its status (awaiting_consent, \
     awaiting_email_confirmation, active, expired, withdrawn). Never returns contact data or the hidden limit's value.";

const UPDATE_BUYER: &str = "Changes one of the person's intents: give the id and only the fields that change (the \
     same rules as intent_publish_intent; null removes criteria, budget, hiddenLimit or buyBy). Changes apply at once \
     and the intent is matched again (an offer is never delivered twice). Moving validUntil later, or renewing an \
     expired intent, is not applied at once: the result has a renewUrl on the holder's page where the person \
     confirms it. Do not open the link yourself. Moving validUntil earlier applies at once. Withdrawn intents cannot \
     be changed.";

const WITHDRAW_PUBLIC: &str = "Withdraws the intent at once: nothing more is delivered or e-mailed for it. Idempotent.";

const WITHDRAW_BUYER: &str =
    "Withdraws one of the person's intents at once: nothing more is delivered or e-mailed for it. Idempotent.";

const LIST_MATCHES_PUBLIC: &str = "Lists the offers the holder has delivered for the intent, oldest first. Pass the \
     previous nextSince as since to get only new ones. Offers are also e-mailed to the person.";

const LIST_MATCHES_BUYER: &str = "Lists the offers the holder has delivered for one of the person's intents (input \
     `intent`: its id), oldest first. Pass the previous nextSince as since to get only new ones. Offers are also \
     e-mailed to the person.";

const SEARCH: &str = "Searches the holder's catalogue of offers (full text in Slovak, Czech or English; case and \
     diacritics do not matter), best first. Read-only: no intent is created.";

const DEMAND: &str = "Counts the active buying intents in one cell of the holder's band grid: a category, a region, \
     a budget band (by the buyers' visible budget) and a buy-by band. The grid is published in the holder metadata \
     at /.well-known/isto-intents. A cell with fewer active intents than the holder's threshold k is withheld \
     ({\"withheld\": true}). Whole-country intents count in every region of the country. Never reveals an intent, a \
     buyer or a hidden limit.";

const SUBMIT_OFFER: &str = "Sends one offer in reply to an open buying intent (an id from intent_list_open_intents): \
     the Offer fields with source {\"kind\": \"reply\"} and inReplyTo. accepted: true means the offer is stored and \
     valid; the holder then checks it against the intent's criteria, area and price ceiling and, when it fits, \
     delivers it to the buyer — the result never says whether it was delivered. Refused with \"not open for \
     replies\" when the intent does not take replies from this seller, and after 3 replies to the same intent. The \
     buyer's contact data is never given out.";

const LIST_OPEN: &str = "Lists the active buying intents whose buyers allow replies (visibility pseudonymous) in \
     this seller's categories and regions, oldest change first: statement, criteria, area, visible budget, buyBy and \
     validUntil, with this seller's pseudonym for each buyer and this seller's own id for each intent (use it as \
     inReplyTo). Pass the previous nextSince as since to get the intents that opened or changed since (to the \
     minute: the current minute comes again). Never includes contact data or hidden limits.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_round_trip() {
        for (i, t) in ToolId::ALL.into_iter().enumerate() {
            assert_eq!(ToolId::from_name(t.name()), Some(t));
            assert_eq!(t as usize, i, "ALL is in declaration order");
        }
        assert_eq!(ToolId::PublishIntent.name(), "intent_publish_intent");
        assert_eq!(ToolId::ListOpenIntents.title(), "List open intents");
        assert_eq!(ToolId::WithdrawIntent.hints(), DESTROY);
        let mut names: Vec<&str> = ToolId::ALL.iter().map(|t| t.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ToolId::ALL.len());
        assert_eq!(ToolId::from_name("intent_publish_intent "), None);
    }

    #[test]
    fn an_endpoint_offers_exactly_the_tools_it_has_a_spec_for() {
        for e in Endpoint::ALL {
            for t in ToolId::ALL {
                assert_eq!(t.spec(e).is_some(), e.tools().contains(&t), "{t:?} on {e:?}");
                assert_eq!(e.tool(t.name()), e.tools().contains(&t).then_some(t));
            }
        }
        assert_eq!(Endpoint::Seller.tool("intent_publish_intent"), None);
        for t in CONSENT_LINK_PROFILE {
            assert!(Endpoint::Public.tools().contains(&t));
        }
    }
}
