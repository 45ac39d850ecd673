//! Web sessions: who is signed in, given the session tokens a request carried (the web
//! face reads them from its cookies and sets the cookie: `crate::web`), starting and
//! ending sessions (only the hash of a cookie token is stored).

use super::*;

/// The session tokens a request carried: the values of its session cookies (there may
/// be several), as the web face read them from the `Cookie` header. `Debug` prints only
/// how many.
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

/// The session of the request, if one of its session `tokens` names one that exists,
/// has not expired and belongs to an enabled account. Reads the store.
pub fn signed_in(base: &Base, tokens: &SessionTokens) -> Option<Signed> {
    let now = base.clock().now();
    for token in &tokens.0 {
        let key = session_key(token);
        let found = base.store().read(|rx| -> Result<Option<(SessionRecord, Option<Account>)>> {
            let Some(s) = rx.record::<SessionRecord>(Ns::Session, &key)? else { return Ok(None) };
            let a = rx.record::<Account>(Ns::Account, &s.account_id)?;
            Ok(Some((s, a)))
        });
        match found {
            Ok(Some((session, Some(account)))) if !account.disabled && !expired(&session.expires_at, now) => {
                return Some(Signed { key, session, account });
            }
            Ok(_) => {}
            Err(e) => tracing::error!(error = %e, "reading a session failed"),
        }
    }
    None
}

/// The signed-in account `(id, role)` of the request's session `tokens`, if the
/// session exists, has not expired, and the account is not disabled. Reads the store
/// (call it on a blocking thread, or accept one short store read).
pub fn current(base: &Base, tokens: &SessionTokens) -> Option<(String, String)> {
    signed_in(base, tokens).map(|s| (s.account.id, s.account.role))
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

// ---------------------------------------------------------------------------
// throttling (per address, in the store)
