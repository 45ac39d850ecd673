//! Sellers: the holder's registered businesses, and what they may do on `/mcp/seller`
//! and the seller pages (PROTOCOL.md §1, §2 "Seller pseudonyms", §3
//! `intent_submit_offer` and `intent_list_open_intents`, §6 for replies, §7 "Sellers are
//! created by the holder's admin").
//!
//! A seller is three records, written by [`add`]:
//!
//! | where | key | value |
//! |---|---|---|
//! | `records`, [`Ns::Account`] | `acc_…` | the seller's account ([`accounts::create_seller`]): e-mail (sealed), role `seller`, `disabled` |
//! | `sellers` table | `sel_…` | the catalogue's [`SellerRecord`] `{id, name, url, disabled}`: the public identity in `Offer.seller` / `source.sellerId`; a disabled seller's offers never match (PROTOCOL.md §6) |
//! | `records`, [`Ns::Seller`] | `acc_…` (the account id) | [`SellerProfile`]: the link account → `sel_…`, categories and regions served |
//!
//! When a catalogue feed already created a [`SellerRecord`] with the same name (folded
//! like the feed importer folds it), `add` adopts it — the registered business and its
//! feed are one seller — unless another account holds it already.
//!
//! Empty `categories` means every category the holder serves; empty `regions` means
//! everywhere. A region entry is an ISO 3166-2 code (`SK-BL`) or an ISO 3166-1 country
//! code (`SK`: the whole country).
//!
//! Replies ([`submit_reply`]) are stored in the `offers` table as an
//! [`OfferRecord`](crate::records::OfferRecord) with `source.kind = "reply"`,
//! `inReplyTo` and `active: false`: "active" means "in the catalogue", so a reply never
//! shows in catalogue search or the offer index and is never matched against other
//! intents, while deliveries, `list_matches` and digests load it by id like any offer.
//! The ids of a seller's replies to an intent are kept under [`Ns::Seller`] key
//! `replies:<account id>:<intent id>` (at most [`MAX_REPLIES`]).
//!
//! Disabling: [`set_disabled`]. Pseudonyms ([`pseudonym`]) and handles ([`handle`],
//! PROTOCOL.md §2): a seller never sees an intent id nor an address; each intent reaches
//! each seller under a handle and its buyer under a pseudonym, both stable for the pair
//! and unrelated between sellers. No table keeps them.
//!
//! Errors: a fallible item here fails with storage errors (and key errors where it opens
//! a sealed value) unless its `# Errors` says more.

mod open;
mod reply;

pub use open::{open_intents, parse_open_query, seller_day, seller_minute, OpenIntent, OpenPage, OpenQuery};
pub use reply::{parse_reply, submit_reply, ReplyInput, ReplyOutcome, MAX_REPLIES, REFUSED_LIMIT, REFUSED_NOT_OPEN};
pub use reply::{IN_REPLY_TO_MAX, NO_INTENT};

use crate::accounts::{self, AccountError, MailOutcome, ROLE_SELLER};
use crate::base::{Base, ServiceError};
use crate::catalogue::NAME_MAX;
use crate::crypto::{self, CryptoError};
use crate::gazetteer::{self, AreaObject};
use crate::records::{IntentRecord, SellerRecord, Stamp};
use crate::store::{Ns, Reads, StoreError};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Key prefix of reply counters in [`Ns::Seller`] (profiles are keyed by `acc_…`).
const REPLIES_PREFIX: &str = "replies:";

/// A failure of a seller operation.
#[derive(Debug, thiserror::Error)]
pub enum SellerError {
    /// Bad input; the message names the field and the rule.
    #[error("{0}")]
    Input(String),
    /// The e-mail address, or the seller name, is taken.
    #[error("{0}")]
    Exists(String),
    /// No seller with this id.
    #[error(
        "no seller with this id (give the account id acc_… or the seller id sel_… that `isto admin seller list` shows)"
    )]
    NotFound,
    /// An account operation failed.
    #[error(transparent)]
    Account(#[from] AccountError),
    /// A holder operation failed.
    #[error(transparent)]
    Holder(#[from] ServiceError),
    /// Storage failure.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Key failure.
    #[error(transparent)]
    Crypto(#[from] CryptoError),
}

impl SellerError {
    /// Whether this is an internal failure (to be logged, and answered generically).
    pub fn is_internal(&self) -> bool {
        match self {
            Self::Account(e) => e.is_internal(),
            Self::Holder(e) => e.is_internal(),
            Self::Store(_) | Self::Crypto(_) => true,
            Self::Input(_) | Self::Exists(_) | Self::NotFound => false,
        }
    }
}

impl crate::base::PublicError for SellerError {
    fn is_internal(&self) -> bool {
        SellerError::is_internal(self)
    }
    /// The message itself for refusals and bad input; [`crate::base::INTERNAL_MESSAGE`]
    /// for internal failures.
    fn public_message(&self) -> String {
        if self.is_internal() {
            crate::base::INTERNAL_MESSAGE.to_owned()
        } else {
            self.to_string()
        }
    }
}

impl From<crate::protocol::input::InputError> for SellerError {
    fn from(e: crate::protocol::input::InputError) -> Self {
        Self::Input(e.0)
    }
}

type Result<T, E = SellerError> = std::result::Result<T, E>;

/// A registered seller's profile (see the module docs), in [`Ns::Seller`] by account id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SellerProfile {
    /// The seller's account (`acc_…`): who signs in and authorizes agents.
    pub account_id: String,
    /// The seller's public id (`sel_…`, a catalogue [`SellerRecord`]).
    pub seller_id: String,
    /// Display name.
    pub name: String,
    /// Web site.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Category keys served; empty = all.
    pub categories: Vec<String>,
    /// ISO 3166-2 region or ISO 3166-1 country codes served; empty = everywhere.
    pub regions: Vec<String>,
    /// When it was registered (`createdAt`, unix microseconds).
    pub created_at: Stamp,
}

impl SellerProfile {
    /// Whether the seller serves `category`.
    pub fn serves_category(&self, category: &str) -> bool {
        self.categories.is_empty() || self.categories.iter().any(|c| c == category)
    }

    /// Whether the seller serves some part of `area` (an intent's area): a country
    /// entry covers its whole country; a region entry covers intents naming that region
    /// or the whole of its country.
    pub fn serves_area(&self, area: &AreaObject) -> bool {
        self.regions.is_empty()
            || self.regions.iter().any(|r| {
                if r.len() == 2 {
                    r.eq_ignore_ascii_case(&area.country)
                } else {
                    gazetteer::region_country(r).is_some_and(|c| c.eq_ignore_ascii_case(&area.country))
                        && (area.regions.is_empty() || area.regions.iter().any(|x| x.eq_ignore_ascii_case(r)))
                }
            })
    }

    /// Whether the seller may see and answer an intent of this category and area.
    pub fn serves(&self, category: &str, area: &AreaObject) -> bool {
        self.serves_category(category) && self.serves_area(area)
    }
}

/// A seller as the admin commands show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SellerInfo {
    /// `acc_…`.
    pub account_id: String,
    /// `sel_…`.
    pub seller_id: String,
    /// Display name.
    pub name: String,
    /// The account's e-mail address (the seller's business address, for the operator).
    pub email: String,
    /// Web site.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Categories served; empty = all.
    pub categories: Vec<String>,
    /// Regions served; empty = everywhere.
    pub regions: Vec<String>,
    /// Disabled (account or seller record).
    pub disabled: bool,
    /// When it was registered, RFC 3339 UTC with whole seconds.
    pub created_at: String,
}

/// What `isto admin seller add` asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NewSeller {
    /// Display name (1..200 characters).
    pub name: String,
    /// The seller's e-mail address (sign-in).
    pub email: String,
    /// Web site (http or https).
    pub url: Option<String>,
    /// Category keys (`vehicles`, `property`); empty = all.
    pub categories: Vec<String>,
    /// Regions: ISO 3166-2 or country codes or names the gazetteer resolves; empty =
    /// everywhere.
    pub regions: Vec<String>,
    /// Queue a one-time sign-in link e-mail to the seller.
    pub invite: bool,
}

/// What [`add`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Added {
    /// The seller.
    pub seller: SellerInfo,
    /// Whether an existing seller account (without profile) was taken over.
    pub adopted_account: bool,
    /// Whether a catalogue seller of the same name was taken over.
    pub adopted_catalogue_seller: bool,
    /// With `invite`: `queued`, `throttled` or `nothing`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invite: Option<String>,
}

/// What [`set_disabled`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Toggled {
    /// The seller after the change.
    pub seller: SellerInfo,
    /// OAuth token families revoked (disabling only).
    pub tokens_revoked: u64,
}

fn folded_name(name: &str) -> String {
    crate::text::fold(name.trim())
}

/// Validates category keys: known, deduplicated, sorted.
///
/// # Errors
/// [`SellerError::Input`] naming the unknown key.
pub fn parse_categories(list: &[String]) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for c in list {
        let key = c.trim().to_ascii_lowercase();
        let Some(cat) = crate::protocol::category(&key) else {
            let known: Vec<&str> = crate::protocol::CATEGORIES.iter().map(|c| c.key).collect();
            return Err(SellerError::Input(format!("category {c:?} is not one of {}", known.join(", "))));
        };
        out.push(cat.key.to_owned());
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// Resolves region entries (codes or names) to ISO 3166-2 region codes, or a country
/// code for a whole country; deduplicated and sorted. A country entry absorbs that
/// country's region entries.
///
/// # Errors
/// [`SellerError::Input`] naming the entry (with close names when it is unknown).
pub fn parse_regions(list: &[String]) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for r in list {
        let a = gazetteer::resolve(r).map_err(|e| SellerError::Input(format!("region {:?}: {e}", r.trim())))?;
        if a.regions.is_empty() {
            out.push(a.country);
        } else {
            out.extend(a.regions);
        }
    }
    let countries: Vec<String> = out.iter().filter(|r| r.len() == 2).cloned().collect();
    out.retain(|r| r.len() == 2 || !gazetteer::region_country(r).is_some_and(|c| countries.iter().any(|k| k == c)));
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

fn is_profile_key(key: &str) -> bool {
    !key.starts_with(REPLIES_PREFIX)
}

/// Every profile, in account id order.
fn profiles_in(rx: &impl Reads) -> Result<Vec<SellerProfile>> {
    let mut out = Vec::new();
    for (k, v) in rx.records::<Value>(Ns::Seller)? {
        if is_profile_key(&k) {
            let p: SellerProfile =
                serde_json::from_value(v).map_err(|e| StoreError::Corrupt(format!("seller:{k}"), e.to_string()))?;
            out.push(p);
        }
    }
    Ok(out)
}

/// The profile of a seller account, if it has one.
pub fn profile(base: &Base, account_id: &str) -> Result<Option<SellerProfile>> {
    if !is_profile_key(account_id) {
        return Ok(None);
    }
    Ok(base.store().read(|rx| rx.record::<SellerProfile>(Ns::Seller, account_id))?)
}

fn info(base: &Base, p: &SellerProfile) -> Result<SellerInfo> {
    let account = accounts::account(base, &p.account_id)?;
    let record: Option<SellerRecord> = base.store().read(|rx| rx.seller(&p.seller_id))?;
    let email = match &account {
        Some(a) => a.email(base.keys())?.expose().to_owned(),
        None => String::new(),
    };
    Ok(SellerInfo {
        account_id: p.account_id.clone(),
        seller_id: p.seller_id.clone(),
        name: record.as_ref().map(|r| r.name.clone()).unwrap_or_else(|| p.name.clone()),
        email,
        url: record.as_ref().map(|r| r.url.clone()).unwrap_or_else(|| p.url.clone()),
        categories: p.categories.clone(),
        regions: p.regions.clone(),
        disabled: account.is_none_or(|a| a.disabled) || record.is_some_and(|r| r.disabled),
        created_at: p.created_at.rfc3339(),
    })
}

/// Registers a seller (`isto admin seller add`): its account (an existing seller
/// account without a profile is taken over), its [`SellerRecord`] (a catalogue seller
/// of the same name is taken over) and its [`SellerProfile`]; with `invite`, queues a
/// one-time sign-in link e-mail.
///
/// # Errors
/// [`SellerError::Input`] for a bad name, e-mail, URL, category or region;
/// [`SellerError::Exists`] when the address has a buyer account or a registered seller,
/// or the name belongs to another registered seller; storage errors.
pub fn add(base: &Base, new: &NewSeller) -> Result<Added> {
    let name = new.name.split_whitespace().collect::<Vec<_>>().join(" ");
    if name.is_empty() || name.chars().count() > NAME_MAX || name.chars().any(char::is_control) {
        return Err(SellerError::Input(format!("name must be 1 to {NAME_MAX} characters without control characters")));
    }
    let email = crate::protocol::input::validate_email(&new.email)?;
    let url = new.url.as_deref().map(|u| crate::catalogue::parse_url(&Value::from(u), "url")).transpose()?;
    let categories = parse_categories(&new.categories)?;
    let regions = parse_regions(&new.regions)?;
    let folded = folded_name(&name);

    // Refuse what the transaction below would refuse before an account is created.
    let taken_name = base.store().read(|rx| name_taken(rx, &folded))?;
    if let Some(owner) = taken_name {
        return Err(SellerError::Exists(format!("a registered seller is named {name:?} already ({owner})")));
    }
    let (account_id, adopted_account) = match accounts::account_by_email(base, &email)? {
        Some(a) if a.role == ROLE_SELLER => {
            if profile(base, &a.id)?.is_some() {
                return Err(SellerError::Exists(format!(
                    "{email} is a registered seller already ({}); see `isto admin seller list`",
                    a.id
                )));
            }
            (a.id, true)
        }
        Some(_) => {
            return Err(SellerError::Exists(format!(
                "{email} has a buyer account; a seller needs its own e-mail address"
            )))
        }
        None => match accounts::create_seller(base, &email, &name) {
            Ok(id) => (id, false),
            Err(AccountError::Exists) => {
                return Err(SellerError::Exists(format!("an account with the address {email} exists already")))
            }
            Err(AccountError::Input(m)) => return Err(SellerError::Input(m)),
            Err(e) => return Err(e.into()),
        },
    };
    let now = base.clock().now();
    let (profile, adopted_catalogue_seller) = base.store().write(|tx| -> Result<(SellerProfile, bool)> {
        if let Some(owner) = name_taken(tx, &folded)? {
            return Err(SellerError::Exists(format!("a registered seller is named {name:?} already ({owner})")));
        }
        let existing = match tx.seller_by_name(&folded)? {
            Some(id) => tx.seller::<SellerRecord>(&id)?,
            None => None,
        };
        let adopted = existing.is_some();
        let record = match existing {
            Some(mut r) => {
                if url.is_some() {
                    r.url = url.clone();
                }
                r
            }
            None => SellerRecord { id: crypto::new_id("sel_"), name: name.clone(), url: url.clone(), disabled: false },
        };
        tx.put_seller(&record.id, &folded, &record)?;
        let p = SellerProfile {
            account_id: account_id.clone(),
            seller_id: record.id.clone(),
            name: record.name.clone(),
            url: record.url.clone(),
            categories: categories.clone(),
            regions: regions.clone(),
            created_at: Stamp::of(now),
        };
        tx.put_record(Ns::Seller, &account_id, &p)?;
        Ok((p, adopted))
    })?;
    tracing::info!(account = %profile.account_id, seller = %profile.seller_id, "seller registered");
    let invite = if new.invite {
        let lang = base.settings().default_language.clone();
        Some(match accounts::request_signin_link(base, &email, "/seller/intents", &lang)? {
            MailOutcome::Queued => "queued".to_owned(),
            MailOutcome::Throttled => "throttled".to_owned(),
            MailOutcome::Nothing => "nothing".to_owned(),
        })
    } else {
        None
    };
    Ok(Added { seller: info(base, &profile)?, adopted_account, adopted_catalogue_seller, invite })
}

/// The account holding the catalogue seller named `folded`, if a registered seller does.
fn name_taken(rx: &impl Reads, folded: &str) -> Result<Option<String>> {
    let Some(id) = rx.seller_by_name(folded)? else { return Ok(None) };
    Ok(profiles_in(rx)?.into_iter().find(|p| p.seller_id == id).map(|p| p.account_id))
}

/// Every registered seller, in account id order (`isto admin seller list`).
pub fn list(base: &Base) -> Result<Vec<SellerInfo>> {
    let profiles = base.store().read(profiles_in)?;
    profiles.iter().map(|p| info(base, p)).collect()
}

/// The profile of `id`: an account id (`acc_…`) or a seller id (`sel_…`).
///
/// # Errors
/// [`SellerError::NotFound`]; storage errors.
pub fn find(base: &Base, id: &str) -> Result<SellerProfile> {
    let id = id.trim();
    if let Some(p) = profile(base, id)? {
        return Ok(p);
    }
    base.store().read(profiles_in)?.into_iter().find(|p| p.seller_id == id).ok_or(SellerError::NotFound)
}

/// Disables or re-enables a seller (`isto admin seller disable|enable ID`, ID `acc_…`
/// or `sel_…`). Disabling takes effect at once: the account is flagged and its sessions
/// end ([`accounts::set_disabled`]), every OAuth token of the account is revoked, and
/// the [`SellerRecord`] is flagged (its offers and replies no longer match). Enabling
/// clears both flags; revoked tokens stay revoked.
///
/// # Errors
/// [`SellerError::NotFound`]; storage errors.
pub fn set_disabled(base: &Base, id: &str, disabled: bool) -> Result<Toggled> {
    let p = find(base, id)?;
    match accounts::set_disabled(base, &p.account_id, disabled) {
        Ok(()) | Err(AccountError::NotFound) => {}
        Err(e) => return Err(e.into()),
    }
    let tokens_revoked = if disabled { crate::oauth::revoke_account(base, &p.account_id)? } else { 0 };
    base.store().write(|tx| -> Result<()> {
        if let Some(mut r) = tx.seller::<SellerRecord>(&p.seller_id)? {
            r.disabled = disabled;
            let folded = folded_name(&r.name);
            tx.put_seller(&r.id.clone(), &folded, &r)?;
        }
        Ok(())
    })?;
    tracing::info!(account = %p.account_id, seller = %p.seller_id, disabled, tokens_revoked, "seller disabled flag set");
    Ok(Toggled { seller: info(base, &p)?, tokens_revoked })
}

/// Whether `account_id` is an enabled seller account (read on every seller tool call
/// and page).
pub fn enabled_seller(base: &Base, account_id: &str) -> Result<bool> {
    Ok(accounts::account(base, account_id)?.is_some_and(|a| a.role == ROLE_SELLER && !a.disabled))
}

/// The key that identifies the buyer behind an intent for pseudonyms: the hash of its
/// verified address when it has one, else its owner account, else the intent itself.
fn buyer_key(base: &Base, rec: &IntentRecord) -> Result<String> {
    if let Some(contact) = &rec.contact {
        let email = base.keys().open_str(contact)?;
        // The unkeyed address hash is only the pseudonym MAC's input here (never
        // stored): kept as it was, so existing pseudonyms stay stable.
        return Ok(crate::crypto::token_hash("address", &email.expose().trim().to_ascii_lowercase()));
    }
    if let Some(owner) = &rec.owner {
        return Ok(format!("owner:{owner}"));
    }
    Ok(format!("intent:{}", rec.id))
}

/// The pseudonym under which seller `seller_id` sees the buyer of `rec` (PROTOCOL.md §2
/// "Seller pseudonyms"): `"buyer-"` + the first 12 characters of HMAC(key,
/// `"pseudonym"`, the buyer key, seller id) — one person's intents share one pseudonym
/// per seller, and different sellers see unrelated pseudonyms.
///
/// # Errors
/// Key errors (the sealed contact cannot be opened).
pub fn pseudonym(base: &Base, rec: &IntentRecord, seller_id: &str) -> Result<String> {
    let key = buyer_key(base, rec)?;
    let mac = base.keys().mac(&[b"pseudonym", key.as_bytes(), seller_id.as_bytes()]);
    Ok(format!("buyer-{}", mac.get(..12).unwrap_or(&mac)))
}

/// The handle under which seller `seller_id` (`sel_…`) sees intent `intent_id`
/// (PROTOCOL.md §2): `hdl_…`, a deterministic authenticated encryption of the intent id
/// for that seller ([`crate::crypto::handle`]): the `id` of `intent_list_open_intents`
/// and the `inReplyTo` of `intent_submit_offer`.
pub fn handle(base: &Base, seller_id: &str, intent_id: &str) -> String {
    base.keys().handles().seal(seller_id, intent_id)
}

/// The intent id behind `handle` when it is seller `seller_id`'s handle; `None` for any
/// other string — another seller's handle, an intent id, a tampered handle — which the
/// caller refuses like an unknown intent.
pub fn intent_of_handle(base: &Base, seller_id: &str, handle: &str) -> Option<String> {
    base.keys().handles().open(seller_id, handle)
}

/// Whether `rec` is open to `profile`'s seller at `now`: active, pseudonymous, in the
/// seller's categories and regions (`open::open_intents` applies the same rules to the
/// active set's parsed times).
pub fn open_to(rec: &IntentRecord, profile: &SellerProfile, now: time::OffsetDateTime) -> bool {
    rec.effective_status(now) == crate::protocol::Status::Active
        && rec.visibility == crate::protocol::Visibility::Pseudonymous
        && profile.serves(&rec.category, &rec.area)
}

fn replies_key(account_id: &str, intent_id: &str) -> String {
    format!("{REPLIES_PREFIX}{account_id}:{intent_id}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(categories: &[&str], regions: &[&str]) -> SellerProfile {
        SellerProfile {
            account_id: "acc_x".into(),
            seller_id: "sel_x".into(),
            name: "X".into(),
            url: None,
            categories: categories.iter().map(|s| s.to_string()).collect(),
            regions: regions.iter().map(|s| s.to_string()).collect(),
            created_at: Stamp::parse("2026-12-01T10:00:00Z").unwrap(),
        }
    }

    #[test]
    fn regions_and_categories_resolve() {
        let r = parse_regions(&["Bratislava".into(), "SK-TA".into(), "CZ".into(), "Brno".into()]).unwrap();
        assert_eq!(r, vec!["CZ", "SK-BL", "SK-TA"]);
        assert!(parse_regions(&["Atlantis".into()]).unwrap_err().to_string().contains("Atlantis"));
        assert_eq!(parse_categories(&["Vehicles".into(), "vehicles".into()]).unwrap(), vec!["vehicles"]);
        let e = parse_categories(&["boats".into()]).unwrap_err();
        assert!(matches!(&e, SellerError::Input(m) if m.starts_with("category \"boats\" is not one of")), "{e}");
    }

    #[test]
    fn serves_overlapping_areas() {
        let bl = profile(&["vehicles"], &["SK-BL"]);
        let area = |s: &str| gazetteer::resolve(s).unwrap();
        assert!(bl.serves("vehicles", &area("SK")), "a whole-country intent includes SK-BL");
        assert!(bl.serves("vehicles", &area("Bratislava")));
        assert!(!bl.serves("vehicles", &area("Košice")));
        assert!(!bl.serves("vehicles", &area("CZ")));
        assert!(!bl.serves("property", &area("Bratislava")));
        let cz = profile(&[], &["CZ"]);
        assert!(cz.serves("property", &area("Brno")) && !cz.serves("property", &area("SK")));
        assert!(profile(&[], &[]).serves("property", &area("SK-KI")));
    }
}
