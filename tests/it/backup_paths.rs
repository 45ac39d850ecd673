//! Backup paths and restore input (issue "Under attack, round 3", point 6), against the
//! real binary: `--out` of `backup` and `keys export` must be a regular file or not
//! exist — a device (a null device node of the test's own, never the machine's
//! `/dev/null`, which the unit test `admin::backup::paths` checks by name), a FIFO, a
//! socket is refused even with `--force` and left as it was; a restore reads no line past the cap (a file with a 1 GiB line is refused with
//! the process's peak memory under 64 MiB, measured with `wait4`); and a restored intent
//! that breaks the input rules is refused naming the record and the field, leaving the
//! data directory as it was. Every wait bounded.

use serde_json::{json, Value};
use std::io::Write as _;
use std::os::unix::fs::FileTypeExt as _;
use std::path::Path;
use std::process::Stdio;

use crate::backup::{backed_up, copy_keys, tree, with_rows};
use crate::kit::load::{admin, text};

/// `--out` names that are no regular file: each refused, with and without `--force`, by
/// `backup` and `keys export`, naming the path and the rule, and left as it was.
#[test]
fn out_that_is_a_device_fifo_or_socket_is_refused_even_with_force() {
    let work = tempfile::tempdir().unwrap();
    let (_keep, data) = crate::backup::populated();
    let fifo = work.path().join("pipe");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let sock = work.path().join("s.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    // The null device itself, as a node of our own (`mknod c 1 3`, as root): a run of a
    // build without the check must not replace the machine's /dev/null. Without the
    // privilege, a symlink to /dev/null stands in (a rename replaces only the link).
    let null = work.path().join("null");
    let made_null = std::process::Command::new("mknod")
        .args(["-m", "666"])
        .arg(&null)
        .args(["c", "1", "3"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !made_null {
        std::os::unix::fs::symlink("/dev/null", &null).unwrap();
    }
    let null_link = work.path().join("to-null");
    std::os::unix::fs::symlink(&null, &null_link).unwrap();
    let cases = [
        (null.as_path(), "a character device"),
        (fifo.as_path(), "a FIFO"),
        (sock.as_path(), "a socket"),
        (null_link.as_path(), "a character device"),
    ];
    for (out, kind) in cases {
        for cmd in [&["backup", "--out"][..], &["keys", "export", "--out"]] {
            for force in [true, false] {
                let mut args: Vec<&str> = cmd.to_vec();
                args.push(out.to_str().unwrap());
                if force {
                    args.push("--force");
                }
                let o = admin(&data, &args);
                let says = text(&o);
                assert!(!o.status.success(), "{args:?} was accepted: {says}");
                assert!(says.contains(&format!("{} is {kind}", out.display())), "{args:?}: {says}");
                assert!(says.contains("must name a regular file"), "{args:?}: {says}");
            }
        }
    }
    assert!(std::fs::metadata(&null).unwrap().file_type().is_char_device(), "the null device was replaced");
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(), "the FIFO was replaced");
    assert!(std::fs::symlink_metadata(&sock).unwrap().file_type().is_socket(), "the socket was replaced");
    assert!(std::fs::symlink_metadata(&null_link).unwrap().file_type().is_symlink(), "the link was replaced");
    let left: Vec<_> = std::fs::read_dir(work.path()).unwrap().filter_map(|e| e.ok()).map(|e| e.file_name()).collect();
    assert_eq!(left.len(), 4, "a temp file was left: {left:?}");
    // A regular file is still replaced with --force.
    let file = work.path().join("b.isto-backup");
    std::fs::write(&file, "old").unwrap();
    let o = admin(&data, &["backup", "--out", file.to_str().unwrap(), "--force"]);
    assert!(o.status.success(), "{}", text(&o));
}

/// Runs `isto admin ARGS` on `data` under a small Python parent that reports the
/// child's peak resident memory (`getrusage(RUSAGE_CHILDREN).ru_maxrss`, KiB on Linux;
/// the parent has no other child): whether it succeeded, its stderr, the peak in bytes.
/// Bounded: 120 s.
fn admin_with_peak_memory(data: &Path, args: &[&str]) -> (bool, String, u64) {
    const PEAK: &str = "import resource, subprocess, sys\n\
r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)\n\
sys.stderr.buffer.write(r.stderr)\n\
print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n";
    let o = std::process::Command::new("python3")
        .arg("-c")
        .arg(PEAK)
        .arg(env!("CARGO_BIN_EXE_isto"))
        .arg("admin")
        .args(args)
        .env("ISTO_DATA_DIR", data)
        .env_remove("ISTO_CONFIG")
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    let mut it = out.split_whitespace().map(|x| x.parse::<i64>().unwrap_or_else(|_| panic!("{out} {err}")));
    let (code, kib) = (it.next().unwrap(), it.next().unwrap());
    (code == 0, err, kib as u64 * 1024)
}

#[test]
fn a_restore_of_a_file_with_a_1_gib_line_is_refused_in_bounded_memory() {
    let work = tempfile::tempdir().unwrap();
    let file = work.path().join("huge-line.isto-backup");
    {
        let header = json!({"format": "isto-backup", "version": 1, "isto": "0.1.0", "schema": 1,
                            "created": "2026-12-01T00:00:00Z", "tables": {}, "rows": 1, "keysIncluded": false});
        let mut enc = zstd::stream::write::Encoder::new(std::fs::File::create(&file).unwrap(), 1).unwrap();
        writeln!(enc, "{header}").unwrap();
        let chunk = vec![b'a'; 1 << 20];
        for _ in 0..1024 {
            enc.write_all(&chunk).unwrap();
        }
        enc.write_all(b"\n").unwrap();
        enc.finish().unwrap();
    }
    let size = std::fs::metadata(&file).unwrap().len();
    assert!(size < 1 << 20, "the file is small ({size} bytes), its line is 1 GiB");
    let data = work.path().join("data");
    let (ok, err, peak) = admin_with_peak_memory(&data, &["restore", file.to_str().unwrap()]);
    assert!(!ok, "{err}");
    assert!(err.contains("line 2 is longer than 8388608 bytes") && err.contains(&file.display().to_string()), "{err}");
    assert!(peak < 64 << 20, "peak memory {} MiB", peak >> 20);
    eprintln!("restore of a 1 GiB line: refused, peak RSS {} KiB", peak >> 10);
    assert!(!data.exists(), "the refused restore made the data directory");
}

#[test]
fn a_restored_intent_that_breaks_the_input_rules_is_refused_by_record_and_field() {
    let work = tempfile::tempdir().unwrap();
    let (_keep, data, file) = backed_up(work.path());
    let fresh = work.path().join("fresh");
    copy_keys(&data, &fresh);
    let untouched = tree(&fresh);
    type Edit = Box<dyn Fn(&mut Value)>;
    let cases: Vec<(&str, Edit, &str)> = vec![
        ("long-statement", Box::new(|v| v["statement"] = json!("x".repeat(3000))), "statement must be at most 2000"),
        ("empty-statement", Box::new(|v| v["statement"] = json!("  ")), "statement must not be empty"),
        ("bad-criteria", Box::new(|v| v["criteria"]["wingspan"] = json!(3)), "criteria.wingspan"),
        ("bad-area", Box::new(|v| v["area"] = json!({"country": "XX"})), "area"),
        ("bad-category", Box::new(|v| v["category"] = json!("spaceships")), "criteria.category"),
    ];
    for (name, edit, says) in cases {
        let bad = work.path().join(format!("{name}.isto-backup"));
        let mut id = String::new();
        with_rows(&file, &bad, |rows| {
            let r = rows.iter_mut().find(|r| r["t"] == "intents").unwrap();
            id = r["k"].as_str().unwrap().to_owned();
            edit(&mut r["v"]);
        });
        let o = admin(&fresh, &["restore", bad.to_str().unwrap()]);
        let err = text(&o);
        assert!(!o.status.success(), "{name}: {err}");
        assert!(err.contains(&format!("intent {id} breaks the input rules")) && err.contains(says), "{name}: {err}");
        assert!(err.contains("nothing was restored"), "{name}: {err}");
        assert!(tree(&fresh) == untouched, "{name}: the refused restore changed the data directory");
    }
}
