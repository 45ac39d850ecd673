//! The admin socket's requests as one typed enum, shared by the client (`isto admin …`)
//! and the server ([`super::socket`]). On the wire a request is one JSON object on one
//! line whose `"op"` names the operation (`snake_case`, the names every isto version
//! used: an older client talks to a newer server) and whose other members are its
//! fields; members an operation does not know are ignored.

use crate::sellers::NewSeller;
use crate::store::Cursor;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One admin socket request (the answers are described with each op's module).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    /// `{"op":"ping"}` → `{"ok":true,"version":…}`.
    Ping,
    /// One import batch (at most [`super::MAX_ROWS`] rows).
    Import {
        /// The offer rows.
        rows: Vec<Value>,
        /// The full-feed run (`null` or absent: not a full feed).
        #[serde(default)]
        run: Option<String>,
    },
    /// Ends a full-feed import: the offers of its sellers the run did not send are withdrawn.
    FinishFull {
        /// The run id sent with the batches.
        run: String,
    },
    /// `isto admin seller add`.
    SellerAdd {
        /// The new seller.
        seller: NewSeller,
    },
    /// `isto admin seller list`.
    SellerList,
    /// `isto admin seller disable`.
    SellerDisable {
        /// `acc_…` or `sel_…`.
        id: String,
    },
    /// `isto admin seller enable`.
    SellerEnable {
        /// `acc_…` or `sel_…`.
        id: String,
    },
    /// `isto admin purge`.
    Purge {
        /// Count only: the transaction is rolled back.
        #[serde(rename = "dryRun", default)]
        dry_run: bool,
    },
    /// `isto admin migrate`: the server's versions.
    Migrate,
    /// `isto admin stats`.
    Stats,
    /// `isto admin backup`: answered with many lines.
    Backup,
    /// `isto admin keys status`.
    KeysStatus,
    /// `isto admin keys rotate`.
    KeysRotate,
    /// One re-seal batch of a rotation.
    KeysReseal {
        /// Where the previous batch stopped (absent: the start).
        #[serde(default)]
        cursor: Option<Cursor>,
        /// Most rows in this batch (clamped to 1..=5000; absent: the default batch).
        #[serde(default)]
        limit: Option<u64>,
    },
    /// `isto admin keys retire`.
    KeysRetire {
        /// The key id to retire.
        kid: String,
    },
}

impl Request {
    /// Every op's wire name, in the order of the enum.
    pub const OPS: [&'static str; 15] = [
        "ping",
        "import",
        "finish_full",
        "seller_add",
        "seller_list",
        "seller_disable",
        "seller_enable",
        "purge",
        "migrate",
        "stats",
        "backup",
        "keys_status",
        "keys_rotate",
        "keys_reseal",
        "keys_retire",
    ];

    /// This request's op (its `"op"` on the wire): the name serde gives its variant,
    /// as listed in [`Self::OPS`].
    pub fn op(&self) -> &'static str {
        let line = serde_json::to_value(self).unwrap_or_default();
        Self::OPS.into_iter().find(|op| line["op"] == *op).unwrap_or("unknown")
    }

    /// Reads one request line.
    ///
    /// # Errors
    /// The message for the client: `the request is not JSON: …`; `the request needs
    /// "op": one of ping, import, …`; `unknown op "drop" (known: ping, import, …)`;
    /// `import: missing field `rows`` (the op, then what is wrong with its fields).
    pub fn parse(line: &[u8]) -> Result<Self, String> {
        let v: Value = serde_json::from_slice(line).map_err(|e| format!("the request is not JSON: {e}"))?;
        let known = || Self::OPS.join(", ");
        let Some(op) = v.get("op").and_then(Value::as_str) else {
            return Err(format!("the request needs \"op\": one of {}", known()));
        };
        if !Self::OPS.contains(&op) {
            let shown = crate::protocol::input::echo(op);
            return Err(format!("unknown op {shown:?} (known: {})", known()));
        }
        let op = op.to_owned();
        serde_json::from_value(v).map_err(|e| format!("{op}: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_and_missing_ops_are_named() {
        // Before: `unknown op "drop" (known: ping, import, finish_full)`, a list that
        // lacked twelve of the fifteen ops.
        let e = Request::parse(br#"{"op":"drop"}"#).unwrap_err();
        assert!(e.starts_with("unknown op \"drop\" (known: ping, import, finish_full, seller_add,"), "{e}");
        assert!(e.ends_with("keys_reseal, keys_retire)"), "{e}");
        let e = Request::parse(br#"{"rows":[]}"#).unwrap_err();
        assert!(e.starts_with("the request needs \"op\": one of ping, import,"), "{e}");
        let e = Request::parse(br#"{"op":42}"#).unwrap_err();
        assert!(e.starts_with("the request needs \"op\""), "{e}");
        assert!(Request::parse(b"not json").unwrap_err().starts_with("the request is not JSON"));
        assert_eq!(Request::parse(br#"{"op":"import"}"#).unwrap_err(), "import: missing field `rows`");
        assert_eq!(Request::parse(br#"{"op":"keys_retire"}"#).unwrap_err(), "keys_retire: missing field `kid`");
    }

    #[test]
    fn the_wire_form_is_what_older_clients_send() {
        let cases = [
            (json!({"op": "ping"}), Request::Ping),
            (json!({"op": "import", "rows": [], "run": null}), Request::Import { rows: vec![], run: None }),
            (json!({"op": "finish_full", "run": "r1"}), Request::FinishFull { run: "r1".into() }),
            (json!({"op": "seller_list"}), Request::SellerList),
            (json!({"op": "seller_disable", "id": "acc_1"}), Request::SellerDisable { id: "acc_1".into() }),
            (json!({"op": "purge", "dryRun": true}), Request::Purge { dry_run: true }),
            (json!({"op": "purge"}), Request::Purge { dry_run: false }),
            (json!({"op": "migrate"}), Request::Migrate),
            (json!({"op": "stats"}), Request::Stats),
            (json!({"op": "backup"}), Request::Backup),
            (json!({"op": "keys_reseal", "limit": 1}), Request::KeysReseal { cursor: None, limit: Some(1) }),
            (json!({"op": "keys_retire", "kid": "k2"}), Request::KeysRetire { kid: "k2".into() }),
        ];
        for (wire, typed) in cases {
            let line = wire.to_string();
            assert_eq!(Request::parse(line.as_bytes()).unwrap(), typed, "{line}");
            assert_eq!(wire["op"], typed.op());
            let back: Value = serde_json::from_slice(&serde_json::to_vec(&typed).unwrap()).unwrap();
            assert_eq!(back["op"], typed.op());
        }
        // Members an op does not know are ignored (a newer client's extras).
        assert_eq!(Request::parse(br#"{"op":"ping","extra":1}"#).unwrap(), Request::Ping);
        let seller = json!({"op": "seller_add", "seller": {"name": "A", "email": "a@example.org"}});
        assert!(matches!(Request::parse(seller.to_string().as_bytes()), Ok(Request::SellerAdd { .. })));
    }

    #[test]
    fn every_op_is_listed() {
        for op in Request::OPS {
            let e = Request::parse(format!("{{\"op\":\"{op}\"}}").as_bytes());
            assert!(e.as_ref().map_or_else(|m| m.starts_with(&format!("{op}: ")), |r| r.op() == op), "{op}: {e:?}");
        }
        let mut ops = Request::OPS.to_vec();
        ops.sort_unstable();
        ops.dedup();
        assert_eq!(ops.len(), Request::OPS.len());
    }
}
