//! [`AppState`]: the plain handles the faces (MCP, pages, admin socket) share, and the
//! one-time start-up passes ([`PASSES`]).
//!
//! Errors: a fallible item here fails with storage errors (and key errors where it opens
//! a sealed value) unless its `# Errors` says more.

pub use crate::base::keycheck::{check_keys, sealed_counts, KeyCheck, KeyCheckError};
use crate::base::Base;
use crate::catalogue::Catalogue;
use crate::clock::Clock;
use crate::config::Settings;
use crate::crypto::KeyRing;
use crate::intents::Intents;
use crate::schedule::Scheduler;
use crate::store::{Reads as _, Store, StoreError};
use std::path::PathBuf;
use std::sync::Arc;

/// The handles the faces share: the infrastructure ([`Base`]) and the services built on
/// it. Assembled once at start (`crate::app`) or by a test; cloning is cheap.
#[derive(Debug, Clone)]
pub struct AppState {
    /// Settings, store, keys, clock, outbox, consent texts, matching engine.
    pub base: Arc<Base>,
    /// Offers: import, withdrawal, full-text index.
    pub catalogue: Arc<Catalogue>,
    /// Intents: the consent-link flow and signed-in buyers' intents.
    pub intents: Arc<Intents>,
}

impl AppState {
    /// Assembles the state with an in-memory offer index; loads the active intents into
    /// the matching engine.
    pub fn new(settings: Settings, store: Store, keys: KeyRing, clock: Arc<dyn Clock>) -> Self {
        Self::with_index_dir(settings, store, keys, clock, None)
    }

    /// As [`AppState::new`], with the offer index kept in `index_dir` (`DATA_DIR/index`)
    /// and caught up at first use when its generation lags the store's. Runs the
    /// one-time start-up passes ([`PASSES`]) that the store does not record as done.
    pub fn with_index_dir(
        settings: Settings,
        store: Store,
        keys: KeyRing,
        clock: Arc<dyn Clock>,
        index_dir: Option<PathBuf>,
    ) -> Self {
        let base = Arc::new(Base::new(settings, Arc::new(store), Arc::new(keys), clock));
        let catalogue = Arc::new(Catalogue::new(base.clone(), index_dir));
        let intents = Arc::new(Intents::new(base.clone(), catalogue.clone()));
        run_passes(&base, &intents);
        Self { base, catalogue, intents }
    }

    /// The domain's scheduler of background work (reply matching, due digests, purge and
    /// expiry sweep; `crate::schedule`); `isto serve` runs one.
    pub fn scheduler(&self) -> Scheduler {
        Scheduler::new(self.base.clone(), self.intents.clone())
    }

    /// Applies the change feed (several replicas on one PostgreSQL database): the changes written since this replica's applied version — the intents
    /// into the engine and the active set ([`Base::refresh_intents`]), the offers into
    /// the index ([`Catalogue::refresh_offers`]), a key-record change by reading the key
    /// ring again — page by page, each page's version noted after it is applied; on a
    /// gap (changes pruned before this replica applied them) the engine and the index
    /// are rebuilt from the store. Returns the changes applied (0 on redb). Blocking.
    ///
    /// # Errors
    /// The first failure (storage, index, key files); the version stays where it was,
    /// so the next call tries the same changes again.
    pub fn catch_up(&self) -> crate::base::Result<u64> {
        use crate::store::{ChangeKind, Changes};
        let store = self.base.store();
        let mut applied = 0u64;
        loop {
            let from = store.feed_applied();
            match store.changes_since(from)? {
                None => return Ok(applied),
                Some(Changes::Gap { version }) => {
                    let n = self.base.rebuild_engine()?;
                    self.catalogue.rebuild_index()?;
                    self.base.keys().reload()?;
                    tracing::warn!(
                        intents = n,
                        "the change feed was pruned past this replica: engine and index rebuilt"
                    );
                    store.note_applied(version, false);
                }
                Some(Changes::Since { version, changed, more }) => {
                    let of = |kind: ChangeKind| -> Vec<String> {
                        let mut ids: Vec<String> =
                            changed.iter().filter(|(k, _)| *k == kind).map(|(_, id)| id.clone()).collect();
                        ids.sort_unstable();
                        ids.dedup();
                        ids
                    };
                    let (intents, offers) = (of(ChangeKind::Intent), of(ChangeKind::Offer));
                    if !intents.is_empty() {
                        self.base.refresh_intents(&intents)?;
                    }
                    if !offers.is_empty() {
                        self.catalogue.refresh_offers(&offers)?;
                    }
                    if changed.iter().any(|(k, _)| *k == ChangeKind::Keys) && self.base.keys().reload()? {
                        tracing::info!(kids = ?self.base.keys().kids(), "key ring read again after a change on another replica");
                    }
                    applied += changed.len() as u64;
                    store.note_applied(version, !more);
                    if !more {
                        return Ok(applied);
                    }
                }
            }
        }
    }
}

/// A one-time start-up pass: work on the records that needs the services (the keys, the
/// records' types), which the store's migrations cannot do (`store::schema`). Each runs
/// at the first start of a store that does not record it as done (`meta`
/// `pass:<name>`) and is recorded after it succeeded; the passes are idempotent (a crash
/// between the pass and its record only runs it once more).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pass {
    /// The name recorded in `meta` (`pass:<name>`).
    pub name: &'static str,
    /// What it changes, in one line (for `isto admin migrate`).
    pub description: &'static str,
}

/// [`Intents::backfill_people`].
pub const PERSON_KEYS: Pass = Pass {
    name: "person_keys",
    description: "gives active intents stored before person keys (schema v3) theirs and their person-index rows",
};

/// `accounts::rekey_email_index`.
pub const EMAIL_INDEX_KEYED: Pass = Pass {
    name: "email_index_keyed",
    description: "re-keys the account e-mail index of stores written before keyed index hashes",
};

/// Every start-up pass, in the order they run.
pub const PASSES: &[Pass] = &[PERSON_KEYS, EMAIL_INDEX_KEYED];

/// The passes of [`PASSES`] that `store` does not record as done.
pub fn pending_passes(store: &Store) -> Result<Vec<Pass>, StoreError> {
    store.read(|rx| {
        let mut out = Vec::new();
        for p in PASSES {
            if rx.pass_done(p.name)?.is_none() {
                out.push(*p);
            }
        }
        Ok(out)
    })
}

/// Runs every pending pass ([`pending_passes`]) and records each that succeeded; logs
/// what each did.
fn run_passes(base: &Arc<Base>, intents: &Intents) {
    let pending = pending_passes(base.store()).unwrap_or_else(|e| {
        tracing::error!(error = %e, "reading the start-up passes failed");
        Vec::new()
    });
    for pass in pending {
        let outcome = match pass.name {
            n if n == PERSON_KEYS.name => intents.backfill_people().map(|n| n as u64).map_err(|e| e.to_string()),
            n if n == EMAIL_INDEX_KEYED.name => crate::accounts::rekey_email_index(base).map_err(|e| e.to_string()),
            _ => continue,
        };
        let n = match outcome {
            Ok(n) => n,
            Err(e) => {
                tracing::error!(pass = pass.name, error = %e, "start-up pass failed; it runs again at the next start");
                continue;
            }
        };
        if let Err(e) = base.store().write(|tx| tx.record_pass(pass.name)) {
            tracing::error!(pass = pass.name, error = %e, "recording a start-up pass failed; it runs again at the next start");
            continue;
        }
        tracing::info!(pass = pass.name, records = n, "start-up pass done");
    }
}
