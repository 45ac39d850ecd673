//! `[quotas]`: unauthenticated writes per hour, and active intents per person.

use super::ConfigError;

numeric_section! {
    /// `[quotas]`: hourly ceilings on the writes anyone may cause without signing in. Each is
    /// counted over the last 60 minutes (a sliding window in one-minute steps); a client is
    /// an address as [`crate::net::ClientAddr::key`] folds it (IPv4, or an IPv6 /64).
    pub struct Quotas in "quotas" {
        /// Drafts (`intent_publish_intent` on `/mcp`) per client address (default 60; 1..=10000).
        drafts_per_client_per_hour: u32 = 60, 1..=10_000;
        /// Consents recorded (each queueing a confirmation e-mail) per client address
        /// (default 20; 1..=10000).
        consents_per_client_per_hour: u32 = 20, 1..=10_000;
        /// Consents recorded per client network — an IPv4 /24 or an IPv6 /48
        /// ([`crate::net::network_key`]) — so that rotating through the addresses of one
        /// network does not multiply the per-address allowance (default 60; 1..=100000).
        consents_per_network_per_hour: u32 = 60, 1..=100_000;
        /// Confirmation e-mails per target e-mail address (default 5; 1..=100).
        consents_per_address_per_hour: u32 = 5, 1..=100;
        /// Confirmation e-mails for the whole holder (default 500; 1..=1000000).
        confirmation_mails_per_hour: u32 = 500, 1..=1_000_000;
        /// The share of `confirmation_mails_per_hour`, in percent (rounded down), that only
        /// consents for a known person may use: an e-mail address that confirmed an intent
        /// before, or that has an account. Consents for anyone else stop at the rest, so a
        /// flood of new addresses never closes the holder to the people who use it (default
        /// 20; 1..=90: never 0, so the ceiling is never one switch a flood can flip).
        confirmation_mails_reserved_percent: u32 = 20, 1..=90;
        /// OAuth dynamic client registrations (RFC 7591) per client address (default 20; 1..=10000).
        registrations_per_client_per_hour: u32 = 20, 1..=10_000;
        /// Active intents one person — a verified e-mail address (folded: case, `+tag`,
        /// Gmail dots) or an account with its address — may hold at once (PROTOCOL.md §3
        /// "Limits"; default 20; 1..=10000). Not per hour: a count of what is active now.
        active_intents_per_person: u32 = 20, 1..=10_000;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotas_are_checked_against_their_ranges() {
        assert_eq!(Quotas::default().checked().unwrap(), Quotas::default());
        let f = Quotas { drafts_per_client_per_hour: 0, ..Default::default() };
        let e = f.checked().unwrap_err().to_string();
        assert!(e.contains("quotas.drafts_per_client_per_hour") && e.contains("1..=10000"), "{e}");
        let f = Quotas { consents_per_address_per_hour: 101, ..Default::default() };
        let e = f.checked().unwrap_err().to_string();
        assert!(e.contains("quotas.consents_per_address_per_hour") && e.contains("1..=100"), "{e}");
        let f = Quotas { registrations_per_client_per_hour: 3, ..Default::default() };
        let q = f.checked().unwrap();
        assert_eq!((q.registrations_per_client_per_hour, q.drafts_per_client_per_hour), (3, 60));
        assert_eq!(q.active_intents_per_person, 20);
        let f = Quotas { active_intents_per_person: 0, ..Default::default() };
        let e = f.checked().unwrap_err().to_string();
        assert!(e.contains("quotas.active_intents_per_person") && e.contains("1..=10000"), "{e}");
        let f = Quotas { confirmation_mails_reserved_percent: 0, ..Default::default() };
        let e = f.checked().unwrap_err().to_string();
        assert!(e.contains("quotas.confirmation_mails_reserved_percent") && e.contains("1..=90"), "{e}");
        let f = Quotas { consents_per_network_per_hour: 0, ..Default::default() };
        let e = f.checked().unwrap_err().to_string();
        assert!(e.contains("quotas.consents_per_network_per_hour") && e.contains("1..=100000"), "{e}");
        let f = Quotas { active_intents_per_person: 3, ..Default::default() };
        assert_eq!(f.checked().unwrap().active_intents_per_person, 3);
    }
}
