//! Who may call what (PROTOCOL.md §1, §7): the roles, the protected resources and their
//! OAuth scopes, and the rules, as one typed decision — [`authorize`] takes what the
//! caller presents ([`Credential`]: an access token's claims, a page session, or
//! nothing) and what it wants to do ([`Action`]) and answers the acting [`Principal`]
//! or the rule that refused it ([`Denied`]).
//!
//! The rules, in the order they are checked:
//!
//! | action | needs |
//! |---|---|
//! | [`Action::Reach`] (the bearer check in front of `/mcp/buyer`, `/mcp/seller`) | a token ([`Denied::MissingCredentials`]) bound to the resource ([`Denied::WrongResource`]) carrying the scope asked, if any ([`Denied::InsufficientScope`]); [`Action::connect`] asks `intents` on `/mcp/buyer` and nothing more on `/mcp/seller` |
//! | [`Action::Call`] of a `/mcp` tool | nothing (the consent-link profile acts by intentCode) |
//! | [`Action::Call`] of a `/mcp/buyer` account tool | a token with scope `intents` |
//! | [`Action::Call`] of `intent_search_offers` or `intent_demand_summary` on `/mcp/buyer` | nothing (not personal) |
//! | [`Action::Call`] of a `/mcp/seller` tool | a token of role seller ([`Denied::NotSeller`]) bound to `/mcp/seller`, with the tool's scope (`offers`; `demand` for the summary; any seller scope for search), of an account that is an enabled seller now ([`Denied::SellerDisabled`]) |
//! | [`Action::Call`] of a tool the endpoint does not offer | refused, whatever the credential ([`Denied::NotOffered`]) |
//! | [`Action::OwnPages`] (`/me`, `/renew`) | a session |
//! | [`Action::SellerPages`] (`/seller/…`) | a session of role seller |
//! | [`Action::Authorize`] (the OAuth authorization page) | a session of the resource's role ([`Denied::NotBuyer`], [`Denied::NotSeller`]) |
//!
//! The tool rows come from [`need`], an exhaustive match over the tool table's
//! [`ToolId`] for each [`Endpoint`]: a tool cannot exist without a policy entry.
//!
//! Pure: no I/O. Whether an account is an enabled seller now is asked from the caller's
//! `enabled_seller` lookup, only when a rule needs it; whether a token is genuine
//! (`crate::oauth`) or a session live (the accounts service) is settled before, in the
//! [`Credential`]. The outward shapes of a [`Denied`] belong to the faces.

use crate::protocol::tools::{Endpoint, ToolId};
use std::convert::Infallible;

/// Role of people who publish intents (the buyer endpoint, scope `intents`).
pub const ROLE_BUYER: &str = "buyer";
/// Role of sellers (the seller endpoint, scopes `offers` and `demand`).
pub const ROLE_SELLER: &str = "seller";

/// Scope of the buyer endpoint.
pub const SCOPE_INTENTS: &str = "intents";
/// Seller scope: replying to open intents with offers.
pub const SCOPE_OFFERS: &str = "offers";
/// Seller scope: demand summaries.
pub const SCOPE_DEMAND: &str = "demand";
/// Every scope, in metadata order.
pub const SCOPES: [&str; 3] = [SCOPE_INTENTS, SCOPE_OFFERS, SCOPE_DEMAND];

/// The two protected resources (RFC 8707 resource indicators, RFC 9728 metadata).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Resource {
    /// `/mcp/buyer`, scope `intents`, role buyer.
    Buyer,
    /// `/mcp/seller`, scopes `offers` and `demand`, role seller.
    Seller,
}

impl Resource {
    /// The endpoint's path.
    pub fn path(self) -> &'static str {
        ["/mcp/buyer", "/mcp/seller"][self as usize]
    }

    /// The account role that may authorize this resource ([`ROLE_BUYER`] or
    /// [`ROLE_SELLER`]).
    pub fn role(self) -> &'static str {
        [ROLE_BUYER, ROLE_SELLER][self as usize]
    }

    /// The scopes this resource accepts.
    pub fn scopes(self) -> &'static [&'static str] {
        match self {
            Self::Buyer => &[SCOPE_INTENTS],
            Self::Seller => &[SCOPE_OFFERS, SCOPE_DEMAND],
        }
    }

    /// The resource identifier (RFC 8707): `<public URL>/mcp/buyer`.
    pub fn url(self, base: &str) -> String {
        format!("{base}{}", self.path())
    }

    /// Its protected resource metadata URL (RFC 9728 §3.1, path inserted after the
    /// well-known prefix).
    pub fn metadata_url(self, base: &str) -> String {
        format!("{base}/.well-known/oauth-protected-resource{}", self.path())
    }

    /// The resource an RFC 8707 `resource` value names (exact, or with one trailing `/`).
    pub fn from_url(base: &str, url: &str) -> Option<Self> {
        Self::exactly(base, url.strip_suffix('/').unwrap_or(url))
    }

    /// The resource whose identifier is exactly `url` (what an issued token is bound to).
    pub fn exactly(base: &str, url: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.url(base) == url)
    }

    /// The MCP endpoint this resource is.
    pub fn endpoint(self) -> Endpoint {
        [Endpoint::Buyer, Endpoint::Seller][self as usize]
    }

    /// Every resource, in declaration order (the tables above are indexed by it).
    const ALL: [Self; 2] = [Self::Buyer, Self::Seller];
}

/// The claims of a genuine (known, unexpired, unrevoked) access token.
#[derive(Debug, Clone, Copy)]
pub struct Token<'a> {
    /// The account the token acts for.
    pub account_id: &'a str,
    /// The role the account had when the person authorized (`"buyer"` | `"seller"`).
    pub role: &'a str,
    /// Granted scopes.
    pub scopes: &'a [String],
    /// The resource the token is bound to; `None` when it names neither endpoint of this
    /// holder.
    pub resource: Option<Resource>,
}

/// What a caller presents.
#[derive(Debug, Clone, Copy)]
pub enum Credential<'a> {
    /// Nothing: no `Authorization` header, no grant, no live session.
    None,
    /// A genuine access token.
    Token(Token<'a>),
    /// A live page session (the account is not disabled: the accounts service checked).
    Session {
        /// `acc_…`.
        account_id: &'a str,
        /// The account's role now.
        role: &'a str,
    },
}

impl<'a> Credential<'a> {
    /// The session `(account id, role)` of `accounts::signed_in`, or none.
    pub fn session(current: Option<&'a (String, String)>) -> Self {
        match current {
            Some((account_id, role)) => Self::Session { account_id, role },
            None => Self::None,
        }
    }
}

/// What the caller wants to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action<'a> {
    /// Reach a protected resource with a bearer token carrying `scope` (`None`: any
    /// scope).
    Reach(Resource, Option<&'a str>),
    /// Call this tool on this endpoint (the requirement is [`need`]).
    Call(Endpoint, ToolId),
    /// Open the signed-in person's own pages (`/me`, `/me/intents/…`, `/renew/…`).
    OwnPages,
    /// Open a seller page (`/seller/intents`, `/seller/demand`).
    SellerPages,
    /// Authorize a client for the resource on the OAuth authorization page (a buyer
    /// for `/mcp/buyer`, a seller for `/mcp/seller`).
    Authorize(Resource),
}

impl Action<'_> {
    /// What the bearer check in front of an endpoint asks: scope `intents` on
    /// `/mcp/buyer`; on `/mcp/seller` any scope (each tool asks its own).
    pub fn connect(resource: Resource) -> Self {
        match resource {
            Resource::Buyer => Self::Reach(resource, Some(SCOPE_INTENTS)),
            Resource::Seller => Self::Reach(resource, None),
        }
    }
}

/// Who acts, when allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    /// Anyone: the action is not personal (search, demand summaries).
    Anyone,
    /// This account.
    Account {
        /// `acc_…`.
        id: String,
        /// The role it acts in (`"buyer"` | `"seller"`, as presented).
        role: String,
    },
}

impl Principal {
    /// The acting account's id, when there is one.
    pub fn account_id(&self) -> Option<&str> {
        match self {
            Self::Anyone => None,
            Self::Account { id, .. } => Some(id),
        }
    }
}

/// The rule that refused an action.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Denied {
    /// No token (or no session) where one is needed.
    #[error("missing credentials: the action needs an access token or a signed-in session")]
    MissingCredentials,
    /// The token is bound to another resource (audience) than the one reached.
    #[error("wrong resource: the access token is bound to another resource")]
    WrongResource,
    /// The token lacks a scope: one of `any_of` is needed.
    #[error("insufficient scope: needs {}", .any_of.join(" or "))]
    InsufficientScope {
        /// The scopes any one of which would do (most often one).
        any_of: Vec<String>,
    },
    /// The token or session is not a seller's.
    #[error("not a seller: the action is for the holder's sellers")]
    NotSeller,
    /// The session is not a buyer's (authorizing `/mcp/buyer`).
    #[error("not a buyer: the action is for the holder's buyers")]
    NotBuyer,
    /// The account is not an enabled seller now (disabled, no longer a seller, or gone).
    #[error("seller disabled: the account is not an enabled seller")]
    SellerDisabled,
    /// The endpoint does not offer the tool ([`Need::Absent`]): whatever the credential.
    #[error("not offered: the endpoint has no such tool")]
    NotOffered,
}

/// Why [`authorize`] did not allow: a rule, or the `enabled_seller` lookup failed.
#[derive(Debug)]
pub enum Refusal<E> {
    /// A rule refused.
    Denied(Denied),
    /// The lookup failed (storage): answered as an internal error by the caller.
    Failed(E),
}

impl<E> From<Denied> for Refusal<E> {
    fn from(d: Denied) -> Self {
        Self::Denied(d)
    }
}

impl Refusal<Infallible> {
    /// The rule (a lookup that cannot fail never fails).
    pub fn denied(self) -> Denied {
        match self {
            Self::Denied(d) => d,
            Self::Failed(never) => match never {},
        }
    }
}

/// The lookup for callers that have no store at hand (the bearer check, the pages):
/// "not an enabled seller". No action they ask for needs it.
pub fn no_lookup(_account_id: &str) -> Result<bool, Infallible> {
    Ok(false)
}

/// Decides whether `who` may do `action`; `enabled_seller(account_id)` answers, from
/// the store and now, whether an account is an enabled seller (asked only by the
/// `/mcp/seller` tools).
///
/// # Errors
/// [`Refusal::Denied`] with the first rule that refuses (see the module docs);
/// [`Refusal::Failed`] when the lookup fails.
pub fn authorize<E>(
    who: &Credential<'_>,
    action: Action<'_>,
    enabled_seller: impl FnOnce(&str) -> Result<bool, E>,
) -> Result<Principal, Refusal<E>> {
    match action {
        Action::Reach(resource, scope) => {
            let t = token(who)?;
            if t.resource != Some(resource) {
                return Err(Denied::WrongResource.into());
            }
            if let Some(s) = scope {
                needs_scope(&t, &[s])?;
            }
            Ok(account(t.account_id, t.role))
        }
        Action::Call(endpoint, tool) => match need(endpoint, tool) {
            Need::Nothing => Ok(Principal::Anyone),
            Need::Absent => Err(Denied::NotOffered.into()),
            Need::Buyer => {
                let t = token(who)?;
                needs_scope(&t, &[SCOPE_INTENTS])?;
                Ok(account(t.account_id, t.role))
            }
            Need::Seller(scopes) => {
                let t = token(who)?;
                if t.role != ROLE_SELLER {
                    return Err(Denied::NotSeller.into());
                }
                if t.resource != Some(Resource::Seller) {
                    return Err(Denied::WrongResource.into());
                }
                needs_scope(&t, scopes)?;
                match enabled_seller(t.account_id) {
                    Ok(true) => Ok(account(t.account_id, t.role)),
                    Ok(false) => Err(Denied::SellerDisabled.into()),
                    Err(e) => Err(Refusal::Failed(e)),
                }
            }
        },
        Action::OwnPages => match who {
            Credential::Session { account_id, role } => Ok(account(account_id, role)),
            _ => Err(Denied::MissingCredentials.into()),
        },
        // What authorizing `/mcp/seller` asks: a seller's session.
        Action::SellerPages => authorize(who, Action::Authorize(Resource::Seller), enabled_seller),
        Action::Authorize(resource) => match who {
            Credential::Session { account_id, role } if *role == resource.role() => Ok(account(account_id, role)),
            Credential::Session { .. } if resource == Resource::Seller => Err(Denied::NotSeller.into()),
            Credential::Session { .. } => Err(Denied::NotBuyer.into()),
            _ => Err(Denied::MissingCredentials.into()),
        },
    }
}

/// What calling a tool needs: the policy's column of the tool table
/// ([`crate::protocol::tools`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Nothing: the call is not personal (the consent-link tools act by intentCode;
    /// search and demand summaries reveal no one).
    Nothing,
    /// A token with scope `intents`: the call acts for the token's account.
    Buyer,
    /// A seller's token for `/mcp/seller` with any one of these scopes, of an account that
    /// is an enabled seller now.
    Seller(&'static [&'static str]),
    /// The endpoint does not offer the tool: refused ([`Denied::NotOffered`]).
    Absent,
}

/// The requirement of `tool` on `endpoint` (PROTOCOL.md §1, §7). An exhaustive match
/// without a catch-all arm: a tool added to [`ToolId`] does not compile until it has an
/// entry here for every endpoint.
pub fn need(endpoint: Endpoint, tool: ToolId) -> Need {
    use ToolId::*;
    match endpoint {
        Endpoint::Public => match tool {
            PublishIntent | GetIntent | ListMatches | WithdrawIntent | SearchOffers | DemandSummary => Need::Nothing,
            UpdateIntent | SubmitOffer | ListOpenIntents => Need::Absent,
        },
        Endpoint::Buyer => match tool {
            PublishIntent | GetIntent | UpdateIntent | WithdrawIntent | ListMatches => Need::Buyer,
            SearchOffers | DemandSummary => Need::Nothing,
            SubmitOffer | ListOpenIntents => Need::Absent,
        },
        Endpoint::Seller => match tool {
            SubmitOffer | ListOpenIntents => Need::Seller(&[SCOPE_OFFERS]),
            DemandSummary => Need::Seller(&[SCOPE_DEMAND]),
            SearchOffers => Need::Seller(&[SCOPE_OFFERS, SCOPE_DEMAND]),
            PublishIntent | GetIntent | UpdateIntent | WithdrawIntent | ListMatches => Need::Absent,
        },
    }
}

fn token<'a>(who: &Credential<'a>) -> Result<Token<'a>, Denied> {
    match who {
        Credential::Token(t) => Ok(*t),
        _ => Err(Denied::MissingCredentials),
    }
}

fn needs_scope(t: &Token<'_>, any_of: &[&str]) -> Result<(), Denied> {
    if t.scopes.iter().any(|s| any_of.contains(&s.as_str())) {
        Ok(())
    } else {
        Err(Denied::InsufficientScope { any_of: any_of.iter().map(|s| (*s).to_owned()).collect() })
    }
}

fn account(id: &str, role: &str) -> Principal {
    Principal::Account { id: id.to_owned(), role: role.to_owned() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scopes(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| (*s).to_owned()).collect()
    }

    fn tok<'a>(role: &'a str, scopes: &'a [String], resource: Option<Resource>) -> Credential<'a> {
        Credential::Token(Token { account_id: "acc_1", role, scopes, resource })
    }

    fn decide(who: &Credential<'_>, action: Action<'_>) -> Result<Principal, Denied> {
        authorize(who, action, no_lookup).map_err(Refusal::denied)
    }

    fn seller_call(who: &Credential<'_>, tool: &str, enabled: Result<bool, &'static str>) -> Result<Principal, String> {
        let tool = ToolId::from_name(tool).unwrap();
        authorize(who, Action::Call(Endpoint::Seller, tool), |_| enabled).map_err(|r| match r {
            Refusal::Denied(d) => format!("denied: {d}"),
            Refusal::Failed(e) => format!("failed: {e}"),
        })
    }

    fn acc(role: &str) -> Principal {
        Principal::Account { id: "acc_1".into(), role: role.into() }
    }

    #[test]
    fn missing_token_is_denied() {
        for action in [
            Action::connect(Resource::Buyer),
            Action::connect(Resource::Seller),
            Action::Call(Endpoint::Buyer, ToolId::GetIntent),
            Action::Call(Endpoint::Seller, ToolId::SearchOffers),
        ] {
            assert_eq!(decide(&Credential::None, action), Err(Denied::MissingCredentials), "{action:?}");
        }
        // A session is no bearer token.
        let s = Credential::Session { account_id: "acc_1", role: ROLE_BUYER };
        assert_eq!(decide(&s, Action::connect(Resource::Buyer)), Err(Denied::MissingCredentials));
    }

    #[test]
    fn missing_session_is_denied() {
        assert_eq!(decide(&Credential::None, Action::OwnPages), Err(Denied::MissingCredentials));
        assert_eq!(decide(&Credential::None, Action::SellerPages), Err(Denied::MissingCredentials));
        // A token does not open pages.
        let s = scopes(&[SCOPE_INTENTS]);
        assert_eq!(
            decide(&tok(ROLE_BUYER, &s, Some(Resource::Buyer)), Action::OwnPages),
            Err(Denied::MissingCredentials)
        );
        let session = ("acc_1".to_owned(), ROLE_BUYER.to_owned());
        assert_eq!(decide(&Credential::session(Some(&session)), Action::OwnPages), Ok(acc(ROLE_BUYER)));
    }

    #[test]
    fn wrong_resource_is_denied() {
        let s = scopes(&[SCOPE_INTENTS, SCOPE_OFFERS]);
        let for_buyer = tok(ROLE_BUYER, &s, Some(Resource::Buyer));
        assert_eq!(decide(&for_buyer, Action::Reach(Resource::Seller, Some(SCOPE_OFFERS))), Err(Denied::WrongResource));
        assert_eq!(decide(&for_buyer, Action::connect(Resource::Seller)), Err(Denied::WrongResource));
        let elsewhere = tok(ROLE_BUYER, &s, None);
        assert_eq!(decide(&elsewhere, Action::connect(Resource::Buyer)), Err(Denied::WrongResource));
        // The resource is checked before the scope.
        assert_eq!(decide(&elsewhere, Action::Reach(Resource::Buyer, Some(SCOPE_DEMAND))), Err(Denied::WrongResource));
        // A seller's token for another resource, on a seller tool.
        let s2 = scopes(&[SCOPE_OFFERS]);
        let seller_elsewhere = tok(ROLE_SELLER, &s2, Some(Resource::Buyer));
        assert_eq!(
            seller_call(&seller_elsewhere, "intent_submit_offer", Ok(true)),
            Err("denied: wrong resource: the access token is bound to another resource".into())
        );
        assert_eq!(
            decide(&tok(ROLE_BUYER, &s, Some(Resource::Buyer)), Action::connect(Resource::Buyer)),
            Ok(acc(ROLE_BUYER))
        );
    }

    #[test]
    fn insufficient_scope_is_denied_with_the_scope() {
        let offers = scopes(&[SCOPE_OFFERS]);
        let insufficient = |s: &[&str]| Err(Denied::InsufficientScope { any_of: scopes(s) });
        // The bearer check of /mcp/buyer asks `intents`.
        let buyer_offers = tok(ROLE_BUYER, &offers, Some(Resource::Buyer));
        assert_eq!(decide(&buyer_offers, Action::connect(Resource::Buyer)), insufficient(&[SCOPE_INTENTS]));
        // Buyer account tools ask `intents`; search and demand nothing.
        assert_eq!(
            decide(&buyer_offers, Action::Call(Endpoint::Buyer, ToolId::GetIntent)),
            insufficient(&[SCOPE_INTENTS])
        );
        for tool in [ToolId::SearchOffers, ToolId::DemandSummary] {
            assert_eq!(decide(&Credential::None, Action::Call(Endpoint::Buyer, tool)), Ok(Principal::Anyone));
        }
        // Seller tools: each its scope; search any seller scope.
        let seller = tok(ROLE_SELLER, &offers, Some(Resource::Seller));
        assert_eq!(
            seller_call(&seller, "intent_demand_summary", Ok(true)),
            Err("denied: insufficient scope: needs demand".into())
        );
        assert_eq!(seller_call(&seller, "intent_submit_offer", Ok(true)), Ok(acc(ROLE_SELLER)));
        assert_eq!(seller_call(&seller, "intent_search_offers", Ok(true)), Ok(acc(ROLE_SELLER)));
        let none = scopes(&[]);
        let bare = tok(ROLE_SELLER, &none, Some(Resource::Seller));
        assert_eq!(
            seller_call(&bare, "intent_search_offers", Ok(true)),
            Err("denied: insufficient scope: needs offers or demand".into())
        );
        // The seller endpoint's bearer check asks no scope; Reach with one does.
        assert_eq!(decide(&bare, Action::connect(Resource::Seller)), Ok(acc(ROLE_SELLER)));
        assert_eq!(decide(&seller, Action::Reach(Resource::Seller, Some(SCOPE_DEMAND))), insufficient(&[SCOPE_DEMAND]));
    }

    #[test]
    fn not_a_seller_is_denied() {
        let s = scopes(&[SCOPE_OFFERS, SCOPE_DEMAND]);
        let buyer_token = tok(ROLE_BUYER, &s, Some(Resource::Seller));
        assert_eq!(
            seller_call(&buyer_token, "intent_submit_offer", Ok(true)),
            Err("denied: not a seller: the action is for the holder's sellers".into())
        );
        let buyer_session = Credential::Session { account_id: "acc_1", role: ROLE_BUYER };
        assert_eq!(decide(&buyer_session, Action::SellerPages), Err(Denied::NotSeller));
        let seller_session = Credential::Session { account_id: "acc_1", role: ROLE_SELLER };
        assert_eq!(decide(&seller_session, Action::SellerPages), Ok(acc(ROLE_SELLER)));
        // Only a seller authorizes clients for /mcp/seller.
        assert_eq!(decide(&buyer_session, Action::Authorize(Resource::Seller)), Err(Denied::NotSeller));
        assert_eq!(decide(&seller_session, Action::Authorize(Resource::Seller)), Ok(acc(ROLE_SELLER)));
    }

    #[test]
    fn not_a_buyer_is_denied() {
        let seller_session = Credential::Session { account_id: "acc_1", role: ROLE_SELLER };
        assert_eq!(decide(&seller_session, Action::Authorize(Resource::Buyer)), Err(Denied::NotBuyer));
        let buyer_session = Credential::Session { account_id: "acc_1", role: ROLE_BUYER };
        assert_eq!(decide(&buyer_session, Action::Authorize(Resource::Buyer)), Ok(acc(ROLE_BUYER)));
        assert_eq!(decide(&Credential::None, Action::Authorize(Resource::Buyer)), Err(Denied::MissingCredentials));
    }

    #[test]
    fn disabled_seller_is_denied_and_a_failed_lookup_is_no_denial() {
        let s = scopes(&[SCOPE_OFFERS, SCOPE_DEMAND]);
        let seller = tok(ROLE_SELLER, &s, Some(Resource::Seller));
        assert_eq!(
            seller_call(&seller, "intent_list_open_intents", Ok(false)),
            Err("denied: seller disabled: the account is not an enabled seller".into())
        );
        assert_eq!(
            seller_call(&seller, "intent_list_open_intents", Err("store down")),
            Err("failed: store down".into())
        );
        // The lookup is asked only after every other rule passed.
        let none = scopes(&[]);
        let bare = tok(ROLE_SELLER, &none, Some(Resource::Seller));
        let asked = std::cell::Cell::new(false);
        let r = authorize(&bare, Action::Call(Endpoint::Seller, ToolId::SubmitOffer), |_| {
            asked.set(true);
            Ok::<bool, Infallible>(true)
        });
        assert!(matches!(r, Err(Refusal::Denied(Denied::InsufficientScope { .. }))));
        assert!(!asked.get());
    }

    #[test]
    fn a_tool_the_endpoint_does_not_offer_is_refused_whatever_the_credential() {
        // Before the typed table, a buyer call of any name outside the buyer's account
        // list (a seller tool, a tool added later) was allowed as `Principal::Anyone`.
        let s = scopes(&[SCOPE_INTENTS, SCOPE_OFFERS, SCOPE_DEMAND]);
        let buyer = tok(ROLE_BUYER, &s, Some(Resource::Buyer));
        let seller = tok(ROLE_SELLER, &s, Some(Resource::Seller));
        for who in [Credential::None, buyer, seller] {
            for e in Endpoint::ALL {
                for t in ToolId::ALL.into_iter().filter(|t| !e.tools().contains(t)) {
                    let r = authorize(&who, Action::Call(e, t), |_| Ok::<_, Infallible>(true));
                    assert!(matches!(r, Err(Refusal::Denied(Denied::NotOffered))), "{t:?} on {e:?}: {:?}", r.ok());
                }
            }
        }
        assert_eq!(
            decide(&Credential::None, Action::Call(Endpoint::Buyer, ToolId::SubmitOffer)),
            Err(Denied::NotOffered)
        );
    }

    #[test]
    fn every_offered_tool_has_a_policy_entry_and_no_other_does() {
        for e in Endpoint::ALL {
            for t in ToolId::ALL {
                assert_eq!(need(e, t) != Need::Absent, e.tools().contains(&t), "{t:?} on {e:?}");
            }
        }
        // The public endpoint asks nothing of its tools; the buyer's account tools a token.
        for t in Endpoint::Public.tools() {
            assert_eq!(decide(&Credential::None, Action::Call(Endpoint::Public, *t)), Ok(Principal::Anyone));
        }
        assert_eq!(
            decide(&Credential::None, Action::Call(Endpoint::Buyer, ToolId::UpdateIntent)),
            Err(Denied::MissingCredentials)
        );
    }

    #[test]
    fn resources_parse_and_print() {
        let base = "https://holder.example";
        assert_eq!((Resource::Buyer.path(), Resource::Buyer.role()), ("/mcp/buyer", ROLE_BUYER));
        assert_eq!((Resource::Seller.path(), Resource::Seller.endpoint()), ("/mcp/seller", Endpoint::Seller));
        assert_eq!(Resource::Seller.role(), ROLE_SELLER);
        assert_eq!(Resource::from_url(base, "https://holder.example/mcp/seller/"), Some(Resource::Seller));
        assert_eq!(Resource::exactly(base, "https://holder.example/mcp/seller/"), None);
        assert_eq!(Resource::exactly(base, "https://holder.example/mcp/buyer"), Some(Resource::Buyer));
        assert_eq!(
            Resource::Seller.metadata_url(base),
            "https://holder.example/.well-known/oauth-protected-resource/mcp/seller"
        );
    }
}
