//! Unit tests of the key commands' server side over a real redb file and a key ring on
//! disk: counting, re-sealing in batches (cut short and resumed), and the retire rules.

use super::*;
use crate::store::{Export, IntentDue, Ns, Reads as _, StoreError};

impl StatusReport {
    /// The count for `kid` (0 when no value uses it).
    fn sealed_with(&self, kid: &str) -> u64 {
        self.keys.iter().find(|k| k.kid == kid).map(|k| k.sealed).unwrap_or(0)
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    store: Store,
    keys: KeyRing,
}

/// A store with sealed values in three tables (an intent with two, a mail, a record with
/// one inside an array) and a row without any.
fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let (keys, _) = KeyRing::load_or_create(&dir.path().join("keys/sealing.key")).unwrap();
    let store = Store::open(&dir.path().join("isto.redb")).unwrap();
    let seal = |s: &str| serde_json::to_value(keys.seal_str(s).unwrap()).unwrap();
    store
        .write(|tx| {
            for i in 0..5 {
                let rec = json!({"id": format!("int_{i}"), "status": "active", "contact": seal(&format!("b{i}@example.com")),
                                 "hidden_limit": seal("12000"), "price": 1.5});
                tx.put_intent(&crate::store::IntentKey::for_tests(), &format!("int_{i}"), &rec, true, IntentDue::default())?;
            }
            tx.enqueue_mail(&json!({"sealed": seal("mail body"), "attempts": 0}))?;
            tx.put_record(Ns::Client, "acct", &json!({"emails": [seal("a@example.com")], "n": 1}))?;
            tx.put_record(Ns::Client, "plain", &json!({"nothing": "sealed"}))?;
            Ok::<_, StoreError>(())
        })
        .unwrap();
    Fixture { _dir: dir, store, keys }
}

fn ask(f: &Fixture, req: Value) -> Value {
    let req = crate::admin::Request::parse(req.to_string().as_bytes()).unwrap();
    answer(&f.store, &f.keys, &req)
}

fn status(f: &Fixture) -> StatusReport {
    serde_json::from_value(ask(f, json!({"op": "keys_status"}))).unwrap()
}

/// Every sealed value's plaintext, by table and key, in order.
fn plaintexts(f: &Fixture) -> Vec<String> {
    let mut out = Vec::new();
    f.store
        .export(|step| -> anyhow::Result<()> {
            if let Export::Row { line, .. } = step {
                let row: Value = serde_json::from_str(line)?;
                if let Some(v) = row.get("v") {
                    crate::crypto::each_sealed(v, &mut |s| -> anyhow::Result<()> {
                        out.push(format!("{}:{}", row["t"], f.keys.open_str(&s)?.expose()));
                        Ok(())
                    })?;
                }
            }
            Ok(())
        })
        .unwrap();
    out
}

/// Runs one full re-seal pass, `limit` rows per batch; the batches it took.
fn pass(f: &Fixture, limit: usize) -> u32 {
    let mut cursor = Cursor::default();
    let mut batches = 0;
    while !cursor.done() {
        let a = ask(f, json!({"op": "keys_reseal", "cursor": cursor, "limit": limit}));
        assert_eq!(a["ok"], true, "{a}");
        cursor = serde_json::from_value(a["cursor"].clone()).unwrap();
        batches += 1;
        assert!(batches < 1000, "the pass ends");
    }
    batches
}

#[test]
fn status_counts_every_sealed_value_by_key_id() {
    let f = fixture();
    let s = status(&f);
    assert_eq!(s.keys.len(), 1);
    assert!(s.keys[0].current && s.keys[0].created.is_some());
    assert_eq!(s.keys[0].sealed, 12, "5 intents × 2, one mail, one record");
    assert_eq!(s.sealed_values, 12);
    assert_eq!(s.left(), 0);
}

#[test]
fn a_rotation_reseals_every_value_in_batches_and_a_cut_short_pass_resumes() {
    let f = fixture();
    let before = plaintexts(&f);
    let plain_before: Option<Value> = f.store.read(|rx| rx.record(Ns::Client, "plain")).unwrap();
    let old = f.keys.current_kid();
    let a = ask(&f, json!({"op": "keys_rotate"}));
    assert_eq!(a["ok"], true, "{a}");
    let new = a["kid"].as_str().unwrap().to_owned();
    assert_ne!(new, old);
    assert_eq!(f.keys.current_kid(), new, "the ring seals with the new key at once");
    let s = status(&f);
    assert_eq!((s.sealed_with(&old), s.sealed_with(&new), s.left()), (12, 0, 12));
    // One batch of two rows only (a cut-short run): some values moved, the rest wait.
    let a = ask(&f, json!({"op": "keys_reseal", "cursor": Cursor::default(), "limit": 2}));
    assert_eq!((a["ok"].clone(), a["done"].clone()), (json!(true), json!(false)), "{a}");
    let s = status(&f);
    assert!(s.left() > 0 && s.left() < 12, "{s:?}");
    assert_eq!(plaintexts(&f), before, "nothing lost midway");
    // Resumed from the start: values already re-sealed are left as they are.
    assert!(pass(&f, 2) > 3, "bounded batches");
    let s = status(&f);
    assert_eq!((s.sealed_with(&old), s.sealed_with(&new), s.left()), (0, 12, 0), "{s:?}");
    assert_eq!(plaintexts(&f), before, "every value opens to what it was");
    let plain_after: Option<Value> = f.store.read(|rx| rx.record(Ns::Client, "plain")).unwrap();
    assert_eq!(plain_after, plain_before);
    // Only the sealed values' text changed: the rest of the intent's bytes are the same.
    let rec: Value = f.store.read(|rx| rx.intent("int_3")).unwrap().unwrap();
    assert_eq!((rec["price"].clone(), rec["status"].clone()), (json!(1.5), json!("active")));
    assert_eq!(rec["contact"]["kid"], new.as_str());
    // A second pass finds nothing to do.
    let a = ask(&f, json!({"op": "keys_reseal", "cursor": Cursor::default(), "limit": 500}));
    assert_eq!((a["values"].clone(), a["done"].clone()), (json!(0), json!(true)), "{a}");
}

#[test]
fn retire_is_refused_for_the_current_key_an_unknown_one_and_one_still_in_use() {
    let f = fixture();
    let old = f.keys.current_kid();
    let a = ask(&f, json!({"op": "keys_retire", "kid": old}));
    assert!(a["ok"] == false && a["error"].as_str().unwrap().contains("current sealing key"), "{a}");
    let a = ask(&f, json!({"op": "keys_retire", "kid": "deadbeef"}));
    assert!(a["ok"] == false && a["error"].as_str().unwrap().contains("no key with id"), "{a}");
    ask(&f, json!({"op": "keys_rotate"}));
    let a = ask(&f, json!({"op": "keys_retire", "kid": old}));
    let e = a["error"].as_str().unwrap_or_default();
    assert!(a["ok"] == false && e.contains("still seals 12") && e.contains("--resume"), "{a}");
    assert!(f.keys.kids().contains(&old), "still in the ring");
    pass(&f, 500);
    let a = ask(&f, json!({"op": "keys_retire", "kid": old}));
    assert_eq!(a["ok"], true, "{a}");
    assert!(!f.keys.kids().contains(&old));
    assert_eq!(plaintexts(&f).len(), 12, "every value still opens without the old key");
    let s = status(&f);
    assert_eq!(s.keys.len(), 1);
}

#[test]
fn a_value_that_does_not_open_stops_its_batch_and_nothing_of_it_is_written() {
    let f = fixture();
    f.store
        .write(|tx| {
            let foreign = serde_json::to_value(KeyRing::ephemeral().seal_str("x").unwrap()).unwrap();
            tx.put_record(Ns::Client, "zzz", &json!({"s": foreign}))
        })
        .unwrap();
    let old = f.keys.current_kid();
    ask(&f, json!({"op": "keys_rotate"}));
    // One batch holds every row: it fails as a whole.
    let a = ask(&f, json!({"op": "keys_reseal", "cursor": Cursor::default(), "limit": 500}));
    assert_eq!(a["ok"], false, "{a}");
    let e = a["error"].as_str().unwrap();
    assert!(e.contains("\"records\"") && e.contains("nothing of its batch was written"), "{e}");
    assert!(!e.contains("example.com"));
    let s = status(&f);
    assert_eq!(s.unknown.len(), 1, "{s:?}");
    assert_eq!(s.sealed_with(&old), 12, "nothing of the failed batch was written");
}

#[test]
fn the_retire_hint_is_singular_for_one_key_and_plural_for_more() {
    let one = retirable_line(&["k1".to_owned()]);
    assert_eq!(one, "no value uses key k1 any more: `isto admin keys retire k1` deletes it");
    let two = retirable_line(&["k1".to_owned(), "k2".to_owned()]);
    assert!(two.starts_with("no value uses keys k1, k2 any more") && two.contains("deletes each of them"), "{two}");
    assert!(!two.contains("deletes it"), "{two}");
}
