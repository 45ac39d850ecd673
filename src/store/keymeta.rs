//! What the store remembers of the keys it was written with (`meta` row `keys`), for
//! the start-up key check (`crate::base::keycheck`): the ids of the sealing keys that
//! may have sealed its values, and fingerprints of the never-rotated `handle.key` and
//! `mac.key`. Never a key. Travels with the store in backups (it is a `meta` row).

use super::{schema, Reads, Result, StoreError, Tx};
use serde::{Deserialize, Serialize};

/// Key of the record in `meta`.
const KEYS_KEY: &str = "keys";

/// The record: JSON `{"sealed": [KID…], "handle": FP, "mac": FP}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyRecord {
    /// Ids of the sealing keys that may have sealed values of this store (a superset:
    /// every key that was current while isto ran on it, less those found unused).
    #[serde(default)]
    pub sealed: Vec<String>,
    /// Fingerprint of `handle.key` ([`crate::crypto::Fingerprints::handle`]).
    #[serde(default)]
    pub handle: Option<String>,
    /// Fingerprint of `mac.key` ([`crate::crypto::Fingerprints::mac`]).
    #[serde(default)]
    pub mac: Option<String>,
}

/// The record in the store (`None`: none yet, a store written before it existed).
pub fn key_record<R: Reads + ?Sized>(r: &R) -> Result<Option<KeyRecord>> {
    let text = r.table(schema::META)?.get(KEYS_KEY)?;
    text.map(|t| super::decode(&format!("meta:{KEYS_KEY}"), t.as_bytes())).transpose()
}

impl Tx<'_> {
    /// Replaces the key record.
    pub fn set_key_record(&mut self, rec: &KeyRecord) -> Result<()> {
        let text = serde_json::to_string(rec).map_err(|e| StoreError::Encode("meta".into(), e.to_string()))?;
        self.open(schema::META)?.insert(KEYS_KEY, text.as_str())?;
        self.note_change(super::ChangeKind::Keys, "")
    }
}
