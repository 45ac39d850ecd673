//! The backward-compatibility fixture of the store (after redb's
//! `tests/backward_compatibility.rs`): `tests/fixtures/store-v4/` is a data directory
//! written by isto at store schema version 4 — the store file, its test keys and
//! `fixture.json` (what the generator made: the counts per table and per record
//! namespace, the intents by kind, the test tokens needed to continue their flows).
//!
//! - [`write_the_store_v4_fixture`] (`#[ignore]`d) makes it by driving the real services
//!   and pages with the kit: `cargo test --test it fixture -- --ignored`. Run it only
//!   when the fixture must be made again (never for a newer schema: a new version gets
//!   a new fixture directory, the old one stays).
//! - [`the_store_v4_fixture_opens_migrated_and_served`] copies it to a temp dir, opens it
//!   with the current code (migrations run) and checks every record kind.
//! - [`a_store_newer_than_this_isto_is_refused_by_serve_and_migrate`] runs the real
//!   binary on a store marked with a newer schema version.

use axum::http::StatusCode;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use isto::clock::ManualClock;
use isto::crypto::Sealed;
use isto::intents::{ConfirmOutcome, ConsentOutcome};
use isto::protocol::Status;
use isto::records::IntentRecord;
use isto::sellers::{self, NewSeller};
use isto::store::{Export, Reads as _, Store, StoreError};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

use crate::kit::{self, token_from_outbox, Fx, Opts};

/// The schema version the fixture was written at.
const FIXTURE_SCHEMA: u64 = 4;

/// The fixture directory.
fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/store-v4")
}

const SELLER_RESOURCE: &str = "https://holder.example/mcp/seller";
const REDIRECT: &str = "https://agent.example/callback";
const LIMIT: u64 = 12000;

/// What the fixture's README says (written with the fixture).
const README: &str = "# Store fixture, schema version 4\n\n\
A data directory written by isto at store schema version 4 (`isto.redb`, `keys/`), with\n\
every record kind present, and `fixture.json`: what was made (counts per table and per\n\
record namespace, the intents by kind and the test tokens needed to continue their\n\
flows). The backward-compatibility test (`tests/it/fixture.rs`) copies it, opens it with\n\
the current code (migrations run) and checks every record.\n\n\
**The keys in `keys/` are test keys, made for this fixture only; the addresses and\n\
tokens are test data.** Never use them for a real holder.\n\n\
Made by `cargo test --test it fixture -- --ignored` (the `#[ignore]`d\n\
`fixture::write_the_store_v4_fixture`). Do not make it again for a newer schema: a new\n\
version gets its own fixture directory, and this one stays as it is.\n";

/// A vehicles intent in Slovakia with a hidden limit.
fn octavia(visibility: &str) -> Value {
    json!({"statement": "Hľadám Škoda Octavia combi", "criteria": {"category": "vehicles", "make": "Škoda", "model": "Octavia"},
           "area": "SK", "budget": {"max": 20000, "currency": "EUR"}, "hiddenLimit": LIMIT, "visibility": visibility})
}

/// Rows per table and the export's lines, of an open store.
fn export_of(store: &Store) -> (BTreeMap<String, u64>, Vec<(String, Value)>) {
    let mut counts = BTreeMap::new();
    let mut lines = Vec::new();
    for t in isto::store::table_names() {
        counts.insert(t.to_owned(), 0);
    }
    store
        .export(|step| -> Result<(), StoreError> {
            if let Export::Row { table, line } = step {
                *counts.entry(table.to_owned()).or_insert(0) += 1;
                lines.push((table.to_owned(), serde_json::from_str(line).unwrap()));
            }
            Ok(())
        })
        .unwrap();
    (counts, lines)
}

/// Rows of the `records` table per namespace (the key's part before `:`).
fn namespaces(lines: &[(String, Value)]) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for (_, v) in lines.iter().filter(|(t, _)| t == "records") {
        let key = v["k"].as_str().unwrap();
        *out.entry(key.split(':').next().unwrap().to_owned()).or_insert(0) += 1;
    }
    out
}

/// Every sealed value (`{"kid","nonce","ct"}`) inside `v`.
fn sealed_in(v: &Value, out: &mut Vec<Sealed>) {
    match v {
        Value::Object(m) => {
            if m.len() == 3 && ["kid", "nonce", "ct"].iter().all(|k| m.get(*k).is_some_and(Value::is_string)) {
                out.push(serde_json::from_value(v.clone()).unwrap());
            } else {
                m.values().for_each(|x| sealed_in(x, out));
            }
        }
        Value::Array(a) => a.iter().for_each(|x| sealed_in(x, out)),
        _ => {}
    }
}

fn all_sealed(lines: &[(String, Value)]) -> Vec<Sealed> {
    let mut out = Vec::new();
    for (_, v) in lines {
        sealed_in(&v["v"], &mut out);
    }
    out
}

fn stored(h: &isto::state::AppState, id: &str) -> IntentRecord {
    h.base.store().read(|rx| rx.intent(id)).unwrap().unwrap()
}

/// Publishes a consent-link draft; returns (id, intentCode, consent token).
fn publish(f: &Fx, args: &Value) -> (String, String, String) {
    let h = &f.holder;
    let r = h.intents.publish_draft(h.intents.parse_publish(args).unwrap()).unwrap();
    (r.intent.id, r.intent_code, r.consent_url.rsplit('/').next().unwrap().to_owned())
}

/// Publishes and gives consent with `email`; returns (id, code).
fn consented(f: &Fx, args: &Value, email: &str) -> (String, String) {
    let (id, code, consent) = publish(f, args);
    assert_eq!(f.holder.intents.give_consent(&consent, email, "en").unwrap(), ConsentOutcome::Recorded);
    (id, code)
}

/// A seller's sign-in with a one-time link; returns the session cookie.
fn seller_signs_in(f: &Fx, email: &str) -> String {
    let page = f.get("/signin?next=/seller/intents", None);
    let csrf = page.csrf_for("/signin/link");
    let fields = [("csrf", csrf.as_str()), ("email", email), ("next", "/seller/intents")];
    let r = f.post("/signin/link", &fields, page.pre_cookie().as_deref());
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let token = f.token_from_outbox("/signin/link/");
    let page = f.get(&format!("/signin/link/{token}"), None);
    let csrf = page.csrf_for(&format!("/signin/link/{token}"));
    let r = f.post(&format!("/signin/link/{token}"), &[("csrf", &csrf)], None);
    assert_eq!((r.status, r.location()), (StatusCode::SEE_OTHER, "/seller/intents"), "{}", r.body);
    r.cookie().unwrap()
}

/// Registers an OAuth client and authorizes it for `/mcp/seller` with the seller's
/// session twice: one code exchanged (access and refresh token), one left unused.
/// Returns (client id, access token, refresh token).
fn seller_oauth(f: &Fx, cookie: &str) -> (String, String, String) {
    let r = f.post_json(
        "/oauth/register",
        &json!({"redirect_uris": [REDIRECT], "client_name": "Seller agent", "token_endpoint_auth_method": "none",
                "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"]}),
    );
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let client: Value = serde_json::from_str(&r.body).unwrap();
    let client = client["client_id"].as_str().unwrap().to_owned();
    let mut codes = Vec::new();
    let verifier = isto::crypto::new_token(32).expose().to_owned();
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    for state in ["s1", "s2"] {
        let fields = [
            ("response_type", "code"),
            ("client_id", client.as_str()),
            ("redirect_uri", REDIRECT),
            ("code_challenge", challenge.as_str()),
            ("code_challenge_method", "S256"),
            ("resource", SELLER_RESOURCE),
            ("scope", "offers demand"),
            ("state", state),
        ];
        let page = f.get(&format!("/oauth/authorize?{}", serde_urlencoded::to_string(fields).unwrap()), Some(cookie));
        assert_eq!(page.status, StatusCode::OK, "{}", page.body);
        let csrf = page.csrf_for("/oauth/authorize");
        let mut form = fields.to_vec();
        form.push(("csrf", &csrf));
        form.push(("decision", "allow"));
        let r = f.post("/oauth/authorize", &form, Some(cookie));
        assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
        let query = r.location().split_once('?').unwrap().1.to_owned();
        let params: Vec<(String, String)> = serde_urlencoded::from_str(&query).unwrap();
        codes.push(params.iter().find(|(k, _)| k == "code").unwrap().1.clone());
    }
    let r = f.post(
        "/oauth/token",
        &[
            ("grant_type", "authorization_code"),
            ("client_id", &client),
            ("code", &codes[0]),
            ("redirect_uri", REDIRECT),
            ("code_verifier", &verifier),
        ],
        None,
    );
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let tok: Value = serde_json::from_str(&r.body).unwrap();
    (client, tok["access_token"].as_str().unwrap().to_owned(), tok["refresh_token"].as_str().unwrap().to_owned())
}

/// The `Authorization` header's value of a bearer `token`.
fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

fn seller_grant(account: &str) -> isto::oauth::Grant {
    isto::oauth::Grant {
        account_id: account.to_owned(),
        role: "seller".into(),
        client_id: "client".into(),
        scopes: vec!["offers".into(), "demand".into()],
        resource: SELLER_RESOURCE.into(),
    }
}

/// Copies the files of `from` (not recursing) into `to`.
fn copy_files(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
        }
    }
}

/// Makes `tests/fixtures/store-v4/` (see the module docs). Every table gets rows, the
/// intents one of each status, the records every namespace the holder writes.
#[test]
#[ignore = "writes the committed fixture; run only to make it again"]
fn write_the_store_v4_fixture() {
    assert_eq!(isto::store::SCHEMA_VERSION, FIXTURE_SCHEMA, "a newer schema gets a new fixture directory");
    let f = Fx::with(Opts::default());
    let h = &f.holder;
    // Catalogue offers of a feed.
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
    // A registered seller, invited (a sign-in link and its mail).
    let seller_email = "sales@auto.example";
    let added = sellers::add(
        &h.base,
        &NewSeller {
            name: "Auto Centrum".into(),
            email: seller_email.into(),
            url: Some("https://auto.example".into()),
            categories: vec!["vehicles".into()],
            regions: vec!["SK".into()],
            invite: true,
        },
    )
    .unwrap();
    // Expired: consented, never confirmed, 73 h later swept.
    let (expired, _) = consented(&f, &octavia("private"), "expired@example.com");
    f.clock.advance(time::Duration::hours(73));
    assert!(h.intents.sweep().unwrap() >= 1);
    assert_eq!(stored(h, &expired).status, Status::Expired);

    // A signed-in buyer (account, session) with an intent of its own.
    let buyer_email = "buyer@example.com";
    let (buyer, cookie) = f.buyer(buyer_email);
    let owned = h.intents.publish_for(&buyer, h.intents.parse_publish(&octavia("private")).unwrap()).unwrap();
    assert_eq!(owned.intent.status, Status::Active);
    let owned = owned.intent.id;
    // Active through the consent link (matched: deliveries, a digest due, mail).
    let (active, active_code) = consented(&f, &octavia("private"), "active@example.com");
    assert_eq!(h.intents.confirm(&token_from_outbox(h, "/confirm/")).unwrap(), ConfirmOutcome::Activated);
    // Its first digest (the results link in it); the digest scheduler as the worker runs it.
    assert!(isto::deliveries::queue_due_digests(&h.base).unwrap() >= 1);
    let results = token_from_outbox(h, "/results/");
    // Awaiting the e-mail confirmation.
    let (awaiting, _) = consented(&f, &octavia("private"), "awaiting@example.com");
    let confirm = token_from_outbox(h, "/confirm/");
    // A draft awaiting consent.
    let (draft, _, draft_consent) = publish(&f, &octavia("private"));
    // Withdrawn after confirmation.
    let (withdrawn, code) = consented(&f, &octavia("private"), "withdrawn@example.com");
    assert_eq!(h.intents.confirm(&token_from_outbox(h, "/confirm/")).unwrap(), ConfirmOutcome::Activated);
    h.intents.withdraw_by_code(&code, None).unwrap();
    // Pseudonymous and active: open to the seller, who replied (queued, not yet matched).
    let (open, _) = consented(&f, &octavia("pseudonymous"), "open@example.com");
    assert_eq!(h.intents.confirm(&token_from_outbox(h, "/confirm/")).unwrap(), ConfirmOutcome::Activated);
    let seller_cookie = seller_signs_in(&f, seller_email);
    let (client, access, refresh) = seller_oauth(&f, &seller_cookie);
    let profile = sellers::find(&h.base, &added.seller.seller_id).unwrap();
    let handle = sellers::handle(&h.base, &profile.seller_id, &open);
    let args = json!({"source": {"kind": "reply"}, "inReplyTo": handle, "title": "Škoda Octavia Combi (reply)",
        "category": "vehicles", "attributes": {"make": "Škoda", "model": "Octavia"},
        "price": {"amount": 9000, "currency": "EUR"}, "area": "Bratislava"});
    let reply = sellers::parse_reply(&h.base, &profile, &args).unwrap();
    assert!(sellers::submit_reply(&h.base, &profile, &reply).unwrap().accepted);

    let (counts, lines) = export_of(h.base.store());
    for (t, n) in &counts {
        assert!(*n > 0, "table {t} has no rows in the fixture");
    }
    let sealed = all_sealed(&lines);
    let manifest = json!({
        "schema": FIXTURE_SCHEMA,
        "isto": isto::store::ISTO_VERSION,
        "clock": isto::clock::rfc3339(isto::clock::Clock::now(&*f.clock)),
        "counts": counts,
        "namespaces": namespaces(&lines),
        "sealed": sealed.len(),
        "hiddenLimit": LIMIT,
        "intents": {
            "draft": {"id": draft, "consentToken": draft_consent},
            "awaiting": {"id": awaiting, "email": "awaiting@example.com", "confirmToken": confirm},
            "active": {"id": active, "email": "active@example.com", "code": active_code, "resultsToken": results},
            "withdrawn": {"id": withdrawn, "email": "withdrawn@example.com"},
            "expired": {"id": expired, "email": "expired@example.com"},
            "owned": {"id": owned, "email": buyer_email},
            "pseudonymous": {"id": open, "email": "open@example.com", "handle": handle},
        },
        "buyer": {"accountId": buyer, "email": buyer_email, "cookie": cookie},
        "seller": {"sellerId": profile.seller_id, "accountId": profile.account_id, "email": seller_email,
                   "cookie": seller_cookie, "clientId": client, "accessToken": access, "refreshToken": refresh},
    });
    let data = f.dir.path().to_owned();
    let Fx { dir: _keep, holder, app, rt, stop, .. } = f;
    stop.cancel();
    drop(app);
    drop(holder);
    drop(rt);
    let out = fixture_dir();
    if out.exists() {
        std::fs::remove_dir_all(&out).unwrap();
    }
    std::fs::create_dir_all(out.join("keys")).unwrap();
    std::fs::copy(data.join("isto.redb"), out.join("isto.redb")).unwrap();
    copy_files(&data.join("keys"), &out.join("keys"));
    std::fs::write(out.join("fixture.json"), serde_json::to_string_pretty(&manifest).unwrap() + "\n").unwrap();
    std::fs::write(out.join("README.md"), README).unwrap();
}

/// A holder over a copy of the fixture, its clock where the generator's stopped.
fn open_copy() -> (Fx, Value) {
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture_dir().join("fixture.json")).unwrap()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    copy_files(&fixture_dir(), dir.path());
    copy_files(&fixture_dir().join("keys"), &dir.path().join("keys"));
    for junk in ["fixture.json", "README.md"] {
        std::fs::remove_file(dir.path().join(junk)).unwrap();
    }
    // What the file holds before the current code opens it.
    let m = isto::store::migrate_file(&dir.path().join("isto.redb"), false).unwrap();
    assert_eq!(m.stored, Some(FIXTURE_SCHEMA));
    assert_eq!(m.pending.len() as u64, isto::store::SCHEMA_VERSION - FIXTURE_SCHEMA);
    if kit::backend_is_postgres() {
        // The fixture is a redb file: on PostgreSQL its rows, migrated by redb's open,
        // are loaded into the holder's database (as `isto admin restore` moves a redb
        // backup there) and the file removed, so every check below reads PostgreSQL.
        let file = dir.path().join(isto::store::FILE_NAME);
        let rows = kit::load::rows_in(&Store::open(&file).unwrap());
        let lines = rows.into_values().flat_map(BTreeMap::into_values);
        kit::load::store_of(dir.path()).restore_rows(lines.map(Ok::<_, StoreError>), false).unwrap();
        std::fs::remove_file(file).unwrap();
    }
    let clock = Arc::new(ManualClock::new(isto::clock::parse_rfc3339(manifest["clock"].as_str().unwrap()).unwrap()));
    let opts = Opts::default();
    let holder = kit::open_state(dir.path(), clock.clone(), opts);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let stop = CancellationToken::new();
    let app = isto::app::router(holder.clone(), stop.clone());
    (Fx { dir, clock, holder, app, rt, opts, stop }, manifest)
}

#[test]
fn the_store_v4_fixture_opens_migrated_and_served() {
    let (f, m) = open_copy();
    let h = &f.holder;
    let s =
        |p: &str| m.pointer(p).and_then(Value::as_str).unwrap_or_else(|| panic!("fixture.json lacks {p}")).to_owned();

    // Counts per table and per record namespace, as the generator left them.
    let (counts, lines) = export_of(h.base.store());
    let mut want: BTreeMap<String, u64> = serde_json::from_value(m["counts"].clone()).unwrap();
    // Added by migration 9, after the fixture was made: empty until a delivery.
    want.insert("intent_matches".into(), 0);
    // Added by migration 11: empty until an active intent is written again.
    want.insert("intent_targets".into(), 0);
    assert_eq!(counts, want, "rows per table");
    let want: BTreeMap<String, u64> = serde_json::from_value(m["namespaces"].clone()).unwrap();
    assert_eq!(namespaces(&lines), want, "records per namespace");
    // Every sealed value opens with the fixture's key ring.
    let sealed = all_sealed(&lines);
    assert_eq!(sealed.len() as u64, m["sealed"].as_u64().unwrap());
    for v in &sealed {
        h.base.keys().open(v).unwrap_or_else(|e| panic!("a sealed value (key {}) does not open: {e}", v.kid));
    }
    // The store records this version's migrations and start-up passes.
    assert!(h.base.store().read(|rx| rx.pass_done(isto::state::PERSON_KEYS.name)).unwrap().is_some());
    assert!(isto::state::pending_passes(h.base.store()).unwrap().is_empty());

    // The intents: fields and statuses.
    let kinds = [
        ("draft", Status::AwaitingConsent),
        ("awaiting", Status::AwaitingEmailConfirmation),
        ("active", Status::Active),
        ("withdrawn", Status::Withdrawn),
        ("expired", Status::Expired),
        ("owned", Status::Active),
        ("pseudonymous", Status::Active),
    ];
    for (kind, status) in kinds {
        let rec = stored(h, &s(&format!("/intents/{kind}/id")));
        assert_eq!(rec.status, status, "{kind}");
        assert_eq!(rec.statement, "Hľadám Škoda Octavia combi", "{kind}");
        assert_eq!(rec.category, "vehicles", "{kind}");
        assert_eq!(rec.criteria["model"], "Octavia", "{kind}");
        let limit = rec.hidden_limit.as_ref().map(|l| h.base.keys().open_str(l).unwrap().expose().to_owned());
        assert!(limit.as_deref().is_some_and(|l| l.contains(&LIMIT.to_string())), "{kind}: hidden limit {limit:?}");
        if let Some(email) = m.pointer(&format!("/intents/{kind}/email")).and_then(Value::as_str) {
            if kind != "owned" {
                let c = rec.contact.as_ref().unwrap_or_else(|| panic!("{kind}: no contact"));
                assert!(h.base.keys().open_str(c).unwrap().expose().contains(email), "{kind}");
            }
        }
        let active = h.base.store().read(|rx| rx.active_ids()).unwrap().contains(&rec.id);
        assert_eq!(active, status == Status::Active, "{kind}: the active set");
    }
    let owned = stored(h, &s("/intents/owned/id"));
    assert_eq!(owned.owner.as_deref(), Some(s("/buyer/accountId").as_str()));
    assert!(owned.match_count > 0, "the owned intent matched the catalogue");
    // The person index: every active intent has its row.
    for kind in ["active", "owned", "pseudonymous"] {
        let id = s(&format!("/intents/{kind}/id"));
        assert!(h.base.store().read(|rx| rx.intent_person(&id)).unwrap().is_some(), "{kind}: person index");
    }
    // Accounts by their keyed e-mail index.
    let buyer = isto::accounts::account_by_email(&h.base, &s("/buyer/email")).unwrap().unwrap();
    assert_eq!(buyer.id, s("/buyer/accountId"));
    let seller = isto::accounts::account_by_email(&h.base, &s("/seller/email")).unwrap().unwrap();
    assert_eq!(seller.id, s("/seller/accountId"));

    // The holder serves it. The buyer's session and the results pages:
    let page = f.get(&format!("/me/intents/{}", owned.id), Some(&s("/buyer/cookie")));
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert!(page.body.contains("Škoda Octavia Combi"), "{}", page.body);
    let page = f.get(&format!("/results/{}", s("/intents/active/resultsToken")), None);
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert!(page.body.contains("Škoda Octavia Combi"), "{}", page.body);
    // The seller: its OAuth token, its session, its handle of the pseudonymous intent.
    let grant = isto::oauth::check_bearer(&h.base, Some(&bearer(&s("/seller/accessToken"))), SELLER_RESOURCE, "offers")
        .unwrap_or_else(|_| panic!("the fixture's access token is refused"));
    assert_eq!(grant.account_id, seller.id);
    assert_eq!(f.get("/seller/intents", Some(&s("/seller/cookie"))).status, StatusCode::OK);
    let open = s("/intents/pseudonymous/id");
    let handle = sellers::handle(&h.base, &s("/seller/sellerId"), &open);
    assert_eq!(handle, s("/intents/pseudonymous/handle"), "handles are unchanged");
    let r = crate::kit::mcp_call_as(
        h,
        isto::mcp::Endpoint::Seller,
        Some(&seller_grant(&seller.id)),
        "intent_list_open_intents",
        &json!({}),
    )
    .unwrap();
    let v = serde_json::to_value(&r).unwrap();
    let listed: Vec<&str> =
        v["structuredContent"]["intents"].as_array().unwrap().iter().map(|i| i["id"].as_str().unwrap()).collect();
    assert_eq!(listed, vec![handle.as_str()], "{v}");
    // The queued reply is matched and delivered.
    assert_eq!(h.base.store().read(|rx| rx.pending_reply_count()).unwrap(), 1);
    isto::deliveries::match_queued_replies(&h.base).unwrap();
    isto::deliveries::queue_due_digests(&h.base).unwrap();
    assert_eq!(h.base.store().read(|rx| rx.pending_reply_count()).unwrap(), 0);
    let (delivered, _) = isto::deliveries::list(&h.base, &open, None, 10).unwrap();
    assert!(delivered.iter().any(|d| d.offer.title == "Škoda Octavia Combi (reply)"));
    // The flows continue: consent on the draft, then its confirmation; the awaiting
    // intent's confirmation; a withdrawal by code.
    let draft = s("/intents/draft/id");
    let consent = s("/intents/draft/consentToken");
    assert_eq!(h.intents.give_consent(&consent, "later@example.com", "en").unwrap(), ConsentOutcome::Recorded);
    assert_eq!(h.intents.confirm(&token_from_outbox(h, "/confirm/")).unwrap(), ConfirmOutcome::Activated);
    assert_eq!(stored(h, &draft).status, Status::Active);
    let awaiting = s("/intents/awaiting/id");
    assert_eq!(h.intents.confirm(&s("/intents/awaiting/confirmToken")).unwrap(), ConfirmOutcome::Activated);
    assert_eq!(stored(h, &awaiting).status, Status::Active);
    let active = s("/intents/active/id");
    h.intents.withdraw_by_code(&s("/intents/active/code"), None).unwrap();
    assert_eq!(stored(h, &active).status, Status::Withdrawn);
    // New writes after the migration: a new intent, a new offer.
    consented(&f, &octavia("private"), "new@example.com");
    let (counts, _) = export_of(h.base.store());
    assert!(counts["intents"] > want_count(&m, "intents"));
}

fn want_count(m: &Value, table: &str) -> u64 {
    m["counts"][table].as_u64().unwrap()
}

/// The binary on the data directory `data`: no config file, no SMTP URL, no systemd
/// socket, logs at warn, no backtraces, no stdin.
fn isto_bin(data: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_isto"));
    c.env("ISTO_DATA_DIR", data)
        .env_remove("ISTO_CONFIG")
        .env_remove("ISTO_SMTP_URL")
        .env_remove("NOTIFY_SOCKET")
        .env_remove("RUST_BACKTRACE")
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null());
    c
}

/// Runs the binary with `args` on `data` (bounded: 60 s).
pub(crate) fn run(data: &Path, args: &[&str]) -> Output {
    run_with_stdout(data, args, Stdio::piped())
}

/// Runs the binary with `args` on `data`, its standard output `stdout`, stderr piped,
/// listening (if it serves) on a free loopback port; to its end, at most 60 s.
pub(crate) fn run_with_stdout(data: &Path, args: &[&str], stdout: impl Into<Stdio>) -> Output {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut child = isto_bin(data)
        .args(args)
        .env("ISTO_LISTEN", format!("127.0.0.1:{port}"))
        .env("ISTO_PUBLIC_URL", format!("http://127.0.0.1:{port}"))
        .stdout(stdout)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("isto {args:?} did not finish in 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// Marks the store file at `path` as isto `writer` left it at schema `version`: its
/// `meta` row `schema_version`, its writer, and no record of the start-up passes (with
/// redb directly, as another isto's code would write it).
fn mark_schema(path: &Path, version: u64, writer: &str) {
    const META: redb::TableDefinition<&str, &str> = redb::TableDefinition::new("meta");
    let db = redb::Database::open(path).unwrap();
    let txn = db.begin_write().unwrap();
    {
        let mut meta = txn.open_table(META).unwrap();
        meta.insert("schema_version", version.to_string().as_str()).unwrap();
        meta.insert("isto_version", writer).unwrap();
        meta.retain(|k, _| !k.starts_with("pass:")).unwrap();
    }
    txn.commit().unwrap();
}

/// The `meta` rows of the store file at `path`, read with redb directly (no migration).
fn meta_of(path: &Path) -> BTreeMap<String, String> {
    use redb::{ReadableDatabase as _, ReadableTable as _};
    const META: redb::TableDefinition<&str, &str> = redb::TableDefinition::new("meta");
    let db = redb::Database::open(path).unwrap();
    let txn = db.begin_read().unwrap();
    let meta = txn.open_table(META).unwrap();
    meta.iter().unwrap().map(|r| r.unwrap()).map(|(k, v)| (k.value().to_owned(), v.value().to_owned())).collect()
}

fn mark_newer(path: &Path) {
    mark_schema(path, isto::store::SCHEMA_VERSION + 1, "99.0.0");
}

#[test]
fn a_store_newer_than_this_isto_is_refused_by_serve_and_migrate() {
    let d = tempfile::tempdir().unwrap();
    let data = d.path().join("data");
    copy_files(&fixture_dir(), &data);
    copy_files(&fixture_dir().join("keys"), &data.join("keys"));
    let store = data.join("isto.redb");
    mark_newer(&store);
    let before = meta_of(&store);
    let newer = isto::store::SCHEMA_VERSION + 1;
    let says_what_to_do = |t: &str| {
        assert!(t.contains(&format!("store schema version {newer}")), "{t}");
        assert!(t.contains("isto 99.0.0"), "names the isto that wrote it: {t}");
        assert!(t.contains(&format!("({})", isto::store::SCHEMA_VERSION)), "{t}");
        assert!(t.contains("upgrade isto again (install isto 99.0.0 or later)"), "{t}");
        assert!(t.contains("restore a backup made by this version"), "{t}");
        assert!(!t.contains("another `isto serve`"), "not blamed on another server: {t}");
    };
    // `isto admin migrate` (and its dry run) refuse, exit non-zero, change nothing.
    for args in [&["admin", "migrate"][..], &["admin", "migrate", "--dry-run"], &["admin", "migrate", "--json"]] {
        let o = run(&data, args);
        assert!(!o.status.success(), "{args:?}: {}", text(&o));
        says_what_to_do(&text(&o));
    }
    // `isto serve` refuses to start, with the same message.
    let o = run(&data, &["serve"]);
    assert!(!o.status.success(), "{}", text(&o));
    says_what_to_do(&text(&o));
    assert_eq!(meta_of(&store), before, "refusing changed nothing");
    // And in-process: the store open and the dry run name both versions.
    let e = Store::open(&store).unwrap_err();
    assert!(
        matches!(e, StoreError::TooNew { found, ref writer } if found == newer && writer.as_deref() == Some("99.0.0"))
    );
    says_what_to_do(&e.to_string());
    let e = isto::store::migrate_file(&store, false).unwrap_err();
    says_what_to_do(&e.to_string());
}

/// The tables added by migrations 2–4 (see `store::schema`); the fixture predates the
/// later ones.
const ADDED_SINCE_V1: [&str; 6] =
    ["intent_expiry", "intent_erasure", "intent_due", "person_active", "intent_person", "pending_replies"];

/// Turns the store file at `path` into one as isto wrote it at schema version 1: the
/// tables added since dropped, version 1, writer `writer`, no start-up pass recorded.
fn rewind_to_v1(path: &Path, writer: &str) {
    mark_schema(path, 1, writer);
    let db = redb::Database::open(path).unwrap();
    let txn = db.begin_write().unwrap();
    for t in ADDED_SINCE_V1 {
        assert!(txn.delete_table(redb::TableDefinition::<&str, ()>::new(t)).unwrap(), "{t}");
    }
    txn.commit().unwrap();
}

#[test]
fn migrate_lists_runs_and_reports_through_the_real_binary() {
    let d = tempfile::tempdir().unwrap();
    let data = d.path().join("data");
    copy_files(&fixture_dir(), &data);
    copy_files(&fixture_dir().join("keys"), &data.join("keys"));
    let manifest: Value = serde_json::from_str(&std::fs::read_to_string(data.join("fixture.json")).unwrap()).unwrap();
    let fixture_counts: BTreeMap<String, u64> = serde_json::from_value(manifest["counts"].clone()).unwrap();
    let store = data.join("isto.redb");
    // As isto at schema version 1 left it.
    rewind_to_v1(&store, "0.0.9");
    let current = isto::store::SCHEMA_VERSION;

    // The dry run lists versions and the pending migrations and what they would
    // change, and changes nothing.
    let before = meta_of(&store);
    let o = run(&data, &["admin", "migrate", "--dry-run", "--json"]);
    assert!(o.status.success(), "{}", text(&o));
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((r["via"].as_str(), r["dryRun"].as_bool()), (Some("store"), Some(true)), "{r}");
    assert_eq!((r["storeSchema"].as_u64(), r["writer"].as_str()), (Some(1), Some("0.0.9")), "{r}");
    assert_eq!(r["binarySchema"], current);
    let numbers: Vec<u64> = r["pending"].as_array().unwrap().iter().map(|m| m["number"].as_u64().unwrap()).collect();
    assert_eq!(numbers, (2..=current).collect::<Vec<_>>());
    for m in r["pending"].as_array().unwrap() {
        assert!(m["name"].as_str().is_some_and(|n| !n.is_empty()) && m["description"].as_str().is_some(), "{m}");
    }
    assert_eq!(r["migrated"], false);
    assert!(r["passes"].as_array().unwrap().iter().all(|p| p["done"] == false), "{r}");
    // What they would change: the new tables, the expiry index with every intent due.
    let changes: BTreeMap<String, (Option<u64>, u64)> = r["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["table"].as_str().unwrap().to_owned(), (t["before"].as_u64(), t["after"].as_u64().unwrap())))
        .collect();
    let intents = fixture_counts["intents"];
    let want: BTreeMap<String, (Option<u64>, u64)> = [
        ("intent_expiry", intents),
        ("intent_erasure", 0),
        ("intent_due", intents),
        ("person_active", 0),
        ("intent_person", 0),
        ("pending_replies", 0),
        ("intent_matches", 0),
        ("intent_targets", 0),
    ]
    .into_iter()
    .map(|(t, n)| (t.to_owned(), (None, n)))
    .collect();
    assert_eq!(changes, want, "{r}");
    assert_eq!(meta_of(&store), before, "a dry run changes nothing");
    let again = isto::store::migrate_file(&store, false).unwrap();
    assert_eq!((again.stored, again.pending.len() as u64), (Some(1), current - 1), "still at version 1");
    // The human form says the same.
    let o = run(&data, &["admin", "migrate", "--dry-run"]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("store schema version: 1 (last written by isto 0.0.9)"), "{t}");
    assert!(t.contains(&format!("this binary: isto {}, schema version {current}", isto::store::ISTO_VERSION)), "{t}");
    assert!(t.contains("2  intent_expiry_index: ") && t.contains("4  pending_replies: "), "{t}");
    assert!(t.contains("intent_due") && t.contains("(new table)"), "{t}");
    assert!(t.contains("start-up passes to run") && t.contains("person_keys"), "{t}");
    assert!(t.contains("dry run: nothing was changed"), "{t}");

    // The run migrates and runs the passes: the person index is rebuilt as it was.
    let o = run(&data, &["admin", "migrate", "--json"]);
    assert!(o.status.success(), "{}", text(&o));
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["migrated"], true, "{r}");
    assert!(r["passes"].as_array().unwrap().iter().all(|p| p["done"] == true), "{r}");
    let m = isto::store::migrate_file(&store, false).unwrap();
    assert_eq!(m.stored, Some(current));
    assert!(m.pending.is_empty() && m.tables.is_empty(), "{m:?}");
    assert_eq!(m.writer.as_deref(), Some(isto::store::ISTO_VERSION));
    let counts = export_of(&Store::open(&store).unwrap()).0;
    for (t, n) in &fixture_counts {
        let want = match t.as_str() {
            "intent_expiry" | "intent_due" => intents,
            "intent_erasure" | "pending_replies" => 0,
            _ => *n,
        };
        assert_eq!(counts[t], want, "table {t} after the migration");
    }
    // Again: nothing pending.
    let o = run(&data, &["admin", "migrate"]);
    let t = text(&o);
    assert!(
        o.status.success() && t.contains("pending migrations: none") && t.contains("start-up passes: all done"),
        "{t}"
    );
    // No store: an error that says what to do.
    let o = run(&d.path().join("nothing"), &["admin", "migrate"]);
    assert!(!o.status.success() && text(&o).contains("nothing to migrate"), "{}", text(&o));
}

#[test]
fn migrate_with_serve_running_says_it_migrated_at_start() {
    let d = tempfile::tempdir().unwrap();
    let data = d.path().join("data");
    copy_files(&fixture_dir(), &data);
    copy_files(&fixture_dir().join("keys"), &data.join("keys"));
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let log = d.path().join("serve.log");
    let mut child = isto_bin(&data)
        .arg("serve")
        .env("ISTO_LISTEN", format!("127.0.0.1:{port}"))
        .env("ISTO_PUBLIC_URL", format!("http://127.0.0.1:{port}"))
        .env("ISTO_SMTP_URL", "smtp://127.0.0.1:1")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while std::os::unix::net::UnixStream::connect(data.join("admin.sock")).is_err() {
        if t0.elapsed() > Duration::from_secs(20) || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            panic!("isto serve did not start:\n{}", std::fs::read_to_string(&log).unwrap_or_default());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let o = run(&data, &["admin", "migrate", "--json"]);
    let h = run(&data, &["admin", "migrate", "--dry-run"]);
    let _ = child.kill();
    let _ = child.wait();
    assert!(o.status.success(), "{}", text(&o));
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["via"], "server", "{r}");
    assert_eq!(r["server"]["schema"], isto::store::SCHEMA_VERSION);
    assert_eq!(r["server"]["isto"], isto::store::ISTO_VERSION);
    assert!(h.status.success(), "{}", text(&h));
    assert!(text(&h).contains("migrated the store at start"), "{}", text(&h));
}

#[test]
fn the_fixture_is_small_and_says_its_keys_are_test_keys() {
    let mut size = 0;
    for p in [fixture_dir(), fixture_dir().join("keys")] {
        for e in std::fs::read_dir(&p).unwrap() {
            let e = e.unwrap();
            if e.path().is_file() {
                size += e.metadata().unwrap().len();
            }
        }
    }
    assert!(size < 1 << 20, "the fixture is {size} bytes; keep it under 1 MiB");
    let readme = std::fs::read_to_string(fixture_dir().join("README.md")).unwrap();
    assert!(readme.contains("test keys"), "{readme}");
    assert!(fixture_dir().join("keys/sealing.key").is_file());
}

/// The rows of the `&str → JSON` table `table` of the store file at `path`, by key
/// (redb directly, no migration).
fn raw_rows(path: &Path, table: &str) -> BTreeMap<String, Value> {
    use redb::{ReadableDatabase as _, ReadableTable as _};
    let db = redb::Database::open(path).unwrap();
    let txn = db.begin_read().unwrap();
    let t = txn.open_table(redb::TableDefinition::<&str, &[u8]>::new(table)).unwrap();
    t.iter()
        .unwrap()
        .map(|r| r.unwrap())
        .map(|(k, v)| (k.value().to_owned(), serde_json::from_slice(v.value()).unwrap()))
        .collect()
}

/// Writes `rows` (key → JSON) into the table `table` of the store file at `path`, as a
/// damaged file (or a faulty older isto) would hold them (redb directly).
fn put_raw_rows(path: &Path, table: &str, rows: &[(&str, &Value)]) {
    let db = redb::Database::open(path).unwrap();
    let txn = db.begin_write().unwrap();
    {
        let mut t = txn.open_table(redb::TableDefinition::<&str, &[u8]>::new(table)).unwrap();
        for (k, v) in rows {
            t.insert(*k, serde_json::to_vec(v).unwrap().as_slice()).unwrap();
        }
    }
    txn.commit().unwrap();
}

/// A copy of the fixture's data directory under `d` (not opened); its store file.
fn fixture_copy(d: &Path) -> PathBuf {
    let data = d.join("data");
    copy_files(&fixture_dir(), &data);
    copy_files(&fixture_dir().join("keys"), &data.join("keys"));
    data.join("isto.redb")
}

/// Microseconds of an RFC 3339 time.
fn micros_of(s: &str) -> i64 {
    (isto::clock::parse_rfc3339(s).unwrap().unix_timestamp_nanos() / 1000) as i64
}

#[test]
fn migration_5_stores_every_intent_time_as_microseconds_and_leaves_an_unreadable_one_to_fail() {
    let d = tempfile::tempdir().unwrap();
    let store = fixture_copy(d.path());
    let before = raw_rows(&store, "intents");
    // One record with a time the older isto never wrote, as a damaged file would hold.
    let damaged = before.keys().next().unwrap().clone();
    let mut v = before[&damaged].clone();
    v["updated_at"] = json!("yesterday");
    put_raw_rows(&store, "intents", &[(damaged.as_str(), &v)]);
    // The dry run names the migration; the open runs it.
    let m = isto::store::migrate_file(&store, false).unwrap();
    assert!(m.pending.iter().any(|p| p.number == 5 && p.name == "intent_times"), "{m:?}");
    let s = Store::open(&store).unwrap();
    drop(s);
    let after = raw_rows(&store, "intents");
    assert_eq!(after.len(), before.len());
    let fields = [
        "valid_until",
        "created_at",
        "updated_at",
        "draft_expires_at",
        "confirm_expires_at",
        "confirmed_at",
        "ended_at",
    ];
    let mut seen = 0;
    for (id, old) in &before {
        let new = &after[id];
        for f in fields {
            match (&old[f], id == &damaged && f == "updated_at") {
                (Value::Null, _) => assert!(new[f].is_null(), "{id} {f}"),
                (_, true) => assert_eq!(new[f], json!("yesterday"), "left as it was"),
                (Value::String(t), false) => {
                    assert_eq!(new[f], json!(micros_of(t)), "{id} {f}");
                    seen += 1;
                }
                (other, _) => panic!("{id} {f}: a v4 time is a string, not {other}"),
            }
        }
        if let Some(t) = old["consent"]["at"].as_str() {
            assert_eq!(new["consent"]["at"], json!(micros_of(t)), "{id} consent.at");
            seen += 1;
        }
        match old["last_digest_at"].as_i64() {
            Some(secs) => assert_eq!(new["last_digest_at"], json!(secs * 1_000_000), "{id}"),
            None => assert!(new["last_digest_at"].is_null()),
        }
        // Nothing else changed.
        let strip = |v: &Value| {
            let mut v = v.clone();
            for f in fields.iter().chain(&["consent", "last_digest_at"]) {
                v.as_object_mut().unwrap().remove(*f);
            }
            v
        };
        assert_eq!(strip(old), strip(new), "{id}");
    }
    assert!(seen >= 7 * 4, "every intent's times were converted ({seen})");
    assert!(before.values().any(|v| v["last_digest_at"].is_i64()), "the fixture has a digest sent");
    // Each record reads as an IntentRecord, but the damaged one: an error naming it.
    let s = Store::open(&store).unwrap();
    for id in before.keys() {
        let r = s.read(|rx| rx.intent::<IntentRecord>(id));
        if id == &damaged {
            assert!(matches!(r, Err(StoreError::Corrupt(ref k, _)) if k == id), "{r:?}");
        } else {
            let rec = r.unwrap().unwrap();
            assert_eq!(rec.created_at.micros(), micros_of(before[id]["created_at"].as_str().unwrap()));
        }
    }
}

/// The record namespaces whose times migration 6 converts, with those times (RFC 3339
/// strings up to schema version 5).
const ACCOUNT_TIMES: [(&str, &[&str]); 3] = [
    ("account:", &["created_at", "consent_at"]),
    ("session:", &["created_at", "expires_at", "last_seen"]),
    ("signin:", &["created_at", "expires_at"]),
];

#[test]
fn migration_6_stores_account_session_link_and_throttle_times_as_microseconds() {
    let d = tempfile::tempdir().unwrap();
    let store = fixture_copy(d.path());
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture_dir().join("fixture.json")).unwrap()).unwrap();
    let m = |p: &str| manifest.pointer(p).and_then(Value::as_str).unwrap().to_owned();
    let cookie = |who: &str| m(&format!("/{who}/cookie")).split_once('=').unwrap().1.to_owned();
    let before = raw_rows(&store, "records");
    // The seller's session with an end the older isto never wrote.
    let damaged = format!("session:{}", isto::accounts::session_key(&cookie("seller")));
    let mut v = before[&damaged].clone();
    v["expires_at"] = json!("in two weeks");
    put_raw_rows(&store, "records", &[(damaged.as_str(), &v)]);
    let plan = isto::store::migrate_file(&store, false).unwrap();
    assert!(plan.pending.iter().any(|p| p.number == 6 && p.name == "account_times"), "{plan:?}");
    drop(Store::open(&store).unwrap());

    let after = raw_rows(&store, "records");
    assert_eq!(after.keys().collect::<Vec<_>>(), before.keys().collect::<Vec<_>>());
    let (mut times, mut throttled) = (0, 0);
    for (key, old) in &before {
        let new = &after[key];
        let Some((_, fields)) = ACCOUNT_TIMES.iter().find(|(p, _)| key.starts_with(p)) else {
            if key.starts_with("throttle:") {
                let secs = old["times"].as_array().unwrap().iter().map(|t| t.as_i64().unwrap());
                assert_eq!(new["times"], json!(secs.map(|s| s * 1_000_000).collect::<Vec<_>>()), "{key}");
                throttled += 1;
            } else if !RECORD_TIMES.iter().any(|(p, _, _)| key.starts_with(p)) {
                // (Migration 7's namespaces: see its test below.)
                assert_eq!(new, old, "{key}: not a time of migration 6");
            }
            continue;
        };
        for f in *fields {
            match (&old[*f], key == &damaged && *f == "expires_at") {
                (Value::Null, _) => assert!(new[*f].is_null(), "{key} {f}"),
                (_, true) => assert_eq!(new[*f], json!("in two weeks"), "left as it was"),
                (Value::String(t), false) => {
                    assert_eq!(new[*f], json!(micros_of(t)), "{key} {f}");
                    times += 1;
                }
                (other, _) => panic!("{key} {f}: a v5 time is a string, not {other}"),
            }
        }
        // Nothing else changed.
        let strip = |v: &Value| {
            let mut v = v.clone();
            fields.iter().for_each(|f| drop(v.as_object_mut().unwrap().remove(*f)));
            v
        };
        assert_eq!(strip(old), strip(new), "{key}");
    }
    // 2 accounts and the buyer's consent, 2 sessions (but the damaged end), 1 sign-in
    // link; 2 throttle counters.
    assert_eq!((times, throttled), (2 + 1 + (2 * 2 - 1) + 2, 2));

    // Read back by the current code: the same instants, the buyer's session honoured.
    // The holder opens this migrated file only on redb; on PostgreSQL the same
    // migration is read back by store::account_times's test.
    if !kit::redb_only("reading the migrated fixture back", "the holder's store is the database, not this file") {
        return;
    }
    let clock = Arc::new(ManualClock::new(isto::clock::parse_rfc3339(&m("/clock")).unwrap()));
    let h = kit::open_state(store.parent().unwrap(), clock, Opts::default());
    let buyer = m("/buyer/accountId");
    let account = isto::accounts::account(&h.base, &buyer).unwrap().unwrap();
    let old = &before[&format!("account:{buyer}")];
    assert_eq!(account.created_at.micros(), micros_of(old["created_at"].as_str().unwrap()));
    assert_eq!(account.consent_at.map(|t| t.micros()), old["consent_at"].as_str().map(micros_of));
    let signed = isto::accounts::session_for(&h.base, &cookie("buyer")).unwrap().expect("the buyer's session");
    assert_eq!(signed.account.id, buyer);
    let old = &before[&format!("session:{}", signed.key)];
    assert_eq!(
        (signed.session.created_at.micros(), signed.session.expires_at.micros()),
        (micros_of(old["created_at"].as_str().unwrap()), micros_of(old["expires_at"].as_str().unwrap()))
    );
    // The damaged one: an error naming it, never an expired session nor one ending in 1970.
    match isto::accounts::session_for(&h.base, &cookie("seller")) {
        Err(isto::accounts::AccountError::Store(StoreError::Corrupt(k, cause))) => {
            assert_eq!(k, damaged);
            assert!(cause.starts_with("invalid type: string \"in two weeks\", expected i64"), "{cause}");
        }
        other => panic!("not an error naming the session: {other:?}"),
    }
    let tokens = isto::accounts::SessionTokens::new([cookie("seller")]);
    assert!(isto::accounts::signed_in(&h.base, &tokens).is_none(), "not honoured");
}

/// The record namespaces whose times migration 7 converts, whether they were unix
/// seconds (else RFC 3339 strings), and those times (up to schema version 6).
const RECORD_TIMES: [(&str, bool, &[&str]); 6] = [
    ("client:", true, &["client_id_issued_at", "last_used_at"]),
    ("authcode:", true, &["expires_at"]),
    ("token:", true, &["issued_at", "expires_at", "used_at"]),
    ("family:", true, &["created_at", "expires_at"]),
    ("authdecision:", true, &["expires_at"]),
    ("seller:", false, &["createdAt"]),
];

#[test]
fn migration_7_stores_oauth_and_seller_times_as_microseconds_and_the_purge_leaves_an_unreadable_one() {
    let d = tempfile::tempdir().unwrap();
    let store = fixture_copy(d.path());
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture_dir().join("fixture.json")).unwrap()).unwrap();
    let m = |p: &str| manifest.pointer(p).and_then(Value::as_str).unwrap().to_owned();
    let before = raw_rows(&store, "records");
    // The seller's refresh token with an end the older isto never wrote.
    let damaged = format!("token:{}", isto::crypto::token_hash("oauth-refresh", &m("/seller/refreshToken")));
    let mut v = before[&damaged].clone();
    v["expires_at"] = json!("in thirty days");
    put_raw_rows(&store, "records", &[(damaged.as_str(), &v)]);
    let plan = isto::store::migrate_file(&store, false).unwrap();
    assert!(plan.pending.iter().any(|p| p.number == 7 && p.name == "record_times"), "{plan:?}");
    drop(Store::open(&store).unwrap());

    let after = raw_rows(&store, "records");
    assert_eq!(after.keys().collect::<Vec<_>>(), before.keys().collect::<Vec<_>>());
    let mut converted = BTreeMap::<&str, u32>::new();
    for (key, old) in &before {
        let Some((prefix, secs, fields)) = RECORD_TIMES.iter().find(|(p, _, _)| key.starts_with(p)) else { continue };
        let new = &after[key];
        if !old.is_object() {
            assert_eq!(new, old, "{key}: not a record with times");
            continue;
        }
        for f in *fields {
            match (&old[*f], key == &damaged && *f == "expires_at") {
                (Value::Null, _) => assert!(new[*f].is_null(), "{key} {f}"),
                (_, true) => assert_eq!(new[*f], json!("in thirty days"), "left as it was"),
                (Value::Number(n), false) if *secs => {
                    assert_eq!(new[*f], json!(n.as_i64().unwrap() * 1_000_000), "{key} {f}");
                    *converted.entry(prefix).or_default() += 1;
                }
                (Value::String(t), false) if !*secs => {
                    assert_eq!(new[*f], json!(micros_of(t)), "{key} {f}");
                    *converted.entry(prefix).or_default() += 1;
                }
                (other, _) => panic!("{key} {f}: not a time as schema 6 wrote it: {other}"),
            }
        }
        // Nothing else changed.
        let strip = |v: &Value| {
            let mut v = v.clone();
            fields.iter().for_each(|f| drop(v.as_object_mut().unwrap().remove(*f)));
            v
        };
        assert_eq!(strip(old), strip(new), "{key}");
    }
    // Every namespace of the migration had times in the fixture, and they were converted.
    let mut every: Vec<&str> = RECORD_TIMES.iter().map(|(p, _, _)| *p).collect();
    every.sort_unstable();
    assert_eq!(converted.keys().copied().collect::<Vec<_>>(), every, "{converted:?}");

    // Read back by the current code: the same instants (on PostgreSQL the same
    // migration is read back by store::account_times's test).
    if !kit::redb_only("reading the migrated fixture back", "the holder's store is the database, not this file") {
        return;
    }
    let now = isto::clock::parse_rfc3339(&m("/clock")).unwrap();
    let clock = Arc::new(ManualClock::new(now));
    let h = kit::open_state(store.parent().unwrap(), clock, Opts::default());
    let seller = m("/seller/accountId");
    let profile = sellers::profile(&h.base, &seller).unwrap().unwrap();
    let old = &before[&format!("seller:{seller}")];
    assert_eq!(profile.created_at.micros(), micros_of(old["createdAt"].as_str().unwrap()));
    let client_id = m("/seller/clientId");
    let client: isto::oauth::ClientRecord =
        h.base.store().read(|rx| rx.record(isto::store::Ns::Client, &client_id)).unwrap().unwrap();
    let old = &before[&format!("client:{client_id}")];
    assert_eq!(client.client_id_issued_at.micros(), old["client_id_issued_at"].as_i64().unwrap() * 1_000_000);
    // The access token is honoured as before the upgrade.
    let access = bearer(&m("/seller/accessToken"));
    let grant = isto::oauth::check_bearer(&h.base, Some(&access), SELLER_RESOURCE, "offers")
        .unwrap_or_else(|_| panic!("the fixture's access token is refused"));
    assert_eq!(grant.account_id, seller);
    // A purge long after: every readable token goes, the unreadable one is left as it was.
    let later = now + time::Duration::days(400);
    let purged = h.base.store().write(|tx| isto::oauth::purge_tx(tx, later)).unwrap();
    assert!(purged.tokens >= 1, "{purged:?}");
    let left = h.base.store().read(|rx| rx.records::<Value>(isto::store::Ns::Token)).unwrap();
    let keys: Vec<String> = left.iter().map(|(k, _)| format!("token:{k}")).collect();
    assert_eq!(keys, vec![damaged.clone()], "only the unreadable token is left");
    assert_eq!(left[0].1["expires_at"], json!("in thirty days"));
}
