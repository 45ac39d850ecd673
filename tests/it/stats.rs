//! Issue 11 point 4: `isto admin stats` counts over a real redb file (in-process and
//! through the binary, offline), and the metrics' label bounds: a random path or an
//! unknown tool name never becomes a label value, whatever a client sends.

use isto::admin::{collect_stats, stats_report};
use isto::protocol::Money;
use isto::records::OfferInput;
use isto::state::AppState;
use serde_json::{json, Value};
use std::collections::BTreeMap;

use crate::kit::{open_state, token_from_outbox, wall_clock, Fx, Opts};

fn offer(reference: &str, category: &str, price: f64) -> OfferInput {
    let attributes = match category {
        "vehicles" => json!({"make": "Škoda", "model": "Octavia"}),
        _ => json!({"propertyType": "flat"}),
    };
    OfferInput {
        reference: Some(reference.into()),
        title: format!("Offer {reference}"),
        description: String::new(),
        category: category.into(),
        attributes: attributes.as_object().cloned().unwrap(),
        price: Money { amount: price, currency: "EUR".into() },
        area: isto::gazetteer::resolve("Bratislava").unwrap(),
        seller_name: format!("Dealer {category}"),
        seller_url: None,
        url: None,
        valid_until: None,
    }
}

/// Publishes a draft; answers (intent id, intentCode, consent token).
fn publish(h: &AppState, statement: &str) -> (String, String, String) {
    let args = json!({"statement": statement, "criteria": {"category": "vehicles", "make": "Škoda", "model": "Octavia"},
                      "area": "Bratislava", "budget": {"max": 15000, "currency": "EUR"}, "hiddenLimit": 12345});
    let r = h.intents.publish_draft(h.intents.parse_publish(&args).unwrap()).unwrap();
    let consent = r.consent_url.rsplit('/').next().unwrap().to_owned();
    (r.intent.id, r.intent_code, consent)
}

fn counts(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
}

#[test]
fn stats_count_intents_offers_sellers_deliveries_outbox_and_accounts_without_personal_data() {
    let f = Fx::new();
    let h = &f.holder;
    let empty = collect_stats(h).unwrap();
    assert_eq!((empty.intents.total, empty.offers.total, empty.deliveries, empty.accounts), (0, 0, 0, 0));

    h.catalogue
        .import_offers(vec![
            offer("v1", "vehicles", 9000.0),
            offer("v2", "vehicles", 11000.0),
            offer("p1", "property", 90000.0),
        ])
        .unwrap();
    // One draft, one awaiting its e-mail confirmation, one active (matched), one withdrawn.
    publish(h, "Draft Octavia");
    let (_, _, consent) = publish(h, "Unconfirmed Octavia");
    h.intents.give_consent(&consent, "waiting@buyer.example", "en").unwrap();
    let (_, _, consent) = publish(h, "Active Octavia");
    h.intents.give_consent(&consent, "active@buyer.example", "en").unwrap();
    h.intents.confirm(&token_from_outbox(h, "/confirm/")).unwrap();
    let (_, code, _) = publish(h, "Withdrawn Octavia");
    h.intents.withdraw_by_code(&code, None).unwrap();
    f.buyer("account@buyer.example");

    let s = collect_stats(h).unwrap();
    assert_eq!(s.intents.total, 4);
    assert_eq!(
        s.intents.by_status,
        counts(&[("awaiting_consent", 1), ("awaiting_email_confirmation", 1), ("active", 1), ("withdrawn", 1)])
    );
    assert_eq!(s.intents.by_category.keys().collect::<Vec<_>>(), ["vehicles"]);
    assert_eq!(s.intents.by_category["vehicles"], s.intents.by_status);
    assert_eq!((s.offers.total, s.offers.active), (3, 3));
    assert_eq!(s.offers.by_category["vehicles"], counts(&[("active", 2)]));
    assert_eq!(s.offers.by_category["property"], counts(&[("active", 1)]));
    assert_eq!((s.sellers.total, s.sellers.disabled), (2, 0));
    assert_eq!(s.deliveries, 2, "both vehicles under the hidden limit were delivered to the active intent");
    assert_eq!(s.accounts, 1);
    assert!(s.outbox.depth >= 2, "confirmation and sign-up mails are queued: {:?}", s.outbox);

    // The draft expires by the clock: counted by its effective status.
    f.clock.advance(time::Duration::hours(25));
    let later = collect_stats(h).unwrap();
    assert_eq!(later.intents.by_status.get("awaiting_consent"), None);
    assert_eq!(later.intents.by_status["expired"], 1);

    // Neither form carries a statement, an address or the limit.
    let json = serde_json::to_string(&s).unwrap();
    let text = stats_report(&s);
    for secret in ["Octavia", "buyer.example", "12345", "Dealer", &code] {
        assert!(!json.contains(secret) && !text.contains(secret), "{secret} in the stats:\n{json}\n{text}");
    }
    assert!(text.contains("intents") && text.contains("deliveries"), "{text}");
}

#[test]
fn admin_stats_json_offline_from_the_binary_and_a_json_error_without_a_store() {
    let data = tempfile::tempdir().unwrap();
    let h = open_state(data.path(), wall_clock(), Opts::default());
    h.catalogue.import_offers(vec![offer("v1", "vehicles", 9000.0)]).unwrap();
    publish(&h, "Offline Octavia");
    drop(h); // the store is closed: the command opens it itself
    let dir = data.path().to_owned();
    let isto = |data: &std::path::Path, args: &[&str]| {
        crate::kit::load::isto(data).args(args).env_remove("RUST_LOG").output().unwrap()
    };
    let out = isto(&dir, &["admin", "stats", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["intents"]["byStatus"], json!({"awaiting_consent": 1}));
    assert_eq!(v["offers"]["byCategory"], json!({"vehicles": {"active": 1}}));
    let human = isto(&dir, &["admin", "stats"]);
    assert!(String::from_utf8_lossy(&human.stdout).contains("awaiting_consent"));

    if !crate::kit::redb_only("stats without a store", "a PostgreSQL store is its database, always there") {
        return;
    }
    // No store: with --json the failure is a JSON object on stdout, exit status 1.
    let none = tempfile::tempdir().unwrap();
    let out = isto(none.path(), &["admin", "stats", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ok"], false);
    assert!(v["error"].as_str().unwrap().contains("isto admin init"), "{v}");
    // And init --json reports what it made.
    let out = isto(none.path(), &["admin", "init", "--json"]);
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (v["dataDirCreated"].clone(), v["keyCreated"].clone(), v["storeState"].clone()),
        (json!(false), json!(true), json!("created"))
    );
}

/// The label values of `series` in the exposition (the whole `{…}` of each sample).
fn label_sets(text: &str, series: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix(series))
        .filter_map(|rest| rest.strip_prefix('{'))
        .filter_map(|rest| rest.rsplit_once("} ").map(|(labels, _)| labels))
        .map(str::to_owned)
        .collect()
}

#[test]
fn random_paths_and_unknown_tools_create_no_series() {
    let f = Fx::new();
    let junk_path = format!("/no-such-page-{}", isto::crypto::new_id("x"));
    let junk_tool = format!("no_such_tool_{}", isto::crypto::new_id("y"));

    for i in 0..20 {
        let r = f.get(&format!("{junk_path}-{i}"), None);
        assert_eq!(r.status, axum::http::StatusCode::NOT_FOUND);
    }
    // A consent page with a token in its path: counted under its route pattern.
    f.get("/consent/tok3n-that-must-not-become-a-label", None);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let (_, sid, _) = f.rpc(&f.app, "/mcp", None, &[], init);
    let sid = sid.unwrap();
    f.rpc(&f.app, "/mcp", Some(&sid), &[], json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    for i in 0..5 {
        let call = json!({"jsonrpc": "2.0", "id": 10 + i, "method": "tools/call",
                          "params": {"name": format!("{junk_tool}{i}"), "arguments": {}}});
        let (_, _, msg) = f.rpc(&f.app, "/mcp", Some(&sid), &[], call);
        assert_eq!(msg["error"]["code"], -32602, "{msg}");
        assert!(msg["error"]["message"].as_str().is_some_and(|m| m.starts_with("unknown tool")), "{msg}");
    }
    let call = json!({"jsonrpc": "2.0", "id": 99, "method": "tools/call",
                      "params": {"name": "intent_get_intent", "arguments": {"intentCode": "wrong"}}});
    f.rpc(&f.app, "/mcp", Some(&sid), &[], call);

    let after = isto::telemetry::render(None);
    assert!(!after.contains("no-such-page") && !after.contains("no_such_tool") && !after.contains("tok3n"), "{after}");
    let endpoints: std::collections::HashSet<String> = label_sets(&after, "isto_http_requests_total")
        .iter()
        .filter_map(|l| l.split(',').next().map(str::to_owned))
        .collect();
    assert!(endpoints.contains("endpoint=\"unmatched\""), "{endpoints:?}");
    assert!(endpoints.contains("endpoint=\"/consent/{token}\""), "{endpoints:?}");
    assert!(
        endpoints
            .iter()
            .all(|e| e == "endpoint=\"unmatched\"" || e == "endpoint=\"other\"" || e.starts_with("endpoint=\"/")),
        "{endpoints:?}"
    );
    let tools = label_sets(&after, "isto_mcp_tool_calls_total");
    assert!(tools.contains(&"tool=\"other\",outcome=\"unknown_tool\"".to_owned()), "{tools:?}");
    assert!(tools.contains(&"tool=\"intent_get_intent\",outcome=\"error\"".to_owned()), "{tools:?}");
}

#[test]
fn every_admin_command_prints_one_json_object_with_json_and_a_json_error_on_failure() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_isto"))
            .args(args)
            .env("ISTO_DATA_DIR", data.path())
            .env_remove("ISTO_CONFIG")
            .env_remove("RUST_LOG")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(lines.len(), 1, "isto {args:?} printed other than one line:\n{stdout}");
        let v: Value =
            serde_json::from_str(lines[0]).unwrap_or_else(|e| panic!("isto {args:?}: not JSON ({e}):\n{stdout}"));
        (out.status.code(), v)
    };
    let ok = |args: &[&str]| {
        let (code, v) = run(args);
        assert_eq!(code, Some(0), "isto {args:?}: {v}");
        v
    };
    // `offers import` keeps 1 for rejected rows: its other failures exit 2.
    let failed = |args: &[&str], needle: &str| {
        let (code, v) = run(args);
        let expected = if args.starts_with(&["admin", "offers", "import"]) { 2 } else { 1 };
        assert_eq!(code, Some(expected), "isto {args:?}: {v}");
        assert_eq!(v["ok"], false, "{v}");
        assert!(v["error"].as_str().unwrap().contains(needle), "isto {args:?}: {v}");
    };
    let path = |name: &str| work.path().join(name).display().to_string();

    failed(&["admin", "purge", "--json"], "isto admin init");
    ok(&["admin", "init", "--json"]);
    assert!(ok(&["admin", "check-config", "--json"])["listen"].is_string());
    ok(&["admin", "stats", "--json"]);
    ok(&["admin", "purge", "--dry-run", "--json"]);
    ok(&["admin", "seller", "list", "--json"]);
    let added = ok(&["admin", "seller", "add", "--name", "JSON Dealer", "--email", "dealer@seller.example", "--json"]);
    let account = added["seller"]["accountId"].as_str().unwrap_or("").to_owned();
    assert!(account.starts_with("acc_"), "{added}");
    ok(&["admin", "seller", "disable", &account, "--json"]);
    ok(&["admin", "seller", "enable", &account, "--json"]);
    failed(&["admin", "seller", "disable", "acc_nobody", "--json"], "no seller with this id");
    let feed = path("offers.jsonl");
    std::fs::write(
        &feed,
        serde_json::to_string(&json!({
        "ref": "j1", "title": "Škoda Octavia", "category": "vehicles",
        "attributes": {"make": "Škoda", "model": "Octavia"}, "price": {"amount": 9000, "currency": "EUR"},
        "area": {"country": "SK", "regions": ["SK-BL"]}, "seller": {"name": "JSON feed"}}))
        .unwrap()
            + "\n",
    )
    .unwrap();
    ok(&["admin", "offers", "import", &feed, "--json"]);
    failed(&["admin", "offers", "import", &path("missing.jsonl"), "--json"], "missing.jsonl");
    let backup = path("b.isto-backup");
    ok(&["admin", "backup", "--out", &backup, "--json"]);
    ok(&["admin", "backup", "--verify", &backup, "--json"]);
    failed(&["admin", "backup", "--out", &backup, "--json"], "--force");
    ok(&["admin", "keys", "export", "--out", &path("keys"), "--json"]);
    failed(&["admin", "restore", &backup, "--json"], "store");
    ok(&["admin", "restore", &backup, "--force", "--json"]);
    // A bad config value: the JSON error names the key.
    let config = path("bad.toml");
    std::fs::write(&config, "metrics_listen = \"nowhere\"\n").unwrap();
    failed(&["--config", &config, "admin", "check-config", "--json"], "metrics_listen");
}

/// The value of the sample `line` (`name{labels}`) in the exposition; 0 when absent.

#[test]
fn a_quota_refusal_is_counted_under_its_rule() {
    use isto::base::quota::{Key, Quotas};
    let series = "isto_quota_refusals_total{rule=\"confirmation_mails\"}";
    let before = crate::kit::metric(series);
    let q = Quotas::new(isto::config::Quotas { confirmation_mails_per_hour: 1, ..isto::config::Quotas::default() });
    let rule = isto::base::quota::Rule::MailsGlobal;
    assert!(q.take(rule, &Key::Global, 1_000).is_ok());
    for now in [1_001, 1_002] {
        let e = q.take(rule, &Key::Global, now).unwrap_err();
        assert_eq!((e.rule, e.limit), (rule, 1), "{e}");
    }
    let after = crate::kit::metric(series);
    // Other tests of this binary may refuse mails too: at least these two.
    assert!(after >= before + 2.0, "{before} → {after}");
}

#[test]
fn log_level_turns_on_admin_logs_and_wins_over_rust_log() {
    let data = tempfile::tempdir().unwrap();
    let run = |args: &[&str], rust_log: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_isto"))
            .args(args)
            .env("ISTO_DATA_DIR", data.path())
            .env_remove("ISTO_CONFIG")
            .env("RUST_LOG", rust_log)
            .output()
            .unwrap()
    };
    assert!(run(&["admin", "init"], "warn").status.success());
    let feed = data.path().join("f.jsonl");
    std::fs::write(&feed, "{\"title\":\"x\"}\n").unwrap();
    let feed = feed.display().to_string();
    // RUST_LOG alone: admin commands do not log.
    let quiet = run(&["admin", "offers", "import", &feed, "--json"], "trace");
    assert!(!String::from_utf8_lossy(&quiet.stderr).contains("catalogue import finished"));
    // --log-level info: they do, on stderr; stdout stays the one JSON report.
    let loud = run(&["--log-level", "info", "admin", "offers", "import", &feed, "--json"], "error");
    assert!(String::from_utf8_lossy(&loud.stderr).contains("catalogue import finished"), "{loud:?}");
    let stdout = String::from_utf8_lossy(&loud.stdout);
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    serde_json::from_str::<Value>(stdout.trim()).unwrap();
    // A level that is not one of the five is a usage error.
    let bad = run(&["--log-level", "chatty", "admin", "stats"], "");
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--log-level"), "{bad:?}");
}

#[test]
fn a_metrics_address_in_use_fails_the_start_before_anything_is_created() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let listen = free.local_addr().unwrap().to_string();
    drop(free);
    let work = tempfile::tempdir().unwrap();
    let data = work.path().join("data");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_isto"))
        .arg("serve")
        .env("ISTO_DATA_DIR", &data)
        .env("ISTO_LISTEN", &listen)
        .env("ISTO_METRICS_LISTEN", &addr)
        .env_remove("ISTO_CONFIG")
        .env("RUST_LOG", "warn")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("cannot listen on {addr}")), "{stderr}");
    assert!(!data.exists(), "a failed start left a data directory behind");
}
