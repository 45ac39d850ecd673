//! Person keys (PROTOCOL.md §3 "Limits", §5): a keyed hash that tells two intents of
//! one person apart from two intents of two people, without saying who the person is.
//!
//! The key is `"per_" + HMAC-SHA-256(MAC key, "person", normalised e-mail address)`
//! (base64url) of the intent's verified e-mail address: the address given on the
//! consent page for a consent-link intent, the account's address for an intent owned by
//! an account (`/mcp/buyer`) — so an account's intents and the consent-link intents of
//! its address are one person. It is stored on the intent
//! ([`crate::records::IntentRecord::person`]) and in the store's person index, so that
//! demand counting and the per-person cap never open a sealed contact.
//!
//! **Normalisation** ([`normalise_email`]): the whole address lower-cased, the
//! sub-address tag (`+…` in the local part) removed, and for Gmail
//! (`gmail.com`, `googlemail.com`) the dots of the local part removed and the domain
//! written `gmail.com`: `A.B+shop@GoogleMail.com` and `ab@gmail.com` are one person.
//! Other providers' dots stay (they are significant elsewhere); `-` tags stay (too many
//! real addresses contain a dash). See `docs/choices.md`.
//!
//! The MAC key is the key ring's current one: after a key rotation, intents that became
//! active before and after it count as two people until the older ones end.

use crate::crypto::KeyRing;

/// Prefix of every person key.
pub const PREFIX: &str = "per_";

/// The domains whose local part ignores dots (Gmail), and the one they fold to.
const DOTLESS: [&str; 2] = ["gmail.com", "googlemail.com"];

/// `email` folded to the one form every address of the same mailbox shares (the module
/// docs' rule). The input is an address [`crate::protocol::input::validate_email`]
/// accepted (anything else folds to its trimmed lower case).
pub fn normalise_email(email: &str) -> String {
    let e = email.trim().to_ascii_lowercase();
    let Some((local, domain)) = e.rsplit_once('@') else { return e };
    let local = match local.split_once('+') {
        Some((l, _)) if !l.is_empty() => l,
        _ => local,
    };
    if DOTLESS.contains(&domain) {
        let local: String = local.chars().filter(|c| *c != '.').collect();
        return format!("{local}@{}", DOTLESS[0]);
    }
    format!("{local}@{domain}")
}

/// The person key of a verified e-mail address: `"per_"` + the keyed hash of its
/// normalised form (see the module docs). Never logged, never shown.
pub fn person_key(keys: &KeyRing, email: &str) -> String {
    format!("{PREFIX}{}", keys.mac(&[b"person", normalise_email(email).as_bytes()]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_of_one_mailbox_fold_to_one_form() {
        let cases = [
            ("Ann@Example.com", "ann@example.com"),
            ("ann+1@example.com", "ann@example.com"),
            ("ann+shop+x@example.com", "ann@example.com"),
            ("a.n.n@example.com", "a.n.n@example.com"),
            ("ann-1@example.com", "ann-1@example.com"),
            ("A.nn+x@gmail.com", "ann@gmail.com"),
            ("a.n.n@GoogleMail.com", "ann@gmail.com"),
            (" ann@example.com ", "ann@example.com"),
            ("+x@example.com", "+x@example.com"),
            ("no-at-sign", "no-at-sign"),
        ];
        for (input, want) in cases {
            assert_eq!(normalise_email(input), want, "{input}");
        }
    }

    #[test]
    fn the_key_is_keyed_and_follows_the_normalisation() {
        let k = KeyRing::ephemeral();
        let a = person_key(&k, "ann+1@example.com");
        assert!(a.starts_with(PREFIX) && !a.contains("ann"), "{a}");
        assert_eq!(a, person_key(&k, "ANN+2@example.com"));
        assert_ne!(a, person_key(&k, "bob@example.com"));
        assert_ne!(a, person_key(&KeyRing::ephemeral(), "ann@example.com"), "another key ring, another key");
    }
}
