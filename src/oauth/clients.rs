//! OAuth clients: RFC 7591 dynamic registration, client ID metadata documents
//! (draft-ietf-oauth-client-id-metadata-document, MCP 2025-11-25), redirect URI rules and
//! client authentication at the token and revocation endpoints.
//!
//! Redirect URIs: `https://…`, `http://` on a loopback host (`127.0.0.1`, `[::1]`,
//! `localhost`; any port matches, RFC 8252 §7.3), or a private-use scheme for native apps
//! (RFC 8252 §7.1, e.g. `cursor://…`); never a fragment or user info, never
//! `javascript:`, `data:`, `file:` and the like. Matching is exact string comparison
//! except the loopback port.
//!
//! A client_id that is an `https://` URL (or, when the holder itself is served over plain
//! http, an `http://` loopback URL, for local testing) is a metadata document: fetched
//! with GET (5 s, at most 64 KiB, no redirects, no proxy), its `client_id` must equal the
//! URL, only public clients (`none`) are accepted, and it is cached in memory for its
//! `Cache-Control: max-age` (at most a day) or an hour.

use super::error::{Internal, OAuthError};
use super::form::Credentials;
use super::{blocking, now_stamp, Shared, SCOPES};
use crate::base::quota::{Key, Rule};
use crate::crypto::{new_id, new_token, token_hash};
use crate::net::ClientAddr;
use crate::outbound::Fetcher;
use crate::records::Stamp;
use crate::store::{Ns, Reads, StoreError};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;
use url::Url;

/// Hash kind of client secrets.
pub const KIND_SECRET: &str = "oauth-client-secret";
/// Most redirect URIs per client.
pub const MAX_REDIRECT_URIS: usize = 10;
/// Longest redirect URI, bytes.
const MAX_URI_LEN: usize = 2000;
/// Longest client_name and other short strings, characters.
const MAX_NAME_CHARS: usize = 200;
/// Largest metadata document, bytes.
const MAX_DOCUMENT: usize = 64 * 1024;
/// Metadata document fetch timeout.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// Cache lifetime of a metadata document without `max-age`, seconds.
const CACHE_DEFAULT_SECS: i64 = 3600;
/// Longest cache lifetime, seconds.
const CACHE_MAX_SECS: i64 = 86400;
/// Most cached documents (past it, expired ones go first: `make_room`).
const CACHE_MAX_ENTRIES: usize = 1000;

/// Private-use schemes without a dot that well-known MCP clients register; every other
/// private-use scheme must be reverse-DNS (RFC 8252 §7.1), so that no OS or browser
/// handler (`view-source:`, `ms-settings:` …) can be named (PROTOCOL.md §7).
const KNOWN_APP_SCHEMES: [&str; 3] = ["cursor", "vscode", "vscode-insiders"];

/// A client as registered (or read from its metadata document).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ClientRecord {
    /// `cli_…` for registered clients, the document URL for metadata documents.
    pub client_id: String,
    /// Display name.
    #[serde(default)]
    pub client_name: Option<String>,
    /// Home page.
    #[serde(default)]
    pub client_uri: Option<String>,
    /// Registered redirect URIs.
    pub redirect_uris: Vec<String>,
    /// `authorization_code` and/or `refresh_token`.
    pub grant_types: Vec<String>,
    /// `["code"]`.
    pub response_types: Vec<String>,
    /// `none`, `client_secret_post` or `client_secret_basic`.
    pub token_endpoint_auth_method: String,
    /// Registered scope (space-separated), known scopes only.
    #[serde(default)]
    pub scope: Option<String>,
    /// RFC 7591 software_id.
    #[serde(default)]
    pub software_id: Option<String>,
    /// RFC 7591 software_version.
    #[serde(default)]
    pub software_version: Option<String>,
    /// Keyed hash of the client secret (confidential clients,
    /// [`crate::crypto::KeyRing::keyed_hash`]); an older unkeyed [`token_hash`] is
    /// rewritten keyed at the next successful authentication.
    #[serde(default)]
    pub client_secret_hash: Option<String>,
    /// When it was registered (a metadata-document client: fetched).
    pub client_id_issued_at: Stamp,
    /// Whether this client came from a metadata document.
    #[serde(default)]
    pub metadata_document: bool,
    /// When it last got a grant (code exchange or refresh); `None` until its first
    /// (see [`super::purge::purge_tx`]).
    #[serde(default)]
    pub last_used_at: Option<Stamp>,
}

impl ClientRecord {
    /// The RFC 7591 §3.2.1 view (without the secret).
    fn registration_response(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("client_id".into(), json!(self.client_id));
        m.insert("client_id_issued_at".into(), json!(self.client_id_issued_at.at().unix_timestamp()));
        m.insert("redirect_uris".into(), json!(self.redirect_uris));
        m.insert("grant_types".into(), json!(self.grant_types));
        m.insert("response_types".into(), json!(self.response_types));
        m.insert("token_endpoint_auth_method".into(), json!(self.token_endpoint_auth_method));
        for (k, v) in [
            ("client_name", &self.client_name),
            ("client_uri", &self.client_uri),
            ("scope", &self.scope),
            ("software_id", &self.software_id),
            ("software_version", &self.software_version),
        ] {
            if let Some(v) = v {
                m.insert(k.into(), json!(v));
            }
        }
        m
    }

    /// Whether the client may use `grant_type`.
    pub fn allows_grant(&self, grant_type: &str) -> bool {
        self.grant_types.iter().any(|g| g == grant_type)
    }

    /// The registered redirect URI `requested` matches, if any.
    pub fn redirect_uri_for(&self, requested: &str) -> Option<&str> {
        self.redirect_uris.iter().find(|r| redirect_matches(r, requested)).map(String::as_str)
    }
}

fn is_loopback(u: &Url) -> bool {
    // `Url` lowercases host names and writes IPv6 literals in brackets, compressed.
    matches!(u.host_str(), Some("127.0.0.1" | "[::1]" | "localhost"))
}

/// Checks one redirect URI for registration.
///
/// # Errors
/// What is wrong with it.
pub fn check_redirect_uri(s: &str) -> Result<(), String> {
    if s.len() > MAX_URI_LEN {
        return Err(format!("redirect URIs must be at most {MAX_URI_LEN} bytes"));
    }
    let u = Url::parse(s).map_err(|_| format!("{s:?} is not an absolute URI"))?;
    if s.contains('#') {
        return Err(format!("{s:?} must not contain a fragment"));
    }
    if !u.username().is_empty() || u.password().is_some() {
        return Err(format!("{s:?} must not contain user information"));
    }
    // `https:///cb` parses with the host "cb": the authority must really be there.
    let authority = s.split_once("://").map(|(_, rest)| rest.split(['/', '?']).next().unwrap_or_default());
    match u.scheme() {
        "https" | "http" if authority.is_none_or(str::is_empty) => Err(format!("{s:?} has no host")),
        "https" | "http" if u.host_str().is_some_and(|h| h.contains('*')) => {
            Err(format!("{s:?}: wildcards are not allowed; register each redirect URI exactly"))
        }
        "https" if u.host().is_some() => Ok(()),
        "https" => Err(format!("{s:?} has no host")),
        "http" if is_loopback(&u) => Ok(()),
        "http" => Err(format!("{s:?}: plain http is allowed only for loopback hosts (127.0.0.1, [::1], localhost)")),
        scheme if scheme.contains('.') || KNOWN_APP_SCHEMES.contains(&scheme) => Ok(()),
        scheme => Err(format!(
            "{s:?}: the {scheme}: scheme is not allowed; use https, loopback http, or a private-use scheme in \
             reverse-DNS form such as com.example.app:/callback (RFC 8252 §7.1)"
        )),
    }
}

/// Whether a requested redirect URI matches a registered one: exactly, or for `http`
/// loopback URIs, exactly but for the port (RFC 8252 §7.3).
pub fn redirect_matches(registered: &str, requested: &str) -> bool {
    if registered == requested {
        return true;
    }
    let (Ok(r), Ok(q)) = (Url::parse(registered), Url::parse(requested)) else { return false };
    r.scheme() == "http"
        && q.scheme() == "http"
        && is_loopback(&r)
        && r.host() == q.host()
        && r.path() == q.path()
        && r.query() == q.query()
        && !requested.contains('#')
        && q.username().is_empty()
        && q.password().is_none()
}

/// An RFC 7591 §3.2.2 `invalid_client_metadata` refusal saying `why`.
fn meta_error(why: impl Into<String>) -> (&'static str, String) {
    ("invalid_client_metadata", why.into())
}

fn short_string(m: &Map<String, Value>, key: &str) -> Result<Option<String>, (&'static str, String)> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => {
            if let Some(c) = s.chars().find(|c| crate::text::hidden(*c)) {
                return Err(meta_error(format!(
                    "{key} must not contain control, bidirectional or invisible formatting characters (found U+{:04X})",
                    u32::from(c)
                )));
            }
            let clean = s.trim().to_owned();
            if clean.is_empty() && !s.is_empty() {
                return Err(meta_error(format!("{key} must not be blank (leave it out instead)")));
            }
            if clean.chars().count() > MAX_NAME_CHARS {
                return Err(meta_error(format!("{key} must be at most {MAX_NAME_CHARS} characters")));
            }
            Ok((!clean.is_empty()).then_some(clean))
        }
        Some(_) => Err(meta_error(format!("{key} must be a string"))),
    }
}

fn string_list(m: &Map<String, Value>, key: &str) -> Result<Option<Vec<String>>, (&'static str, String)> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| v.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .map(Some)
            .ok_or_else(|| meta_error(format!("{key} must be an array of strings"))),
        Some(_) => Err(meta_error(format!("{key} must be an array of strings"))),
    }
}

/// Validates client metadata (RFC 7591 §2) into a record. `document` selects the rules
/// of metadata documents (public clients only, default auth method `none`).
///
/// # Errors
/// `(error code, description)` per RFC 7591 §3.2.2.
pub fn client_from_metadata(
    m: &Map<String, Value>,
    client_id: String,
    issued_at: Stamp,
    document: bool,
) -> Result<ClientRecord, (&'static str, String)> {
    let redirect_uris = match m.get("redirect_uris") {
        Some(Value::Array(_)) => string_list(m, "redirect_uris")
            .map_err(|_| ("invalid_redirect_uri", "redirect_uris must be an array of strings".to_owned()))?
            .unwrap_or_default(),
        _ => return Err(("invalid_redirect_uri", "redirect_uris (an array of URIs) is required".to_owned())),
    };
    if redirect_uris.is_empty() || redirect_uris.len() > MAX_REDIRECT_URIS {
        return Err(("invalid_redirect_uri", format!("give 1 to {MAX_REDIRECT_URIS} redirect_uris")));
    }
    for u in &redirect_uris {
        check_redirect_uri(u).map_err(|e| ("invalid_redirect_uri", e))?;
    }
    let default_auth = if document { "none" } else { "client_secret_basic" };
    let auth = short_string(m, "token_endpoint_auth_method")?.unwrap_or_else(|| default_auth.to_owned());
    if !super::metadata::AUTH_METHODS.contains(&auth.as_str()) {
        return Err(meta_error("token_endpoint_auth_method must be none, client_secret_post or client_secret_basic"));
    }
    if document && auth != "none" {
        return Err(meta_error("a client ID metadata document must declare token_endpoint_auth_method none"));
    }
    let grant_types = string_list(m, "grant_types")?
        .unwrap_or_else(|| vec!["authorization_code".to_owned(), "refresh_token".to_owned()]);
    if grant_types.iter().any(|g| g != "authorization_code" && g != "refresh_token")
        || !grant_types.iter().any(|g| g == "authorization_code")
    {
        return Err(meta_error("grant_types must include authorization_code and may add refresh_token (nothing else)"));
    }
    let response_types = string_list(m, "response_types")?.unwrap_or_else(|| vec!["code".to_owned()]);
    if response_types.iter().any(|r| r != "code") || response_types.is_empty() {
        return Err(meta_error("response_types must be [\"code\"]"));
    }
    let client_uri = short_string(m, "client_uri")?;
    if let Some(u) = &client_uri {
        if Url::parse(u).map(|u| u.scheme() != "https" && u.scheme() != "http").unwrap_or(true) {
            return Err(meta_error("client_uri must be an http(s) URL"));
        }
    }
    let scope = short_string(m, "scope")?.and_then(|s| {
        let known: Vec<&str> = s.split(' ').filter(|x| SCOPES.contains(x)).collect();
        (!known.is_empty()).then(|| known.join(" "))
    });
    Ok(ClientRecord {
        client_id,
        client_name: short_string(m, "client_name")?,
        client_uri,
        redirect_uris,
        grant_types,
        response_types,
        token_endpoint_auth_method: auth,
        scope,
        software_id: short_string(m, "software_id")?,
        software_version: short_string(m, "software_version")?,
        client_secret_hash: None,
        client_id_issued_at: issued_at,
        metadata_document: document,
        last_used_at: None,
    })
}

/// Dynamic client registration, `POST /oauth/register` (RFC 7591): a JSON `body` of
/// client metadata from `client_addr` → the RFC 7591 §3.2.1 registration response
/// (with client_secret unless `token_endpoint_auth_method` is `none`), answered `201`.
/// Past `quotas.registrations_per_client_per_hour` per client address: `429`
/// ([`OAuthError::quota`]), nothing stored; refused metadata is not counted.
///
/// # Errors
/// The RFC 7591 §3.2.2 error to answer.
pub async fn register_client(
    ctx: &Shared,
    client_addr: Option<ClientAddr>,
    body: &[u8],
) -> Result<Map<String, Value>, OAuthError> {
    let Ok(Value::Object(m)) = serde_json::from_slice::<Value>(body) else {
        return Err(OAuthError::bad("invalid_client_metadata", "the body must be a JSON object of client metadata"));
    };
    let issued = now_stamp(&ctx.base);
    let now = issued.at().unix_timestamp();
    let mut client =
        client_from_metadata(&m, new_id("cli_"), issued, false).map_err(|(code, why)| OAuthError::bad(code, why))?;
    let quota_key = Key::Client(client_addr.and_then(ClientAddr::key));
    if let Err(e) = ctx.base.quotas().take(Rule::RegistrationsPerClient, &quota_key, now) {
        tracing::info!(rule = e.rule.setting(), "oauth: registration refused: quota used up");
        return Err(OAuthError::quota(&e));
    }
    let secret = (client.token_endpoint_auth_method != "none").then(|| new_token(32));
    if let Some(s) = &secret {
        let Some(hash) = ctx.base.keys().keyed_hash(KIND_SECRET, s.expose()) else {
            ctx.base.quotas().refund(Rule::RegistrationsPerClient, &quota_key, now);
            return Err(Internal::logged("oauth register", &"the key ring has no key").into());
        };
        client.client_secret_hash = Some(hash);
    }
    if let Err(e) = save(ctx, "oauth register", &client).await {
        ctx.base.quotas().refund(Rule::RegistrationsPerClient, &quota_key, now);
        return Err(e.into());
    }
    tracing::info!(client_id = %client.client_id, "oauth: client registered");
    let mut out = client.registration_response();
    if let Some(s) = &secret {
        out.insert("client_secret".into(), json!(s.expose()));
        out.insert("client_secret_expires_at".into(), json!(0));
    }
    Ok(out)
}

/// Stores `client` (operation `op`).
async fn save(ctx: &Shared, op: &'static str, client: &ClientRecord) -> Result<(), Internal> {
    let record = client.clone();
    blocking(ctx, op, move |h| h.store().write(|tx| tx.put_record(Ns::Client, &record.client_id, &record))).await
}

/// The metadata-document client cache and fetcher.
pub struct Cimd {
    http: Fetcher,
    cache: Mutex<HashMap<String, (ClientRecord, i64)>>,
    allow_loopback_http: bool,
}

impl Cimd {
    /// A fetcher; `allow_loopback_http` also accepts `http://` loopback document URLs.
    pub fn new(allow_loopback_http: bool) -> Self {
        Self {
            http: Fetcher::new(FETCH_TIMEOUT, MAX_DOCUMENT, allow_loopback_http),
            cache: Mutex::new(HashMap::new()),
            allow_loopback_http,
        }
    }

    /// Whether `client_id` is to be treated as a metadata document URL.
    pub fn is_document_url(&self, client_id: &str) -> bool {
        client_id.starts_with("https://") || (self.allow_loopback_http && client_id.starts_with("http://"))
    }

    fn check_url(&self, client_id: &str) -> Result<Url, String> {
        let u = Url::parse(client_id).map_err(|_| "the client_id is not a URL".to_owned())?;
        if u.as_str() != client_id {
            return Err("the client_id URL is not in canonical form".to_owned());
        }
        let scheme_ok = u.scheme() == "https" || (self.allow_loopback_http && u.scheme() == "http" && is_loopback(&u));
        if !scheme_ok {
            return Err("the client_id URL must use https".to_owned());
        }
        if u.fragment().is_some() || !u.username().is_empty() || u.password().is_some() {
            return Err("the client_id URL must have no fragment or user information".to_owned());
        }
        if u.path() == "/" {
            return Err("the client_id URL must have a path".to_owned());
        }
        Ok(u)
    }

    /// The client described by the document at `client_id`, from the cache or fetched.
    ///
    /// # Errors
    /// Why the document cannot be used (for the error page and the log).
    pub async fn get(&self, client_id: &str, at: Stamp) -> Result<ClientRecord, String> {
        let now = at.at().unix_timestamp();
        let cached = self.cache.lock().ok().and_then(|c| c.get(client_id).filter(|(_, until)| now < *until).cloned());
        if let Some((client, _)) = cached {
            return Ok(client);
        }
        let url = self.check_url(client_id)?;
        let (doc, max_age) = self.http.get_json(url).await.map_err(|e| {
            // One answer for every failure (PROTOCOL.md §7): the kind only in the log.
            tracing::info!(reason = %e, "oauth: client metadata document not usable");
            "the client metadata document could not be fetched".to_owned()
        })?;
        let Value::Object(m) = doc else { return Err("the metadata document is not a JSON object".to_owned()) };
        if m.get("client_id").and_then(Value::as_str) != Some(client_id) {
            return Err("the metadata document's client_id is not its URL".to_owned());
        }
        let client = client_from_metadata(&m, client_id.to_owned(), at, true).map_err(|(_, why)| why)?;
        let ttl = max_age.map_or(CACHE_DEFAULT_SECS, |a| a.min(CACHE_MAX_SECS));
        if ttl > 0 {
            if let Ok(mut cache) = self.cache.lock() {
                crate::base::quota::make_room(&mut cache, CACHE_MAX_ENTRIES, |(_, until)| now < *until);
                cache.insert(client_id.to_owned(), (client.clone(), now + ttl));
            }
        }
        Ok(client)
    }
}

/// The client with this id: registered, or a metadata document. `Ok(Err(why))` when
/// there is no usable client.
///
/// # Errors
/// [`Internal`] when the store fails.
pub async fn find(ctx: &Shared, client_id: &str) -> Result<Result<ClientRecord, String>, Internal> {
    if ctx.cimd.is_document_url(client_id) {
        let got = ctx.cimd.get(client_id, now_stamp(&ctx.base)).await;
        if let Err(why) = &got {
            let host = Url::parse(client_id).ok().and_then(|u| u.host_str().map(str::to_owned)).unwrap_or_default();
            tracing::warn!(host, why = %why, "oauth: client metadata document refused");
        }
        return Ok(got);
    }
    if client_id.len() > 100 {
        return Ok(Err("unknown client_id".to_owned()));
    }
    let id = client_id.to_owned();
    let found = blocking(ctx, "oauth client lookup", move |h| {
        h.store().read(|rx| -> Result<_, StoreError> { rx.record::<ClientRecord>(Ns::Client, &id) })
    })
    .await?;
    Ok(found.ok_or_else(|| "unknown client_id (register the client first)".to_owned()))
}

/// Authenticates the client of a token or revocation request: the client must exist,
/// and a confidential client must present its secret.
///
/// # Errors
/// `invalid_client` (401), or `server_error` — also when a confidential client has no
/// stored secret hash (logged; it is never taken for a public client).
pub async fn authenticate(ctx: &Shared, creds: &Credentials) -> Result<ClientRecord, OAuthError> {
    let Some(id) = creds.client_id.as_deref() else {
        return Err(OAuthError::invalid_client(creds.basic));
    };
    let mut client = find(ctx, id).await?.map_err(|_| OAuthError::invalid_client(creds.basic))?;
    if client.client_secret_hash.is_none() && client.token_endpoint_auth_method != "none" {
        let why = format!(
            "client {} is registered with token_endpoint_auth_method {} but its record holds no secret hash",
            client.client_id, client.token_endpoint_auth_method
        );
        return Err(Internal::logged("oauth client authentication", &why).into());
    }
    if let Some(want) = &client.client_secret_hash {
        let Some(secret) = &creds.secret else { return Err(OAuthError::invalid_client(creds.basic)) };
        match secret_matches(ctx.base.keys(), want, secret) {
            SecretCheck::Keyed => {}
            SecretCheck::Legacy => {
                // Stored before secrets were keyed: rewrite it keyed now.
                if let Some(keyed) = ctx.base.keys().keyed_hash(KIND_SECRET, secret) {
                    client.client_secret_hash = Some(keyed);
                    save(ctx, "oauth client secret rehash", &client).await?;
                    tracing::info!(client_id = %client.client_id, "oauth: client secret hash rewritten keyed");
                }
            }
            SecretCheck::No => return Err(OAuthError::invalid_client(creds.basic)),
        }
    }
    Ok(client)
}

/// How a presented client secret compares with the stored hash.
#[derive(Debug, PartialEq, Eq)]
enum SecretCheck {
    /// It matches the keyed hash.
    Keyed,
    /// It matches an older unkeyed hash (to be rewritten keyed).
    Legacy,
    /// It does not match.
    No,
}

/// Compares `secret` with `stored` in constant time: a keyed hash (`hmac1:…`) with
/// [`crate::crypto::KeyRing::keyed_hash_matches`], an older unkeyed one with its SHA-256.
fn secret_matches(keys: &crate::crypto::KeyRing, stored: &str, secret: &str) -> SecretCheck {
    if stored.starts_with("hmac1:") {
        return if keys.keyed_hash_matches(stored, KIND_SECRET, secret) { SecretCheck::Keyed } else { SecretCheck::No };
    }
    let got = token_hash(KIND_SECRET, secret);
    if bool::from(subtle::ConstantTimeEq::ct_eq(got.as_bytes(), stored.as_bytes())) {
        SecretCheck::Legacy
    } else {
        SecretCheck::No
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirect_uri_rules() {
        assert!(check_redirect_uri("https://app.example/cb").is_ok());
        assert!(check_redirect_uri("http://127.0.0.1/cb").is_ok());
        assert!(check_redirect_uri("http://[::1]:8080/cb").is_ok());
        assert!(check_redirect_uri("http://localhost:3000/cb").is_ok());
        assert!(check_redirect_uri("cursor://anysphere.cursor-retrieval/oauth/callback").is_ok());
        for (bad, rule) in [
            ("http://app.example/cb", "plain http is allowed only for loopback hosts"),
            ("https://app.example/cb#x", "must not contain a fragment"),
            ("javascript:alert(1)", "the javascript: scheme is not allowed"),
            ("https://user:pw@app.example/cb", "must not contain user information"),
            ("/relative", "is not an absolute URI"),
        ] {
            let e = check_redirect_uri(bad).unwrap_err();
            assert!(e.contains(rule), "{bad}: {e}");
        }
        // PROTOCOL.md §7: no wildcards, empty hosts or handler schemes; private-use
        // schemes in reverse-DNS form.
        for bad in [
            "https://*.client.example/cb",
            "https:///cb",
            "view-source:https://app.example/",
            "jar:https://app.example/x.jar!/",
            "ms-settings:privacy",
            "data:text/html,hi",
            "file:///etc/passwd",
            "myapp:/cb",
        ] {
            let e = check_redirect_uri(bad).unwrap_err();
            assert!(e.contains(bad), "{bad}: {e}");
        }
        assert!(check_redirect_uri("com.example.app:/oauth2redirect").is_ok());
        assert!(check_redirect_uri("vscode://vscode.mcp/callback").is_ok());
    }

    #[test]
    fn client_secrets_are_keyed_and_legacy_hashes_still_match() {
        let keys = crate::crypto::KeyRing::ephemeral();
        let keyed = keys.keyed_hash(KIND_SECRET, "s3cret").unwrap();
        assert_eq!(secret_matches(&keys, &keyed, "s3cret"), SecretCheck::Keyed);
        assert_eq!(secret_matches(&keys, &keyed, "other"), SecretCheck::No);
        assert_eq!(secret_matches(&crate::crypto::KeyRing::ephemeral(), &keyed, "s3cret"), SecretCheck::No);
        let legacy = token_hash(KIND_SECRET, "s3cret");
        assert_eq!(secret_matches(&keys, &legacy, "s3cret"), SecretCheck::Legacy);
        assert_eq!(secret_matches(&keys, &legacy, "other"), SecretCheck::No);
    }

    #[test]
    fn loopback_any_port_only() {
        assert!(redirect_matches("http://127.0.0.1/cb", "http://127.0.0.1:55123/cb"));
        assert!(redirect_matches("http://127.0.0.1:1000/cb", "http://127.0.0.1:2000/cb"));
        assert!(redirect_matches("http://[::1]/cb", "http://[::1]:9/cb"));
        assert!(!redirect_matches("http://127.0.0.1/cb", "http://127.0.0.1:5/other"));
        assert!(!redirect_matches("http://127.0.0.1/cb", "http://localhost:5/cb"));
        assert!(!redirect_matches("https://app.example/cb", "https://app.example:444/cb"));
        assert!(!redirect_matches("https://app.example/cb", "https://app.example/cb/"));
        assert!(!redirect_matches("http://127.0.0.1/cb?a=1", "http://127.0.0.1:7/cb?a=2"));
    }
}
