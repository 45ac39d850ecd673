//! Tokens: token hash (`kind:hex`, see [`crate::crypto::token_hash`]) → intent id.

use super::schema::TOKENS;
use super::{get_str, Result, Tables, Tx};
use redb::ReadableTable;
use std::collections::HashSet;

pub(super) fn get<R: Tables + ?Sized>(r: &R, hash: &str) -> Result<Option<String>> {
    get_str(r, TOKENS, hash)
}

impl Tx<'_> {
    /// Maps a token hash to an intent id.
    ///
    /// # Errors
    /// Storage errors.
    pub fn put_token(&mut self, hash: &str, intent: &str) -> Result<()> {
        self.txn.open_table(TOKENS)?.insert(hash, intent)?;
        Ok(())
    }

    /// Removes every token that points to one of `intents`; returns how many went. One
    /// pass over the tokens table (there is no index by intent), so callers batch.
    ///
    /// # Errors
    /// Storage errors.
    pub fn remove_tokens_of(&mut self, intents: &HashSet<String>) -> Result<u64> {
        if intents.is_empty() {
            return Ok(0);
        }
        let mut t = self.txn.open_table(TOKENS)?;
        let mut doomed = Vec::new();
        for row in t.iter()? {
            let (k, v) = row?;
            if intents.contains(v.value()) {
                doomed.push(k.value().to_owned());
            }
        }
        for k in &doomed {
            t.remove(k.as_str())?;
        }
        Ok(doomed.len() as u64)
    }
}
