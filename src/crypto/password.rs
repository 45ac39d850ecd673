//! Passwords: argon2id with the OWASP parameters (m = 19 456 KiB, t = 2, p = 1), stored
//! as PHC strings (`$argon2id$v=19$m=19456,t=2,p=1$<salt>$<hash>`).
//!
//! Verification uses the parameters written in the PHC string itself, so hashes made
//! with older parameters keep working; [`needs_rehash`] tells the sign-in to store a new
//! hash with the current parameters after a successful verification. Hashing takes tens
//! of milliseconds and 19 MiB: callers run it on blocking threads and bound how many run
//! at once.
//!
//! The 19 MiB of argon2 working memory come from a small pool of buffers that are reused
//! and never freed ([`MAX_POOLED`]), wiped before they go back: allocated per hash, they
//! would stay with the process (glibc raises its mmap threshold when such a block is
//! freed, and later blocks come from per-thread arenas that are not given back).

use super::CryptoError;
use argon2::password_hash::{Output, ParamsString, PasswordHash, SaltString};
use argon2::{Algorithm, Argon2, Block, Params, Version};
use rand::RngCore;
use std::sync::{Mutex, OnceLock};

#[cfg(any(test, feature = "testkit"))]
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
    let mut out = [0u8; Params::DEFAULT_OUTPUT_LEN];
    let argon = Argon2::new(Algorithm::Argon2id, Version::V0x13, params.clone());
    with_blocks(params.block_count(), |blocks| {
        argon.hash_password_into_with_memory(password.as_bytes(), &salt, &mut out, blocks)
    })
    .map_err(|e| CryptoError::Hash(e.to_string()))?;
    phc_string(&params, &salt, &out)
}

/// The argon2id (v19) PHC string of `out` under `params` and `salt`.
fn phc_string(params: &Params, salt: &[u8], out: &[u8]) -> Result<String, CryptoError> {
    let fail = |e: &dyn std::fmt::Display| CryptoError::Hash(e.to_string());
    let salt = SaltString::encode_b64(salt).map_err(|e| fail(&e))?;
    let phc = PasswordHash {
        algorithm: Algorithm::Argon2id.ident(),
        version: Some(Version::V0x13.into()),
        params: ParamsString::try_from(params).map_err(|e| fail(&e))?,
        salt: Some(salt.as_salt()),
        hash: Some(Output::new(out).map_err(|e| fail(&e))?),
    };
    Ok(phc.to_string())
}

/// Whether `password` matches the PHC string `phc`, with the string's own algorithm,
/// version and parameters (constant-time comparison). A malformed string never matches.
pub fn verify(password: &str, phc: &str) -> bool {
    let Ok(parsed) = PasswordHash::new(phc) else { return false };
    if parsed.algorithm.as_str() != "argon2id" {
        return false;
    }
    let Ok(version) = parsed.version.map_or(Ok(Version::default()), Version::try_from) else { return false };
    let (Ok(params), Some(salt), Some(expected)) = (Params::try_from(&parsed), parsed.salt, parsed.hash) else {
        return false;
    };
    let mut salt_buf = [0u8; 64];
    let Ok(salt) = salt.decode_b64(&mut salt_buf) else { return false };
    let mut out = vec![0u8; expected.len()];
    let Ok(params) = Params::new(params.m_cost(), params.t_cost(), params.p_cost(), Some(expected.len())) else {
        return false;
    };
    let argon = Argon2::new(Algorithm::Argon2id, version, params.clone());
    let hashed = with_blocks(params.block_count(), |blocks| {
        argon.hash_password_into_with_memory(password.as_bytes(), salt, &mut out, blocks)
    });
    // `Output`'s equality is constant-time.
    hashed.is_ok() && Output::new(&out).is_ok_and(|o| o == expected)
}

/// Most argon2 working buffers kept for reuse (the web pages run at most 16 hashes at
/// once; a buffer beyond the pool is allocated for that hash and freed after it).
pub const MAX_POOLED: usize = 16;

/// Runs `f` over `n` zeroed argon2 blocks from the pool (see the module docs).
fn with_blocks<T>(n: usize, f: impl FnOnce(&mut [Block]) -> T) -> T {
    static POOL: Mutex<Vec<Vec<Block>>> = Mutex::new(Vec::new());
    let pooled = POOL.lock().ok().and_then(|mut p| {
        let i = p.iter().position(|b| b.len() == n)?;
        Some(p.swap_remove(i))
    });
    let mut blocks = pooled.unwrap_or_else(|| vec![Block::default(); n]);
    let out = f(&mut blocks);
    blocks.fill(Block::default());
    if let Ok(mut p) = POOL.lock() {
        if p.len() < MAX_POOLED {
            p.push(blocks);
        }
    }
    out
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

/// A PHC string with the current parameters, a random salt and a random output:
/// verified against when the address has no account (or no password), so that the
/// answer takes as long either way ([`verify`] does the full argon2 work of the string's
/// parameters and then compares). No password hashes to it that anyone knows, and making
/// it costs no argon2 work and no working memory.
pub fn dummy_hash() -> &'static str {
    static DUMMY: OnceLock<String> = OnceLock::new();
    DUMMY.get_or_init(|| unusable_hash().unwrap_or_default())
}

/// A fresh PHC string as [`dummy_hash`] keeps one; [`CryptoError::Hash`] is never
/// returned (the parts are valid).
fn unusable_hash() -> Result<String, CryptoError> {
    let mut bytes = [0u8; 16 + Params::DEFAULT_OUTPUT_LEN];
    rand::rng().fill_bytes(&mut bytes);
    let (salt, out) = bytes.split_at(16);
    phc_string(&params(), salt, out)
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
        assert_eq!(check_length("123456789"), Err("the password must have 10 to 200 characters"));
        assert!(check_length("1234567890").is_ok());
        assert!(check_length(&"é".repeat(200)).is_ok());
        assert_eq!(check_length(&"é".repeat(201)), Err("the password must have 10 to 200 characters"));
    }

    #[test]
    fn the_dummy_hash_has_the_current_parameters_and_matches_nothing() {
        let d = dummy_hash();
        assert!(d.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{d}");
        assert!(!needs_rehash(d), "verified with the current parameters: as slow as a real hash");
        let parsed = PasswordHash::new(d).unwrap();
        assert_eq!(parsed.hash.map(|h| h.len()), Some(Params::DEFAULT_OUTPUT_LEN));
        assert!(!verify("", d) && !verify("correct horse battery", d));
        // Random each time: salt and output.
        let (a, b) = (unusable_hash().unwrap(), unusable_hash().unwrap());
        assert_ne!(a, b);
        assert_ne!(PasswordHash::new(&a).unwrap().salt, PasswordHash::new(&b).unwrap().salt);
    }

    #[test]
    fn pooled_hashing_is_the_standard_phc_both_ways() {
        use argon2::password_hash::{PasswordHasher, PasswordVerifier};
        // Ours verifies with the library's verifier ...
        let ours = hash("correct horse battery").unwrap();
        assert!(ours.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{ours}");
        let parsed = PasswordHash::new(&ours).unwrap();
        assert!(Argon2::default().verify_password(b"correct horse battery", &parsed).is_ok());
        assert_eq!(
            Argon2::default().verify_password(b"wrong horse battery", &parsed),
            Err(argon2::password_hash::Error::Password)
        );
        // ... and the library's hash (other parameters, other output length) with ours.
        let salt = SaltString::encode_b64(b"0123456789abcdef").unwrap();
        let lib = Argon2::new(Algorithm::Argon2id, Version::V0x13, Params::new(1024, 1, 1, Some(16)).unwrap())
            .hash_password(b"correct horse battery", &salt)
            .unwrap()
            .to_string();
        assert!(verify("correct horse battery", &lib));
        assert!(!verify("correct horse batterz", &lib));
        // Concurrent hashes share the bounded pool and all verify.
        let hashes: Vec<String> = std::thread::scope(|sc| {
            let hs: Vec<_> = (0..4)
                .map(|_| sc.spawn(|| hash_with("pw-0123456789", Params::new(1024, 1, 1, None).unwrap()).unwrap()))
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(hashes.iter().all(|h| verify("pw-0123456789", h)));
    }
}
