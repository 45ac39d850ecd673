//! Per-seller intent handles (PROTOCOL.md §2 "Seller pseudonyms and handles").
//!
//! A seller never sees the holder's intent id: each (intent, seller) pair has its own
//! handle `"hdl_" + base64url(nonce ‖ ciphertext)` (80 characters for an `int_…` id),
//! made by a deterministic authenticated encryption of the intent id — the SIV
//! construction over XChaCha20-Poly1305:
//!
//! * `mac_key = HMAC-SHA-256(K, "isto-handle-v1 mac")`, `enc_root = HMAC-SHA-256(K,
//!   "isto-handle-v1 enc")` from the handle key `K` ([`HandleKey`]);
//! * the seller's key `k_s = HMAC-SHA-256(enc_root, seller id)`;
//! * the synthetic nonce `n = HMAC-SHA-256(mac_key, len‖seller ‖ len‖intent id)`, first
//!   24 bytes (the XChaCha20 nonce size);
//! * `c = XChaCha20-Poly1305(k_s, n, plaintext, associated data = seller id)`, the
//!   plaintext being `0x02 ‖ the 16 bytes` of an `int_` id of [`super::new_id`] (26
//!   characters of its sorted base32), `0x01 ‖ the 16 bytes` of a canonical RFC 4648
//!   base32 `int_` id (made before ids sorted by creation), or `0x00 ‖ the id's UTF-8`
//!   for any other id.
//!
//! Opening decrypts under the caller's own seller key and associated data, then
//! recomputes `n` from (seller, id) and compares it in constant time. So a handle is
//! stable (nothing random), unrelated between sellers (different keys, nonces and
//! associated data), unforgeable (two authenticators: the Poly1305 tag and the
//! synthetic nonce), and opens only for the seller it was made for: another seller's
//! handle, a tampered or made-up one all give `None` — the caller answers them like an
//! unknown intent.
//!
//! `K` is never rotated with the sealing key (docs/choices.md "Seller handles"): a
//! handle made today opens after any rotation of `sealing.key`.

use super::{hex, hmac};
use base64::Engine as _;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use sha2::Sha256;
use zeroize::Zeroizing;

/// The handles' prefix.
pub const PREFIX: &str = "hdl_";
/// XChaCha20 nonce size, bytes.
const NONCE: usize = 24;
/// Poly1305 tag size, bytes.
const TAG: usize = 16;
/// Longest handle [`HandleKey::open`] looks at (characters after the prefix): an id of
/// up to 128 bytes. Longer input is refused before any decoding.
const MAX_B64: usize = (NONCE + 1 + 128 + TAG).div_ceil(3) * 4;

/// The root key of the handles (32 bytes, the file `handle.key` beside the sealing key).
pub struct HandleKey {
    mac_key: Zeroizing<[u8; 32]>,
    enc_root: Zeroizing<[u8; 32]>,
    index_key: Zeroizing<[u8; 32]>,
}

impl std::fmt::Debug for HandleKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HandleKey(***)")
    }
}

/// The 16 bytes of a canonical `int_` + 26 lowercase base32 id, with the plaintext's
/// tag of its alphabet: 1 for RFC 4648's (ids made before they sorted by creation), 2
/// for the sorted one of [`super::new_id`]. No text is canonical in both (its last
/// character's two low bits are zero in one alphabet only), so an id has one plaintext.
fn canonical_bytes(id: &str) -> Option<(u8, [u8; 16])> {
    let body = id.strip_prefix("int_")?;
    if body.len() != 26 || body.bytes().any(|b| !(b.is_ascii_lowercase() || (b'2'..=b'7').contains(&b))) {
        return None;
    }
    if let Some(bytes) = super::sorted_base32_bytes(body) {
        return Some((2, bytes));
    }
    let raw = data_encoding::BASE32_NOPAD.decode(body.to_ascii_uppercase().as_bytes()).ok()?;
    let bytes: [u8; 16] = raw.try_into().ok()?;
    // Only the id that encodes back to itself (the last two bits are zero).
    (data_encoding::BASE32_NOPAD.encode(&bytes).to_ascii_lowercase() == body).then_some((1, bytes))
}

fn plaintext(id: &str) -> Zeroizing<Vec<u8>> {
    Zeroizing::new(match canonical_bytes(id) {
        Some((tag, b)) => [&[tag][..], &b].concat(),
        None => [&[0u8][..], id.as_bytes()].concat(),
    })
}

fn id_of(p: &[u8]) -> Option<String> {
    match p.split_first()? {
        (1, b) if b.len() == 16 => Some(format!("int_{}", data_encoding::BASE32_NOPAD.encode(b).to_ascii_lowercase())),
        (2, b) => Some(format!("int_{}", super::sorted_base32(b.try_into().ok()?))),
        (0, b) => String::from_utf8(b.to_vec()).ok(),
        _ => None,
    }
}

impl HandleKey {
    /// The handle key from its 32 root bytes (domain-separated subkeys, see the module
    /// docs).
    pub fn from_root(root: &[u8]) -> Self {
        Self {
            mac_key: hmac(root, &[b"isto-handle-v1 mac"]),
            enc_root: hmac(root, &[b"isto-handle-v1 enc"]),
            index_key: hmac(root, &[b"isto-index-v1"]),
        }
    }

    /// The keyed lookup hash of `value` for an index of kind `kind` (e.g. the accounts'
    /// e-mail index): `kind` + `#` + 64 hex digits of HMAC-SHA-256 under a subkey of the
    /// never-rotated root (so the index outlives sealing-key rotations). Unlike an
    /// unkeyed hash, a store or backup alone cannot be checked against a list of
    /// candidate values.
    pub fn index_hash(&self, kind: &str, value: &str) -> String {
        format!("{kind}#{}", hex(&hmac(&self.index_key[..], &[kind.as_bytes(), value.as_bytes()])[..]))
    }

    fn cipher(&self, seller: &str) -> XChaCha20Poly1305 {
        let k = hmac(&self.enc_root[..], &[seller.as_bytes()]);
        XChaCha20Poly1305::new((&k[..]).into())
    }

    fn nonce(&self, seller: &str, id: &str) -> [u8; NONCE] {
        let m = hmac(&self.mac_key[..], &[seller.as_bytes(), id.as_bytes()]);
        let mut n = [0u8; NONCE];
        n.copy_from_slice(&m[..NONCE]);
        n
    }

    /// The handle of intent `intent_id` for seller `seller` (`sel_…`): `hdl_…`, the same
    /// on every call and restart, different for every other seller.
    pub fn seal(&self, seller: &str, intent_id: &str) -> String {
        let n = self.nonce(seller, intent_id);
        let p = plaintext(intent_id);
        // XChaCha20-Poly1305 encrypts any message shorter than 256 GiB; an id is short.
        let ct = self
            .cipher(seller)
            .encrypt(XNonce::from_slice(&n), Payload { msg: &p, aad: seller.as_bytes() })
            .unwrap_or_default();
        format!("{PREFIX}{}", super::B64.encode([&n[..], &ct].concat()))
    }

    /// The intent id behind `handle` when `seller` made it; `None` for a handle of
    /// another seller, a tampered or malformed one, or anything that is no handle.
    pub fn open(&self, seller: &str, handle: &str) -> Option<String> {
        let body = handle.strip_prefix(PREFIX)?;
        if body.len() > MAX_B64 {
            return None;
        }
        let raw = super::B64.decode(body).ok()?;
        if raw.len() < NONCE + TAG + 1 {
            return None;
        }
        let (n, ct) = raw.split_at(NONCE);
        let p = Zeroizing::new(
            self.cipher(seller).decrypt(XNonce::from_slice(n), Payload { msg: ct, aad: seller.as_bytes() }).ok()?,
        );
        let id = id_of(&p)?;
        let want = self.nonce(seller, &id);
        bool::from(subtle::ConstantTimeEq::ct_eq(&want[..], n)).then_some(id)
    }

    /// An id of the handle key for key listings: the first 8 hex digits of SHA-256 of its
    /// MAC subkey, never the key itself.
    pub fn kid(&self) -> String {
        use sha2::Digest as _;
        hex(&Sha256::digest(&self.mac_key[..])[..4])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(b: u8) -> HandleKey {
        HandleKey::from_root(&[b; 32])
    }

    fn id() -> String {
        crate::crypto::new_id("int_")
    }

    #[test]
    fn stable_per_seller_and_different_between_sellers() {
        let k = key(7);
        let i = id();
        let a = k.seal("sel_a", &i);
        assert!(a.starts_with(PREFIX) && a.len() == 80, "{a}");
        assert_eq!(k.seal("sel_a", &i), a, "stable");
        assert_eq!(key(7).seal("sel_a", &i), a, "stable after a restart (the same key file)");
        let b = k.seal("sel_b", &i);
        assert_ne!(a, b);
        assert!(!a.contains(&i[4..]) && !b.contains(&i[4..]), "the id is not visible");
        assert_ne!(k.seal("sel_a", &id()), a, "another intent, another handle");
        assert_eq!(k.open("sel_a", &a).as_deref(), Some(i.as_str()));
        assert_eq!(k.open("sel_b", &b).as_deref(), Some(i.as_str()));
    }

    #[test]
    fn foreign_tampered_and_made_up_handles_do_not_open() {
        let k = key(7);
        let i = id();
        let a = k.seal("sel_a", &i);
        assert_eq!(k.open("sel_b", &a), None, "seller B cannot use seller A's handle");
        assert_eq!(key(8).open("sel_a", &a), None, "another holder's key");
        for pos in PREFIX.len()..a.len() {
            let mut t = a.clone().into_bytes();
            t[pos] = if t[pos] == b'A' { b'B' } else { b'A' };
            let t = String::from_utf8(t).unwrap();
            if t != a {
                assert_eq!(k.open("sel_a", &t), None, "tampered at {pos}: {t}");
            }
        }
        for junk in ["", "hdl_", "hdl_AAAA", &i, &a[PREFIX.len()..], &format!("{a}A"), &a[..a.len() - 1]] {
            assert_eq!(k.open("sel_a", junk), None, "{junk}");
        }
        assert_eq!(k.open("sel_a", &format!("hdl_{}", "A".repeat(10_000))), None);
    }

    #[test]
    fn a_handle_whose_nonce_does_not_fit_its_id_is_refused() {
        // A valid ciphertext under the seller's key with a nonce that is not the MAC of
        // (seller, id): the Poly1305 tag holds, the synthetic nonce check refuses it.
        let k = key(7);
        let i = id();
        let n = [9u8; NONCE];
        let ct =
            k.cipher("sel_a").encrypt(XNonce::from_slice(&n), Payload { msg: &plaintext(&i), aad: b"sel_a" }).unwrap();
        let forged = format!("{PREFIX}{}", crate::crypto::B64.encode([&n[..], &ct].concat()));
        assert_eq!(k.open("sel_a", &forged), None);
    }

    #[test]
    fn ids_of_both_alphabets_seal_as_16_bytes_and_old_ones_as_before() {
        let k = key(3);
        let bytes: [u8; 16] = *b"\x01\x93\x8e\x4f\xa2\xb1Zc\x01\xff\x10\x00~\x99$\xe7";
        // An id from before ids sorted by creation: RFC 4648 base32, plaintext tag 1 as
        // it always was, so its handles did not change.
        let old = format!("int_{}", data_encoding::BASE32_NOPAD.encode(&bytes).to_ascii_lowercase());
        assert_eq!(&plaintext(&old)[..], &[&[1u8][..], &bytes].concat()[..]);
        assert_eq!(
            k.seal("sel_a", &old),
            "hdl_dHNW9fvPi7QeTSrwC1O_LmwPhrM1pERzIK_jD-WPdFLRZNhoofmaLujIhbZwYPrNpwpFmlc1XAij",
            "an old id's handle, as made before ids sorted"
        );
        let new = format!("int_{}", crate::crypto::sorted_base32(&bytes));
        assert_eq!(&plaintext(&new)[..], &[&[2u8][..], &bytes].concat()[..]);
        for i in [old, new, id()] {
            let h = k.seal("sel_a", &i);
            assert_eq!(h.len(), 80, "{i}: {h}");
            assert_eq!(k.open("sel_a", &h).as_deref(), Some(i.as_str()));
        }
    }

    #[test]
    fn other_ids_round_trip_too() {
        let k = key(1);
        for i in ["int_a", "int_", "x", "int_AAAAAAAAAAAAAAAAAAAAAAAAAA", "int_aaaaaaaaaaaaaaaaaaaaaaaaab"] {
            let h = k.seal("sel_a", i);
            assert_eq!(k.open("sel_a", &h).as_deref(), Some(i), "{i}");
        }
        assert_ne!(k.kid(), key(2).kid());
        assert!(!format!("{k:?}").contains('1'));
    }
}
