//! The holder-wide checks: the transport (Origin validation, the two `Accept` forms —
//! MCP "Streamable HTTP"), the OAuth-protected endpoints' challenge and metadata
//! (RFC 9728, RFC 8414) and the rate limit (seed: a 429 carries `Retry-After`).

use super::rpc::{self, Pace, Revision, Session, ACCEPT_BOTH, ACCEPT_JSON};
use super::runner::{get_json, Run};
use super::{refs, scan, Status, RATE_REQUESTS, RATE_WINDOW};
use serde_json::Value;
use std::time::Instant;
use url::Url;

/// Origin validation and the two Accept forms, with the revision's opening request.
pub(super) async fn transport_checks(run: &mut Run, rev: Revision) {
    let foreign = [("accept", ACCEPT_BOTH), ("origin", "https://foreign-origin.invalid")];
    match opening(run, rev, &foreign).await {
        Ok(ex) => run.judge(
            "transport.origin",
            Some(rev),
            refs::ORIGIN,
            ex.http.status == 403,
            format!("a request with Origin https://foreign-origin.invalid got HTTP {}", ex.http.status),
        ),
        Err(e) => run.add("transport.origin", Some(rev), refs::ORIGIN, Status::Fail, e),
    }
    for (id, accept) in [("transport.accept_both", ACCEPT_BOTH), ("transport.accept_json", ACCEPT_JSON)] {
        match opening(run, rev, &[("accept", accept)]).await {
            Ok(ex) => {
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

/// The opening request of `rev` with the `extra` headers; a session it opened is ended
/// at once.
async fn opening(run: &Run, rev: Revision, extra: &[(&'static str, &'static str)]) -> Result<rpc::Exchange, String> {
    let mut headers = rpc::opening_headers(rev);
    headers.extend_from_slice(extra);
    let ex = rpc::post(&run.probe, &run.url, &headers, &rpc::opening_body(rev), 1, Pace::Patient).await?;
    if let Some(id) = ex.http.header("mcp-session-id") {
        rpc::delete_session(&run.probe, &run.url, rev, id).await;
    }
    Ok(ex)
}

/// The OAuth-protected endpoints the holder metadata names (`endpoints.buyer`,
/// `endpoints.seller`): the 401 challenge, RFC 9728 and RFC 8414 metadata.
pub(super) async fn oauth_checks(run: &mut Run, meta: Option<&Value>) {
    let Some(endpoints) = meta.and_then(|m| m.get("endpoints")) else {
        run.add("oauth.challenge", None, refs::CHALLENGE, Status::Skip, "no /.well-known/isto-intents with endpoints");
        return;
    };
    let named = ["buyer", "seller"].map(|k| endpoints.get(k).and_then(Value::as_str).and_then(|u| Url::parse(u).ok()));
    if named.iter().all(Option::is_none) {
        let why = "the holder metadata names no OAuth-protected endpoint";
        run.add("oauth.challenge", None, refs::CHALLENGE, Status::Skip, why);
    }
    for ep in named.iter().flatten() {
        endpoint_checks(run, ep).await;
    }
}

/// The checks of one OAuth-protected endpoint `ep` on the checked URL's origin: the
/// challenge without a token, its protected resource metadata (RFC 9728) and its
/// authorization server's metadata (RFC 8414).
async fn endpoint_checks(run: &mut Run, ep: &Url) {
    if !scan::same_origin(&run.url, ep) {
        let detail = format!("{ep} is not on the checked URL's origin: not fetched");
        run.add("oauth.challenge", None, refs::CHALLENGE, Status::Skip, detail);
        return;
    }
    let body = serde_json::to_vec(&rpc::opening_body(Revision::V2025)).unwrap_or_default();
    let h = [("content-type", "application/json"), ("accept", ACCEPT_BOTH)];
    let out = rpc::Outgoing { method: "POST", url: ep, headers: &h, body: Some(body) };
    let res = match rpc::send_paced(&run.probe, ep.as_str(), out, &|_| true, Pace::Patient).await {
        Ok(r) => r,
        Err(e) => {
            run.add("oauth.challenge", None, refs::CHALLENGE, Status::Fail, e);
            return;
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
    let prm_url = prm.and_then(|u| Url::parse(&u).ok()).or_else(|| scan::prm_default(ep));
    let Some(prm_url) = prm_url else { return };
    if !scan::same_origin(&run.url, &prm_url) {
        let detail = format!("resource_metadata {prm_url} is not on the checked URL's origin: not fetched");
        run.add("oauth.resource_metadata", None, refs::PRM, Status::Skip, detail);
        return;
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
    let Some(issuer) = as_url.and_then(|u| Url::parse(&u).ok()) else { return };
    let asm_url = scan::as_metadata_url(&issuer);
    if !scan::same_origin(&run.url, &asm_url) {
        let detail = format!("authorization server {issuer} is not on the checked URL's origin: not fetched");
        run.add("oauth.as_metadata", None, refs::ASM, Status::Skip, detail);
        return;
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

/// Up to [`RATE_REQUESTS`] cheap requests within [`RATE_WINDOW`]: a 429 must carry
/// `Retry-After`; no 429 at all is reported (`info`), not failed (the seed's MAY).
pub(super) async fn rate_check(run: &mut Run, s: &mut Session) {
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
