//! systemd: the real `isto serve` started with `NOTIFY_SOCKET` naming a Unix datagram
//! socket this test binds, as systemd does for a `Type=notify` unit. Shown: `READY=1`
//! comes once, after `STATUS=` start-up phases, and when it comes the port answers
//! `/healthz` and the store exists; SIGTERM brings `STOPPING=1` and an exit within the
//! shutdown bound (10 s). And `isto.service` at the repository root carries the
//! directives the README promises (and passes `systemd-analyze verify` where that tool
//! runs). Loopback only; every wait bounded.

use std::io::{Read, Write};
use std::os::unix::net::UnixDatagram;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The messages received on `sock` until one contains `want` (at most `within`); each
/// datagram is one string of `KEY=value` lines.
fn until(sock: &UnixDatagram, want: &str, within: Duration) -> Vec<String> {
    let t0 = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while t0.elapsed() < within {
        match sock.recv(&mut buf) {
            Ok(n) => {
                let m = String::from_utf8_lossy(&buf[..n]).into_owned();
                let done = m.lines().any(|l| l == want);
                got.push(m);
                if done {
                    return got;
                }
            }
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(e) => panic!("recv: {e}"),
        }
    }
    panic!("no {want} within {within:?}; got {got:?}");
}

/// `GET /healthz` over a plain socket; true on a 200.
fn healthz(port: u16) -> bool {
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else { return false };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let _ = s.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    answer.starts_with("HTTP/1.1 200")
}

#[test]
fn ready_comes_once_it_answers_and_stopping_at_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let sock_path = dir.path().join("notify.sock");
    let sock = UnixDatagram::bind(&sock_path).unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let data = dir.path().join("data");
    let log = dir.path().join("isto.log");
    let config = dir.path().join("isto.toml");
    std::fs::write(&config, "").unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_isto"))
        .arg("serve")
        .env("ISTO_CONFIG", &config)
        .env("ISTO_DATA_DIR", &data)
        .env("ISTO_LISTEN", format!("127.0.0.1:{port}"))
        .env("ISTO_PUBLIC_URL", format!("http://127.0.0.1:{port}"))
        .env("ISTO_MAIL_FROM", "Holder <noreply@holder.test>")
        .env("NOTIFY_SOCKET", &sock_path)
        .env_remove("WATCHDOG_USEC")
        .env_remove("WATCHDOG_PID")
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let read_log = || std::fs::read_to_string(&log).unwrap_or_default();

    let start = until(&sock, "READY=1", Duration::from_secs(30));
    // At READY=1 the holder answers and its store is open.
    assert!(healthz(port), "READY=1 before /healthz answers:\n{}", read_log());
    assert!(data.join("isto.redb").exists() || std::fs::read_dir(&data).unwrap().next().is_some());
    let ready = start.iter().filter(|m| m.lines().any(|l| l == "READY=1")).count();
    assert_eq!(ready, 1, "{start:?}");
    // Start-up phases came before it, as STATUS= lines; the last names what it serves.
    assert!(start.len() >= 2, "no STATUS= before READY=1: {start:?}");
    assert!(start[..start.len() - 1].iter().all(|m| m.starts_with("STATUS=") && !m.contains("READY=1")), "{start:?}");
    let last = start.last().unwrap();
    assert!(last.lines().any(|l| l.starts_with("STATUS=serving: 0 offers, 0 active intents")), "{last}");
    // No STATUS= text carries a path.
    let dir_text = dir.path().display().to_string();
    assert!(start.iter().all(|m| !m.contains(&dir_text)), "{start:?}");

    // SIGTERM: STOPPING=1, then an exit within the shutdown bound.
    let t0 = Instant::now();
    assert!(Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap().success());
    let stop = until(&sock, "STOPPING=1", Duration::from_secs(10));
    assert!(stop.iter().all(|m| !m.contains("READY=1")), "{stop:?}");
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "isto exited with {status}:\n{}", read_log());
            break;
        }
        if t0.elapsed() > Duration::from_secs(15) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("isto did not exit after SIGTERM:\n{}", read_log());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(t0.elapsed() < Duration::from_secs(10), "shutdown took {:?}", t0.elapsed());
}

#[test]
fn a_failed_start_says_why_in_status_and_never_ready() {
    let dir = tempfile::tempdir().unwrap();
    let sock_path = dir.path().join("notify.sock");
    let sock = UnixDatagram::bind(&sock_path).unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    // The port is taken.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let config = dir.path().join("isto.toml");
    std::fs::write(&config, "").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_isto"))
        .arg("serve")
        .env("ISTO_CONFIG", &config)
        .env("ISTO_DATA_DIR", dir.path().join("data"))
        .env("ISTO_LISTEN", format!("127.0.0.1:{port}"))
        .env("ISTO_PUBLIC_URL", format!("http://127.0.0.1:{port}"))
        .env("ISTO_MAIL_FROM", "Holder <noreply@holder.test>")
        .env("NOTIFY_SOCKET", &sock_path)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let got = until(&sock, "STATUS=failed to start: cannot listen", Duration::from_secs(5));
    assert!(got.iter().all(|m| !m.contains("READY=1")), "{got:?}");
    drop(taken);
}

/// The unit file at the repository root.
fn unit() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/isto.service")).unwrap()
}

/// The values of `key=` in the `[Service]` section (a key may repeat).
fn service_values(unit: &str, key: &str) -> Vec<String> {
    let mut in_service = false;
    let mut out = Vec::new();
    for line in unit.lines().map(str::trim) {
        if line.starts_with('[') {
            in_service = line == "[Service]";
        } else if in_service {
            if let Some((k, v)) = line.split_once('=') {
                if k.trim() == key {
                    out.push(v.trim().to_owned());
                }
            }
        }
    }
    out
}

#[test]
fn the_unit_is_type_notify_with_a_dedicated_user_and_the_hardening_set() {
    let u = unit();
    let one = |k: &str| -> String {
        let v = service_values(&u, k);
        assert_eq!(v.len(), 1, "{k}= once in [Service]: {v:?}");
        v[0].clone()
    };
    assert_eq!(one("Type"), "notify");
    assert!(one("ExecStart").ends_with("isto serve"));
    assert_eq!(one("DynamicUser"), "yes");
    assert_eq!(one("StateDirectory"), "isto");
    assert_eq!(one("UMask"), "0077");
    assert_eq!(one("KillSignal"), "SIGTERM");
    // Room for every connection (limits.max_connections, 1024 by default) twice over.
    let nofile: u64 = one("LimitNOFILE").parse().unwrap();
    assert!(nofile >= 2 * 1024 + 64, "LimitNOFILE={nofile}");
    // The shutdown bound (10 s) fits in the stop timeout.
    assert!(one("TimeoutStopSec").trim_end_matches('s').parse::<u64>().unwrap() > 10);
    assert!(one("ReadWritePaths").contains("/var/lib/isto"));
    for (k, v) in [
        ("NoNewPrivileges", "yes"),
        ("ProtectSystem", "strict"),
        ("ProtectHome", "yes"),
        ("PrivateTmp", "yes"),
        ("PrivateDevices", "yes"),
        ("ProtectKernelTunables", "yes"),
        ("ProtectKernelModules", "yes"),
        ("ProtectKernelLogs", "yes"),
        ("ProtectControlGroups", "yes"),
        ("ProtectClock", "yes"),
        ("ProtectHostname", "yes"),
        ("RestrictAddressFamilies", "AF_INET AF_INET6 AF_UNIX"),
        ("RestrictNamespaces", "yes"),
        ("LockPersonality", "yes"),
        ("MemoryDenyWriteExecute", "yes"),
        ("RestrictRealtime", "yes"),
        ("RestrictSUIDSGID", "yes"),
        ("SystemCallArchitectures", "native"),
        ("CapabilityBoundingSet", ""),
    ] {
        assert_eq!(one(k), v, "{k}");
    }
    let filters = service_values(&u, "SystemCallFilter");
    assert!(filters.contains(&"@system-service".to_owned()), "{filters:?}");
    assert!(filters.iter().any(|f| f.starts_with('~') && f.contains("@privileged") && f.contains("@resources")));
    // Binding below 1024 is the documented alternative, not the default.
    assert!(service_values(&u, "AmbientCapabilities").iter().all(String::is_empty));
    assert!(u.contains("CAP_NET_BIND_SERVICE"));
}

#[test]
fn systemd_analyze_verifies_the_unit_where_it_runs() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/isto.service");
    // The unit names /usr/local/bin/isto, which need not exist here: verify a copy that
    // runs the binary under test.
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("isto.service");
    let text = std::fs::read_to_string(path).unwrap().replace("/usr/local/bin/isto", env!("CARGO_BIN_EXE_isto"));
    std::fs::write(&copy, text).unwrap();
    let out = match Command::new("systemd-analyze").arg("verify").arg(&copy).output() {
        Ok(o) => o,
        Err(_) => {
            crate::kit::prerequisite_missing("systemd-analyze (Debian package systemd)");
            return;
        }
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Without a running systemd (a container), verify cannot load units it depends on;
    // then only what it says about isto.service counts.
    let own: Vec<&str> = stderr.lines().filter(|l| l.contains("isto.service")).collect();
    assert!(own.is_empty(), "systemd-analyze verify:\n{stderr}");

    // The exposure score (README: 2.0 or better), offline (systemd 250 and later).
    let Ok(out) = Command::new("systemd-analyze").args(["security", "--offline=yes"]).arg(&copy).output() else {
        crate::kit::prerequisite_missing("systemd-analyze (Debian package systemd)");
        return;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let Some(line) = text.lines().find(|l| l.contains("Overall exposure level")) else {
        crate::kit::prerequisite_missing("a systemd-analyze with the offline security check (systemd 250 or later)");
        return;
    };
    let score: f64 = line.split(':').nth(1).and_then(|v| v.split_whitespace().next()).unwrap().parse().unwrap();
    assert!(score <= 2.0, "{line}");
}
