//! Web sessions: the session cookie, who is signed in on a request, starting and ending
//! sessions (only the hash of a cookie token is stored).

use super::*;

/// Values of every `isto_session` cookie in the request (there may be several).
pub(super) fn session_cookies(headers: &HeaderMap) -> Vec<String> {
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
    let now = base.clock().now();
    for token in session_cookies(headers) {
        let key = session_key(&token);
        let found = base.store().read(|rx| -> Result<Option<(SessionRecord, Option<Account>)>> {
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
pub(super) fn start_session(tx: &mut Tx<'_>, now: OffsetDateTime, account_id: &str, method: &str) -> Result<Secret> {
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
pub(super) fn end_sessions(tx: &mut Tx<'_>, account_id: &str, keep: Option<&str>) -> Result<u64> {
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
    let secure = if base.settings().public_url.is_https() { "; Secure" } else { "" };
    format!("{SESSION_COOKIE}={token}; Path=/; Max-Age={SESSION_TTL_SECS}; HttpOnly; SameSite=Lax{secure}")
}

/// The `Set-Cookie` value that deletes the session cookie.
pub fn clear_cookie(base: &Base) -> String {
    let secure = if base.settings().public_url.is_https() { "; Secure" } else { "" };
    format!("{SESSION_COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax{secure}")
}

// ---------------------------------------------------------------------------
// throttling (per address, in the store)
