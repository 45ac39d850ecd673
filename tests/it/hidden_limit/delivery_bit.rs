//! Whether a seller's reply was delivered (it was under the hidden limit) cannot be told
//! from what the seller sees afterwards (issue "Under attack, round 3", points 2 and 3),
//! measured the way an attacker does it on the real binary: `isto serve` over HTTP on
//! loopback, mail to `.eml` files, [`SELLERS`] sellers with OAuth tokens on
//! `/mcp/seller`.
//!
//! Digests go out as matches come (`mail.digest_min_interval_secs = 0`), so every
//! delivery also queues and writes a digest: the most work a delivery can set off.
//!
//! [`TRIALS`] replies, half of them under the hidden limit (delivered) and half above it
//! (refused), in a random order, each followed at once by the seller's next calls — a
//! read (`intent_demand_summary`) and a write (`intent_submit_offer` to a handle that
//! is not open: refused before anything is stored, but it takes the write lock) — and a
//! `GET /readyz` on the public listener. For the answer and for each next call, the
//! area under the ROC curve (AUC, the probability that a delivered reply's time is the
//! longer of a random pair, the Mann–Whitney U statistic) must be at most
//! [`AUC_MAX`] (either way), and every public `/readyz` answer must be exactly
//! `{"status":"ready"}`.
//!
//! Before the fix the reply woke the mail worker, which matched it (the write lock, the
//! hidden limit opened) and queued and wrote the digest right after the answer, so the
//! next call after a delivered reply was slower; and `/readyz` showed the outbox
//! backlog.

use crate::kit::load::Serve;
use crate::kit::{Fx, Opts};
use crate::sellers::{hd, octavia, reply, seller_token};
use rand::seq::SliceRandom as _;
use rand::{Rng as _, SeedableRng as _};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// Replies measured (half delivered, half refused).
const TRIALS: usize = 400;
/// Sellers replying in turn (each may reply three times to an intent, so fewer intents
/// have to be made).
const SELLERS: usize = 4;
/// The largest AUC allowed (and `1 - AUC_MAX` the smallest).
const AUC_MAX: f64 = 0.6;
/// The intents' hidden limit; replies at 9 000 EUR are delivered, at 15 000 refused
/// (both under the visible budget of 20 000).
const LIMIT: f64 = 12345.0;

/// The AUC of `a` against `b`: the share of pairs `(x in a, y in b)` with `x > y`,
/// ties counting half.
fn auc(a: &[f64], b: &[f64]) -> f64 {
    let mut wins = 0.0;
    for x in a {
        for y in b {
            wins += match x.partial_cmp(y) {
                Some(std::cmp::Ordering::Greater) => 1.0,
                Some(std::cmp::Ordering::Equal) => 0.5,
                _ => 0.0,
            };
        }
    }
    wins / (a.len() * b.len()) as f64
}

#[test]
fn auc_counts_pairs_and_half_ties() {
    assert_eq!(auc(&[2.0, 3.0], &[1.0, 2.0]), 0.875);
    assert_eq!(auc(&[1.0], &[1.0]), 0.5);
    assert_eq!(auc(&[0.0], &[1.0]), 0.0);
}

/// The value of the series `name` (without labels) on the metrics listener `port`.
fn metric(port: u16, name: &str) -> Option<f64> {
    let (_, _, text) = crate::kit::load::http(port, "GET", "/metrics", &[], "");
    let line = text.lines().find(|l| l.split_whitespace().next() == Some(name))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// A data dir with [`SELLERS`] sellers and enough active pseudonymous intents, each with
/// the hidden limit [`LIMIT`], for [`TRIALS`] replies at three per seller and intent,
/// the holder closed again; per seller its access token for `/mcp/seller` and its
/// handles of the intents. Its public URL is the kit's `https://holder.example`.
fn prepared() -> (tempfile::TempDir, Vec<(String, Vec<String>)>) {
    let quotas = isto::config::Quotas {
        drafts_per_client_per_hour: 10_000,
        consents_per_client_per_hour: 10_000,
        confirmation_mails_per_hour: 10_000,
        ..isto::config::Quotas::default()
    };
    let f = Fx::with(Opts { wall_clock: true, quotas: Some(quotas), ..Opts::default() });
    let sellers: Vec<_> = (0..SELLERS)
        .map(|k| f.seller(&format!("Dealer {k}"), &format!("{k}@dealer.example"), &["vehicles"], &["SK-BL"]))
        .collect();
    let ids: Vec<String> = (0..TRIALS.div_ceil(3 * SELLERS))
        .map(|i| f.consent_intent(octavia(json!({"hiddenLimit": LIMIT})), &format!("buyer{i}@example.com")).0)
        .collect();
    let out = sellers
        .iter()
        .enumerate()
        .map(|(k, s)| {
            let cookie = f.seller_signs_in(&format!("{k}@dealer.example"));
            (seller_token(&f, &cookie), ids.iter().map(|id| hd(&f.holder, s, id)).collect())
        })
        .collect();
    let Fx { dir, holder, app, rt, stop, .. } = f;
    stop.cancel();
    drop(app);
    drop(holder);
    drop(rt);
    (dir, out)
}

/// A seller's MCP session on the running binary.
struct Seller {
    http: reqwest::Client,
    url: String,
    token: String,
    session: Option<String>,
    next_id: u64,
}

impl Seller {
    /// One JSON-RPC request; returns the message (from a JSON body or the SSE `data:`
    /// line). Keeps the session id the server gives.
    async fn rpc(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let body = json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params});
        self.send(body).await
    }

    async fn send(&mut self, body: Value) -> Value {
        let mut req = self
            .http
            .post(&self.url)
            .header("host", "holder.example")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .bearer_auth(&self.token)
            .body(body.to_string());
        if let Some(s) = &self.session {
            req = req.header("mcp-session-id", s).header("mcp-protocol-version", "2025-06-18");
        }
        let res = req.send().await.unwrap();
        assert!(res.status().is_success(), "{}: {}", res.status(), res.text().await.unwrap_or_default());
        if let Some(s) = res.headers().get("mcp-session-id") {
            self.session = Some(s.to_str().unwrap().to_owned());
        }
        let text = res.text().await.unwrap();
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .or_else(|| serde_json::from_str(&text).ok())
            .unwrap_or(Value::Null)
    }

    /// Calls `tool`; returns its structured content and the seconds the call took.
    async fn call(&mut self, tool: &str, args: Value) -> (Value, f64) {
        let t0 = Instant::now();
        let out = self.rpc("tools/call", json!({"name": tool, "arguments": args})).await;
        let secs = t0.elapsed().as_secs_f64();
        assert_eq!(out["result"]["isError"], false, "{out}");
        (out["result"]["structuredContent"].clone(), secs)
    }
}

/// Times of one class of replies.
#[derive(Default)]
struct Times {
    answer: Vec<f64>,
    next_read: Vec<f64>,
    next_write: Vec<f64>,
}

#[test]
fn whether_a_reply_was_delivered_shows_neither_in_readyz_nor_in_the_next_calls_timing() {
    let t_start = Instant::now();
    let (dir, prepared) = prepared();
    let t_ready = t_start.elapsed().as_secs_f64();
    let config = dir.path().join("isto.toml");
    std::fs::write(
        &config,
        "[mail]\ndigest_min_interval_secs = 0\n[limits]\nmcp_requests_per_minute = 1000000\nmcp_burst = 100000\n\
         credential_requests_per_minute = 1000000\ncredential_burst = 100000\n\
         page_requests_per_minute = 1000000\npage_burst = 100000\n",
    )
    .unwrap();
    let metrics_port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let metrics = format!("127.0.0.1:{metrics_port}");
    let isto = Serve::start_with_env(
        dir.path(),
        dir.path().join("isto.log"),
        &[
            ("ISTO_PUBLIC_URL", "https://holder.example"),
            ("ISTO_CONFIG", config.to_str().unwrap()),
            ("ISTO_METRICS_LISTEN", &metrics),
        ],
    );
    let seed: u64 = rand::random();
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut order: Vec<bool> = (0..TRIALS).map(|i| i % 2 == 0).collect();
    order.shuffle(&mut rng);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (delivered, refused, readyz) = rt.block_on(async {
        let http = reqwest::Client::builder().timeout(Duration::from_secs(20)).build().unwrap();
        // Ready (index open) and the consent-flow mail sent before the measurement.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let ready = crate::kit::load::http(isto.port, "GET", "/readyz", &[], "").0 == 200;
            let outbox = metric(metrics_port, "isto_outbox_depth");
            if ready && outbox == Some(0.0) {
                break;
            }
            assert!(Instant::now() < deadline, "not ready with an empty outbox in 30 s ({outbox:?})\n{}", isto.log());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let url = format!("http://127.0.0.1:{}/mcp/seller", isto.port);
        let mut sellers = Vec::new();
        for (token, handles) in prepared {
            let mut s = Seller { http: http.clone(), url: url.clone(), token, session: None, next_id: 0 };
            let init = s
                .rpc(
                    "initialize",
                    json!({"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "timing", "version": "1"}}),
                )
                .await;
            assert!(init["result"]["serverInfo"].is_object(), "{init}");
            s.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
            sellers.push((s, handles));
        }
        let cell = json!({"category": "vehicles", "cell": {"area": "SK-BL", "budgetBand": "10000-20000", "buyByBand": "none"}});
        let not_open = "hdl_not_one_of_this_sellers_handles";
        let (mut delivered, mut refused) = (Times::default(), Times::default());
        let mut readyz = std::collections::BTreeSet::new();
        for (i, under) in order.iter().enumerate() {
            let price = if *under { 9000.0 } else { 15000.0 };
            let (s, handles) = &mut sellers[i % SELLERS];
            let reply_to = &handles[i / SELLERS / 3];
            let (out, answer) = s.call("intent_submit_offer", reply(reply_to, "Škoda Octavia Combi", price)).await;
            assert_eq!(out["accepted"], true, "{out}");
            let (_, next_read) = s.call("intent_demand_summary", cell.clone()).await;
            let (out, next_write) = s.call("intent_submit_offer", reply(not_open, "Škoda Octavia Combi", 9000.0)).await;
            assert_eq!(out["accepted"], false, "{out}");
            let r = http
                .get(format!("http://127.0.0.1:{}/readyz", isto.port))
                .header("host", "holder.example")
                .send()
                .await
                .unwrap();
            readyz.insert(format!("{} {}", r.status().as_u16(), r.text().await.unwrap()));
            let t = if *under { &mut delivered } else { &mut refused };
            t.answer.push(answer);
            t.next_read.push(next_read);
            t.next_write.push(next_write);
            // Part of what is measured, not a synchronisation: the pause a seller's agent
            // makes between replies (random, 10–25 ms), the cadence the attacker has.
            tokio::time::sleep(Duration::from_millis(rng.random_range(10..25))).await;
        }
        (delivered, refused, readyz)
    });
    // The replies under the limit were delivered, the others not (the matching ran).
    let deadline = Instant::now() + Duration::from_secs(20);
    let delivered_count = loop {
        let n = metric(metrics_port, "isto_deliveries_total").unwrap_or(0.0) as usize;
        if n >= TRIALS / 2 || Instant::now() > deadline {
            break n;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    isto.stop();
    let report = [
        ("answer", auc(&delivered.answer, &refused.answer)),
        ("next read (intent_demand_summary)", auc(&delivered.next_read, &refused.next_read)),
        ("next write (intent_submit_offer, not open)", auc(&delivered.next_write, &refused.next_write)),
    ];
    let median = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2] * 1000.0
    };
    eprintln!(
        "delivery bit, {TRIALS} replies (seed {seed}), {:.1} s in all ({t_ready:.1} s to prepare): AUC {:?}; median ms delivered/refused: \
         answer {:.2}/{:.2}, next read {:.2}/{:.2}, next write {:.2}/{:.2}; deliveries {delivered_count}",
        t_start.elapsed().as_secs_f64(),
        report,
        median(&delivered.answer),
        median(&refused.answer),
        median(&delivered.next_read),
        median(&refused.next_read),
        median(&delivered.next_write),
        median(&refused.next_write),
    );
    assert_eq!(delivered_count, TRIALS / 2, "the replies under the hidden limit, and only they, were delivered");
    for (what, a) in report {
        assert!((1.0 - AUC_MAX..=AUC_MAX).contains(&a), "{what}: AUC {a:.3} tells delivered replies apart");
    }
    let readyz: Vec<String> = readyz.into_iter().collect();
    assert_eq!(readyz, vec![r#"200 {"status":"ready"}"#.to_owned()], "the public /readyz says ready and nothing else");
}
