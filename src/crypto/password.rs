//! Passwords: argon2id with the OWASP parameters (m = 19 456 KiB, t = 2, p = 1), stored
//! as PHC strings (`$argon2id$v=19$m=19456,t=2,p=1$<salt>$<hash>`).
//!
//! Verification uses the parameters written in the PHC string itself, so hashes made
//! with older parameters keep working; [`needs_rehash`] tells the sign-in to store a new
//! hash with the current parameters after a successful verification. Hashing takes tens
//! of milliseconds and 19 MiB: callers run it on blocking threads and bound how many run
//! at once.

use super::CryptoError;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};
use rand::RngCore;
use std::sync::OnceLock;

/// argon2 parameters (memory KiB, iterations, lanes), for callers that hash with
/// other than the current ones (tests of rehashing).
pub use argon2::Params as HashParams;

/// Shortest password accepted, in characters.
pub const MIN_LEN: usize = 10;
/// Longest password accepted, in characters.
pub const MAX_LEN: usize = 200;

/// argon2 memory cost, KiB (OWASP).
pub const M_COST: u32 = 19_456;
/// argon2 iterations (OWASP).
pub const T_COST: u32 = 2;
/// argon2 lanes (OWASP).
pub const P_COST: u32 = 1;

/// The current parameters.
pub fn params() -> Params {
    // The constants are valid argon2 parameters; the fallback is never taken.
    Params::new(M_COST, T_COST, P_COST, None).unwrap_or(Params::DEFAULT)
}

/// Checks the length rule (10–200 characters).
///
/// # Errors
/// A message for the page.
pub fn check_length(password: &str) -> Result<(), &'static str> {
    let n = password.chars().count();
    if (MIN_LEN..=MAX_LEN).contains(&n) {
        Ok(())
    } else {
        Err("the password must have 10 to 200 characters")
    }
}

/// Hashes with the current parameters and a fresh 128-bit salt.
///
/// # Errors
/// [`CryptoError::Hash`] (never containing the password).
pub fn hash(password: &str) -> Result<String, CryptoError> {
    hash_with(password, params())
}

/// Hashes with `params` (tests make weaker hashes to check rehashing).
///
/// # Errors
/// [`CryptoError::Hash`].
pub fn hash_with(password: &str, params: Params) -> Result<String, CryptoError> {
    let mut salt = [0u8; 16];
    rand::rng().fill_bytes(&mut salt);
    let salt = SaltString::encode_b64(&salt).map_err(|e| CryptoError::Hash(e.to_string()))?;
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| CryptoError::Hash(e.to_string()))
}

/// Whether `password` matches the PHC string `phc`, with the string's own algorithm,
/// version and parameters (constant-time comparison). A malformed string never matches.
pub fn verify(password: &str, phc: &str) -> bool {
    let Ok(parsed) = PasswordHash::new(phc) else { return false };
    if parsed.algorithm.as_str() != "argon2id" {
        return false;
    }
    Argon2::default().verify_password(password.as_bytes(), &parsed).is_ok()
}

/// Whether a PHC string was made with other than the current algorithm, version or
/// parameters (then a successful sign-in stores a new hash).
pub fn needs_rehash(phc: &str) -> bool {
    let Ok(parsed) = PasswordHash::new(phc) else { return true };
    if parsed.algorithm.as_str() != "argon2id" || parsed.version != Some(u32::from(Version::V0x13)) {
        return true;
    }
    let Ok(p) = Params::try_from(&parsed) else { return true };
    p.m_cost() != M_COST || p.t_cost() != T_COST || p.p_cost() != P_COST
}

/// A hash of a random password with the current parameters: verified against when the
/// address has no account (or no password), so that the answer takes as long either way.
pub fn dummy_hash() -> &'static str {
    static DUMMY: OnceLock<String> = OnceLock::new();
    DUMMY.get_or_init(|| {
        let random = crate::crypto::new_token(32);
        hash(random.expose()).unwrap_or_default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_verify_and_rehash_rules() {
        let h = hash("correct horse battery").unwrap();
        assert!(h.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{h}");
        assert!(verify("correct horse battery", &h));
        assert!(!verify("correct horse batterY", &h));
        assert!(!needs_rehash(&h));
        let weak = hash_with("correct horse battery", Params::new(1024, 1, 1, None).unwrap()).unwrap();
        assert!(verify("correct horse battery", &weak), "verified with its own parameters");
        assert!(needs_rehash(&weak));
        assert!(!verify("x", "not a phc string"));
        assert!(needs_rehash("not a phc string"));
        assert!(check_length("123456789").is_err());
        assert!(check_length("1234567890").is_ok());
        assert!(check_length(&"é".repeat(200)).is_ok());
        assert!(check_length(&"é".repeat(201)).is_err());
    }
}
