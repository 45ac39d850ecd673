//! Loading and checking the settings.
use super::*;

#[test]
fn defaults_need_no_file() {
    let s = Settings::load(&Overrides { config: None, ..Default::default() }).unwrap();
    assert_eq!(s.listen.to_string(), "127.0.0.1:8080");
    assert_eq!(s.public_url.base, "http://127.0.0.1:8080");
}

#[test]
fn store_cache_mib_defaults_loads_and_is_checked() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("isto.toml");
    let load = |text: &str| {
        std::fs::write(&p, text).unwrap();
        Settings::load(&Overrides { config: Some(p.clone()), ..Default::default() })
    };
    assert_eq!(load("").unwrap().store_cache_mib, crate::store::DEFAULT_CACHE_MIB);
    assert_eq!(crate::store::DEFAULT_CACHE_MIB, 16);
    let s = load("[store]\ncache_mib = 256\n").unwrap();
    assert_eq!(s.store_cache_mib, 256);
    assert_eq!(s.describe()["store"]["cache_mib"], 256);
    for bad in ["0", "65537"] {
        let e = load(&format!("[store]\ncache_mib = {bad}\n")).unwrap_err();
        assert!(e.to_string().contains("store.cache_mib"), "{e}");
    }
    let e = load("[store]\ncache = 1\n").unwrap_err();
    assert!(matches!(&e, ConfigError::Parse { message, .. } if message.contains("unknown field `cache`")), "{e}");
    let default = format!("# cache_mib = {} ", crate::store::DEFAULT_CACHE_MIB);
    assert!(SKELETON.contains(&default), "the skeleton shows the default");
}

#[test]
fn skeleton_parses_and_unknown_keys_fail() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("isto.toml");
    std::fs::write(&p, SKELETON).unwrap();
    Settings::load(&Overrides { config: Some(p.clone()), ..Default::default() }).unwrap();
    std::fs::write(&p, "lisen = \"1.2.3.4:5\"\n").unwrap();
    let e = Settings::load(&Overrides { config: Some(p), ..Default::default() }).unwrap_err();
    assert!(e.to_string().contains("lisen"), "{e}");
}

#[test]
fn trusted_proxies_load_and_a_catch_all_is_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("isto.toml");
    std::fs::write(&p, "trusted_proxies = [\"10.0.0.0/8\", \"0.0.0.0/0\"]\n").unwrap();
    let s = Settings::load(&Overrides { config: Some(p.clone()), ..Default::default() }).unwrap();
    assert_eq!(s.describe()["trusted_proxies"], serde_json::json!(["10.0.0.0/8", "0.0.0.0/0"]));
    let w = s.warnings();
    assert!(w.len() == 1 && w[0].starts_with("trusted_proxies: 0.0.0.0/0 trusts every address"), "{w:?}");
    assert!(Settings::defaults().warnings().is_empty());
    std::fs::write(&p, "trusted_proxies = [\"proxy.example\"]\n").unwrap();
    let e = Settings::load(&Overrides { config: Some(p), ..Default::default() }).unwrap_err().to_string();
    assert!(e.contains("trusted_proxies") && e.contains("\"proxy.example\""), "{e}");
}

#[test]
fn public_url_gives_hosts_and_origins() {
    let u = PublicUrl::parse("https://Holder.Example/").unwrap();
    assert_eq!(u.base, "https://holder.example");
    assert_eq!(u.allowed_hosts(), vec!["holder.example", "holder.example:443"]);
    assert_eq!(u.allowed_origins(), vec!["https://holder.example:443"]);
    assert_eq!(
        PublicUrl::parse("https://holder.example/app").unwrap_err(),
        "\"https://holder.example/app\" must have no path or query (serve isto at the root of its origin)"
    );
    assert_eq!(PublicUrl::parse("ftp://x").unwrap_err(), "\"ftp://x\" must start with http:// or https://");
}

#[test]
fn metrics_listen_is_off_by_default_parsed_checked_and_warned_about_off_loopback() {
    let s = Settings::load(&Overrides::default()).unwrap();
    assert_eq!(s.metrics_listen, None);
    assert!(s.describe()["metrics_listen"].is_null());
    let with = |m: &str| Settings::load(&Overrides { metrics_listen: Some(m.into()), ..Default::default() });
    let s = with("127.0.0.1:9464").unwrap();
    assert_eq!(s.metrics_listen, Some(SocketAddr::from(([127, 0, 0, 1], 9464))));
    assert!(s.warnings().is_empty(), "{:?}", s.warnings());
    assert_eq!(with("off").unwrap().metrics_listen, None);
    let e = with("localhost").unwrap_err().to_string();
    assert!(e.contains("metrics_listen") && e.contains("address:port"), "{e}");
    let e = with("127.0.0.1:8080").unwrap_err().to_string();
    assert!(e.contains("must differ from listen"), "{e}");
    let w = with("0.0.0.0:9464").unwrap().warnings();
    assert!(w.iter().any(|w| w.starts_with("metrics_listen: 0.0.0.0:9464 is not a loopback address")), "{w:?}");
}

#[test]
fn listen_alone_moves_public_url() {
    let s = Settings::load(&Overrides { listen: Some("127.0.0.1:9999".into()), ..Default::default() }).unwrap();
    assert_eq!(s.public_url.base, "http://127.0.0.1:9999");
}

#[test]
fn store_backend_keys_load_are_checked_and_never_show_the_password() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("isto.toml");
    let load = |text: &str, o: Overrides| {
        std::fs::write(&p, text).unwrap();
        Settings::load(&Overrides { config: Some(p.clone()), ..o })
    };
    let s = load("", Overrides::default()).unwrap();
    assert!(s.store_postgres.is_none());
    assert!(matches!(s.store_location(), crate::store::Location::Redb { .. }));
    assert_eq!(s.describe()["store"]["backend"], "redb");
    let text = "[store]\nbackend = \"postgres\"\nurl = \"postgres://isto:s3cret@db.example/isto\"\n";
    let s = load(text, Overrides::default()).unwrap();
    let pg = s.store_postgres.clone().unwrap();
    assert_eq!(pg.pool_size, crate::store::DEFAULT_POOL_SIZE);
    let shown = s.describe().to_string();
    assert!(shown.contains("postgres://isto:***@db.example/isto") && !shown.contains("s3cret"), "{shown}");
    assert!(!s.store_name().contains("s3cret") && !format!("{s:?}").contains("s3cret"));
    // The environment's values win over the file's.
    let o = Overrides {
        store_backend: Some("postgres".into()),
        store_url: Some("host=/run/postgresql dbname=isto".into()),
        store_pool_size: Some(3),
        ..Default::default()
    };
    let s = load("", o).unwrap();
    assert_eq!(s.store_postgres.unwrap().pool_size, 3);
    for (text, key, says) in [
        ("[store]\nbackend = \"sqlite\"\n", "store.backend", "must be \"redb\" or \"postgres\""),
        ("[store]\nbackend = \"postgres\"\n", "store.url", "is required"),
        ("[store]\nbackend = \"postgres\"\nurl = \"host=/x\"\npool_size = 0\n", "store.pool_size", "1..=64"),
        ("[store]\nbackend = \"postgres\"\nurl = \"host=/x\"\npool_size = 65\n", "store.pool_size", "1..=64"),
        ("[store]\nurl = \"host=/x\"\n", "store.url", "is for store.backend = \"postgres\""),
        ("[store]\nbackend = \"postgres\"\nurl = \"postgres://u:s3cret@h:port/x\"\n", "store.url", "not PostgreSQL"),
    ] {
        let e = load(text, Overrides::default()).unwrap_err().to_string();
        assert!(e.contains(key) && e.contains(says) && !e.contains("s3cret"), "{text}: {e}");
    }
    assert!(SKELETON.contains("# backend = \"redb\""), "the skeleton shows the key");
}
