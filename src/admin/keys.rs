//! `isto admin keys rotate`, `isto admin keys status` and `isto admin keys retire ID`.
//!
//! Only the sealing key rotates ([`ROTATE_NOTE`] says why `handle.key` and `mac.key`
//! never do). A rotation makes a new sealing key current at once (in the running
//! server's ring too, after the key file was written atomically), then re-seals every
//! sealed value under it in batches ([`crate::store::Store::rewrite_values`],
//! [`BATCH_ROWS`] rows per write transaction, so the server keeps serving): each batch
//! re-reads its rows inside its own transaction, so a value the server wrote meanwhile is
//! never overwritten with an older copy. A value the server wrote back with an old key
//! during a pass (a read-then-write begun before the rotation) is re-sealed by one more
//! pass, at most [`MAX_PASSES`]. Cut short, nothing is lost — every value still opens
//! with its key, which stays in the ring —, and `keys rotate --resume` finishes it.
//!
//! Socket ops (one answer line each; also answered in this process when no server runs):
//! - `{"op":"keys_status"}` → `{"ok":true,"current":KID,"keys":[{"kid","current",
//!   "created","file","sealed"}],"unknown":{KID:n},"rows":n,"sealedValues":n}`
//! - `{"op":"keys_rotate"}` → `{"ok":true,"kid":NEW,"previous":OLD}`
//! - `{"op":"keys_reseal","cursor":{"table":i,"after":KEY|null},"limit":n}` →
//!   `{"ok":true,"cursor":…,"seen":n,"changed":n,"values":n,"done":bool}`
//! - `{"op":"keys_retire","kid":KID}` → `{"ok":true,"kid":KID}` or the refusal.

use super::socket::{failure, Client, Connect};
use super::{Request, Route};
use crate::cli::out::{print_json_or, print_line};
use crate::config::Settings;
use crate::crypto::{KeyRing, Sealed};
use crate::store::{Cursor, Store};
use anyhow::{bail, Context as _};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// Rows per re-seal batch (one write transaction).
pub const BATCH_ROWS: usize = 500;
/// Most re-seal passes one `keys rotate` makes before it reports what is left.
pub const MAX_PASSES: u32 = 5;
/// What a rotation changes and what it never does.
pub const ROTATE_NOTE: &str = "rotated: the sealing key (contacts, hidden limits, account e-mails and queued mail \
     are re-sealed with the new key). Never rotated: handle.key and mac.key — they make the sellers' intent \
     handles, the seller pseudonyms, the person keys, CSRF tokens and keyed hashes, which would all change. \
     Export the key ring again (`isto admin keys export`): older exports lack the new key";

/// One key of `keys status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyStatus {
    /// The key id (first 8 hex digits of SHA-256 of the key).
    pub kid: String,
    /// Whether it is the current (sealing) key.
    pub current: bool,
    /// When it was made (RFC 3339, UTC, its file's modification time), if known.
    pub created: Option<String>,
    /// Its file name in the keys directory.
    pub file: Option<String>,
    /// Stored values still sealed with it.
    pub sealed: u64,
}

/// What `isto admin keys status` reports (`--json` prints it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusReport {
    /// The current key id.
    pub current: String,
    /// Every sealing key, the current one first.
    pub keys: Vec<KeyStatus>,
    /// Values sealed with a key id the ring does not have (restore that key file).
    pub unknown: BTreeMap<String, u64>,
    /// Rows in the store.
    pub rows: u64,
    /// Sealed values in the store.
    pub sealed_values: u64,
    /// `"socket"` or `"direct"` (filled in by the client).
    #[serde(default)]
    pub via: Route,
    /// Whether a rotation runs now in the process that answered (its last step within
    /// [`ROTATION_LEASE`]).
    #[serde(default)]
    pub rotating: bool,
}

/// How long after its last step a rotation counts as running ([`StatusReport::rotating`]).
pub const ROTATION_LEASE: std::time::Duration = std::time::Duration::from_secs(30);

fn unix_ms() -> u64 {
    use crate::clock::Clock as _;
    u64::try_from(crate::clock::SystemClock.now().unix_timestamp_nanos() / 1_000_000).unwrap_or(0)
}

/// Whether a rotation runs now (its last [`KeyRing::rotation_step`] within the lease).
fn rotation_running(keys: &KeyRing) -> bool {
    let at = keys.rotation_step().load(std::sync::atomic::Ordering::SeqCst);
    at != 0 && unix_ms().saturating_sub(at) < ROTATION_LEASE.as_millis() as u64
}

/// The refusal of a second rotation while one runs.
fn rotation_busy() -> String {
    format!(
        "a key rotation is running now (another `isto admin keys rotate` is re-sealing through this server): wait \
         for it to finish (`isto admin keys status` shows what is left; a rotation that stopped frees this within \
         {} s), then run the command again",
        ROTATION_LEASE.as_secs()
    )
}

impl StatusReport {
    /// Values sealed with any key but the current one: what a re-seal has left to do.
    pub fn left(&self) -> u64 {
        self.keys.iter().filter(|k| !k.current).map(|k| k.sealed).sum::<u64>() + self.unknown.values().sum::<u64>()
    }
}

/// What `isto admin keys rotate` reports.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RotateReport {
    /// The current key id now.
    pub kid: String,
    /// The key that was current before (`None` with `--resume`).
    pub previous: Option<String>,
    /// Whether a new key was made (false with `--resume`).
    pub rotated: bool,
    /// Values re-sealed with the current key.
    pub resealed: u64,
    /// Passes over the store.
    pub passes: u32,
    /// Values still sealed with an older key (0 when it finished).
    pub left: u64,
    /// Key ids that no value uses any more: `isto admin keys retire ID` may delete them.
    pub retirable: Vec<String>,
    /// `"socket"` or `"direct"`.
    pub via: Route,
    /// [`ROTATE_NOTE`].
    pub note: &'static str,
}

/// A sealed value inside a JSON value: an object of exactly `kid`, `nonce`, `ct`.
fn is_sealed(m: &serde_json::Map<String, Value>) -> bool {
    m.len() == 3 && ["kid", "nonce", "ct"].iter().all(|k| m.get(*k).is_some_and(Value::is_string))
}

/// Calls `f` on every sealed value inside `v`, which it may replace.
fn each_sealed_mut(v: &mut Value, f: &mut dyn FnMut(&mut Value) -> anyhow::Result<()>) -> anyhow::Result<()> {
    match v {
        Value::Object(m) if is_sealed(m) => f(v),
        Value::Object(m) => m.values_mut().try_for_each(|x| each_sealed_mut(x, f)),
        Value::Array(a) => a.iter_mut().try_for_each(|x| each_sealed_mut(x, f)),
        _ => Ok(()),
    }
}

/// The new bytes of a stored value with each sealed value not sealed with the current
/// key opened and sealed again (its JSON text replaced in place); `None` when nothing
/// needs it (or the bytes are not JSON). `values` counts what was re-sealed.
///
/// # Errors
/// A sealed value that the ring cannot open (naming the table and the key id, never a
/// value).
fn reseal_bytes(keys: &KeyRing, table: &str, bytes: &[u8], values: &mut u64) -> anyhow::Result<Option<Vec<u8>>> {
    let Ok(mut v) = serde_json::from_slice::<Value>(bytes) else { return Ok(None) };
    let current = keys.current_kid();
    let mut swaps: Vec<(String, String)> = Vec::new();
    each_sealed_mut(&mut v, &mut |s| {
        if s.get("kid").and_then(Value::as_str) == Some(current.as_str()) {
            return Ok(());
        }
        let old: Sealed = serde_json::from_value(s.clone())?;
        let plain = keys.open(&old).map_err(|e| {
            anyhow::anyhow!(
                "a sealed value of table {table:?} (key {}) does not open: {e}; nothing of its batch was written",
                old.kid
            )
        })?;
        let new = keys.seal(&plain)?;
        swaps.push((serde_json::to_string(&old)?, serde_json::to_string(&new)?));
        *s = serde_json::to_value(&new)?;
        Ok(())
    })?;
    if swaps.is_empty() {
        return Ok(None);
    }
    *values += swaps.len() as u64;
    // In place when every old text appears once (the store's own serialization), else
    // the whole value re-serialized.
    if let Ok(mut text) = String::from_utf8(bytes.to_vec()) {
        if swaps.iter().all(|(old, _)| text.matches(old.as_str()).count() == 1) {
            for (old, new) in &swaps {
                text = text.replacen(old.as_str(), new, 1);
            }
            return Ok(Some(text.into_bytes()));
        }
    }
    Ok(Some(serde_json::to_vec(&v)?))
}

/// The status of `keys` over `store`.
fn status_of(store: &Store, keys: &KeyRing) -> anyhow::Result<StatusReport> {
    let (mut counts, rows) = crate::state::sealed_counts(store)?;
    let sealed_values = counts.values().sum();
    let list: Vec<KeyStatus> = keys
        .key_info()
        .into_iter()
        .map(|k| KeyStatus {
            sealed: counts.remove(&k.kid).unwrap_or(0),
            kid: k.kid,
            current: k.current,
            created: k.created.map(|t| crate::clock::rfc3339(time::OffsetDateTime::from(t))),
            file: k.file.and_then(|f| f.file_name().and_then(|n| n.to_str()).map(str::to_owned)),
        })
        .collect();
    Ok(StatusReport {
        current: keys.current_kid(),
        keys: list,
        unknown: counts,
        rows,
        sealed_values,
        via: Route::Direct,
        rotating: false,
    })
}

/// Answers one keys request (blocking), in the server or in this process alike.
pub(super) fn answer(store: &Store, keys: &KeyRing, req: &Request) -> Value {
    match req {
        Request::KeysStatus => match status_of(store, keys) {
            Ok(mut s) => {
                if s.left() == 0 {
                    // Nothing left to re-seal: no rotation is running.
                    keys.rotation_step().store(0, std::sync::atomic::Ordering::SeqCst);
                }
                s.rotating = rotation_running(keys);
                let mut v = serde_json::to_value(&s).unwrap_or(Value::Null);
                v["ok"] = json!(true);
                v
            }
            Err(e) => failure(format!("counting the sealed values failed: {e}")),
        },
        Request::KeysRotate => {
            use std::sync::atomic::Ordering;
            let at = keys.rotation_step().load(Ordering::SeqCst);
            if rotation_running(keys)
                || keys.rotation_step().compare_exchange(at, unix_ms(), Ordering::SeqCst, Ordering::SeqCst).is_err()
            {
                return failure(rotation_busy());
            }
            let previous = keys.current_kid();
            match keys.rotate() {
                Ok(kid) => {
                    tracing::info!(kid = %kid, previous = %previous, "sealing key rotated");
                    json!({"ok": true, "kid": kid, "previous": previous})
                }
                Err(e) => {
                    tracing::error!(error = %e, "sealing key rotation failed");
                    failure(format!("the rotation failed, the key ring is unchanged: {e}"))
                }
            }
        }
        Request::KeysReseal { cursor, limit } => {
            let mut cursor: Cursor = cursor.clone().unwrap_or_default();
            let limit = limit.map_or(BATCH_ROWS, |n| n.clamp(1, 5000) as usize);
            let mut values = 0u64;
            let out = store.rewrite_values(&mut cursor, limit, &mut |table, bytes| -> anyhow::Result<_> {
                reseal_bytes(keys, table, bytes, &mut values)
            });
            let step = if out.as_ref().is_ok() && cursor.done() { 0 } else { unix_ms() };
            keys.rotation_step().store(step, std::sync::atomic::Ordering::SeqCst);
            match out {
                Ok(done) => json!({"ok": true, "cursor": cursor, "seen": done.seen, "changed": done.changed,
                                   "values": values, "done": cursor.done()}),
                Err(e) => {
                    tracing::error!(error = %e, "re-seal batch failed");
                    failure(format!("the re-seal batch failed (nothing of it was written): {e}"))
                }
            }
        }
        Request::KeysRetire { kid } => {
            let kid = kid.as_str();
            if kid == keys.current_kid() {
                return failure(format!(
                    "key {kid} is the current sealing key and cannot be retired; rotate first \
                     (`isto admin keys rotate`), then retire it"
                ));
            }
            if !keys.kids().iter().any(|k| k == kid) {
                return failure(format!("no key with id {kid:?} in the key ring (it has {})", keys.kids().join(", ")));
            }
            match crate::state::sealed_counts(store) {
                Ok((counts, _)) => {
                    let n = counts.get(kid).copied().unwrap_or(0);
                    if n > 0 {
                        return failure(format!(
                            "key {kid} still seals {n} stored value(s); run `isto admin keys rotate --resume` to \
                             re-seal them with the current key, then retire it"
                        ));
                    }
                }
                Err(e) => return failure(format!("counting the sealed values failed: {e}")),
            }
            match keys.retire(kid) {
                Ok(()) => {
                    tracing::info!(kid = %kid, "sealing key retired");
                    json!({"ok": true, "kid": kid})
                }
                Err(e) => failure(e.to_string()),
            }
        }
        other => failure(format!("{} is not a keys op", other.op())),
    }
}

/// Where the key commands go: the running server, or the store and keys opened here.
enum Target {
    Socket(Client),
    Direct { store: Box<Store>, keys: Box<KeyRing> },
}

impl Target {
    fn open(settings: &Settings) -> anyhow::Result<Self> {
        let socket = Client::connect(&settings.admin_socket_path())?;
        if let Connect::Ready(c) = socket {
            return Ok(Self::Socket(c));
        }
        super::require_store(settings, super::NO_STORE)?;
        super::require_key(settings, "your key export")?;
        let store = super::open_offline(settings)?;
        let (keys, _) = KeyRing::load_or_create(&settings.key_path())?;
        Ok(Self::Direct { store: Box::new(store), keys: Box::new(keys) })
    }

    fn route(&self) -> Route {
        match self {
            Self::Socket(_) => Route::Socket,
            Self::Direct { .. } => Route::Direct,
        }
    }

    /// One op; its answer when `ok`, else its error.
    fn ask(&mut self, req: &Request) -> anyhow::Result<Value> {
        super::ok_or_bail(match self {
            Self::Socket(c) => c.request(req)?,
            Self::Direct { store, keys } => answer(store, keys, req),
        })
    }

    fn status(&mut self) -> anyhow::Result<StatusReport> {
        let mut s: StatusReport = serde_json::from_value(self.ask(&Request::KeysStatus)?)
            .context("the server's key status has an unexpected shape")?;
        s.via = self.route();
        Ok(s)
    }
}

/// `isto admin keys status`: every key id, which is current, when it was made, and how
/// many stored values each still seals.
///
/// # Errors
/// No store or key; the store held by another process; the server's refusal.
pub fn keys_status(settings: &Settings, json_output: bool) -> anyhow::Result<StatusReport> {
    let s = Target::open(settings)?.status()?;
    print_json_or(json_output, &s, || {
        print_line(format_args!("{:<10} {:<8} {:<21} {:>10}  file", "key id", "current", "created", "sealed"))?;
        for k in &s.keys {
            print_line(format_args!(
                "{:<10} {:<8} {:<21} {:>10}  {}",
                k.kid,
                if k.current { "yes" } else { "" },
                k.created.as_deref().unwrap_or("unknown"),
                k.sealed,
                k.file.as_deref().unwrap_or("")
            ))?;
        }
        for (kid, n) in &s.unknown {
            print_line(format_args!(
                "{kid:<10} {:<8} {:<21} {n:>10}  MISSING: restore sealing.key.{kid} from a key export",
                "", ""
            ))?;
        }
        print_line(format_args!(
            "{} sealed values in {} rows; handle.key and mac.key are never rotated",
            s.sealed_values, s.rows
        ))?;
        let left = s.left();
        if left > 0 {
            print_line(format_args!(
                "{left} values are still sealed with older keys: run `isto admin keys rotate --resume`"
            ))?;
        }
        let idle: Vec<&str> = s.keys.iter().filter(|k| !k.current && k.sealed == 0).map(|k| k.kid.as_str()).collect();
        if !idle.is_empty() {
            print_line(format_args!(
                "no value uses {}: `isto admin keys retire ID` deletes such a key",
                idle.join(", ")
            ))?;
        }
        Ok(())
    })?;
    Ok(s)
}

/// `isto admin keys rotate [--resume]` (see the module docs): without `resume` a new
/// sealing key is made current first; then every value sealed with an older key is
/// re-sealed, `batch` rows per write transaction, with a progress bar.
///
/// # Errors
/// An unfinished earlier re-seal (without `resume`); no store or key; the rotation or a
/// batch failing (what was done stays done; run it again with `--resume`).
pub fn keys_rotate(settings: &Settings, resume: bool, batch: usize, json_output: bool) -> anyhow::Result<RotateReport> {
    let mut t = Target::open(settings)?;
    let before = t.status()?;
    if !before.unknown.is_empty() {
        bail!(
            "{} stored value(s) are sealed with key id(s) {} that the key ring lacks: restore those key files \
             (`isto admin restore --keys` or copy them into the keys directory) before rotating",
            before.unknown.values().sum::<u64>(),
            before.unknown.keys().cloned().collect::<Vec<_>>().join(", ")
        );
    }
    if before.rotating {
        bail!("{}", rotation_busy());
    }
    let left = before.left();
    if !resume && left > 0 {
        bail!(
            "an earlier re-seal is unfinished: {left} value(s) are still sealed with older keys; run \
             `isto admin keys rotate --resume` to finish it before making another key"
        );
    }
    let (previous, rotated, mut total) = if resume {
        (None, false, left)
    } else {
        let a = t.ask(&Request::KeysRotate)?;
        let kid = a.get("kid").and_then(Value::as_str).unwrap_or_default().to_owned();
        if !json_output {
            print_line(format_args!(
                "new sealing key {kid} is current (was {}); re-sealing {} values",
                before.current, before.sealed_values
            ))?;
        }
        (Some(before.current.clone()), true, before.sealed_values)
    };
    let bar = super::progress(json_output, Some(total), "re-sealing {wide_bar} {pos}/{len} values {per_sec} ETA {eta}");
    let mut resealed = 0u64;
    let mut passes = 0u32;
    let mut now = t.status()?;
    let run = (|| -> anyhow::Result<()> {
        while now.left() > 0 && passes < MAX_PASSES {
            passes += 1;
            if passes > 1 {
                total += now.left();
                bar.set_length(total);
            }
            let mut cursor = Cursor::default();
            let t0 = std::time::Instant::now();
            while !cursor.done() {
                let a = t.ask(&Request::KeysReseal { cursor: Some(cursor.clone()), limit: Some(batch as u64) })?;
                cursor = serde_json::from_value(a["cursor"].clone()).context("the re-seal cursor is malformed")?;
                let n = a.get("values").and_then(Value::as_u64).unwrap_or(0);
                resealed += n;
                bar.inc(n);
                // A pass that makes no progress at all would loop forever: bounded in time.
                if t0.elapsed() > std::time::Duration::from_secs(24 * 3600) {
                    bail!("a re-seal pass took longer than a day; stopped");
                }
            }
            now = t.status()?;
        }
        Ok(())
    })();
    bar.finish_and_clear();
    run.context("the re-seal stopped; every value still opens (its key stays in the ring): run `isto admin keys rotate --resume` to finish")?;
    let retirable: Vec<String> =
        now.keys.iter().filter(|k| !k.current && k.sealed == 0).map(|k| k.kid.clone()).collect();
    let report = RotateReport {
        kid: now.current.clone(),
        previous,
        rotated,
        resealed,
        passes,
        left: now.left(),
        retirable,
        via: t.route(),
        note: ROTATE_NOTE,
    };
    tracing::info!(kid = %report.kid, resealed, passes, left = report.left, "key rotation finished");
    print_json_or(json_output, &report, || {
        print_line(format_args!(
            "{} values re-sealed with key {} in {passes} pass(es); {} left",
            report.resealed, report.kid, report.left
        ))?;
        if report.left > 0 {
            print_line("values were written with older keys meanwhile: run `isto admin keys rotate --resume` again")?;
        }
        if !report.retirable.is_empty() {
            print_line(retirable_line(&report.retirable))?;
        }
        print_line(format_args!("note: {ROTATE_NOTE}"))
    })?;
    Ok(report)
}

/// The hint after a rotation about old keys no value uses (singular or plural).
fn retirable_line(kids: &[String]) -> String {
    match kids {
        [one] => format!("no value uses key {one} any more: `isto admin keys retire {one}` deletes it"),
        many => format!(
            "no value uses keys {} any more: `isto admin keys retire ID` deletes each of them (one ID at a time)",
            many.join(", ")
        ),
    }
}

/// `isto admin keys retire ID`: deletes the old sealing key `kid` (its file, and from
/// the running server's ring).
///
/// # Errors
/// `kid` is the current key, not in the ring, or still seals a value; no store or key;
/// I/O errors.
pub fn keys_retire(settings: &Settings, kid: &str, json_output: bool) -> anyhow::Result<Value> {
    let mut t = Target::open(settings)?;
    let a =
        t.ask(&Request::KeysRetire { kid: kid.to_owned() }).with_context(|| format!("key {kid} was not retired"))?;
    let report = json!({"kid": kid, "retired": true, "via": t.route()});
    print_json_or(json_output, &report, || {
        print_line(format_args!(
            "retired key {kid}: its file is deleted{}",
            if a.is_object() && matches!(t.route(), Route::Socket) {
                " and the running server no longer holds it"
            } else {
                ""
            }
        ))
    })?;
    Ok(report)
}

#[cfg(test)]
mod tests;
