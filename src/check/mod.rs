//! `isto check URL`: the MCP binding's automated check of any holder (seed §6: the
//! registry lists each server with the result of an automated check).
//!
//! A client that exercises a holder's `/mcp` against the seed (the MCP binding),
//! PROTOCOL.md and the MCP specification, in one or both MCP revisions, and reports
//! named [`Check`]s, each with its reference and a status. It creates only drafts and
//! withdraws every draft it made; it never opens a consent page or fills a form (seed
//! §5.2: an agent must not). Every request is bounded in time ([`REQUEST_TIMEOUT`]) and
//! size ([`MAX_BODY_BYTES`]). `http` URLs are for loopback and testing; a public holder
//! is checked over `https`.
//!
//! The JSON report ([`Report`]): `{"ok", "complete", "holder", "revisions", "checks": [{"id",
//! "revision", "ref", "status": "pass|fail|skip|info", "detail"}]}`; `ok` is true when
//! no check failed (skip and info do not fail); `complete` is false when the holder's
//! quota or pace stopped the draft checks. The exit status: 0 when `ok` and
//! `complete`, 1 when a check failed, 2 when the check could not run at all
//! ([`CheckError`]) or not completely.

pub mod refs;
mod rpc;
mod scan;

pub use rpc::Revision;
use rpc::{Pace, Session, ToolAnswer, ACCEPT_BOTH, ACCEPT_JSON};
use serde::Serialize;
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use url::Url;

use crate::outbound::Probe;

/// Longest one request may take, body included.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);
/// Longest a whole run may take: requests after it are not sent (they fail, naming the
/// limit), except the withdrawal of the run's drafts, which has [`CLEANUP_GRACE`] more.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(300);
/// The time the run's drafts may still be withdrawn in after [`RUN_TIMEOUT`].
const CLEANUP_GRACE: Duration = Duration::from_secs(60);
/// Largest body read of one answer, bytes.
pub const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;
/// The hidden limit the check's drafts carry: distinctive, so any answer that shows it
/// is caught ([`scan::hidden_limit_in`]).
pub const HIDDEN_LIMIT: u64 = 13_579;
/// Drafts published to estimate the intentCode's entropy.
const DRAFTS: usize = 4;
/// The rate-limit probe: at most this many requests ...
const RATE_REQUESTS: usize = 200;
/// ... within this time.
const RATE_WINDOW: Duration = Duration::from_secs(10);

/// The four tools of the consent-link profile on `/mcp` (seed §5.4, PROTOCOL.md §3).
const REQUIRED_TOOLS: [&str; 4] =
    ["intent_publish_intent", "intent_get_intent", "intent_list_matches", "intent_withdraw_intent"];

/// A check's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// The holder does what the reference asks.
    Pass,
    /// It does not; the exit status is 1.
    Fail,
    /// Not checked (the reason in the detail): the holder lacks what the check needs.
    Skip,
    /// Reported, not judged (an optional behaviour not seen).
    Info,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Fail => "fail",
            Status::Skip => "skip",
            Status::Info => "info",
        }
    }
}

/// One named check.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// The check's name (`publish.intent_code`, ...).
    pub id: &'static str,
    /// The MCP revision it ran in, or `null` for a check of the holder as a whole.
    pub revision: Option<&'static str>,
    /// What it checks against: a seed section, a PROTOCOL.md §, an MCP spec page or RFC.
    #[serde(rename = "ref")]
    pub reference: &'static str,
    /// The outcome.
    pub status: Status,
    /// What was seen (never a code, token or hidden limit of the holder's answers).
    pub detail: String,
}

/// The check's report (`isto check --json` prints it).
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// No check failed.
    pub ok: bool,
    /// Every required check ran: false when the holder's quota or pace stopped the
    /// draft checks of a revision (they are `skip`, with the holder's words). An
    /// incomplete report exits with 2: run the check again later.
    pub complete: bool,
    /// The URL checked.
    pub holder: String,
    /// The MCP revisions checked.
    pub revisions: Vec<&'static str>,
    /// Every check, in the order run.
    pub checks: Vec<Check>,
}

impl Report {
    /// The exit status: 0 when every check passed (or was skipped or informational),
    /// else 1.
    pub fn exit_code(&self) -> u8 {
        if !self.ok {
            1
        } else if !self.complete {
            2
        } else {
            0
        }
    }

    /// The table `isto check` prints: status, revision, id, reference, detail.
    pub fn table(&self) -> String {
        let mut out = format!("isto check {}\n", self.holder);
        let w = self.checks.iter().map(|c| c.id.len()).max().unwrap_or(10);
        for c in &self.checks {
            out.push_str(&format!(
                "{:<4}  {:<10}  {:<w$}  {}  — {}\n",
                c.status.as_str(),
                c.revision.unwrap_or("-"),
                c.id,
                c.detail,
                c.reference,
            ));
        }
        let count = |s: Status| self.checks.iter().filter(|c| c.status == s).count();
        out.push_str(&format!(
            "{}: {} passed, {} failed, {} skipped, {} informational\n",
            if !self.ok {
                "FAILED"
            } else if !self.complete {
                "INCOMPLETE"
            } else {
                "OK"
            },
            count(Status::Pass),
            count(Status::Fail),
            count(Status::Skip),
            count(Status::Info)
        ));
        out
    }
}

/// Why the check could not run (exit status 2).
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The URL is not an absolute `http` or `https` URL.
    #[error("URL: {0}")]
    Url(String),
    /// Nothing answered as an MCP server (unreachable, or not MCP).
    #[error("{0}")]
    NotMcp(String),
}

/// Which revisions to check (`--revision`).
pub fn revisions(arg: &str) -> Option<Vec<Revision>> {
    match arg {
        "2025-11-25" => Some(vec![Revision::V2025]),
        "2026-07-28" => Some(vec![Revision::V2026]),
        "both" => Some(vec![Revision::V2025, Revision::V2026]),
        _ => None,
    }
}

/// Collects the checks of one run.
struct Run {
    probe: Probe,
    /// The probe with the cleanup's later deadline.
    grace: Probe,
    /// The holder's quota or pace stopped a revision's draft checks.
    incomplete: bool,
    url: Url,
    checks: Vec<Check>,
    /// Codes of the drafts made, withdrawn at the end.
    drafts: Vec<String>,
    /// Every tool answer's raw body (searched for secrets), with the tool's name.
    answers: Vec<(String, ToolAnswer)>,
}

impl Run {
    fn add(
        &mut self,
        id: &'static str,
        rev: Option<Revision>,
        reference: &'static str,
        status: Status,
        detail: impl Into<String>,
    ) {
        let detail = scan::printable(&detail.into());
        self.checks.push(Check { id, revision: rev.map(Revision::as_str), reference, status, detail });
    }

    fn judge(
        &mut self,
        id: &'static str,
        rev: Option<Revision>,
        reference: &'static str,
        ok: bool,
        detail: impl Into<String>,
    ) {
        self.add(id, rev, reference, if ok { Status::Pass } else { Status::Fail }, detail);
    }

    async fn call(&mut self, s: &mut Session, name: &str, args: Value) -> Result<ToolAnswer, String> {
        let a = s.call(name, args).await?;
        self.answers.push((name.to_owned(), a.clone()));
        Ok(a)
    }
}

/// Runs the check of the holder at `url` (its `/mcp` endpoint) in `revs`.
///
/// # Errors
/// [`CheckError`] when the URL is not http(s) or nothing answers as MCP there.
pub async fn run(url: &str, revs: &[Revision]) -> Result<Report, CheckError> {
    let url = Url::parse(url).map_err(|e| CheckError::Url(format!("{url} is not a URL ({e})")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(CheckError::Url(format!("{url} is not an http(s) URL with a host")));
    }
    let probe = Probe::new(REQUEST_TIMEOUT, MAX_BODY_BYTES).map_err(|e| CheckError::NotMcp(e.to_string()))?;
    let start = tokio::time::Instant::now();
    let grace = probe.clone().with_deadline(start + RUN_TIMEOUT + CLEANUP_GRACE);
    let probe = probe.with_deadline(start + RUN_TIMEOUT);
    let mut run = Run {
        probe,
        grace,
        incomplete: false,
        url: url.clone(),
        checks: Vec::new(),
        drafts: Vec::new(),
        answers: Vec::new(),
    };
    scheme_check(&mut run);
    let meta = holder_metadata(&run).await;
    let mut any_session = false;
    let mut last: Option<Session> = None;
    for (i, &rev) in revs.iter().enumerate() {
        let open_ref = if rev == Revision::V2025 { refs::OPEN_2025 } else { refs::OPEN_2026 };
        let id = if rev == Revision::V2025 { "transport.initialize" } else { "transport.server_discover" };
        let mut s = match Session::open(&run.probe, &url, rev).await {
            Ok(s) => s,
            Err(e) if i == 0 && revs.len() == 1 || (i == revs.len() - 1 && !any_session) => {
                return Err(CheckError::NotMcp(format!("{url} could not be checked as an MCP server: {e}")))
            }
            Err(e) => {
                run.add(id, Some(rev), open_ref, Status::Fail, e);
                continue;
            }
        };
        any_session = true;
        let opened = opened_detail(&s);
        let ok = match rev {
            Revision::V2025 => s.opened.get("protocolVersion").and_then(Value::as_str) == Some(rev.as_str()),
            Revision::V2026 => s
                .opened
                .get("supportedVersions")
                .and_then(Value::as_array)
                .is_some_and(|v| v.iter().any(|x| x.as_str() == Some(rev.as_str()))),
        };
        run.judge(id, Some(rev), open_ref, ok, opened);
        revision_checks(&mut run, &mut s, meta.as_ref()).await;
        cleanup(&mut run, &mut s).await;
        if let Some(prev) = last.replace(s) {
            prev.close().await;
        }
    }
    oauth_checks(&mut run, meta.as_ref()).await;
    if let Some(mut s) = last {
        rate_check(&mut run, &mut s).await;
        s.close().await;
    }
    let ok = run.checks.iter().all(|c| c.status != Status::Fail);
    Ok(Report {
        ok,
        complete: !run.incomplete,
        holder: shown(&url),
        revisions: revs.iter().map(|r| r.as_str()).collect(),
        checks: run.checks,
    })
}

/// The URL as the report shows it: without user name and password.
fn shown(url: &Url) -> String {
    let mut u = url.clone();
    let _ = u.set_username("");
    let _ = u.set_password(None);
    u.to_string()
}

/// `transport.https`: plain `http` only to a loopback host (testing); a holder anyone
/// reaches is checked over `https`.
fn scheme_check(run: &mut Run) {
    let (ok, detail) = match run.url.scheme() {
        "https" => (true, "https".to_owned()),
        _ if scan::is_loopback_host(&run.url) => (true, "plain http on a loopback host (for testing)".to_owned()),
        _ => (
            false,
            format!("plain http to {}: a public holder is served over https", run.url.host_str().unwrap_or("?")),
        ),
    };
    run.judge("transport.https", None, refs::HTTPS, ok, detail);
}

fn opened_detail(s: &Session) -> String {
    let info = s
        .opened
        .get("serverInfo")
        .or_else(|| s.opened.pointer("/_meta/io.modelcontextprotocol~1serverInfo"))
        .map(|i| format!("{} {}", i["name"].as_str().unwrap_or("?"), i["version"].as_str().unwrap_or("")))
        .unwrap_or_else(|| "no serverInfo".into());
    match s.revision {
        Revision::V2025 => format!(
            "protocolVersion {}, server {info}, answered as {}",
            s.opened.get("protocolVersion").and_then(Value::as_str).unwrap_or("?"),
            s.opened_content_type
        ),
        Revision::V2026 => format!(
            "supportedVersions {}, server {info}, answered as {}",
            s.opened.get("supportedVersions").map(Value::to_string).unwrap_or_else(|| "missing".into()),
            s.opened_content_type
        ),
    }
}

/// `GET /.well-known/isto-intents` on the holder's origin (PROTOCOL.md §8), if it
/// answers JSON.
async fn holder_metadata(run: &Run) -> Option<Value> {
    let u = run.url.join("/.well-known/isto-intents").ok()?;
    get_json(&run.probe, &u).await.ok().map(|(_, v)| v)
}

async fn get_json(probe: &Probe, url: &Url) -> Result<(u16, Value), String> {
    let what = format!("GET {url}");
    let out = rpc::Outgoing { method: "GET", url, headers: &[("accept", "application/json")], body: None };
    let r = rpc::send_paced(probe, &what, out, &|_| false, Pace::Patient).await?;
    if r.status != 200 {
        return Err(format!("GET {url}: HTTP {}", r.status));
    }
    serde_json::from_slice(&r.body).map(|v| (r.status, v)).map_err(|_| format!("GET {url}: not JSON"))
}

/// The checks that run in each revision's session.
async fn revision_checks(run: &mut Run, s: &mut Session, meta: Option<&Value>) {
    let rev = Some(s.revision);
    transport_checks(run, s.revision).await;
    let tools = match s.list_tools().await {
        Ok(t) => t,
        Err(e) => {
            run.add("tools.present", rev, refs::TOOLS, Status::Fail, e);
            return;
        }
    };
    // Tools present, with input schemas.
    let tool = |n: &str| tools.iter().find(|t| t["name"].as_str() == Some(n)).cloned();
    let missing: Vec<&str> = REQUIRED_TOOLS.iter().copied().filter(|n| tool(n).is_none()).collect();
    let no_schema: Vec<String> = tools
        .iter()
        .filter(|t| t.pointer("/inputSchema/type").and_then(Value::as_str) != Some("object"))
        .map(|t| t["name"].as_str().unwrap_or("?").to_owned())
        .collect();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    run.judge(
        "tools.present",
        rev,
        refs::TOOLS,
        missing.is_empty() && no_schema.is_empty() && !tools.is_empty(),
        if missing.is_empty() && no_schema.is_empty() {
            format!("{} tools with object input schemas: {}", tools.len(), names.join(", "))
        } else {
            format!("missing: [{}]; without an object inputSchema: [{}]", missing.join(", "), no_schema.join(", "))
        },
    );
    // The disclaimer in every description.
    let lacking: Vec<String> = tools
        .iter()
        .filter(|t| !scan::has_disclaimer(t["description"].as_str().unwrap_or("")))
        .map(|t| t["name"].as_str().unwrap_or("?").to_owned())
        .collect();
    run.judge(
        "tools.disclaimer",
        rev,
        refs::DISCLAIMER,
        lacking.is_empty() && !tools.is_empty(),
        if lacking.is_empty() {
            format!("all {} descriptions say results come from a market aggregator and may be incomplete", tools.len())
        } else {
            format!("no aggregator/incomplete disclaimer in: {}", lacking.join(", "))
        },
    );
    let Some(publish) = tool("intent_publish_intent") else {
        run.add("publish.no_contact_field", rev, refs::CONTACT, Status::Skip, "no intent_publish_intent");
        return;
    };
    let schema = publish.get("inputSchema").cloned().unwrap_or(Value::Null);
    let contact = scan::contact_properties(&schema);
    run.judge(
        "publish.no_contact_field",
        rev,
        refs::CONTACT,
        contact.is_empty(),
        if contact.is_empty() {
            "no contact property at any depth of the input schema".to_owned()
        } else {
            format!("contact properties in the input schema: {}", contact.join(", "))
        },
    );
    // The drafts: the demand cell before and after, the codes.
    let demand_tool = tool("intent_demand_summary").is_some();
    let plan = scan::DraftPlan::from_metadata(meta);
    let before = if demand_tool { demand(run, s, &plan).await } else { None };
    let mut codes = Vec::new();
    let mut consent_urls = Vec::new();
    let mut publish_fail = None;
    for i in 0..DRAFTS {
        match run.call(s, "intent_publish_intent", plan.draft(i)).await {
            Ok(a) if !a.refused() => {
                let sc = a.structured.clone().or_else(|| serde_json::from_str(&a.text).ok()).unwrap_or(Value::Null);
                if let Some(c) = sc.get("intentCode").and_then(Value::as_str) {
                    codes.push(c.to_owned());
                    run.drafts.push(c.to_owned());
                }
                if let Some(u) = sc.get("consentUrl").and_then(Value::as_str) {
                    consent_urls.push(u.to_owned());
                }
            }
            Ok(a) => {
                let text = a.error_text();
                if scan::is_quota_refusal(&text) {
                    let why = format!(
                        "not run: the holder refused a draft for its quota or pace (\"{}\"); run the check again later",
                        scan::clip(&text, 400)
                    );
                    skip_draft_checks(run, s.revision, &why);
                    run.incomplete = true;
                    return;
                }
                publish_fail = Some(format!("publish refused: {}", scan::clip(&text, 400)));
                break;
            }
            Err(e) => {
                publish_fail = Some(e);
                break;
            }
        }
    }
    if let Some(e) = publish_fail.or_else(|| (codes.len() < DRAFTS).then(|| "publish returned no intentCode".into())) {
        run.add("publish.intent_code", rev, refs::CODE, Status::Fail, e);
        skip_draft_checks(run, s.revision, "not run: no draft to check with (publish.intent_code failed)");
        return;
    }
    // Unknown properties refused (schema and call).
    let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
    let mut probe_args = plan.draft(0);
    probe_args["isto_check_unknown_property"] = json!(1);
    let unknown = run.call(s, "intent_publish_intent", probe_args).await;
    let refused = match &unknown {
        Ok(a) if !a.refused() => {
            if let Some(c) = a.structured.as_ref().and_then(|v| v["intentCode"].as_str()) {
                run.drafts.push(c.to_owned());
            }
            false
        }
        Ok(_) => true,
        Err(_) => false,
    };
    run.judge(
        "publish.unknown_refused",
        rev,
        refs::UNKNOWN,
        closed && refused,
        format!(
            "schema additionalProperties {}; a call with an unknown property {}",
            if closed { "false" } else { "not false" },
            if refused { "was refused" } else { "was accepted" }
        ),
    );
    // The codes' entropy.
    let est = scan::entropy(&codes);
    run.judge(
        "publish.intent_code",
        rev,
        refs::CODE,
        est.bits >= 128.0 && est.distinct,
        format!(
            "{} codes, {}distinct, {} random characters of a {}-symbol alphabet ({}): ~{:.0} bits (≥ 128 required)",
            codes.len(),
            if est.distinct { "" } else { "NOT " },
            est.length,
            est.alphabet,
            est.alphabet_name,
            est.bits
        ),
    );
    // The consent URL: the holder's own host, no code in it.
    let host = run.url.host_str().unwrap_or("").to_ascii_lowercase();
    let bad_urls: Vec<String> = consent_urls
        .iter()
        .zip(&codes)
        .filter_map(|(u, c)| scan::consent_url_problem(u, c, &host, run.url.scheme()))
        .collect();
    run.judge(
        "publish.consent_url",
        rev,
        refs::CONSENT_URL,
        bad_urls.is_empty() && consent_urls.len() == codes.len(),
        if consent_urls.len() != codes.len() {
            format!("{} of {} results carry a consentUrl", consent_urls.len(), codes.len())
        } else if bad_urls.is_empty() {
            format!("every consentUrl is on {host} and does not contain the code")
        } else {
            bad_urls.join("; ")
        },
    );
    let code = codes[0].clone();
    // get / list_matches by code.
    let got = run.call(s, "intent_get_intent", json!({"intentCode": code})).await;
    let status = got.as_ref().ok().and_then(scan::intent_status);
    run.judge(
        "get.by_code",
        rev,
        refs::BY_CODE,
        status.as_deref() == Some("awaiting_consent"),
        match (&got, &status) {
            (Ok(_), Some(st)) => format!("intent_get_intent by code: status {st}"),
            (Ok(a), None) => format!("no intent in the answer: {}", scan::short(&a.error_text())),
            (Err(e), _) => e.clone(),
        },
    );
    let listed = run.call(s, "intent_list_matches", json!({"intentCode": code})).await;
    run.judge(
        "list_matches.by_code",
        rev,
        refs::BY_CODE,
        listed.as_ref().is_ok_and(|a| !a.refused()),
        match &listed {
            Ok(a) if !a.refused() => "intent_list_matches by code answered".to_owned(),
            Ok(a) => format!("refused: {}", scan::short(&a.error_text())),
            Err(e) => e.clone(),
        },
    );
    // A wrong code answers like an unknown one, and changes nothing.
    let wrong = scan::mutate(&code);
    let unknown_code = scan::unknown_like(&code);
    let mut same = Vec::new();
    let mut differ = Vec::new();
    for tool_name in ["intent_get_intent", "intent_list_matches", "intent_withdraw_intent"] {
        let a = run.call(s, tool_name, json!({"intentCode": wrong})).await;
        let b = run.call(s, tool_name, json!({"intentCode": unknown_code})).await;
        match (a, b) {
            (Ok(a), Ok(b)) if a.refused() && b.refused() && a.signature() == b.signature() => same.push(tool_name),
            (Ok(a), Ok(b)) if !a.refused() || !b.refused() => {
                differ.push(format!("{tool_name} accepted a wrong or unknown code"))
            }
            (Ok(_), Ok(_)) => differ.push(format!("{tool_name} answers a wrong code unlike an unknown one")),
            (Err(e), _) | (_, Err(e)) => differ.push(format!("{tool_name}: {e}")),
        }
    }
    let after = run.call(s, "intent_get_intent", json!({"intentCode": code})).await;
    let still = after.as_ref().ok().and_then(scan::intent_status);
    if still.as_deref() != Some("awaiting_consent") {
        differ.push(format!(
            "after a withdraw with a wrong code the draft's status is {}",
            still.unwrap_or_else(|| "unreadable".into())
        ));
    }
    run.judge(
        "codes.wrong_like_unknown",
        rev,
        refs::WRONG_CODE,
        differ.is_empty(),
        if differ.is_empty() {
            format!("a wrong code and an unknown one get the same refusal from {}", same.join(", "))
        } else {
            differ.join("; ")
        },
    );
    // Withdraw takes effect at once.
    let w = run.call(s, "intent_withdraw_intent", json!({"intentCode": code})).await;
    let w_ok = w.as_ref().is_ok_and(|a| {
        !a.refused() && a.structured.as_ref().map_or(a.text.contains("withdrawn"), |v| v["status"] == "withdrawn")
    });
    let g = run.call(s, "intent_get_intent", json!({"intentCode": code})).await;
    let g_status = g.as_ref().ok().and_then(scan::intent_status);
    run.judge(
        "withdraw.immediate",
        rev,
        refs::WITHDRAW,
        w_ok && g_status.as_deref() == Some("withdrawn"),
        format!(
            "withdraw {}; get right after says {}",
            if w_ok { "answered {\"status\":\"withdrawn\"}" } else { "did not answer withdrawn" },
            g_status.unwrap_or_else(|| "no status".into())
        ),
    );
    // Bad input names the field.
    bad_input(run, s, &plan).await;
    // Demand: drafts not counted, below k withheld.
    if demand_tool {
        let after = demand(run, s, &plan).await;
        demand_checks(run, s.revision, &plan, before, after);
    } else {
        run.add(
            "demand.draft_not_counted",
            rev,
            refs::DEMAND_DRAFT,
            Status::Skip,
            "the endpoint has no intent_demand_summary tool",
        );
        run.add(
            "demand.below_k_withheld",
            rev,
            refs::DEMAND_K,
            Status::Skip,
            "the endpoint has no intent_demand_summary tool",
        );
    }
    // No secrets in any answer of this revision.
    secrets_check(run, s.revision, &consent_urls);
}

/// The checks that need the run's drafts, as `skip` with `why` (those not yet in the
/// report).
fn skip_draft_checks(run: &mut Run, rev: Revision, why: &str) {
    let all: [(&'static str, &'static str); 11] = [
        ("publish.intent_code", refs::CODE),
        ("publish.unknown_refused", refs::UNKNOWN),
        ("publish.consent_url", refs::CONSENT_URL),
        ("get.by_code", refs::BY_CODE),
        ("list_matches.by_code", refs::BY_CODE),
        ("codes.wrong_like_unknown", refs::WRONG_CODE),
        ("withdraw.immediate", refs::WITHDRAW),
        ("input.error_names_field", refs::BAD_INPUT),
        ("demand.draft_not_counted", refs::DEMAND_DRAFT),
        ("demand.below_k_withheld", refs::DEMAND_K),
        ("results.no_secrets", refs::SECRETS),
    ];
    for (id, reference) in all {
        let done = run.checks.iter().any(|c| c.id == id && c.revision == Some(rev.as_str()));
        if !done {
            run.add(id, Some(rev), reference, Status::Skip, why);
        }
    }
    run.answers.clear();
}

async fn demand(run: &mut Run, s: &mut Session, plan: &scan::DraftPlan) -> Option<Result<Value, String>> {
    let args = plan.cell.clone()?;
    Some(match run.call(s, "intent_demand_summary", args).await {
        Ok(a) if !a.refused() => Ok(a.structured.or_else(|| serde_json::from_str(&a.text).ok()).unwrap_or(Value::Null)),
        Ok(a) => Err(format!("refused: {}", scan::short(&a.error_text()))),
        Err(e) => Err(e),
    })
}

fn demand_checks(
    run: &mut Run,
    rev: Revision,
    plan: &scan::DraftPlan,
    before: Option<Result<Value, String>>,
    after: Option<Result<Value, String>>,
) {
    let rev = Some(rev);
    let (Some(before), Some(after)) = (before, after) else {
        let why = "no band grid in /.well-known/isto-intents to choose the drafts' cell from";
        run.add("demand.draft_not_counted", rev, refs::DEMAND_DRAFT, Status::Skip, why);
        run.add("demand.below_k_withheld", rev, refs::DEMAND_K, Status::Skip, why);
        return;
    };
    match (&before, &after) {
        (Ok(b), Ok(a)) => {
            let key = |v: &Value| {
                json!({"withheld": v.get("withheld"), "activeIntents": v.get("activeIntents"),
                       "newLast7Days": v.get("newLast7Days"), "pseudonymous": v.get("pseudonymous")})
            };
            run.judge(
                "demand.draft_not_counted",
                rev,
                refs::DEMAND_DRAFT,
                key(b) == key(a),
                format!(
                    "cell {}: before the drafts {}, after {}",
                    plan.cell_label,
                    scan::summary_label(b),
                    scan::summary_label(a)
                ),
            );
            let k = plan.k.unwrap_or(1);
            let fine = |v: &Value| {
                v.get("withheld") == Some(&Value::Bool(true))
                    || v.get("activeIntents").and_then(Value::as_u64).is_some_and(|n| n >= k)
            };
            run.judge(
                "demand.below_k_withheld",
                rev,
                refs::DEMAND_K,
                fine(b) && fine(a),
                format!("k = {k}; the cell is {} (a count below k would fail)", scan::summary_label(a)),
            );
        }
        (Err(e), _) | (_, Err(e)) => {
            run.add("demand.draft_not_counted", rev, refs::DEMAND_DRAFT, Status::Fail, e.clone());
            run.add("demand.below_k_withheld", rev, refs::DEMAND_K, Status::Fail, e.clone());
        }
    }
}

async fn bad_input(run: &mut Run, s: &mut Session, plan: &scan::DraftPlan) {
    let mut negative = plan.draft(0);
    negative["budget"] = json!({"max": -5});
    let mut no_statement = plan.draft(0);
    if let Some(o) = no_statement.as_object_mut() {
        o.remove("statement");
    }
    let mut problems = Vec::new();
    let mut seen = Vec::new();
    for (field, args) in [("budget", negative), ("statement", no_statement)] {
        match run.call(s, "intent_publish_intent", args).await {
            Ok(a) if a.refused() => {
                let t = a.error_text();
                if t.to_lowercase().contains(field) {
                    seen.push(format!("{field}: \"{}\"", scan::short(&t)));
                } else {
                    problems.push(format!("the error for a bad {field} does not name it: \"{}\"", scan::short(&t)));
                }
            }
            Ok(a) => {
                if let Some(c) = a.structured.as_ref().and_then(|v| v["intentCode"].as_str()) {
                    run.drafts.push(c.to_owned());
                }
                problems.push(format!("a publish with a bad {field} was accepted"));
            }
            Err(e) => problems.push(e),
        }
    }
    run.judge(
        "input.error_names_field",
        Some(s.revision),
        refs::BAD_INPUT,
        problems.is_empty(),
        if problems.is_empty() { seen.join("; ") } else { problems.join("; ") },
    );
}

fn secrets_check(run: &mut Run, rev: Revision, consent_urls: &[String]) {
    let tokens: Vec<String> = consent_urls.iter().filter_map(|u| scan::consent_token(u)).collect();
    let mut found = Vec::new();
    for (tool, a) in &run.answers {
        if let Some(form) = scan::hidden_limit_in(&a.raw, HIDDEN_LIMIT) {
            found.push(format!("{tool} shows the hidden limit ({form})"));
        }
        let keys = a.structured.as_ref().map(scan::secret_keys).unwrap_or_default();
        if !keys.is_empty() {
            found.push(format!("{tool} returns {}", keys.join(", ")));
        }
        if tool != "intent_publish_intent" && tokens.iter().any(|t| a.raw.contains(t.as_str())) {
            found.push(format!("{tool} returns a consent token"));
        }
    }
    found.dedup();
    let n = run.answers.len();
    run.judge(
        "results.no_secrets",
        Some(rev),
        refs::SECRETS,
        found.is_empty(),
        if found.is_empty() {
            format!("{n} answers: no hidden limit ({HIDDEN_LIMIT} in any form), contact, token or pseudonym")
        } else {
            found.join("; ")
        },
    );
    run.answers.clear();
}

/// Withdraws every draft the run made (and forgets them), with the cleanup's later
/// deadline; drafts it could not withdraw are reported (`cleanup.drafts_withdrawn`,
/// info: they carry no contact and lapse with the holder's draft lifetime).
async fn cleanup(run: &mut Run, s: &mut Session) {
    s.set_probe(run.grace.clone());
    let drafts = std::mem::take(&mut run.drafts);
    let mut left = Vec::new();
    for code in &drafts {
        match s.call("intent_withdraw_intent", json!({"intentCode": code})).await {
            Ok(a) if !a.refused() => {}
            Ok(a) => left.push(scan::short(&a.error_text())),
            Err(e) => left.push(scan::short(&e)),
        }
    }
    if let Some(first) = left.first() {
        let detail = format!(
            "{} of {} drafts could not be withdrawn (first: {first}); they lapse with the holder's draft lifetime",
            left.len(),
            drafts.len()
        );
        run.add("cleanup.drafts_withdrawn", Some(s.revision), refs::CLEANUP, Status::Info, detail);
    }
}

/// Origin validation and the two Accept forms, with the revision's opening request.
async fn transport_checks(run: &mut Run, rev: Revision) {
    let body = rpc::opening_body(rev);
    let mut base: Vec<(&str, &str)> = Vec::new();
    if rev == Revision::V2026 {
        base.push(("mcp-protocol-version", rev.as_str()));
        base.push(("mcp-method", "server/discover"));
    }
    let mut foreign = base.clone();
    foreign.push(("accept", ACCEPT_BOTH));
    foreign.push(("origin", "https://foreign-origin.invalid"));
    match rpc::post(&run.probe, &run.url, &foreign, &body, 1, Pace::Patient).await {
        Ok(ex) => {
            if let Some(id) = ex.http.header("mcp-session-id") {
                close_session(run, rev, id).await;
            }
            run.judge(
                "transport.origin",
                Some(rev),
                refs::ORIGIN,
                ex.http.status == 403,
                format!("a request with Origin https://foreign-origin.invalid got HTTP {}", ex.http.status),
            );
        }
        Err(e) => run.add("transport.origin", Some(rev), refs::ORIGIN, Status::Fail, e),
    }
    for (id, accept) in [("transport.accept_both", ACCEPT_BOTH), ("transport.accept_json", ACCEPT_JSON)] {
        let mut h = base.clone();
        h.push(("accept", accept));
        match rpc::post(&run.probe, &run.url, &h, &body, 1, Pace::Patient).await {
            Ok(ex) => {
                if let Some(sid) = ex.http.header("mcp-session-id") {
                    close_session(run, rev, sid).await;
                }
                let ct = ex.http.header("content-type").unwrap_or("none").to_owned();
                let json_only_ok = accept == ACCEPT_BOTH || ct.starts_with("application/json");
                let ok = ex.http.status == 200
                    && ex.message.as_ref().is_some_and(|m| m.get("result").is_some())
                    && json_only_ok;
                run.judge(id, Some(rev), refs::ACCEPT, ok, format!("Accept: {accept} → HTTP {}, {ct}", ex.http.status));
            }
            Err(e) => run.add(id, Some(rev), refs::ACCEPT, Status::Fail, e),
        }
    }
}

async fn close_session(run: &Run, rev: Revision, id: &str) {
    let h = [("mcp-session-id", id), ("mcp-protocol-version", rev.as_str())];
    let _ = run.probe.send("DELETE", &run.url, &h, None, &|_| false).await;
}

/// The OAuth-protected endpoints the holder metadata names (`endpoints.buyer`,
/// `endpoints.seller`): the 401 challenge, RFC 9728 and RFC 8414 metadata.
async fn oauth_checks(run: &mut Run, meta: Option<&Value>) {
    let Some(endpoints) = meta.and_then(|m| m.get("endpoints")) else {
        run.add("oauth.challenge", None, refs::CHALLENGE, Status::Skip, "no /.well-known/isto-intents with endpoints");
        return;
    };
    let mut found = false;
    for key in ["buyer", "seller"] {
        let Some(ep) = endpoints.get(key).and_then(Value::as_str).and_then(|u| Url::parse(u).ok()) else {
            continue;
        };
        found = true;
        if !scan::same_origin(&run.url, &ep) {
            run.add(
                "oauth.challenge",
                None,
                refs::CHALLENGE,
                Status::Skip,
                format!("{ep} is not on the checked URL's origin: not fetched"),
            );
            continue;
        }
        let body = serde_json::to_vec(&rpc::opening_body(Revision::V2025)).unwrap_or_default();
        let h = [("content-type", "application/json"), ("accept", ACCEPT_BOTH)];
        let out = rpc::Outgoing { method: "POST", url: &ep, headers: &h, body: Some(body) };
        let res = match rpc::send_paced(&run.probe, ep.as_str(), out, &|_| true, Pace::Patient).await {
            Ok(r) => r,
            Err(e) => {
                run.add("oauth.challenge", None, refs::CHALLENGE, Status::Fail, e);
                continue;
            }
        };
        let challenge = res.header("www-authenticate").unwrap_or("").to_owned();
        let prm = scan::auth_param(&challenge, "resource_metadata");
        run.judge(
            "oauth.challenge",
            None,
            refs::CHALLENGE,
            res.status == 401 && challenge.to_ascii_lowercase().starts_with("bearer") && prm.is_some(),
            format!(
                "{ep} without a token: HTTP {}, WWW-Authenticate {}",
                res.status,
                if prm.is_some() { "with resource_metadata" } else { "without resource_metadata" }
            ),
        );
        // RFC 9728: the named document, else the well-known location.
        let prm_url = prm.and_then(|u| Url::parse(&u).ok()).or_else(|| scan::prm_default(&ep));
        let Some(prm_url) = prm_url else { continue };
        if !scan::same_origin(&run.url, &prm_url) {
            let detail = format!("resource_metadata {prm_url} is not on the checked URL's origin: not fetched");
            run.add("oauth.resource_metadata", None, refs::PRM, Status::Skip, detail);
            continue;
        }
        let doc = get_json(&run.probe, &prm_url).await;
        let (as_url, detail, ok) = match &doc {
            Ok((_, d)) => {
                let resource_ok = d.get("resource").and_then(Value::as_str) == Some(ep.as_str());
                let servers = d.get("authorization_servers").and_then(Value::as_array).cloned().unwrap_or_default();
                let first = servers.first().and_then(Value::as_str).map(str::to_owned);
                (
                    first.clone(),
                    format!(
                        "{prm_url}: resource {}, {} authorization server(s)",
                        if resource_ok { "is the endpoint" } else { "is NOT the endpoint" },
                        servers.len()
                    ),
                    resource_ok && first.is_some(),
                )
            }
            Err(e) => (None, e.clone(), false),
        };
        run.judge("oauth.resource_metadata", None, refs::PRM, ok, detail);
        let Some(issuer) = as_url.and_then(|u| Url::parse(&u).ok()) else { continue };
        let asm_url = scan::as_metadata_url(&issuer);
        if !scan::same_origin(&run.url, &asm_url) {
            let detail = format!("authorization server {issuer} is not on the checked URL's origin: not fetched");
            run.add("oauth.as_metadata", None, refs::ASM, Status::Skip, detail);
            continue;
        }
        match get_json(&run.probe, &asm_url).await {
            Ok((_, d)) => {
                let s256 = d
                    .get("code_challenge_methods_supported")
                    .and_then(Value::as_array)
                    .is_some_and(|m| m.iter().any(|x| x == "S256"));
                let issuer_ok = d.get("issuer").and_then(Value::as_str).map(|i| i.trim_end_matches('/'))
                    == Some(issuer.as_str().trim_end_matches('/'));
                run.judge(
                    "oauth.as_metadata",
                    None,
                    refs::ASM,
                    s256 && issuer_ok,
                    format!(
                        "{asm_url}: issuer {}, code_challenge_methods_supported {}",
                        if issuer_ok { "matches" } else { "does NOT match" },
                        if s256 { "has S256" } else { "lacks S256" }
                    ),
                );
            }
            Err(e) => run.add("oauth.as_metadata", None, refs::ASM, Status::Fail, e),
        }
    }
    if !found {
        run.add(
            "oauth.challenge",
            None,
            refs::CHALLENGE,
            Status::Skip,
            "the holder metadata names no OAuth-protected endpoint",
        );
    }
}

/// Up to [`RATE_REQUESTS`] cheap requests within [`RATE_WINDOW`]: a 429 must carry
/// `Retry-After`; no 429 at all is reported (`info`), not failed (the seed's MAY).
async fn rate_check(run: &mut Run, s: &mut Session) {
    let start = Instant::now();
    let mut sent = 0;
    while sent < RATE_REQUESTS && start.elapsed() < RATE_WINDOW {
        sent += 1;
        match s.cheap().await {
            Ok(r) if r.status == 429 => {
                let ra = r.header("retry-after").map(str::to_owned);
                let ok = ra.as_deref().is_some_and(|v| v.trim().parse::<u64>().is_ok() || v.contains("GMT"));
                run.judge(
                    "rate.limit",
                    None,
                    refs::RATE,
                    ok,
                    format!(
                        "HTTP 429 after {sent} requests in {:.1} s, Retry-After: {}",
                        start.elapsed().as_secs_f64(),
                        ra.unwrap_or_else(|| "missing".into())
                    ),
                );
                return;
            }
            Ok(_) => {}
            Err(e) => {
                run.add("rate.limit", None, refs::RATE, Status::Info, format!("stopped after {sent} requests: {e}"));
                return;
            }
        }
    }
    run.add(
        "rate.limit",
        None,
        refs::RATE,
        Status::Info,
        format!("no 429 within {sent} requests in {:.1} s (limiting is optional)", start.elapsed().as_secs_f64()),
    );
}
