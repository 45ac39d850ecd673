//! Codes, tokens and families: the token endpoint (RFC 6749 §4.1.3 with PKCE RFC 7636,
//! §6 refresh with rotation), revocation (RFC 7009), account-wide revocation and the
//! expiry sweep.
//!
//! Records (JSON in the `records` table, keyed by [`token_hash`]):
//! * `AuthCode` — [`CodeRecord`]; exchanging a code marks it used (with the family it
//!   started) in the same transaction, so a replay is refused and revokes that family.
//! * `Token` — [`TokenRecord`], access (1 h) and refresh (30 days); a rotated refresh
//!   token stays, marked used, until it expires, so its reuse is detected. The pair a
//!   rotation mints is derived from the presented refresh token under the holder's key
//!   ([`successor`]), so within `[limits] refresh_grace_secs` the same token presented
//!   again is answered with the same pair, nothing more stored; later reuse revokes the
//!   family (PROTOCOL.md §7).
//! * `TokenFamily` — [`FamilyRecord`], one per authorization; revoking it (a flag)
//!   invalidates every token issued from that authorization.

use super::clients::{authenticate, ClientRecord};
use super::error::OAuthError;
use super::form::{credentials, Params};
use super::{blocking, now_stamp, Resource, Shared, ACCESS_TTL_SECS, CODE_TTL_SECS, REFRESH_TTL_SECS};
use crate::base::Base;
use crate::crypto::{new_id, new_token, token_hash, Secret};
use crate::records::Stamp;
use crate::store::{Ns, Reads, StoreError, Tx};
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use time::Duration;

/// Hash kind of authorization codes.
pub const KIND_CODE: &str = "oauth-code";
/// Hash kind of access tokens.
pub const KIND_ACCESS: &str = "oauth-access";
/// Hash kind of refresh tokens.
pub const KIND_REFRESH: &str = "oauth-refresh";
/// How long a used or expired code is kept for replay detection after its expiry, seconds.
pub(super) const CODE_KEEP_SECS: i64 = 86400;
/// Derivation purposes of the pair a rotation mints ([`successor`]).
const SUCCESSOR_ACCESS: &str = "oauth-refresh-successor-access";
const SUCCESSOR_REFRESH: &str = "oauth-refresh-successor-refresh";

/// An authorization code as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CodeRecord {
    /// The client it was issued to.
    pub client_id: String,
    /// The redirect URI of the authorization request (the one used, port included).
    pub redirect_uri: String,
    /// Whether the request carried `redirect_uri` (then the token request must repeat it).
    pub redirect_uri_sent: bool,
    /// The S256 code challenge.
    pub code_challenge: String,
    /// Granted scopes.
    pub scopes: Vec<String>,
    /// The resource URL.
    pub resource: String,
    /// The person who allowed it.
    pub account_id: String,
    /// Their role.
    pub role: String,
    /// When it stops being accepted.
    pub expires_at: Stamp,
    /// The family started by exchanging it (set once used).
    #[serde(default)]
    pub family: Option<String>,
}

/// Access or refresh.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TokenKind {
    /// An access token.
    Access,
    /// A refresh token.
    Refresh,
}

/// A token as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TokenRecord {
    /// Access or refresh.
    pub kind: TokenKind,
    /// Family id.
    pub family: String,
    /// The client.
    pub client_id: String,
    /// The account.
    pub account_id: String,
    /// The account's role at authorization.
    pub role: String,
    /// Scopes of this token.
    pub scopes: Vec<String>,
    /// The resource URL.
    pub resource: String,
    /// When it was issued.
    pub issued_at: Stamp,
    /// When it stops being accepted.
    pub expires_at: Stamp,
    /// A refresh token already exchanged.
    #[serde(default)]
    pub used: bool,
    /// When a refresh token was exchanged (its grace window starts then).
    #[serde(default)]
    pub used_at: Option<Stamp>,
}

/// One authorization and every token issued from it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FamilyRecord {
    /// The account.
    pub account_id: String,
    /// The account's role at authorization.
    pub role: String,
    /// The client.
    pub client_id: String,
    /// The resource URL.
    pub resource: String,
    /// The scopes granted by the person (the ceiling of every refresh).
    pub scopes: Vec<String>,
    /// When the person authorized.
    pub created_at: Stamp,
    /// Expiry of its newest token.
    pub expires_at: Stamp,
    /// Revoked: every token of the family is refused.
    pub revoked: bool,
}

/// An answered consent form (namespace `AuthDecision`, keyed by the hash of its CSRF
/// token), kept until the form could no longer be posted.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DecisionRecord {
    /// When the form's token is refused anyway.
    pub expires_at: Stamp,
}

/// How long an answered consent form is remembered, seconds: the CSRF token's lifetime
/// (two hours, [`crate::crypto::KeyRing::csrf_valid`]) and its minute of clock skew.
pub const DECISION_KEEP_SECS: i64 = 7200 + 60;

/// Stores a new authorization code for `record` and returns it, unless the consent form
/// `decision` (the hash of its CSRF token) was already answered: then `None`. One
/// transaction, so however often the Allow form is posted, one code is minted.
pub fn issue_code(base: &Base, mut record: CodeRecord, decision: &str) -> Result<Option<Secret>, StoreError> {
    let code = new_token(20);
    let now = now_stamp(base);
    record.expires_at = now + Duration::seconds(CODE_TTL_SECS);
    record.family = None;
    let key = token_hash(KIND_CODE, code.expose());
    let fresh = base.store().write(|tx| -> Result<bool, StoreError> {
        if tx.record::<DecisionRecord>(Ns::AuthDecision, decision)?.is_some() {
            return Ok(false);
        }
        tx.put_record(
            Ns::AuthDecision,
            decision,
            &DecisionRecord { expires_at: now + Duration::seconds(DECISION_KEEP_SECS) },
        )?;
        tx.put_record(Ns::AuthCode, &key, &record)?;
        Ok(true)
    })?;
    Ok(fresh.then_some(code))
}

/// A freshly issued pair.
struct Issued {
    pair: Minted,
    scopes: Vec<String>,
    /// Seconds the access token has left.
    expires_in: i64,
}

/// The token values a grant will mint (random, or derived for a rotation: [`successor`]).
#[derive(Clone)]
struct Minted {
    access: Secret,
    refresh: Option<Secret>,
}

impl Minted {
    /// Fresh random values (a refresh token when `with_refresh`).
    fn random(with_refresh: bool) -> Self {
        Self { access: new_token(20), refresh: with_refresh.then(|| new_token(20)) }
    }
}

/// Issues `minted` (its access token, and its refresh token if any) in `family`.
fn issue(
    tx: &mut Tx<'_>,
    family_id: &str,
    family: &mut FamilyRecord,
    scopes: Vec<String>,
    minted: Minted,
    now: Stamp,
) -> Result<Issued, StoreError> {
    let access_until = now + Duration::seconds(ACCESS_TTL_SECS);
    let record = |kind, expires_at| TokenRecord {
        kind,
        family: family_id.to_owned(),
        client_id: family.client_id.clone(),
        account_id: family.account_id.clone(),
        role: family.role.clone(),
        scopes: scopes.clone(),
        resource: family.resource.clone(),
        issued_at: now,
        expires_at,
        used: false,
        used_at: None,
    };
    let refresh_until = now + Duration::seconds(REFRESH_TTL_SECS);
    let tokens = [
        (TokenKind::Access, KIND_ACCESS, Some(&minted.access), access_until),
        (TokenKind::Refresh, KIND_REFRESH, minted.refresh.as_ref(), refresh_until),
    ];
    for (kind, hash_kind, token, until) in tokens {
        let Some(token) = token else { continue };
        tx.put_record(Ns::Token, &token_hash(hash_kind, token.expose()), &record(kind, until))?;
        family.expires_at = family.expires_at.max(until);
    }
    tx.put_record(Ns::TokenFamily, family_id, family)?;
    // The client is in use (kept by the purge for CLIENT_UNUSED_SECS from now).
    if let Some(mut c) = tx.record::<ClientRecord>(Ns::Client, &family.client_id)? {
        if c.last_used_at != Some(now) {
            c.last_used_at = Some(now);
            tx.put_record(Ns::Client, &family.client_id, &c)?;
        }
    }
    Ok(Issued { pair: minted, scopes, expires_in: ACCESS_TTL_SECS })
}

/// Marks a family revoked; returns whether it was live.
fn revoke_family(tx: &mut Tx<'_>, family_id: &str) -> Result<bool, StoreError> {
    let Some(mut f) = tx.record::<FamilyRecord>(Ns::TokenFamily, family_id)? else { return Ok(false) };
    if f.revoked {
        return Ok(false);
    }
    f.revoked = true;
    tx.put_record(Ns::TokenFamily, family_id, &f)?;
    Ok(true)
}

/// RFC 7636 §4.6: BASE64URL(SHA256(verifier)) == challenge, compared in constant time;
/// the verifier must be 43–128 unreserved characters.
pub fn pkce_matches(verifier: &str, challenge: &str) -> bool {
    let well_formed = (43..=128).contains(&verifier.len())
        && verifier.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b));
    let computed = B64.encode(Sha256::digest(verifier.as_bytes()));
    let same: bool = subtle::ConstantTimeEq::ct_eq(computed.as_bytes(), challenge.as_bytes()).into();
    well_formed & same
}

fn grant(why: &str) -> OAuthError {
    OAuthError::bad("invalid_grant", why)
}

/// Parameters of the token endpoint that may appear once.
const TOKEN_PARAMS: [&str; 9] = [
    "grant_type",
    "code",
    "redirect_uri",
    "code_verifier",
    "refresh_token",
    "scope",
    "client_id",
    "client_secret",
    "resource",
];

/// The token endpoint, `POST /oauth/token` (RFC 6749 §4.1.3, §6): `authorization_code`
/// (with PKCE) and `refresh_token` grants, given the `Authorization` header's value and
/// the form `body`. Gives the RFC 6749 §5.1 answer.
///
/// # Errors
/// The RFC 6749 §5.2 error to answer.
pub async fn grant_token(ctx: &Shared, authorization: Option<&str>, body: &[u8]) -> Result<Value, OAuthError> {
    let issued = token_grant(ctx, authorization, body).await?;
    let mut out = json!({
        "access_token": issued.pair.access.expose(),
        "token_type": "Bearer",
        "expires_in": issued.expires_in,
        "scope": issued.scopes.join(" "),
    });
    if let Some(r) = &issued.pair.refresh {
        out["refresh_token"] = json!(r.expose());
    }
    Ok(out)
}

async fn token_grant(ctx: &Shared, authorization: Option<&str>, body: &[u8]) -> Result<Issued, OAuthError> {
    let p = Params::parse(body);
    if p.is_repeated("resource") {
        return Err(OAuthError::bad("invalid_target", "give one resource"));
    }
    if let Some(name) = p.first_repeated(&TOKEN_PARAMS) {
        return Err(OAuthError::bad("invalid_request", format!("{name} must be sent once")));
    }
    let creds = credentials(authorization, &p)?;
    let grant_type = p.get("grant_type").ok_or_else(|| OAuthError::bad("invalid_request", "grant_type is required"))?;
    if grant_type != "authorization_code" && grant_type != "refresh_token" {
        return Err(OAuthError::bad("unsupported_grant_type", "use authorization_code or refresh_token"));
    }
    let client = authenticate(ctx, &creds).await?;
    if !client.allows_grant(grant_type) {
        return Err(OAuthError::bad("unauthorized_client", format!("this client is not registered for {grant_type}")));
    }
    let base = ctx.base.settings().public_url.base.clone();
    let known = |r: &str| Resource::from_url(&base, r).map(|x| x.url(&base));
    let unknown = || OAuthError::bad("invalid_target", "unknown resource");
    let resource = p.get("resource").map(|r| known(r).ok_or_else(unknown)).transpose()?;
    let with_refresh = client.allows_grant("refresh_token");
    let client_id = client.client_id;
    if grant_type == "authorization_code" {
        let code = p.get("code").ok_or_else(|| OAuthError::bad("invalid_request", "code is required"))?;
        let verifier = p
            .get("code_verifier")
            .ok_or_else(|| OAuthError::bad("invalid_request", "code_verifier is required (PKCE)"))?
            .to_owned();
        let hash = token_hash(KIND_CODE, code);
        let redirect_uri = p.get("redirect_uri").map(str::to_owned);
        blocking(ctx, "oauth code exchange", move |h| {
            let now = now_stamp(h);
            h.store()
                .write(|tx| exchange_code(tx, &hash, &client_id, redirect_uri, &verifier, resource, with_refresh, now))
        })
        .await?
    } else {
        let presented =
            p.get("refresh_token").ok_or_else(|| OAuthError::bad("invalid_request", "refresh_token is required"))?;
        let presented = Secret(presented.to_owned());
        let scope = p.get("scope").map(str::to_owned);
        blocking(ctx, "oauth refresh", move |h| {
            let now = now_stamp(h);
            let asked = Refresh {
                hash: token_hash(KIND_REFRESH, presented.expose()),
                successor: successor(h, &presented, with_refresh),
                client_id,
                scope,
                resource,
                grace_secs: h.settings().limits.refresh_grace_secs,
            };
            h.store().write(|tx| rotate(tx, &asked, now))
        })
        .await?
    }
}

/// The authorization code grant, in one write transaction. Refusals that change state
/// (replay → family revoked, failed PKCE or expiry → code removed) commit, so they are
/// `Ok(Err(..))`.
#[allow(clippy::too_many_arguments)]
fn exchange_code(
    tx: &mut Tx<'_>,
    hash: &str,
    client_id: &str,
    redirect_uri: Option<String>,
    verifier: &str,
    resource: Option<String>,
    with_refresh: bool,
    now: Stamp,
) -> Result<Result<Issued, OAuthError>, StoreError> {
    let Some(mut code) = tx.record::<CodeRecord>(Ns::AuthCode, hash)? else {
        return Ok(Err(grant("the code is unknown")));
    };
    if let Some(family) = &code.family {
        let revoked = revoke_family(tx, family)?;
        if revoked {
            tracing::warn!(client_id, "oauth: authorization code replayed; its tokens are revoked");
        }
        return Ok(Err(grant("the code was already used; the tokens issued for it are revoked")));
    }
    if now >= code.expires_at {
        tx.remove_record(Ns::AuthCode, hash)?;
        return Ok(Err(grant("the code expired")));
    }
    if code.client_id != client_id {
        return Ok(Err(grant("the code was issued to another client")));
    }
    if !redirect_uri.map_or(!code.redirect_uri_sent, |r| r == code.redirect_uri) {
        return Ok(Err(grant("redirect_uri differs from the authorization request")));
    }
    if !pkce_matches(verifier, &code.code_challenge) {
        // A wrong verifier burns the code: whoever holds it cannot try again.
        tx.remove_record(Ns::AuthCode, hash)?;
        return Ok(Err(grant("code_verifier does not match the code_challenge")));
    }
    if resource.as_ref().is_some_and(|r| *r != code.resource) {
        return Ok(Err(OAuthError::bad("invalid_target", "the resource differs from the authorization request")));
    }
    let family_id = new_id("fam_");
    code.family = Some(family_id.clone());
    tx.put_record(Ns::AuthCode, hash, &code)?;
    let mut family = FamilyRecord {
        account_id: code.account_id,
        role: code.role,
        client_id: code.client_id,
        resource: code.resource,
        scopes: code.scopes.clone(),
        created_at: now,
        expires_at: now,
        revoked: false,
    };
    issue(tx, &family_id, &mut family, code.scopes, Minted::random(with_refresh), now).map(Ok)
}

/// A refresh request, checked and with its successor pair derived.
struct Refresh {
    /// The presented refresh token's hash.
    hash: String,
    /// The pair its rotation mints (and, within the grace window, answers again).
    successor: Minted,
    client_id: String,
    scope: Option<String>,
    resource: Option<String>,
    /// `[limits] refresh_grace_secs`.
    grace_secs: i64,
}

/// The pair that rotating `presented` mints: derived from it under the holder's key
/// (the same pair each time), or random without a key (then no grace answer matches).
fn successor(base: &Base, presented: &Secret, with_refresh: bool) -> Minted {
    let derive = |purpose| base.keys().derive_token(purpose, presented.expose());
    match derive(SUCCESSOR_ACCESS) {
        Some(access) => Minted { access, refresh: if with_refresh { derive(SUCCESSOR_REFRESH) } else { None } },
        None => Minted::random(with_refresh),
    }
}

/// The refresh grant with rotation and reuse detection, in one write transaction: a
/// reuse within the grace window gets [`grace_answer`], any other revokes the family.
fn rotate(tx: &mut Tx<'_>, r: &Refresh, now: Stamp) -> Result<Result<Issued, OAuthError>, StoreError> {
    let client_id = r.client_id.as_str();
    let Some(mut old) = tx.record::<TokenRecord>(Ns::Token, &r.hash)? else {
        return Ok(Err(grant("the refresh token is unknown or revoked")));
    };
    if old.kind != TokenKind::Refresh || old.client_id != client_id {
        return Ok(Err(grant("the refresh token is unknown or revoked")));
    }
    let Some(mut family) = tx.record::<FamilyRecord>(Ns::TokenFamily, &old.family)?.filter(|f| !f.revoked) else {
        return Ok(Err(grant("the refresh token is unknown or revoked")));
    };
    let wrong_resource = r.resource.as_ref().is_some_and(|x| *x != family.resource);
    if old.used {
        let within = old.used_at.is_some_and(|at| r.grace_secs > 0 && now - at <= Duration::seconds(r.grace_secs));
        if within && !wrong_resource {
            if let Some(again) = grace_answer(tx, &old.family, &r.successor, now)? {
                tracing::info!(client_id, "oauth: refresh token presented again within its grace window");
                return Ok(Ok(again));
            }
        }
        revoke_family(tx, &old.family)?;
        tracing::warn!(client_id, "oauth: refresh token reused; its family is revoked");
        return Ok(Err(grant("the refresh token was already used; every token of this grant is revoked")));
    }
    if now >= old.expires_at {
        return Ok(Err(grant("the refresh token expired")));
    }
    if wrong_resource {
        return Ok(Err(OAuthError::bad("invalid_target", "the resource differs from the original grant")));
    }
    // The scopes asked for (each granted, once), or without any the granted ones.
    let mut scopes: Vec<String> = Vec::new();
    for x in r.scope.iter().flat_map(|s| s.split(' ')).filter(|x| !x.is_empty()) {
        if !family.scopes.iter().any(|g| g == x) {
            return Ok(Err(OAuthError::bad("invalid_scope", format!("scope {x:?} was not granted"))));
        }
        if !scopes.iter().any(|w| w == x) {
            scopes.push(x.to_owned());
        }
    }
    if scopes.is_empty() {
        scopes = family.scopes.clone();
    }
    old.used = true;
    old.used_at = Some(now);
    tx.put_record(Ns::Token, &r.hash, &old)?;
    let family_id = old.family.clone();
    issue(tx, &family_id, &mut family, scopes, r.successor.clone(), now).map(Ok)
}

/// The pair a rotation minted, answered again: `Some` while it is stored in `family_id`,
/// unexpired, and its refresh token unused; `None` otherwise (then the reuse revokes).
fn grace_answer(tx: &mut Tx<'_>, family_id: &str, pair: &Minted, now: Stamp) -> Result<Option<Issued>, StoreError> {
    let Some(access) = tx.record::<TokenRecord>(Ns::Token, &token_hash(KIND_ACCESS, pair.access.expose()))? else {
        return Ok(None);
    };
    if access.kind != TokenKind::Access || access.family != family_id || now >= access.expires_at {
        return Ok(None);
    }
    if let Some(refresh) = &pair.refresh {
        let live = tx
            .record::<TokenRecord>(Ns::Token, &token_hash(KIND_REFRESH, refresh.expose()))?
            .is_some_and(|t| t.kind == TokenKind::Refresh && t.family == family_id && !t.used && now < t.expires_at);
        if !live {
            return Ok(None);
        }
    }
    Ok(Some(Issued {
        pair: pair.clone(),
        expires_in: (access.expires_at - now).whole_seconds(),
        scopes: access.scopes,
    }))
}

/// Revocation, `POST /oauth/revoke` (RFC 7009): `token` in the form `body`. Client
/// credentials, when sent (header or body), are checked and then only that client's
/// tokens are revoked. `Ok` for unknown tokens too. A refresh token revokes its family;
/// an access token is removed.
///
/// # Errors
/// The RFC 6749 §5.2 error to answer.
pub async fn revoke_token(ctx: &Shared, authorization: Option<&str>, body: &[u8]) -> Result<(), OAuthError> {
    let p = Params::parse(body);
    if let Some(name) = p.first_repeated(&["token", "token_type_hint", "client_id", "client_secret"]) {
        return Err(OAuthError::bad("invalid_request", format!("{name} must be sent once")));
    }
    let Some(token) = p.get("token") else {
        return Err(OAuthError::bad("invalid_request", "token is required"));
    };
    let creds = credentials(authorization, &p)?;
    let client_id = match creds.client_id {
        Some(_) => Some(authenticate(ctx, &creds).await?.client_id),
        None => None,
    };
    let access = token_hash(KIND_ACCESS, token);
    let refresh = token_hash(KIND_REFRESH, token);
    blocking(ctx, "oauth revoke", move |h| {
        h.store().write(|tx| -> Result<(), StoreError> {
            let mine = |t: &TokenRecord| client_id.as_deref().is_none_or(|c| c == t.client_id);
            if tx.record::<TokenRecord>(Ns::Token, &access)?.is_some_and(|t| mine(&t)) {
                tx.remove_record(Ns::Token, &access)?;
            }
            if let Some(t) = tx.record::<TokenRecord>(Ns::Token, &refresh)?.filter(|t| mine(t)) {
                revoke_family(tx, &t.family)?;
            }
            Ok(())
        })
    })
    .await
    .map_err(OAuthError::from)
}

#[cfg(test)]
mod tests {
    use super::super::purge::{purge_tx, OAuthPurged};
    use super::*;
    use crate::store::Store;

    const DAY: i64 = 86400;
    const NOW: i64 = 1_800_000_000;

    /// The instant `secs` unix seconds.
    fn at(secs: i64) -> Stamp {
        Stamp::from_micros(secs * 1_000_000).unwrap()
    }

    /// Puts client `id`, registered at `issued_at` and last used at `last_used_at` (unix
    /// seconds).
    fn put_client(tx: &mut Tx<'_>, id: &str, issued_at: i64, last_used_at: Option<i64>) -> Result<(), StoreError> {
        let v = serde_json::json!({"redirect_uris": ["http://127.0.0.1/cb"], "token_endpoint_auth_method": "none"});
        let m = v.as_object().unwrap();
        let mut c = super::super::clients::client_from_metadata(m, id.into(), at(issued_at), false).unwrap();
        c.last_used_at = last_used_at.map(at);
        tx.put_record(Ns::Client, id, &c)
    }

    /// A store in a fresh directory (the guard keeps it), written by `fill`.
    fn store_with(fill: impl FnOnce(&mut Tx<'_>) -> Result<(), StoreError>) -> (tempfile::TempDir, Store) {
        let d = tempfile::tempdir().unwrap();
        let s = Store::open(&d.path().join("s.redb")).unwrap();
        s.write(fill).unwrap();
        (d, s)
    }

    /// The ids of the stored clients, in order.
    fn client_ids(s: &Store) -> Vec<String> {
        s.read(|rx| rx.records::<ClientRecord>(Ns::Client)).unwrap().into_iter().map(|(k, _)| k).collect()
    }

    fn family(client_id: &str, created_at: i64, expires_at: i64) -> FamilyRecord {
        FamilyRecord {
            account_id: "acc_1".into(),
            role: "buyer".into(),
            client_id: client_id.into(),
            resource: "https://holder.example/mcp/buyer".into(),
            scopes: vec!["intents".into()],
            created_at: at(created_at),
            expires_at: at(expires_at),
            revoked: false,
        }
    }

    #[test]
    fn clients_without_a_grant_or_long_unused_are_purged_and_a_dry_run_counts_the_same() {
        let (_d, s) = store_with(|tx| {
            put_client(tx, "cli_fresh", NOW - DAY + 60, None)?;
            put_client(tx, "cli_never", NOW - DAY, None)?;
            put_client(tx, "cli_used", NOW - 200 * DAY, Some(NOW - 89 * DAY))?;
            put_client(tx, "cli_stale", NOW - 200 * DAY, Some(NOW - 90 * DAY))?;
            // Registered before grants were recorded, with a live authorization.
            put_client(tx, "cli_legacy", NOW - 200 * DAY, None)?;
            tx.put_record(Ns::TokenFamily, "fam_live", &family("cli_legacy", NOW - 10 * DAY, NOW + 20 * DAY))?;
            // An authorization that expired goes, and its client with it.
            put_client(tx, "cli_gone", NOW - 200 * DAY, Some(NOW - 120 * DAY))?;
            tx.put_record(Ns::TokenFamily, "fam_old", &family("cli_gone", NOW - 120 * DAY, NOW - DAY))
        });
        let dry = s.rehearse(|tx| purge_tx(tx, at(NOW).at())).unwrap();
        assert_eq!(dry, OAuthPurged { clients: 3, codes: 0, tokens: 0, families: 1 });
        assert_eq!(client_ids(&s).len(), 6, "dry: nothing removed");
        assert_eq!(s.write(|tx| purge_tx(tx, at(NOW).at())).unwrap(), dry);
        assert_eq!(client_ids(&s), vec!["cli_fresh", "cli_legacy", "cli_used"]);
        let legacy = s.read(|rx| rx.record::<ClientRecord>(Ns::Client, "cli_legacy")).unwrap().unwrap();
        assert_eq!(legacy.last_used_at, Some(at(NOW - 10 * DAY)), "its authorization's start is its last use");
    }

    #[test]
    fn an_unreadable_authorization_keeps_every_client_until_it_reads() {
        let (_d, s) = store_with(|tx| {
            put_client(tx, "cli_held", NOW - 200 * DAY, Some(NOW - 120 * DAY))?;
            put_client(tx, "cli_never", NOW - DAY, None)?;
            // cli_held's live authorization, with a start that does not read.
            let mut f = serde_json::to_value(family("cli_held", NOW - 10 * DAY, NOW + 20 * DAY)).unwrap();
            f["created_at"] = json!("last week");
            tx.put_record(Ns::TokenFamily, "fam_damaged", &f)
        });
        let purged = s.write(|tx| purge_tx(tx, at(NOW).at())).unwrap();
        assert_eq!(purged, OAuthPurged { clients: 0, codes: 0, tokens: 0, families: 0 });
        assert_eq!(client_ids(&s).len(), 2, "no client removed while an authorization does not read");
        // Once the damaged record is gone, the unused clients go as usual.
        s.write(|tx| tx.remove_record(Ns::TokenFamily, "fam_damaged")).unwrap();
        assert_eq!(s.write(|tx| purge_tx(tx, at(NOW).at())).unwrap().clients, 2);
        assert_eq!(client_ids(&s).len(), 0);
    }

    #[test]
    fn an_unreadable_token_time_is_an_error_naming_the_record_never_expired_and_the_purge_leaves_it() {
        let d = tempfile::tempdir().unwrap();
        let b = crate::base::test_base(d.path());
        let now = b.clock().now();
        let access = new_token(20);
        let key = token_hash(KIND_ACCESS, access.expose());
        b.store()
            .write(|tx| {
                let mut f = family("cli_a", NOW, NOW);
                let minted = Minted { access: access.clone(), refresh: None };
                issue(tx, "fam_a", &mut f, vec!["intents".into()], minted, Stamp::of(now))
            })
            .unwrap();
        let header = format!("Bearer {}", access.expose());
        assert!(super::super::genuine_token(&b, &header).is_ok(), "a fresh token is genuine");
        // Every time is one integer of microseconds.
        let raw = |b: &Base| b.store().read(|rx| rx.record::<Value>(Ns::Token, &key)).unwrap().unwrap();
        let stored = raw(&b);
        let until = Stamp::of(now) + Duration::seconds(ACCESS_TTL_SECS);
        assert_eq!(
            (&stored["issued_at"], &stored["expires_at"]),
            (&json!(Stamp::of(now).micros()), &json!(until.micros()))
        );
        // An end that does not read: an error naming the record by its hash, not "expired".
        let mut damaged = stored.clone();
        damaged["expires_at"] = json!("in an hour");
        b.store().write(|tx| tx.put_record(Ns::Token, &key, &damaged)).unwrap();
        match super::super::genuine_token(&b, &header) {
            Err(super::super::TokenProblem::Store(StoreError::Corrupt(k, cause))) => {
                assert_eq!(k, format!("token:{key}"));
                assert!(!k.contains(access.expose()), "the key holds the token's hash, never the token");
                assert!(cause.starts_with("invalid type: string \"in an hour\", expected i64"), "{cause}");
            }
            Err(_) => panic!("another refusal than an error naming the record"),
            Ok(_) => panic!("an unreadable token was honoured"),
        }
        // The purge, past every end: the family goes, the unreadable token is left as it was.
        let purged = b.store().write(|tx| purge_tx(tx, now + Duration::days(60))).unwrap();
        assert_eq!(purged, OAuthPurged { clients: 0, codes: 0, tokens: 0, families: 1 });
        assert_eq!(raw(&b), damaged);
    }
}
