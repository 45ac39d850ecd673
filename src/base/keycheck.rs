//! The start-up check that the key ring is this store's (a wrong or missing key fails
//! loudly): `isto serve` refuses to start when the ring lacks a sealing key that sealed
//! values of the store need, or when `handle.key` or `mac.key` is not the one the store
//! was written with — instead of starting with an empty matching engine and values
//! nobody can open.
//!
//! The store remembers the keys in its `meta` row `keys` ([`crate::store::KeyRecord`]):
//! the ids of the sealing keys that may have sealed its values and fingerprints of the
//! two never-rotated keys. A start whose ring has every recorded id costs one read;
//! otherwise (a store without the record, or a recorded id missing from the ring) every
//! sealed value is counted by key id ([`sealed_counts`], one read transaction) and only
//! an id that really seals values refuses the start. The record is then brought up to
//! date: the ids in use plus the current key; fingerprints are recorded the first time.

use crate::crypto::{each_sealed, KeyRing};
use crate::store::{key_record, Export, KeyRecord, Store, StoreError};
use std::collections::BTreeMap;
use std::path::Path;

/// Why the start is refused.
#[derive(Debug, thiserror::Error)]
pub enum KeyCheckError {
    /// Sealed values of the store are under key ids the ring lacks: `(keys directory,
    /// values per missing key id, the ring's ids)`.
    #[error(
        "the key ring in {dir} cannot open {total} sealed value(s) of the store (contacts, hidden limits, queued \
         mail): they are sealed with key id(s) {missing_list}, which the ring (key id(s) {have}) lacks — these \
         are not this store's keys: another holder's key files, or a key file that is missing (sealing.key or \
         sealing.key.<id>). Put the store's own key files back in {dir} (from `isto admin keys export`: \
         `isto admin restore BACKUP --keys EXPORT`)",
        total = .1.values().sum::<u64>(),
        missing_list = .1.iter().map(|(k, n)| format!("{k} ({n} values)")).collect::<Vec<_>>().join(", "),
        have = .2.join(", "),
        dir = .0
    )]
    Unreadable(String, BTreeMap<String, u64>, Vec<String>),
    /// A never-rotated key file is not the one the store was written with: `(its path,
    /// what it makes)`.
    #[error(
        "{0} is not the key this store was written with (its fingerprint differs from the one the store \
         recorded): another holder's key, or one made anew because the file was missing. With it every {1} \
         would change. Put the store's own {0} back (from `isto admin keys export`)"
    )]
    Changed(String, &'static str),
    /// A stored row is not JSON where a sealed value may be (the table).
    #[error("the store's table {0} holds a row that is not JSON; cannot check the keys")]
    Row(String),
    /// Storage failure.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Counts the store's sealed values by key id, from one read transaction (every table,
/// as a backup reads them); also the rows.
///
/// # Errors
/// [`KeyCheckError::Row`]; storage errors.
pub fn sealed_counts(store: &Store) -> Result<(BTreeMap<String, u64>, u64), KeyCheckError> {
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut rows = 0u64;
    store.export(|step| -> Result<(), KeyCheckError> {
        if let Export::Row { table, line } = step {
            rows += 1;
            if !line.contains("\"kid\"") {
                return Ok(());
            }
            let row: serde_json::Value = serde_json::from_str(line).map_err(|_| KeyCheckError::Row(table.into()))?;
            if let Some(v) = row.get("v") {
                each_sealed(v, &mut |s| {
                    *counts.entry(s.kid).or_default() += 1;
                    Ok::<_, KeyCheckError>(())
                })?;
            }
        }
        Ok(())
    })?;
    Ok((counts, rows))
}

/// What [`check_keys`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyCheck {
    /// Whether every sealed value was counted (no record, or a recorded id missing from
    /// the ring); `false`: the record sufficed.
    pub scanned: bool,
    /// The record as written.
    pub record: KeyRecord,
}

/// Checks that `keys` (the ring whose current key is `key_path`) is this store's: see
/// the module docs. Writes the brought-up-to-date record.
///
/// # Errors
/// [`KeyCheckError::Unreadable`], [`KeyCheckError::Changed`] (nothing is written);
/// storage errors.
pub fn check_keys(store: &Store, keys: &KeyRing, key_path: &Path) -> Result<KeyCheck, KeyCheckError> {
    let stored = store.read(key_record)?;
    let ring = keys.kids();
    let fp = keys.fingerprints();
    let rec = stored.clone().unwrap_or_default();
    for (file, want, have, what) in [
        (KeyRing::handle_key_path(key_path), &rec.handle, &fp.handle, "seller intent handle and e-mail index entry"),
        (KeyRing::mac_key_path(key_path), &rec.mac, &fp.mac, "person key, seller pseudonym and keyed hash"),
    ] {
        if want.as_ref().is_some_and(|w| w != have) {
            return Err(KeyCheckError::Changed(file.display().to_string(), what));
        }
    }
    let known = stored.as_ref().is_some_and(|r| !r.sealed.is_empty() && r.sealed.iter().all(|k| ring.contains(k)));
    let mut sealed: Vec<String> = if known {
        rec.sealed.clone()
    } else {
        let (counts, _) = sealed_counts(store)?;
        let missing: BTreeMap<String, u64> =
            counts.iter().filter(|(k, _)| !ring.contains(k)).map(|(k, n)| (k.clone(), *n)).collect();
        if !missing.is_empty() {
            let dir = key_path.parent().unwrap_or(key_path).display().to_string();
            return Err(KeyCheckError::Unreadable(dir, missing, ring));
        }
        counts.into_keys().collect()
    };
    let current = keys.current_kid();
    if !sealed.contains(&current) {
        sealed.push(current);
    }
    sealed.sort_unstable();
    let record = KeyRecord { sealed, handle: Some(fp.handle), mac: Some(fp.mac) };
    if stored.as_ref() != Some(&record) {
        store.write(|tx| tx.set_key_record(&record))?;
    }
    Ok(KeyCheck { scanned: !known, record })
}
