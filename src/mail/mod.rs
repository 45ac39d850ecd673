//! E-mail transport (infrastructure): the composed message ([`MailContent`]), the sealed
//! outbox row ([`MailJob`]), the [`Outbox`] handle, the SMTP / file [`Transport`] and
//! the durable outbox worker. The messages themselves are composed by the services
//! (`crate::messages`, `crate::accounts`).
//!
//! Messages are UTF-8 (Slovak and Czech diacritics in subjects and bodies), carry the
//! withdraw link and RFC 8058 `List-Unsubscribe` / `List-Unsubscribe-Post` headers
//! (PROTOCOL.md §4.4–4.5). A message is composed when it is queued and stored sealed in
//! the outbox table in the same transaction as the state change that caused it; the
//! worker sends and then deletes it, so a crash or an SMTP outage delays mail but loses
//! none.

pub mod worker;

use crate::clock::Clock;
use crate::crypto::{KeyRing, Sealed};
use crate::store::Store;
use lettre::message::header::{self, ContentType, Header, HeaderName, HeaderValue};
use lettre::message::{Mailbox, MultiPart, SinglePart};
use lettre::{AsyncFileTransport, AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::Arc;

/// A composed message before sealing.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MailContent {
    /// Recipient address.
    pub to: String,
    /// Subject (UTF-8).
    pub subject: String,
    /// Plain-text body (UTF-8).
    pub text: String,
    /// The RFC 8058 one-click unsubscribe URL (POST) for `List-Unsubscribe`.
    pub unsubscribe_url: String,
}

/// An outbox row: the sealed [`MailContent`] and delivery bookkeeping.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MailJob {
    /// The intent it belongs to (a withdrawal cancels its queued mail).
    pub intent_id: Option<String>,
    /// Sealed JSON of [`MailContent`].
    pub sealed: Sealed,
    /// Failed attempts so far.
    pub attempts: u32,
    /// Unix seconds before which the job is not retried.
    pub next_attempt: i64,
    /// The `Message-ID`, fixed when queued and the same on every attempt, so that a
    /// message sent again after a crash can be recognised as the same one.
    #[serde(default)]
    pub message_id: Option<String>,
    /// When the job was queued, unix seconds (for the oldest-message age of `/readyz`,
    /// issue 9 point 7); `None` in rows queued before it was recorded.
    #[serde(default)]
    pub queued_at: Option<i64>,
}

impl MailJob {
    /// Seals `content` into a job due at once; `domain` (the holder's host) goes into
    /// the `Message-ID`.
    ///
    /// # Errors
    /// [`crate::crypto::CryptoError::Seal`] when the content does not encode or sealing
    /// fails (nothing is queued).
    pub fn seal(
        keys: &KeyRing,
        intent: Option<&str>,
        content: &MailContent,
        now_unix: i64,
        domain: &str,
    ) -> Result<Self, crate::crypto::CryptoError> {
        let json = zeroize::Zeroizing::new(
            serde_json::to_vec(content)
                .map_err(|_| crate::crypto::CryptoError::Seal("the mail content does not encode as JSON"))?,
        );
        let message_id = format!("<{}@{domain}>", crate::crypto::new_id("msg_"));
        Ok(Self {
            intent_id: intent.map(str::to_owned),
            sealed: keys.seal(&json)?,
            attempts: 0,
            next_attempt: now_unix,
            message_id: Some(message_id),
            queued_at: Some(now_unix),
        })
    }
}

/// Whether `s` is a mailbox such as `Holder <noreply@holder.example>` (RFC 5322).
pub fn is_mailbox(s: &str) -> bool {
    s.parse::<Mailbox>().is_ok()
}

#[derive(Clone)]
struct ListUnsubscribe(String);

impl Header for ListUnsubscribe {
    fn name() -> HeaderName {
        HeaderName::new_from_ascii_str("List-Unsubscribe")
    }
    fn parse(s: &str) -> Result<Self, Box<dyn std::error::Error + Send + Sync>> {
        Ok(Self(s.to_owned()))
    }
    fn display(&self) -> HeaderValue {
        HeaderValue::new(Self::name(), self.0.clone())
    }
}

#[derive(Clone)]
struct ListUnsubscribePost;

impl Header for ListUnsubscribePost {
    fn name() -> HeaderName {
        HeaderName::new_from_ascii_str("List-Unsubscribe-Post")
    }
    fn parse(_: &str) -> Result<Self, Box<dyn std::error::Error + Send + Sync>> {
        Ok(Self)
    }
    fn display(&self) -> HeaderValue {
        HeaderValue::new(Self::name(), "List-Unsubscribe=One-Click".to_owned())
    }
}

/// A mail failure. Messages never include the recipient, the body or the SMTP server's
/// reply text (which often quotes the address): only the kind and the reply code.
#[derive(Debug, thiserror::Error)]
pub enum MailError {
    /// The From or To address does not parse.
    #[error("bad address in {0}")]
    Address(&'static str),
    /// Building the message failed.
    #[error("cannot build message: {0}")]
    Build(String),
    /// The SMTP server or the connection to it failed.
    #[error("SMTP {kind}{}", code.as_ref().map(|c| format!(" (reply code {c})")).unwrap_or_default())]
    Smtp {
        /// `permanent rejection`, `temporary failure`, `timeout`, `TLS failure`, `connection failure`.
        kind: &'static str,
        /// The SMTP reply code, when the server answered.
        code: Option<String>,
        /// A 5xx answer: retrying will not help.
        permanent: bool,
    },
    /// The configured transport cannot be used (bad URL, unwritable directory).
    #[error("transport: {0}")]
    Transport(String),
}

impl MailError {
    /// Whether retrying cannot succeed (the server rejected the message for good).
    pub fn is_permanent(&self) -> bool {
        matches!(self, Self::Smtp { permanent: true, .. } | Self::Address(_) | Self::Build(_))
    }
}

fn smtp_error(e: &lettre::transport::smtp::Error) -> MailError {
    let kind = if e.is_permanent() {
        "permanent rejection"
    } else if e.is_transient() {
        "temporary failure"
    } else if e.is_timeout() {
        "timeout"
    } else if e.is_tls() {
        "TLS failure"
    } else {
        "connection failure"
    };
    MailError::Smtp { kind, code: e.status().map(|c| c.to_string()), permanent: e.is_permanent() }
}

/// Builds the RFC 5322 message for `content`.
///
/// # Errors
/// [`MailError::Address`], [`MailError::Build`].
pub fn build_message(from: &str, content: &MailContent, message_id: Option<&str>) -> Result<Message, MailError> {
    let from: Mailbox = from.parse().map_err(|_| MailError::Address("mail.from"))?;
    let to: Mailbox = content.to.parse().map_err(|_| MailError::Address("recipient"))?;
    Message::builder()
        .message_id(message_id.map(str::to_owned))
        .from(from)
        .to(to)
        .subject(content.subject.clone())
        .header(ListUnsubscribe(format!("<{}>", content.unsubscribe_url)))
        .header(ListUnsubscribePost)
        .header(header::MIME_VERSION_1_0)
        .multipart(
            MultiPart::mixed()
                .singlepart(SinglePart::builder().header(ContentType::TEXT_PLAIN).body(content.text.clone())),
        )
        .map_err(|e| MailError::Build(e.to_string()))
}

/// Longest wait for one SMTP reply (connect, greeting, each command).
pub const SMTP_COMMAND_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);
/// Longest whole SMTP conversation for one message.
pub const SMTP_SEND_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// Checks an SMTP URL as lettre reads it (`smtp://` plain or with `?tls=required` /
/// `?tls=opportunistic` for STARTTLS, `smtps://` implicit TLS): the scheme, the `tls`
/// value, and that credentials never travel in clear — a URL with a user name must use
/// `smtps://` or `?tls=required` unless `allow_plaintext_auth` (`mail.allow_plaintext_auth`)
/// says otherwise. Returns warnings for mismatches it can see (port 465 without implicit
/// TLS, implicit TLS on 25 or 587).
///
/// # Errors
/// What is wrong with the URL (never the password), for a message that names the key.
pub fn check_smtp_url(url: &str, allow_plaintext_auth: bool) -> Result<Vec<String>, String> {
    let parsed =
        url::Url::parse(url).map_err(|_| "is not a URL such as smtp://mail.example:587?tls=required".to_owned())?;
    let implicit = match parsed.scheme() {
        "smtps" => true,
        "smtp" => false,
        other => return Err(format!("the scheme must be smtp or smtps, not {other:?}")),
    };
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err("names no host".to_owned());
    }
    let tls = parsed.query_pairs().find(|(k, _)| k == "tls").map(|(_, v)| v.into_owned());
    if let Some(t) = &tls {
        if !matches!(t.as_str(), "required" | "opportunistic" | "none") {
            return Err(format!("tls must be required, opportunistic or none, not {t:?}"));
        }
    }
    let encrypted = implicit || tls.as_deref() == Some("required");
    if !parsed.username().is_empty() && !encrypted && !allow_plaintext_auth {
        return Err("has a user name but no TLS: the password would travel in clear. Use \
                    smtps://… or add ?tls=required (or set mail.allow_plaintext_auth = true)"
            .to_owned());
    }
    let mut warnings = Vec::new();
    match (parsed.port(), implicit) {
        (Some(465), false) => warnings.push("port 465 usually expects implicit TLS (smtps://)".to_owned()),
        (Some(25 | 587), true) => {
            warnings.push("ports 25 and 587 usually expect STARTTLS (smtp://…?tls=required), not smtps://".to_owned())
        }
        _ => {}
    }
    Ok(warnings)
}

/// Where mail goes: SMTP when configured, else `.eml` files in `DATA_DIR/outbox`.
#[derive(Clone)]
pub enum Transport {
    /// lettre SMTP.
    Smtp(AsyncSmtpTransport<Tokio1Executor>),
    /// lettre file transport.
    File(AsyncFileTransport<Tokio1Executor>),
}

impl Transport {
    /// Builds the transport: SMTP at `smtp_url` (`ISTO_SMTP_URL`) when given, else `.eml`
    /// files in `outbox_dir` (created, owner only).
    ///
    /// # Errors
    /// [`MailError::Transport`] for a malformed SMTP URL or an unwritable directory.
    pub fn new(smtp_url: Option<&str>, outbox_dir: &Path, allow_plaintext_auth: bool) -> Result<Self, MailError> {
        match smtp_url {
            Some(url) => {
                check_smtp_url(url, allow_plaintext_auth)
                    .map_err(|m| MailError::Transport(format!("ISTO_SMTP_URL {m}")))?;
                AsyncSmtpTransport::<Tokio1Executor>::from_url(url)
                    .map(|b| Self::Smtp(b.timeout(Some(SMTP_COMMAND_TIMEOUT)).build()))
                    .map_err(|e| MailError::Transport(format!("ISTO_SMTP_URL: {e}")))
            }
            None => {
                let dir = outbox_dir.to_path_buf();
                std::fs::create_dir_all(&dir).map_err(|e| MailError::Transport(format!("{}: {e}", dir.display())))?;
                // The .eml files hold addresses and tokens: owner only.
                crate::crypto::set_mode(&dir, 0o700)
                    .map_err(|e| MailError::Transport(format!("{}: {e}", dir.display())))?;
                Ok(Self::File(AsyncFileTransport::new(dir)))
            }
        }
    }

    /// Sends one message.
    ///
    /// # Errors
    /// [`MailError::Transport`].
    pub async fn send(&self, m: Message) -> Result<(), MailError> {
        match self {
            Self::Smtp(t) => match tokio::time::timeout(SMTP_SEND_TIMEOUT, t.send(m)).await {
                Ok(r) => r.map(|_| ()).map_err(|e| smtp_error(&e)),
                Err(_) => Err(MailError::Smtp { kind: "timeout", code: None, permanent: false }),
            },
            Self::File(t) => t.send(m).await.map(|_| ()).map_err(|e| {
                MailError::Transport(format!("writing the .eml file: {}", std::io::Error::other(e).kind()))
            }),
        }
    }
}

/// The mail waiting in the outbox (see [`Outbox::backlog`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backlog {
    /// Jobs in the outbox (queued, or waiting for a retry).
    pub jobs: u64,
    /// Age of the oldest job, seconds (0 when there is none).
    pub oldest_age_secs: u64,
}

/// The durable mail queue as the worker and the services share it: the store and keys
/// the jobs live in, the clock, the `From` address, the worker's wake-up, and the send
/// lock.
#[derive(Clone)]
pub struct Outbox {
    /// The store holding the `outbox` table.
    pub store: Arc<Store>,
    /// Keys that open the sealed jobs.
    pub keys: Arc<KeyRing>,
    /// The clock (retry times).
    pub clock: Arc<dyn Clock>,
    /// The `From` mailbox (`mail.from`).
    pub from: String,
    wake: Arc<tokio::sync::Notify>,
    /// Held by the worker while it checks that a job still exists before sending it (never
    /// during the send), and by a withdrawal around its transaction: once a withdrawal
    /// has returned, no send of its intent's mail starts; a withdrawal never waits for
    /// an SMTP server.
    pub send_lock: Arc<tokio::sync::Mutex<()>>,
}

impl std::fmt::Debug for Outbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Outbox")
    }
}

impl Outbox {
    /// A handle over `store`'s outbox.
    pub fn new(store: Arc<Store>, keys: Arc<KeyRing>, clock: Arc<dyn Clock>, from: &str) -> Self {
        Self {
            store,
            keys,
            clock,
            from: from.to_owned(),
            wake: Arc::new(tokio::sync::Notify::new()),
            send_lock: Arc::new(tokio::sync::Mutex::new(())),
        }
    }

    /// Wakes the worker (after a commit that queued mail or made digests due).
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// The mail waiting in the outbox (issue 9 point 7, `/readyz`): how many jobs, and
    /// the age of the oldest in seconds (0 when empty). A row queued before `queued_at`
    /// was recorded counts from its next attempt time.
    ///
    /// # Errors
    /// Storage errors.
    pub fn backlog(&self) -> Result<Backlog, crate::store::StoreError> {
        let (jobs, oldest) = self.store.read(|rx| rx.outbox_backlog::<MailJob>())?;
        let now = self.clock.now().unix_timestamp();
        let oldest_age_secs = oldest
            .map(|(_, j)| u64::try_from(now.saturating_sub(j.queued_at.unwrap_or(j.next_attempt))).unwrap_or(0))
            .unwrap_or(0);
        Ok(Backlog { jobs, oldest_age_secs })
    }

    /// Resolves when [`Outbox::wake`] was called.
    pub async fn woken(&self) {
        self.wake.notified().await;
    }
}
