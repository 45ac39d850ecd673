//! E-mail transport (infrastructure): the composed message ([`MailContent`]), the sealed
//! outbox row ([`MailJob`]), the [`Outbox`] handle, the SMTP / file [`Transport`] and
//! the durable outbox worker. The services compose the messages (in UTF-8, with RFC 8058
//! `List-Unsubscribe`, PROTOCOL.md §4.4–4.5) from the texts of their language
//! ([`texts`]) and queue them sealed in the same transaction as the state change that
//! caused them; the worker sends and then deletes them, so an outage loses no mail.
//!
//! Errors: a fallible item here fails with storage errors (and key errors where it opens
//! a sealed value) unless its `# Errors` says more.

mod hello;
mod smtp;
pub mod worker;

pub use smtp::{SmtpServer, TlsMode};

// `MailText` (from `assets/i18n/mail/<lang>.toml`, by build.rs) and
// `pub fn texts(lang: &str) -> &'static MailText` (`sk`, `cs`; anything else is English).
include!(concat!(env!("OUT_DIR"), "/mail.rs"));

use crate::clock::Clock;
use crate::crypto::{KeyRing, Sealed};
use crate::store::Store;
use lettre::message::header::{self, ContentType, HeaderName, HeaderValue};
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
    /// The `Message-ID`, fixed when queued, so a message sent again after a crash is
    /// recognisably the same one.
    #[serde(default)]
    pub message_id: Option<String>,
    /// When the job was queued, unix seconds (the oldest-message age of `/readyz`).
    #[serde(default)]
    pub queued_at: Option<i64>,
}

impl MailJob {
    /// Seals `content` into a job due at once; `domain` (the EHLO name) goes into the
    /// `Message-ID`.
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

/// A mail failure. Messages never include the recipient, the body or the SMTP server's
/// reply text (which often quotes the address): only the kind, the phase and the reply
/// code.
#[derive(Debug, thiserror::Error)]
pub enum MailError {
    /// The From or To address does not parse.
    #[error("bad address in {0}")]
    Address(&'static str),
    /// Building the message failed.
    #[error("cannot build message: {0}")]
    Build(String),
    /// The SMTP server or the connection to it failed.
    #[error("SMTP {kind} in phase {}{}", phase.as_str(), code.as_ref().map(|c| format!(" (reply code {c})")).unwrap_or_default())]
    Smtp {
        /// What failed, in words (`timeout`, `permanent rejection`, …).
        kind: &'static str,
        /// Where in the conversation it failed (as far as it can be told).
        phase: Phase,
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

    /// The SMTP phase of the failure (`Phase::Unknown` for non-SMTP failures).
    pub fn phase(&self) -> Phase {
        match self {
            Self::Smtp { phase, .. } => *phase,
            _ => Phase::Unknown,
        }
    }
}

/// The step of an SMTP conversation, named in log lines. Where lettre's error cannot
/// tell two steps apart the phase says so (`TlsOrGreeting`, `ConnectOrTls`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Resolving the host and opening the TCP connection.
    Connect,
    /// The TLS handshake (implicit TLS, or after `STARTTLS`, with the second EHLO).
    Tls,
    /// The server's greeting and the reply to EHLO.
    Greeting,
    /// Implicit TLS: the handshake or the greeting after it (lettre does both in one step).
    TlsOrGreeting,
    /// Implicit TLS: the TCP connection or the handshake (lettre reports both alike).
    ConnectOrTls,
    /// `AUTH`.
    Auth,
    /// `MAIL FROM`.
    Mail,
    /// `RCPT TO`.
    Rcpt,
    /// `DATA` and the message.
    Data,
    /// Cannot be told.
    Unknown,
}

impl Phase {
    /// The phase as log lines write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Connect => "connect",
            Self::Tls => "tls",
            Self::Greeting => "greeting/ehlo",
            Self::TlsOrGreeting => "tls-or-greeting",
            Self::ConnectOrTls => "connect-or-tls",
            Self::Auth => "auth",
            Self::Mail => "mail",
            Self::Rcpt => "rcpt",
            Self::Data => "data",
            Self::Unknown => "unknown",
        }
    }
}

/// A failure of lettre in `phase`, described by kind and reply code only.
fn smtp_error(e: &lettre::transport::smtp::Error, phase: Phase) -> MailError {
    let kinds = [
        (e.is_permanent(), "permanent rejection"),
        (e.is_transient(), "temporary failure"),
        (e.is_timeout(), "timeout"),
        (e.is_tls(), "TLS failure"),
        (e.is_response(), "bad reply"),
        (e.is_client(), "refused by isto"),
    ];
    let kind = kinds.into_iter().find(|(is, _)| *is).map_or("connection failure", |(_, k)| k);
    MailError::Smtp { kind, phase, code: e.status().map(|c| c.to_string()), permanent: e.is_permanent() }
}

/// A failure of `kind` in `phase` without a reply code, worth retrying.
fn failed(kind: &'static str, phase: Phase) -> MailError {
    MailError::Smtp { kind, phase, code: None, permanent: false }
}

/// Builds the RFC 5322 message for `content`, with the RFC 8058 one-click
/// `List-Unsubscribe` headers.
///
/// # Errors
/// [`MailError::Address`], [`MailError::Build`].
pub fn build_message(from: &str, content: &MailContent, message_id: Option<&str>) -> Result<Message, MailError> {
    let list = HeaderName::new_from_ascii_str;
    let from: Mailbox = from.parse().map_err(|_| MailError::Address("mail.from"))?;
    let to: Mailbox = content.to.parse().map_err(|_| MailError::Address("recipient"))?;
    Message::builder()
        .message_id(message_id.map(str::to_owned))
        .from(from)
        .to(to)
        .subject(content.subject.clone())
        .raw_header(HeaderValue::new(list("List-Unsubscribe"), format!("<{}>", content.unsubscribe_url)))
        .raw_header(HeaderValue::new(list("List-Unsubscribe-Post"), "List-Unsubscribe=One-Click".to_owned()))
        .header(header::MIME_VERSION_1_0)
        .multipart(
            MultiPart::mixed()
                .singlepart(SinglePart::builder().header(ContentType::TEXT_PLAIN).body(content.text.clone())),
        )
        .map_err(|e| MailError::Build(e.to_string()))
}

/// Default longest wait for one SMTP step (`mail.smtp_timeout_secs`).
pub const SMTP_COMMAND_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);

pub use crate::config::check_smtp_url;

/// Where mail goes: SMTP when configured, else `.eml` files in `DATA_DIR/outbox`.
#[derive(Clone)]
pub enum Transport {
    /// An SMTP server, one conversation per message (no pool: a stuck connection holds
    /// up only its own message).
    Smtp(Arc<SmtpServer>),
    /// lettre file transport.
    File(AsyncFileTransport<Tokio1Executor>),
}

impl Transport {
    /// Builds the transport: SMTP at `smtp_url` (`ISTO_SMTP_URL`) when given, else `.eml`
    /// files in `outbox_dir` (created, owner only); each SMTP step bounded by
    /// `step_timeout` and the whole conversation by three times that.
    ///
    /// # Errors
    /// [`MailError::Transport`] for a malformed SMTP URL or an unwritable directory.
    pub fn with_timeout(
        smtp_url: Option<&str>,
        outbox_dir: &Path,
        allow_plaintext_auth: bool,
        step_timeout: std::time::Duration,
    ) -> Result<Self, MailError> {
        match smtp_url {
            Some(url) => {
                check_smtp_url(url, allow_plaintext_auth)
                    .map_err(|m| MailError::Transport(format!("ISTO_SMTP_URL {m}")))?;
                AsyncSmtpTransport::<Tokio1Executor>::from_url(url)
                    .map_err(|e| MailError::Transport(format!("ISTO_SMTP_URL: {e}")))?;
                SmtpServer::parse(url, allow_plaintext_auth, step_timeout)
                    .map(|s| Self::Smtp(Arc::new(s)))
                    .map_err(|m| MailError::Transport(format!("ISTO_SMTP_URL {m}")))
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

    /// The SMTP server, for log lines (`None` for the file transport).
    pub fn smtp(&self) -> Option<&SmtpServer> {
        match self {
            Self::Smtp(s) => Some(s),
            Self::File(_) => None,
        }
    }

    /// Sends one message.
    ///
    /// # Errors
    /// [`MailError::Smtp`] (kind, [`Phase`], reply code), [`MailError::Transport`].
    pub async fn send(&self, m: Message) -> Result<(), MailError> {
        match self {
            Self::Smtp(s) => s.send(&m).await,
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
    /// Messages dropped after a permanent refusal (5xx) since the store was created.
    pub dropped: u64,
}

/// The durable mail queue as the worker and the services share it.
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
    /// Held by the worker while it checks that a job still exists (never during the
    /// send) and by a withdrawal around its transaction: once a withdrawal has returned,
    /// no send of its intent's mail starts, and it never waits for an SMTP server.
    pub send_lock: Arc<tokio::sync::Mutex<()>>,
    /// Half the first retry delay, seconds (`mail.retry_base_secs`, default
    /// [`worker::RETRY_BASE_SECS`]): attempt `n` failed → retried `base × 2^n` s later.
    pub retry_base_secs: u64,
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
            retry_base_secs: worker::RETRY_BASE_SECS,
        }
    }

    /// Wakes the worker (after a commit that queued mail or made digests due).
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// The mail waiting in the outbox (`/readyz`), in one read. A row without `queued_at`
    /// counts from its next attempt time.
    pub fn backlog(&self) -> Result<Backlog, crate::store::StoreError> {
        use crate::store::Reads as _;
        let (jobs, oldest, dropped) = self.store.read(|rx| {
            let (jobs, oldest) = rx.outbox_backlog::<MailJob>()?;
            Ok::<_, crate::store::StoreError>((jobs, oldest, rx.mail_dropped()?))
        })?;
        let now = self.clock.now().unix_timestamp();
        let oldest_age_secs = oldest
            .map(|(_, j)| u64::try_from(now.saturating_sub(j.queued_at.unwrap_or(j.next_attempt))).unwrap_or(0))
            .unwrap_or(0);
        Ok(Backlog { jobs, oldest_age_secs, dropped })
    }

    /// Resolves when [`Outbox::wake`] was called.
    pub async fn woken(&self) {
        self.wake.notified().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_settings_mailbox_check_is_no_looser_than_the_transport() {
        let samples = [
            "Holder <noreply@holder.example>",
            "noreply@holder.example",
            "\"Holder, s.r.o.\" <a.b+c@x.sk>",
            "isto <noreply@localhost>",
            "Držiteľ <noreply@držiteľ.sk>",
            "a!#$%&'*+-/=?^_`{|}~@x.sk",
            "Holder <a@b.sk> ",
            "x <y@z-1.example>",
        ];
        for s in samples {
            assert!(crate::config::mailbox_address(s).is_some(), "{s:?}");
            assert!(is_mailbox(s), "the settings accept {s:?}, the transport does not");
        }
    }

    #[test]
    fn backlog_counts_waiting_mail_its_oldest_age_and_drops() {
        let d = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(&d.path().join("s.redb")).unwrap());
        let clock =
            Arc::new(crate::clock::ManualClock::new(crate::clock::parse_rfc3339("2026-12-01T10:00:00Z").unwrap()));
        let keys = Arc::new(KeyRing::ephemeral());
        let outbox = Outbox::new(store.clone(), keys.clone(), clock.clone(), "isto <noreply@localhost>");
        assert_eq!(outbox.backlog().unwrap(), Backlog { jobs: 0, oldest_age_secs: 0, dropped: 0 });
        let content = MailContent {
            to: "a@example.com".into(),
            subject: "s".into(),
            text: "t".into(),
            unsubscribe_url: "https://holder.example/unsubscribe/x".into(),
        };
        let now = clock.now().unix_timestamp();
        let job = |at| MailJob::seal(&keys, None, &content, at, "holder.example").unwrap();
        let (a, _) = store
            .write(|tx| {
                Ok::<_, crate::store::StoreError>((tx.enqueue_mail(&job(now - 90))?, tx.enqueue_mail(&job(now - 10))?))
            })
            .unwrap();
        assert_eq!(outbox.backlog().unwrap(), Backlog { jobs: 2, oldest_age_secs: 90, dropped: 0 });
        store.write(|tx| tx.drop_mail(a)).unwrap();
        assert_eq!(outbox.backlog().unwrap(), Backlog { jobs: 1, oldest_age_secs: 10, dropped: 1 });
    }

    #[test]
    fn errors_name_kind_phase_and_code_only() {
        let e = MailError::Smtp {
            kind: "temporary failure",
            phase: Phase::Rcpt,
            code: Some("451".into()),
            permanent: false,
        };
        assert_eq!(e.to_string(), "SMTP temporary failure in phase rcpt (reply code 451)");
        assert!(!e.is_permanent());
        assert_eq!(failed("timeout", Phase::Greeting).to_string(), "SMTP timeout in phase greeting/ehlo");
        assert_eq!(MailError::Address("recipient").phase(), Phase::Unknown);
    }
}
