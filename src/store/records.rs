//! Namespaced records: `<namespace>:<key>` → JSON in one table, for modules with few,
//! simple records (OAuth clients, codes, tokens; accounts; sessions; …).

use super::schema::RECORDS;
use super::{decode, encode, Result, Tables, Tx};
use serde::{de::DeserializeOwned, Serialize};
use std::ops::Bound;

/// A namespace of the `records` table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ns {
    /// OAuth clients by client_id.
    Client,
    /// OAuth authorization codes by hash.
    AuthCode,
    /// OAuth access and refresh tokens by hash.
    Token,
    /// OAuth refresh-token families by id.
    TokenFamily,
    /// People's accounts by id.
    Account,
    /// Accounts by folded e-mail.
    AccountEmail,
    /// Web sessions by hash.
    Session,
    /// One-time sign-in links by hash.
    SignInLink,
    /// Login throttling counters by key.
    Throttle,
    /// Sellers of the seller endpoint by id.
    Seller,
    /// Pending renewals by hash.
    Renewal,
    /// Answered OAuth consent forms (the Allow form is single-use) by hash.
    AuthDecision,
    /// People who confirmed an intent, by person key: the unix second of the last
    /// confirmation (the reserved share of the confirmation-mail quota).
    Confirmed,
}

impl Ns {
    /// The key prefix, `name:`.
    pub(super) fn prefix(self) -> &'static str {
        match self {
            Self::Client => "client:",
            Self::AuthCode => "authcode:",
            Self::Token => "token:",
            Self::TokenFamily => "family:",
            Self::Account => "account:",
            Self::AccountEmail => "account-email:",
            Self::Session => "session:",
            Self::SignInLink => "signin:",
            Self::Throttle => "throttle:",
            Self::Seller => "seller:",
            Self::Renewal => "renewal:",
            Self::AuthDecision => "authdecision:",
            Self::Confirmed => "confirmed:",
        }
    }

    pub(super) fn key(self, key: &str) -> String {
        format!("{}{key}", self.prefix())
    }
}

/// Every record of `ns`, `(key without prefix, value)` in key order, each decoded on its
/// own: one that does not decode is its [`super::StoreError::Corrupt`] (naming its key).
pub(super) fn each<T: DeserializeOwned, R: Tables + ?Sized>(r: &R, ns: Ns) -> Result<Vec<(String, Result<T>)>> {
    let p = ns.prefix();
    let to = format!("{p}\u{10ffff}");
    let rows = r.table(RECORDS)?.range((Bound::Included(p), Bound::Excluded(to.as_str())), false, usize::MAX)?;
    Ok(rows.into_iter().map(|(key, v)| (key[p.len()..].to_owned(), decode(&key, &v))).collect())
}

impl Tx<'_> {
    /// Inserts or replaces a record of a namespace.
    pub fn put_record<T: Serialize>(&mut self, ns: Ns, key: &str, value: &T) -> Result<()> {
        // Errors name `records/<namespace>`, never the key.
        let bytes = encode(&format!("records/{}", ns.prefix().trim_end_matches(':')), value)?;
        self.open(RECORDS)?.insert(ns.key(key).as_str(), bytes.as_slice())?;
        Ok(())
    }

    /// Removes a record; returns whether it existed.
    pub fn remove_record(&mut self, ns: Ns, key: &str) -> Result<bool> {
        Ok(self.open(RECORDS)?.remove(ns.key(key).as_str())?.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Reads, StoreError};
    use super::Ns;

    #[test]
    fn records_are_namespaced() {
        for (backend, s, _d) in crate::store::testpg::both() {
            eprintln!("backend: {backend}");
            s.write(|tx| {
                tx.put_record(Ns::Client, "a", &1)?;
                tx.put_record(Ns::Client, "b", &2)?;
                tx.put_record(Ns::Token, "a", &3)?;
                Ok::<_, StoreError>(())
            })
            .unwrap();
            let clients: Vec<(String, i32)> = s.read(|rx| rx.records(Ns::Client)).unwrap();
            assert_eq!(clients, vec![("a".to_owned(), 1), ("b".to_owned(), 2)]);
            assert_eq!(s.read(|rx| rx.record::<i32>(Ns::Token, "a")).unwrap(), Some(3));
            assert!(s.write(|tx| tx.remove_record(Ns::Token, "a")).unwrap());
            assert_eq!(s.read(|rx| rx.record::<i32>(Ns::Token, "a")).unwrap(), None);
        }
    }
}
