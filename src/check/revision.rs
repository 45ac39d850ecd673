//! The checks of one MCP revision's session (seed §5, PROTOCOL.md §3): the tool list,
//! then the draft flow — publish, the codes, reading and withdrawing by code, bad input,
//! demand and secrets. Each check adds its [`super::Check`] to the [`Run`].

use super::drafts::{bad_input, both_demand_checks, demand, demand_checks, secrets_check, skip_draft_checks};
use super::rpc::Session;
use super::runner::Run;
use super::{refs, scan, transport, Status, DRAFTS, PUBLISH};
use crate::protocol::tools::{ToolId, CONSENT_LINK_PROFILE};
use serde_json::{json, Value};

const GET: &str = ToolId::GetIntent.name();
const LIST_MATCHES: &str = ToolId::ListMatches.name();
const WITHDRAW: &str = ToolId::WithdrawIntent.name();
const DEMAND: &str = ToolId::DemandSummary.name();

/// The checks that run in each revision's session.
pub(super) async fn revision_checks(run: &mut Run, s: &mut Session, meta: Option<&Value>) {
    let rev = Some(s.revision);
    transport::transport_checks(run, s.revision).await;
    let tools = match s.list_tools().await {
        Ok(t) => t,
        Err(e) => {
            run.add("tools.present", rev, refs::TOOLS, Status::Fail, e);
            return;
        }
    };
    tool_list_checks(run, s, &tools);
    let tool = |n: &str| tools.iter().find(|t| t["name"].as_str() == Some(n)).cloned();
    let Some(publish) = tool(PUBLISH) else {
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
    let demand_tool = tool(DEMAND).is_some();
    let plan = scan::DraftPlan::from_metadata(meta);
    let before = if demand_tool { demand(run, s, &plan).await } else { None };
    let Some((codes, secrets, consent_urls)) = publish_drafts(run, s, &plan).await else { return };
    unknown_refused(run, s, &plan, &schema).await;
    code_quality(run, s, &secrets, &consent_urls);
    let code = codes[0].clone();
    by_code_checks(run, s, &code).await;
    withdraw_check(run, s, &code).await;
    bad_input(run, s, &plan).await;
    if demand_tool {
        let after = demand(run, s, &plan).await;
        demand_checks(run, s.revision, &plan, before, after);
    } else {
        both_demand_checks(run, s.revision, Status::Skip, "the endpoint has no intent_demand_summary tool");
    }
    secrets_check(run, s.revision, &consent_urls);
}

/// `tools.present` and `tools.disclaimer`: the consent-link profile's tools with object
/// input schemas, the aggregator note in every description.
fn tool_list_checks(run: &mut Run, s: &Session, tools: &[Value]) {
    let rev = Some(s.revision);
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    let missing: Vec<&str> = CONSENT_LINK_PROFILE.iter().map(|t| t.name()).filter(|n| !names.contains(n)).collect();
    let failing = |ok: &dyn Fn(&Value) -> bool| -> Vec<&str> {
        tools.iter().filter(|t| !ok(t)).map(|t| t["name"].as_str().unwrap_or("?")).collect()
    };
    let no_schema = failing(&|t| t.pointer("/inputSchema/type").and_then(Value::as_str) == Some("object"));
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
    let lacking = failing(&|t| scan::has_disclaimer(t["description"].as_str().unwrap_or("")));
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
}

/// The drafts' codes, the codes without their intent's id (what the entropy is
/// estimated of: [`scan::without_id`]) and the consent URLs.
type Drafts = (Vec<String>, Vec<String>, Vec<String>);

/// Publishes the run's [`DRAFTS`] drafts: their [`Drafts`]; `None` (the draft checks
/// skipped or failed) when the holder refused one.
async fn publish_drafts(run: &mut Run, s: &mut Session, plan: &scan::DraftPlan) -> Option<Drafts> {
    let rev = Some(s.revision);
    let mut codes = Vec::new();
    let mut secrets = Vec::new();
    let mut consent_urls = Vec::new();
    let mut publish_fail = None;
    for i in 0..DRAFTS {
        match run.call(s, PUBLISH, plan.draft(i)).await {
            Ok(a) if !a.refused() => {
                let sc = a.structured.clone().or_else(|| serde_json::from_str(&a.text).ok()).unwrap_or(Value::Null);
                if let Some(c) = sc.get("intentCode").and_then(Value::as_str) {
                    secrets.push(scan::without_id(c, sc.pointer("/intent/id").and_then(Value::as_str)));
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
                    return None;
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
        return None;
    }
    Some((codes, secrets, consent_urls))
}

/// `publish.unknown_refused`: the schema closed and a call with an unknown property
/// refused.
async fn unknown_refused(run: &mut Run, s: &mut Session, plan: &scan::DraftPlan, schema: &Value) {
    let rev = Some(s.revision);
    let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
    let mut probe_args = plan.draft(0);
    probe_args["isto_check_unknown_property"] = json!(1);
    let unknown = run.call(s, PUBLISH, probe_args).await;
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
}

/// `publish.intent_code` (the entropy of the codes without their intent's id) and
/// `publish.consent_url`.
fn code_quality(run: &mut Run, s: &Session, codes: &[String], consent_urls: &[String]) {
    let rev = Some(s.revision);
    let est = scan::entropy(codes);
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
    let host = run.url.host_str().unwrap_or("").to_ascii_lowercase();
    let bad_urls: Vec<String> = consent_urls
        .iter()
        .zip(codes)
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
}

/// `get.by_code`, `list_matches.by_code` and `codes.wrong_like_unknown`.
async fn by_code_checks(run: &mut Run, s: &mut Session, code: &str) {
    let rev = Some(s.revision);
    let got = run.call(s, GET, json!({"intentCode": code})).await;
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
    let listed = run.call(s, LIST_MATCHES, json!({"intentCode": code})).await;
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
    let wrong = scan::mutate(code);
    let unknown_code = scan::unknown_like(code);
    let mut same = Vec::new();
    let mut differ = Vec::new();
    for tool_name in [GET, LIST_MATCHES, WITHDRAW] {
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
    let after = run.call(s, GET, json!({"intentCode": code})).await;
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
}

/// `withdraw.immediate`: a withdrawal by code shows at once.
async fn withdraw_check(run: &mut Run, s: &mut Session, code: &str) {
    let rev = Some(s.revision);
    let w = run.call(s, WITHDRAW, json!({"intentCode": code})).await;
    let w_ok = w.as_ref().is_ok_and(|a| {
        !a.refused() && a.structured.as_ref().map_or(a.text.contains("withdrawn"), |v| v["status"] == "withdrawn")
    });
    let g = run.call(s, GET, json!({"intentCode": code})).await;
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
}
