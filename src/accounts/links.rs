//! One-time e-mail links: sign-in links and sign-up confirmations, with the per-address
//! mail throttle (only the hash of a link token is stored).

use super::*;

/// Outcome of a request for an account e-mail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MailOutcome {
    /// A message was queued.
    Queued,
    /// Nothing to send (no such account, or it is disabled); the page answers the same.
    Nothing,
    /// This address got too many account e-mails lately; nothing queued.
    Throttled,
}

/// Queues a one-time sign-in link (`/signin/link/{token}`, 15 min, single use) for the
/// enabled account of `email`, if any. Counts against the address's mail limit either
/// way, so the answer never tells. `next`: a checked relative path.
///
/// # Errors
/// [`AccountError::Input`] for a malformed address; storage and key errors.
pub fn request_signin_link(base: &Base, email: &str, next: &str, lang: &str) -> Result<MailOutcome> {
    let email = checked_email(email)?;
    let now = base.clock().now();
    let hash = email_key(base.keys(), &email);
    let token = crypto::new_token(TOKEN_BYTES);
    let url = format!("{}/signin/link/{}", base.settings().public_url.base, token.expose());
    let content = mail::signin_link(base, lang, &email, &url, false);
    mail_limited(base, &hash, now, |tx| {
        let Some(account) = account_by_hash(tx, &hash)?.filter(|a| !a.disabled) else {
            return Ok(MailOutcome::Nothing);
        };
        put_signin_link(tx, now, &account, &token, next)?;
        enqueue(base, tx, &content)?;
        Ok(MailOutcome::Queued)
    })
}

/// Runs `queue` in one write transaction unless the address `email_hash` got its
/// [`MAILS_PER_ADDRESS_PER_HOUR`] (counting this request); wakes the outbox when it
/// queued a message.
fn mail_limited(
    base: &Base,
    email_hash: &str,
    now: OffsetDateTime,
    queue: impl FnOnce(&mut Tx<'_>) -> Result<MailOutcome>,
) -> Result<MailOutcome> {
    let out = base.store().write(|tx| -> Result<MailOutcome> {
        if !throttle_take(tx, &mail_throttle_key(email_hash), now, 3600, MAILS_PER_ADDRESS_PER_HOUR)? {
            return Ok(MailOutcome::Throttled);
        }
        queue(tx)
    })?;
    if out == MailOutcome::Queued {
        base.outbox().wake();
    }
    Ok(out)
}

pub(super) fn put_signin_link(
    tx: &mut Tx<'_>,
    now: OffsetDateTime,
    account: &Account,
    token: &Secret,
    next: &str,
) -> Result<()> {
    let rec = LinkRecord {
        kind: LinkKind::Signin,
        account_id: Some(account.id.clone()),
        email: None,
        email_hash: account.email_hash.clone(),
        password_hash: None,
        consent_version: None,
        consent_language: None,
        next: next.to_owned(),
        created_at: Stamp::of(now),
        expires_at: Stamp::of(now + time::Duration::seconds(SIGNIN_LINK_TTL_SECS)),
    };
    tx.put_record(Ns::SignInLink, &link_key(LinkKind::Signin, token.expose()), &rec)?;
    Ok(())
}

/// A sign-up request (the sign-up form, after its checks).
#[derive(Clone)]
pub struct SignupRequest {
    /// The address typed (validated again here).
    pub email: String,
    /// argon2id PHC string of the chosen password, if any.
    pub password_hash: Option<String>,
    /// Language of the consent text shown (and of the e-mail).
    pub lang: String,
    /// Where to go after the confirmation (a checked relative path).
    pub next: String,
}

/// Sign-up through double opt-in: queues a confirmation link (`/signup/confirm/{token}`,
/// 72 h) — or, for an address with an account, a "you already have an account" e-mail
/// with a sign-in link.
///
/// # Errors
/// [`AccountError::Input`] for a malformed address; storage and key errors.
pub fn request_signup(base: &Base, req: SignupRequest) -> Result<MailOutcome> {
    let email = checked_email(&req.email)?;
    let now = base.clock().now();
    let hash = email_key(base.keys(), &email);
    let text = base.consent().get(&req.lang);
    let token = crypto::new_token(TOKEN_BYTES);
    let url_base = &base.settings().public_url.base;
    let confirm_url = format!("{url_base}/signup/confirm/{}", token.expose());
    let signin_url = format!("{url_base}/signin/link/{}", token.expose());
    mail_limited(base, &hash, now, |tx| {
        match account_by_hash(tx, &hash)? {
            Some(a) if a.disabled => return Ok(MailOutcome::Nothing),
            Some(a) => {
                put_signin_link(tx, now, &a, &token, &req.next)?;
                enqueue(base, tx, &mail::signin_link(base, &req.lang, &email, &signin_url, true))?;
            }
            None => {
                let rec = LinkRecord {
                    kind: LinkKind::Signup,
                    account_id: None,
                    email: Some(base.keys().seal_str(&email)?),
                    email_hash: hash.clone(),
                    password_hash: req.password_hash.clone(),
                    consent_version: Some(text.version.clone()),
                    consent_language: Some(text.language.clone()),
                    next: req.next.clone(),
                    created_at: Stamp::of(now),
                    expires_at: Stamp::of(now + time::Duration::seconds(SIGNUP_LINK_TTL_SECS)),
                };
                tx.put_record(Ns::SignInLink, &link_key(LinkKind::Signup, token.expose()), &rec)?;
                enqueue(base, tx, &mail::signup_confirmation(base, &req.lang, &email, &confirm_url))?;
            }
        }
        Ok(MailOutcome::Queued)
    })
}

/// Whether `token` names a usable one-time link of `kind` (unused, unexpired). Never
/// changes state.
pub fn link_usable(base: &Base, kind: LinkKind, token: &str) -> Result<bool> {
    let Some(key) = token_key(kind, token) else { return Ok(false) };
    let now = base.clock().now();
    let rec = base.store().read(|rx| rx.record::<LinkRecord>(Ns::SignInLink, &key))?;
    Ok(rec.is_some_and(|r| usable(&r, kind, now)))
}

/// The store key of a presented link `token`; `None` for a token no link has (empty, or
/// over 200 bytes).
fn token_key(kind: LinkKind, token: &str) -> Option<String> {
    (!token.is_empty() && token.len() <= 200).then(|| link_key(kind, token))
}

fn usable(rec: &LinkRecord, kind: LinkKind, now: OffsetDateTime) -> bool {
    rec.kind == kind && !expired(rec.expires_at, now)
}

/// Deletes the link stored under `key` in `tx` (single use); the record if it was a
/// usable link of `kind`.
fn take_link(tx: &mut Tx<'_>, key: &str, kind: LinkKind, now: OffsetDateTime) -> Result<Option<LinkRecord>> {
    let Some(rec) = tx.record::<LinkRecord>(Ns::SignInLink, key)? else { return Ok(None) };
    tx.remove_record(Ns::SignInLink, key)?;
    Ok(Some(rec).filter(|r| usable(r, kind, now)))
}

/// What using a one-time link gives: the new session's cookie token and the `next`
/// stored with the link, or `None` when the link cannot be used.
pub type LinkUse = Result<Option<(Secret, String)>>;

/// Uses a sign-in link (POST): deletes it and starts a session; `None` when the link is
/// unusable or its account gone or disabled.
pub fn use_signin_link(base: &Base, token: &str) -> LinkUse {
    let Some(key) = token_key(LinkKind::Signin, token) else { return Ok(None) };
    let now = base.clock().now();
    base.store().write(|tx| -> Result<Option<(Secret, String)>> {
        let Some(rec) = take_link(tx, &key, LinkKind::Signin, now)? else { return Ok(None) };
        let Some(id) = rec.account_id else { return Ok(None) };
        if tx.record::<Account>(Ns::Account, &id)?.is_none_or(|a| a.disabled) {
            return Ok(None);
        }
        let session = start_session(tx, now, &id, "link")?;
        Ok(Some((session, rec.next)))
    })
}

/// Confirms a sign-up (POST): deletes the link, creates the buyer account (with the
/// consent text version) unless the address got one meanwhile, and starts a session.
/// `None` when the link is unusable or the account disabled.
pub fn confirm_signup(base: &Base, token: &str) -> LinkUse {
    let Some(key) = token_key(LinkKind::Signup, token) else { return Ok(None) };
    let now = base.clock().now();
    let out = base.store().write(|tx| -> Result<Option<(Secret, String, bool)>> {
        let Some(rec) = take_link(tx, &key, LinkKind::Signup, now)? else { return Ok(None) };
        // The person proved they read this mailbox: an account created meanwhile (a
        // second sign-up confirmed first) is simply signed in.
        let (id, created) = match account_by_hash(tx, &rec.email_hash)? {
            Some(a) if a.disabled => return Ok(None),
            Some(a) => (a.id, false),
            None => {
                let Some(email) = rec.email else { return Ok(None) };
                let a = Account {
                    password_hash: rec.password_hash,
                    consent_version: rec.consent_version,
                    consent_language: rec.consent_language,
                    consent_at: Some(Stamp::of(now)),
                    ..Account::new(email, rec.email_hash.clone(), ROLE_BUYER, now)
                };
                a.insert(tx)?;
                (a.id, true)
            }
        };
        let session = start_session(tx, now, &id, "signup")?;
        Ok(Some((session, rec.next, created)))
    })?;
    Ok(out.map(|(s, next, created)| {
        if created {
            tracing::info!("account created (sign-up confirmed)");
        }
        (s, next)
    }))
}
