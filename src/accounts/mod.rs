//! People's accounts, sign-in and web sessions (PROTOCOL.md §7: "People sign in on the
//! holder's page with e-mail + password (argon2id) or a one-time e-mail link. Sellers are
//! created by the holder's admin.").
//!
//! Storage (all in the store's `records` table, see [`crate::store::Ns`]):
//!
//! | namespace | key | value |
//! |---|---|---|
//! | `Account` | `acc_…` | [`Account`]: the e-mail sealed, role, argon2id PHC string |
//! | `AccountEmail` | `email_key`: keyed hash of the lower-cased e-mail (`address#…`) | account id |
//! | `Session` | `token_hash("session", cookie token)` | [`SessionRecord`] |
//! | `SignInLink` | `token_hash("signin" \| "signup", URL token)` | a one-time link (sign-in 15 min, sign-up confirmation 72 h) |
//! | `Throttle` | `login:<address hash>`, `mail:<address hash>` | recent attempt times |
//!
//! Every stored time is a [`Stamp`] (unix microseconds). One that does not read is an
//! error naming the record ([`StoreError::Corrupt`]), never "expired": a session or link
//! with one is not honoured, and the purge leaves it and warns (see [`purge_tx`]).
//!
//! Only hashes of cookie and link tokens are stored; the e-mail address is sealed at rest
//! like every contact (PROTOCOL.md §4.6). Failed password attempts and account e-mails
//! are counted per address in `Throttle` records (they survive a restart and hold whether
//! or not an account exists, which keeps answers identical); the per-client limits are
//! the account pages' (`crate::web`).
//!
//! A disabled account's sessions stop working at once: [`signed_in`] reads the account on
//! every request, and [`set_disabled`] deletes its sessions as well.
//!
//! Errors: a fallible item here fails with storage errors (and key errors where it opens
//! a sealed value) unless its `# Errors` says more.

mod links;
mod mail;
mod sessions;
#[cfg(test)]
mod times_tests;

pub use crate::crypto::password;
pub use links::*;
pub use sessions::*;

use crate::base::Base;
use crate::crypto::{self, CryptoError, KeyRing, Sealed, Secret};
use crate::records::Stamp;
use crate::store::{Ns, Reads, StoreError, Tx};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// Lifetime of a session, seconds (14 days).
pub const SESSION_TTL_SECS: i64 = 14 * 24 * 3600;
/// Lifetime of a one-time sign-in link, seconds (15 minutes).
pub const SIGNIN_LINK_TTL_SECS: i64 = 15 * 60;
/// Lifetime of a sign-up confirmation link, seconds (72 hours, as for intents).
pub const SIGNUP_LINK_TTL_SECS: i64 = 72 * 3600;
/// Failed password attempts allowed per address in [`LOGIN_WINDOW_SECS`].
pub const LOGIN_FAILURES_PER_WINDOW: usize = 5;
/// The window of [`LOGIN_FAILURES_PER_WINDOW`], seconds (15 minutes).
pub const LOGIN_WINDOW_SECS: i64 = 15 * 60;
/// Account e-mails (sign-in links, sign-up confirmations) one address may receive per hour.
pub const MAILS_PER_ADDRESS_PER_HOUR: usize = 5;
/// Bytes of randomness of session and link tokens (160 bits).
const TOKEN_BYTES: usize = 20;

pub use crate::policy::{ROLE_BUYER, ROLE_SELLER};

/// A failure of an account operation.
#[derive(Debug, thiserror::Error)]
pub enum AccountError {
    /// Bad input; the message names the field and rule.
    #[error("{0}")]
    Input(String),
    /// The e-mail address already has an account.
    #[error("an account with this e-mail address exists already")]
    Exists,
    /// No account with this id.
    #[error("no such account")]
    NotFound,
    /// Storage failure (logged, never shown in detail).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Key or password-hashing failure (logged, never shown in detail).
    #[error(transparent)]
    Crypto(#[from] CryptoError),
}

impl AccountError {
    /// Whether this is an internal failure (to be logged, and answered generically).
    pub fn is_internal(&self) -> bool {
        matches!(self, Self::Store(_) | Self::Crypto(_))
    }
}

type Result<T, E = AccountError> = std::result::Result<T, E>;

/// A person's account, keyed by a verified e-mail address.
#[derive(Clone, Serialize, Deserialize)]
pub struct Account {
    /// `acc_…`.
    pub id: String,
    /// The e-mail address, sealed (contact data is sealed at rest).
    pub email: Sealed,
    /// [`email_key`] of the address: the `AccountEmail` key.
    pub email_hash: String,
    /// [`ROLE_BUYER`] or [`ROLE_SELLER`].
    pub role: String,
    /// Display name (sellers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// argon2id PHC string, when the person set a password.
    pub password_hash: Option<String>,
    /// Version of the consent text accepted at sign-up.
    pub consent_version: Option<String>,
    /// Language of that consent text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consent_language: Option<String>,
    /// When consent was given (the confirmation POST).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consent_at: Option<Stamp>,
    /// When the account was made.
    pub created_at: Stamp,
    /// A disabled account cannot sign in and its sessions stop working.
    pub disabled: bool,
}

impl std::fmt::Debug for Account {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Account")
            .field("id", &self.id)
            .field("role", &self.role)
            .field("password", &self.password_hash.as_ref().map(|_| "***"))
            .field("consent_version", &self.consent_version)
            .field("created_at", &self.created_at)
            .field("disabled", &self.disabled)
            .finish_non_exhaustive()
    }
}

impl Account {
    /// A new enabled account of `role` made at `now`, without name, password or consent.
    fn new(email: Sealed, email_hash: String, role: &str, now: OffsetDateTime) -> Self {
        Self {
            id: crypto::new_id("acc_"),
            email,
            email_hash,
            role: role.to_owned(),
            name: None,
            password_hash: None,
            consent_version: None,
            consent_language: None,
            consent_at: None,
            created_at: Stamp::of(now),
            disabled: false,
        }
    }

    /// Stores the account and its `AccountEmail` row in `tx`.
    fn insert(&self, tx: &mut Tx<'_>) -> Result<(), StoreError> {
        tx.put_record(Ns::Account, &self.id, self)?;
        tx.put_record(Ns::AccountEmail, &self.email_hash, &self.id)
    }

    /// The account's e-mail address, opened.
    ///
    /// # Errors
    /// Key errors.
    pub fn email(&self, keys: &KeyRing) -> Result<Secret, CryptoError> {
        keys.open_str(&self.email)
    }
}

/// A web session as stored (by the hash of its cookie token).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SessionRecord {
    /// The account signed in.
    pub account_id: String,
    /// When it began.
    pub created_at: Stamp,
    /// When it ends (created + 14 days).
    pub expires_at: Stamp,
    /// Reserved (a GET never writes).
    #[serde(default)]
    pub last_seen: Option<Stamp>,
    /// How the session began: `password`, `link` (one-time e-mail link) or `signup`.
    #[serde(default)]
    pub method: String,
}

/// Kind of a one-time link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LinkKind {
    /// Signs an existing account in.
    Signin,
    /// Confirms a sign-up (creates the account).
    Signup,
}

impl LinkKind {
    fn hash_kind(self) -> &'static str {
        match self {
            Self::Signin => "signin",
            Self::Signup => "signup",
        }
    }
}

/// A one-time link as stored (by the hash of its URL token).
#[derive(Clone, Serialize, Deserialize)]
struct LinkRecord {
    kind: LinkKind,
    /// The account to sign in (sign-in links).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    account_id: Option<String>,
    /// The address to create the account for, sealed (sign-up links).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    email: Option<Sealed>,
    email_hash: String,
    /// The password chosen at sign-up, already hashed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    password_hash: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    consent_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    consent_language: Option<String>,
    /// Where to go after signing in (a checked relative path).
    next: String,
    created_at: Stamp,
    expires_at: Stamp,
}

/// Recent attempt times of one throttle key.
#[derive(Debug, Default, Serialize, Deserialize)]
struct ThrottleRecord {
    /// Oldest first.
    times: Vec<Stamp>,
}

/// The key of `AccountEmail` (and of the per-address throttles) for `email`: the keyed
/// index hash of the lower-cased address ([`crypto::HandleKey::index_hash`], `address#…`),
/// so a store or backup alone cannot be checked against a list of addresses.
pub fn email_key(keys: &KeyRing, email: &str) -> String {
    keys.handles().index_hash("address", &email.trim().to_ascii_lowercase())
}

/// The `Session` store key of a cookie token (`token_hash("session", token)`).
pub fn session_key(token: &str) -> String {
    crypto::token_hash("session", token)
}

fn link_key(kind: LinkKind, token: &str) -> String {
    crypto::token_hash(kind.hash_kind(), token)
}

/// Validates an address (see [`crate::protocol::input::validate_email`]).
fn checked_email(email: &str) -> Result<String> {
    crate::protocol::input::validate_email(email).map_err(|e| AccountError::Input(e.0))
}

/// Counts one attempt under `key` unless `limit` attempts were counted in the last
/// `window` seconds; returns whether it was counted (allowed).
fn throttle_take(tx: &mut Tx<'_>, key: &str, now: OffsetDateTime, window: i64, limit: usize) -> Result<bool> {
    let mut rec = tx.record::<ThrottleRecord>(Ns::Throttle, key)?.unwrap_or_default();
    rec.times.retain(|t| now - t.at() < time::Duration::seconds(window));
    if rec.times.len() >= limit {
        return Ok(false);
    }
    rec.times.push(Stamp::of(now));
    tx.put_record(Ns::Throttle, key, &rec)?;
    Ok(true)
}

/// The `Throttle` key counting an address's failed password attempts.
fn login_throttle_key(email_hash: &str) -> String {
    format!("login:{email_hash}")
}

fn mail_throttle_key(email_hash: &str) -> String {
    format!("mail:{email_hash}")
}

/// Seals `content` into the outbox in `tx` (the caller wakes the worker after commit).
fn enqueue(base: &Base, tx: &mut Tx<'_>, content: &crate::mail::MailContent) -> Result<()> {
    let job = crate::mail::MailJob::seal(
        base.keys(),
        None,
        content,
        base.clock().now().unix_timestamp(),
        &base.settings().helo_name(),
    )?;
    tx.enqueue_mail(&job)?;
    Ok(())
}

fn account_by_hash(rx: &impl Reads, email_hash: &str) -> Result<Option<Account>> {
    let Some(id) = rx.record::<String>(Ns::AccountEmail, email_hash)? else { return Ok(None) };
    Ok(rx.record::<Account>(Ns::Account, &id)?)
}

/// The account with this id.
pub fn account(base: &Base, id: &str) -> Result<Option<Account>> {
    Ok(base.store().read(|rx| rx.record::<Account>(Ns::Account, id))?)
}

/// Rewrites an e-mail index of unkeyed `token_hash("address", …)` keys (which a store
/// or backup alone could be checked against) as [`email_key`]s: every account's
/// `AccountEmail` row and `email_hash` and every one-time link's `email_hash`; throttle
/// counters under the old keys are dropped. One transaction, idempotent; called at
/// start. Returns how many accounts were re-keyed.
///
/// # Errors
/// Storage errors; key errors (a sealed address the key ring cannot open) — then nothing
/// is changed.
pub fn rekey_email_index(base: &Base) -> Result<u64> {
    let legacy = |h: &str| !h.contains('#');
    base.store().write(|tx| -> Result<u64> {
        let mut renamed = std::collections::HashMap::new();
        for (id, mut a) in tx.records::<Account>(Ns::Account)? {
            if !legacy(&a.email_hash) {
                continue;
            }
            let new = email_key(base.keys(), a.email(base.keys())?.expose());
            tx.remove_record(Ns::AccountEmail, &a.email_hash)?;
            tx.put_record(Ns::AccountEmail, &new, &a.id)?;
            renamed.insert(std::mem::replace(&mut a.email_hash, new.clone()), new);
            tx.put_record(Ns::Account, &id, &a)?;
        }
        for (k, mut l) in tx.records::<LinkRecord>(Ns::SignInLink)? {
            if !legacy(&l.email_hash) {
                continue;
            }
            let new = match (renamed.get(&l.email_hash), &l.email) {
                (Some(new), _) => Some(new.clone()),
                (None, Some(sealed)) => Some(email_key(base.keys(), base.keys().open_str(sealed)?.expose())),
                (None, None) => None,
            };
            match new {
                Some(h) => {
                    l.email_hash = h;
                    tx.put_record(Ns::SignInLink, &k, &l)?;
                }
                None => {
                    tx.remove_record(Ns::SignInLink, &k)?;
                }
            }
        }
        for (k, _) in tx.records::<ThrottleRecord>(Ns::Throttle)? {
            if k.contains("address:") {
                tx.remove_record(Ns::Throttle, &k)?;
            }
        }
        Ok(renamed.len() as u64)
    })
}

/// The account of an e-mail address (any case).
pub fn account_by_email(base: &Base, email: &str) -> Result<Option<Account>> {
    let hash = email_key(base.keys(), email);
    base.store().read(|rx| account_by_hash(rx, &hash))
}

/// Every account, in id order.
#[cfg(test)]
pub fn accounts(base: &Base) -> Result<Vec<Account>> {
    Ok(base.store().read(|rx| rx.records::<Account>(Ns::Account))?.into_iter().map(|(_, a)| a).collect())
}

/// Creates a seller account (`isto admin seller add`) without password (the seller
/// signs in with a one-time link). Returns the account id.
///
/// # Errors
/// [`AccountError::Input`] for a malformed address or an empty or over-long name;
/// [`AccountError::Exists`] when the address already has an account; storage errors.
pub fn create_seller(base: &Base, email: &str, name: &str) -> Result<String> {
    let email = checked_email(email)?;
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 200 || name.chars().any(char::is_control) {
        return Err(AccountError::Input("name must be 1 to 200 characters without control characters".into()));
    }
    let now = base.clock().now();
    let hash = email_key(base.keys(), &email);
    let a =
        Account { name: Some(name.to_owned()), ..Account::new(base.keys().seal_str(&email)?, hash, ROLE_SELLER, now) };
    base.store().write(|tx| -> Result<()> {
        if tx.record::<String>(Ns::AccountEmail, &a.email_hash)?.is_some() {
            return Err(AccountError::Exists);
        }
        Ok(a.insert(tx)?)
    })?;
    tracing::info!(account = %a.id, "seller account created");
    Ok(a.id)
}

/// Disables or re-enables an account. Disabling deletes its sessions, and [`signed_in`]
/// refuses a disabled account's sessions anyway, so it takes effect at once.
///
/// # Errors
/// [`AccountError::NotFound`]; storage errors.
pub fn set_disabled(base: &Base, account_id: &str, disabled: bool) -> Result<()> {
    base.store().write(|tx| -> Result<()> {
        let mut a = tx.record::<Account>(Ns::Account, account_id)?.ok_or(AccountError::NotFound)?;
        a.disabled = disabled;
        tx.put_record(Ns::Account, account_id, &a)?;
        if disabled {
            end_sessions(tx, account_id, None)?;
        }
        Ok(())
    })?;
    tracing::info!(account = %account_id, disabled, "account disabled flag set");
    Ok(())
}

/// Sets an account's password (argon2id) and ends its sessions but `keep_session`.
/// Hashes on the calling thread: call it on a blocking thread.
///
/// # Errors
/// [`AccountError::Input`] for a password outside 10–200 characters;
/// [`AccountError::NotFound`]; hashing and storage errors.
pub fn set_password(base: &Base, account_id: &str, new_password: &str, keep_session: Option<&str>) -> Result<()> {
    password::check_length(new_password).map_err(|m| AccountError::Input(m.to_owned()))?;
    let phc = password::hash(new_password)?;
    base.store().write(|tx| -> Result<()> {
        let mut a = tx.record::<Account>(Ns::Account, account_id)?.ok_or(AccountError::NotFound)?;
        a.password_hash = Some(phc);
        tx.put_record(Ns::Account, account_id, &a)?;
        end_sessions(tx, account_id, keep_session)?;
        Ok(())
    })?;
    tracing::info!(account = %account_id, "password set");
    Ok(())
}

/// The owner of a session changes its password ([`set_password`]); then the address's
/// failed-sign-in counter is cleared, best effort (the person proved the password).
///
/// # Errors
/// As [`set_password`].
pub fn change_password(base: &Base, signed: &Signed, new_password: &str, keep_session: Option<&str>) -> Result<()> {
    set_password(base, &signed.account.id, new_password, keep_session)?;
    let key = login_throttle_key(&signed.account.email_hash);
    if let Err(e) = base.store().write(|tx| tx.remove_record(Ns::Throttle, &key)) {
        tracing::warn!(error = %e, "clearing a sign-in counter failed");
    }
    Ok(())
}

/// What [`purge_tx`] removed: expired web sessions, expired one-time links (sign-in,
/// sign-up) and throttle counters with nothing in the last hour.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AccountsPurged {
    /// Expired web sessions.
    pub sessions: u64,
    /// Expired one-time links.
    pub sign_in_links: u64,
    /// Stale throttle counters.
    pub throttles: u64,
}

/// [`purge_tx`] in a write transaction of its own; returns how many records went.
#[cfg(test)]
pub(crate) fn sweep(base: &Base) -> Result<u64> {
    let n = base.store().write(|tx| purge_tx(tx, base.clock().now()))?;
    Ok(n.sessions + n.sign_in_links + n.throttles)
}

/// Deletes expired sessions, expired one-time links and stale throttle counters in
/// `tx`, at `now` (run by [`crate::intents::Intents::purge`]). A record that does not
/// decode is left, with a warning ([`Reads::readable_records`]).
pub fn purge_tx(tx: &mut Tx<'_>, now: OffsetDateTime) -> std::result::Result<AccountsPurged, StoreError> {
    let mut n = AccountsPurged::default();
    for (k, s) in tx.readable_records::<SessionRecord>(Ns::Session)?.0 {
        if expired(s.expires_at, now) {
            tx.remove_record(Ns::Session, &k)?;
            n.sessions += 1;
        }
    }
    for (k, l) in tx.readable_records::<LinkRecord>(Ns::SignInLink)?.0 {
        if expired(l.expires_at, now) {
            tx.remove_record(Ns::SignInLink, &k)?;
            n.sign_in_links += 1;
        }
    }
    for (k, t) in tx.readable_records::<ThrottleRecord>(Ns::Throttle)?.0 {
        if t.times.iter().all(|x| now - x.at() >= time::Duration::hours(1)) {
            tx.remove_record(Ns::Throttle, &k)?;
            n.throttles += 1;
        }
    }
    Ok(n)
}

/// Counts a password attempt for the address (before verifying, so parallel guesses
/// cannot slip past the limit) and loads its account: `None` past the limit, else
/// `Some` of the account if the address has one that is enabled and has a password.
pub fn begin_login(base: &Base, email_hash: &str) -> Result<Option<Option<Account>>> {
    let now = base.clock().now();
    base.store().write(|tx| -> Result<Option<Option<Account>>> {
        let key = login_throttle_key(email_hash);
        if !throttle_take(tx, &key, now, LOGIN_WINDOW_SECS, LOGIN_FAILURES_PER_WINDOW)? {
            return Ok(None);
        }
        let account = account_by_hash(tx, email_hash)?.filter(|a| !a.disabled && a.password_hash.is_some());
        Ok(Some(account))
    })
}

/// After a verified password: clears the address's counter, stores a rehash if one was
/// made, and starts a session. `None` if the account was disabled meanwhile.
pub fn finish_login(
    base: &Base,
    account_id: &str,
    email_hash: &str,
    verified_hash: &str,
    rehash: Option<String>,
) -> Result<Option<Secret>> {
    let now = base.clock().now();
    base.store().write(|tx| -> Result<Option<Secret>> {
        tx.remove_record(Ns::Throttle, &login_throttle_key(email_hash))?;
        let Some(mut a) = tx.record::<Account>(Ns::Account, account_id)? else { return Ok(None) };
        if a.disabled {
            return Ok(None);
        }
        // Replace the hash only if it is still the one verified (no password change raced).
        if let Some(new) = rehash {
            if a.password_hash.as_deref() == Some(verified_hash) {
                a.password_hash = Some(new);
                tx.put_record(Ns::Account, account_id, &a)?;
            }
        }
        Ok(Some(start_session(tx, now, account_id, "password")?))
    })
}

/// Ends the session stored under `key`.
pub fn end_session(base: &Base, key: &str) -> Result<()> {
    base.store().write(|tx| tx.remove_record(Ns::Session, key))?;
    Ok(())
}

/// Whether a stored expiry has passed at `now`.
fn expired(expires_at: Stamp, now: OffsetDateTime) -> bool {
    expires_at.at() <= now
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base(dir: &std::path::Path) -> Base {
        crate::base::test_base(dir)
    }

    /// Every record key and value of the namespaces that index addresses, as text.
    fn indexed_text(b: &Base) -> String {
        let mut out = String::new();
        for ns in [Ns::Account, Ns::AccountEmail, Ns::SignInLink, Ns::Throttle] {
            for (k, v) in b.store().read(|rx| rx.records::<serde_json::Value>(ns)).unwrap() {
                out.push_str(&format!("{k} {v}\n"));
            }
        }
        out
    }

    /// The tester's finding: the e-mail index held the unkeyed SHA-256 of each address,
    /// which a backup alone could be checked against; now it is keyed, and a store
    /// written before is re-keyed at start (idempotently).
    #[test]
    fn the_email_index_is_keyed_and_old_stores_are_rekeyed() {
        let d = tempfile::tempdir().unwrap();
        let b = base(d.path());
        let id = create_seller(&b, "Ann@Example.com", "Ann").unwrap();
        request_signin_link(&b, "ann@example.com", "/me", "en").unwrap();
        let unkeyed = crypto::token_hash("address", "ann@example.com");
        let digest = unkeyed.trim_start_matches("address:").to_owned();
        let text = indexed_text(&b);
        assert!(!text.contains(&digest), "no unkeyed address hash in the store:\n{text}");
        assert!(text.contains("address#"), "{text}");

        // As an older isto wrote it: the unkeyed hash everywhere.
        b.store()
            .write(|tx| -> Result<()> {
                let mut a: Account = tx.record(Ns::Account, &id)?.unwrap();
                tx.remove_record(Ns::AccountEmail, &a.email_hash)?;
                tx.put_record(Ns::AccountEmail, &unkeyed, &id)?;
                a.email_hash = unkeyed.clone();
                tx.put_record(Ns::Account, &id, &a)?;
                for (k, mut l) in tx.records::<LinkRecord>(Ns::SignInLink)? {
                    l.email_hash = unkeyed.clone();
                    tx.put_record(Ns::SignInLink, &k, &l)?;
                }
                let one_second = Stamp::from_micros(1_000_000).unwrap();
                tx.put_record(Ns::Throttle, &mail_throttle_key(&unkeyed), &ThrottleRecord { times: vec![one_second] })?;
                Ok(())
            })
            .unwrap();
        assert!(account_by_email(&b, "ann@example.com").unwrap().is_none(), "the old index is not read");
        assert_eq!(rekey_email_index(&b).unwrap(), 1);
        assert_eq!(account_by_email(&b, "ANN@example.com").unwrap().map(|a| a.id), Some(id));
        let text = indexed_text(&b);
        assert!(!text.contains(&digest), "re-keyed everywhere:\n{text}");
        assert_eq!(rekey_email_index(&b).unwrap(), 0, "idempotent");
    }
}
