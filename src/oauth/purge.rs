//! What ends an authorization: revoking every token of an account, and the purge of
//! expired tokens, families, codes and unused clients (run by the sweeper through
//! [`crate::intents::Intents::purge`]).

use super::clients::ClientRecord;
use super::token::{CodeRecord, DecisionRecord, FamilyRecord, TokenRecord, CODE_KEEP_SECS};
use crate::base::Base;
use crate::records::Stamp;
use crate::store::{Ns, Reads, StoreError, Tx};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;
use time::{Duration, OffsetDateTime};

/// Revokes every token of an account (a disabled seller, a deleted account) and drops
/// its unused codes; returns the number of families revoked. Reads only each family's
/// and code's account (and whether it is revoked or used), so that a record of the
/// account whose time does not read is revoked too, and a damaged one of another account
/// does not stop the others.
pub fn revoke_account(base: &Base, account_id: &str) -> Result<u64, StoreError> {
    let of_account = |v: &Value| v.get("account_id").and_then(Value::as_str) == Some(account_id);
    base.store().write(|tx| {
        let mut n = 0;
        for (id, mut f) in tx.records::<Value>(Ns::TokenFamily)? {
            if of_account(&f) && f.get("revoked") != Some(&Value::Bool(true)) {
                f["revoked"] = Value::Bool(true);
                tx.put_record(Ns::TokenFamily, &id, &f)?;
                n += 1;
            }
        }
        for (key, c) in tx.records::<Value>(Ns::AuthCode)? {
            if of_account(&c) && c.get("family").is_none_or(Value::is_null) {
                tx.remove_record(Ns::AuthCode, &key)?;
            }
        }
        Ok(n)
    })
}

/// A registered client is removed when it completed no grant within this many seconds of
/// its registration.
pub const CLIENT_GRANT_WINDOW_SECS: i64 = 86400;
/// A registered client is removed when its last grant (code exchange or refresh) is this
/// many seconds old and it holds no live authorization.
pub const CLIENT_UNUSED_SECS: i64 = 90 * 86400;

/// What [`purge_tx`] removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OAuthPurged {
    /// Registered clients that completed no grant within a day of registering, or whose
    /// last grant is 90 days old.
    pub clients: u64,
    /// Authorization codes a day after their expiry.
    pub codes: u64,
    /// Expired access and refresh tokens.
    pub tokens: u64,
    /// Authorizations (token families) whose every token expired.
    pub families: u64,
}

/// [`purge_tx`] in a write transaction of its own at the holder's time; returns how many
/// records went (tests; `isto serve` purges through `Intents::purge`).
#[cfg(test)]
pub(crate) fn sweep(base: &Base) -> Result<u64, StoreError> {
    let n = base.store().write(|tx| purge_tx(tx, base.clock().now()))?;
    Ok(n.clients + n.codes + n.tokens + n.families)
}

/// Removes, in `tx` at `now`: expired tokens, families whose every token
/// expired, codes a day after their expiry, and registered clients that are not in use
/// — no authorization left and either no grant ever, [`CLIENT_GRANT_WINDOW_SECS`] after
/// registering, or none for [`CLIENT_UNUSED_SECS`]. A client registered before grants
/// were recorded on it ([`ClientRecord::last_used_at`] absent) that still holds an
/// authorization gets that authorization's start as its last use. Metadata-document
/// clients are never stored, so never purged. Run by
/// [`crate::intents::Intents::purge`]. A record that does not decode (a time that does
/// not read, say) is left as it is with a warning naming it
/// ([`Reads::readable_records`]): nothing is deleted on the strength of a value that
/// could not be read; while any authorization does not decode, no client is removed
/// (its client could be the one it holds).
pub fn purge_tx(tx: &mut Tx<'_>, now: OffsetDateTime) -> Result<OAuthPurged, StoreError> {
    let now = Stamp::of(now);
    let mut n = OAuthPurged::default();
    for (key, t) in tx.readable_records::<TokenRecord>(Ns::Token)?.0 {
        if now >= t.expires_at {
            tx.remove_record(Ns::Token, &key)?;
            n.tokens += 1;
        }
    }
    // Client id → start of its newest authorization still held.
    let mut held: HashMap<String, Stamp> = HashMap::new();
    // A family that does not decode may hold any client: no client is removed this pass.
    let (families, families_unread) = tx.readable_records::<FamilyRecord>(Ns::TokenFamily)?;
    for (key, f) in families {
        if now >= f.expires_at {
            tx.remove_record(Ns::TokenFamily, &key)?;
            n.families += 1;
        } else {
            let e = held.entry(f.client_id.clone()).or_insert(f.created_at);
            *e = (*e).max(f.created_at);
        }
    }
    for (key, c) in tx.readable_records::<CodeRecord>(Ns::AuthCode)?.0 {
        if now >= c.expires_at + Duration::seconds(CODE_KEEP_SECS) {
            tx.remove_record(Ns::AuthCode, &key)?;
            n.codes += 1;
        }
    }
    // Answered consent forms whose token can no longer be posted (counted with codes).
    for (key, d) in tx.readable_records::<DecisionRecord>(Ns::AuthDecision)?.0 {
        if now >= d.expires_at {
            tx.remove_record(Ns::AuthDecision, &key)?;
            n.codes += 1;
        }
    }
    for (id, mut c) in tx.readable_records::<ClientRecord>(Ns::Client)?.0 {
        if let Some(started) = held.get(&id) {
            if c.last_used_at.is_none() {
                c.last_used_at = Some(*started);
                tx.put_record(Ns::Client, &id, &c)?;
            }
            continue;
        }
        let unused = match c.last_used_at {
            None => now - c.client_id_issued_at >= Duration::seconds(CLIENT_GRANT_WINDOW_SECS),
            Some(t) => now - t >= Duration::seconds(CLIENT_UNUSED_SECS),
        };
        if unused && families_unread == 0 {
            tx.remove_record(Ns::Client, &id)?;
            n.clients += 1;
        }
    }
    Ok(n)
}
