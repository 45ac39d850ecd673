//! The table layout, its version and the migrations between versions.
//!
//! The `meta` table holds `schema_version`. Opening a store ([`prepare`]):
//! - a new file gets every table of the current layout and [`SCHEMA_VERSION`];
//! - a file at an older version runs every migration numbered above its version, in
//!   order, then records [`SCHEMA_VERSION`] — all in the one write transaction of the
//!   open, so a failed migration leaves the file as it was;
//! - a file at a newer version is refused ([`StoreError::TooNew`]).
//!
//! A migration runs over the store's table interface (the same on redb and PostgreSQL);
//! numbers start at 1 and grow by one, and [`SCHEMA_VERSION`] is the last. To change the
//! layout, add the table here and a migration that creates and fills it from the tables
//! before it (migrations are cumulative: a store several versions behind runs each in
//! turn). A migration never decodes a record into an application type.

use super::dump::AnyTable;
use super::reads::TxTxn;
use super::{Result, StoreError, Tables as _, Tx};
use redb::TableDefinition;
use std::ops::Bound;

/// The store's file name inside `DATA_DIR`.
pub const FILE_NAME: &str = "isto.redb";

/// `meta`: key → value (`schema_version`, `offers_generation`, `outbox_seq`,
/// `pending_reply_seq`, `write_probe`).
pub(super) const META: TableDefinition<&str, &str> = TableDefinition::new("meta");
/// `intents`: intent id → IntentRecord JSON.
pub(super) const INTENTS: TableDefinition<&str, &[u8]> = TableDefinition::new("intents");
/// `active`: ids of active intents → () (the matching scan set).
pub(super) const ACTIVE: TableDefinition<&str, ()> = TableDefinition::new("active");
/// `intent_expiry` (v2): `(unix µs when the intent's effective status next changes,
/// intent id)` → ().
pub(super) const INTENT_EXPIRY: TableDefinition<(i64, &str), ()> = TableDefinition::new("intent_expiry");
/// `intent_erasure` (v2): `(unix µs when the intent ended, intent id)` → (), for ended
/// intents that still hold a contact (erased after the retention period).
pub(super) const INTENT_ERASURE: TableDefinition<(i64, &str), ()> = TableDefinition::new("intent_erasure");
/// `intent_due` (v2): intent id → `(expiry µs, erasure µs)`, the keys of its rows in
/// the two tables above (so a write can replace them).
pub(super) const INTENT_DUE: TableDefinition<&str, (Option<i64>, Option<i64>)> = TableDefinition::new("intent_due");
/// `tokens`: token hash (`kind:hex`) → intent id.
pub(super) const TOKENS: TableDefinition<&str, &str> = TableDefinition::new("tokens");
/// `offers`: offer id → OfferRecord JSON.
pub(super) const OFFERS: TableDefinition<&str, &[u8]> = TableDefinition::new("offers");
/// `offer_refs`: `seller id \0 ref` → offer id (stable external ids of a feed).
pub(super) const OFFER_REFS: TableDefinition<&str, &str> = TableDefinition::new("offer_refs");
/// `sellers`: seller id → SellerRecord JSON.
pub(super) const SELLERS: TableDefinition<&str, &[u8]> = TableDefinition::new("sellers");
/// `seller_names`: folded seller name → seller id.
pub(super) const SELLER_NAMES: TableDefinition<&str, &str> = TableDefinition::new("seller_names");
/// `delivered`: `offer id \0 intent id` → delivery time (unix µs). Once per pair. Offer
/// first (v10; intent first before) so that an import's rows, of offers with new ids,
/// are written together at the end of the table, not on a page of each intent's.
pub(super) const DELIVERED: TableDefinition<&str, i64> = TableDefinition::new("delivered");
/// `delivery_log`: `intent id \0 µs(20 digits) \0 offer id` → the delivery's extensions
/// in the writer's form (`deliveries`: a hit's 4 bytes, or the JSON of rows written
/// before them), in time order.
pub(super) const DELIVERY_LOG: TableDefinition<&str, &[u8]> = TableDefinition::new("delivery_log");
/// `digest_due`: intent id → unix seconds when its next digest may go out.
pub(super) const DIGEST_DUE: TableDefinition<&str, i64> = TableDefinition::new("digest_due");
/// `outbox`: sequence → MailJob JSON (durable mail queue).
pub(super) const OUTBOX: TableDefinition<u64, &[u8]> = TableDefinition::new("outbox");
/// `person_active` (v3): `(person key, intent id)` → the intent's validUntil (unix µs),
/// for every intent in the active set with a person key (the per-person cap; see
/// `store::people`).
pub(super) const PERSON_ACTIVE: TableDefinition<(&str, &str), i64> = TableDefinition::new("person_active");
/// `intent_person` (v3): intent id → its person key, the key of its `person_active` row.
pub(super) const INTENT_PERSON: TableDefinition<&str, &str> = TableDefinition::new("intent_person");
/// `pending_replies` (v4): sequence → `(intent id, reply offer id)`: sellers' replies
/// stored and answered, not yet matched against their intent (PROTOCOL.md §3
/// intent_submit_offer: check and deliver after answering).
pub(super) const PENDING_REPLIES: TableDefinition<u64, (&str, &str)> = TableDefinition::new("pending_replies");
/// `intent_matches` (v9): intent id → `(deliveries, unix µs of the newest)`: an intent's
/// delivery bookkeeping, kept beside its record so that recording deliveries does not
/// rewrite the record (see `store::IntentRow`). An intent without a row has what its
/// record holds (records of an older isto, intents without deliveries; matching one
/// intent — at its activation, or a seller reply — writes the row even without a match,
/// unchanged).
pub(super) const INTENT_MATCHES: TableDefinition<&str, (u64, i64)> = TableDefinition::new("intent_matches");
/// `intent_targets` (v11): intent id → JSON of what recording deliveries reads of an
/// active intent (its status, validUntil, cadence and last digest; see
/// `store::IntentWrite`), written with the record while the intent is active and
/// removed when it is not, so that a catalogue import reads a small row instead of the
/// record. An intent without a row is read from its record (records of an older isto
/// until their next write, intents that are not active).
pub(super) const INTENT_TARGETS: TableDefinition<&str, &[u8]> = TableDefinition::new("intent_targets");
/// `records`: `<namespace>:<key>` → JSON, for modules with few, simple records
/// (OAuth clients, codes, tokens; accounts; sessions). Namespaces: see [`super::Ns`].
pub(super) const RECORDS: TableDefinition<&str, &[u8]> = TableDefinition::new("records");

/// Every table of the layout, in backup order (`store::dump`): a table added above must
/// be added here too, or backups refuse the store (the tests below check that this list
/// names every table a new store has).
pub(super) const TABLES: &[&dyn AnyTable] = &[
    &META,
    &INTENTS,
    &ACTIVE,
    &INTENT_EXPIRY,
    &INTENT_ERASURE,
    &INTENT_DUE,
    &TOKENS,
    &OFFERS,
    &OFFER_REFS,
    &SELLERS,
    &SELLER_NAMES,
    &DELIVERED,
    &DELIVERY_LOG,
    &DIGEST_DUE,
    &OUTBOX,
    &PENDING_REPLIES,
    &RECORDS,
    &PERSON_ACTIVE,
    &INTENT_PERSON,
    &INTENT_MATCHES,
    &INTENT_TARGETS,
];

/// A migration: its number, name and one-line description (what it changes, for
/// `isto admin migrate`), and the code run inside the open's write transaction.
struct Migration {
    number: u64,
    name: &'static str,
    description: &'static str,
    run: fn(&mut Tx<'_>) -> Result<()>,
}

/// Every migration, by number (1, 2, …; see the module docs). One that rewrites intent
/// records must rewrite or clear their `intent_targets` rows too (`Tx::put_intent`
/// keeps them in step with the records it writes).
const MIGRATIONS: &[Migration] = &[
    Migration {
        number: 1,
        name: "initial",
        description: "the first layout (meta, intents, active, tokens, offers, sellers, deliveries, outbox, records)",
        run: tables_only,
    },
    Migration {
        number: 2,
        name: "intent_expiry_index",
        description: "adds the expiry and erasure indexes (intent_expiry, intent_erasure, intent_due); every \
                      stored intent is entered as due now, so the first sweep records its real times",
        run: v2_intent_expiry_index,
    },
    Migration {
        number: 3,
        name: "person_index",
        description: "adds the person index (person_active, intent_person), empty; the people pass at start \
                      fills it for active intents",
        run: tables_only,
    },
    Migration {
        number: 4,
        name: "pending_replies",
        description: "adds the queue of seller replies waiting to be matched (pending_replies), empty",
        run: tables_only,
    },
    Migration {
        number: 5,
        name: "intent_times",
        description: "stores every time of an intent record (and of a pending renewal) as one integer of unix \
                      microseconds instead of RFC 3339 strings and unix seconds; a value that does not read as a \
                      time is left as it was, so reading that record is an error naming it",
        run: super::intent_times::v5_intent_times,
    },
    Migration {
        number: 6,
        name: "account_times",
        description: "stores every time of an account, web session, one-time link and throttle counter as one \
                      integer of unix microseconds instead of RFC 3339 strings and unix seconds; a value that \
                      does not read as a time is left as it was, so reading that record is an error naming it",
        run: super::account_times::v6_account_times,
    },
    Migration {
        number: 7,
        name: "record_times",
        description: "stores every time of an OAuth client, code, token, token family and consent form, of a \
                      seller profile and of a confirmation mark as one integer of unix microseconds instead of \
                      unix seconds and RFC 3339 strings; a value that does not read as a time is left as it \
                      was, so reading that record is an error naming it",
        run: super::account_times::v7_record_times,
    },
    Migration {
        number: 8,
        name: "intent_tokens_by_id",
        description: "nothing to convert: tokens made from now on begin with their intent's id and are keyed \
                      kind:int_<id>:<hash> in tokens (those made before keep their rows and work); the version \
                      makes an older isto, which would not find the new tokens, refuse the store",
        run: |_| Ok(()),
    },
    Migration {
        number: 9,
        name: "intent_matches",
        description: "adds the intents' delivery bookkeeping beside their records (intent_matches), empty: a \
                      record keeps its count until its next delivery writes its row",
        run: tables_only,
    },
    Migration {
        number: 10,
        name: "delivered_by_offer",
        description: "keys the once-per-pair delivery rows (delivered) by offer, then intent, instead of intent, \
                      then offer; each row keeps its delivery time",
        run: v10_delivered_by_offer,
    },
    Migration {
        number: 11,
        name: "intent_targets",
        description: "adds what recording deliveries reads of an active intent beside its record (intent_targets), \
                      empty: an import reads an intent's record until its next write writes the row",
        run: tables_only,
    },
];

/// Version of the table layout this build writes: the last migration's number.
pub const SCHEMA_VERSION: u64 = MIGRATIONS[MIGRATIONS.len() - 1].number;

/// This build's version (`CARGO_PKG_VERSION`), recorded in `meta` under
/// [`WRITER_KEY`] by every open that changes the file's version or writer.
pub const ISTO_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Key of the version in `meta`.
const VERSION_KEY: &str = "schema_version";

/// Key in `meta` of the isto version that last opened the store for writing (so a
/// refusal of a newer store can name the isto that wrote it). Stores written before it
/// have none.
const WRITER_KEY: &str = "isto_version";

/// One migration as `isto admin migrate` lists it.
///
/// JSON: `{"number": 4, "name": "pending_replies", "description": "adds …"}`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MigrationInfo {
    /// Its number: the schema version a store has after it.
    pub number: u64,
    /// A short snake_case name.
    pub name: String,
    /// What it changes, in one line.
    pub description: String,
}

/// Every migration of this build, in order.
pub fn migrations() -> Vec<MigrationInfo> {
    MIGRATIONS
        .iter()
        .map(|m| MigrationInfo { number: m.number, name: m.name.into(), description: m.description.into() })
        .collect()
}

/// Brings the store in `txn` to [`SCHEMA_VERSION`] (see the module docs); the caller
/// commits.
///
/// A file without a schema version is given the current layout only when `new` (the
/// caller has just made the file); otherwise it is not isto's and is refused, whatever
/// it holds.
///
/// # Errors
/// [`StoreError::TooNew`]; [`StoreError::NotAStore`] (a file without a schema version,
/// not `new`; nothing is changed); a migration's error.
pub(super) fn prepare(tx: &mut Tx<'_>, new: bool) -> Result<()> {
    let found = read_version(tx)?;
    match found {
        Some(v) if v > SCHEMA_VERSION => {
            return Err(StoreError::TooNew { found: v, writer: stored_writer(tx)? });
        }
        Some(v) => migrate(tx, v)?,
        None if new => {}
        None => {
            return Err(match tx.txn {
                TxTxn::Redb(txn) => not_isto(table_list(txn.list_tables()?, txn.list_multimap_tables()?)),
                TxTxn::Pg(_) => StoreError::NotAStore(format!(
                    "the PostgreSQL database has isto's tables but no schema version (meta {VERSION_KEY:?}): a \
                     damaged store; restore a backup into an empty database"
                )),
            })
        }
    }
    create_tables(tx)?;
    if found != Some(SCHEMA_VERSION) {
        tx.open(META)?.insert(VERSION_KEY, SCHEMA_VERSION.to_string().as_str())?;
    }
    if stored_writer(tx)?.as_deref() != Some(ISTO_VERSION) {
        tx.open(META)?.insert(WRITER_KEY, ISTO_VERSION)?;
    }
    Ok(())
}

/// The names of every table (plain and multimap) of a redb file (its `list_tables` and
/// `list_multimap_tables`, in a read or a write transaction), for [`not_isto`].
pub(super) fn table_list(
    tables: impl Iterator<Item = redb::UntypedTableHandle>,
    multimap: impl Iterator<Item = redb::UntypedMultimapTableHandle>,
) -> Vec<String> {
    use redb::{MultimapTableHandle as _, TableHandle as _};
    tables.map(|h| h.name().to_owned()).chain(multimap.map(|h| h.name().to_owned())).collect()
}

/// The refusal of a redb file without isto's schema version, naming (some of) the
/// `tables` it has.
pub(super) fn not_isto(tables: Vec<String>) -> StoreError {
    let held = if tables.is_empty() {
        "no table at all".to_owned()
    } else {
        let shown: Vec<String> = tables.iter().take(8).map(|t| format!("{t:?}")).collect();
        format!("table(s) {}", shown.join(", "))
    };
    StoreError::NotAStore(format!(
        "it is a redb database without isto's schema version (meta {VERSION_KEY:?}; it holds {held}): another \
         program's file, or a damaged one; isto never initialises an existing file. Move it away and restore a \
         backup (`isto admin restore FILE`), or remove it to start with an empty store"
    ))
}

/// The isto version recorded as the store's last writer (`None`: none recorded).
fn stored_writer(tx: &Tx<'_>) -> Result<Option<String>> {
    tx.table(META)?.get(WRITER_KEY)
}

/// The version recorded in the file (`None`: no version).
pub(super) fn read_version<R: super::Tables + ?Sized>(r: &R) -> Result<Option<u64>> {
    let Some(v) = r.table(META)?.get(VERSION_KEY)? else { return Ok(None) };
    v.parse::<u64>().map(Some).map_err(|_| {
        StoreError::Corrupt(format!("meta:{VERSION_KEY}"), format!("{v:?} is not a whole number (the schema version)"))
    })
}

/// Rows of one table before and after a migration run ([`Migrated::tables`]).
///
/// JSON: `{"table": "intent_due", "before": null, "after": 12}` (`before` null: the table
/// did not exist).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TableChange {
    /// The table's name (one of [`super::table_names`]).
    pub table: String,
    /// Its rows before; `None` when the file had no such table.
    pub before: Option<u64>,
    /// Its rows after.
    pub after: u64,
}

/// What [`migrate_file`] found and did.
///
/// JSON: `{"stored": 3, "writer": "0.1.0", "current": 4, "pending": [MigrationInfo…],
/// "tables": [TableChange…], "committed": true}`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Migrated {
    /// The schema version found in the file (`None` only for a file without one, which
    /// is refused before this is returned).
    pub stored: Option<u64>,
    /// The isto version recorded as its last writer, when one is.
    pub writer: Option<String>,
    /// This build's [`SCHEMA_VERSION`].
    pub current: u64,
    /// The migrations run (or, in a dry run, that would run), in order.
    pub pending: Vec<MigrationInfo>,
    /// The tables whose row count changed or that were created, in
    /// [`super::table_names`] order.
    pub tables: Vec<TableChange>,
    /// Whether the transaction was committed (`false` for a dry run).
    pub committed: bool,
    /// The one-time start-up passes the file records as done (`meta` `pass:<name>`,
    /// see `crate::state::PASSES`), by name.
    pub passes_done: Vec<String>,
}

/// Opens the existing store file at `path` (no server may hold it) and brings it to
/// [`SCHEMA_VERSION`] in one write transaction, as [`super::Store::open`] does, counting
/// the rows of every table before and after; commits when `commit`, else rolls
/// everything back (a dry run: the file is left as it was). For `isto admin migrate`.
///
/// # Errors
/// [`StoreError::TooNew`] and [`StoreError::NotAStore`] (nothing is changed);
/// [`StoreError::Db`] when the file is missing or held by another process ([`StoreError::is_already_open`]); a migration's
/// error (then nothing is changed).
pub fn migrate_file(path: &std::path::Path, commit: bool) -> Result<Migrated> {
    use redb::TableHandle as _;
    super::open::existing(path)?;
    let db = redb::Database::open(path).map_err(super::open::not_redb)?;
    let txn = db.begin_write()?;
    let existing: Vec<String> = txn.list_tables()?.map(|h| h.name().to_owned()).collect();
    let out = migrate_in(&mut Tx { txn: TxTxn::Redb(&txn) }, &|t| existing.iter().any(|e| e == t), false, commit);
    match out {
        Ok(m) if commit => {
            txn.commit()?;
            Ok(m)
        }
        out => {
            txn.abort()?;
            out
        }
    }
}

/// [`migrate_file`] for a store at `location`: the redb file, or the PostgreSQL database
/// (where the SQL migrations run first, in the same transaction; a new database counts as
/// a store made now).
///
/// # Errors
/// As [`migrate_file`]; the database's error.
pub fn migrate_at(location: &super::Location, commit: bool) -> Result<Migrated> {
    match location {
        super::Location::Redb { path, .. } => migrate_file(path, commit),
        super::Location::Postgres(settings) => super::pg::migrate(settings, commit),
    }
}

/// [`migrate_file`]'s work inside the write transaction `tx`: `existed` says whether a
/// table existed before (its rows are counted then), `new` whether the store is new.
pub(super) fn migrate_in(tx: &mut Tx<'_>, existed: &dyn Fn(&str) -> bool, new: bool, commit: bool) -> Result<Migrated> {
    let stored = read_version(tx)?;
    let writer = stored_writer(tx)?;
    if let Some(v) = stored.filter(|v| *v > SCHEMA_VERSION) {
        return Err(StoreError::TooNew { found: v, writer });
    }
    let mut before = Vec::with_capacity(TABLES.len());
    for t in TABLES {
        let n = if existed(t.name()) { Some(t.count_in(tx)?) } else { None };
        before.push(n);
    }
    let from = stored.unwrap_or(SCHEMA_VERSION);
    let pending = migrations().into_iter().filter(|m| m.number > from).collect();
    prepare(tx, new)?;
    let mut tables = Vec::new();
    for (t, before) in TABLES.iter().zip(before) {
        let after = t.count_in(tx)?;
        if before != Some(after) {
            tables.push(TableChange { table: t.name().to_owned(), before, after });
        }
    }
    let mut passes_done = Vec::new();
    tx.open(META)?.scan((Bound::Included("pass:"), Bound::Excluded("pass;")), false, |k, _| {
        passes_done.push(k.trim_start_matches("pass:").to_owned());
        Ok(true)
    })?;
    Ok(Migrated { stored, writer, current: SCHEMA_VERSION, pending, tables, committed: commit, passes_done })
}

/// Runs every migration numbered above `from`, in order.
fn migrate(tx: &mut Tx<'_>, from: u64) -> Result<()> {
    for m in MIGRATIONS.iter().filter(|m| m.number > from) {
        (m.run)(tx)?;
        tracing::info!(migration = m.number, name = m.name, "store migrated");
    }
    Ok(())
}

/// Opens (creating when missing) every table of the current layout, so that reads in
/// read transactions never meet a missing table (on PostgreSQL the SQL migrations made
/// them).
fn create_tables(tx: &mut Tx<'_>) -> Result<()> {
    for t in TABLES {
        t.create(tx)?;
    }
    Ok(())
}

/// A migration that only adds tables, empty: [`create_tables`] makes them at the end of
/// every open (1: the first layout, which stores at version 1 were created with in full;
/// 3: the person index, which the services fill at start — `Intents::backfill_people`,
/// since the person key comes from the sealed contact the store cannot open; 4: the
/// queue of seller replies, as replies stored before it were matched when stored).
fn tables_only(_tx: &mut Tx<'_>) -> Result<()> {
    Ok(())
}

/// 2: the expiry index (`intent_expiry`, `intent_erasure`, `intent_due`). Every stored
/// intent is entered as due now (time 0): the store cannot read application records,
/// so the first sweep after the upgrade looks at each intent once — as every sweep did
/// before the index — and records its real times (see `docs/choices.md`).
fn v2_intent_expiry_index(tx: &mut Tx<'_>) -> Result<()> {
    let mut ids = Vec::new();
    tx.open(INTENTS)?.each(|id, _| {
        ids.push(id);
        Ok(true)
    })?;
    let mut expiry = tx.open(INTENT_EXPIRY)?;
    let mut due = tx.open(INTENT_DUE)?;
    for id in &ids {
        expiry.insert((0i64, id.as_str()), ())?;
        due.insert(id.as_str(), (Some(0i64), None::<i64>))?;
    }
    Ok(())
}

/// 10: `delivered` keyed `offer \0 intent` instead of `intent \0 offer`. The rows written
/// before begin with an intent id (`int_…`; offer ids never do), so the rows of that
/// range are moved, in chunks, until none is left; the moved ones sort elsewhere.
fn v10_delivered_by_offer(tx: &mut Tx<'_>) -> Result<()> {
    const CHUNK: usize = 10_000;
    let mut t = tx.open(DELIVERED)?;
    let mut from = String::from("int_");
    loop {
        let rows = t.range((Bound::Included(from.as_str()), Bound::Excluded("int`")), false, CHUNK)?;
        let Some((last, _)) = rows.last() else { return Ok(()) };
        let next = format!("{last}\0");
        for (key, micros) in rows {
            // A row of another shape is left as it is (and skipped by the next range).
            if let Some((intent, offer)) = key.split_once('\0') {
                t.remove(key.as_str())?;
                t.insert(format!("{offer}\0{intent}").as_str(), micros)?;
            }
        }
        from = next;
    }
}

#[cfg(test)]
#[path = "schema_tests.rs"]
pub(crate) mod tests;
