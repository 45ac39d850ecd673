//! One run's state — the probes, the checks so far, the drafts to withdraw, the answers
//! to search for secrets — and the small checks and fetches every part uses.

use super::rpc::{self, Pace, Revision, Session, ToolAnswer};
use super::{refs, scan, Check, Status};
use crate::outbound::Probe;
use serde_json::Value;
use url::Url;

/// Collects the checks of one run.
pub(super) struct Run {
    pub(super) probe: Probe,
    /// The probe with the cleanup's later deadline.
    pub(super) grace: Probe,
    /// The holder's quota or pace stopped a revision's draft checks.
    pub(super) incomplete: bool,
    pub(super) url: Url,
    pub(super) checks: Vec<Check>,
    /// Codes of the drafts made, withdrawn at the end.
    pub(super) drafts: Vec<String>,
    /// Every tool answer's raw body (searched for secrets), with the tool's name.
    pub(super) answers: Vec<(String, ToolAnswer)>,
}

impl Run {
    pub(super) fn add(
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

    pub(super) fn judge(
        &mut self,
        id: &'static str,
        rev: Option<Revision>,
        reference: &'static str,
        ok: bool,
        detail: impl Into<String>,
    ) {
        self.add(id, rev, reference, if ok { Status::Pass } else { Status::Fail }, detail);
    }

    pub(super) async fn call(&mut self, s: &mut Session, name: &str, args: Value) -> Result<ToolAnswer, String> {
        let a = s.call(name, args).await?;
        self.answers.push((name.to_owned(), a.clone()));
        Ok(a)
    }
}

/// The URL as the report shows it: without user name and password.
pub(super) fn shown(url: &Url) -> String {
    let mut u = url.clone();
    let _ = u.set_username("");
    let _ = u.set_password(None);
    u.to_string()
}

/// `transport.https`: plain `http` only to a loopback host (testing); a holder anyone
/// reaches is checked over `https`.
pub(super) fn scheme_check(run: &mut Run) {
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

pub(super) fn opened_detail(s: &Session) -> String {
    let info = s
        .opened
        .get("serverInfo")
        .or_else(|| s.opened.pointer("/_meta/io.modelcontextprotocol~1serverInfo"))
        .map(|i| format!("{} {}", i["name"].as_str().unwrap_or("?"), i["version"].as_str().unwrap_or("")))
        .unwrap_or_else(|| "no serverInfo".into());
    let get = |k: &str| s.opened.get(k);
    let versions = match s.revision {
        Revision::V2025 => format!("protocolVersion {}", get("protocolVersion").and_then(Value::as_str).unwrap_or("?")),
        Revision::V2026 => {
            format!("supportedVersions {}", get("supportedVersions").map_or_else(|| "missing".into(), Value::to_string))
        }
    };
    format!("{versions}, server {info}, answered as {}", s.opened_content_type)
}

/// `GET /.well-known/isto-intents` on the holder's origin (PROTOCOL.md §8), if it
/// answers JSON.
pub(super) async fn holder_metadata(run: &Run) -> Option<Value> {
    let u = run.url.join("/.well-known/isto-intents").ok()?;
    get_json(&run.probe, &u).await.ok().map(|(_, v)| v)
}

pub(super) async fn get_json(probe: &Probe, url: &Url) -> Result<(u16, Value), String> {
    let what = format!("GET {url}");
    let out = rpc::Outgoing { method: "GET", url, headers: &[("accept", "application/json")], body: None };
    let r = rpc::send_paced(probe, &what, out, &|_| false, Pace::Patient).await?;
    if r.status != 200 {
        return Err(format!("GET {url}: HTTP {}", r.status));
    }
    serde_json::from_slice(&r.body).map(|v| (r.status, v)).map_err(|_| format!("GET {url}: not JSON"))
}
