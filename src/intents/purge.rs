//! The purge: what nobody needs any more is deleted, not only marked — lapsed
//! consent-link drafts with their tokens, unused OAuth clients, expired OAuth codes and
//! tokens, expired sign-in links and sessions, `Confirmed` marks past their lifetime.
//! One function, [`Intents::purge`], run by the sweeper inside `isto serve` and by
//! `isto admin purge` (`--dry-run` rehearses it).
//!
//! A lapsed draft is a consent-link draft (no owner) whose 24 h passed with no consent:
//! it never held a contact, matched or mailed, so nothing of it must be kept; its
//! intentCode then answers `not_found`, like a code never issued. A draft of a signed-in
//! buyer stays (as `expired`, by the sweep): it is listed on "my intents".

use super::Intents;
use crate::accounts::{self, AccountsPurged};
use crate::base::{Result, Writes};
use crate::oauth::{self, OAuthPurged};
use crate::protocol::Status;
use crate::records::IntentRecord;
use crate::store::Reads as _;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use time::OffsetDateTime;

/// What a purge removed (or, rehearsed, would remove), per kind. As JSON (camelCase):
/// `{"drafts":n,"draftTokens":n,"oauth":{"clients":n,"codes":n,"tokens":n,"families":n},
/// "accounts":{"sessions":n,"signInLinks":n,"throttles":n},"confirmedMarks":n}`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Purged {
    /// Lapsed consent-link drafts.
    pub drafts: u64,
    /// Their intentCode and consent-link tokens.
    pub draft_tokens: u64,
    /// OAuth clients, codes, tokens and authorizations.
    pub oauth: OAuthPurged,
    /// Web sessions, one-time links, throttle counters.
    pub accounts: AccountsPurged,
    /// `Confirmed` marks of known people past their lifetime (absent in older answers).
    #[serde(default)]
    pub confirmed_marks: u64,
}

impl Purged {
    /// Every record removed.
    pub fn total(&self) -> u64 {
        let (o, a) = (&self.oauth, &self.accounts);
        self.drafts
            + self.draft_tokens
            + o.clients
            + o.codes
            + o.tokens
            + o.families
            + a.sessions
            + a.sign_in_links
            + a.throttles
            + self.confirmed_marks
    }
}

/// Whether `rec` is a lapsed consent-link draft at `now` (see the module docs): stored as
/// `awaiting_consent`, past its draft expiry, no owner, never consented.
pub(super) fn lapsed_draft(rec: &IntentRecord, now: OffsetDateTime) -> bool {
    rec.status == Status::AwaitingConsent
        && rec.effective_status(now) == Status::Expired
        && rec.owner.is_none()
        && rec.consent.is_none()
        && rec.contact.is_none()
}

impl Intents {
    /// Deletes, in one write transaction, what is no longer needed (see the module
    /// docs); with `dry_run` the same transaction is rolled back, so the counts are
    /// exactly what a real run at this moment removes. Lapsed drafts are found through
    /// the expiry index (a draft stays there, due, until purged).
    ///
    /// # Errors
    /// Storage errors (nothing is removed).
    pub fn purge(&self, dry_run: bool) -> Result<Purged> {
        let now = self.now();
        let run = |w: &mut Writes<'_, '_>| -> Result<Purged> {
            let mut drafts = HashSet::new();
            for id in w.intents_due(crate::records::micros(now), i64::MIN)? {
                if super::readable(&**w, &id)?.is_some_and(|r| lapsed_draft(&r, now)) {
                    w.remove_intent(&id)?;
                    drafts.insert(id);
                }
            }
            let draft_tokens = w.remove_tokens_of(&drafts)?;
            let oauth = oauth::purge_tx(w, now)?;
            let accounts = accounts::purge_tx(w, now)?;
            let confirmed_marks = super::known::purge_marks(w, now)?;
            Ok(Purged { drafts: drafts.len() as u64, draft_tokens, oauth, accounts, confirmed_marks })
        };
        let purged = if dry_run { self.base.rehearse(run) } else { self.base.write(run) }?;
        if !dry_run && purged.total() > 0 {
            tracing::info!(
                drafts = purged.drafts,
                oauth_clients = purged.oauth.clients,
                oauth_tokens = purged.oauth.tokens + purged.oauth.codes + purged.oauth.families,
                sign_in_links = purged.accounts.sign_in_links,
                sessions = purged.accounts.sessions,
                confirmed_marks = purged.confirmed_marks,
                "purge"
            );
        }
        Ok(purged)
    }
}
