//! Trusted proxies (round 3, point 7): the default trusts `127.0.0.1` and `::1` only —
//! not the rest of 127.0.0.0/8 —, and `isto admin check-config` warns when isto listens
//! on a non-loopback address while a loopback proxy is trusted.

use isto::net::ClientAddr;
use serde_json::Value;

/// `isto admin check-config --json` with `env`, as JSON.
fn check_config(env: &[(&str, &str)]) -> Value {
    let data = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_isto"))
        .args(["admin", "check-config", "--json"])
        .env("ISTO_DATA_DIR", data.path())
        .env_remove("ISTO_CONFIG")
        .env_remove("ISTO_LISTEN")
        .env_remove("ISTO_PUBLIC_URL")
        .env_remove("RUST_LOG")
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn proxy_warnings(v: &Value) -> Vec<String> {
    let all = v["warnings"].as_array().unwrap();
    all.iter().filter_map(Value::as_str).filter(|w| w.starts_with("trusted_proxies:")).map(str::to_owned).collect()
}

#[test]
fn the_default_trusts_two_loopback_addresses_and_a_public_listener_is_warned_about() {
    let v = check_config(&[("ISTO_LISTEN", "127.0.0.1:8080")]);
    assert_eq!(v["trusted_proxies"], serde_json::json!(["127.0.0.1/32", "::1/128"]));
    assert!(proxy_warnings(&v).is_empty(), "{v}");

    let v = check_config(&[("ISTO_LISTEN", "0.0.0.0:8080"), ("ISTO_PUBLIC_URL", "https://holder.example")]);
    let w = proxy_warnings(&v);
    assert_eq!(w.len(), 1, "{v}");
    assert!(
        w[0].starts_with("trusted_proxies: 127.0.0.1/32, ::1/128 trusted while isto listens on 0.0.0.0:8080"),
        "{w:?}"
    );
    assert!(w[0].contains("set trusted_proxies = []"), "{w:?}");

    // No loopback proxy trusted: nothing to warn about.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("isto.toml");
    std::fs::write(&config, "trusted_proxies = [\"10.0.0.2\"]\n").unwrap();
    let config = config.display().to_string();
    let v = check_config(&[("ISTO_LISTEN", "0.0.0.0:8080"), ("ISTO_CONFIG", &config)]);
    assert!(proxy_warnings(&v).is_empty(), "{v}");

    // What the default believes: 127.0.0.1's header, not 127.0.0.2's.
    let trusted = isto::config::Settings::defaults().trusted_proxies;
    let from = |peer: &str| ClientAddr::resolve(Some(peer.parse().unwrap()), Some("192.0.2.7"), &trusted);
    assert_eq!(from("127.0.0.1:9"), ClientAddr(Some("192.0.2.7".parse().unwrap())));
    assert_eq!(from("127.0.0.2:9"), ClientAddr(Some("127.0.0.2".parse().unwrap())));
    assert_eq!(from("[::1]:9"), ClientAddr(Some("192.0.2.7".parse().unwrap())));
}
