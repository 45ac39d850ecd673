//! People's accounts, sign-in and web sessions (PROTOCOL.md §7: "People sign in on the
//! holder's page with e-mail + password (argon2id) or a one-time e-mail link. Sellers are
//! created by the holder's admin.").
//!
//! Storage (all in the store's `records` table, see [`crate::store::Ns`]):
//!
//! | namespace | key | value |
//! |---|---|---|
//! | `Account` | `acc_…` | [`Account`]: the e-mail sealed, role, argon2id PHC string |
//! | `AccountEmail` | `token_hash("address", lower-cased e-mail)` | account id |
//! | `Session` | `token_hash("session", cookie token)` | [`SessionRecord`] |
//! | `SignInLink` | `token_hash("signin" \| "signup", URL token)` | a one-time link (sign-in 15 min, sign-up confirmation 72 h) |
//! | `Throttle` | `login:<address hash>`, `mail:<address hash>` | recent attempt times (unix seconds) |
//!
//! Only hashes of cookie and link tokens are stored; the e-mail address is sealed at rest
//! like every contact (PROTOCOL.md §4.6). Throttling: failed password attempts and
//! account e-mails are counted per address in `Throttle` records (so they survive a
//! restart and hold whether or not an account exists, which keeps answers identical);
//! a global per-minute ceiling on failed password attempts and on account e-mails is
//! kept in memory by the account pages (`crate::web`, which also hashes passwords off
//! the async threads). [`sweep`] deletes expired sessions, links and counters.
//!
//! A disabled account's sessions stop working at once: [`current`] reads the account on
//! every request, and [`set_disabled`] deletes its sessions as well.

mod mail;
pub use crate::crypto::password;

use crate::base::Base;
use crate::clock;
use crate::crypto::{self, CryptoError, KeyRing, Sealed, Secret};
use crate::store::{Ns, Reads, StoreError, Tx};
use axum::http::{header, HeaderMap};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// Name of the session cookie.
pub const SESSION_COOKIE: &str = "isto_session";
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
    /// Key failure (logged, never shown in detail).
    #[error(transparent)]
    Crypto(#[from] CryptoError),
    /// The password hasher failed (never with the password in the message).
    #[error("password hashing failed: {0}")]
    Hash(String),
}

impl AccountError {
    /// Whether this is an internal failure (to be logged, and answered generically).
    pub fn is_internal(&self) -> bool {
        matches!(self, Self::Store(_) | Self::Crypto(_) | Self::Hash(_))
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
    /// `token_hash("address", lower-cased e-mail)`: the `AccountEmail` key.
    pub email_hash: String,
    /// [`ROLE_BUYER`] or [`ROLE_SELLER`].
    pub role: String,
    /// Display name (sellers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// argon2id PHC string, when the person set a password.
    pub password_hash: Option<String>,
    /// Version of the consent text accepted at sign-up (`holder.consent.get(lang).version`).
    pub consent_version: Option<String>,
    /// Language of that consent text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consent_language: Option<String>,
    /// When consent was given (the confirmation POST), RFC 3339.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consent_at: Option<String>,
    /// RFC 3339.
    pub created_at: String,
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
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339 (created + 14 days).
    pub expires_at: String,
    /// Not updated by requests (a GET never writes); reserved.
    #[serde(default)]
    pub last_seen: Option<String>,
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
    created_at: String,
    expires_at: String,
}

/// Recent attempt times of one throttle key.
#[derive(Debug, Default, Serialize, Deserialize)]
struct ThrottleRecord {
    /// Unix seconds, oldest first.
    times: Vec<i64>,
}

fn ts(s: &str) -> OffsetDateTime {
    clock::parse_rfc3339(s).unwrap_or(OffsetDateTime::UNIX_EPOCH)
}

/// `token_hash("address", lower-cased e-mail)`, the key of `AccountEmail`.
pub fn email_key(email: &str) -> String {
    crypto::token_hash("address", &email.trim().to_ascii_lowercase())
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

// ---------------------------------------------------------------------------
// sessions

/// Values of every `isto_session` cookie in the request (there may be several).
fn session_cookies(headers: &HeaderMap) -> Vec<String> {
    let mut out = Vec::new();
    for v in headers.get_all(header::COOKIE) {
        let Ok(s) = v.to_str() else { continue };
        for pair in s.split(';') {
            if let Some((name, value)) = pair.trim().split_once('=') {
                let value = value.trim().trim_matches('"');
                if name.trim() == SESSION_COOKIE && !value.is_empty() && value.len() <= 200 {
                    out.push(value.to_owned());
                }
            }
        }
    }
    out
}

/// A valid session with its account.
#[derive(Debug, Clone)]
pub struct Signed {
    /// The session's store key (`token_hash("session", token)`); CSRF tokens of a
    /// signed-in person's forms are bound to it.
    pub key: String,
    /// The session.
    pub session: SessionRecord,
    /// Its (enabled) account.
    pub account: Account,
}

/// The session of the request, if its cookie names one that exists, has not expired
/// and belongs to an enabled account. Reads the store.
pub fn signed_in(base: &Base, headers: &HeaderMap) -> Option<Signed> {
    let now = base.clock.now();
    for token in session_cookies(headers) {
        let key = session_key(&token);
        let found = base.store.read(|rx| -> Result<Option<(SessionRecord, Option<Account>)>> {
            let Some(s) = rx.record::<SessionRecord>(Ns::Session, &key)? else { return Ok(None) };
            let a = rx.record::<Account>(Ns::Account, &s.account_id)?;
            Ok(Some((s, a)))
        });
        match found {
            Ok(Some((session, Some(account)))) if !account.disabled && ts(&session.expires_at) > now => {
                return Some(Signed { key, session, account });
            }
            Ok(_) => {}
            Err(e) => tracing::error!(error = %e, "reading a session failed"),
        }
    }
    None
}

/// The signed-in account `(id, role)` from the request's `isto_session` cookie, if the
/// session exists, has not expired, and the account is not disabled. Reads the store
/// (call it on a blocking thread, or accept one short store read).
pub fn current(base: &Base, headers: &HeaderMap) -> Option<(String, String)> {
    signed_in(base, headers).map(|s| (s.account.id, s.account.role))
}

/// Starts a session for `account_id` in `tx`; returns the cookie token.
fn start_session(tx: &mut Tx<'_>, now: OffsetDateTime, account_id: &str, method: &str) -> Result<Secret> {
    let token = crypto::new_token(TOKEN_BYTES);
    let rec = SessionRecord {
        account_id: account_id.to_owned(),
        created_at: clock::rfc3339(now),
        expires_at: clock::rfc3339(now + time::Duration::seconds(SESSION_TTL_SECS)),
        last_seen: None,
        method: method.to_owned(),
    };
    tx.put_record(Ns::Session, &session_key(token.expose()), &rec)?;
    Ok(token)
}

/// Deletes every session of `account_id` except the one stored under `keep`.
fn end_sessions(tx: &mut Tx<'_>, account_id: &str, keep: Option<&str>) -> Result<u64> {
    let mut n = 0;
    for (key, s) in tx.records::<SessionRecord>(Ns::Session)? {
        if s.account_id == account_id && keep != Some(key.as_str()) {
            tx.remove_record(Ns::Session, &key)?;
            n += 1;
        }
    }
    Ok(n)
}

/// The `Set-Cookie` value that stores a session token (`Secure` on an https public URL).
pub fn session_cookie(base: &Base, token: &str) -> String {
    let secure = if base.settings.public_url.is_https() { "; Secure" } else { "" };
    format!("{SESSION_COOKIE}={token}; Path=/; Max-Age={SESSION_TTL_SECS}; HttpOnly; SameSite=Lax{secure}")
}

/// The `Set-Cookie` value that deletes the session cookie.
pub fn clear_cookie(base: &Base) -> String {
    let secure = if base.settings.public_url.is_https() { "; Secure" } else { "" };
    format!("{SESSION_COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax{secure}")
}

// ---------------------------------------------------------------------------
// throttling (per address, in the store)

/// Counts one attempt under `key` unless `limit` attempts were counted in the last
/// `window` seconds; returns whether it was counted (allowed).
fn throttle_take(tx: &mut Tx<'_>, key: &str, now: i64, window: i64, limit: usize) -> Result<bool> {
    let mut rec = tx.record::<ThrottleRecord>(Ns::Throttle, key)?.unwrap_or_default();
    rec.times.retain(|t| now - t < window);
    if rec.times.len() >= limit {
        return Ok(false);
    }
    rec.times.push(now);
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

// ---------------------------------------------------------------------------
// mail

/// Seals `content` into the outbox in `tx` (the caller wakes the worker after commit).
fn enqueue(base: &Base, tx: &mut Tx<'_>, content: &crate::mail::MailContent) -> Result<()> {
    let job = crate::mail::MailJob::seal(
        &base.keys,
        None,
        content,
        base.clock.now().unix_timestamp(),
        &base.settings.public_url.host,
    )?;
    tx.enqueue_mail(&job)?;
    Ok(())
}

/// Outcome of a request for an account e-mail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MailOutcome {
    /// A message was queued.
    Queued,
    /// Nothing to send (no such account, or it is disabled); the page answers the same.
    Nothing,
    /// This address got too many account e-mails lately; nothing queued.
    Throttled,
}

/// Queues a one-time sign-in link (`/signin/link/{token}`, 15 min, single use) for the
/// account of `email`, if there is one and it is enabled. Counts against the address's
/// mail limit whether or not an account exists, so the answer never tells. `next` must
/// be a checked relative path; `lang` is the language of the e-mail.
///
/// # Errors
/// [`AccountError::Input`] for a malformed address; storage and key errors.
pub fn request_signin_link(base: &Base, email: &str, next: &str, lang: &str) -> Result<MailOutcome> {
    let email = checked_email(email)?;
    let now = base.clock.now();
    let hash = email_key(&email);
    let token = crypto::new_token(TOKEN_BYTES);
    let url = format!("{}/signin/link/{}", base.settings.public_url.base, token.expose());
    let content = mail::signin_link(base, lang, &email, &url, false);
    let out = base.store.write(|tx| -> Result<MailOutcome> {
        if !throttle_take(tx, &mail_throttle_key(&hash), now.unix_timestamp(), 3600, MAILS_PER_ADDRESS_PER_HOUR)? {
            return Ok(MailOutcome::Throttled);
        }
        let Some(account) = account_by_hash(tx, &hash)? else { return Ok(MailOutcome::Nothing) };
        if account.disabled {
            return Ok(MailOutcome::Nothing);
        }
        put_signin_link(tx, now, &account, &token, next)?;
        enqueue(base, tx, &content)?;
        Ok(MailOutcome::Queued)
    })?;
    if out == MailOutcome::Queued {
        base.outbox.wake();
    }
    Ok(out)
}

fn put_signin_link(tx: &mut Tx<'_>, now: OffsetDateTime, account: &Account, token: &Secret, next: &str) -> Result<()> {
    let rec = LinkRecord {
        kind: LinkKind::Signin,
        account_id: Some(account.id.clone()),
        email: None,
        email_hash: account.email_hash.clone(),
        password_hash: None,
        consent_version: None,
        consent_language: None,
        next: next.to_owned(),
        created_at: clock::rfc3339(now),
        expires_at: clock::rfc3339(now + time::Duration::seconds(SIGNIN_LINK_TTL_SECS)),
    };
    tx.put_record(Ns::SignInLink, &link_key(LinkKind::Signin, token.expose()), &rec)?;
    Ok(())
}

/// A sign-up request (the sign-up form, after its checks).
#[derive(Clone)]
pub struct SignupRequest {
    /// The address typed (validated again here).
    pub email: String,
    /// argon2id PHC string of the chosen password, if any.
    pub password_hash: Option<String>,
    /// Language of the consent text shown (and of the e-mail).
    pub lang: String,
    /// Where to go after the confirmation (a checked relative path).
    pub next: String,
}

/// Sign-up through double opt-in: queues a confirmation link (`/signup/confirm/{token}`,
/// 72 h) — or, when the address already has an account, a "you already have an account"
/// e-mail with a sign-in link. The page answers the same either way.
///
/// # Errors
/// [`AccountError::Input`] for a malformed address; storage and key errors.
pub fn request_signup(base: &Base, req: SignupRequest) -> Result<MailOutcome> {
    let email = checked_email(&req.email)?;
    let now = base.clock.now();
    let hash = email_key(&email);
    let text = base.consent.get(&req.lang);
    let token = crypto::new_token(TOKEN_BYTES);
    let url_base = &base.settings.public_url.base;
    let confirm_url = format!("{url_base}/signup/confirm/{}", token.expose());
    let signin_url = format!("{url_base}/signin/link/{}", token.expose());
    let out = base.store.write(|tx| -> Result<MailOutcome> {
        if !throttle_take(tx, &mail_throttle_key(&hash), now.unix_timestamp(), 3600, MAILS_PER_ADDRESS_PER_HOUR)? {
            return Ok(MailOutcome::Throttled);
        }
        match account_by_hash(tx, &hash)? {
            Some(a) if a.disabled => return Ok(MailOutcome::Nothing),
            Some(a) => {
                put_signin_link(tx, now, &a, &token, &req.next)?;
                enqueue(base, tx, &mail::signin_link(base, &req.lang, &email, &signin_url, true))?;
            }
            None => {
                let rec = LinkRecord {
                    kind: LinkKind::Signup,
                    account_id: None,
                    email: Some(base.keys.seal_str(&email)?),
                    email_hash: hash.clone(),
                    password_hash: req.password_hash.clone(),
                    consent_version: Some(text.version.clone()),
                    consent_language: Some(text.language.clone()),
                    next: req.next.clone(),
                    created_at: clock::rfc3339(now),
                    expires_at: clock::rfc3339(now + time::Duration::seconds(SIGNUP_LINK_TTL_SECS)),
                };
                tx.put_record(Ns::SignInLink, &link_key(LinkKind::Signup, token.expose()), &rec)?;
                enqueue(base, tx, &mail::signup_confirmation(base, &req.lang, &email, &confirm_url))?;
            }
        }
        Ok(MailOutcome::Queued)
    })?;
    if out == MailOutcome::Queued {
        base.outbox.wake();
    }
    Ok(out)
}

/// Whether `token` names a usable one-time link of `kind` (unused, unexpired). Never
/// changes state.
///
/// # Errors
/// Storage errors.
pub fn link_usable(base: &Base, kind: LinkKind, token: &str) -> Result<bool> {
    Ok(link(base, kind, token)?.is_some())
}

/// A usable one-time link: the record, if the token names one of `kind` that has not
/// expired. Never changes state.
fn link(base: &Base, kind: LinkKind, token: &str) -> Result<Option<LinkRecord>> {
    if token.is_empty() || token.len() > 200 {
        return Ok(None);
    }
    let now = base.clock.now();
    let rec = base.store.read(|rx| rx.record::<LinkRecord>(Ns::SignInLink, &link_key(kind, token)))?;
    Ok(rec.filter(|r| r.kind == kind && ts(&r.expires_at) > now))
}

/// Uses a sign-in link (POST): deletes it and starts a session. Returns the cookie token
/// and `next`, or `None` when the link is unknown, used, expired, or its account is
/// gone or disabled.
///
/// # Errors
/// Storage errors.
pub fn use_signin_link(base: &Base, token: &str) -> Result<Option<(Secret, String)>> {
    if token.is_empty() || token.len() > 200 {
        return Ok(None);
    }
    let now = base.clock.now();
    let key = link_key(LinkKind::Signin, token);
    base.store.write(|tx| -> Result<Option<(Secret, String)>> {
        let Some(rec) = tx.record::<LinkRecord>(Ns::SignInLink, &key)? else { return Ok(None) };
        tx.remove_record(Ns::SignInLink, &key)?;
        if rec.kind != LinkKind::Signin || ts(&rec.expires_at) <= now {
            return Ok(None);
        }
        let Some(id) = rec.account_id else { return Ok(None) };
        match tx.record::<Account>(Ns::Account, &id)? {
            Some(a) if !a.disabled => {}
            _ => return Ok(None),
        }
        let session = start_session(tx, now, &id, "link")?;
        Ok(Some((session, rec.next)))
    })
}

/// Confirms a sign-up (POST): deletes the link, creates the buyer account (recording the
/// consent text version) unless the address got an account meanwhile, and starts a
/// session. `None` when the link is unknown, used or expired, or the account is disabled.
///
/// # Errors
/// Storage and key errors.
pub fn confirm_signup(base: &Base, token: &str) -> Result<Option<(Secret, String)>> {
    if token.is_empty() || token.len() > 200 {
        return Ok(None);
    }
    let now = base.clock.now();
    let key = link_key(LinkKind::Signup, token);
    let out = base.store.write(|tx| -> Result<Option<(Secret, String, bool)>> {
        let Some(rec) = tx.record::<LinkRecord>(Ns::SignInLink, &key)? else { return Ok(None) };
        tx.remove_record(Ns::SignInLink, &key)?;
        if rec.kind != LinkKind::Signup || ts(&rec.expires_at) <= now {
            return Ok(None);
        }
        // The person proved they read this mailbox: an account created meanwhile (a
        // second sign-up confirmed first) is simply signed in.
        let (id, created) = match account_by_hash(tx, &rec.email_hash)? {
            Some(a) if a.disabled => return Ok(None),
            Some(a) => (a.id, false),
            None => {
                let Some(email) = rec.email else { return Ok(None) };
                let a = Account {
                    id: crypto::new_id("acc_"),
                    email,
                    email_hash: rec.email_hash.clone(),
                    role: ROLE_BUYER.to_owned(),
                    name: None,
                    password_hash: rec.password_hash,
                    consent_version: rec.consent_version,
                    consent_language: rec.consent_language,
                    consent_at: Some(clock::rfc3339(now)),
                    created_at: clock::rfc3339(now),
                    disabled: false,
                };
                tx.put_record(Ns::Account, &a.id, &a)?;
                tx.put_record(Ns::AccountEmail, &a.email_hash, &a.id)?;
                (a.id, true)
            }
        };
        let session = start_session(tx, now, &id, "signup")?;
        Ok(Some((session, rec.next, created)))
    })?;
    Ok(out.map(|(s, next, created)| {
        if created {
            tracing::info!("account created (sign-up confirmed)");
        }
        (s, next)
    }))
}

// ---------------------------------------------------------------------------
// accounts

fn account_by_hash(rx: &impl Reads, email_hash: &str) -> Result<Option<Account>> {
    let Some(id) = rx.record::<String>(Ns::AccountEmail, email_hash)? else { return Ok(None) };
    Ok(rx.record::<Account>(Ns::Account, &id)?)
}

/// The account with this id.
///
/// # Errors
/// Storage errors.
pub fn account(base: &Base, id: &str) -> Result<Option<Account>> {
    Ok(base.store.read(|rx| rx.record::<Account>(Ns::Account, id))?)
}

/// The account of an e-mail address (any case).
///
/// # Errors
/// Storage errors.
pub fn account_by_email(base: &Base, email: &str) -> Result<Option<Account>> {
    let hash = email_key(email);
    base.store.read(|rx| account_by_hash(rx, &hash))
}

/// Every account, in id order (admin listings).
///
/// # Errors
/// Storage errors.
pub fn accounts(base: &Base) -> Result<Vec<Account>> {
    Ok(base.store.read(|rx| rx.records::<Account>(Ns::Account))?.into_iter().map(|(_, a)| a).collect())
}

/// Creates a seller account (`isto admin seller add`): no password; the seller signs in
/// with a one-time link from `/signin` (and may then set a password at
/// `/account/password`). Returns the account id.
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
    let now = base.clock.now();
    let hash = email_key(&email);
    let a = Account {
        id: crypto::new_id("acc_"),
        email: base.keys.seal_str(&email)?,
        email_hash: hash.clone(),
        role: ROLE_SELLER.to_owned(),
        name: Some(name.to_owned()),
        password_hash: None,
        consent_version: None,
        consent_language: None,
        consent_at: None,
        created_at: clock::rfc3339(now),
        disabled: false,
    };
    base.store.write(|tx| -> Result<()> {
        if tx.record::<String>(Ns::AccountEmail, &hash)?.is_some() {
            return Err(AccountError::Exists);
        }
        tx.put_record(Ns::Account, &a.id, &a)?;
        tx.put_record(Ns::AccountEmail, &hash, &a.id)?;
        Ok(())
    })?;
    tracing::info!(account = %a.id, "seller account created");
    Ok(a.id)
}

/// Disables or re-enables an account. Disabling deletes its sessions, and [`current`]
/// refuses a disabled account's sessions anyway, so it takes effect at once.
///
/// # Errors
/// [`AccountError::NotFound`]; storage errors.
pub fn set_disabled(base: &Base, account_id: &str, disabled: bool) -> Result<()> {
    base.store.write(|tx| -> Result<()> {
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

/// Sets (or replaces) an account's password (argon2id, OWASP parameters) and ends its
/// other sessions (all of them when `keep_session` is `None`). Hashes on the calling
/// thread: call it on a blocking thread.
///
/// # Errors
/// [`AccountError::Input`] for a password outside 10–200 characters;
/// [`AccountError::NotFound`]; hashing and storage errors.
pub fn set_password(base: &Base, account_id: &str, new_password: &str, keep_session: Option<&str>) -> Result<()> {
    password::check_length(new_password).map_err(|m| AccountError::Input(m.to_owned()))?;
    let phc = password::hash(new_password)?;
    base.store.write(|tx| -> Result<()> {
        let mut a = tx.record::<Account>(Ns::Account, account_id)?.ok_or(AccountError::NotFound)?;
        a.password_hash = Some(phc);
        tx.put_record(Ns::Account, account_id, &a)?;
        end_sessions(tx, account_id, keep_session)?;
        Ok(())
    })?;
    tracing::info!(account = %account_id, "password set");
    Ok(())
}

/// The owner of a session changes its password ([`set_password`], keeping
/// `keep_session`); then the address's failed-sign-in counter is spent, since the person
/// proved the password (clearing it is best effort: the password is saved either way).
///
/// # Errors
/// As [`set_password`].
pub fn change_password(base: &Base, signed: &Signed, new_password: &str, keep_session: Option<&str>) -> Result<()> {
    set_password(base, &signed.account.id, new_password, keep_session)?;
    let key = login_throttle_key(&signed.account.email_hash);
    if let Err(e) = base.store.write(|tx| tx.remove_record(Ns::Throttle, &key)) {
        tracing::warn!(error = %e, "clearing a sign-in counter failed");
    }
    Ok(())
}

/// Deletes expired sessions, expired one-time links and stale throttle counters.
/// Returns how many records went.
///
/// # Errors
/// Storage errors.
pub fn sweep(base: &Base) -> Result<u64> {
    let now = base.clock.now();
    let secs = now.unix_timestamp();
    base.store.write(|tx| -> Result<u64> {
        let mut n = 0;
        for (k, s) in tx.records::<SessionRecord>(Ns::Session)? {
            if ts(&s.expires_at) <= now {
                tx.remove_record(Ns::Session, &k)?;
                n += 1;
            }
        }
        for (k, l) in tx.records::<LinkRecord>(Ns::SignInLink)? {
            if ts(&l.expires_at) <= now {
                tx.remove_record(Ns::SignInLink, &k)?;
                n += 1;
            }
        }
        for (k, t) in tx.records::<ThrottleRecord>(Ns::Throttle)? {
            if t.times.iter().all(|x| secs - x >= 3600) {
                tx.remove_record(Ns::Throttle, &k)?;
                n += 1;
            }
        }
        Ok(n)
    })
}

// ---------------------------------------------------------------------------
// password sign-in (the parts that touch the store; hashing is in `web`)

/// What a password sign-in attempt needs from the store.
#[derive(Debug)]
pub struct LoginTarget {
    /// The account, if the address has one that is enabled and has a password.
    pub account: Option<Account>,
}

/// Counts a password attempt for the address (before verifying, so parallel guesses
/// cannot slip past the limit) and loads the account. `None` when the address used up
/// its attempts.
///
/// # Errors
/// Storage errors.
pub fn begin_login(base: &Base, email_hash: &str) -> Result<Option<LoginTarget>> {
    let now = base.clock.now().unix_timestamp();
    base.store.write(|tx| -> Result<Option<LoginTarget>> {
        let key = login_throttle_key(email_hash);
        if !throttle_take(tx, &key, now, LOGIN_WINDOW_SECS, LOGIN_FAILURES_PER_WINDOW)? {
            return Ok(None);
        }
        let account = account_by_hash(tx, email_hash)?.filter(|a| !a.disabled && a.password_hash.is_some());
        Ok(Some(LoginTarget { account }))
    })
}

/// After a verified password: clears the address's counter, stores a rehash if one was
/// made, and starts a session. `None` if the account was disabled meanwhile.
///
/// # Errors
/// Storage errors.
pub fn finish_login(
    base: &Base,
    account_id: &str,
    email_hash: &str,
    verified_hash: &str,
    rehash: Option<String>,
) -> Result<Option<Secret>> {
    let now = base.clock.now();
    base.store.write(|tx| -> Result<Option<Secret>> {
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
///
/// # Errors
/// Storage errors.
pub fn end_session(base: &Base, key: &str) -> Result<()> {
    base.store.write(|tx| -> Result<()> {
        tx.remove_record(Ns::Session, key)?;
        Ok(())
    })
}
