//! [`AppState`]: the plain handles the faces (MCP, pages, admin socket) share — the
//! infrastructure handles ([`Base`]) and the services built on them. Assembled once at
//! start (`crate::app`) or by a test; cloning is cheap.

use crate::base::Base;
use crate::catalogue::Catalogue;
use crate::clock::Clock;
use crate::config::Settings;
use crate::crypto::KeyRing;
use crate::deliveries::Digests;
use crate::intents::Intents;
use crate::store::Store;
use std::path::PathBuf;
use std::sync::Arc;

/// The handles the faces share.
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
    /// and caught up at first use when its generation lags the store's. Gives active
    /// intents stored before person keys theirs ([`Intents::backfill_people`]).
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
        // Person keys for intents stored before them (schema v3; see `Intents::backfill_people`).
        match intents.backfill_people() {
            Ok(0) => {}
            Ok(n) => tracing::info!(intents = n, "person keys added to active intents"),
            Err(e) => tracing::error!(error = %e, "adding person keys to active intents failed"),
        }
        // Keyed e-mail index hashes for accounts stored before them (see
        // `accounts::rekey_email_index`).
        match crate::accounts::rekey_email_index(&base) {
            Ok(0) => {}
            Ok(n) => tracing::info!(accounts = n, "account e-mail index re-keyed"),
            Err(e) => tracing::error!(error = %e, "re-keying the account e-mail index failed"),
        }
        Self { base, catalogue, intents }
    }

    /// The digest scheduler for the mail worker.
    pub fn digests(&self) -> Digests {
        Digests(self.base.clone())
    }
}
