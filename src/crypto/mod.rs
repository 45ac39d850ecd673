//! Sealing at rest, secret tokens and their hashes, CSRF tokens.
//!
//! PROTOCOL.md §4.1 (intentCode ≥128 random bits, stored only as a hash) and §4.6 (contact
//! and hidden limit sealed with XChaCha20-Poly1305, key id stored with the ciphertext).
//! The key ring is a directory of 32-byte key files; the newest (`sealing.key`) is used
//! for sealing and every one (`sealing.key.<kid>`) for opening, so rotation
//! ([`KeyRing::rotate`], issue 11 point 2) keeps old ciphertexts readable until the old
//! key is retired ([`KeyRing::retire`]); the ring inside a running server is swapped in
//! place. Beside it, never rotated: `handle.key`, the root of the sellers' intent
//! handles and the e-mail index ([`handle`], PROTOCOL.md §2), and `mac.key`, the root of
//! every MAC (person keys, pseudonyms, CSRF tokens, derived tokens, keyed hashes),
//! written once from the then-current sealing key's MAC subkey so no MAC changed.

mod fingerprint;
pub mod handle;
pub mod password;

pub use fingerprint::{each_sealed, Fingerprints};
pub use handle::HandleKey;

use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine as _;
use chacha20poly1305::aead::{Aead, KeyInit};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use hmac::{Hmac, Mac};
use rand::RngCore;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use zeroize::Zeroizing;

/// A crypto failure. Messages never contain key material or plaintext.
#[derive(Debug, thiserror::Error)]
pub enum CryptoError {
    /// The key file could not be read or written.
    #[error("key file {path}: {source}")]
    KeyFile {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The key file is not 32 bytes (64 hex digits).
    #[error("key file {0} is not a 256-bit key (64 hex digits); restore it from backup")]
    BadKey(PathBuf),
    /// The ciphertext's key id is not in the key ring.
    #[error("no key with id {0} in the key ring; restore the key file from backup")]
    UnknownKey(String),
    /// Authentication failed: the ciphertext was altered or the key is wrong.
    #[error("sealed value failed authentication")]
    Open,
    /// Sealing failed (the reason says why); nothing sealed is stored.
    #[error("sealing failed: {0}")]
    Seal(&'static str),
    /// A key cannot be retired (the reason says why and what to do).
    #[error("{0}")]
    Retire(String),
    /// Password hashing failed (the message never contains the password).
    #[error("password hashing: {0}")]
    Hash(String),
}

/// A sealed value as stored: key id, 24-byte nonce and ciphertext, both base64url.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sealed {
    /// Key id (first 8 hex digits of SHA-256 of the key).
    pub kid: String,
    /// XChaCha20 nonce, base64url.
    pub nonce: String,
    /// Ciphertext with the Poly1305 tag, base64url.
    pub ct: String,
}

/// A string secret whose `Debug` and `Display` print `***` (STYLE.md habit 5).
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("***")
    }
}

impl Secret {
    /// The secret's text.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

struct Key {
    id: String,
    cipher: XChaCha20Poly1305,
    /// This key's own MAC subkey ("isto-mac-v1"): only for checking `hmac1:` hashes made
    /// under it before the ring had a [`MacRoot`].
    mac_key: Zeroizing<[u8; 32]>,
    /// The file it was read from (`None` for a ring made in memory).
    file: Option<PathBuf>,
}

/// The stable root of every MAC (person keys, seller pseudonyms, CSRF tokens, derived
/// refresh tokens, keyed hashes of client secrets): `keys/mac.key`, written once from the
/// MAC subkey of the sealing key that was current when the file first went missing, so
/// every MAC made before it existed stays the same. Never rotated: rotating it would
/// change every person key and pseudonym (issue 11 point 2).
struct MacRoot {
    /// The id of the sealing key it was derived from (the `<key id>` of `hmac1:` hashes).
    id: String,
    key: Zeroizing<[u8; 32]>,
}

/// What the ring knows of one sealing key, for `isto admin keys status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyInfo {
    /// The key id.
    pub kid: String,
    /// Whether it is the current (sealing) key.
    pub current: bool,
    /// The key's file (`None` for a ring made in memory).
    pub file: Option<PathBuf>,
    /// When the key was made, as far as its file's modification time tells (rotation
    /// keeps it when it moves the old key aside); `None` when unknown.
    pub created: Option<std::time::SystemTime>,
}

/// The key ring: seals with the newest key, opens with any; the MAC root and the handle
/// key. The sealing keys can be swapped while the ring is shared ([`KeyRing::rotate`],
/// [`KeyRing::retire`]): every call sees either the old list or the new one.
pub struct KeyRing {
    keys: std::sync::RwLock<Vec<Key>>,
    mac: MacRoot,
    handles: HandleKey,
    /// The current sealing key's file (`None` for a ring made in memory).
    path: Option<PathBuf>,
    /// Held while key files are changed.
    files: std::sync::Mutex<()>,
    /// When (unix ms) a running rotation of this ring last made a key or re-sealed a
    /// batch; 0 when none runs ([`KeyRing::rotation_step`]; `admin::keys` keeps it).
    rotation: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyRing").field("kids", &self.kids()).finish()
    }
}

fn key_id(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes)[..4])
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    let s = s.trim();
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

/// The MAC subkey of a sealing key: SHA-256("isto-mac-v1" ‖ key).
fn mac_subkey(key: &[u8]) -> Zeroizing<[u8; 32]> {
    let mut mac_key = Zeroizing::new([0u8; 32]);
    let derived = Sha256::new().chain_update(b"isto-mac-v1").chain_update(key).finalize();
    mac_key.copy_from_slice(&derived);
    mac_key
}

fn key_of(bytes: &[u8], file: Option<PathBuf>) -> Key {
    Key { id: key_id(bytes), cipher: XChaCha20Poly1305::new(bytes.into()), mac_key: mac_subkey(bytes), file }
}

/// File name of the MAC root, beside the sealing key.
pub const MAC_KEY_FILE: &str = "mac.key";

impl KeyRing {
    fn from_bytes(list: Vec<Zeroizing<Vec<u8>>>, handle_root: &[u8]) -> Self {
        let keys: Vec<Key> = list.iter().map(|b| key_of(b, None)).collect();
        let mac = match keys.first() {
            Some(k) => MacRoot { id: k.id.clone(), key: k.mac_key.clone() },
            None => MacRoot { id: String::new(), key: Zeroizing::new([0u8; 32]) },
        };
        Self::assemble(keys, mac, handle_root, None)
    }

    fn assemble(keys: Vec<Key>, mac: MacRoot, handle_root: &[u8], path: Option<PathBuf>) -> Self {
        Self {
            keys: std::sync::RwLock::new(keys),
            mac,
            handles: HandleKey::from_root(handle_root),
            path,
            files: std::sync::Mutex::new(()),
            rotation: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// The marker of a rotation running on this ring (unix ms of its last step, 0 for
    /// none): `isto admin keys rotate` through a server sets it, so that a second one is
    /// told that a rotation runs (issue 11 point 2, hardening). Only a marker: it guards
    /// no key material.
    pub fn rotation_step(&self) -> &std::sync::atomic::AtomicU64 {
        &self.rotation
    }

    fn sealing(&self) -> std::sync::RwLockReadGuard<'_, Vec<Key>> {
        self.keys.read().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A ring with one fresh random key (and a fresh handle key), for tests.
    pub fn ephemeral() -> Self {
        let mut b = Zeroizing::new(vec![0u8; 32]);
        rand::rng().fill_bytes(&mut b);
        let mut h = Zeroizing::new([0u8; 32]);
        rand::rng().fill_bytes(&mut h[..]);
        Self::from_bytes(vec![b], &h[..])
    }

    /// The path of the handle key beside the sealing key `path`: `handle.key` in the
    /// same directory.
    pub fn handle_key_path(path: &Path) -> PathBuf {
        path.with_file_name("handle.key")
    }

    /// The path of the MAC root beside the sealing key `path`: [`MAC_KEY_FILE`] in the
    /// same directory.
    pub fn mac_key_path(path: &Path) -> PathBuf {
        path.with_file_name(MAC_KEY_FILE)
    }

    /// Loads `path` (64 hex digits), creating it with a fresh key (mode 0600, parent
    /// 0700) when absent. Older keys kept beside it as `sealing.key.<kid>` stay usable
    /// for opening. The handle key ([`KeyRing::handle_key_path`], 64 hex digits) is read
    /// the same way and created (0600) when absent — also beside an existing sealing key,
    /// for a data directory made before handles existed; it is never rotated. The MAC
    /// root ([`KeyRing::mac_key_path`], `<key id>:<64 hex digits>`) is created when
    /// absent from the current sealing key's MAC subkey — for a data directory made
    /// before it existed, so every MAC stays what it was —; it is never rotated either.
    /// Returns the ring and whether the sealing key was created.
    ///
    /// # Errors
    /// [`CryptoError::KeyFile`] on I/O errors, [`CryptoError::BadKey`] on a malformed file.
    pub fn load_or_create(path: &Path) -> Result<(Self, bool), CryptoError> {
        let created = create_key_file(path)?;
        let handle_path = Self::handle_key_path(path);
        create_key_file(&handle_path)?;
        let handle_root = read_key(&handle_path)?;
        let current = read_key(path)?;
        let mut keys = vec![key_of(&current, Some(path.to_owned()))];
        for p in old_key_files(path)? {
            let k = key_of(&read_key(&p)?, Some(p));
            // A rotation cut short may leave the current key also under its old name.
            if !keys.iter().any(|x| x.id == k.id) {
                keys.push(k);
            }
        }
        let mac_path = Self::mac_key_path(path);
        if !mac_path.exists() {
            let text = Zeroizing::new(format!("{}:{}", keys[0].id, hex(&keys[0].mac_key[..])));
            write_atomic(&mac_path, text.as_bytes())
                .map_err(|source| CryptoError::KeyFile { path: mac_path.clone(), source })?;
        }
        let mac = read_mac_root(&mac_path)?;
        Ok((Self::assemble(keys, mac, &handle_root, Some(path.to_owned())), created))
    }

    /// The sellers' intent handles ([`handle`]): made and opened with the handle key.
    pub fn handles(&self) -> &HandleKey {
        &self.handles
    }

    /// The keyed, rotation-proof lookup hash of `value` for an index of kind `kind`
    /// ([`HandleKey::index_hash`]): `"{kind}#…"`, never the unkeyed [`token_hash`].
    pub fn index_hash(&self, kind: &str, value: &str) -> String {
        self.handles.index_hash(kind, value)
    }

    /// Id of the key used for sealing (empty when the ring has none).
    pub fn current_kid(&self) -> String {
        self.sealing().first().map(|k| k.id.clone()).unwrap_or_default()
    }

    /// Ids of every key of the ring, the current (sealing) key first.
    pub fn kids(&self) -> Vec<String> {
        self.sealing().iter().map(|k| k.id.clone()).collect()
    }

    /// Every sealing key with its file and creation time, the current key first.
    pub fn key_info(&self) -> Vec<KeyInfo> {
        self.sealing()
            .iter()
            .enumerate()
            .map(|(i, k)| KeyInfo {
                kid: k.id.clone(),
                current: i == 0,
                file: k.file.clone(),
                created: k.file.as_ref().and_then(|f| std::fs::metadata(f).ok()).and_then(|m| m.modified().ok()),
            })
            .collect()
    }

    /// Makes a new sealing key current (issue 11 point 2): the current key is copied to
    /// `sealing.key.<kid>` (keeping its modification time, so its creation date stays
    /// known), then a fresh key is written to a temp file (0600, synced) and renamed over
    /// `sealing.key`, the directory synced — and only then does this ring seal with it.
    /// Every older key still opens. The MAC root and the handle key are not touched.
    /// Returns the new key id.
    ///
    /// # Errors
    /// [`CryptoError::Seal`] for a ring made in memory (no key files); I/O errors as
    /// [`CryptoError::KeyFile`] (then the ring is unchanged).
    pub fn rotate(&self) -> Result<String, CryptoError> {
        let path = self.path.as_deref().ok_or(CryptoError::Seal("this key ring has no key files to rotate"))?;
        let _files = self.files.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let io = |p: &Path| {
            let p = p.to_owned();
            move |source| CryptoError::KeyFile { path: p, source }
        };
        let old = read_key(path)?;
        let old_id = key_id(&old);
        let archived = old_key_path(path, &old_id);
        if !archived.exists() {
            write_atomic(&archived, hex(&old).as_bytes()).map_err(io(&archived))?;
        }
        if let Ok(t) = std::fs::metadata(path).and_then(|m| m.modified()) {
            let _ = std::fs::File::options().write(true).open(&archived).and_then(|f| f.set_modified(t));
        }
        let mut b = Zeroizing::new(vec![0u8; 32]);
        rand::rng().fill_bytes(&mut b);
        let text = Zeroizing::new(hex(&b));
        write_atomic(path, text.as_bytes()).map_err(io(path))?;
        let new = key_of(&b, Some(path.to_owned()));
        let kid = new.id.clone();
        let mut keys = self.keys.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        for k in keys.iter_mut().filter(|k| k.id == old_id) {
            k.file = Some(archived.clone());
        }
        keys.insert(0, new);
        Ok(kid)
    }

    /// Removes the old sealing key `kid` from the ring and deletes its file. The caller
    /// checks first that no stored value is sealed with it (`isto admin keys retire`).
    ///
    /// # Errors
    /// [`CryptoError::Retire`] when `kid` is the current key or not in the ring; I/O
    /// errors deleting the file as [`CryptoError::KeyFile`] (the ring is then unchanged).
    pub fn retire(&self, kid: &str) -> Result<(), CryptoError> {
        let _files = self.files.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut keys = self.keys.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some(i) = keys.iter().position(|k| k.id == kid) else {
            return Err(CryptoError::Retire(format!(
                "no key with id {kid:?} in the key ring (it has {})",
                keys.iter().map(|k| k.id.as_str()).collect::<Vec<_>>().join(", ")
            )));
        };
        if i == 0 {
            return Err(CryptoError::Retire(format!(
                "key {kid} is the current sealing key; rotate first (`isto admin keys rotate`), then retire it"
            )));
        }
        if let Some(f) = &keys[i].file {
            match std::fs::remove_file(f) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => return Err(CryptoError::KeyFile { path: f.clone(), source }),
            }
            if let Some(dir) = f.parent() {
                let _ = std::fs::File::open(dir).and_then(|d| d.sync_all());
            }
        }
        keys.remove(i);
        Ok(())
    }

    /// Seals `plaintext` with the current key and a fresh random nonce.
    ///
    /// # Errors
    /// [`CryptoError::Seal`] when the ring has no key or the cipher refuses the input
    /// (never an empty ciphertext).
    pub fn seal(&self, plaintext: &[u8]) -> Result<Sealed, CryptoError> {
        let keys = self.sealing();
        let key = keys.first().ok_or(CryptoError::Seal("the key ring has no key"))?;
        let mut nonce = [0u8; 24];
        rand::rng().fill_bytes(&mut nonce);
        let ct = key
            .cipher
            .encrypt(XNonce::from_slice(&nonce), plaintext)
            .map_err(|_| CryptoError::Seal("the cipher refused the plaintext"))?;
        Ok(Sealed { kid: key.id.clone(), nonce: B64.encode(nonce), ct: B64.encode(ct) })
    }

    /// Opens a value sealed by any key of the ring.
    ///
    /// # Errors
    /// [`CryptoError::UnknownKey`] when the key id is not in the ring, [`CryptoError::Open`]
    /// when authentication fails.
    pub fn open(&self, sealed: &Sealed) -> Result<Zeroizing<Vec<u8>>, CryptoError> {
        #[cfg(test)]
        OPENED.with(|n| n.set(n.get() + 1));
        let keys = self.sealing();
        let key =
            keys.iter().find(|k| k.id == sealed.kid).ok_or_else(|| CryptoError::UnknownKey(sealed.kid.clone()))?;
        let nonce = B64.decode(&sealed.nonce).map_err(|_| CryptoError::Open)?;
        let ct = B64.decode(&sealed.ct).map_err(|_| CryptoError::Open)?;
        if nonce.len() != 24 {
            return Err(CryptoError::Open);
        }
        key.cipher.decrypt(XNonce::from_slice(&nonce), ct.as_slice()).map(Zeroizing::new).map_err(|_| CryptoError::Open)
    }

    /// Seals a UTF-8 string.
    ///
    /// # Errors
    /// As [`KeyRing::seal`].
    pub fn seal_str(&self, s: &str) -> Result<Sealed, CryptoError> {
        self.seal(s.as_bytes())
    }

    /// Opens a sealed UTF-8 string.
    ///
    /// # Errors
    /// As [`KeyRing::open`]; [`CryptoError::Open`] when the plaintext is not UTF-8.
    pub fn open_str(&self, sealed: &Sealed) -> Result<Secret, CryptoError> {
        let b = self.open(sealed)?;
        String::from_utf8(b.to_vec()).map(Secret).map_err(|_| CryptoError::Open)
    }

    /// HMAC-SHA-256 under the MAC root (never rotated), base64url. Used for CSRF tokens,
    /// person keys and seller pseudonyms (keyed hashes).
    pub fn mac(&self, parts: &[&[u8]]) -> String {
        if self.sealing().is_empty() {
            return String::new();
        }
        mac_with(&self.mac.key, parts)
    }

    /// A secret token derived from `input` under the MAC root: base64url HMAC-SHA-256
    /// of (`"derive"`, `purpose`, `input`), 43 characters. The same input gives the same
    /// token again, so a value can be answered twice without being stored (the OAuth
    /// refresh grace window); `None` when the ring has no key.
    pub fn derive_token(&self, purpose: &str, input: &str) -> Option<Secret> {
        if self.sealing().is_empty() {
            return None;
        }
        Some(Secret(self.mac(&[b"derive", purpose.as_bytes(), input.as_bytes()])))
    }

    /// A keyed hash of a secret (an OAuth client secret) for storage:
    /// `hmac1:<MAC key id>:<base64url HMAC-SHA-256 of (kind, secret)>` under the MAC
    /// root. Checked by [`KeyRing::keyed_hash_matches`]; `None` when the ring has no key.
    pub fn keyed_hash(&self, kind: &str, secret: &str) -> Option<String> {
        if self.sealing().is_empty() {
            return None;
        }
        Some(format!(
            "hmac1:{}:{}",
            self.mac.id,
            mac_with(&self.mac.key, &[b"keyed-hash", kind.as_bytes(), secret.as_bytes()])
        ))
    }

    /// Whether `stored` (from [`KeyRing::keyed_hash`]) is the keyed hash of `secret`:
    /// under the MAC root when it names the root's id, else under the MAC subkey of the
    /// sealing key it names (a hash made before the ring had a MAC root); constant-time
    /// comparison, `false` for another shape or an unknown key.
    pub fn keyed_hash_matches(&self, stored: &str, kind: &str, secret: &str) -> bool {
        let Some(rest) = stored.strip_prefix("hmac1:") else { return false };
        let Some((kid, want)) = rest.split_once(':') else { return false };
        let parts: [&[u8]; 3] = [b"keyed-hash", kind.as_bytes(), secret.as_bytes()];
        let got = if !self.mac.id.is_empty() && kid == self.mac.id {
            mac_with(&self.mac.key, &parts)
        } else {
            let keys = self.sealing();
            let Some(key) = keys.iter().find(|k| k.id == kid) else { return false };
            mac_with(&key.mac_key, &parts)
        };
        subtle::ConstantTimeEq::ct_eq(got.as_bytes(), want.as_bytes()).into()
    }

    /// Makes a CSRF token for a form: `<unix seconds>.<mac>`, bound to `purpose` (form
    /// name) and `binding` (the URL token of the page). Valid for two hours.
    pub fn csrf_token(&self, purpose: &str, binding: &str, now_unix: i64) -> String {
        let ts = now_unix.to_string();
        format!("{ts}.{}", self.mac(&[b"csrf", purpose.as_bytes(), binding.as_bytes(), ts.as_bytes()]))
    }

    /// Checks a CSRF token made by [`KeyRing::csrf_token`] (constant-time comparison).
    pub fn csrf_valid(&self, token: &str, purpose: &str, binding: &str, now_unix: i64) -> bool {
        let Some((ts, mac)) = token.split_once('.') else { return false };
        let Ok(t) = ts.parse::<i64>() else { return false };
        if now_unix < t - 60 || now_unix - t > 7200 {
            return false;
        }
        let want = self.mac(&[b"csrf", purpose.as_bytes(), binding.as_bytes(), ts.as_bytes()]);
        subtle::ConstantTimeEq::ct_eq(want.as_bytes(), mac.as_bytes()).into()
    }
}

/// The old sealing keys' files beside `path`: `sealing.key.<suffix>`, sorted.
fn old_key_files(path: &Path) -> Result<Vec<PathBuf>, CryptoError> {
    let io = |source| CryptoError::KeyFile { path: path.to_owned(), source };
    let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) else {
        return Ok(Vec::new());
    };
    let prefix = format!("{name}.");
    let mut old: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(&prefix)))
        .collect();
    old.sort();
    Ok(old)
}

/// Where rotation keeps the old key `kid`: `sealing.key.<kid>` beside `path`.
fn old_key_path(path: &Path, kid: &str) -> PathBuf {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("sealing.key");
    path.with_file_name(format!("{name}.{kid}"))
}

fn read_mac_root(p: &Path) -> Result<MacRoot, CryptoError> {
    let text = Zeroizing::new(
        std::fs::read_to_string(p).map_err(|source| CryptoError::KeyFile { path: p.to_owned(), source })?,
    );
    let bad = || CryptoError::BadKey(p.to_owned());
    let (id, hexed) = text.trim().split_once(':').ok_or_else(bad)?;
    let bytes = Zeroizing::new(unhex(hexed).filter(|b| b.len() == 32).ok_or_else(bad)?);
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(bad());
    }
    let mut key = Zeroizing::new([0u8; 32]);
    key.copy_from_slice(&bytes);
    Ok(MacRoot { id: id.to_owned(), key })
}

/// Writes `bytes` to `path` atomically: a temp file beside it (`.<name>.tmp`, 0600,
/// synced), renamed over `path`, the directory synced.
fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("key");
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    match std::fs::remove_file(&tmp) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    write_private(&tmp, bytes)?;
    std::fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent() {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// HMAC-SHA-256 of length-prefixed `parts` under `key`, base64url.
fn mac_with(key: &[u8; 32], parts: &[&[u8]]) -> String {
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(&key[..]).unwrap_or_else(|_| unreachable_mac());
    for p in parts {
        m.update(&(p.len() as u64).to_be_bytes());
        m.update(p);
    }
    B64.encode(m.finalize().into_bytes())
}

fn unreachable_mac() -> Hmac<Sha256> {
    // HMAC accepts keys of any length; this branch is never taken.
    <Hmac<Sha256> as Mac>::new_from_slice(&[0u8; 32]).unwrap_or_else(|_| unreachable_mac())
}

/// Creates the key file `path` with a fresh random key (mode 0600, parent 0700) unless
/// it exists; whether it was created.
fn create_key_file(path: &Path) -> Result<bool, CryptoError> {
    let io = |source| CryptoError::KeyFile { path: path.to_owned(), source };
    if path.exists() {
        return Ok(false);
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(io)?;
    set_mode(dir, 0o700).map_err(io)?;
    let mut b = Zeroizing::new([0u8; 32]);
    rand::rng().fill_bytes(&mut b[..]);
    write_private(path, hex(&b[..]).as_bytes()).map_err(io)?;
    Ok(true)
}

fn read_key(p: &Path) -> Result<Zeroizing<Vec<u8>>, CryptoError> {
    let text = Zeroizing::new(
        std::fs::read_to_string(p).map_err(|source| CryptoError::KeyFile { path: p.to_owned(), source })?,
    );
    let bytes = unhex(&text).filter(|b| b.len() == 32).ok_or_else(|| CryptoError::BadKey(p.to_owned()))?;
    Ok(Zeroizing::new(bytes))
}

/// Writes `bytes` to a new file readable only by its owner (0600).
///
/// # Errors
/// I/O errors, including when the file already exists.
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut f = opts.open(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

/// Sets unix permission bits (no-op elsewhere).
///
/// # Errors
/// I/O errors from chmod.
pub fn set_mode(path: &Path, mode: u32) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
    }
    let _ = (path, mode);
    Ok(())
}

/// Bytes of randomness in intentCode and the page tokens (160 bits ≥ the seed's 128).
pub const TOKEN_BYTES: usize = 20;

/// A fresh secret token of `bytes` random bytes, base64url without padding (160 bits →
/// 27 characters). Used for intentCode and the consent, confirmation and manage tokens.
pub fn new_token(bytes: usize) -> Secret {
    let mut b = Zeroizing::new(vec![0u8; bytes]);
    rand::rng().fill_bytes(&mut b);
    Secret(B64.encode(&b[..]))
}

/// SHA-256 of a token, hex, prefixed with its kind (`code`, `consent`, `confirm`,
/// `manage`): the only form in which tokens are stored.
pub fn token_hash(kind: &str, token: &str) -> String {
    format!("{kind}:{}", hex(&Sha256::new().chain_update(kind).chain_update(b":").chain_update(token).finalize()))
}

/// A holder-assigned identifier: `prefix` + 26 lowercase base32 characters (130 bits of
/// which 128 random), e.g. `int_...` (PROTOCOL.md §2).
pub fn new_id(prefix: &str) -> String {
    let mut b = [0u8; 16];
    rand::rng().fill_bytes(&mut b);
    let s = data_encoding::BASE32_NOPAD.encode(&b).to_ascii_lowercase();
    format!("{prefix}{s}")
}

#[cfg(test)]
thread_local! {
    /// How many times [`KeyRing::open`] ran on this thread (unit tests only): lets a test
    /// show that a code path never opens a sealed value (issue 10 point 2).
    static OPENED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many sealed values [`KeyRing::open`] opened on this thread so far (unit tests
/// only; compare before and after the code under test).
#[cfg(test)]
pub fn opened_on_this_thread() -> u64 {
    OPENED.with(std::cell::Cell::get)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seal_roundtrip_and_tamper() {
        let r = KeyRing::ephemeral();
        let s = r.seal_str("buyer@example.com").unwrap();
        assert!(!s.ct.contains("buyer"));
        assert_eq!(r.open_str(&s).unwrap().expose(), "buyer@example.com");
        let mut bad = s.clone();
        bad.ct.replace_range(0..1, if bad.ct.starts_with('A') { "B" } else { "A" });
        assert!(r.open(&bad).is_err());
        assert!(format!("{:?}", r.open_str(&s).unwrap()).contains("***"));
    }

    #[test]
    fn key_file_created_private_and_rotation_keeps_old() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("keys/sealing.key");
        let (r1, created) = KeyRing::load_or_create(&p).unwrap();
        assert!(created);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o600);
        }
        let sealed = r1.seal_str("x").unwrap();
        std::fs::rename(&p, d.path().join(format!("keys/sealing.key.{}", r1.current_kid()))).unwrap();
        let (r2, created) = KeyRing::load_or_create(&p).unwrap();
        assert!(created);
        assert_ne!(r1.current_kid(), r2.current_kid());
        assert_eq!(r2.open_str(&sealed).unwrap().expose(), "x");
    }

    #[test]
    fn handles_survive_a_rotation_of_the_sealing_key() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("keys/sealing.key");
        let (r1, _) = KeyRing::load_or_create(&p).unwrap();
        let hp = KeyRing::handle_key_path(&p);
        assert!(hp.exists());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&hp).unwrap().permissions().mode() & 0o777, 0o600);
        }
        let id = new_id("int_");
        let h = r1.handles().seal("sel_a", &id);
        std::fs::rename(&p, d.path().join(format!("keys/sealing.key.{}", r1.current_kid()))).unwrap();
        let (r2, created) = KeyRing::load_or_create(&p).unwrap();
        assert!(created);
        assert_eq!(r2.handles().seal("sel_a", &id), h, "the same handle after the rotation");
        assert_eq!(r2.handles().open("sel_a", &h).as_deref(), Some(id.as_str()));
        assert_eq!(r1.handles().kid(), r2.handles().kid());
        // A data directory from before handles: the handle key is added, the ring loads.
        std::fs::remove_file(&hp).unwrap();
        let (r3, created) = KeyRing::load_or_create(&p).unwrap();
        assert!(!created && hp.exists());
        assert_eq!(r3.current_kid(), r2.current_kid());
    }

    #[test]
    fn sealing_without_a_key_is_an_error_not_an_empty_ciphertext() {
        let empty = KeyRing::from_bytes(Vec::new(), &[0u8; 32]);
        assert!(matches!(empty.seal(b"x"), Err(CryptoError::Seal(_))));
        assert!(matches!(empty.seal_str("x"), Err(CryptoError::Seal(_))));
        let s = KeyRing::ephemeral().seal(b"").unwrap();
        assert!(!s.ct.is_empty(), "even an empty plaintext has a tag");
    }

    #[test]
    fn csrf_binds_purpose_and_time() {
        let r = KeyRing::ephemeral();
        let t = r.csrf_token("consent", "tok", 1000);
        assert!(r.csrf_valid(&t, "consent", "tok", 1500));
        assert!(!r.csrf_valid(&t, "confirm", "tok", 1500));
        assert!(!r.csrf_valid(&t, "consent", "other", 1500));
        assert!(!r.csrf_valid(&t, "consent", "tok", 1000 + 7201));
    }

    #[test]
    fn derived_tokens_and_keyed_hashes() {
        let r = KeyRing::ephemeral();
        let a = r.derive_token("p", "in").unwrap();
        assert_eq!(a.expose(), r.derive_token("p", "in").unwrap().expose());
        assert_ne!(a.expose(), r.derive_token("q", "in").unwrap().expose());
        assert_ne!(a.expose(), KeyRing::ephemeral().derive_token("p", "in").unwrap().expose());
        assert_eq!(a.expose().len(), 43);
        let h = r.keyed_hash("secret", "s3cr3t").unwrap();
        assert!(h.starts_with("hmac1:") && !h.contains("s3cr3t"));
        assert!(r.keyed_hash_matches(&h, "secret", "s3cr3t"));
        assert!(!r.keyed_hash_matches(&h, "secret", "other"));
        assert!(!r.keyed_hash_matches(&h, "other", "s3cr3t"));
        assert!(!KeyRing::ephemeral().keyed_hash_matches(&h, "secret", "s3cr3t"));
        assert!(!r.keyed_hash_matches(&token_hash("secret", "s3cr3t"), "secret", "s3cr3t"));
        let empty = KeyRing::from_bytes(vec![], &[7u8; 32]);
        assert!(empty.derive_token("p", "in").is_none() && empty.keyed_hash("k", "s").is_none());
    }

    /// Every kind of MAC the holder hands out, for one ring.
    fn macs(r: &KeyRing) -> Vec<String> {
        vec![
            r.mac(&[b"person", b"buyer@example.com"]),
            r.mac(&[b"pseudonym", b"per_x", b"sel_a"]),
            r.derive_token("refresh", "tok").unwrap().expose().to_owned(),
            r.keyed_hash("secret", "s3cr3t").unwrap(),
            r.csrf_token("consent", "tok", 1000),
        ]
    }

    #[test]
    fn macs_stay_the_same_across_a_rotation_and_a_retirement() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("keys/sealing.key");
        let (r, _) = KeyRing::load_or_create(&p).unwrap();
        let before = macs(&r);
        let old = r.current_kid();
        let sealed = r.seal_str("x").unwrap();
        let h = r.handles().seal("sel_a", "int_a");
        let new = r.rotate().unwrap();
        assert_ne!(new, old);
        assert_eq!(r.current_kid(), new, "the ring seals with the new key at once");
        assert_eq!(r.seal_str("y").unwrap().kid, new);
        assert_eq!(r.open_str(&sealed).unwrap().expose(), "x", "the old key still opens");
        assert_eq!(macs(&r), before, "no MAC changed in the running ring");
        assert!(r.csrf_valid(&before[4], "consent", "tok", 1500));
        assert!(r.keyed_hash_matches(&before[3], "secret", "s3cr3t"));
        // On disk: the new key current, the old one beside it (0600), no temp file left.
        let mut names: Vec<String> = std::fs::read_dir(p.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, vec!["handle.key", "mac.key", "sealing.key", &format!("sealing.key.{old}")]);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            for n in &names {
                assert_eq!(std::fs::metadata(p.with_file_name(n)).unwrap().permissions().mode() & 0o777, 0o600, "{n}");
            }
        }
        let (again, created) = KeyRing::load_or_create(&p).unwrap();
        assert!(!created);
        assert_eq!(again.kids(), vec![new.clone(), old.clone()]);
        assert_eq!(macs(&again), before, "nor after a restart");
        assert_eq!(again.handles().seal("sel_a", "int_a"), h, "handles unchanged");
        // Retired: the file goes, MACs and keyed hashes still the same.
        r.retire(&old).unwrap();
        assert!(!p.with_file_name(format!("sealing.key.{old}")).exists());
        assert!(matches!(r.open(&sealed), Err(CryptoError::UnknownKey(_))));
        assert_eq!(macs(&r), before);
        assert!(r.keyed_hash_matches(&before[3], "secret", "s3cr3t"));
        let (third, _) = KeyRing::load_or_create(&p).unwrap();
        assert_eq!((third.kids(), macs(&third)), (vec![new], before));
    }

    #[test]
    fn retire_refuses_the_current_key_and_an_unknown_one() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("keys/sealing.key");
        let (r, _) = KeyRing::load_or_create(&p).unwrap();
        let e = r.retire(&r.current_kid()).unwrap_err().to_string();
        assert!(e.contains("current sealing key") && e.contains("rotate first"), "{e}");
        assert!(p.exists());
        let e = r.retire("deadbeef").unwrap_err().to_string();
        assert!(e.contains("no key with id"), "{e}");
        assert!(KeyRing::ephemeral().rotate().is_err(), "a ring without files cannot rotate");
    }

    #[test]
    fn a_ring_from_an_old_data_dir_without_mac_key_gives_the_macs_of_before() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("keys/sealing.key");
        drop(KeyRing::load_or_create(&p).unwrap());
        std::fs::remove_file(KeyRing::mac_key_path(&p)).unwrap();
        // What the MACs were before mac.key existed: under the current key's subkey.
        let key = read_key(&p).unwrap();
        let sub = mac_subkey(&key);
        let kid = key_id(&key);
        let old_person = mac_with(&sub, &[b"person", b"buyer@example.com"]);
        let old_hash = format!("hmac1:{kid}:{}", mac_with(&sub, &[b"keyed-hash", b"secret", b"s3cr3t"]));
        let old_csrf = format!("1000.{}", mac_with(&sub, &[b"csrf", b"consent", b"tok", b"1000"]));
        let (r, created) = KeyRing::load_or_create(&p).unwrap();
        assert!(!created && KeyRing::mac_key_path(&p).exists());
        assert_eq!(r.mac(&[b"person", b"buyer@example.com"]), old_person);
        assert_eq!(r.keyed_hash("secret", "s3cr3t").unwrap(), old_hash);
        assert_eq!(r.csrf_token("consent", "tok", 1000), old_csrf);
        // The same after a rotation and the old key's retirement.
        r.rotate().unwrap();
        r.retire(&kid).unwrap();
        let (r, _) = KeyRing::load_or_create(&p).unwrap();
        assert_eq!(r.mac(&[b"person", b"buyer@example.com"]), old_person);
        assert!(r.keyed_hash_matches(&old_hash, "secret", "s3cr3t"));
        assert_eq!(r.keyed_hash("secret", "s3cr3t").unwrap(), old_hash);
        // A malformed mac.key is refused by name.
        std::fs::write(KeyRing::mac_key_path(&p), "nonsense").unwrap();
        assert!(matches!(KeyRing::load_or_create(&p), Err(CryptoError::BadKey(_))));
    }

    #[test]
    fn a_rotation_cut_short_between_the_two_renames_still_loads() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("keys/sealing.key");
        let (r, _) = KeyRing::load_or_create(&p).unwrap();
        let kid = r.current_kid();
        // The old key copied aside, the new one not yet written.
        std::fs::copy(&p, p.with_file_name(format!("sealing.key.{kid}"))).unwrap();
        let (again, _) = KeyRing::load_or_create(&p).unwrap();
        assert_eq!(again.kids(), vec![kid.clone()], "no key twice");
        // A leftover temp file is no key.
        std::fs::write(p.with_file_name(".sealing.key.tmp"), "junk").unwrap();
        let new = again.rotate().unwrap();
        assert_eq!(KeyRing::load_or_create(&p).unwrap().0.kids(), vec![new, kid]);
    }

    #[test]
    fn tokens_are_long_and_ids_shaped() {
        assert!(new_token(20).expose().len() >= 26);
        let id = new_id("int_");
        assert_eq!(id.len(), 4 + 26);
        assert_ne!(token_hash("code", "a"), token_hash("consent", "a"));
    }
}
