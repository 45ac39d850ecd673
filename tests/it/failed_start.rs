//! A failed start of the real `isto serve` leaves nothing new behind: with the port
//! taken, a bad SMTP URL, or an admin socket that cannot be made (a data directory path
//! too long for a Unix socket: the one failure here that comes after the data directory,
//! sealing key and store were made), it exits non-zero with a message naming what failed
//! and what to do, a data directory that did not exist before does not exist after, and
//! an existing one is left exactly as it was (an empty one, as systemd's
//! `StateDirectory=` makes it, stays empty). And a successful first start makes the data
//! directory owner-only. Loopback only; every wait bounded.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `isto` with a config of its own (no /etc/isto/isto.toml), on `data`, listening on
/// 127.0.0.1:`port`.
fn isto(config: &Path, data: &Path, port: u16) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_isto"));
    c.env("ISTO_CONFIG", config)
        .env("ISTO_DATA_DIR", data)
        .env("ISTO_LISTEN", format!("127.0.0.1:{port}"))
        .env("ISTO_PUBLIC_URL", format!("http://127.0.0.1:{port}"))
        .env("ISTO_MAIL_FROM", "Holder <noreply@holder.test>")
        .env_remove("ISTO_SMTP_URL")
        .env_remove("NOTIFY_SOCKET")
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// Runs `cmd` to its end, at most 30 s.
fn run(cmd: &mut Command) -> Output {
    let mut child = cmd.spawn().unwrap();
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("isto did not end within 30 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A free loopback port (bound and released).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Every path under `dir` with its mode and, for files, a hash of their bytes — but for
/// the store when `store_bytes` is false: a start that opens it may write to it.
fn tree(dir: &Path, store_bytes: bool) -> BTreeMap<PathBuf, String> {
    use std::hash::{Hash as _, Hasher as _};
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let m = std::fs::symlink_metadata(&p).unwrap();
            let mode = m.permissions().mode() & 0o7777;
            let what = if m.is_dir() {
                todo.push(p.clone());
                "dir".to_owned()
            } else if !store_bytes && p.file_name().is_some_and(|n| n == "isto.redb") {
                "store".to_owned()
            } else {
                let mut h = std::collections::hash_map::DefaultHasher::new();
                std::fs::read(&p).unwrap().hash(&mut h);
                format!("{:016x}", h.finish())
            };
            out.insert(p, format!("{mode:o} {what}"));
        }
    }
    out
}

/// A data directory made by `isto admin init` (sealing key, handle key, store), with a
/// file of the operator's beside them.
fn initialised(config: &Path, data: &Path, store_bytes: bool) -> BTreeMap<PathBuf, String> {
    let mut c = isto(config, data, free_port());
    c.args(["admin", "init"]);
    let o = run(&mut c);
    assert!(o.status.success(), "init: {}", stderr(&o));
    std::fs::write(data.join("operator-notes.txt"), "mine").unwrap();
    let before = tree(data, store_bytes);
    assert!(before.contains_key(&data.join("isto.redb")) && before.contains_key(&data.join("keys")), "{before:?}");
    before
}

#[test]
fn port_taken_leaves_no_new_data_dir_and_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("isto.toml");
    std::fs::write(&config, "").unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    // Two levels that do not exist: `create_dir_all` would make both.
    let data = dir.path().join("new").join("data");
    let o = run(isto(&config, &data, port).arg("serve"));
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains(&format!("cannot listen on 127.0.0.1:{port}")), "{err}");
    assert!(err.contains("another address") && err.contains("--listen") && err.contains("ISTO_LISTEN"), "{err}");
    assert!(!dir.path().join("new").exists(), "a failed start left {}", dir.path().join("new").display());
    drop(taken);
}

#[test]
fn port_taken_leaves_an_existing_data_dir_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("isto.toml");
    std::fs::write(&config, "").unwrap();
    let data = dir.path().join("data");
    let before = initialised(&config, &data, true);
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let o = run(isto(&config, &data, taken.local_addr().unwrap().port()).arg("serve"));
    assert!(!o.status.success());
    assert!(stderr(&o).contains("cannot listen on"), "{}", stderr(&o));
    assert_eq!(tree(&data, true), before, "the failed start changed the data directory");
    drop(taken);
}

#[test]
fn a_bad_smtp_url_fails_before_anything_is_created() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("isto.toml");
    std::fs::write(&config, "").unwrap();
    let data = dir.path().join("data");
    for url in ["bogus://mail.example", "smtp://user:secret@mail.example:25"] {
        let o = run(isto(&config, &data, free_port()).args(["serve", "--smtp-url", url]));
        assert!(!o.status.success(), "{url}");
        let err = stderr(&o);
        assert!(err.contains("mail.smtp_url"), "{url}: {err}");
        assert!(!err.contains("secret"), "{url}: the password is in the message: {err}");
        assert!(!data.exists(), "{url}: a failed start left {}", data.display());
    }
}

/// A data directory path whose `admin.sock` is longer than a Unix socket path may be
/// (107 bytes): the start makes the directory, the key and the store, then fails.
fn too_long_for_a_socket(base: &Path) -> PathBuf {
    let data = base.join("d".repeat(110));
    assert!(data.join("admin.sock").as_os_str().len() > 108);
    data
}

#[test]
fn a_failure_after_the_store_was_made_removes_what_this_start_made() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("isto.toml");
    std::fs::write(&config, "").unwrap();

    // A new data directory (and its new parent): gone after the failure.
    let data = too_long_for_a_socket(&dir.path().join("new"));
    let o = run(isto(&config, &data, free_port()).arg("serve"));
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains("cannot create the admin socket") && err.contains("admin.sock"), "{err}");
    assert!(err.contains("choose a shorter data_dir"), "{err}");
    assert!(err.contains("failed start: removed what it had created"), "{err}");
    assert!(!dir.path().join("new").exists(), "a failed start left {}", dir.path().join("new").display());

    // An existing, empty data directory (systemd's StateDirectory= makes one): it stays,
    // empty, with its mode.
    let data = too_long_for_a_socket(&dir.path().join("empty"));
    std::fs::create_dir_all(&data).unwrap();
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o750)).unwrap();
    let o = run(isto(&config, &data, free_port()).arg("serve"));
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains("cannot create the admin socket"), "{err}");
    // It got as far as the key and the store (so their removal is what is tested here).
    for made in ["isto.redb", "keys"] {
        let line = err.lines().find(|l| l.contains("removed what it had created") && l.contains(made));
        assert!(line.is_some_and(|l| l.contains(&data.display().to_string())), "{made} not removed:\n{err}");
    }
    assert!(data.is_dir());
    assert_eq!(tree(&data, true), BTreeMap::new(), "the failed start left files in the existing directory");
    assert_eq!(std::fs::metadata(&data).unwrap().permissions().mode() & 0o777, 0o750);

    // An initialised one: its keys and store are kept.
    let data = too_long_for_a_socket(&dir.path().join("old"));
    std::fs::create_dir_all(data.parent().unwrap()).unwrap();
    // (The store is opened, so its bytes may change; it stays, as do the keys, byte for
    // byte. The outbox and offer index this start made are removed.)
    let before = initialised(&config, &data, false);
    let o = run(isto(&config, &data, free_port()).arg("serve"));
    assert!(!o.status.success());
    assert!(stderr(&o).contains("cannot create the admin socket"), "{}", stderr(&o));
    assert_eq!(tree(&data, false), before, "the failed start changed the existing data directory");
}

#[test]
fn a_first_start_makes_the_data_dir_owner_only() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("isto.toml");
    std::fs::write(&config, "").unwrap();
    let data = dir.path().join("data");
    let port = free_port();
    let mut child =
        isto(&config, &data, port).arg("serve").stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let t0 = Instant::now();
    let up = loop {
        if data.join("admin.sock").exists() && std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break true;
        }
        if t0.elapsed() > Duration::from_secs(30) || child.try_wait().unwrap().is_some() {
            break false;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let _ = child.kill();
    let _ = child.wait();
    assert!(up, "isto serve did not come up within 30 s");
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    // The .eml outbox is made inside the owner-only data directory, not before it.
    assert_eq!(mode(&data), 0o700);
    assert_eq!(mode(&data.join("outbox")), 0o700);
    assert_eq!(mode(&data.join("keys")), 0o700);
}
