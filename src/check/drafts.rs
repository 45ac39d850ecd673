//! The draft checks' helpers (seed §5, PROTOCOL.md §3, §5): the checks skipped when no
//! draft could be made, the demand cell before and after the drafts, bad input, secrets
//! in the answers, and the withdrawal of every draft the run made.

use super::rpc::{Revision, Session};
use super::runner::Run;
use super::{refs, scan, Status, HIDDEN_LIMIT, PUBLISH};
use crate::protocol::tools::ToolId;
use serde_json::{json, Value};

/// The checks that need the run's drafts, as `skip` with `why` (those not yet in the
/// report).
pub(super) fn skip_draft_checks(run: &mut Run, rev: Revision, why: &str) {
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

pub(super) async fn demand(run: &mut Run, s: &mut Session, plan: &scan::DraftPlan) -> Option<Result<Value, String>> {
    let args = plan.cell.clone()?;
    Some(match run.call(s, ToolId::DemandSummary.name(), args).await {
        Ok(a) if !a.refused() => Ok(a.structured.or_else(|| serde_json::from_str(&a.text).ok()).unwrap_or(Value::Null)),
        Ok(a) => Err(format!("refused: {}", scan::short(&a.error_text()))),
        Err(e) => Err(e),
    })
}

pub(super) fn demand_checks(
    run: &mut Run,
    rev: Revision,
    plan: &scan::DraftPlan,
    before: Option<Result<Value, String>>,
    after: Option<Result<Value, String>>,
) {
    let (Some(before), Some(after)) = (before, after) else {
        let why = "no band grid in /.well-known/isto-intents to choose the drafts' cell from";
        return both_demand_checks(run, rev, Status::Skip, why);
    };
    match (&before, &after) {
        (Ok(b), Ok(a)) => {
            let key = |v: &Value| {
                json!({"withheld": v.get("withheld"), "activeIntents": v.get("activeIntents"),
                       "newLast7Days": v.get("newLast7Days"), "pseudonymous": v.get("pseudonymous")})
            };
            run.judge(
                "demand.draft_not_counted",
                Some(rev),
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
                Some(rev),
                refs::DEMAND_K,
                fine(b) && fine(a),
                format!("k = {k}; the cell is {} (a count below k would fail)", scan::summary_label(a)),
            );
        }
        (Err(e), _) | (_, Err(e)) => both_demand_checks(run, rev, Status::Fail, e),
    }
}

/// `demand.draft_not_counted` and `demand.below_k_withheld`, both with `status` and
/// `detail`.
pub(super) fn both_demand_checks(run: &mut Run, rev: Revision, status: Status, detail: &str) {
    run.add("demand.draft_not_counted", Some(rev), refs::DEMAND_DRAFT, status, detail);
    run.add("demand.below_k_withheld", Some(rev), refs::DEMAND_K, status, detail);
}

pub(super) async fn bad_input(run: &mut Run, s: &mut Session, plan: &scan::DraftPlan) {
    let mut negative = plan.draft(0);
    negative["budget"] = json!({"max": -5});
    let mut no_statement = plan.draft(0);
    if let Some(o) = no_statement.as_object_mut() {
        o.remove("statement");
    }
    let mut problems = Vec::new();
    let mut seen = Vec::new();
    for (field, args) in [("budget", negative), ("statement", no_statement)] {
        match run.call(s, PUBLISH, args).await {
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

pub(super) fn secrets_check(run: &mut Run, rev: Revision, consent_urls: &[String]) {
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
        if tool != PUBLISH && tokens.iter().any(|t| a.raw.contains(t.as_str())) {
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
pub(super) async fn cleanup(run: &mut Run, s: &mut Session) {
    s.set_probe(run.grace.clone());
    let drafts = std::mem::take(&mut run.drafts);
    let mut left = Vec::new();
    for code in &drafts {
        match s.call(ToolId::WithdrawIntent.name(), json!({"intentCode": code})).await {
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
