//! Sealing at rest, secret tokens and their hashes, CSRF tokens.
//!
//! PROTOCOL.md §4.1 (intentCode ≥128 random bits, stored only as a hash) and §4.6 (contact
//! and hidden limit sealed with XChaCha20-Poly1305, key id stored with the ciphertext).
//! The [`KeyRing`] is a directory of 32-byte key files: `sealing.key` and the old
//! `sealing.key.<kid>` ([`KeyRing::rotate`], [`KeyRing::retire`]), and, never rotated,
//! `handle.key` ([`handle`], PROTOCOL.md §2) and `mac.key` ([`MacRoot`]).

mod files;
mod fingerprint;
pub mod handle;
pub mod password;

use files::{create_key_file, old_key_files, old_key_path, read_key, read_mac_root, write_atomic};
pub use files::{set_mode, write_private};
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
/// change every person key and pseudonym.
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
    /// [`KeyRing::rotation_step`].
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
    data_encoding::HEXLOWER.encode(bytes)
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    data_encoding::HEXLOWER_PERMISSIVE.decode(s.trim().as_bytes()).ok()
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

/// The keys of the ring whose current key file is `path`: the current key first, then
/// the old ones (`sealing.key.<kid>`).
fn ring_keys(path: &Path) -> Result<Vec<Key>, CryptoError> {
    let mut keys = vec![key_of(&read_key(path)?, Some(path.to_owned()))];
    for p in old_key_files(path)? {
        let k = key_of(&read_key(&p)?, Some(p));
        // A rotation cut short may leave the current key also under its old name.
        if !keys.iter().any(|x| x.id == k.id) {
            keys.push(k);
        }
    }
    Ok(keys)
}

/// File name of the MAC root, beside the sealing key.
pub const MAC_KEY_FILE: &str = "mac.key";

impl KeyRing {
    #[cfg(any(test, feature = "testkit"))]
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

    /// The marker of a rotation running on this ring (unix ms of its last step: a key
    /// made or a batch re-sealed; 0 for none): `isto admin keys rotate` through a server
    /// sets it, so that a second one is told that a rotation runs. It guards no key
    /// material.
    pub fn rotation_step(&self) -> &std::sync::atomic::AtomicU64 {
        &self.rotation
    }

    fn sealing(&self) -> std::sync::RwLockReadGuard<'_, Vec<Key>> {
        self.keys.read().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    #[cfg(any(test, feature = "testkit"))]
    /// A ring with one fresh random key (and a fresh handle key), for tests.
    pub fn ephemeral() -> Self {
        Self::from_bytes(vec![random_bytes(32)], &random_bytes(32))
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
    /// 0700) when absent; the old keys `sealing.key.<kid>` beside it open too. The handle
    /// key ([`KeyRing::handle_key_path`], 64 hex digits) is read or created the same way;
    /// the MAC root ([`KeyRing::mac_key_path`], `<key id>:<64 hex digits>`) is created
    /// when absent from the current sealing key's MAC subkey ([`MacRoot`]). Returns the
    /// ring and whether the sealing key was created.
    ///
    /// # Errors
    /// [`CryptoError::KeyFile`] on I/O errors, [`CryptoError::BadKey`] on a malformed file.
    pub fn load_or_create(path: &Path) -> Result<(Self, bool), CryptoError> {
        let created = create_key_file(path)?;
        let handle_path = Self::handle_key_path(path);
        create_key_file(&handle_path)?;
        let handle_root = read_key(&handle_path)?;
        let keys = ring_keys(path)?;
        let mac_path = Self::mac_key_path(path);
        if !mac_path.exists() {
            let text = Zeroizing::new(format!("{}:{}", keys[0].id, hex(&keys[0].mac_key[..])));
            write_atomic(&mac_path, text.as_bytes())
                .map_err(|source| CryptoError::KeyFile { path: mac_path.clone(), source })?;
        }
        let mac = read_mac_root(&mac_path)?;
        Ok((Self::assemble(keys, mac, &handle_root, Some(path.to_owned())), created))
    }

    /// Reads the sealing keys again from the ring's files: after another process (a
    /// replica sharing the key directory) rotated or retired a key. The handle key and
    /// the MAC root are never rotated. Returns whether the ring changed; a ring made in
    /// memory never does.
    ///
    /// # Errors
    /// [`CryptoError::KeyFile`], [`CryptoError::BadKey`] (the ring is then unchanged).
    pub fn reload(&self) -> Result<bool, CryptoError> {
        let Some(path) = self.path.as_deref() else { return Ok(false) };
        let _files = self.files.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let fresh = ring_keys(path)?;
        let mut keys = self.keys.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        let same = keys.len() == fresh.len() && keys.iter().zip(&fresh).all(|(a, b)| a.id == b.id);
        if !same {
            *keys = fresh;
        }
        Ok(!same)
    }

    /// The sellers' intent handles ([`handle`]): made and opened with the handle key.
    pub fn handles(&self) -> &HandleKey {
        &self.handles
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

    /// Makes a new sealing key current: the current key is copied to `sealing.key.<kid>`
    /// (keeping its modification time, so its creation date stays known), then a fresh
    /// key is written to a temp file (0600, synced) and renamed over `sealing.key`, the
    /// directory synced — and only then does this ring seal with it. Every older key
    /// still opens. The MAC root and the handle key are not touched. Returns the new key
    /// id.
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
        let b = random_bytes(32);
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
        let has_key = !self.sealing().is_empty();
        has_key.then(|| Secret(self.mac(&[b"derive", purpose.as_bytes(), input.as_bytes()])))
    }

    /// A keyed hash of a secret (an OAuth client secret) for storage:
    /// `hmac1:<MAC key id>:<base64url HMAC-SHA-256 of (kind, secret)>` under the MAC
    /// root. Checked by [`KeyRing::keyed_hash_matches`]; `None` when the ring has no key.
    pub fn keyed_hash(&self, kind: &str, secret: &str) -> Option<String> {
        let hash = mac_with(&self.mac.key, &[b"keyed-hash", kind.as_bytes(), secret.as_bytes()]);
        (!self.sealing().is_empty()).then(|| format!("hmac1:{}:{hash}", self.mac.id))
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

/// HMAC-SHA-256 of length-prefixed `parts` under `key`.
fn hmac(key: &[u8], parts: &[&[u8]]) -> Zeroizing<[u8; 32]> {
    // RFC 2104 §2: a key longer than the block is hashed first, a shorter one padded
    // with zeros; so the keyed MAC is built without a fallible constructor.
    let mut block = Zeroizing::new([0u8; 64]);
    if key.len() > block.len() {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let mut m = <Hmac<Sha256> as hmac::digest::KeyInit>::new(&(*block).into());
    for p in parts {
        m.update(&(p.len() as u64).to_be_bytes());
        m.update(p);
    }
    let mut out = Zeroizing::new([0u8; 32]);
    out.copy_from_slice(&m.finalize().into_bytes());
    out
}

/// [`hmac`], base64url.
fn mac_with(key: &[u8; 32], parts: &[&[u8]]) -> String {
    B64.encode(&hmac(&key[..], parts)[..])
}

/// Bytes of randomness in intentCode and the page tokens (160 bits ≥ the seed's 128).
pub const TOKEN_BYTES: usize = 20;

/// A fresh secret token of `bytes` random bytes, base64url without padding (160 bits →
/// 27 characters). Used for intentCode and the consent, confirmation and manage tokens.
pub fn new_token(bytes: usize) -> Secret {
    Secret(B64.encode(&random_bytes(bytes)[..]))
}

/// `n` fresh random bytes.
fn random_bytes(n: usize) -> Zeroizing<Vec<u8>> {
    let mut b = Zeroizing::new(vec![0u8; n]);
    rand::rng().fill_bytes(&mut b);
    b
}

/// SHA-256 of a token, hex, prefixed with its kind (`code`, `consent`, `confirm`,
/// `manage`): the only form in which tokens are stored.
pub fn token_hash(kind: &str, token: &str) -> String {
    format!("{kind}:{}", token_digest(kind, token))
}

/// SHA-256 of `kind:token`, hex: what [`token_hash`] and [`token_key`] store.
fn token_digest(kind: &str, token: &str) -> String {
    hex(&Sha256::new().chain_update(kind).chain_update(b":").chain_update(token).finalize())
}

/// The prefix of every intent id ([`new_id`]).
const INTENT_PREFIX: &str = "int_";
/// Characters of an intent id after [`INTENT_PREFIX`] (16 bytes of base32, old and new
/// ids alike).
const ID_BODY: usize = 26;
/// Characters of a [`new_token`] of [`TOKEN_BYTES`] (base64url without padding).
const PLAIN_TOKEN: usize = (TOKEN_BYTES * 8).div_ceil(6);

/// A fresh token of intent `id` (intentCode and the consent, confirmation and manage
/// tokens): the 26 characters of the id after `int_`, then a [`new_token`] of
/// [`TOKEN_BYTES`] (its 160 random bits are the secret, ≥ the seed's 128, §5.2). The id
/// in front lets [`token_key`] store the token beside its intent's other rows
/// (docs/choices.md, "Tokens begin with their intent's id"). An id of any other shape
/// gets a plain [`new_token`].
pub fn new_intent_token(id: &str) -> Secret {
    let secret = new_token(TOKEN_BYTES);
    match id.strip_prefix(INTENT_PREFIX).filter(|b| id_body(b)) {
        Some(body) => Secret(format!("{body}{}", secret.expose())),
        None => secret,
    }
}

/// Whether `s` is an intent id's body: [`ID_BODY`] characters of lowercase base32.
fn id_body(s: &str) -> bool {
    s.len() == ID_BODY && s.bytes().all(|b| b.is_ascii_lowercase() || (b'2'..=b'7').contains(&b))
}

/// The store key of an intent token of `kind` (the tokens table, `store::tokens`): for
/// a token of [`new_intent_token`] (its id's body and a 27-character secret),
/// `kind:int_<body>:<hex>`, so that a batch of new intents' tokens goes into the last
/// pages of the table instead of one random page each (ids sort by creation); for any
/// other token (those made before), [`token_hash`]. The hex is [`token_hash`]'s either
/// way: the key is computed from the whole token, so a token with a changed secret or id
/// finds nothing.
pub fn token_key(kind: &str, token: &str) -> String {
    match token.get(..ID_BODY).filter(|b| token.len() == ID_BODY + PLAIN_TOKEN && id_body(b)) {
        Some(body) => format!("{kind}:{INTENT_PREFIX}{body}:{}", token_digest(kind, token)),
        None => token_hash(kind, token),
    }
}

/// A holder-assigned identifier: `prefix` + 26 lowercase base32 characters, e.g.
/// `int_...` (PROTOCOL.md §2: opaque, not secret). Its 128 bits are the time of its
/// creation, 48 bits of milliseconds since the Unix epoch by the system's clock (a
/// test's standing clock does not make ids collide), then 80 random bits; the
/// characters are RFC 4648 base32's (`a`–`z`, `2`–`7`) in the order that keeps the bits'
/// order ([`SORTED_BASE32`]), so ids sort by creation. Records keyed by id are then
/// written next to the ones just before them: a batch of new drafts or offers dirties a
/// few pages of the store instead of one page each (docs/choices.md, "Ids in order of
/// creation").
pub fn new_id(prefix: &str) -> String {
    let mut random = [0u8; 10];
    rand::rng().fill_bytes(&mut random);
    id_at(prefix, system_millis(), random)
}

/// Milliseconds since the Unix epoch by the system's clock, not a holder's `Clock`: an
/// id's time only orders rows.
fn system_millis() -> u64 {
    let millis = crate::clock::Clock::now(&crate::clock::SystemClock).unix_timestamp_nanos() / 1_000_000;
    u64::try_from(millis).unwrap_or(0)
}

/// RFC 4648 base32's symbols in ASCII order: a symbol's value is its place here.
const SORTED_BASE32: &[u8; 32] = b"234567abcdefghijklmnopqrstuvwxyz";

/// [`new_id`] for `millis` (its low 48 bits) and `random`.
fn id_at(prefix: &str, millis: u64, random: [u8; 10]) -> String {
    let mut b = [0u8; 16];
    b[..6].copy_from_slice(&millis.to_be_bytes()[2..]);
    b[6..].copy_from_slice(&random);
    format!("{prefix}{}", sorted_base32(&b))
}

/// 16 bytes as 26 characters of [`SORTED_BASE32`], 5 bits a character, most significant
/// first; the last character holds 3 bits and 2 zero bits.
fn sorted_base32(bytes: &[u8; 16]) -> String {
    let n = u128::from_be_bytes(*bytes);
    (0..26u32)
        .map(|i| {
            let v = if i < 25 { n >> (123 - 5 * i) } else { n << 2 };
            char::from(SORTED_BASE32[(v & 31) as usize])
        })
        .collect()
}

/// The 16 bytes behind 26 characters of [`SORTED_BASE32`] (an id's body from
/// [`new_id`]); `None` for any other text, and for one whose last character carries
/// bits that [`sorted_base32`] never sets, so exactly one text stands for given bytes.
fn sorted_base32_bytes(body: &str) -> Option<[u8; 16]> {
    if body.len() != 26 {
        return None;
    }
    let mut n: u128 = 0;
    for (i, c) in body.bytes().enumerate() {
        let v = SORTED_BASE32.iter().position(|&s| s == c)? as u128;
        if i < 25 {
            n = (n << 5) | v;
        } else if v & 3 != 0 {
            return None;
        } else {
            n = (n << 3) | (v >> 2);
        }
    }
    Some(n.to_be_bytes())
}

#[cfg(test)]
thread_local! {
    /// How many times [`KeyRing::open`] ran on this thread (unit tests only): lets a test
    /// show that a code path never opens a sealed value.
    static OPENED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many sealed values [`KeyRing::open`] opened on this thread so far (unit tests
/// only; compare before and after the code under test).
#[cfg(test)]
pub fn opened_on_this_thread() -> u64 {
    OPENED.with(std::cell::Cell::get)
}

#[cfg(test)]
mod tests;
