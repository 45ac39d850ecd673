//! Backup and restore: `isto admin backup` against a real `isto serve` child process
//! under a bounded write load, `isto admin restore` into a fresh data directory, and
//! every refusal of a restore leaving the directory as it was. The holder's data is made
//! in-process with the kit first (every table gets rows), on a real redb file; the
//! commands are the real binary. Loopback only; every loop bounded in count and time.

use isto::crypto::KeyRing;
use isto::intents::{ConfirmOutcome, ConsentOutcome};
use isto::sellers::{self, NewSeller};
use isto::state::AppState;
use isto::store::Reads as _;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::kit::load::{admin, load_numbers, mode, numbered, ok_json, rows_of, text, Load, LoadSize, Rows, Serve};
use crate::kit::{token_from_outbox, Fx, Opts};

/// A holder whose every table has rows: offers of a seller feed, a registered seller,
/// a buyer account with a session, a confirmed intent with a hidden limit and matches
/// (deliveries, a pending digest, queued mail), a withdrawn one (erasure index) and a
/// draft. Returns the data dir (kept by the returned temp dir).
pub(crate) fn populated() -> (tempfile::TempDir, PathBuf) {
    let f = Fx::with(Opts { wall_clock: true, ..Opts::default() });
    let h: &AppState = &f.holder;
    let row = |r: &str, title: &str, price: f64| {
        isto::catalogue::parse_json_row(
            &json!({"ref": r, "title": title, "category": "vehicles", "price": {"amount": price, "currency": "EUR"},
                    "area": "Bratislava", "seller": {"name": "Dealer"}, "attributes": {"make": "Škoda", "model": "Octavia"}}),
            &["EUR".to_owned()],
        )
        .unwrap()
    };
    h.catalogue
        .import_offers(vec![row("a", "Škoda Octavia Combi", 9000.0), row("b", "Škoda Octavia RS", 20000.0)])
        .unwrap();
    let added = sellers::add(
        &h.base,
        &NewSeller {
            name: "Auto Centrum".into(),
            email: "sales@auto.example".into(),
            url: None,
            categories: vec!["vehicles".into()],
            regions: vec!["SK".into()],
            invite: false,
        },
    )
    .unwrap();
    f.buyer("signed.in@example.com");
    let publish = |args: Value| {
        let r = h.intents.publish_draft(h.intents.parse_publish(&args).unwrap()).unwrap();
        (r.intent_code, r.consent_url.rsplit('/').next().unwrap().to_owned())
    };
    let octavia = json!({"statement": "Hľadám Škoda Octavia", "criteria": {"category": "vehicles", "make": "skoda", "model": "Octavia"},
                         "area": "SK", "hiddenLimit": 12000});
    let (_, consent) = publish(octavia.clone());
    assert_eq!(h.intents.give_consent(&consent, "buyer@example.com", "en").unwrap(), ConsentOutcome::Recorded);
    let confirm = token_from_outbox(h, "/confirm/");
    assert_eq!(h.intents.confirm(&confirm).unwrap(), ConfirmOutcome::Activated);
    let (code, consent) = publish(octavia.clone());
    assert_eq!(h.intents.give_consent(&consent, "other@example.com", "en").unwrap(), ConsentOutcome::Recorded);
    h.intents.withdraw_by_code(&code, None).unwrap();
    publish(octavia.clone());
    // A pseudonymous intent with a seller's reply answered but not yet matched (the
    // `pending_replies` queue; the kit runs no mail worker to drain it).
    let mut open = octavia;
    open["visibility"] = json!("pseudonymous");
    let (_, consent) = publish(open);
    assert_eq!(h.intents.give_consent(&consent, "third@example.com", "en").unwrap(), ConsentOutcome::Recorded);
    let confirm = token_from_outbox(h, "/confirm/");
    assert_eq!(h.intents.confirm(&confirm).unwrap(), ConfirmOutcome::Activated);
    let profile = sellers::find(&h.base, &added.seller.seller_id).unwrap();
    let ids: Vec<String> = h.base.store().read(|rx| rx.active_ids()).unwrap();
    let seen = ids
        .iter()
        .find(|id| {
            let rec: Option<isto::records::IntentRecord> = h.base.store().read(|rx| rx.intent(id)).unwrap();
            rec.is_some_and(|r| r.visibility == isto::protocol::Visibility::Pseudonymous)
        })
        .unwrap();
    let args = json!({"source": {"kind": "reply"}, "inReplyTo": sellers::handle(&h.base, &profile.seller_id, seen),
        "title": "Škoda Octavia Combi", "category": "vehicles", "attributes": {"make": "Škoda", "model": "Octavia"},
        "price": {"amount": 9000, "currency": "EUR"}, "area": "Bratislava"});
    let reply = sellers::parse_reply(&h.base, &profile, &args).unwrap();
    assert!(sellers::submit_reply(&h.base, &profile, &reply).unwrap().accepted);
    let dir = f.dir.path().to_owned();
    let Fx { dir: keep, holder, app, rt, stop, .. } = f;
    stop.cancel();
    drop(app);
    drop(holder);
    drop(rt);
    (keep, dir)
}

/// The tables the kit's holder fills (all of them, checked here so that a new table
/// gets rows in this fixture too).
pub(crate) fn assert_every_table_has_rows(rows: &Rows, what: &str, except: &[&str]) {
    for t in isto::store::table_names().into_iter().filter(|t| !except.contains(t)) {
        assert!(rows.get(t).is_some_and(|r| !r.is_empty()), "{what}: table {t} has no rows");
    }
}

/// Every file of a directory tree with its bytes (to see that a refusal changed nothing).
pub(crate) fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.insert(p.clone(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

pub(crate) fn copy_keys(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.join("keys")).unwrap();
    for e in std::fs::read_dir(from.join("keys")).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, to.join("keys").join(p.file_name().unwrap())).unwrap();
    }
}

/// Drafts the load publishes at most (the per-client draft quota is 60 an hour).
const DRAFTS: u64 = 50;

#[test]
fn a_backup_under_write_load_restores_to_the_store_as_it_was_at_the_backup() {
    let (_keep, data) = populated();
    let before = rows_of(&data.join("isto.redb"));
    assert_every_table_has_rows(&before, "the fixture", &[]);
    let work = tempfile::tempdir().unwrap();
    let serve = Serve::start(&data, work.path().join("serve.log"));

    // The load (see `kit::load`): offer imports through the admin socket and drafts on
    // /mcp (under the per-client draft quota), bounded in count and time.
    let load = Load::start(&serve, &data, LoadSize { imports: 3000, drafts: DRAFTS, consents: 0 }, None);
    let (written, published) = (load.imports.clone(), load.drafts.clone());
    load.wait_for(&serve, 20, 3, 0);
    let file = work.path().join("backups").join("holder.isto-backup");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let (at_start, drafts_at_start) = (written.load(Ordering::SeqCst), published.load(Ordering::SeqCst));
    let report = ok_json(&admin(&data, &["backup", "--out", file.to_str().unwrap(), "--json"]));
    let (at_end, drafts_at_end) = (written.load(Ordering::SeqCst), published.load(Ordering::SeqCst));
    // A restore never runs under a server, --force or not.
    let refused = admin(&data, &["restore", file.to_str().unwrap(), "--force"]);
    assert!(!refused.status.success() && text(&refused).contains("`isto serve` is running"), "{}", text(&refused));
    // Let the load go on after the backup, then stop it and the server.
    let t1 = Instant::now();
    while (written.load(Ordering::SeqCst) < at_end + 20
        || published.load(Ordering::SeqCst) < (drafts_at_end + 2).min(DRAFTS))
        && t1.elapsed() < Duration::from_secs(20)
    {
        std::thread::sleep(Duration::from_millis(10));
    }
    load.stop();
    serve.stop();

    assert_eq!(report["via"], "socket", "{report}");
    assert_eq!(report["keysIncluded"], false);
    assert!(report["note"].as_str().unwrap().contains("NOT in it"), "{report}");
    assert_eq!(report["header"]["format"], "isto-backup");
    assert_eq!(report["header"]["version"], 1);
    assert_eq!(report["header"]["schema"], isto::store::SCHEMA_VERSION);
    assert_eq!(mode(&file), 0o600);
    let leftovers: Vec<_> =
        std::fs::read_dir(file.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers.len(), 1, "no temp file is left beside the backup: {leftovers:?}");
    let after = rows_of(&data.join("isto.redb"));

    // Restore into a fresh data directory with the holder's key ring.
    let fresh = work.path().join("restored");
    copy_keys(&data, &fresh);
    let restored_report = ok_json(&admin(&fresh, &["restore", file.to_str().unwrap(), "--json"]));
    assert_eq!(restored_report["rows"], report["trailer"]["rows"], "{restored_report}");
    assert!(restored_report["sealedOpened"].as_u64().unwrap() >= 3, "{restored_report}");
    if !crate::kit::backend_is_postgres() {
        assert_eq!(mode(&fresh.join("isto.redb")), 0o600);
    }
    let restored = rows_of(&fresh.join("isto.redb"));
    // The server sends the pending digest at once (and forgets its due time), and its
    // mail worker matches the queued reply at start (the queue empties).
    assert_every_table_has_rows(&restored, "the restored store", &["digest_due", "pending_replies"]);
    assert_eq!(restored.values().map(|t| t.len() as u64).sum::<u64>(), report["trailer"]["rows"].as_u64().unwrap());

    // One transaction: the load's offers in the backup are exactly the first m of them,
    // each with its feed reference, and m lies between the loads seen around the backup.
    let loaded = load_numbers(&restored);
    let m = loaded.len() as u64;
    assert_eq!(loaded, (0..m).collect::<BTreeSet<u64>>(), "a prefix of the load");
    // (An import committed but not yet answered when the backup ended may be in it: +1.)
    assert!(m >= at_start && m <= at_end + 1, "{at_start} ≤ {m} ≤ {at_end} + 1");
    assert!((load_numbers(&after).len() as u64) > m, "the load went on after the backup");
    let drafted = numbered(&restored, "intents", "Load draft ");
    let d = drafted.len() as u64;
    assert_eq!(drafted, (0..d).collect::<BTreeSet<u64>>(), "a prefix of the drafts");
    assert!(d >= drafts_at_start && d <= drafts_at_end + 1, "{drafts_at_start} ≤ {d} ≤ {drafts_at_end} + 1");
    if drafts_at_end < DRAFTS {
        let later = numbered(&after, "intents", "Load draft ").len() as u64;
        assert!(later > d, "the drafts went on after the backup ({later} > {d})");
    }
    let refs = restored["offer_refs"].values().filter(|l| l.contains("load-")).count() as u64;
    assert_eq!(refs, m, "every load offer with its reference, no reference without its offer");
    // Every row equals the source's: as it was before the server started, or as the
    // server left it (rows the load or the server wrote). Counters in `meta` and the
    // outbox (mail the server queued and sent meanwhile) may be in neither.
    for (table, rows) in &restored {
        if table == "meta" || table == "outbox" {
            continue;
        }
        for (k, line) in rows {
            let same = |r: &Rows| r.get(table).and_then(|t| t.get(k)) == Some(line);
            assert!(same(&before) || same(&after), "table {table}: row {k} is in neither the source before nor after");
        }
    }
    // Rows nobody changed meanwhile are all there.
    for table in ["sellers", "seller_names", "delivered", "delivery_log"] {
        for (k, line) in &before[table] {
            assert_eq!(restored[table].get(k), Some(line), "table {table}: row {k}");
        }
    }

    // The restored holder serves: it starts and its store passes a backup of its own.
    let serve = Serve::start(&fresh, work.path().join("restored.log"));
    let again = work.path().join("again.isto-backup");
    let second = ok_json(&admin(&fresh, &["backup", "--out", again.to_str().unwrap(), "--json"]));
    assert!(second["trailer"]["rows"].as_u64().unwrap() >= m);
    serve.stop();
}

/// A populated holder's data dir and an offline backup of it.
pub(crate) fn backed_up(work: &Path) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let (keep, data) = populated();
    let file = work.join("b.isto-backup");
    let out = admin(&data, &["backup", "--out", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let says = text(&out);
    assert!(says.contains("NOT in it") && says.contains("keys export"), "the keys note is on screen: {says}");
    (keep, data, file)
}

/// Rewrites a backup with `edit` applied to its header (zstd JSON Lines).
fn with_header(file: &Path, to: &Path, edit: impl FnOnce(&mut Value)) {
    let raw = zstd::decode_all(std::fs::File::open(file).unwrap()).unwrap();
    let text = String::from_utf8(raw).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let mut h: Value = serde_json::from_str(&lines[0]).unwrap();
    edit(&mut h);
    lines[0] = h.to_string();
    let body = lines.join("\n") + "\n";
    std::fs::write(to, zstd::encode_all(body.as_bytes(), 3).unwrap()).unwrap();
}

#[test]
fn offline_backup_verify_and_every_refusal_of_restore_leaves_the_directory_untouched() {
    let work = tempfile::tempdir().unwrap();
    let (_keep, data, file) = backed_up(work.path());
    assert_eq!(mode(&file), 0o600);
    let v = ok_json(&admin(&data, &["backup", "--verify", file.to_str().unwrap(), "--json"]));
    assert_eq!(v["header"]["format"], "isto-backup");
    // A check exports nothing, so it says nothing of exporting (nothing on stderr).
    let human = admin(&data, &["backup", "--verify", file.to_str().unwrap()]);
    assert!(human.status.success() && human.stderr.is_empty(), "{}", text(&human));
    assert!(text(&human).contains("is a good backup") && !text(&human).contains("exporting"), "{}", text(&human));
    // An existing --out is kept without --force.
    let again = admin(&data, &["backup", "--out", file.to_str().unwrap()]);
    assert!(!again.status.success() && text(&again).contains("--force"), "{}", text(&again));

    // One corrupt byte: the check fails, naming the damage.
    let corrupt = work.path().join("corrupt.isto-backup");
    let mut bytes = std::fs::read(&file).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x55;
    std::fs::write(&corrupt, &bytes).unwrap();
    let out = admin(&data, &["backup", "--verify", corrupt.to_str().unwrap()]);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("damaged"), "{}", text(&out));

    // Into the non-empty source directory without --force: refused, nothing changed.
    let untouched = tree(&data);
    let out = admin(&data, &["restore", file.to_str().unwrap()]);
    assert!(
        !out.status.success() && text(&out).contains("not empty") && text(&out).contains("--force"),
        "{}",
        text(&out)
    );
    assert!(tree(&data) == untouched, "the refused restore changed the data directory");
    // A corrupt file is refused before anything is written, even with --force.
    let out = admin(&data, &["restore", corrupt.to_str().unwrap(), "--force"]);
    assert!(!out.status.success() && text(&out).contains("damaged"), "{}", text(&out));
    assert!(tree(&data) == untouched, "the refused restore changed the data directory");

    // A newer format version, and a newer schema: refused, naming the versions.
    let newer = work.path().join("newer.isto-backup");
    with_header(&file, &newer, |h| h["version"] = json!(2));
    let fresh = work.path().join("fresh");
    copy_keys(&data, &fresh);
    let untouched_fresh = tree(&fresh);
    let out = admin(&fresh, &["restore", newer.to_str().unwrap()]);
    assert!(!out.status.success() && text(&out).contains("format version 2, newer"), "{}", text(&out));
    with_header(&file, &newer, |h| h["schema"] = json!(isto::store::SCHEMA_VERSION + 1));
    let out = admin(&fresh, &["restore", newer.to_str().unwrap()]);
    assert!(!out.status.success() && text(&out).contains("schema version"), "{}", text(&out));
    assert!(tree(&fresh) == untouched_fresh, "the refused restore changed the data directory");

    // Another key ring: refused before the store is renamed into place; no temp file left.
    let other = work.path().join("other");
    KeyRing::load_or_create(&other.join("keys").join("sealing.key")).unwrap();
    let untouched_other = tree(&other);
    let out = admin(&other, &["restore", file.to_str().unwrap(), "--json"]);
    assert!(!out.status.success() && text(&out).contains("cannot open"), "{}", text(&out));
    assert!(tree(&other) == untouched_other, "no store, no temp file");
    // Also when the key ids match but the sealed bytes were changed: every value is opened.
    let tampered = work.path().join("tampered.isto-backup");
    {
        let raw = String::from_utf8(zstd::decode_all(std::fs::File::open(&file).unwrap()).unwrap()).unwrap();
        let mut lines: Vec<String> = raw.lines().map(str::to_owned).collect();
        let i = lines.iter().position(|l| l.contains("\"ct\":\"")).unwrap();
        let at = lines[i].find("\"ct\":\"").unwrap() + 6;
        let flipped = if &lines[i][at..at + 1] == "A" { "B" } else { "A" };
        lines[i].replace_range(at..at + 1, flipped);
        // Recompute the trailer's checksum, so only the key ring can notice.
        let n = lines.len() - 1;
        use sha2::Digest as _;
        let mut sha = sha2::Sha256::new();
        for l in &lines[..n] {
            sha.update(l.as_bytes());
            sha.update(b"\n");
        }
        let hex: String = sha.finalize().iter().map(|b| format!("{b:02x}")).collect();
        let mut end: Value = serde_json::from_str(&lines[n]).unwrap();
        end["end"]["sha256"] = json!(hex);
        lines[n] = end.to_string();
        std::fs::write(&tampered, zstd::encode_all((lines.join("\n") + "\n").as_bytes(), 3).unwrap()).unwrap();
    }
    let out = admin(&fresh, &["restore", tampered.to_str().unwrap()]);
    assert!(!out.status.success() && text(&out).contains("cannot open a sealed value"), "{}", text(&out));
    assert!(tree(&fresh) == untouched_fresh, "no store, no temp file");

    // The right key ring: restored; and --force replaces a store.
    let r = ok_json(&admin(&fresh, &["restore", file.to_str().unwrap(), "--json"]));
    assert_eq!(r["replaced"], false);
    assert_eq!(rows_of(&fresh.join("isto.redb")), rows_of(&data.join("isto.redb")));
    let r = ok_json(&admin(&fresh, &["restore", file.to_str().unwrap(), "--force", "--json"]));
    assert_eq!(r["replaced"], true);
    assert_eq!(rows_of(&fresh.join("isto.redb")), rows_of(&data.join("isto.redb")));
}

#[test]
fn keys_export_is_private_refuses_to_overwrite_and_restores_with_the_backup() {
    let work = tempfile::tempdir().unwrap();
    let (_keep, data, file) = backed_up(work.path());
    let keys = work.path().join("keys.json");
    let out = admin(&data, &["keys", "export", "--out", keys.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("WARNING"), "{}", text(&out));
    assert_eq!(mode(&keys), 0o600);
    let out = admin(&data, &["keys", "export", "--out", keys.to_str().unwrap()]);
    assert!(!out.status.success() && text(&out).contains("--force"), "{}", text(&out));
    let r = ok_json(&admin(&data, &["keys", "export", "--out", keys.to_str().unwrap(), "--force", "--json"]));
    assert_eq!(r["kids"].as_array().unwrap().len(), 1);
    assert!(r["warning"].as_str().unwrap().contains("sealing keys"));
    assert_eq!(mode(&keys), 0o600);

    // A new machine: the backup and the key export are all it needs; with the key export
    // of another holder the restore is refused and leaves nothing behind, not even the
    // directory or the keys.
    let fresh = work.path().join("new-host");
    let other = work.path().join("other-holder");
    KeyRing::load_or_create(&other.join("keys").join("sealing.key")).unwrap();
    let other_keys = work.path().join("other-keys.json");
    assert!(admin(&other, &["keys", "export", "--out", other_keys.to_str().unwrap()]).status.success());
    let out = admin(&fresh, &["restore", file.to_str().unwrap(), "--keys", other_keys.to_str().unwrap()]);
    assert!(!out.status.success() && text(&out).contains("cannot open"), "{}", text(&out));
    assert!(!fresh.exists(), "a refused restore leaves no data directory behind");
    let r = ok_json(&admin(&fresh, &["restore", file.to_str().unwrap(), "--keys", keys.to_str().unwrap(), "--json"]));
    assert!(r["sealedOpened"].as_u64().unwrap() >= 3, "{r}");
    assert_eq!(rows_of(&fresh.join("isto.redb")), rows_of(&data.join("isto.redb")));
    assert_eq!(mode(&fresh.join("keys").join("sealing.key")), 0o600);
    assert_eq!(
        std::fs::read(fresh.join("keys/sealing.key")).unwrap(),
        std::fs::read(data.join("keys/sealing.key")).unwrap()
    );
    // The handle key travels too: sellers see the intents under the same handles.
    assert_eq!(mode(&fresh.join("keys").join("handle.key")), 0o600);
    assert_eq!(
        std::fs::read(fresh.join("keys/handle.key")).unwrap(),
        std::fs::read(data.join("keys/handle.key")).unwrap()
    );
    // And the MAC root: person keys, pseudonyms and keyed hashes stay the same.
    assert_eq!(mode(&fresh.join("keys").join("mac.key")), 0o600);
    assert_eq!(std::fs::read(fresh.join("keys/mac.key")).unwrap(), std::fs::read(data.join("keys/mac.key")).unwrap());
}

/// Whether `o` failed saying that `--out` is inside the data directory `data`.
fn refused_inside(o: &std::process::Output, data: &Path) -> bool {
    let data = std::fs::canonicalize(data).unwrap();
    !o.status.success()
        && text(o).contains("inside the data directory")
        && text(o).contains(data.to_str().unwrap())
        && text(o).contains("outside the data directory")
}

#[test]
fn out_inside_the_data_directory_is_refused_even_with_force_and_through_symlinks() {
    let work = tempfile::tempdir().unwrap();
    let (_keep, data, file) = backed_up(work.path());
    let untouched = tree(&data);
    let s = |p: &Path| p.to_str().unwrap().to_owned();
    let store = data.join("isto.redb");
    let key = data.join("keys").join("sealing.key");
    for target in [&store, &key, &data.join("new.isto-backup")] {
        let o = admin(&data, &["backup", "--out", &s(target), "--force"]);
        assert!(refused_inside(&o, &data), "{}", text(&o));
        let o = admin(&data, &["keys", "export", "--out", &s(target), "--force"]);
        assert!(refused_inside(&o, &data), "{}", text(&o));
    }
    // A symlink outside pointing at the live store, and one to the data directory.
    let link = work.path().join("link.isto-backup");
    std::os::unix::fs::symlink(&store, &link).unwrap();
    let dir_link = work.path().join("dir-link");
    std::os::unix::fs::symlink(&data, &dir_link).unwrap();
    for out in [s(&link), format!("{}/keys/sealing.key", s(&dir_link)), format!("{}/x.isto-backup", s(&dir_link))] {
        let o = admin(&data, &["backup", "--out", &out, "--force"]);
        assert!(refused_inside(&o, &data), "{out}: {}", text(&o));
        let o = admin(&data, &["keys", "export", "--out", &out, "--force"]);
        assert!(refused_inside(&o, &data), "{out}: {}", text(&o));
    }
    // A dangling symlink pointing into the data directory too.
    let dangling_in = work.path().join("dangling-in");
    std::os::unix::fs::symlink(data.join("gone.isto-backup"), &dangling_in).unwrap();
    let o = admin(&data, &["backup", "--out", &s(&dangling_in), "--force"]);
    assert!(refused_inside(&o, &data), "{}", text(&o));
    assert!(tree(&data) == untouched, "a refused --out changed the data directory");
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link is kept");
    // The store still serves: a server starts on it and refuses the same --out.
    let serve = Serve::start(&data, work.path().join("serve.log"));
    let o = admin(&data, &["backup", "--out", &s(&store), "--force"]);
    assert!(refused_inside(&o, &data), "{}", text(&o));
    let o = admin(&data, &["backup", "--out", &s(&link), "--force"]);
    assert!(refused_inside(&o, &data), "{}", text(&o));
    let ok = ok_json(&admin(&data, &["backup", "--out", &s(&work.path().join("fine.isto-backup")), "--json"]));
    assert_eq!(ok["via"], "socket");
    serve.stop();
    assert!(ok_json(&admin(&data, &["backup", "--verify", &s(&file), "--json"]))["header"]["format"] == "isto-backup");
}

#[test]
fn every_existing_out_name_needs_force_and_a_missing_directory_is_named() {
    let work = tempfile::tempdir().unwrap();
    let (_keep, data, _file) = backed_up(work.path());
    let s = |p: &Path| p.to_str().unwrap().to_owned();
    // A dangling symlink (pointing outside the data directory) is an existing name.
    let dangling = work.path().join("dangling.isto-backup");
    std::os::unix::fs::symlink(work.path().join("nowhere"), &dangling).unwrap();
    let keys_dangling = work.path().join("dangling-keys.json");
    std::os::unix::fs::symlink(work.path().join("nowhere-keys"), &keys_dangling).unwrap();
    for (cmd, out) in [(&["backup"][..], &dangling), (&["keys", "export"][..], &keys_dangling)] {
        let mut args: Vec<String> = cmd.iter().map(|a| (*a).to_owned()).collect();
        args.extend(["--out".to_owned(), s(out)]);
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = admin(&data, &argv);
        assert!(!o.status.success() && text(&o).contains("exists") && text(&o).contains("--force"), "{}", text(&o));
        assert!(std::fs::symlink_metadata(out).unwrap().file_type().is_symlink(), "kept without --force");
        let mut forced = argv.clone();
        forced.push("--force");
        let o = admin(&data, &forced);
        assert!(o.status.success(), "{}", text(&o));
        assert!(std::fs::symlink_metadata(out).unwrap().file_type().is_file(), "replaced with --force");
    }
    // A missing directory is named, not the temp file.
    let missing = work.path().join("nodir");
    for cmd in [&["backup"][..], &["keys", "export"][..]] {
        let mut argv = cmd.to_vec();
        let out = s(&missing.join("x"));
        argv.extend(["--out", &out]);
        let o = admin(&data, &argv);
        assert!(!o.status.success(), "{}", text(&o));
        assert!(text(&o).contains(&format!("the directory {} of --out does not exist", s(&missing))), "{}", text(&o));
        assert!(!text(&o).contains("partial"), "{}", text(&o));
    }
}

/// Rewrites a backup's rows with `edit` (JSON values of the row lines) and recomputes
/// what a verify checks: the header's and trailer's row counts per table and the
/// checksum, so only the restore's record checks can notice.
pub(crate) fn with_rows(file: &Path, to: &Path, edit: impl FnOnce(&mut Vec<Value>)) {
    let raw = String::from_utf8(zstd::decode_all(std::fs::File::open(file).unwrap()).unwrap()).unwrap();
    let lines: Vec<&str> = raw.lines().collect();
    let mut header: Value = serde_json::from_str(lines[0]).unwrap();
    let mut end: Value = serde_json::from_str(lines[lines.len() - 1]).unwrap();
    let mut rows: Vec<Value> = lines[1..lines.len() - 1].iter().map(|l| serde_json::from_str(l).unwrap()).collect();
    edit(&mut rows);
    let mut tables: BTreeMap<String, u64> = BTreeMap::new();
    for r in &rows {
        *tables.entry(r["t"].as_str().unwrap().to_owned()).or_default() += 1;
    }
    for t in isto::store::table_names() {
        header["tables"][t] = json!(tables.get(t).copied().unwrap_or(0));
    }
    header["rows"] = json!(rows.len());
    end["end"]["rows"] = json!(rows.len());
    end["end"]["tables"] = header["tables"].clone();
    let mut out = vec![header.to_string()];
    out.extend(rows.iter().map(Value::to_string));
    use sha2::Digest as _;
    let mut sha = sha2::Sha256::new();
    for l in &out {
        sha.update(l.as_bytes());
        sha.update(b"\n");
    }
    end["end"]["sha256"] = json!(sha.finalize().iter().map(|b| format!("{b:02x}")).collect::<String>());
    out.push(end.to_string());
    std::fs::write(to, zstd::encode_all((out.join("\n") + "\n").as_bytes(), 3).unwrap()).unwrap();
}

#[test]
fn a_restore_refuses_records_that_do_not_decode_and_index_rows_without_their_record() {
    let work = tempfile::tempdir().unwrap();
    let (_keep, data, file) = backed_up(work.path());
    let fresh = work.path().join("fresh");
    copy_keys(&data, &fresh);
    let untouched = tree(&fresh);
    let s = |p: &Path| p.to_str().unwrap().to_owned();
    // The untouched rewrite restores (the helper itself keeps a backup valid)...
    let same = work.path().join("same.isto-backup");
    with_rows(&file, &same, |_| ());
    assert!(
        ok_json(&admin(&data, &["backup", "--verify", &s(&same), "--json"]))["header"]["rows"].as_u64().unwrap() > 0
    );
    let insert_after = |rows: &mut Vec<Value>, table: &str, row: Value| {
        let at = rows.iter().rposition(|r| r["t"] == table).map_or(rows.len(), |i| i + 1);
        rows.insert(at, row);
    };
    type Edit = Box<dyn Fn(&mut Vec<Value>)>;
    let cases: Vec<(&str, Edit, Vec<&str>)> = vec![
        (
            "bogus-status",
            Box::new(|rows: &mut Vec<Value>| {
                let r = rows.iter_mut().find(|r| r["t"] == "intents").unwrap();
                r["v"]["status"] = json!("bogus");
            }),
            vec!["table intents", "does not decode", "bogus", "nothing was restored"],
        ),
        (
            "damaged-target",
            Box::new(|rows: &mut Vec<Value>| {
                let r = rows.iter_mut().find(|r| r["t"] == "intent_targets").expect("an active intent's target row");
                r["v"]["status"] = json!("bogus");
            }),
            vec!["table intent_targets", "does not decode", "bogus", "nothing was restored"],
        ),
        (
            "stale-target",
            Box::new(|rows: &mut Vec<Value>| {
                let r = rows.iter_mut().find(|r| r["t"] == "intent_targets").expect("an active intent's target row");
                let until = r["v"]["valid_until"].as_i64().expect("validUntil in unix µs");
                r["v"]["valid_until"] = json!(until - 1_000_000);
            }),
            vec!["table intent_targets", "differs from its record", "nothing was restored"],
        ),
        (
            "dangling-active",
            Box::new(move |rows: &mut Vec<Value>| {
                insert_after(rows, "active", json!({"t": "active", "k": "int_gone"}));
            }),
            vec!["table active", "intent int_gone", "not in table intents", "nothing was restored"],
        ),
        (
            "dangling-token",
            Box::new(move |rows: &mut Vec<Value>| {
                insert_after(rows, "tokens", json!({"t": "tokens", "k": "confirm:00", "v": "int_gone2"}));
            }),
            vec!["table tokens", "intent int_gone2", "nothing was restored"],
        ),
        (
            "damaged-account",
            Box::new(move |rows: &mut Vec<Value>| {
                let account = json!({"id": "acc_damaged", "role": "buyer", "created_at": "2026-12-01T10:00:00Z"});
                insert_after(rows, "records", json!({"t": "records", "k": "account:acc_damaged", "v": account}));
            }),
            vec!["table records", "store record account:acc_damaged is corrupt", "nothing was restored"],
        ),
        (
            "damaged-session",
            Box::new(move |rows: &mut Vec<Value>| {
                let session = json!({"account_id": "acc_x", "created_at": 1, "expires_at": "in two weeks"});
                insert_after(rows, "records", json!({"t": "records", "k": "session:00ff", "v": session}));
            }),
            vec!["table records", "store record session:00ff is corrupt", "expected i64", "nothing was restored"],
        ),
    ];
    for (name, edit, says) in cases {
        let bad = work.path().join(format!("{name}.isto-backup"));
        with_rows(&file, &bad, |rows| edit(rows));
        // It passes the file checks: only the record checks can refuse it.
        assert!(admin(&data, &["backup", "--verify", &s(&bad)]).status.success(), "{name}");
        let o = admin(&fresh, &["restore", &s(&bad)]);
        assert!(!o.status.success(), "{name}: {}", text(&o));
        for w in says {
            assert!(text(&o).contains(w), "{name}: {w:?} in {}", text(&o));
        }
        assert!(tree(&fresh) == untouched, "{name}: the refused restore changed the data directory");
    }
    let r = ok_json(&admin(&fresh, &["restore", &s(&same), "--json"]));
    assert_eq!(r["replaced"], false);
    let stats = admin(&fresh, &["stats", "--json"]);
    assert!(stats.status.success(), "{}", text(&stats));
}

#[test]
fn a_backup_stream_cut_off_by_the_server_says_so_and_leaves_no_file() {
    use std::io::{BufRead as _, Write as _};
    let work = tempfile::tempdir().unwrap();
    let (_keep, data, file) = backed_up(work.path());
    let raw = String::from_utf8(zstd::decode_all(std::fs::File::open(&file).unwrap()).unwrap()).unwrap();
    let lines: Vec<String> = raw.lines().map(str::to_owned).collect();
    // A server that dies mid-stream: the admin socket answers the ping, sends the header
    // and some rows, then half a row, and closes (a fake at the real socket path).
    for cut_mid_line in [true, false] {
        let sock = data.join("admin.sock");
        let _ = std::fs::remove_file(&sock);
        let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let sent = lines.clone();
        let server = std::thread::spawn(move || {
            let (conn, _) = listener.accept().unwrap();
            conn.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let mut reader = std::io::BufReader::new(conn.try_clone().unwrap());
            let mut w = conn;
            let mut req = String::new();
            reader.read_line(&mut req).unwrap();
            assert!(req.contains("ping"), "{req}");
            writeln!(w, "{}", json!({"ok": true, "version": "0.0.0"})).unwrap();
            req.clear();
            reader.read_line(&mut req).unwrap();
            assert!(req.contains("backup"), "{req}");
            for l in &sent[..3] {
                writeln!(w, "{l}").unwrap();
            }
            if cut_mid_line {
                w.write_all(&sent[3].as_bytes()[..sent[3].len() / 2]).unwrap();
            }
            w.flush().unwrap();
        });
        let dir = work.path().join(format!("out-{cut_mid_line}"));
        std::fs::create_dir_all(&dir).unwrap();
        let out = admin(&data, &["backup", "--out", dir.join("cut.isto-backup").to_str().unwrap()]);
        server.join().unwrap();
        let says = text(&out);
        assert!(!out.status.success(), "{says}");
        assert!(says.contains("the server closed the admin socket during the backup"), "{says}");
        assert!(says.contains("start `isto serve` again and run the backup again"), "{says}");
        assert!(!says.contains("not a row") && !says.contains("EOF while parsing"), "{says}");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "no partial file is left");
        std::fs::remove_file(&sock).unwrap();
    }
}

/// `isto ARGS` on `data` as a user who cannot write the store: uid 65534 when this test
/// runs as root (who could write anything), else this user with the store made
/// read-only. Bounded: 60 s.
fn as_other_user(data: &Path, args: &[&str]) -> std::process::Output {
    use std::os::unix::process::CommandExt as _;
    let mut c = crate::kit::load::isto(data);
    c.args(args).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    if nix_is_root() {
        c.uid(65534).gid(65534);
    }
    let child = c.spawn().unwrap();
    let t0 = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(t0.elapsed() < Duration::from_secs(60));
    out
}

fn nix_is_root() -> bool {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::metadata("/proc/self").map(|m| m.uid() == 0).unwrap_or(false)
}

#[test]
fn a_store_the_user_cannot_write_is_named_with_a_hint_by_every_command_and_serve() {
    if !crate::kit::redb_only("a store the user cannot write", "about the redb file's permissions") {
        return;
    }
    use std::os::unix::fs::PermissionsExt as _;
    let (keep, data) = populated();
    let store = data.join("isto.redb");
    let set = |p: &Path, m: u32| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
    if nix_is_root() {
        // Readable (so the commands get as far as opening the store), not writable.
        for d in [keep.path(), data.as_path(), &data.join("keys")] {
            set(d, 0o755);
        }
        for e in std::fs::read_dir(data.join("keys")).unwrap() {
            set(&e.unwrap().path(), 0o644);
        }
        set(&store, 0o644);
    } else {
        set(&store, 0o400);
    }
    let shown = store.to_str().unwrap();
    for args in [&["admin", "stats"][..], &["admin", "keys", "status"][..], &["admin", "migrate", "--dry-run"][..]] {
        let o = as_other_user(&data, args);
        let says = text(&o);
        assert!(!o.status.success(), "{args:?}: {says}");
        assert!(says.contains(&format!("cannot open the store {shown}")), "{args:?}: {says}");
        assert!(
            says.contains("run as the data directory's owner (e.g. `sudo -u isto isto admin …`)"),
            "{args:?}: {says}"
        );
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let o = {
        use std::os::unix::process::CommandExt as _;
        let mut c = crate::kit::load::isto(&data);
        c.arg("serve")
            .env("ISTO_LISTEN", format!("127.0.0.1:{port}"))
            .env("ISTO_PUBLIC_URL", format!("http://127.0.0.1:{port}"))
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        if nix_is_root() {
            c.uid(65534).gid(65534);
        }
        c.output().unwrap()
    };
    let says = text(&o);
    assert!(!o.status.success(), "{says}");
    assert!(
        says.contains(&format!("cannot open the store {shown}")) && says.contains("data directory's owner"),
        "{says}"
    );
    set(&store, 0o600);

    // Not a store at all: serve names the file.
    std::fs::write(&store, b"not a redb file, just text, long enough to be read as a header..........").unwrap();
    let o = crate::kit::load::isto(&data)
        .arg("serve")
        .env("ISTO_LISTEN", format!("127.0.0.1:{port}"))
        .env("ISTO_PUBLIC_URL", format!("http://127.0.0.1:{port}"))
        .output()
        .unwrap();
    let says = text(&o);
    assert!(!o.status.success() && says.contains(&format!("cannot open the store {shown}")), "{says}");
}

#[test]
fn restore_keys_adds_a_retired_old_key_to_an_existing_ring_and_refuses_another_holders() {
    let work = tempfile::tempdir().unwrap();
    let (_keep, data, file) = backed_up(work.path());
    let s = |p: &Path| p.to_str().unwrap().to_owned();
    let old_export = work.path().join("old-keys.json");
    assert!(admin(&data, &["keys", "export", "--out", &s(&old_export)]).status.success());
    let old_kid = ok_json(&admin(&data, &["keys", "status", "--json"]))["current"].as_str().unwrap().to_owned();
    // Rotate, re-seal and retire the old key: the ring no longer opens the old backup.
    let r = ok_json(&admin(&data, &["keys", "rotate", "--json"]));
    assert_eq!(r["left"], 0, "{r}");
    assert!(admin(&data, &["keys", "retire", &old_kid]).status.success());
    let keys_before: BTreeMap<String, Vec<u8>> = ["sealing.key", "handle.key", "mac.key"]
        .iter()
        .map(|f| ((*f).to_owned(), std::fs::read(data.join("keys").join(f)).unwrap()))
        .collect();
    let o = admin(&data, &["restore", &s(&file), "--force"]);
    assert!(!o.status.success() && text(&o).contains(&old_kid) && text(&o).contains("--keys EXPORT"), "{}", text(&o));
    // Another holder's export: refused (its handle.key and mac.key differ), nothing changed.
    let other = work.path().join("other");
    KeyRing::load_or_create(&other.join("keys").join("sealing.key")).unwrap();
    let other_export = work.path().join("other-keys.json");
    assert!(admin(&other, &["keys", "export", "--out", &s(&other_export)]).status.success());
    // (Opening the store file to see whether a server holds it rewrites redb's header
    // bytes, not its rows: the store is compared by rows.)
    let untouched = tree(&data);
    let rows_before = rows_of(&data.join("isto.redb"));
    let o = admin(&data, &["restore", &s(&file), "--force", "--keys", &s(&other_export)]);
    assert!(!o.status.success() && text(&o).contains("another holder's key export"), "{}", text(&o));
    let now = tree(&data);
    let changed: Vec<_> = now
        .iter()
        .filter(|(p, b)| untouched.get(*p) != Some(b) && !p.ends_with("isto.redb"))
        .map(|(p, _)| p.clone())
        .collect();
    assert!(rows_of(&data.join("isto.redb")) == rows_before, "the refused restore changed the store's rows");
    assert!(now.len() == untouched.len() && changed.is_empty(), "the refused restore changed {changed:?}");
    let leftovers: Vec<_> = std::fs::read_dir(&data).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(!leftovers.iter().any(|n| n.to_string_lossy().contains("keys.")), "{leftovers:?}");
    // This holder's old export: the missing key is added, nothing else is replaced.
    let r = ok_json(&admin(&data, &["restore", &s(&file), "--force", "--keys", &s(&old_export), "--json"]));
    assert_eq!(r["keysAdded"], json!([old_kid]), "{r}");
    assert!(r["sealedOpened"].as_u64().unwrap() >= 3, "{r}");
    assert!(data.join("keys").join(format!("sealing.key.{old_kid}")).exists());
    assert_eq!(mode(&data.join("keys").join(format!("sealing.key.{old_kid}"))), 0o600);
    for (f, bytes) in &keys_before {
        assert_eq!(&std::fs::read(data.join("keys").join(f)).unwrap(), bytes, "{f} is kept");
    }
    let status = ok_json(&admin(&data, &["keys", "status", "--json"]));
    assert_eq!(status["keys"].as_array().unwrap().len(), 2, "{status}");
    assert_eq!(status["keys"][1]["kid"], old_kid.as_str(), "{status}");
    assert!(admin(&data, &["stats"]).status.success());
}
