//! The start of `isto serve` up to a holder that can serve: [`ServeError`],
//! [`open_holder`], [`Fresh`] and the mail transport the settings name.

use crate::clock::SystemClock;
use crate::config::Settings;
use crate::crypto::KeyRing;
use crate::state::AppState;
use crate::store::Store;
use std::sync::Arc;
use std::time::Duration;

/// A start-up failure, with what to do.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The data directory cannot be created.
    #[error("cannot create data directory {0}: {1}")]
    DataDir(String, std::io::Error),
    /// The store file cannot be opened at start: its path, and the cause (with a hint
    /// for another server holding it or a permission the user lacks).
    #[error("cannot open the store {0}: {1}{hint}", hint = open_hint(.1))]
    StoreOpen(String, crate::store::StoreError),
    /// The store exists but its sealing key does not.
    #[error("the sealing key {0} is missing but the store exists: restore the key from your backup (a new key could not open the sealed contacts and limits)")]
    MissingKey(String),
    /// The sealing key cannot be loaded or created.
    #[error(transparent)]
    Key(#[from] crate::crypto::CryptoError),
    /// The key ring is not this store's (a wrong or missing key file): the check says
    /// which file or key ids.
    #[error("{0}; isto did not start")]
    WrongKeys(#[from] crate::state::KeyCheckError),
    /// The active intents could not be loaded into the matching engine: the cause.
    #[error("cannot load the active intents into the matching engine: {0}; isto did not start")]
    Engine(String),
    /// Mail transport misconfigured.
    #[error(transparent)]
    Mail(#[from] crate::mail::MailError),
    /// The listen address cannot be bound.
    #[error("cannot listen on {0}: {1}; {hint}", hint = bind_hint(.1))]
    Bind(std::net::SocketAddr, std::io::Error),
    /// The admin socket cannot be created (`DATA_DIR/admin.sock`).
    #[error("cannot create the admin socket {0}: {1}{hint}", hint = socket_hint(.1))]
    AdminSocket(String, std::io::Error),
}

/// The hint of [`ServeError::StoreOpen`].
fn open_hint(e: &crate::store::StoreError) -> &'static str {
    if e.is_already_open() {
        " (is another `isto serve` running on this data directory?)"
    } else if e.is_permission_denied() {
        "; run `isto serve` as the data directory's owner (the packaged unit runs it as the user `isto`)"
    } else {
        ""
    }
}

impl ServeError {
    /// A short fixed phrase for the kind of failure (no path, no address), for the
    /// service manager's `STATUS=` ([`super::systemd::failed`]).
    pub fn kind(&self) -> &'static str {
        match self {
            ServeError::DataDir(..) => "cannot create the data directory",
            ServeError::StoreOpen(..) => "cannot open the store",
            ServeError::MissingKey(_) => "the sealing key is missing",
            ServeError::Key(_) => "cannot load the sealing key",
            ServeError::WrongKeys(_) => "the key files are not this store's",
            ServeError::Engine(_) => "cannot load the matching engine",
            ServeError::Mail(_) => "mail transport misconfigured",
            ServeError::Bind(..) => "cannot listen",
            ServeError::AdminSocket(..) => "cannot create the admin socket",
        }
    }
}

/// What to do when the listen address cannot be bound, by the error's kind.
fn bind_hint(e: &std::io::Error) -> &'static str {
    match e.kind() {
        std::io::ErrorKind::AddrInUse => {
            "another program (another `isto serve`?) uses that port: stop it, or choose another address with `listen` in the config, ISTO_LISTEN or --listen"
        }
        std::io::ErrorKind::PermissionDenied => {
            "ports below 1024 need CAP_NET_BIND_SERVICE: listen on a higher port behind a reverse proxy, or grant the capability (the book, \"Running under systemd\", section \"Ports below 1024\": /usr/share/doc/isto/book/operators/systemd.html with the package, docs/src/operators/systemd.md in the source)"
        }
        std::io::ErrorKind::AddrNotAvailable => {
            "no interface of this machine has that address: use 127.0.0.1, 0.0.0.0 or one of its own addresses (`listen`, ISTO_LISTEN or --listen)"
        }
        _ => "check `listen` in the config, ISTO_LISTEN or --listen",
    }
}

/// What to do when the admin socket cannot be bound (a Unix socket path has at most 107
/// bytes on Linux).
fn socket_hint(e: &std::io::Error) -> &'static str {
    match e.kind() {
        std::io::ErrorKind::InvalidInput => " (a Unix socket path has at most 107 bytes: choose a shorter data_dir)",
        _ => "",
    }
}

/// What one start of `isto serve` creates under the data directory, so that a start that
/// fails before it serves removes exactly that and nothing else (a failed start leaves no
/// new data directory, sealing key or store behind). Dropped while armed, it removes
/// those of its paths that exist now, files first; [`Fresh::keep`] disarms it once the
/// holder serves.
#[derive(Debug)]
pub(super) struct Fresh {
    made: Vec<std::path::PathBuf>,
    armed: bool,
}

impl Fresh {
    /// Notes, before anything is created, which of the paths a start may create do not
    /// exist yet: the data directory itself (then its topmost missing ancestor, as
    /// `create_dir_all` makes it), or else inside an existing one the store, the key
    /// files, the `keys/`, `index/` and `outbox/` directories.
    pub(super) fn survey(settings: &Settings) -> Self {
        let absent = |p: &std::path::Path| std::fs::symlink_metadata(p).is_err();
        let dir = &settings.data_dir;
        let made = if absent(dir) {
            let mut top = dir.clone();
            while let Some(parent) = top.parent().filter(|p| !p.as_os_str().is_empty() && absent(p)) {
                top = parent.to_path_buf();
            }
            vec![top]
        } else {
            let key = settings.key_path();
            let mut paths =
                vec![settings.store_path(), KeyRing::handle_key_path(&key), KeyRing::mac_key_path(&key), key.clone()];
            paths.extend(key.parent().map(std::path::Path::to_path_buf));
            paths.push(dir.join("index"));
            paths.push(settings.outbox_dir());
            paths.into_iter().filter(|p| absent(p)).collect()
        };
        Self { made, armed: true }
    }

    /// The start succeeded: keep everything.
    pub(super) fn keep(mut self) {
        self.armed = false;
    }
}

impl Drop for Fresh {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        for p in &self.made {
            let removed = match std::fs::symlink_metadata(p) {
                Ok(m) if m.is_dir() => std::fs::remove_dir_all(p),
                Ok(_) => std::fs::remove_file(p),
                Err(_) => continue,
            };
            match removed {
                Ok(()) => tracing::info!(path = %p.display(), "failed start: removed what it had created"),
                Err(e) => {
                    tracing::warn!(path = %p.display(), error = %e, "failed start: cannot remove what it had created")
                }
            }
        }
    }
}

/// Opens the holder's store and key ring under `settings.data_dir`, creating them on
/// first start. Returns the holder and whether the key was created.
///
/// # Errors
/// [`ServeError`].
pub fn open_holder(settings: Settings) -> Result<(AppState, bool), ServeError> {
    let dir = &settings.data_dir;
    if !dir.exists() {
        std::fs::create_dir_all(dir).map_err(|e| ServeError::DataDir(dir.display().to_string(), e))?;
        // Contacts, tokens in queued mail and keys live here: owner only.
        crate::crypto::set_mode(dir, 0o700).map_err(|e| ServeError::DataDir(dir.display().to_string(), e))?;
    }
    let store_path = settings.store_path();
    let on_redb = settings.store_postgres.is_none();
    if on_redb && store_path.exists() && !settings.key_path().exists() {
        // A new key would make every sealed contact and limit unreadable.
        return Err(ServeError::MissingKey(settings.key_path().display().to_string()));
    }
    let (keys, created) = KeyRing::load_or_create(&settings.key_path())?;
    let store =
        Store::open_at(&settings.store_location()).map_err(|e| ServeError::StoreOpen(settings.store_name(), e))?;
    if on_redb {
        crate::crypto::set_mode(&store_path, 0o600)
            .map_err(|e| ServeError::DataDir(store_path.display().to_string(), e))?;
    }
    crate::state::check_keys(&store, &keys, &settings.key_path())?;
    let index_dir = settings.data_dir.join("index");
    let state = AppState::with_index_dir(settings, store, keys, Arc::new(SystemClock), Some(index_dir));
    if let Some(e) = state.base.engine_failure() {
        return Err(ServeError::Engine(e.to_owned()));
    }
    Ok((state, created))
}

/// The mail transport `s` names — its SMTP server, or `.eml` files in `DATA_DIR/outbox`
/// (created, owner-only) — after `mail.from` is checked as the transport reads it.
pub(super) fn mail_transport(s: &Settings) -> Result<crate::mail::Transport, ServeError> {
    // The settings checked the address's syntax; the transport's parser decides.
    if !crate::mail::is_mailbox(&s.mail_from) {
        return Err(crate::mail::MailError::Address("mail.from").into());
    }
    Ok(crate::mail::Transport::with_timeout(
        s.smtp_url.as_deref(),
        &s.outbox_dir(),
        s.allow_plaintext_auth,
        Duration::from_secs(s.smtp_timeout_secs),
    )?
    .with_hello(&s.helo_name()))
}

/// Logs how the start went: a new sealing key (back it up) or the one loaded, and where
/// mail goes.
pub(super) fn log_start(s: &Settings, created_key: bool) {
    if created_key {
        tracing::warn!(path = %s.key_path().display(), "created a new sealing key; back it up: without it sealed contacts and limits cannot be read");
    } else {
        tracing::info!(path = %s.key_path().display(), "sealing key loaded");
    }
    match &s.smtp_url {
        Some(_) => tracing::info!("mail goes to the configured SMTP server (ISTO_SMTP_URL)"),
        None => {
            tracing::warn!(dir = %s.outbox_dir().display(), "no SMTP configured (ISTO_SMTP_URL): mail is written as .eml files")
        }
    }
}
