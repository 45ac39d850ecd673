//! Sealing at rest, secret tokens and their hashes, CSRF tokens.
//!
//! PROTOCOL.md §4.1 (intentCode ≥128 random bits, stored only as a hash) and §4.6 (contact
//! and hidden limit sealed with XChaCha20-Poly1305, key id stored with the ciphertext).
//! The key ring is a directory of 32-byte key files; the newest is used for sealing and
//! every one for opening, so rotation keeps old ciphertexts readable. Beside it,
//! `handle.key` is the root of the sellers' intent handles ([`handle`], PROTOCOL.md §2),
//! never rotated.

pub mod handle;
pub mod password;

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
    mac_key: Zeroizing<[u8; 32]>,
}

/// The key ring: seals with the newest key, opens with any; and the handle key.
pub struct KeyRing {
    keys: Vec<Key>,
    handles: HandleKey,
}

impl std::fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyRing").field("kids", &self.keys.iter().map(|k| &k.id).collect::<Vec<_>>()).finish()
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

impl KeyRing {
    fn from_bytes(list: Vec<Zeroizing<Vec<u8>>>, handle_root: &[u8]) -> Self {
        let keys = list
            .into_iter()
            .map(|b| {
                let mut mac_key = Zeroizing::new([0u8; 32]);
                let derived = Sha256::new().chain_update(b"isto-mac-v1").chain_update(&b[..]).finalize();
                mac_key.copy_from_slice(&derived);
                Key { id: key_id(&b), cipher: XChaCha20Poly1305::new(b[..].into()), mac_key }
            })
            .collect();
        Self { keys, handles: HandleKey::from_root(handle_root) }
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

    /// Loads `path` (64 hex digits), creating it with a fresh key (mode 0600, parent
    /// 0700) when absent. Older keys kept beside it as `sealing.key.<kid>` stay usable
    /// for opening. The handle key ([`KeyRing::handle_key_path`], 64 hex digits) is read
    /// the same way and created (0600) when absent — also beside an existing sealing key,
    /// for a data directory made before handles existed; it is never rotated. Returns the
    /// ring and whether the sealing key was created.
    ///
    /// # Errors
    /// [`CryptoError::KeyFile`] on I/O errors, [`CryptoError::BadKey`] on a malformed file.
    pub fn load_or_create(path: &Path) -> Result<(Self, bool), CryptoError> {
        let created = create_key_file(path)?;
        let handle_path = Self::handle_key_path(path);
        create_key_file(&handle_path)?;
        let handle_root = read_key(&handle_path)?;
        let io = |source| CryptoError::KeyFile { path: path.to_owned(), source };
        let mut list = vec![read_key(path)?];
        if let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) {
            let prefix = format!("{name}.");
            let mut old: Vec<PathBuf> = std::fs::read_dir(dir)
                .map_err(io)?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(&prefix)))
                .collect();
            old.sort();
            for p in old {
                list.push(read_key(&p)?);
            }
        }
        Ok((Self::from_bytes(list, &handle_root), created))
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

    /// Id of the key used for sealing.
    pub fn current_kid(&self) -> &str {
        self.keys.first().map(|k| k.id.as_str()).unwrap_or_default()
    }

    /// Ids of every key of the ring, the current (sealing) key first.
    pub fn kids(&self) -> Vec<String> {
        self.keys.iter().map(|k| k.id.clone()).collect()
    }

    /// Seals `plaintext` with the current key and a fresh random nonce.
    ///
    /// # Errors
    /// [`CryptoError::Seal`] when the ring has no key or the cipher refuses the input
    /// (never an empty ciphertext).
    pub fn seal(&self, plaintext: &[u8]) -> Result<Sealed, CryptoError> {
        let key = self.keys.first().ok_or(CryptoError::Seal("the key ring has no key"))?;
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
        let key =
            self.keys.iter().find(|k| k.id == sealed.kid).ok_or_else(|| CryptoError::UnknownKey(sealed.kid.clone()))?;
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

    /// HMAC-SHA-256 under the current key's MAC subkey, base64url. Used for CSRF tokens
    /// and seller pseudonyms (keyed hashes).
    pub fn mac(&self, parts: &[&[u8]]) -> String {
        let Some(key) = self.keys.first() else { return String::new() };
        mac_with(key, parts)
    }

    /// A secret token derived from `input` under the current key: base64url HMAC-SHA-256
    /// of (`"derive"`, `purpose`, `input`), 43 characters. The same input gives the same
    /// token again, so a value can be answered twice without being stored (the OAuth
    /// refresh grace window); `None` when the ring has no key.
    pub fn derive_token(&self, purpose: &str, input: &str) -> Option<Secret> {
        self.keys.first()?;
        Some(Secret(self.mac(&[b"derive", purpose.as_bytes(), input.as_bytes()])))
    }

    /// A keyed hash of a secret (an OAuth client secret) for storage:
    /// `hmac1:<key id>:<base64url HMAC-SHA-256 of (kind, secret)>`. Checked by
    /// [`KeyRing::keyed_hash_matches`] with the key it names, so an older key of the
    /// ring still verifies it; `None` when the ring has no key.
    pub fn keyed_hash(&self, kind: &str, secret: &str) -> Option<String> {
        let key = self.keys.first()?;
        Some(format!("hmac1:{}:{}", key.id, mac_with(key, &[b"keyed-hash", kind.as_bytes(), secret.as_bytes()])))
    }

    /// Whether `stored` (from [`KeyRing::keyed_hash`]) is the keyed hash of `secret`;
    /// constant-time comparison, `false` for another shape or an unknown key.
    pub fn keyed_hash_matches(&self, stored: &str, kind: &str, secret: &str) -> bool {
        let Some(rest) = stored.strip_prefix("hmac1:") else { return false };
        let Some((kid, want)) = rest.split_once(':') else { return false };
        let Some(key) = self.keys.iter().find(|k| k.id == kid) else { return false };
        let got = mac_with(key, &[b"keyed-hash", kind.as_bytes(), secret.as_bytes()]);
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

/// HMAC-SHA-256 of length-prefixed `parts` under `key`'s MAC subkey, base64url.
fn mac_with(key: &Key, parts: &[&[u8]]) -> String {
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(&key.mac_key[..]).unwrap_or_else(|_| unreachable_mac());
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

    #[test]
    fn tokens_are_long_and_ids_shaped() {
        assert!(new_token(20).expose().len() >= 26);
        let id = new_id("int_");
        assert_eq!(id.len(), 4 + 26);
        assert_ne!(token_hash("code", "a"), token_hash("consent", "a"));
    }
}
