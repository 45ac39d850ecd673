//! Storage: all tables in one redb file (`DATA_DIR/isto.redb`).
//!
//! redb commits with immediate durability by default, so a write that a tool call
//! acknowledges is on disk when the call returns. Records are JSON values; secrets appear
//! only as hashes ([`crate::crypto::token_hash`]) or sealed ([`crate::crypto::Sealed`]).
//! The `meta` table holds `schema_version`; the store refuses a file newer than itself.
//! redb allows one process per file, hence the admin socket (`crate::admin`).

use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use serde::{de::DeserializeOwned, Serialize};
use std::path::Path;

/// Version of the table layout this build writes.
pub const SCHEMA_VERSION: u64 = 1;

/// `meta`: key → value (`schema_version`).
const META: TableDefinition<&str, &str> = TableDefinition::new("meta");
/// `intents`: intent id → IntentRecord JSON.
const INTENTS: TableDefinition<&str, &[u8]> = TableDefinition::new("intents");
/// `tokens`: token hash (`kind:hex`) → intent id.
const TOKENS: TableDefinition<&str, &str> = TableDefinition::new("tokens");
/// `active`: ids of active intents → () (the matching scan set).
const ACTIVE: TableDefinition<&str, ()> = TableDefinition::new("active");
/// `offers`: offer id → OfferRecord JSON.
const OFFERS: TableDefinition<&str, &[u8]> = TableDefinition::new("offers");
/// `offer_refs`: `seller id \0 ref` → offer id (stable external ids of a feed).
const OFFER_REFS: TableDefinition<&str, &str> = TableDefinition::new("offer_refs");
/// `sellers`: seller id → SellerRecord JSON.
const SELLERS: TableDefinition<&str, &[u8]> = TableDefinition::new("sellers");
/// `seller_names`: folded seller name → seller id.
const SELLER_NAMES: TableDefinition<&str, &str> = TableDefinition::new("seller_names");
/// `delivered`: `intent id \0 offer id` → delivery time (unix µs). Once per pair.
const DELIVERED: TableDefinition<&str, i64> = TableDefinition::new("delivered");
/// `delivery_log`: `intent id \0 µs(20 digits) \0 offer id` → score JSON, in time order.
const DELIVERY_LOG: TableDefinition<&str, &[u8]> = TableDefinition::new("delivery_log");
/// `digest_due`: intent id → unix seconds when its next digest may go out.
const DIGEST_DUE: TableDefinition<&str, i64> = TableDefinition::new("digest_due");
/// `outbox`: sequence → MailJob JSON (durable mail queue).
const OUTBOX: TableDefinition<u64, &[u8]> = TableDefinition::new("outbox");
/// `records`: `<namespace>:<key>` → JSON, for modules with few, simple records
/// (OAuth clients, codes, tokens; accounts; sessions). Namespaces: see [`Ns`].
const RECORDS: TableDefinition<&str, &[u8]> = TableDefinition::new("records");

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
}

impl Ns {
    fn prefix(self) -> &'static str {
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
        }
    }

    fn key(self, key: &str) -> String {
        format!("{}{key}", self.prefix())
    }
}

/// A storage failure.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// redb reported an error (I/O, corruption, a second process holding the file).
    #[error("store: {0}")]
    Db(#[from] redb::Error),
    /// A record does not decode.
    #[error("store record {0} is corrupt: {1}")]
    Corrupt(String, String),
    /// The file was written by a newer isto.
    #[error("store schema version {found} is newer than this isto ({SCHEMA_VERSION}); upgrade isto")]
    TooNew {
        /// The version found.
        found: u64,
    },
}

macro_rules! from_redb {
    ($($t:ty),*) => {$(impl From<$t> for StoreError { fn from(e: $t) -> Self { Self::Db(e.into()) } })*};
}
from_redb!(redb::DatabaseError, redb::TransactionError, redb::TableError, redb::StorageError, redb::CommitError);

/// Result alias.
impl StoreError {
    /// Whether the store file is held by another process (redb allows one per file:
    /// `isto serve` is running).
    pub fn is_already_open(&self) -> bool {
        matches!(self, Self::Db(redb::Error::DatabaseAlreadyOpen))
    }
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

fn decode<T: DeserializeOwned>(key: &str, b: &[u8]) -> Result<T> {
    serde_json::from_slice(b).map_err(|e| StoreError::Corrupt(key.to_owned(), e.to_string()))
}

fn encode<T: Serialize>(v: &T) -> Vec<u8> {
    serde_json::to_vec(v).unwrap_or_default()
}

/// The open store.
pub struct Store {
    db: Database,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Store")
    }
}

/// Splits a delivery log key into (µs, offer id).
fn split_log_key(k: &str) -> Option<(i64, String)> {
    let mut parts = k.split('\0');
    let _ = parts.next()?;
    let micros = parts.next()?.parse().ok()?;
    Some((micros, parts.next()?.to_owned()))
}

/// Key of a delivery log row.
fn log_key(intent: &str, micros: i64, offer: &str) -> String {
    format!("{intent}\0{micros:020}\0{offer}")
}

impl Store {
    /// Opens or creates the store at `path`, creating every table and writing the
    /// schema version on first open.
    ///
    /// # Errors
    /// [`StoreError::Db`] (for example when `isto serve` already holds the file) and
    /// [`StoreError::TooNew`].
    pub fn open(path: &Path) -> Result<Self> {
        let db = Database::create(path)?;
        let txn = db.begin_write()?;
        {
            let mut meta = txn.open_table(META)?;
            let found = meta.get("schema_version")?.map(|v| v.value().parse::<u64>().unwrap_or(u64::MAX));
            match found {
                Some(v) if v > SCHEMA_VERSION => return Err(StoreError::TooNew { found: v }),
                Some(_) => {}
                None => {
                    meta.insert("schema_version", SCHEMA_VERSION.to_string().as_str())?;
                }
            }
            txn.open_table(INTENTS)?;
            txn.open_table(TOKENS)?;
            txn.open_table(ACTIVE)?;
            txn.open_table(OFFERS)?;
            txn.open_table(OFFER_REFS)?;
            txn.open_table(SELLERS)?;
            txn.open_table(SELLER_NAMES)?;
            txn.open_table(DELIVERED)?;
            txn.open_table(DELIVERY_LOG)?;
            txn.open_table(DIGEST_DUE)?;
            txn.open_table(OUTBOX)?;
            txn.open_table(RECORDS)?;
        }
        txn.commit()?;
        Ok(Self { db })
    }

    /// Runs `f` in one write transaction and commits (durably) when it returns `Ok`;
    /// on `Err` nothing is written.
    ///
    /// # Errors
    /// `f`'s error, or a storage error converted into `E`.
    pub fn write<T, E: From<StoreError>>(&self, f: impl FnOnce(&mut Tx<'_>) -> Result<T, E>) -> Result<T, E> {
        let txn = self.db.begin_write().map_err(StoreError::from)?;
        let mut tx = Tx { txn: &txn };
        let out = f(&mut tx)?;
        txn.commit().map_err(StoreError::from)?;
        Ok(out)
    }

    /// Runs `f` in one read transaction (a consistent snapshot).
    ///
    /// # Errors
    /// `f`'s error, or a storage error converted into `E`.
    pub fn read<T, E: From<StoreError>>(&self, f: impl FnOnce(&Rx) -> Result<T, E>) -> Result<T, E> {
        let txn = self.db.begin_read().map_err(StoreError::from)?;
        f(&Rx { txn })
    }
}

/// A read transaction.
pub struct Rx {
    txn: redb::ReadTransaction,
}

/// A write transaction (reads see its own writes).
pub struct Tx<'a> {
    txn: &'a redb::WriteTransaction,
}

/// Reads shared by [`Rx`] and [`Tx`].
pub trait Reads {
    /// A JSON record from a `&str → &[u8]` table.
    #[doc(hidden)]
    fn get_json<T: DeserializeOwned>(&self, table: TableDefinition<&str, &[u8]>, key: &str) -> Result<Option<T>>;
    /// A string from a `&str → &str` table.
    #[doc(hidden)]
    fn get_str(&self, table: TableDefinition<&str, &str>, key: &str) -> Result<Option<String>>;
    /// All `(key, value)` of a `&str → &[u8]` table in `[from, to)`.
    #[doc(hidden)]
    fn range_json<T: DeserializeOwned>(
        &self,
        table: TableDefinition<&str, &[u8]>,
        from: &str,
        to: &str,
        limit: usize,
    ) -> Result<Vec<(String, T)>>;
    /// The last `limit` `(key, value)` of a `&str → &[u8]` table in `[from, to)`, newest first.
    #[doc(hidden)]
    fn range_json_rev<T: DeserializeOwned>(
        &self,
        table: TableDefinition<&str, &[u8]>,
        from: &str,
        to: &str,
        limit: usize,
    ) -> Result<Vec<(String, T)>>;
    /// Keys of a `&str → ()` table.
    #[doc(hidden)]
    fn keys_unit(&self, table: TableDefinition<&str, ()>) -> Result<Vec<String>>;
    /// An i64 from a `&str → i64` table.
    #[doc(hidden)]
    fn get_i64(&self, table: TableDefinition<&str, i64>, key: &str) -> Result<Option<i64>>;
    /// All `(key, value)` of a `&str → i64` table.
    #[doc(hidden)]
    fn all_i64(&self, table: TableDefinition<&str, i64>) -> Result<Vec<(String, i64)>>;

    /// The intent record with this id.
    ///
    /// # Errors
    /// Storage errors; [`StoreError::Corrupt`].
    fn intent<T: DeserializeOwned>(&self, id: &str) -> Result<Option<T>> {
        self.get_json(INTENTS, id)
    }

    /// Every intent record (for sweeps and admin listings).
    ///
    /// # Errors
    /// Storage errors.
    fn all_intents<T: DeserializeOwned>(&self) -> Result<Vec<T>> {
        Ok(self.range_json(INTENTS, "", "\u{10ffff}", usize::MAX)?.into_iter().map(|(_, v)| v).collect())
    }

    /// The intent id a token hash points to.
    ///
    /// # Errors
    /// Storage errors.
    fn token(&self, hash: &str) -> Result<Option<String>> {
        self.get_str(TOKENS, hash)
    }

    /// Ids of active intents.
    ///
    /// # Errors
    /// Storage errors.
    fn active_ids(&self) -> Result<Vec<String>> {
        self.keys_unit(ACTIVE)
    }

    /// The offer record with this id.
    ///
    /// # Errors
    /// Storage errors.
    fn offer<T: DeserializeOwned>(&self, id: &str) -> Result<Option<T>> {
        self.get_json(OFFERS, id)
    }

    /// Every offer record.
    ///
    /// # Errors
    /// Storage errors.
    fn all_offers<T: DeserializeOwned>(&self) -> Result<Vec<T>> {
        Ok(self.range_json(OFFERS, "", "\u{10ffff}", usize::MAX)?.into_iter().map(|(_, v)| v).collect())
    }

    /// The offer id stored for a feed's `(seller id, ref)`.
    ///
    /// # Errors
    /// Storage errors.
    fn offer_by_ref(&self, seller_id: &str, reference: &str) -> Result<Option<String>> {
        self.get_str(OFFER_REFS, &format!("{seller_id}\0{reference}"))
    }

    /// The seller record with this id.
    ///
    /// # Errors
    /// Storage errors.
    fn seller<T: DeserializeOwned>(&self, id: &str) -> Result<Option<T>> {
        self.get_json(SELLERS, id)
    }

    /// Every seller record.
    ///
    /// # Errors
    /// Storage errors.
    fn all_sellers<T: DeserializeOwned>(&self) -> Result<Vec<T>> {
        Ok(self.range_json(SELLERS, "", "\u{10ffff}", usize::MAX)?.into_iter().map(|(_, v)| v).collect())
    }

    /// The seller id registered under a folded name.
    ///
    /// # Errors
    /// Storage errors.
    fn seller_by_name(&self, folded: &str) -> Result<Option<String>> {
        self.get_str(SELLER_NAMES, folded)
    }

    /// When `(intent, offer)` was delivered (unix µs), if it was.
    ///
    /// # Errors
    /// Storage errors.
    fn delivered_at(&self, intent: &str, offer: &str) -> Result<Option<i64>> {
        self.get_i64(DELIVERED, &format!("{intent}\0{offer}"))
    }

    /// Deliveries of `intent` strictly after `after_micros`, oldest first, at most
    /// `limit`: `(delivered µs, offer id, extensions JSON)`.
    ///
    /// # Errors
    /// Storage errors.
    fn deliveries<T: DeserializeOwned>(
        &self,
        intent: &str,
        after_micros: i64,
        limit: usize,
    ) -> Result<Vec<(i64, String, T)>> {
        let from = log_key(intent, after_micros.saturating_add(1), "");
        let to = format!("{intent}\u{1}");
        let rows = self.range_json::<T>(DELIVERY_LOG, &from, &to, limit)?;
        Ok(rows.into_iter().filter_map(|(k, v)| split_log_key(&k).map(|(m, o)| (m, o, v))).collect())
    }

    /// The newest `limit` deliveries of `intent`, newest first.
    ///
    /// # Errors
    /// Storage errors.
    fn latest_deliveries<T: DeserializeOwned>(&self, intent: &str, limit: usize) -> Result<Vec<(i64, String, T)>> {
        let rows = self.range_json_rev::<T>(DELIVERY_LOG, &format!("{intent}\0"), &format!("{intent}\u{1}"), limit)?;
        Ok(rows.into_iter().filter_map(|(k, v)| split_log_key(&k).map(|(m, o)| (m, o, v))).collect())
    }

    /// A record of a namespace.
    ///
    /// # Errors
    /// Storage errors; [`StoreError::Corrupt`].
    fn record<T: DeserializeOwned>(&self, ns: Ns, key: &str) -> Result<Option<T>> {
        self.get_json(RECORDS, &ns.key(key))
    }

    /// Every record of a namespace, `(key without prefix, value)`, in key order.
    ///
    /// # Errors
    /// Storage errors.
    fn records<T: DeserializeOwned>(&self, ns: Ns) -> Result<Vec<(String, T)>> {
        let p = ns.prefix();
        let to = format!("{}\u{10ffff}", p);
        Ok(self
            .range_json(RECORDS, p, &to, usize::MAX)?
            .into_iter()
            .map(|(k, v)| (k[p.len()..].to_owned(), v))
            .collect())
    }

    /// When an intent's pending digest is due (unix seconds), if one is pending.
    ///
    /// # Errors
    /// Storage errors.
    fn digest_due_at(&self, intent: &str) -> Result<Option<i64>> {
        self.get_i64(DIGEST_DUE, intent)
    }

    /// Intents whose digest is pending: `(id, due unix seconds)`.
    ///
    /// # Errors
    /// Storage errors.
    fn digests_due(&self) -> Result<Vec<(String, i64)>> {
        self.all_i64(DIGEST_DUE)
    }
}

/// Decodes up to `limit` JSON rows of a redb range, in the range's order.
macro_rules! collect_json {
    ($rows:expr, $limit:expr) => {{
        let mut out = Vec::new();
        for row in $rows.take($limit) {
            let (k, v) = row?;
            let key = k.value().to_owned();
            let val = decode(&key, v.value())?;
            out.push((key, val));
        }
        Ok(out)
    }};
}

macro_rules! impl_reads {
    ($t:ty, $txn:ident) => {
        impl Reads for $t {
            fn get_json<T: DeserializeOwned>(
                &self,
                table: TableDefinition<&str, &[u8]>,
                key: &str,
            ) -> Result<Option<T>> {
                let t = self.$txn.open_table(table)?;
                let v = t.get(key)?;
                v.map(|g| decode(key, g.value())).transpose()
            }
            fn get_str(&self, table: TableDefinition<&str, &str>, key: &str) -> Result<Option<String>> {
                let t = self.$txn.open_table(table)?;
                let v = t.get(key)?;
                Ok(v.map(|g| g.value().to_owned()))
            }
            fn range_json<T: DeserializeOwned>(
                &self,
                table: TableDefinition<&str, &[u8]>,
                from: &str,
                to: &str,
                limit: usize,
            ) -> Result<Vec<(String, T)>> {
                let t = self.$txn.open_table(table)?;
                collect_json!(t.range(from..to)?, limit)
            }
            fn range_json_rev<T: DeserializeOwned>(
                &self,
                table: TableDefinition<&str, &[u8]>,
                from: &str,
                to: &str,
                limit: usize,
            ) -> Result<Vec<(String, T)>> {
                let t = self.$txn.open_table(table)?;
                collect_json!(t.range(from..to)?.rev(), limit)
            }
            fn keys_unit(&self, table: TableDefinition<&str, ()>) -> Result<Vec<String>> {
                let t = self.$txn.open_table(table)?;
                let mut out = Vec::new();
                for row in t.iter()? {
                    out.push(row?.0.value().to_owned());
                }
                Ok(out)
            }
            fn get_i64(&self, table: TableDefinition<&str, i64>, key: &str) -> Result<Option<i64>> {
                let t = self.$txn.open_table(table)?;
                let v = t.get(key)?;
                Ok(v.map(|g| g.value()))
            }
            fn all_i64(&self, table: TableDefinition<&str, i64>) -> Result<Vec<(String, i64)>> {
                let t = self.$txn.open_table(table)?;
                let mut out = Vec::new();
                for row in t.iter()? {
                    let (k, v) = row?;
                    out.push((k.value().to_owned(), v.value()));
                }
                Ok(out)
            }
        }
    };
}

impl_reads!(Rx, txn);
impl_reads!(Tx<'_>, txn);

impl Tx<'_> {
    /// Inserts or replaces an intent record; keeps the `active` set in step with
    /// `active`.
    ///
    /// # Errors
    /// Storage errors.
    pub fn put_intent<T: Serialize>(&mut self, id: &str, record: &T, active: bool) -> Result<()> {
        self.txn.open_table(INTENTS)?.insert(id, encode(record).as_slice())?;
        let mut a = self.txn.open_table(ACTIVE)?;
        if active {
            a.insert(id, ())?;
        } else {
            a.remove(id)?;
        }
        Ok(())
    }

    /// Maps a token hash to an intent id.
    ///
    /// # Errors
    /// Storage errors.
    pub fn put_token(&mut self, hash: &str, intent: &str) -> Result<()> {
        self.txn.open_table(TOKENS)?.insert(hash, intent)?;
        Ok(())
    }

    /// Inserts or replaces an offer record and its feed reference.
    ///
    /// # Errors
    /// Storage errors.
    pub fn put_offer<T: Serialize>(&mut self, id: &str, record: &T, seller_ref: Option<(&str, &str)>) -> Result<()> {
        self.txn.open_table(OFFERS)?.insert(id, encode(record).as_slice())?;
        if let Some((seller, r)) = seller_ref {
            self.txn.open_table(OFFER_REFS)?.insert(format!("{seller}\0{r}").as_str(), id)?;
        }
        Ok(())
    }

    /// Bumps the catalogue generation (see [`Rx::offers_generation`]); returns the new one.
    ///
    /// # Errors
    /// Storage errors.
    pub fn bump_offers_generation(&mut self) -> Result<u64> {
        let mut meta = self.txn.open_table(META)?;
        let v: u64 = meta.get("offers_generation")?.and_then(|v| v.value().parse().ok()).unwrap_or(0);
        meta.insert("offers_generation", (v + 1).to_string().as_str())?;
        Ok(v + 1)
    }

    /// Inserts or replaces a seller record under its folded name.
    ///
    /// # Errors
    /// Storage errors.
    pub fn put_seller<T: Serialize>(&mut self, id: &str, folded_name: &str, record: &T) -> Result<()> {
        self.txn.open_table(SELLERS)?.insert(id, encode(record).as_slice())?;
        self.txn.open_table(SELLER_NAMES)?.insert(folded_name, id)?;
        Ok(())
    }

    /// Records a delivery of `offer` to `intent` at `micros` unless one exists; returns
    /// whether it was new (PROTOCOL.md §2: one per (intent, offer)).
    ///
    /// # Errors
    /// Storage errors.
    pub fn put_delivery<T: Serialize>(&mut self, intent: &str, offer: &str, micros: i64, ext: &T) -> Result<bool> {
        let pair = format!("{intent}\0{offer}");
        let mut d = self.txn.open_table(DELIVERED)?;
        if d.get(pair.as_str())?.is_some() {
            return Ok(false);
        }
        d.insert(pair.as_str(), micros)?;
        self.txn.open_table(DELIVERY_LOG)?.insert(log_key(intent, micros, offer).as_str(), encode(ext).as_slice())?;
        Ok(true)
    }

    /// Sets (or with `None` clears) the time an intent's next digest is due.
    ///
    /// # Errors
    /// Storage errors.
    pub fn set_digest_due(&mut self, intent: &str, due_unix: Option<i64>) -> Result<()> {
        let mut t = self.txn.open_table(DIGEST_DUE)?;
        match due_unix {
            Some(d) => {
                t.insert(intent, d)?;
            }
            None => {
                t.remove(intent)?;
            }
        }
        Ok(())
    }

    /// Inserts or replaces a record of a namespace.
    ///
    /// # Errors
    /// Storage errors.
    pub fn put_record<T: Serialize>(&mut self, ns: Ns, key: &str, value: &T) -> Result<()> {
        self.txn.open_table(RECORDS)?.insert(ns.key(key).as_str(), encode(value).as_slice())?;
        Ok(())
    }

    /// Removes a record; returns whether it existed.
    ///
    /// # Errors
    /// Storage errors.
    pub fn remove_record(&mut self, ns: Ns, key: &str) -> Result<bool> {
        Ok(self.txn.open_table(RECORDS)?.remove(ns.key(key).as_str())?.is_some())
    }

    /// Appends a job to the outbox; returns its sequence number.
    ///
    /// # Errors
    /// Storage errors.
    pub fn enqueue_mail<T: Serialize>(&mut self, job: &T) -> Result<u64> {
        // Sequence numbers are never reused (a counter in `meta`, not the last key), so a
        // worker holding a job number can never touch a later job by mistake.
        let mut meta = self.txn.open_table(META)?;
        let last = meta.get("outbox_seq")?.and_then(|v| v.value().parse::<u64>().ok()).unwrap_or(0);
        let mut t = self.txn.open_table(OUTBOX)?;
        let next = last.max(t.last()?.map(|(k, _)| k.value()).unwrap_or(0)) + 1;
        meta.insert("outbox_seq", next.to_string().as_str())?;
        t.insert(next, encode(job).as_slice())?;
        Ok(next)
    }

    /// Whether an outbox job still exists (not sent, not cancelled).
    ///
    /// # Errors
    /// Storage errors.
    pub fn has_mail(&self, seq: u64) -> Result<bool> {
        Ok(self.txn.open_table(OUTBOX)?.get(seq)?.is_some())
    }

    /// Replaces an outbox job (after a failed attempt).
    ///
    /// # Errors
    /// Storage errors.
    pub fn update_mail<T: Serialize>(&mut self, seq: u64, job: &T) -> Result<()> {
        self.txn.open_table(OUTBOX)?.insert(seq, encode(job).as_slice())?;
        Ok(())
    }

    /// Removes an outbox job (sent, or cancelled by a withdrawal).
    ///
    /// # Errors
    /// Storage errors.
    pub fn remove_mail(&mut self, seq: u64) -> Result<()> {
        self.txn.open_table(OUTBOX)?.remove(seq)?;
        Ok(())
    }

    /// Every outbox job, oldest first.
    ///
    /// # Errors
    /// Storage errors.
    pub fn outbox<T: DeserializeOwned>(&self) -> Result<Vec<(u64, T)>> {
        outbox_rows(&self.txn.open_table(OUTBOX)?)
    }
}

fn outbox_rows<T: DeserializeOwned>(t: &impl ReadableTable<u64, &'static [u8]>) -> Result<Vec<(u64, T)>> {
    let mut out = Vec::new();
    for row in t.iter()? {
        let (k, v) = row?;
        out.push((k.value(), decode(&k.value().to_string(), v.value())?));
    }
    Ok(out)
}

impl Rx {
    /// Whether an outbox job still exists (not sent, not cancelled).
    ///
    /// # Errors
    /// Storage errors.
    pub fn has_mail(&self, seq: u64) -> Result<bool> {
        Ok(self.txn.open_table(OUTBOX)?.get(seq)?.is_some())
    }

    /// The catalogue generation: bumped by every transaction that writes offers; the
    /// full-text index stores the generation it reflects.
    ///
    /// # Errors
    /// Storage errors.
    pub fn offers_generation(&self) -> Result<u64> {
        let meta = self.txn.open_table(META)?;
        let v = meta.get("offers_generation")?.and_then(|v| v.value().parse().ok()).unwrap_or(0);
        Ok(v)
    }

    /// Every outbox job, oldest first.
    ///
    /// # Errors
    /// Storage errors.
    pub fn outbox<T: DeserializeOwned>(&self) -> Result<Vec<(u64, T)>> {
        outbox_rows(&self.txn.open_table(OUTBOX)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_version_and_reopen() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("s.redb");
        {
            let s = Store::open(&p).unwrap();
            s.write(|tx| tx.put_intent("int_a", &serde_json::json!({"x": 1}), true)).unwrap();
        }
        let s = Store::open(&p).unwrap();
        let v: Option<serde_json::Value> = s.read(|rx| rx.intent("int_a")).unwrap();
        assert_eq!(v.unwrap()["x"], 1);
        assert_eq!(s.read(|rx| rx.active_ids()).unwrap(), vec!["int_a"]);
    }

    #[test]
    fn failed_write_leaves_nothing() {
        let d = tempfile::tempdir().unwrap();
        let s = Store::open(&d.path().join("s.redb")).unwrap();
        let r: Result<(), StoreError> = s.write(|tx| {
            tx.put_token("code:x", "int_a")?;
            Err(StoreError::Corrupt("test".into(), "abort".into()))
        });
        assert!(r.is_err());
        assert_eq!(s.read(|rx| rx.token("code:x")).unwrap(), None);
    }

    #[test]
    fn outbox_numbers_are_never_reused() {
        let d = tempfile::tempdir().unwrap();
        let s = Store::open(&d.path().join("s.redb")).unwrap();
        let a = s.write(|tx| tx.enqueue_mail(&1)).unwrap();
        s.write(|tx| tx.remove_mail(a)).unwrap();
        let b = s.write(|tx| tx.enqueue_mail(&2)).unwrap();
        assert!(b > a, "{b} after {a}");
    }

    #[test]
    fn records_are_namespaced() {
        let d = tempfile::tempdir().unwrap();
        let s = Store::open(&d.path().join("s.redb")).unwrap();
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

    #[test]
    fn deliveries_once_and_in_order() {
        let d = tempfile::tempdir().unwrap();
        let s = Store::open(&d.path().join("s.redb")).unwrap();
        s.write(|tx| {
            assert!(tx.put_delivery("int_a", "off_2", 20, &1)?);
            assert!(tx.put_delivery("int_a", "off_1", 10, &1)?);
            assert!(!tx.put_delivery("int_a", "off_1", 30, &1)?);
            assert!(tx.put_delivery("int_b", "off_1", 5, &1)?);
            Ok::<_, StoreError>(())
        })
        .unwrap();
        let all: Vec<(i64, String, i32)> = s.read(|rx| rx.deliveries("int_a", 0, 10)).unwrap();
        assert_eq!(all.iter().map(|r| r.1.as_str()).collect::<Vec<_>>(), vec!["off_1", "off_2"]);
        let later: Vec<(i64, String, i32)> = s.read(|rx| rx.deliveries("int_a", 10, 10)).unwrap();
        assert_eq!(later.len(), 1);
    }
}
