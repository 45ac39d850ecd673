//! `packaging/isto-backup.service` and `.timer` (the README's backup schedule): the
//! service's own command lines, run with the binary under test and a temp directory in
//! place of `/usr/bin/isto` and `/var/backups/isto`, write a backup that `isto admin
//! backup --verify` accepts and then keep only the newest `ISTO_BACKUP_KEEP` copies;
//! `systemd-analyze verify` accepts both units where it runs.

use std::path::Path;
use std::process::{Command, Stdio};

const SERVICE: &str = include_str!("../../packaging/isto-backup.service");
const TIMER: &str = include_str!("../../packaging/isto-backup.timer");

/// The values of `key=` lines of a unit, in order.
fn values<'a>(unit: &'a str, key: &str) -> Vec<&'a str> {
    unit.lines().filter_map(|l| l.strip_prefix(key).and_then(|r| r.strip_prefix('='))).collect()
}

/// The shell script of a `/bin/sh -c '…'` command line, with systemd's `$$` and `%%`
/// escapes undone and the install paths replaced.
fn script(line: &str, bin: &Path, backups: &Path) -> String {
    let inner = line.strip_prefix("/bin/sh -c '").and_then(|r| r.strip_suffix('\'')).unwrap_or_else(|| {
        panic!("not a /bin/sh -c '…' line: {line}");
    });
    inner
        .replace("$$", "$")
        .replace("%%", "%")
        .replace("/usr/bin/isto", bin.to_str().unwrap())
        .replace("/var/backups/isto", backups.to_str().unwrap())
}

#[test]
fn the_backup_service_writes_a_good_backup_and_keeps_the_newest_copies() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("isto.toml");
    std::fs::write(&config, "").unwrap();
    let data = dir.path().join("data");
    let backups = dir.path().join("backups");
    std::fs::create_dir(&backups).unwrap();
    let bin = Path::new(env!("CARGO_BIN_EXE_isto"));
    let keep: usize = values(SERVICE, "Environment")
        .iter()
        .find_map(|v| v.strip_prefix("ISTO_BACKUP_KEEP="))
        .expect("Environment=ISTO_BACKUP_KEEP=")
        .parse()
        .unwrap();
    assert!(keep >= 2, "{keep}");
    assert!(values(SERVICE, "Environment").contains(&"ISTO_DATA_DIR=/var/lib/isto"));
    let sh = |script: &str| {
        Command::new("/bin/sh")
            .arg("-c")
            .arg(script)
            .env("ISTO_CONFIG", &config)
            .env("ISTO_DATA_DIR", &data)
            .env("ISTO_BACKUP_KEEP", keep.to_string())
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let o = Command::new(bin).args(["admin", "init"]).env("ISTO_CONFIG", &config).env("ISTO_DATA_DIR", &data).output();
    assert!(o.unwrap().status.success());
    // Older copies from earlier days (their names sort before today's).
    for day in 1..=keep + 3 {
        std::fs::write(backups.join(format!("isto-202501{day:02}-031500.isto-backup")), "old").unwrap();
    }
    std::fs::write(backups.join("notes.txt"), "not a backup").unwrap();

    let start = values(SERVICE, "ExecStart");
    assert_eq!(start.len(), 1, "{start:?}");
    let o = sh(&script(start[0], bin, &backups));
    assert!(
        o.status.success(),
        "ExecStart: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let new: Vec<_> = std::fs::read_dir(&backups)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("isto-2") && !n.starts_with("isto-2025"))
        .collect();
    assert_eq!(new.len(), 1, "{new:?}");
    let made = backups.join(&new[0]);
    assert!(new[0].ends_with(".isto-backup") && new[0].len() == "isto-YYYYMMDD-HHMMSS.isto-backup".len(), "{new:?}");
    use std::os::unix::fs::PermissionsExt as _;
    assert_eq!(std::fs::metadata(&made).unwrap().permissions().mode() & 0o777, 0o600);
    let o = Command::new(bin).args(["admin", "backup", "--verify"]).arg(&made).env("ISTO_CONFIG", &config).output();
    assert!(o.unwrap().status.success());

    let post = values(SERVICE, "ExecStartPost");
    assert_eq!(post.len(), 1, "{post:?}");
    let o = sh(&script(post[0], bin, &backups));
    assert!(o.status.success(), "ExecStartPost: {}", String::from_utf8_lossy(&o.stderr));
    let mut left: Vec<_> =
        std::fs::read_dir(&backups).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    left.sort();
    // The newest `keep` backups: the one just made and the latest old ones; other files stay.
    assert_eq!(left.len(), keep + 1, "{left:?}");
    assert!(left.contains(&new[0]) && left.contains(&"notes.txt".to_owned()), "{left:?}");
    assert!(!left.contains(&"isto-20250101-031500.isto-backup".to_owned()), "{left:?}");
    assert!(left.contains(&format!("isto-202501{:02}-031500.isto-backup", keep + 3)), "{left:?}");
}

#[test]
fn the_timer_is_daily_and_persistent_and_systemd_analyze_accepts_both() {
    assert_eq!(values(TIMER, "Persistent"), vec!["true"]);
    assert_eq!(values(TIMER, "OnCalendar").len(), 1);
    assert_eq!(values(TIMER, "WantedBy"), vec!["timers.target"]);
    assert_eq!(values(SERVICE, "Type"), vec!["oneshot"]);
    let dir = tempfile::tempdir().unwrap();
    let service = dir.path().join("isto-backup.service");
    let timer = dir.path().join("isto-backup.timer");
    std::fs::write(&service, SERVICE).unwrap();
    std::fs::write(&timer, TIMER).unwrap();
    let out = match Command::new("systemd-analyze").arg("verify").arg(&service).arg(&timer).output() {
        Ok(o) => o,
        Err(_) => {
            crate::kit::prerequisite_missing("systemd-analyze (Debian package systemd)");
            return;
        }
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Without a running systemd (a container), verify cannot load units these depend on;
    // then only what it says about these two counts.
    let own: Vec<&str> = stderr.lines().filter(|l| l.contains("isto-backup")).collect();
    assert!(own.is_empty(), "systemd-analyze verify:\n{stderr}");
}
