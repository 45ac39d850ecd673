//! Key rotation ("What must be shown"): `isto admin keys rotate` against a real `isto
//! serve` child process under a bounded write load (publish, consent, confirm — the link
//! read from the mail the server sent to a sink SMTP server —, withdraw on /mcp and the
//! pages, offer imports through the admin socket): afterwards every sealed value opens
//! with the new key (status shows 0 for the old), the old key is retired, every
//! acknowledged write is there, and pseudonyms, handles, person keys and CSRF tokens are
//! unchanged. The holder's data is made in-process with the kit on a real redb file
//! (every table gets rows); the commands are the real binary.

use isto::crypto::Sealed;
use isto::records::IntentRecord;
use isto::state::AppState;
use isto::store::{Export, Reads as _, StoreError};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

use crate::backup::{assert_every_table_has_rows, populated};
use crate::kit::load::{admin, load_numbers, numbered, ok_json, rows_of, text, Load, LoadSize, Serve, SmtpSink};
use crate::kit::{open_state, wall_clock, Opts};

/// The plaintexts of the sealed values of each row: `(table, key JSON) → plaintexts`.
type Opened = BTreeMap<(String, String), Vec<String>>;

/// The plaintext of every sealed value of every row, and the key ids seen.
fn opened(h: &AppState) -> (Opened, BTreeMap<String, u64>) {
    let mut out = Opened::new();
    let mut kids: BTreeMap<String, u64> = BTreeMap::new();
    fn walk(v: &Value, f: &mut dyn FnMut(Sealed)) {
        match v {
            Value::Object(m)
                if m.len() == 3 && m.contains_key("kid") && m.contains_key("nonce") && m.contains_key("ct") =>
            {
                f(serde_json::from_value(v.clone()).unwrap())
            }
            Value::Object(m) => m.values().for_each(|x| walk(x, f)),
            Value::Array(a) => a.iter().for_each(|x| walk(x, f)),
            _ => {}
        }
    }
    h.base
        .store()
        .export(|step| -> Result<(), StoreError> {
            if let Export::Row { table, line } = step {
                let row: Value = serde_json::from_str(line).unwrap();
                walk(&row["v"], &mut |s| {
                    *kids.entry(s.kid.clone()).or_default() += 1;
                    let plain = h.base.keys().open(&s).unwrap_or_else(|e| panic!("table {table}: {e}"));
                    out.entry((table.to_owned(), row["k"].to_string()))
                        .or_default()
                        .push(String::from_utf8_lossy(&plain).into_owned());
                });
            }
            Ok(())
        })
        .unwrap();
    (out, kids)
}

/// What must not change: every intent's handle for the seller, its buyer's pseudonym
/// and person key, and a CSRF token at a fixed time.
fn identities(h: &AppState) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let seller = isto::sellers::list(&h.base).unwrap()[0].seller_id.clone();
    let ids: Vec<String> = h.base.store().read(|rx| rx.active_ids()).unwrap();
    for id in ids {
        let rec: IntentRecord = h.base.store().read(|rx| rx.intent(&id)).unwrap().unwrap();
        out.insert(format!("handle {id}"), isto::sellers::handle(&h.base, &seller, &id));
        out.insert(format!("pseudonym {id}"), isto::sellers::pseudonym(&h.base, &rec, &seller).unwrap());
        if let Some(email) = isto::base::open_contact(h.base.keys(), &rec).unwrap() {
            out.insert(format!("person {id}"), h.base.person_key(email.expose()));
        }
    }
    out.insert("csrf".into(), h.base.keys().csrf_token("consent", "tok", 1_765_000_000));
    out.insert("keyed".into(), h.base.keys().keyed_hash("secret", "s3cr3t").unwrap());
    out
}

fn state(data: &Path) -> AppState {
    open_state(data, wall_clock(), Opts::default())
}

/// Intents taken through consent in-process (each seals a contact, a hidden limit and a
/// queued mail): enough sealed values that a re-seal in small batches takes a while.
fn bulk(data: &Path, n: u64) {
    let quotas = isto::config::Quotas {
        drafts_per_client_per_hour: 10_000,
        consents_per_client_per_hour: 10_000,
        consents_per_network_per_hour: 10_000,
        confirmation_mails_per_hour: 10_000,
        ..isto::config::Quotas::default()
    };
    let h = open_state(data, wall_clock(), Opts { quotas: Some(quotas), ..Opts::default() });
    for i in 0..n {
        let args = serde_json::json!({"statement": format!("Hľadám dom Bulk {i}"), "criteria": {"category": "property"},
                                      "area": "SK", "hiddenLimit": 90000 + i});
        let r = h.intents.publish_draft(h.intents.parse_publish(&args).unwrap()).unwrap();
        let token = r.consent_url.rsplit('/').next().unwrap().to_owned();
        let out = h.intents.give_consent(&token, &format!("bulk{i}@example.com"), "en").unwrap();
        assert_eq!(out, isto::intents::ConsentOutcome::Recorded);
    }
}

#[test]
fn a_rotation_under_write_load_reseals_everything_retires_the_old_key_and_loses_nothing() {
    let (_keep, data) = populated();
    bulk(&data, 400);
    let before_rows = rows_of(&data.join("isto.redb"));
    assert_every_table_has_rows(&before_rows, "the fixture", &[]);
    let (before_open, before_ids) = {
        let h = state(&data);
        let (o, kids) = opened(&h);
        assert_eq!(kids.len(), 1, "one key seals everything at first: {kids:?}");
        (o, identities(&h))
    };
    assert!(
        before_ids.keys().any(|k| k.starts_with("pseudonym")) && before_ids.keys().any(|k| k.starts_with("person"))
    );
    let work = tempfile::tempdir().unwrap();
    // Mail goes to a sink the load reads the confirmation links from.
    let sink = std::sync::Arc::new(SmtpSink::start());
    let serve = Serve::start_with_smtp(&data, work.path().join("serve.log"), &sink.url());
    let status = ok_json(&admin(&data, &["keys", "status", "--json"]));
    assert_eq!(status["via"], "socket", "{status}");
    let old = status["current"].as_str().unwrap().to_owned();
    assert!(status["keys"][0]["sealed"].as_u64().unwrap() >= 3, "{status}");
    let refused = admin(&data, &["keys", "retire", &old]);
    assert!(!refused.status.success() && text(&refused).contains("current sealing key"), "{}", text(&refused));

    let load = Load::start(&serve, &data, LoadSize { imports: 3000, drafts: 20, consents: 15 }, Some(sink.clone()));
    load.wait_for(&serve, 20, 2, 2);
    // Small batches, so the re-seal runs in many transactions between the load's.
    let imports_before = load.imports.load(std::sync::atomic::Ordering::SeqCst);
    let report = ok_json(&admin(&data, &["keys", "rotate", "--batch", "5", "--json"]));
    let imports_during = load.imports.load(std::sync::atomic::Ordering::SeqCst) - imports_before;
    assert!(imports_during > 0, "the server took writes while the rotation ran");
    eprintln!(
        "rotation: {imports_during} imports acknowledged meanwhile; {} values re-sealed in {} pass(es)",
        report["resealed"], report["passes"]
    );
    assert_eq!((report["rotated"].clone(), report["via"].clone()), (true.into(), "socket".into()), "{report}");
    assert_eq!(report["previous"], old.as_str());
    let new = report["kid"].as_str().unwrap().to_owned();
    assert_ne!(new, old);
    assert_eq!(report["left"], 0, "{report}");
    assert!(report["resealed"].as_u64().unwrap() >= 3, "{report}");
    assert!(report["note"].as_str().unwrap().contains("handle.key and mac.key"), "{report}");
    assert!(report["retirable"].as_array().unwrap().iter().any(|k| k == old.as_str()), "{report}");
    // The load goes on after the rotation, sealing with the new key.
    let (i, d, c) = (
        load.imports.load(std::sync::atomic::Ordering::SeqCst),
        load.drafts.load(std::sync::atomic::Ordering::SeqCst),
        load.consented.lock().unwrap().len(),
    );
    load.wait_for(&serve, i + 10, d.min(19) + 1, (c + 1).min(15));
    let retired = ok_json(&admin(&data, &["keys", "retire", &old, "--json"]));
    assert_eq!((retired["retired"].clone(), retired["via"].clone()), (true.into(), "socket".into()), "{retired}");
    assert!(!data.join(format!("keys/sealing.key.{old}")).exists());
    let again = admin(&data, &["keys", "retire", &old]);
    assert!(!again.status.success() && text(&again).contains("no key with id"), "{}", text(&again));
    let status = ok_json(&admin(&data, &["keys", "status", "--json"]));
    assert_eq!(status["keys"].as_array().unwrap().len(), 1, "{status}");
    assert_eq!(status["keys"][0]["kid"], new.as_str());
    assert_eq!(status["keys"][0]["sealed"], status["sealedValues"], "{status}");
    assert_eq!(status["unknown"], serde_json::json!({}));
    let (imports, drafts, consented) = load.stop();
    serve.stop();
    assert!(!serve_log_has_secrets(&work.path().join("serve.log")), "the log names no contact");

    let after_rows = rows_of(&data.join("isto.redb"));
    // Every sealed value opens with the ring that has only the new key.
    let h = state(&data);
    assert_eq!(h.base.keys().kids(), vec![new.clone()]);
    let (after_open, kids) = opened(&h);
    assert_eq!(kids.keys().cloned().collect::<Vec<_>>(), vec![new.clone()], "{kids:?}");
    // Nothing lost: the fixture's values open to what they were (rows still there), …
    for (at, plain) in &before_open {
        if let Some(now) = after_open.get(at) {
            assert_eq!(now, plain, "{at:?}");
        } else {
            assert_eq!(at.0, "outbox", "only sent or dropped mail may be gone: {at:?}");
        }
    }
    // … every acknowledged write of the load is there, …
    assert!(load_numbers(&after_rows).is_superset(&(0..imports).collect()), "every acknowledged import");
    assert!(numbered(&after_rows, "intents", "Load draft ").is_superset(&(0..drafts).collect()), "every draft");
    assert!(consented.len() >= 3, "{consented:?}");
    for c in &consented {
        let id: Option<String> = h.base.store().read(|rx| rx.token(&isto::crypto::token_key("code", &c.code))).unwrap();
        let rec: IntentRecord = h.base.store().read(|rx| rx.intent(&id.unwrap())).unwrap().unwrap();
        assert!(rec.statement.contains(&format!("Load consent {}", c.n)));
        assert!(c.confirmed, "intent {} was confirmed", c.n);
        if c.withdrawn {
            assert_eq!(rec.status, isto::protocol::Status::Withdrawn, "intent {}", c.n);
        } else {
            assert_eq!(rec.status, isto::protocol::Status::Active, "intent {}", c.n);
            let contact = isto::base::open_contact(h.base.keys(), &rec).unwrap().unwrap();
            assert_eq!(contact.expose(), format!("load{}@example.com", c.n));
            assert_eq!(h.base.hidden_limit(&rec).unwrap(), Some(5000.0 + c.n as f64));
        }
    }
    // … and the pseudonyms, handles, person keys, CSRF tokens and keyed hashes are the same.
    let after_ids = identities(&h);
    for (k, v) in &before_ids {
        assert_eq!(after_ids.get(k), Some(v), "{k}");
    }
}

/// Whether the server's log holds a contact address of the fixture or the load.
fn serve_log_has_secrets(log: &Path) -> bool {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.contains("@example.com")
}

#[test]
fn an_interrupted_rotation_is_shown_by_status_refused_by_rotate_and_finished_by_resume_offline() {
    let (_keep, data) = populated();
    let (old, before_open, before_ids) = {
        let h = state(&data);
        (h.base.keys().current_kid(), opened(&h).0, identities(&h))
    };
    // A rotation cut short after the new key became current: nothing re-sealed yet.
    let (ring, _) = isto::crypto::KeyRing::load_or_create(&data.join("keys/sealing.key")).unwrap();
    let new = ring.rotate().unwrap();
    drop(ring);
    let status = ok_json(&admin(&data, &["keys", "status", "--json"]));
    assert_eq!(status["via"], "direct", "{status}");
    assert_eq!(
        (status["current"].clone(), status["keys"][1]["kid"].clone()),
        (new.as_str().into(), old.as_str().into())
    );
    let left = status["keys"][1]["sealed"].as_u64().unwrap();
    assert!(left >= 3 && status["keys"][0]["sealed"] == 0, "{status}");
    let human = admin(&data, &["keys", "status"]);
    assert!(text(&human).contains(&format!("{left} values are still sealed with older keys")), "{}", text(&human));
    // Retiring the old key and making yet another one are refused, saying what to do.
    let refused = admin(&data, &["keys", "retire", &old]);
    assert!(!refused.status.success(), "{}", text(&refused));
    assert!(
        text(&refused).contains(&format!("still seals {left}")) && text(&refused).contains("--resume"),
        "{}",
        text(&refused)
    );
    let refused = admin(&data, &["keys", "rotate"]);
    assert!(!refused.status.success() && text(&refused).contains("--resume"), "{}", text(&refused));
    assert_eq!(
        ok_json(&admin(&data, &["keys", "status", "--json"]))["keys"].as_array().unwrap().len(),
        2,
        "no third key"
    );
    // --resume finishes it without a new key.
    let report = ok_json(&admin(&data, &["keys", "rotate", "--resume", "--batch", "3", "--json"]));
    assert_eq!(
        (report["rotated"].clone(), report["kid"].clone(), report["left"].clone()),
        (false.into(), new.as_str().into(), 0.into()),
        "{report}"
    );
    assert_eq!(report["resealed"].as_u64().unwrap(), left, "{report}");
    assert_eq!(report["via"], "direct");
    let retired = ok_json(&admin(&data, &["keys", "retire", &old, "--json"]));
    assert_eq!(retired["retired"], true);
    let h = state(&data);
    let (after_open, kids) = opened(&h);
    assert_eq!(kids.keys().cloned().collect::<Vec<_>>(), vec![new]);
    assert_eq!(after_open, before_open, "every value opens to what it was");
    assert_eq!(identities(&h), before_ids);
}

/// One request on a raw admin socket connection, its answer.
fn ask(
    conn: &mut (std::io::BufReader<std::os::unix::net::UnixStream>, std::os::unix::net::UnixStream),
    req: Value,
) -> Value {
    use std::io::{BufRead as _, Write as _};
    writeln!(conn.1, "{req}").unwrap();
    let mut line = String::new();
    conn.0.read_line(&mut line).unwrap();
    serde_json::from_str(&line).unwrap()
}

#[test]
fn a_second_rotation_is_told_one_runs_and_a_held_store_names_another_isto_process() {
    let (_keep, data) = populated();
    // Offline: another process holds the store (this test, as another admin command
    // would). Only a redb file is held by one process: a PostgreSQL database is shared.
    if crate::kit::redb_only("a held store", "the redb file's lock; a database serves many processes") {
        let held = isto::store::Store::open(&data.join("isto.redb")).unwrap();
        for args in [&["keys", "rotate", "--resume"][..], &["keys", "status"][..]] {
            let o = admin(&data, args);
            let says = text(&o);
            assert!(!o.status.success(), "{says}");
            assert!(says.contains("held by another isto process") && says.contains("another admin command"), "{says}");
            assert!(says.contains("Wait for that command to finish, or stop that process"), "{says}");
            assert!(!says.contains("restart `isto serve`"), "{says}");
        }
        let o = admin(&data, &["backup", "--out", data.parent().unwrap().join("b.isto-backup").to_str().unwrap()]);
        assert!(text(&o).contains("held by another isto process"), "{}", text(&o));
        drop(held);
    }

    // Through a server: a rotation runs (a key made, one batch re-sealed, not finished).
    let work = tempfile::tempdir().unwrap();
    let serve = Serve::start(&data, work.path().join("serve.log"));
    let stream = std::os::unix::net::UnixStream::connect(data.join("admin.sock")).unwrap();
    stream.set_read_timeout(Some(std::time::Duration::from_secs(20))).unwrap();
    let mut conn = (std::io::BufReader::new(stream.try_clone().unwrap()), stream);
    assert_eq!(ask(&mut conn, serde_json::json!({"op": "keys_rotate"}))["ok"], true);
    let a = ask(&mut conn, serde_json::json!({"op": "keys_reseal", "limit": 1}));
    assert_eq!((a["ok"].clone(), a["done"].clone()), (true.into(), false.into()), "{a}");
    let status = ok_json(&admin(&data, &["keys", "status", "--json"]));
    assert_eq!(status["rotating"], true, "{status}");
    for args in [&["keys", "rotate"][..], &["keys", "rotate", "--resume"][..]] {
        let o = admin(&data, args);
        let says = text(&o);
        assert!(!o.status.success(), "{says}");
        assert!(says.contains("a key rotation is running now") && says.contains("wait"), "{says}");
        assert!(!says.contains("earlier re-seal is unfinished"), "{says}");
    }
    // The op itself refuses a second key while one runs (two clients racing).
    let again = ask(&mut conn, serde_json::json!({"op": "keys_rotate"}));
    assert!(again["error"].as_str().unwrap().contains("running now"), "{again}");
    // The first finishes its pass; then a new rotation may run.
    let mut cursor = a["cursor"].clone();
    for _ in 0..10_000 {
        let a = ask(&mut conn, serde_json::json!({"op": "keys_reseal", "cursor": cursor, "limit": 500}));
        assert_eq!(a["ok"], true, "{a}");
        cursor = a["cursor"].clone();
        if a["done"] == true {
            break;
        }
    }
    let status = ok_json(&admin(&data, &["keys", "status", "--json"]));
    assert_eq!(status["rotating"], false, "{status}");
    let r = ok_json(&admin(&data, &["keys", "rotate", "--json"]));
    assert_eq!((r["rotated"].clone(), r["left"].clone(), r["via"].clone()), (true.into(), 0.into(), "socket".into()));
    drop(conn);
    serve.stop();
}
