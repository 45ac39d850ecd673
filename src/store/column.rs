//! The key and value types of the store's tables ([`Column`]): how each is written
//! into a backup row and read back (`dump`), and its order-preserving byte form, which
//! the PostgreSQL backend stores in `bytea` columns (`table`, `pg`).
//!
//! The byte form sorts (as bytes, which is how PostgreSQL compares `bytea`) exactly as
//! redb sorts the typed keys, so a range scan returns the same rows in the same order
//! on both backends:
//! - `u64`: 8 bytes big-endian; `i64`: the same with the sign bit flipped (negative
//!   numbers first);
//! - a string or byte string as the last part of a key: its bytes as they are; inside a
//!   tuple: each zero byte as `00 FF`, then the terminator `00 01`;
//! - a tuple: its parts in order; `()`: nothing; `Option<i64>` (values only): `00`, or
//!   `01` and the number.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use serde_json::value::RawValue;
use std::fmt::Write as _;

/// A key or value type of a table: how it is written into a row and read back.
pub trait Column: redb::Value + Sync + 'static {
    /// What a row is read into.
    type Owned: serde::Serialize + serde::de::DeserializeOwned;
    /// Appends the value to `row`: `,"v":…` (or `,"b":…`; nothing for `()`), or, as a
    /// key, `,"k":…`.
    fn write(v: &Self::SelfType<'_>, name: &str, row: &mut String) {
        field(row, name, &json_of(&Self::owned(v)));
    }
    /// Reads the value back from its field (`v` or `k`) or from `b`.
    fn read(v: Option<&RawValue>, _b: Option<&str>) -> Option<Self::Owned> {
        parse(v)
    }
    /// The stored form of a value read back.
    fn stored(o: &Self::Owned) -> Self::SelfType<'_>;
    /// The stored bytes of a byte value (`None` for other types).
    fn bytes_of<'a, 'b>(_: &'a Self::SelfType<'b>) -> Option<&'a [u8]> {
        None
    }
    /// A byte value made from `b` (`None` for other types).
    fn owned_of_bytes(_: Vec<u8>) -> Option<Self::Owned> {
        None
    }
    /// The value read out of its stored form.
    fn owned(v: &Self::SelfType<'_>) -> Self::Owned;
    /// Appends the value's order-preserving bytes to `out` (see the module docs); `last`
    /// when nothing follows it in the key (a string then needs no terminator).
    fn encode(v: &Self::SelfType<'_>, last: bool, out: &mut Vec<u8>);
    /// Reads a value [`Column::encode`] wrote from the front of `b`, advancing it
    /// (`None`: the bytes are not such a value).
    fn decode(b: &mut &[u8], last: bool) -> Option<Self::Owned>;
}

/// The order-preserving bytes of a key or value.
pub(super) fn encoded<C: Column>(v: &C::SelfType<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    C::encode(v, true, &mut out);
    out
}

/// A value read back from all of `b` (`None`: malformed or bytes left over).
pub(super) fn decoded<C: Column>(mut b: &[u8]) -> Option<C::Owned> {
    let v = C::decode(&mut b, true)?;
    b.is_empty().then_some(v)
}

/// Appends `bytes`: as they are when `last`; else each zero byte as `00 FF` and then
/// the terminator `00 01`, which sorts below every continuation (so `"a" < "a\0" <
/// "ab"` holds for the encoded forms as for the strings).
fn put_bytes(bytes: &[u8], last: bool, out: &mut Vec<u8>) {
    if last {
        out.extend_from_slice(bytes);
        return;
    }
    for &b in bytes {
        out.push(b);
        if b == 0 {
            out.push(0xFF);
        }
    }
    out.extend_from_slice(&[0, 1]);
}

/// Reads what [`put_bytes`] wrote.
fn take_bytes(b: &mut &[u8], last: bool) -> Option<Vec<u8>> {
    if last {
        let all = b.to_vec();
        *b = &[];
        return Some(all);
    }
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        match *b.get(i)? {
            0 => {
                match *b.get(i + 1)? {
                    0xFF => out.push(0),
                    1 => {
                        *b = &b[i + 2..];
                        return Some(out);
                    }
                    _ => return None,
                }
                i += 2;
            }
            x => {
                out.push(x);
                i += 1;
            }
        }
    }
}

fn take8(b: &mut &[u8]) -> Option<[u8; 8]> {
    let (head, rest) = b.split_first_chunk::<8>()?;
    *b = rest;
    Some(*head)
}

fn put_i64(v: i64, out: &mut Vec<u8>) {
    out.extend_from_slice(&((v as u64) ^ (1 << 63)).to_be_bytes());
}

fn take_i64(b: &mut &[u8]) -> Option<i64> {
    Some((u64::from_be_bytes(take8(b)?) ^ (1 << 63)) as i64)
}

fn put_opt(v: Option<i64>, out: &mut Vec<u8>) {
    match v {
        None => out.push(0),
        Some(v) => {
            out.push(1);
            put_i64(v, out);
        }
    }
}

fn take_opt(b: &mut &[u8]) -> Option<Option<i64>> {
    let (tag, rest) = b.split_first()?;
    *b = rest;
    match tag {
        0 => Some(None),
        1 => Some(Some(take_i64(b)?)),
        _ => None,
    }
}

fn field(row: &mut String, name: &str, json: &str) {
    let _ = write!(row, ",\"{name}\":{json}");
}

pub(super) fn json_of<T: serde::Serialize + ?Sized>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "null".to_owned())
}

fn parse<T: serde::de::DeserializeOwned>(v: Option<&RawValue>) -> Option<T> {
    serde_json::from_str(v?.get()).ok()
}

impl Column for &'static str {
    type Owned = String;
    fn stored(o: &String) -> &str {
        o
    }
    fn owned(v: &&str) -> String {
        (*v).to_owned()
    }
    fn encode(v: &&str, last: bool, out: &mut Vec<u8>) {
        put_bytes(v.as_bytes(), last, out);
    }
    fn decode(b: &mut &[u8], last: bool) -> Option<String> {
        String::from_utf8(take_bytes(b, last)?).ok()
    }
}

impl Column for &'static [u8] {
    type Owned = Vec<u8>;
    fn write(v: &&[u8], name: &str, row: &mut String) {
        let one_line_json = std::str::from_utf8(v).ok().filter(|s| {
            !s.contains('\n')
                && *s != "null"
                && s.trim() == *s
                && serde_json::from_str::<&RawValue>(s).is_ok_and(|r| r.get().len() == s.len())
        });
        match one_line_json {
            Some(s) => field(row, name, s),
            None => field(row, "b", &json_of(&B64.encode(v))),
        }
    }
    fn read(v: Option<&RawValue>, b: Option<&str>) -> Option<Vec<u8>> {
        match (v, b) {
            (Some(v), None) => Some(v.get().as_bytes().to_vec()),
            (None, Some(b)) => B64.decode(b).ok(),
            _ => None,
        }
    }
    fn stored(o: &Vec<u8>) -> &[u8] {
        o
    }
    fn bytes_of<'a>(v: &'a &[u8]) -> Option<&'a [u8]> {
        Some(v)
    }
    fn owned_of_bytes(b: Vec<u8>) -> Option<Vec<u8>> {
        Some(b)
    }
    fn owned(v: &&[u8]) -> Vec<u8> {
        v.to_vec()
    }
    fn encode(v: &&[u8], last: bool, out: &mut Vec<u8>) {
        put_bytes(v, last, out);
    }
    fn decode(b: &mut &[u8], last: bool) -> Option<Vec<u8>> {
        take_bytes(b, last)
    }
}

macro_rules! plain_column {
    ($($t:ty: $put:expr, $take:expr);*) => {$(
        impl Column for $t {
            type Owned = $t;
            fn stored(o: &$t) -> $t {
                *o
            }
            fn owned(v: &$t) -> $t {
                *v
            }
            fn encode(v: &$t, _: bool, out: &mut Vec<u8>) {
                ($put)(*v, out)
            }
            fn decode(b: &mut &[u8], _: bool) -> Option<$t> {
                ($take)(b)
            }
        }
    )*};
}
plain_column!(
    i64: put_i64, take_i64;
    u64: |v: u64, out: &mut Vec<u8>| out.extend_from_slice(&v.to_be_bytes()), |b: &mut &[u8]| take8(b).map(u64::from_be_bytes);
    Option<i64>: put_opt, take_opt
);

impl Column for () {
    type Owned = ();
    fn write(_: &(), _: &str, _: &mut String) {}
    fn read(v: Option<&RawValue>, b: Option<&str>) -> Option<()> {
        (v.is_none() && b.is_none()).then_some(())
    }
    fn stored(_: &()) {}
    fn owned(_: &()) {}
    fn encode(_: &(), _: bool, _: &mut Vec<u8>) {}
    fn decode(_: &mut &[u8], _: bool) -> Option<()> {
        Some(())
    }
}

/// A pair: its parts in order, the first never last in the key.
impl<A: Column, B: Column> Column for (A, B) {
    type Owned = (A::Owned, B::Owned);
    fn stored(o: &Self::Owned) -> Self::SelfType<'_> {
        (A::stored(&o.0), B::stored(&o.1))
    }
    fn owned(v: &Self::SelfType<'_>) -> Self::Owned {
        (A::owned(&v.0), B::owned(&v.1))
    }
    fn encode(v: &Self::SelfType<'_>, last: bool, out: &mut Vec<u8>) {
        A::encode(&v.0, false, out);
        B::encode(&v.1, last, out);
    }
    fn decode(b: &mut &[u8], last: bool) -> Option<Self::Owned> {
        Some((A::decode(b, false)?, B::decode(b, last)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key<C: Column>(v: &C::SelfType<'_>) -> Vec<u8> {
        encoded::<C>(v)
    }

    #[test]
    fn encoded_keys_sort_as_redb_sorts_the_typed_keys() {
        let ints = [i64::MIN, -7, -1, 0, 1, 5, i64::MAX];
        for w in ints.windows(2) {
            assert!(key::<i64>(&w[0]) < key::<i64>(&w[1]), "{w:?}");
        }
        for w in [0u64, 1, 255, 256, u64::MAX].windows(2) {
            assert!(key::<u64>(&w[0]) < key::<u64>(&w[1]), "{w:?}");
        }
        let pairs: [(&str, &str); 6] = [("", "z"), ("a", ""), ("a", "b"), ("a\0", ""), ("a\u{1}", ""), ("ab", "")];
        for w in pairs.windows(2) {
            assert!(key::<(&str, &str)>(&w[0]) < key::<(&str, &str)>(&w[1]), "{w:?}");
        }
        let timed: [(i64, &str); 4] = [(-5, "z"), (0, ""), (0, "int_a"), (1, "")];
        for w in timed.windows(2) {
            assert!(key::<(i64, &str)>(&w[0]) < key::<(i64, &str)>(&w[1]), "{w:?}");
        }
    }

    #[test]
    fn every_type_reads_back_what_it_wrote_and_refuses_garbage() {
        assert_eq!(
            decoded::<(&str, &str)>(&key::<(&str, &str)>(&("a\0b", "c\0"))),
            Some(("a\0b".into(), "c\0".into()))
        );
        assert_eq!(decoded::<(i64, &str)>(&key::<(i64, &str)>(&(-3, "x"))), Some((-3, "x".into())));
        let due = (Some(-1i64), None::<i64>);
        assert_eq!(decoded::<(Option<i64>, Option<i64>)>(&key::<(Option<i64>, Option<i64>)>(&due)), Some(due));
        assert_eq!(decoded::<u64>(&key::<u64>(&42)), Some(42));
        assert_eq!(decoded::<&[u8]>(&key::<&[u8]>(&[0u8, 1, 255].as_slice())), Some(vec![0, 1, 255]));
        assert_eq!(decoded::<()>(&[]), Some(()));
        assert_eq!(decoded::<()>(&[1]), None, "bytes left over");
        assert_eq!(decoded::<u64>(&[1, 2]), None, "too short");
        assert_eq!(decoded::<(&str, &str)>(b"a\0\x07b"), None, "a bad escape");
        assert_eq!(decoded::<&str>(&[0xC3]), None, "not UTF-8");
    }
}
