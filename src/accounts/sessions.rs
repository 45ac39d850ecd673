//! Web sessions: who is signed in, given the session tokens a request carried (read
//! from its cookies by `crate::web`), starting and ending sessions.

use super::*;

/// The values of a request's session cookies (there may be several). `Debug` prints
/// only how many.
#[derive(Clone, Default)]
pub struct SessionTokens(Vec<String>);

impl SessionTokens {
    /// Longest token value looked up, bytes (a real one is 32 characters).
    pub const MAX_LEN: usize = 200;

    /// The tokens among `values`: empty values and values over [`Self::MAX_LEN`] bytes
    /// are dropped (no session has them).
    pub fn new(values: impl IntoIterator<Item = String>) -> Self {
        Self(values.into_iter().filter(|v| !v.is_empty() && v.len() <= Self::MAX_LEN).collect())
    }
}

impl std::fmt::Debug for SessionTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SessionTokens({} values)", self.0.len())
    }
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

/// The session of the request, if one of its `tokens` names a valid one
/// ([`session_for`]; an unreadable one is not honoured, and the error is logged).
pub fn signed_in(base: &Base, tokens: &SessionTokens) -> Option<Signed> {
    for token in &tokens.0 {
        match session_for(base, token) {
            Ok(Some(signed)) => return Some(signed),
            Ok(None) => {}
            Err(e) => tracing::error!(error = %e, "reading a session failed"),
        }
    }
    None
}

/// The session of one cookie `token`, if it exists, has not expired and belongs to an
/// enabled account ([`signed_in`] over each token of a request).
///
/// # Errors
/// Storage errors; [`StoreError::Corrupt`] naming the session (`session:` and its
/// token's hash) or its account (`account:` and its id) when a stored record (a time,
/// say) does not read — never taken for an expired session.
pub fn session_for(base: &Base, token: &str) -> Result<Option<Signed>> {
    let now = base.clock().now();
    let key = session_key(token);
    let found = base.store().read(|rx| -> Result<Option<(SessionRecord, Option<Account>)>> {
        let Some(s) = rx.record::<SessionRecord>(Ns::Session, &key)? else { return Ok(None) };
        let a = rx.record::<Account>(Ns::Account, &s.account_id)?;
        Ok(Some((s, a)))
    })?;
    Ok(match found {
        Some((session, Some(account))) if !account.disabled && !expired(session.expires_at, now) => {
            Some(Signed { key, session, account })
        }
        _ => None,
    })
}

/// Starts a session for `account_id` in `tx`; returns the cookie token.
pub(super) fn start_session(tx: &mut Tx<'_>, now: OffsetDateTime, account_id: &str, method: &str) -> Result<Secret> {
    let token = crypto::new_token(TOKEN_BYTES);
    let rec = SessionRecord {
        account_id: account_id.to_owned(),
        created_at: Stamp::of(now),
        expires_at: Stamp::of(now + time::Duration::seconds(SESSION_TTL_SECS)),
        last_seen: None,
        method: method.to_owned(),
    };
    tx.put_record(Ns::Session, &session_key(token.expose()), &rec)?;
    Ok(token)
}

/// Deletes every session of `account_id` except the one stored under `keep`. Reads only
/// each session's `account_id`, so that one whose other fields do not read is deleted
/// too.
pub(super) fn end_sessions(tx: &mut Tx<'_>, account_id: &str, keep: Option<&str>) -> Result<u64> {
    let mut n = 0;
    for (key, s) in tx.records::<serde_json::Value>(Ns::Session)? {
        if s.get("account_id").and_then(serde_json::Value::as_str) == Some(account_id) && keep != Some(key.as_str()) {
            tx.remove_record(Ns::Session, &key)?;
            n += 1;
        }
    }
    Ok(n)
}
