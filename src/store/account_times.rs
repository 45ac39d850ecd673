//! Migrations 6 (`account_times`, see [`v6_account_times`]) and 7 (`record_times`, see
//! [`v7_record_times`]): the times of accounts, web sessions, one-time links and
//! throttle counters, then those of OAuth records, seller profiles and confirmation
//! marks, become unix microseconds (`records::Stamp`), as migration 5 made those of
//! intent records. Both convert through the helpers of `intent_times`.

use super::intent_times::{convert_records, convert_time, rewrite_records, NsTimes, Old};
use super::schema::RECORDS;
use super::{Result, Tx};

/// The record namespaces (key prefixes of `records`) and their RFC 3339 times (schema ≤ 5).
const ACCOUNT_TIMES: [NsTimes; 3] = [
    ("account:", Old::Rfc3339, &["created_at", "consent_at"]),
    ("session:", Old::Rfc3339, &["created_at", "expires_at", "last_seen"]),
    ("signin:", Old::Rfc3339, &["created_at", "expires_at"]),
];

/// 6: every time of [`ACCOUNT_TIMES`] and of a throttle counter (`times`, unix seconds)
/// becomes unix microseconds (`records::Stamp`), converted by the rule of migration 5
/// (`intent_times`): a value the older isto never wrote is left as it was.
pub(super) fn v6_account_times(tx: &mut Tx<'_>) -> Result<()> {
    let mut records = tx.open(RECORDS)?;
    convert_records(&mut records, &ACCOUNT_TIMES)?;
    rewrite_records(&mut records, "records", "throttle:", |rec| match rec.get_mut("times") {
        Some(serde_json::Value::Array(times)) => times.iter_mut().fold(false, |c, t| convert_time(t, Old::Secs) | c),
        _ => false,
    })
}

/// The record namespaces whose times migration 7 converts: OAuth clients, codes,
/// tokens, token families and answered consent forms (unix seconds up to schema 6), and
/// seller profiles (`createdAt`, RFC 3339; the namespace's other records — reply
/// counters, lists — have no such field).
const RECORD_TIMES: [NsTimes; 6] = [
    ("client:", Old::Secs, &["client_id_issued_at", "last_used_at"]),
    ("authcode:", Old::Secs, &["expires_at"]),
    ("token:", Old::Secs, &["issued_at", "expires_at", "used_at"]),
    ("family:", Old::Secs, &["created_at", "expires_at"]),
    ("authdecision:", Old::Secs, &["expires_at"]),
    ("seller:", Old::Rfc3339, &["createdAt"]),
];

/// 7: every time of [`RECORD_TIMES`] and the confirmation marks (`confirmed:…`, one
/// integer of unix seconds each) become unix microseconds, converted as migrations 5 and
/// 6 convert.
pub(super) fn v7_record_times(tx: &mut Tx<'_>) -> Result<()> {
    let mut records = tx.open(RECORDS)?;
    convert_records(&mut records, &RECORD_TIMES)?;
    rewrite_records(&mut records, "records", "confirmed:", |mark| convert_time(mark, Old::Secs))
}

#[cfg(test)]
mod tests {
    use super::super::{Ns, Reads};
    use super::*;
    use serde_json::{json, Value};

    /// Microseconds of an RFC 3339 time.
    fn micros(s: &str) -> i64 {
        let t = time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).unwrap();
        (t.unix_timestamp_nanos() / 1000) as i64
    }

    /// Records as isto wrote them at schema version 5 (RFC 3339 strings, unix seconds),
    /// one of each with a time the older isto never wrote; migration 6 run over them.
    #[test]
    fn account_session_link_and_throttle_times_become_microseconds_and_a_bad_one_is_left() {
        for (backend, s, _d) in crate::store::testpg::both() {
            eprintln!("backend: {backend}");
            let t0 = "2026-12-01T10:00:00Z";
            let t1 = "2026-12-15T10:00:00+01:00";
            let old = [
                (Ns::Account, "acc_a", json!({"id": "acc_a", "created_at": t0, "consent_at": t0, "disabled": false})),
                (Ns::Account, "acc_seller", json!({"id": "acc_seller", "created_at": t0, "disabled": false})),
                (Ns::Account, "acc_bad", json!({"id": "acc_bad", "created_at": "last week", "consent_at": t0})),
                (
                    Ns::Session,
                    "session:a",
                    json!({"account_id": "acc_a", "created_at": t0, "expires_at": t1, "last_seen": null}),
                ),
                (Ns::Session, "session:bad", json!({"account_id": "acc_a", "created_at": t0, "expires_at": 17})),
                (Ns::SignInLink, "signin:a", json!({"kind": "signin", "created_at": t0, "expires_at": t1})),
                (Ns::Throttle, "login:a", json!({"times": [1_796_119_200, "x"]})),
                (Ns::Client, "c", json!({"created_at": 1_796_119_200})),
            ];
            s.write(|tx| {
                for (ns, k, v) in &old {
                    tx.put_record(*ns, k, v)?;
                }
                v6_account_times(tx)
            })
            .unwrap();
            let get = |ns: Ns, k: &str| s.read(|rx| rx.record::<Value>(ns, k)).unwrap().unwrap();
            let a = get(Ns::Account, "acc_a");
            assert_eq!((&a["created_at"], &a["consent_at"]), (&json!(micros(t0)), &json!(micros(t0))), "{a}");
            assert_eq!(
                get(Ns::Account, "acc_seller"),
                json!({"id": "acc_seller", "created_at": micros(t0), "disabled": false})
            );
            let bad = get(Ns::Account, "acc_bad");
            assert_eq!(
                (&bad["created_at"], &bad["consent_at"]),
                (&json!("last week"), &json!(micros(t0))),
                "left as it was"
            );
            let sa = get(Ns::Session, "session:a");
            assert_eq!(
                sa,
                json!({"account_id": "acc_a", "created_at": micros(t0), "expires_at": micros(t1), "last_seen": null})
            );
            assert_eq!(
                get(Ns::Session, "session:bad")["expires_at"],
                json!(17),
                "an integer was never an RFC 3339 time"
            );
            let l = get(Ns::SignInLink, "signin:a");
            assert_eq!((&l["created_at"], &l["expires_at"]), (&json!(micros(t0)), &json!(micros(t1))));
            assert_eq!(get(Ns::Throttle, "login:a"), json!({"times": [1_796_119_200_000_000i64, "x"]}));
            assert_eq!(get(Ns::Client, "c"), json!({"created_at": 1_796_119_200}), "other namespaces are not touched");
            // Run again (a store migrated twice): nothing changes.
            s.write(v6_account_times).unwrap();
            assert_eq!(get(Ns::Throttle, "login:a"), json!({"times": [1_796_119_200_000_000i64, "x"]}));
            assert_eq!(get(Ns::Session, "session:a")["expires_at"], json!(micros(t1)));
        }
    }

    /// Records as isto wrote them at schema version 6 (unix seconds, RFC 3339 strings),
    /// one of each kind with a time the older isto never wrote; migration 7 run over them.
    #[test]
    fn oauth_seller_and_confirmation_times_become_microseconds_and_a_bad_one_is_left() {
        for (backend, s, _d) in crate::store::testpg::both() {
            eprintln!("backend: {backend}");
            let (sec, us) = (1_796_119_200i64, 1_796_119_200_000_000i64);
            let t0 = "2026-12-01T10:00:00Z";
            let old = [
                (Ns::Client, "cli_a", json!({"client_id": "cli_a", "client_id_issued_at": sec, "last_used_at": null})),
                (Ns::Client, "cli_b", json!({"client_id_issued_at": sec, "last_used_at": sec + 60})),
                (Ns::AuthCode, "oauth-code:aa", json!({"expires_at": sec + 60, "family": null})),
                (Ns::AuthCode, "oauth-code:bad", json!({"expires_at": "in a minute"})),
                (
                    Ns::Token,
                    "oauth-refresh:aa",
                    json!({"issued_at": sec, "expires_at": sec + 3600, "used": true, "used_at": sec + 5}),
                ),
                (Ns::Token, "oauth-access:aa", json!({"issued_at": sec, "expires_at": sec + 3600})),
                (Ns::TokenFamily, "fam_a", json!({"created_at": sec, "expires_at": sec + 86400, "revoked": false})),
                (Ns::AuthDecision, "oauth-consent-form:aa", json!({"expires_at": sec + 7260})),
                (Ns::Seller, "acc_s", json!({"accountId": "acc_s", "createdAt": t0})),
                (Ns::Seller, "acc_bad", json!({"accountId": "acc_bad", "createdAt": 17})),
                (Ns::Seller, "replies:acc_s:int_a", json!(["off_a"])),
                (Ns::Confirmed, "per_a", json!(sec)),
                (Ns::Confirmed, "per_bad", json!("yesterday")),
                (Ns::Session, "session:a", json!({"expires_at": sec})),
            ];
            s.write(|tx| {
                for (ns, k, v) in &old {
                    tx.put_record(*ns, k, v)?;
                }
                v7_record_times(tx)
            })
            .unwrap();
            let get = |ns: Ns, k: &str| s.read(|rx| rx.record::<Value>(ns, k)).unwrap().unwrap();
            assert_eq!(
                get(Ns::Client, "cli_a"),
                json!({"client_id": "cli_a", "client_id_issued_at": us, "last_used_at": null})
            );
            assert_eq!(get(Ns::Client, "cli_b"), json!({"client_id_issued_at": us, "last_used_at": us + 60_000_000}));
            assert_eq!(get(Ns::AuthCode, "oauth-code:aa"), json!({"expires_at": us + 60_000_000, "family": null}));
            assert_eq!(get(Ns::AuthCode, "oauth-code:bad"), json!({"expires_at": "in a minute"}), "left as it was");
            assert_eq!(
                get(Ns::Token, "oauth-refresh:aa"),
                json!({"issued_at": us, "expires_at": us + 3_600_000_000i64, "used": true, "used_at": us + 5_000_000})
            );
            assert_eq!(get(Ns::Token, "oauth-access:aa")["expires_at"], json!(us + 3_600_000_000i64));
            assert_eq!(
                get(Ns::TokenFamily, "fam_a"),
                json!({"created_at": us, "expires_at": us + 86_400_000_000i64, "revoked": false})
            );
            assert_eq!(get(Ns::AuthDecision, "oauth-consent-form:aa"), json!({"expires_at": us + 7_260_000_000i64}));
            assert_eq!(get(Ns::Seller, "acc_s"), json!({"accountId": "acc_s", "createdAt": micros(t0)}));
            assert_eq!(get(Ns::Seller, "acc_bad")["createdAt"], json!(17), "an integer was never an RFC 3339 time");
            assert_eq!(get(Ns::Seller, "replies:acc_s:int_a"), json!(["off_a"]));
            assert_eq!(get(Ns::Confirmed, "per_a"), json!(us));
            assert_eq!(get(Ns::Confirmed, "per_bad"), json!("yesterday"));
            assert_eq!(get(Ns::Session, "session:a"), json!({"expires_at": sec}), "other namespaces are not touched");
            // Run again (a store migrated twice): nothing changes.
            s.write(v7_record_times).unwrap();
            assert_eq!(get(Ns::Confirmed, "per_a"), json!(us));
            assert_eq!(get(Ns::Client, "cli_b")["last_used_at"], json!(us + 60_000_000));
        }
    }
}
