//! The key ring's, the tokens' and the hashes' unit tests.

use super::*;

#[test]
fn seal_roundtrip_and_tamper() {
    let r = KeyRing::ephemeral();
    let s = r.seal_str("buyer@example.com").unwrap();
    assert!(!s.ct.contains("buyer"));
    assert_eq!(r.open_str(&s).unwrap().expose(), "buyer@example.com");
    let mut bad = s.clone();
    bad.ct.replace_range(0..1, if bad.ct.starts_with('A') { "B" } else { "A" });
    let e = r.open(&bad).unwrap_err();
    assert!(matches!(e, CryptoError::Open), "{e}");
    assert!(format!("{:?}", r.open_str(&s).unwrap()).contains("***"));
}

#[test]
fn key_file_created_private_and_rotation_keeps_old() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("keys/sealing.key");
    let (r1, created) = KeyRing::load_or_create(&p).unwrap();
    assert!(created);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o600);
    }
    let sealed = r1.seal_str("x").unwrap();
    std::fs::rename(&p, d.path().join(format!("keys/sealing.key.{}", r1.current_kid()))).unwrap();
    let (r2, created) = KeyRing::load_or_create(&p).unwrap();
    assert!(created);
    assert_ne!(r1.current_kid(), r2.current_kid());
    assert_eq!(r2.open_str(&sealed).unwrap().expose(), "x");
}

#[test]
fn handles_survive_a_rotation_of_the_sealing_key() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("keys/sealing.key");
    let (r1, _) = KeyRing::load_or_create(&p).unwrap();
    let hp = KeyRing::handle_key_path(&p);
    assert!(hp.exists());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&hp).unwrap().permissions().mode() & 0o777, 0o600);
    }
    let id = new_id("int_");
    let h = r1.handles().seal("sel_a", &id);
    std::fs::rename(&p, d.path().join(format!("keys/sealing.key.{}", r1.current_kid()))).unwrap();
    let (r2, created) = KeyRing::load_or_create(&p).unwrap();
    assert!(created);
    assert_eq!(r2.handles().seal("sel_a", &id), h, "the same handle after the rotation");
    assert_eq!(r2.handles().open("sel_a", &h).as_deref(), Some(id.as_str()));
    assert_eq!(r1.handles().kid(), r2.handles().kid());
    // A data directory from before handles: the handle key is added, the ring loads.
    std::fs::remove_file(&hp).unwrap();
    let (r3, created) = KeyRing::load_or_create(&p).unwrap();
    assert!(!created && hp.exists());
    assert_eq!(r3.current_kid(), r2.current_kid());
}

#[test]
fn sealing_without_a_key_is_an_error_not_an_empty_ciphertext() {
    let empty = KeyRing::from_bytes(Vec::new(), &[0u8; 32]);
    assert!(matches!(empty.seal(b"x"), Err(CryptoError::Seal(_))));
    assert!(matches!(empty.seal_str("x"), Err(CryptoError::Seal(_))));
    let s = KeyRing::ephemeral().seal(b"").unwrap();
    assert!(!s.ct.is_empty(), "even an empty plaintext has a tag");
}

#[test]
fn csrf_binds_purpose_and_time() {
    let r = KeyRing::ephemeral();
    let t = r.csrf_token("consent", "tok", 1000);
    assert!(r.csrf_valid(&t, "consent", "tok", 1500));
    assert!(!r.csrf_valid(&t, "confirm", "tok", 1500));
    assert!(!r.csrf_valid(&t, "consent", "other", 1500));
    assert!(!r.csrf_valid(&t, "consent", "tok", 1000 + 7201));
}

#[test]
fn derived_tokens_and_keyed_hashes() {
    let r = KeyRing::ephemeral();
    let a = r.derive_token("p", "in").unwrap();
    assert_eq!(a.expose(), r.derive_token("p", "in").unwrap().expose());
    assert_ne!(a.expose(), r.derive_token("q", "in").unwrap().expose());
    assert_ne!(a.expose(), KeyRing::ephemeral().derive_token("p", "in").unwrap().expose());
    assert_eq!(a.expose().len(), 43);
    let h = r.keyed_hash("secret", "s3cr3t").unwrap();
    assert!(h.starts_with("hmac1:") && !h.contains("s3cr3t"));
    assert!(r.keyed_hash_matches(&h, "secret", "s3cr3t"));
    assert!(!r.keyed_hash_matches(&h, "secret", "other"));
    assert!(!r.keyed_hash_matches(&h, "other", "s3cr3t"));
    assert!(!KeyRing::ephemeral().keyed_hash_matches(&h, "secret", "s3cr3t"));
    assert!(!r.keyed_hash_matches(&token_hash("secret", "s3cr3t"), "secret", "s3cr3t"));
    let empty = KeyRing::from_bytes(vec![], &[7u8; 32]);
    assert!(empty.derive_token("p", "in").is_none() && empty.keyed_hash("k", "s").is_none());
}

/// Every kind of MAC the holder hands out, for one ring.
fn macs(r: &KeyRing) -> Vec<String> {
    vec![
        r.mac(&[b"person", b"buyer@example.com"]),
        r.mac(&[b"pseudonym", b"per_x", b"sel_a"]),
        r.derive_token("refresh", "tok").unwrap().expose().to_owned(),
        r.keyed_hash("secret", "s3cr3t").unwrap(),
        r.csrf_token("consent", "tok", 1000),
    ]
}

#[test]
fn macs_stay_the_same_across_a_rotation_and_a_retirement() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("keys/sealing.key");
    let (r, _) = KeyRing::load_or_create(&p).unwrap();
    let before = macs(&r);
    let old = r.current_kid();
    let sealed = r.seal_str("x").unwrap();
    let h = r.handles().seal("sel_a", "int_a");
    let new = r.rotate().unwrap();
    assert_ne!(new, old);
    assert_eq!(r.current_kid(), new, "the ring seals with the new key at once");
    assert_eq!(r.seal_str("y").unwrap().kid, new);
    assert_eq!(r.open_str(&sealed).unwrap().expose(), "x", "the old key still opens");
    assert_eq!(macs(&r), before, "no MAC changed in the running ring");
    assert!(r.csrf_valid(&before[4], "consent", "tok", 1500));
    assert!(r.keyed_hash_matches(&before[3], "secret", "s3cr3t"));
    // On disk: the new key current, the old one beside it (0600), no temp file left.
    let mut names: Vec<String> = std::fs::read_dir(p.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, vec!["handle.key", "mac.key", "sealing.key", &format!("sealing.key.{old}")]);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        for n in &names {
            assert_eq!(std::fs::metadata(p.with_file_name(n)).unwrap().permissions().mode() & 0o777, 0o600, "{n}");
        }
    }
    let (again, created) = KeyRing::load_or_create(&p).unwrap();
    assert!(!created);
    assert_eq!(again.kids(), vec![new.clone(), old.clone()]);
    assert_eq!(macs(&again), before, "nor after a restart");
    assert_eq!(again.handles().seal("sel_a", "int_a"), h, "handles unchanged");
    // Retired: the file goes, MACs and keyed hashes still the same.
    r.retire(&old).unwrap();
    assert!(!p.with_file_name(format!("sealing.key.{old}")).exists());
    assert!(matches!(r.open(&sealed), Err(CryptoError::UnknownKey(_))));
    assert_eq!(macs(&r), before);
    assert!(r.keyed_hash_matches(&before[3], "secret", "s3cr3t"));
    let (third, _) = KeyRing::load_or_create(&p).unwrap();
    assert_eq!((third.kids(), macs(&third)), (vec![new], before));
}

#[test]
fn retire_refuses_the_current_key_and_an_unknown_one() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("keys/sealing.key");
    let (r, _) = KeyRing::load_or_create(&p).unwrap();
    let e = r.retire(&r.current_kid()).unwrap_err().to_string();
    assert!(e.contains("current sealing key") && e.contains("rotate first"), "{e}");
    assert!(p.exists());
    let e = r.retire("deadbeef").unwrap_err().to_string();
    assert!(e.contains("no key with id"), "{e}");
    let e = KeyRing::ephemeral().rotate().unwrap_err();
    assert!(matches!(e, CryptoError::Seal("this key ring has no key files to rotate")), "{e}");
}

#[test]
fn a_ring_from_an_old_data_dir_without_mac_key_gives_the_macs_of_before() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("keys/sealing.key");
    drop(KeyRing::load_or_create(&p).unwrap());
    std::fs::remove_file(KeyRing::mac_key_path(&p)).unwrap();
    // What the MACs were before mac.key existed: under the current key's subkey.
    let key = read_key(&p).unwrap();
    let sub = mac_subkey(&key);
    let kid = key_id(&key);
    let old_person = mac_with(&sub, &[b"person", b"buyer@example.com"]);
    let old_hash = format!("hmac1:{kid}:{}", mac_with(&sub, &[b"keyed-hash", b"secret", b"s3cr3t"]));
    let old_csrf = format!("1000.{}", mac_with(&sub, &[b"csrf", b"consent", b"tok", b"1000"]));
    let (r, created) = KeyRing::load_or_create(&p).unwrap();
    assert!(!created && KeyRing::mac_key_path(&p).exists());
    assert_eq!(r.mac(&[b"person", b"buyer@example.com"]), old_person);
    assert_eq!(r.keyed_hash("secret", "s3cr3t").unwrap(), old_hash);
    assert_eq!(r.csrf_token("consent", "tok", 1000), old_csrf);
    // The same after a rotation and the old key's retirement.
    r.rotate().unwrap();
    r.retire(&kid).unwrap();
    let (r, _) = KeyRing::load_or_create(&p).unwrap();
    assert_eq!(r.mac(&[b"person", b"buyer@example.com"]), old_person);
    assert!(r.keyed_hash_matches(&old_hash, "secret", "s3cr3t"));
    assert_eq!(r.keyed_hash("secret", "s3cr3t").unwrap(), old_hash);
    // A malformed mac.key is refused by name.
    std::fs::write(KeyRing::mac_key_path(&p), "nonsense").unwrap();
    assert!(matches!(KeyRing::load_or_create(&p), Err(CryptoError::BadKey(_))));
}

#[test]
fn a_rotation_cut_short_between_the_two_renames_still_loads() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("keys/sealing.key");
    let (r, _) = KeyRing::load_or_create(&p).unwrap();
    let kid = r.current_kid();
    // The old key copied aside, the new one not yet written.
    std::fs::copy(&p, p.with_file_name(format!("sealing.key.{kid}"))).unwrap();
    let (again, _) = KeyRing::load_or_create(&p).unwrap();
    assert_eq!(again.kids(), vec![kid.clone()], "no key twice");
    // A leftover temp file is no key.
    std::fs::write(p.with_file_name(".sealing.key.tmp"), "junk").unwrap();
    let new = again.rotate().unwrap();
    assert_eq!(KeyRing::load_or_create(&p).unwrap().0.kids(), vec![new, kid]);
}

#[test]
fn tokens_are_long_and_ids_shaped() {
    assert!(new_token(20).expose().len() >= 26);
    let id = new_id("int_");
    assert_eq!(id.len(), 4 + 26);
    assert!(id[4..].bytes().all(|c| c.is_ascii_lowercase() || (b'2'..=b'7').contains(&c)), "{id}");
    assert_ne!(token_hash("code", "a"), token_hash("consent", "a"));
}

#[test]
fn intent_tokens_begin_with_their_id_and_are_stored_beside_it() {
    let (old, new) = (format!("int_{}", "a".repeat(26)), new_id("int_"));
    let code = new_intent_token(&new);
    let code = code.expose();
    assert_eq!((code.len(), &code[..26]), (53, &new[4..]), "{code}");
    // The secret after the id: 160 random bits as new_token makes them.
    assert!(code[26..].bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_'), "{code}");
    assert_ne!(code[26..], new_intent_token(&new).expose()[26..]);
    // Stored under kind, id, then the hash of the whole token.
    let key = token_key("code", code);
    assert_eq!(key, format!("code:{new}:{}", &token_hash("code", code)["code:".len()..]));
    // Ids made before (RFC 4648 base32, same length) take the same form.
    assert!(token_key("manage", new_intent_token(&old).expose()).starts_with(&format!("manage:{old}:")));
    // A token of a later intent sorts after, whatever its secret: a batch's tokens go
    // into the table's last pages.
    let later = new_intent_token(&id_at("int_", system_millis() + 1_000, [0; 10]));
    assert!(token_key("code", later.expose()) > key);
    // Another id or another secret: another key, nothing to find.
    let other_id = format!("{}{}", &new_id("int_")[4..], &code[26..]);
    assert_ne!(token_key("code", &other_id), key);
    assert_ne!(token_key("code", &last_changed(code)), key);
    // Tokens made before (27 characters), of any other length or of a non-intent id: the
    // plain token_hash, so stores of an older isto keep working.
    let plain = new_token(TOKEN_BYTES);
    assert_eq!(token_key("code", plain.expose()), token_hash("code", plain.expose()));
    for t in [&code[..52], &format!("{code}a"), &format!("{}{}", "A".repeat(26), &code[26..])] {
        assert_eq!(token_key("code", t), token_hash("code", t), "{t}");
    }
    for id in ["off_abc", "int_short", &format!("int_{}", "8".repeat(26))] {
        assert_eq!(new_intent_token(id).expose().len(), 27, "{id}");
    }
}

/// `code` with its last character changed (within base64url).
fn last_changed(code: &str) -> String {
    let (head, last) = code.split_at(code.len() - 1);
    format!("{head}{}", if last == "A" { "B" } else { "A" })
}

#[test]
fn ids_are_base32_of_time_then_random_and_sort_by_creation() {
    // The same 128 bits as RFC 4648 base32 (data_encoding), each symbol renamed to the one
    // of the same value in SORTED_BASE32.
    let (millis, random) = (0x0193_8e4f_a2b1u64, [0x5a, 0xc3, 0x01, 0xff, 0x10, 0x00, 0x7e, 0x99, 0x24, 0xe7]);
    let mut bytes = millis.to_be_bytes()[2..].to_vec();
    bytes.extend_from_slice(&random);
    let rfc = data_encoding::BASE32_NOPAD.encode(&bytes);
    let standard = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let renamed: String =
        rfc.bytes().map(|c| char::from(SORTED_BASE32[standard.iter().position(|&s| s == c).unwrap()])).collect();
    assert_eq!(id_at("int_", millis, random), format!("int_{renamed}"));
    // Decoded back to the same bytes; one text for given bytes, nothing else decodes.
    let body = &renamed[..];
    assert_eq!(sorted_base32_bytes(body).map(Vec::from), Some(bytes.clone()));
    let (head, last) = body.split_at(25);
    let last_value = SORTED_BASE32.iter().position(|&c| c == last.as_bytes()[0]).unwrap();
    let unused_bits = format!("{head}{}", char::from(SORTED_BASE32[last_value | 1]));
    for bad in [&unused_bits[..], &body[..25], &body.to_ascii_uppercase(), &format!("{head}8"), &format!("{body}2")] {
        assert_eq!(sorted_base32_bytes(bad), None, "{bad}");
    }
    // A later millisecond sorts after, whatever the random bits; within one, by them.
    assert!(id_at("off_", millis, [0xff; 10]) < id_at("off_", millis + 1, [0; 10]));
    assert!(id_at("off_", millis, [0; 10]) < id_at("off_", millis, [1; 10]));
    assert!(id_at("off_", 999, [0xff; 10]) < id_at("off_", 1_000, [0; 10]), "across a carry");
    // new_id takes the clock: an id made now sorts after one of a second ago.
    assert!(id_at("int_", system_millis() - 1_000, [0xff; 10]) < new_id("int_"));
}
