//! Tokens: token hash (`kind:hex`, see [`crate::crypto::token_hash`]) → intent id.

use super::schema::TOKENS;
use super::{get_str, Result, Tables, Tx};

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
}
