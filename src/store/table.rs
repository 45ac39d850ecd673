//! The store's own table interface, below the entity modules: [`Table`] — get, range
//! scans, insert, remove, length — over one table of `schema` (a `TableDefinition`
//! names it and its key and value types), on either backend:
//! - redb: the table opened in the read or write transaction;
//! - PostgreSQL: one SQL table per store table, `(k bytea PRIMARY KEY, v bytea NOT
//!   NULL)`, keys and values in the order-preserving byte form of `column`, so that
//!   a range scan returns the same rows in the same order as redb's.
//!
//! Reads hand out owned values (`String`, `Vec<u8>`, tuples of them), never a backend's
//! borrowed guards, so an entity module is written once for both backends.

use super::column::{decoded, encoded, Column};
use super::pg::Conn;
use super::{Result, StoreError};
use redb::{ReadableTable, ReadableTableMetadata, TableDefinition};
use std::ops::Bound;

/// Rows a PostgreSQL scan fetches per query (keyset pagination, in one transaction).
const PG_CHUNK: i64 = 512;

/// One table of one transaction (see the module docs).
pub struct Table<'t, K: Column + redb::Key, V: Column> {
    src: Src<'t, K, V>,
}

enum Src<'t, K: Column + redb::Key, V: Column> {
    Read(redb::ReadOnlyTable<K, V>),
    Write(redb::Table<'t, K, V>),
    Pg { conn: &'t Conn, name: String },
}

/// A scan's bounds, in the key's stored form.
pub(super) type Bounds<'k, K> = (Bound<<K as redb::Value>::SelfType<'k>>, Bound<<K as redb::Value>::SelfType<'k>>);

/// What [`Table::get_with`] hands over: the value and the other table's, if any.
pub(super) type Joined<V, W> = (<V as Column>::Owned, Option<<W as Column>::Owned>);

/// What a scan hands over: each row's owned key and value.
pub(super) type Row<K, V> = (<K as Column>::Owned, <V as Column>::Owned);

impl<'t, K: Column + redb::Key, V: Column> Table<'t, K, V> {
    /// The table opened in a redb read transaction.
    pub(super) fn redb_read(txn: &redb::ReadTransaction, def: TableDefinition<'_, K, V>) -> Result<Self> {
        Ok(Self { src: Src::Read(txn.open_table(def)?) })
    }

    /// The table opened (created when missing) in a redb write transaction.
    pub(super) fn redb_write(txn: &'t redb::WriteTransaction, def: TableDefinition<'_, K, V>) -> Result<Self> {
        Ok(Self { src: Src::Write(txn.open_table(def)?) })
    }

    /// The table `def` over a PostgreSQL connection inside a transaction.
    pub(super) fn pg(conn: &'t Conn, def: TableDefinition<'_, K, V>) -> Self {
        use redb::TableHandle as _;
        Self { src: Src::Pg { conn, name: def.name().to_owned() } }
    }

    /// The value stored under `key`.
    pub(super) fn get(&self, key: K::SelfType<'_>) -> Result<Option<V::Owned>> {
        match &self.src {
            Src::Read(t) => Ok(t.get(key)?.map(|g| V::owned(&g.value()))),
            Src::Write(t) => Ok(t.get(key)?.map(|g| V::owned(&g.value()))),
            Src::Pg { conn, name } => {
                let k = encoded::<K>(&key);
                let rows = conn.query(&format!("SELECT v FROM \"{name}\" WHERE k = $1"), &[&k])?;
                rows.first().map(|r| value_of::<V>(name, r.try_get(0).map_err(StoreError::from)?)).transpose()
            }
        }
    }

    /// Hands the rows within `bounds` to `f`, in key order (or from the last when
    /// `rev`), until `f` answers false; `f`'s error stops the scan and is returned.
    pub(super) fn scan(
        &self,
        bounds: Bounds<'_, K>,
        rev: bool,
        mut f: impl FnMut(K::Owned, V::Owned) -> Result<bool>,
    ) -> Result<()> {
        match &self.src {
            Src::Read(t) => scan_redb(t, bounds, rev, &mut f),
            Src::Write(t) => scan_redb(t, bounds, rev, &mut f),
            Src::Pg { conn, name } => {
                let own = |b: Bound<K::SelfType<'_>>| b.map(|k| encoded::<K>(&k));
                scan_pg::<K, V>(conn, name, (own(bounds.0), own(bounds.1)), rev, &mut f)
            }
        }
    }

    /// Up to `limit` rows within `bounds`, in key order (or from the last when `rev`).
    pub(super) fn range(&self, bounds: Bounds<'_, K>, rev: bool, limit: usize) -> Result<Vec<Row<K, V>>> {
        let mut out = Vec::new();
        if limit == 0 {
            return Ok(out);
        }
        self.scan(bounds, rev, |k, v| {
            out.push((k, v));
            Ok(out.len() < limit)
        })?;
        Ok(out)
    }

    /// Hands every row to `f`, in key order, until it answers false.
    pub(super) fn each(&self, f: impl FnMut(K::Owned, V::Owned) -> Result<bool>) -> Result<()> {
        self.scan((Bound::Unbounded, Bound::Unbounded), false, f)
    }

    /// Every row, in key order.
    pub(super) fn all(&self) -> Result<Vec<Row<K, V>>> {
        self.range((Bound::Unbounded, Bound::Unbounded), false, usize::MAX)
    }

    /// The row with the least key.
    pub(super) fn first(&self) -> Result<Option<Row<K, V>>> {
        Ok(self.range((Bound::Unbounded, Bound::Unbounded), false, 1)?.pop())
    }

    /// The row with the greatest key.
    pub(super) fn last(&self) -> Result<Option<Row<K, V>>> {
        Ok(self.range((Bound::Unbounded, Bound::Unbounded), true, 1)?.pop())
    }

    /// How many rows the table holds (redb keeps the count in the table's header;
    /// PostgreSQL counts).
    pub(super) fn len(&self) -> Result<u64> {
        match &self.src {
            Src::Read(t) => Ok(t.len()?),
            Src::Write(t) => Ok(t.len()?),
            Src::Pg { conn, name } => {
                let rows = conn.query(&format!("SELECT count(*) FROM \"{name}\""), &[])?;
                let n: i64 = rows.first().map(|r| r.try_get(0)).transpose()?.unwrap_or(0);
                Ok(n.unsigned_abs())
            }
        }
    }

    /// Inserts or replaces the value under `key`; whether one was replaced. On a table
    /// opened for reading only (a bug): [`StoreError::Backup`].
    pub(super) fn insert(&mut self, key: K::SelfType<'_>, value: V::SelfType<'_>) -> Result<bool> {
        match &mut self.src {
            Src::Read(_) => Err(read_only()),
            Src::Write(t) => Ok(t.insert(key, value)?.is_some()),
            Src::Pg { conn, name } => {
                let (k, v) = (encoded::<K>(&key), encoded::<V>(&value));
                let sql = format!(
                    "INSERT INTO \"{name}\" (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v \
                     RETURNING (xmax = 0)"
                );
                let rows = conn.query(&sql, &[&k, &v])?;
                let inserted: bool = rows.first().map(|r| r.try_get(0)).transpose()?.unwrap_or(true);
                Ok(!inserted)
            }
        }
    }

    /// Inserts `value` under `key` unless a row is there, which stays as it is; whether
    /// it inserted (errors as [`Table::insert`]). In redb a lookup, then the insert (a
    /// row that is there, as in a repeated full feed, is only read); on PostgreSQL one
    /// statement.
    pub(super) fn insert_new(&mut self, key: K::SelfType<'_>, value: V::SelfType<'_>) -> Result<bool> {
        match &mut self.src {
            Src::Read(_) => Err(read_only()),
            Src::Write(t) => {
                if t.get(&key)?.is_some() {
                    return Ok(false);
                }
                t.insert(&key, value)?;
                Ok(true)
            }
            Src::Pg { conn, name } => {
                let (k, v) = (encoded::<K>(&key), encoded::<V>(&value));
                let sql =
                    format!("INSERT INTO \"{name}\" (k, v) VALUES ($1, $2) ON CONFLICT (k) DO NOTHING RETURNING 1");
                Ok(!conn.query(&sql, &[&k, &v])?.is_empty())
            }
        }
    }

    /// Removes the row under `key`; its value, when there was one (errors as
    /// [`Table::insert`]).
    pub(super) fn remove(&mut self, key: K::SelfType<'_>) -> Result<Option<V::Owned>> {
        match &mut self.src {
            Src::Read(_) => Err(read_only()),
            Src::Write(t) => Ok(t.remove(key)?.map(|g| V::owned(&g.value()))),
            Src::Pg { conn, name } => {
                let k = encoded::<K>(&key);
                let rows = conn.query(&format!("DELETE FROM \"{name}\" WHERE k = $1 RETURNING v"), &[&k])?;
                rows.first().map(|r| value_of::<V>(name, r.try_get(0).map_err(StoreError::from)?)).transpose()
            }
        }
    }
}

fn read_only() -> StoreError {
    StoreError::Backup("a table of a read transaction was written to".to_owned())
}

impl<V: Column> Table<'_, &'static str, V> {
    /// The value under `key` and, when the row exists, `other`'s value under the same key
    /// (`other`: a table of the same transaction keyed like this one): two lookups in
    /// redb, one query on PostgreSQL (a left join), so a read that needs both rows pays
    /// one round trip.
    pub(super) fn get_with<W: Column>(
        &self,
        other: &Table<'_, &'static str, W>,
        key: &str,
    ) -> Result<Option<Joined<V, W>>> {
        if let (Src::Pg { conn, name }, Src::Pg { name: joined, .. }) = (&self.src, &other.src) {
            let k = encoded::<&str>(&key);
            let sql = format!("SELECT a.v, b.v FROM \"{name}\" a LEFT JOIN \"{joined}\" b ON b.k = a.k WHERE a.k = $1");
            let rows = conn.query(&sql, &[&k])?;
            let Some(r) = rows.first() else { return Ok(None) };
            let (v, w): (&[u8], Option<&[u8]>) = (r.try_get(0)?, r.try_get(1)?);
            return Ok(Some((value_of::<V>(name, v)?, w.map(|w| value_of::<W>(joined, w)).transpose()?)));
        }
        let Some(v) = self.get(key)? else { return Ok(None) };
        Ok(Some((v, other.get(key)?)))
    }
}

fn value_of<V: Column>(table: &str, bytes: &[u8]) -> Result<V::Owned> {
    decoded::<V>(bytes).ok_or_else(|| StoreError::Corrupt(format!("{table} (a value)"), "does not decode".to_owned()))
}

fn key_of<K: Column>(table: &str, bytes: &[u8]) -> Result<K::Owned> {
    decoded::<K>(bytes).ok_or_else(|| StoreError::Corrupt(format!("{table} (a key)"), "does not decode".to_owned()))
}

fn scan_redb<K: Column + redb::Key, V: Column, T: ReadableTable<K, V>>(
    t: &T,
    bounds: Bounds<'_, K>,
    rev: bool,
    f: &mut dyn FnMut(K::Owned, V::Owned) -> Result<bool>,
) -> Result<()> {
    let rows = t.range::<K::SelfType<'_>>(bounds)?;
    let rows: Box<dyn Iterator<Item = _>> = if rev { Box::new(rows.rev()) } else { Box::new(rows) };
    for row in rows {
        let (k, v) = row?;
        if !f(K::owned(&k.value()), V::owned(&v.value()))? {
            break;
        }
    }
    Ok(())
}

/// The condition of one bound on `k` with its parameter, if any.
fn cond(b: &Bound<Vec<u8>>, incl: &'static str, excl: &'static str) -> Option<(&'static str, Vec<u8>)> {
    match b {
        Bound::Included(k) => Some((incl, k.clone())),
        Bound::Excluded(k) => Some((excl, k.clone())),
        Bound::Unbounded => None,
    }
}

fn scan_pg<K: Column, V: Column>(
    conn: &Conn,
    name: &str,
    (mut lo, mut hi): (Bound<Vec<u8>>, Bound<Vec<u8>>),
    rev: bool,
    f: &mut dyn FnMut(K::Owned, V::Owned) -> Result<bool>,
) -> Result<()> {
    loop {
        let mut sql = format!("SELECT k, v FROM \"{name}\"");
        let mut params: Vec<Vec<u8>> = Vec::new();
        for c in [cond(&lo, ">=", ">"), cond(&hi, "<=", "<")].into_iter().flatten() {
            params.push(c.1);
            let _ = std::fmt::Write::write_fmt(
                &mut sql,
                format_args!(" {} k {} ${}", if params.len() == 1 { "WHERE" } else { "AND" }, c.0, params.len()),
            );
        }
        sql.push_str(if rev { " ORDER BY k DESC" } else { " ORDER BY k" });
        sql.push_str(&format!(" LIMIT {PG_CHUNK}"));
        let refs: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
            params.iter().map(|p| p as &(dyn tokio_postgres::types::ToSql + Sync)).collect();
        let rows = conn.query(&sql, &refs)?;
        let full = rows.len() as i64 == PG_CHUNK;
        let mut last: Option<Vec<u8>> = None;
        for r in &rows {
            let kb: &[u8] = r.try_get(0)?;
            let vb: &[u8] = r.try_get(1)?;
            if !f(key_of::<K>(name, kb)?, value_of::<V>(name, vb)?)? {
                return Ok(());
            }
            last = Some(kb.to_vec());
        }
        match last {
            Some(k) if full => {
                if rev {
                    hi = Bound::Excluded(k);
                } else {
                    lo = Bound::Excluded(k);
                }
            }
            _ => return Ok(()),
        }
    }
}
