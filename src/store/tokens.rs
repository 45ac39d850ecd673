//! Tokens: token hash (`kind:hex`, see [`crate::crypto::token_hash`]) → intent id.

use super::schema::TOKENS;
use super::{Result, Tx};
use std::collections::HashSet;

impl Tx<'_> {
    /// Maps a token hash to an intent id.
    pub fn put_token(&mut self, hash: &str, intent: &str) -> Result<()> {
        self.open(TOKENS)?.insert(hash, intent)?;
        Ok(())
    }

    /// Removes every token that points to one of `intents`; returns how many went. One
    /// pass over the tokens table (there is no index by intent), so callers batch.
    pub fn remove_tokens_of(&mut self, intents: &HashSet<String>) -> Result<u64> {
        if intents.is_empty() {
            return Ok(0);
        }
        let mut t = self.open(TOKENS)?;
        let mut doomed = Vec::new();
        t.each(|k, v| {
            if intents.contains(&v) {
                doomed.push(k);
            }
            Ok(true)
        })?;
        for k in &doomed {
            t.remove(k.as_str())?;
        }
        Ok(doomed.len() as u64)
    }
}
