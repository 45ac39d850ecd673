//! Migration 6 (`account_times`, see [`v6_account_times`]): the times of accounts, web
//! sessions, one-time links and throttle counters become unix microseconds
//! (`records::Stamp`), as migration 5 made those of intent records.

use super::intent_times::{convert_times, rewrite_records, secs_as_micros};
use super::schema::RECORDS;
use super::{Result, Tx};

/// The record namespaces (key prefixes of `records`) and their RFC 3339 times (schema ≤ 5).
const RFC3339_TIMES: [(&str, &[&str]); 3] = [
    ("account:", &["created_at", "consent_at"]),
    ("session:", &["created_at", "expires_at", "last_seen"]),
    ("signin:", &["created_at", "expires_at"]),
];

/// 6: every time of an account (`created_at`, `consent_at`), a web session
/// (`created_at`, `expires_at`, `last_seen`), a one-time link (`created_at`,
/// `expires_at`) and a throttle counter (`times`, unix seconds) becomes unix
/// microseconds (`records::Stamp`). As in migration 5, a field is converted only when it
/// holds what the older isto wrote (a string that parses, an integer of seconds); any
/// other value is left as it was, so that reading the record fails naming it instead of
/// the migration inventing a time (or a session counting as expired).
pub(super) fn v6_account_times(tx: &mut Tx<'_>) -> Result<()> {
    let mut records = tx.open(RECORDS)?;
    for (prefix, fields) in RFC3339_TIMES {
        rewrite_records(&mut records, prefix, |rec| convert_times(rec, fields))?;
    }
    rewrite_records(&mut records, "throttle:", |rec| {
        let Some(serde_json::Value::Array(times)) = rec.get_mut("times") else { return false };
        let mut changed = false;
        for t in times.iter_mut() {
            if let Some(micros) = secs_as_micros(t) {
                *t = micros.into();
                changed = true;
            }
        }
        changed
    })
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
}
