//! What the start-up key check needs from the ring: the sealed values inside a stored
//! JSON value ([`each_sealed`]) and fingerprints of the two never-rotated keys
//! ([`KeyRing::fingerprints`]), which the store records so that another holder's
//! `handle.key` or `mac.key`, or one made anew, is noticed at the next start instead of
//! silently changing every handle, person key and pseudonym.

use super::{mac_with, KeyRing, Sealed};
use serde_json::Value;

/// A JSON object that is a sealed value: exactly `kid`, `nonce`, `ct`, all strings.
fn as_sealed(m: &serde_json::Map<String, Value>) -> Option<Sealed> {
    if m.len() != 3 || !["kid", "nonce", "ct"].iter().all(|k| m.get(*k).is_some_and(Value::is_string)) {
        return None;
    }
    serde_json::from_value(Value::Object(m.clone())).ok()
}

/// Calls `f` on every sealed value inside `v` (PROTOCOL.md §4.6: an object of exactly
/// `kid`, `nonce` and `ct`), depth first.
///
/// # Errors
/// `f`'s first error (the walk stops there).
pub fn each_sealed<E>(v: &Value, f: &mut dyn FnMut(Sealed) -> Result<(), E>) -> Result<(), E> {
    match v {
        Value::Object(m) => match as_sealed(m) {
            Some(s) => f(s),
            None => m.values().try_for_each(|x| each_sealed(x, f)),
        },
        Value::Array(a) => a.iter().try_for_each(|x| each_sealed(x, f)),
        _ => Ok(()),
    }
}

/// Fingerprints of the never-rotated keys, never the keys themselves: the same for the
/// same key file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fingerprints {
    /// Of `handle.key`: its id ([`super::HandleKey::kid`], 8 hex digits).
    pub handle: String,
    /// Of `mac.key`: the first 12 characters of its HMAC-SHA-256 of
    /// `"isto-key-fingerprint"`, base64url.
    pub mac: String,
}

impl KeyRing {
    /// The fingerprints of this ring's `handle.key` and `mac.key`.
    pub fn fingerprints(&self) -> Fingerprints {
        let mac = mac_with(&self.mac.key, &[b"isto-key-fingerprint"]).chars().take(12).collect();
        Fingerprints { handle: self.handles.kid(), mac }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_differ_between_rings_and_stay_for_the_same_files() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("keys/sealing.key");
        let (a, _) = KeyRing::load_or_create(&p).unwrap();
        let (again, _) = KeyRing::load_or_create(&p).unwrap();
        assert_eq!(a.fingerprints(), again.fingerprints());
        let (b, _) = KeyRing::load_or_create(&d.path().join("other/sealing.key")).unwrap();
        let (fa, fb) = (a.fingerprints(), b.fingerprints());
        assert!(fa.handle != fb.handle && fa.mac != fb.mac, "{fa:?} {fb:?}");
        assert_eq!((fa.handle.len(), fa.mac.len()), (8, 12));
    }

    #[test]
    fn every_sealed_value_is_found_and_only_those() {
        let v = serde_json::json!({"a": {"kid": "k1", "nonce": "n", "ct": "c"},
                                   "b": [{"kid": "k2", "nonce": "n", "ct": "c"}],
                                   "c": {"kid": "k3", "nonce": "n", "ct": "c", "x": 1}});
        let mut seen = Vec::new();
        each_sealed(&v, &mut |s| {
            seen.push(s.kid);
            Ok::<_, ()>(())
        })
        .unwrap();
        assert_eq!(seen, vec!["k1", "k2"]);
    }
}
