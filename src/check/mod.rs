//! `isto check URL`: the MCP binding's automated check of any holder (seed §6: the
//! registry lists each server with the result of an automated check).
//!
//! A client that exercises a holder's `/mcp` against the seed (the MCP binding),
//! PROTOCOL.md and the MCP specification, in one or both MCP revisions, and reports
//! named [`Check`]s, each with its reference and a status ([`Report`]). It creates only
//! drafts and withdraws every draft it made; it never opens a consent page or fills a
//! form (seed §5.2: an agent must not). Every request is bounded in time
//! ([`REQUEST_TIMEOUT`]) and size ([`MAX_BODY_BYTES`]). `http` URLs are for loopback and
//! testing; a public holder is checked over `https`.
//!
//! Its own module tree with its own entry point ([`command`]): `isto serve` never runs
//! any of it. The parts: `runner` (one run's state, the small checks), `revision` (the
//! checks of one MCP revision's session), `drafts` (the draft checks' helpers and the
//! cleanup), `transport` (Origin, `Accept`, OAuth metadata, the rate limit), `rpc` (the
//! JSON-RPC client of both revisions), `scan` (the pure parts) and [`refs`].

mod drafts;
pub mod refs;
mod revision;
mod rpc;
mod runner;
mod scan;
mod transport;

use crate::cli::out::{print, print_json_or, print_line, stdout_closed};
use crate::outbound::Probe;
use crate::protocol::tools::ToolId;
pub use rpc::Revision;
use rpc::Session;
use runner::Run;
use serde::Serialize;
use serde_json::Value;
use std::process::ExitCode;
use std::time::Duration;
use url::Url;

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

/// The tool the drafts are made with.
const PUBLISH: &str = ToolId::PublishIntent.name();

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
    /// The name, as serialized (by declaration order).
    fn as_str(self) -> &'static str {
        ["pass", "fail", "skip", "info"][self as usize]
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

/// The check's report (`isto check --json` prints it): `{"ok", "complete", "holder",
/// "revisions", "checks": [{"id", "revision", "ref", "status", "detail"}]}`.
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
    /// The exit status: 0 when `ok` and `complete`, 1 when a check failed, 2 when
    /// incomplete.
    pub fn exit_code(&self) -> u8 {
        self.verdict().0
    }

    /// The exit status and the table's last word: 1 `FAILED`, 2 `INCOMPLETE`, 0 `OK`.
    fn verdict(&self) -> (u8, &'static str) {
        if !self.ok {
            (1, "FAILED")
        } else if !self.complete {
            (2, "INCOMPLETE")
        } else {
            (0, "OK")
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
            self.verdict().1,
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
    runner::scheme_check(&mut run);
    let meta = runner::holder_metadata(&run).await;
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
        let opened = runner::opened_detail(&s);
        let ok = match rev {
            Revision::V2025 => s.opened.get("protocolVersion").and_then(Value::as_str) == Some(rev.as_str()),
            Revision::V2026 => s
                .opened
                .get("supportedVersions")
                .and_then(Value::as_array)
                .is_some_and(|v| v.iter().any(|x| x.as_str() == Some(rev.as_str()))),
        };
        run.judge(id, Some(rev), open_ref, ok, opened);
        revision::revision_checks(&mut run, &mut s, meta.as_ref()).await;
        drafts::cleanup(&mut run, &mut s).await;
        if let Some(prev) = last.replace(s) {
            prev.close().await;
        }
    }
    transport::oauth_checks(&mut run, meta.as_ref()).await;
    if let Some(mut s) = last {
        transport::rate_check(&mut run, &mut s).await;
        s.close().await;
    }
    let ok = run.checks.iter().all(|c| c.status != Status::Fail);
    Ok(Report {
        ok,
        complete: !run.incomplete,
        holder: runner::shown(&url),
        revisions: revs.iter().map(|r| r.as_str()).collect(),
        checks: run.checks,
    })
}

/// `isto check URL [--revision R] [--json]`: the entry point of the command (the caller
/// has started logging). Runs the check on its own single-threaded runtime and prints the
/// report — the table, or with `json` the [`Report`] as one JSON line (when the check
/// could not run: `{"ok": false, "holder", "error"}`) — and answers the exit status
/// ([`Report::exit_code`]; 2 when it could not run).
///
/// # Errors
/// A `revision` other than `2025-11-25`, `2026-07-28` or `both` (naming the option), or
/// a runtime that could not start.
pub fn command(url: &str, revision: &str, json: bool) -> anyhow::Result<ExitCode> {
    use anyhow::Context as _;
    let revs = match revision {
        "2025-11-25" => vec![Revision::V2025],
        "2026-07-28" => vec![Revision::V2026],
        "both" => vec![Revision::V2025, Revision::V2026],
        _ => anyhow::bail!("--revision must be 2025-11-25, 2026-07-28 or both"),
    };
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().context("starting tokio")?;
    match rt.block_on(run(url, &revs)) {
        Ok(report) => {
            print_json_or(json, &report, || print(report.table().as_bytes()))?;
            Ok(ExitCode::from(report.exit_code()))
        }
        Err(e) => {
            if json {
                print_line(serde_json::json!({"ok": false, "holder": url, "error": e.to_string()}))?;
            }
            // Without --json, or with its report undeliverable, the error goes to stderr.
            if !json || stdout_closed() {
                eprintln!("error: the check could not run: {e}");
            }
            Ok(ExitCode::from(2))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Status;

    #[test]
    fn status_names_are_the_serialized_ones() {
        for s in [Status::Pass, Status::Fail, Status::Skip, Status::Info] {
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        }
    }
}
