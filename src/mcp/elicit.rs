//! Consent by URL-mode elicitation on `/mcp` (PROTOCOL.md §4 item 1; MCP 2025-11-25 and
//! 2026-07-28 "Elicitation", URL mode; MCP 2026-07-28 "Multi Round-Trip Requests").
//!
//! When the client declares the `elicitation.url` capability, `intent_publish_intent`
//! also asks the client to show the holder's consent page to the person:
//!
//! * on 2026-07-28 (stateless) the first answer is an `InputRequiredResult` whose
//!   `inputRequests` hold one `elicitation/create` (`{mode: "url", url: consentUrl,
//!   message}`, key [`CONSENT_REQUEST`]) and whose `requestState` names the draft
//!   ([`seal_state`]); the retry carrying that `requestState` and the client's
//!   `inputResponses` gets the ordinary publish result and never makes a second draft;
//! * on 2025-11-25 (a session) the server sends that `elicitation/create` request during
//!   the call and waits at most `[limits] elicitation_wait_secs` for the answer.
//!
//! `decline` withdraws the draft; `accept`, `cancel`, no answer or an error leave it a
//! draft. A client without the capability gets the ordinary result, unchanged. Neither
//! the URL nor the message holds the intentCode (seed rule).
//!
//! `requestState` is sealed with the holder's key ring: unforgeable and unreadable (it
//! carries the intentCode), bound to the call and to a short lifetime, as MCP 2026-07-28
//! asks against replay ([`open_state`]; there is no principal on `/mcp` to bind). A bad
//! one, or one sent with another call, is a JSON-RPC invalid-params error naming
//! `requestState` ([`check_retry`]): nothing is run, no draft made.

use super::{call_blocking, failure, from_request, handlers, modern, request_span, Endpoint};
use crate::base::Result as ServiceResult;
use crate::crypto::{self, KeyRing, Sealed};
use crate::intents::PublishResult;
use crate::protocol::tools::ToolId;
use crate::protocol::Status;
use crate::state::AppState;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ElicitRequest, ElicitRequestParams, ElicitationAction,
    InputRequest, InputRequests, InputRequiredResult,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::OffsetDateTime;

/// The one tool that elicits.
pub const PUBLISH: &str = ToolId::PublishIntent.name();

/// The key of the consent page's `elicitation/create` in `inputRequests` (and of its
/// answer in `inputResponses`).
pub const CONSENT_REQUEST: &str = "consent";

/// Longest `requestState` accepted, characters. The holder's own are about 500.
pub const MAX_REQUEST_STATE_CHARS: usize = 2048;

/// The first part of every `requestState` this holder issues (its format's version).
const STATE_PREFIX: &str = "isto-rs1";

/// The domain of the arguments digest bound into a `requestState`.
const ARGS_DIGEST: &str = "mcp-request-state-args";

/// How a client that declared `elicitation.url` is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// 2026-07-28 and later: an `InputRequiredResult` (MRTR).
    InputRequired,
    /// 2025-11-25: an `elicitation/create` request during the call.
    ServerRequest,
}

/// Marks a request whose client reads only `application/json` (set by `json_only_request`
/// in [`super::service`]): it cannot read a request sent during the call, so a 2025-11-25
/// call of it is not elicited.
#[derive(Debug, Clone, Copy)]
pub struct JsonOnly;

/// How this call's client is asked to show the consent page: `None` when it did not
/// declare `elicitation.url` (in the request's `_meta` on 2026-07-28, at `initialize` on
/// 2025-11-25), or when a 2025-11-25 client reads only JSON ([`JsonOnly`]).
pub fn mode(context: &RequestContext<RoleServer>) -> Option<Mode> {
    let url = context.client_capabilities().and_then(|c| c.elicitation).is_some_and(|e| e.url.is_some());
    if !url {
        return None;
    }
    if modern(context.protocol_version().as_ref()) {
        return Some(Mode::InputRequired);
    }
    let json_only =
        context.extensions.get::<http::request::Parts>().is_some_and(|p| p.extensions.get::<JsonOnly>().is_some());
    (!json_only).then_some(Mode::ServerRequest)
}

/// What a `requestState` names: the draft of one publish call, and that call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DraftState {
    /// The tool called ([`PUBLISH`]).
    pub tool: String,
    /// [`args_digest`] of the call's arguments.
    pub args: String,
    /// The draft's id.
    pub id: String,
    /// Its intentCode (the final result returns it).
    pub code: String,
    /// Its consent page.
    pub consent_url: String,
    /// When the draft lapses (RFC 3339; the final result's `expiresAt`).
    pub expires_at: String,
    /// When this state expires (RFC 3339): `[limits] request_state_secs` after it was
    /// issued, or the draft's lapse if sooner.
    pub valid_until: String,
}

/// A refused `requestState`; its message names the field and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    /// Over [`MAX_REQUEST_STATE_CHARS`].
    #[error("requestState is over {MAX_REQUEST_STATE_CHARS} characters; send back the requestState of the previous answer unchanged")]
    TooLong,
    /// Not sealed by this holder, or altered.
    #[error("requestState is not one this holder issued (altered or forged); send back the requestState of the previous answer unchanged, or call intent_publish_intent again without one")]
    Forged,
    /// Sealed for another tool or other arguments.
    #[error(
        "requestState belongs to another call; retry with the same tool and arguments as the call that returned it"
    )]
    OtherCall,
    /// Past its lifetime ([`DraftState::valid_until`]).
    #[error("requestState has expired (at {0}): a requestState is valid only for a few minutes after the answer that carried it; call intent_publish_intent again without requestState")]
    Expired(String),
    /// `inputResponses` without `requestState`: not a retry isto can match to a call.
    #[error("inputResponses without requestState: a retry of an input_required answer must send back its requestState unchanged (MCP 2026-07-28 multi round-trip requests); nothing was done — call intent_publish_intent again without inputResponses")]
    Missing,
}

/// The digest of a call's tool and arguments bound into its `requestState`: SHA-256 of
/// the tool name and the arguments as JSON with their keys sorted (serde_json's map).
pub fn args_digest(tool: &str, args: &Value) -> String {
    crypto::token_hash(ARGS_DIGEST, &format!("{tool}\n{args}"))
}

/// Seals `state` into a `requestState`: `isto-rs1.<key id>.<nonce>.<ciphertext>`
/// (XChaCha20-Poly1305 under the ring's current key, base64url).
///
/// # Errors
/// [`crypto::CryptoError`] when the ring cannot seal.
pub fn seal_state(keys: &KeyRing, state: &DraftState) -> Result<String, crypto::CryptoError> {
    let json = serde_json::to_vec(state).map_err(|_| crypto::CryptoError::Seal("the state is not JSON"))?;
    let s = keys.seal(&json)?;
    Ok(format!("{STATE_PREFIX}.{}.{}.{}", s.kid, s.nonce, s.ct))
}

/// Opens a `requestState` of a call of `tool` with `args` at `now`: the sealed state when
/// it is this holder's (at most [`MAX_REQUEST_STATE_CHARS`]), unaltered, of this very call
/// (the tool and [`args_digest`] of its arguments) and not expired
/// ([`DraftState::valid_until`]).
///
/// # Errors
/// [`StateError`]: the first rule it breaks (size, seal, call, expiry).
pub fn open_state(
    keys: &KeyRing,
    sealed: &str,
    tool: &str,
    args: &Value,
    now: OffsetDateTime,
) -> Result<DraftState, StateError> {
    if sealed.chars().count() > MAX_REQUEST_STATE_CHARS {
        return Err(StateError::TooLong);
    }
    let mut parts = sealed.split('.');
    let (Some(STATE_PREFIX), Some(kid), Some(nonce), Some(ct), None) =
        (parts.next(), parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(StateError::Forged);
    };
    let sealed = Sealed { kid: kid.to_owned(), nonce: nonce.to_owned(), ct: ct.to_owned() };
    let plain = keys.open(&sealed).map_err(|_| StateError::Forged)?;
    let state: DraftState = serde_json::from_slice(&plain).map_err(|_| StateError::Forged)?;
    if state.tool != tool || state.args != args_digest(tool, args) {
        return Err(StateError::OtherCall);
    }
    let until = crate::clock::parse_rfc3339(&state.valid_until).map_err(|_| StateError::Forged)?;
    if now >= until {
        return Err(StateError::Expired(state.valid_until));
    }
    Ok(state)
}

/// The retry rules of every `tools/call` on every endpoint, checked before anything
/// runs (MCP 2026-07-28 "Multi Round-Trip Requests": `requestState` is attacker-controlled
/// input, valid only on the retry of the call it was issued for). `issuer` is whether
/// this call is one that issues a `requestState` (`intent_publish_intent` on `/mcp`,
/// whose own state [`publish`] opens).
///
/// # Errors
/// A JSON-RPC invalid-params error: [`StateError::Missing`] for `inputResponses`
/// without `requestState`; for a `requestState` on any other call,
/// [`StateError::TooLong`] or [`StateError::Forged`] when it is not one of this holder's,
/// else [`StateError::OtherCall`].
pub fn check_retry(keys: &KeyRing, request: &CallToolRequestParams, issuer: bool) -> Result<(), McpError> {
    let refuse = |e: StateError| McpError::invalid_params(e.to_string(), None);
    let Some(sealed) = request.request_state.as_deref() else {
        return match request.input_responses {
            Some(_) => Err(refuse(StateError::Missing)),
            None => Ok(()),
        };
    };
    if issuer {
        return Ok(());
    }
    // Opened for its size and seal only: whatever it names, it is not this call's.
    let args = Value::Object(request.arguments.clone().unwrap_or_default());
    let far_past = OffsetDateTime::UNIX_EPOCH;
    Err(refuse(match open_state(keys, sealed, &request.name, &args, far_past) {
        Err(e @ (StateError::TooLong | StateError::Forged)) => e,
        _ => StateError::OtherCall,
    }))
}

/// The draft named by an ordinary publish result (its `structuredContent`) of a call
/// with `args`, its state valid until `valid_until` or the draft's lapse if sooner;
/// `None` for an error result or another shape.
fn draft_of(result: &CallToolResult, args: &Value, valid_until: OffsetDateTime) -> Option<DraftState> {
    if result.is_error == Some(true) {
        return None;
    }
    let v = result.structured_content.as_ref()?;
    let s = |p: &str| v.pointer(p).and_then(Value::as_str).map(str::to_owned);
    let expires_at = s("/expiresAt")?;
    let lapse = crate::clock::parse_rfc3339(&expires_at).ok()?;
    Some(DraftState {
        tool: PUBLISH.to_owned(),
        args: args_digest(PUBLISH, args),
        id: s("/intent/id")?,
        code: s("/intentCode")?,
        consent_url: s("/consentUrl")?,
        expires_at,
        valid_until: crate::clock::rfc3339(valid_until.min(lapse)),
    })
}

/// The URL-mode `elicitation/create` parameters for `url` (an `elicitationId` on
/// 2025-11-25 only), with a fixed message: it holds no code.
fn url_params(holder: &AppState, url: &str, elicitation_id: String) -> ElicitRequestParams {
    let message = format!(
        "{} asks the person to open its consent page: it shows the buying intent; there the person enters their \
         e-mail address and consents, then confirms by e-mail. Open it only if the person agrees; do not fill it in \
         for them.",
        holder.base.settings().holder_name
    );
    ElicitRequestParams::UrlElicitationParams { meta: None, message, url: url.to_owned(), elicitation_id }
}

/// The `InputRequiredResult` asking for the consent page of `draft`, sealed as `state`.
fn input_required(holder: &AppState, draft: &DraftState, state: String) -> InputRequiredResult {
    let mut requests = InputRequests::new();
    requests.insert(
        CONSENT_REQUEST.to_owned(),
        InputRequest::Elicitation(ElicitRequest::new(url_params(holder, &draft.consent_url, String::new()))),
    );
    InputRequiredResult::new(Some(requests), Some(state))
}

/// The person's answer in a retry's `inputResponses` (`None` when absent).
///
/// # Errors
/// A JSON-RPC invalid-params error naming `inputResponses.consent.action`.
fn answer_of(request: &CallToolRequestParams) -> Result<Option<ElicitationAction>, McpError> {
    let Some(answer) = request.input_responses.as_ref().and_then(|r| r.get(CONSENT_REQUEST)) else {
        return Ok(None);
    };
    let action = answer.get("action").and_then(|a| ElicitationAction::deserialize(a).ok());
    let bad = || McpError::invalid_params("inputResponses.consent.action must be one of accept, decline, cancel", None);
    action.map(Some).ok_or_else(bad)
}

/// The final publish result of `draft` after the person's `action` (blocking: store
/// I/O): `decline` withdraws the draft while it is still awaiting consent; the result is
/// the ordinary one with the intent as it now is.
///
/// # Errors
/// [`crate::base::ServiceError::NotFound`] when the draft is gone; storage errors.
pub fn finish(holder: &AppState, draft: &DraftState, action: ElicitationAction) -> ServiceResult<CallToolResult> {
    let intents = &holder.intents;
    if action == ElicitationAction::Decline
        && intents.get_by_code(&draft.code, Some(&draft.id))?.status == Status::AwaitingConsent
    {
        intents.withdraw_by_code(&draft.code, Some(&draft.id))?;
        tracing::info!(intent = %draft.id, "consent elicitation declined: draft withdrawn");
    }
    let result = PublishResult {
        intent: intents.get_by_code(&draft.code, Some(&draft.id))?,
        intent_code: draft.code.clone(),
        consent_url: draft.consent_url.clone(),
        expires_at: draft.expires_at.clone(),
    };
    Ok(handlers::finish(Endpoint::Public, ToolId::PublishIntent, handlers::Output::of(&result)))
}

/// `intent_publish_intent` on `/mcp` for a client asked by `mode` (or carrying a
/// `requestState`): see the module docs. `run` is the ordinary publish.
pub async fn publish(
    holder: &AppState,
    request: CallToolRequestParams,
    context: &RequestContext<RoleServer>,
    mode: Option<Mode>,
    run: impl FnOnce(ToolId, &Value) -> CallToolResult + Send + 'static,
) -> Result<CallToolResponse, McpError> {
    let args = Value::Object(request.arguments.clone().unwrap_or_default());
    if let Some(sealed) = request.request_state.as_deref() {
        let draft = open_state(holder.base.keys(), sealed, PUBLISH, &args, holder.base.now())
            .map_err(|e| McpError::invalid_params(e.to_string(), None))?;
        let action = match answer_of(&request)? {
            Some(a) => a,
            // Asked but not answered: ask again, with the same state (no new draft),
            // while the draft still awaits consent; once it is withdrawn, declined or
            // confirmed, the retry gets the completed result as the intent now is.
            None if mode == Some(Mode::InputRequired) => {
                let (h, d) = (holder.clone(), draft.clone());
                let awaiting = tokio::task::spawn_blocking(move || {
                    h.intents.get_by_code(&d.code, Some(&d.id)).map(|i| i.status == Status::AwaitingConsent)
                })
                .await
                .map_err(|_| McpError::internal_error("tool task failed", None))?
                .unwrap_or(false);
                if awaiting {
                    return Ok(CallToolResponse::InputRequired(input_required(holder, &draft, sealed.to_owned())));
                }
                ElicitationAction::Cancel
            }
            None => ElicitationAction::Cancel,
        };
        let h = holder.clone();
        return call_blocking(
            Endpoint::Public,
            request_span(context),
            from_request(context),
            request,
            false,
            move |tool, _| finish(&h, &draft, action).unwrap_or_else(|e| failure(tool.name(), &e)),
        )
        .await;
    }
    let response =
        call_blocking(Endpoint::Public, request_span(context), from_request(context), request, false, run).await?;
    let CallToolResponse::Complete(result) = &response else { return Ok(response) };
    let lifetime =
        time::Duration::seconds(holder.base.settings().limits.request_state_secs.try_into().unwrap_or(i64::MAX));
    let valid_until = holder.base.now().saturating_add(lifetime);
    let (Some(mode), Some(draft)) = (mode, draft_of(result, &args, valid_until)) else { return Ok(response) };
    match mode {
        Mode::InputRequired => match seal_state(holder.base.keys(), &draft) {
            Ok(state) => Ok(CallToolResponse::InputRequired(input_required(holder, &draft, state))),
            Err(e) => {
                tracing::error!(error = %e, "requestState could not be sealed: answering the ordinary result");
                Ok(response)
            }
        },
        Mode::ServerRequest => {
            let wait = std::time::Duration::from_secs(holder.base.settings().limits.elicitation_wait_secs);
            let params = url_params(holder, &draft.consent_url, crypto::new_id("eli_"));
            let action = match context.peer.create_elicitation_with_timeout(params, Some(wait)).await {
                Ok(answer) => answer.action,
                // No answer in time, or an error: the draft stays; the cause may echo the
                // request (the consent link), so it is not logged.
                Err(_) => {
                    tracing::info!(intent = %draft.id, "consent elicitation: no answer; the draft stays");
                    ElicitationAction::Cancel
                }
            };
            if action != ElicitationAction::Decline {
                return Ok(response);
            }
            let (h, span) = (holder.clone(), request_span(context));
            let out = tokio::task::spawn_blocking(move || span.in_scope(|| finish(&h, &draft, action)))
                .await
                .map_err(|_| McpError::internal_error("tool task failed", None))?;
            Ok(CallToolResponse::Complete(out.unwrap_or_else(|e| failure(PUBLISH, &e))))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn state() -> DraftState {
        let args = json!({"statement": "Hľadám Škoda Octavia", "area": "SK"});
        DraftState {
            tool: PUBLISH.into(),
            args: args_digest(PUBLISH, &args),
            id: "int_abc".into(),
            code: "c".repeat(32),
            consent_url: format!("https://holder.example/consent/{}", "t".repeat(32)),
            expires_at: "2030-01-02T00:00:00Z".into(),
            valid_until: "2030-01-01T00:05:00Z".into(),
        }
    }

    fn now() -> OffsetDateTime {
        crate::clock::parse_rfc3339("2030-01-01T00:00:00Z").unwrap()
    }

    #[test]
    fn a_sealed_state_opens_for_its_own_call_only() {
        let keys = KeyRing::ephemeral();
        let args = json!({"area": "SK", "statement": "Hľadám Škoda Octavia"});
        let sealed = seal_state(&keys, &state()).unwrap();
        assert!(sealed.starts_with("isto-rs1.") && sealed.len() < 1024, "{sealed}");
        assert!(!sealed.contains(&"c".repeat(32)) && !sealed.contains("consent"), "the state is readable: {sealed}");
        assert_eq!(open_state(&keys, &sealed, PUBLISH, &args, now()).unwrap(), state(), "key order does not matter");
        let other = json!({"statement": "Hľadám Škoda Fabia", "area": "SK"});
        assert_eq!(open_state(&keys, &sealed, PUBLISH, &other, now()), Err(StateError::OtherCall));
        assert_eq!(open_state(&keys, &sealed, "intent_get_intent", &args, now()), Err(StateError::OtherCall));
        let at = |t: &str| open_state(&keys, &sealed, PUBLISH, &args, crate::clock::parse_rfc3339(t).unwrap());
        assert!(at("2030-01-01T00:04:59Z").is_ok(), "within its lifetime");
        // Its own lifetime, not the draft's: ten minutes later the draft is still there.
        let e = at("2030-01-01T00:10:00Z").unwrap_err();
        assert_eq!(e, StateError::Expired("2030-01-01T00:05:00Z".into()));
        assert!(e.to_string().starts_with("requestState has expired"), "{e}");
        assert_eq!(at("2030-01-01T00:05:00Z"), Err(StateError::Expired("2030-01-01T00:05:00Z".into())));
    }

    #[test]
    fn a_forged_altered_or_foreign_state_is_refused_naming_request_state() {
        let keys = KeyRing::ephemeral();
        let args = json!({"statement": "Hľadám Škoda Octavia", "area": "SK"});
        let sealed = seal_state(&keys, &state()).unwrap();
        let open = |s: &str| open_state(&keys, s, PUBLISH, &args, now());
        // One character of the ciphertext changed.
        let mut altered = sealed.clone().into_bytes();
        let last = altered.len() - 2;
        altered[last] = if altered[last] == b'A' { b'B' } else { b'A' };
        let altered = String::from_utf8(altered).unwrap();
        // Sealed by another holder's ring.
        let foreign = seal_state(&KeyRing::ephemeral(), &state()).unwrap();
        // A plain JSON state, as a client might invent.
        let invented = format!("isto-rs1.{}", serde_json::to_string(&state()).unwrap());
        for bad in [altered.as_str(), &foreign, &invented, "", "isto-rs1", "isto-rs1.a.b.c", "x.y.z.w", &sealed[1..]] {
            let e = open(bad).unwrap_err();
            assert_eq!(e, StateError::Forged, "{bad}");
            assert!(e.to_string().starts_with("requestState is not one this holder issued"), "{e}");
        }
        let long = format!("{sealed}{}", "A".repeat(MAX_REQUEST_STATE_CHARS));
        assert_eq!(open(&long), Err(StateError::TooLong));
        assert!(StateError::TooLong.to_string().starts_with("requestState is over 2048 characters"));
        assert_eq!(open(&sealed).unwrap().id, "int_abc");
    }

    #[test]
    fn the_consent_request_is_a_url_elicitation_of_the_consent_page_without_the_code() {
        let keys = KeyRing::ephemeral();
        let args = json!({"statement": "Hľadám Škoda Octavia", "area": "SK"});
        let ordinary = handlers::finish(
            Endpoint::Public,
            ToolId::PublishIntent,
            handlers::Output::of(
                &json!({"intent": {"id": "int_abc", "status": "awaiting_consent"}, "intentCode": "c".repeat(32),
                       "consentUrl": format!("https://holder.example/consent/{}", "t".repeat(32)),
                       "expiresAt": "2030-01-02T00:00:00Z"}),
            ),
        );
        let five = crate::clock::parse_rfc3339("2030-01-01T00:05:00Z").unwrap();
        let draft = draft_of(&ordinary, &args, five).unwrap();
        assert_eq!(draft, state());
        assert!(draft_of(&CallToolResult::error(vec![]), &args, five).is_none());
        // Never past the draft's lapse.
        let later = crate::clock::parse_rfc3339("2030-01-03T00:00:00Z").unwrap();
        assert_eq!(draft_of(&ordinary, &args, later).unwrap().valid_until, "2030-01-02T00:00:00Z");
        let sealed = seal_state(&keys, &draft).unwrap();
        let mut requests = InputRequests::new();
        let params = ElicitRequestParams::UrlElicitationParams {
            meta: None,
            message: "m".into(),
            url: draft.consent_url.clone(),
            elicitation_id: String::new(),
        };
        requests.insert(CONSENT_REQUEST.into(), InputRequest::Elicitation(ElicitRequest::new(params)));
        let v = serde_json::to_value(InputRequiredResult::new(Some(requests), Some(sealed))).unwrap();
        assert_eq!(v["resultType"], "input_required");
        assert_eq!(v["inputRequests"]["consent"]["method"], "elicitation/create");
        assert_eq!(v["inputRequests"]["consent"]["params"]["mode"], "url");
        assert_eq!(v["inputRequests"]["consent"]["params"]["url"], draft.consent_url.as_str());
        assert!(!v.to_string().contains(&"c".repeat(32)), "the code is in the InputRequiredResult: {v}");
    }

    #[test]
    fn a_retry_needs_its_state_and_a_state_belongs_to_its_call_only() {
        let keys = KeyRing::ephemeral();
        let args = json!({"statement": "Hľadám Škoda Octavia", "area": "SK"});
        let sealed = seal_state(&keys, &state()).unwrap();
        let call = |name: &str, state: Option<&str>, answered: bool| {
            let mut r = CallToolRequestParams::new(name.to_owned());
            r.arguments = args.as_object().cloned();
            r.request_state = state.map(str::to_owned);
            if answered {
                let mut responses = rmcp::model::InputResponses::new();
                responses.insert(CONSENT_REQUEST.to_owned(), json!({"action": "accept"}));
                r.input_responses = Some(responses);
            }
            r
        };
        let message = |r: Result<(), McpError>| r.unwrap_err().message.to_string();
        // inputResponses alone: refused naming the rule, on any call.
        for issuer in [true, false] {
            let m = message(check_retry(&keys, &call(PUBLISH, None, true), issuer));
            assert!(m.starts_with("inputResponses without requestState"), "{m}");
        }
        // The issuing call opens its own state later; a first call passes.
        assert!(check_retry(&keys, &call(PUBLISH, Some(&sealed), true), true).is_ok());
        assert!(check_retry(&keys, &call(PUBLISH, None, false), true).is_ok());
        assert!(check_retry(&keys, &call("intent_get_intent", None, false), false).is_ok());
        // Any other call: the state is not its own, whatever it names.
        for name in ["intent_get_intent", PUBLISH] {
            let m = message(check_retry(&keys, &call(name, Some(&sealed), false), false));
            assert_eq!(m, StateError::OtherCall.to_string(), "{name}");
        }
        let m = message(check_retry(&keys, &call("intent_get_intent", Some("isto-rs1.a.b.c"), false), false));
        assert_eq!(m, StateError::Forged.to_string());
    }
}
