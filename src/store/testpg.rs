//! A throw-away PostgreSQL cluster for tests (unit tests and, with the `testkit`
//! feature, `tests/it`): one per test process, started at the first call in a temporary
//! directory (`initdb --auth=trust -U isto`, `pg_ctl` on a free loopback port with its
//! socket in that directory, fsync off), and a new database per call (`CREATE DATABASE
//! t_N TEMPLATE template0`). A watchdog process stops the cluster and removes the
//! directory when the test process ends. As root, the cluster runs as the `postgres`
//! user (else `nobody`) through `runuser`, since PostgreSQL refuses to run as root.
//!
//! The binaries are looked up on `PATH`, then in `/usr/lib/postgresql/*/bin` (Debian's
//! `postgresql` package). Never used by `isto serve`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::pg::PgSettings;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

/// The running cluster: its port and the directory holding its socket.
struct Cluster {
    port: u16,
    dir: PathBuf,
}

static CLUSTER: OnceLock<Cluster> = OnceLock::new();
static NEXT_DB: AtomicU32 = AtomicU32::new(0);

/// The directory of `initdb`, `pg_ctl` and `postgres`.
fn bin_dir() -> PathBuf {
    binaries().unwrap_or_else(|why| panic!("{why}"))
}

/// The directory of PostgreSQL's server binaries (`initdb`, `pg_ctl`, `postgres`), or
/// why there is none: for a caller that skips rather than fails without them (the
/// benches).
///
/// # Errors
/// The sentence saying where they were looked for.
pub fn binaries() -> Result<PathBuf, String> {
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .find(|d| d.join("initdb").is_file() && d.join("pg_ctl").is_file());
    if let Some(d) = on_path {
        return Ok(d);
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|d| d.join("initdb").is_file())
        .collect();
    found.sort();
    found.pop().ok_or_else(|| {
        "PostgreSQL's server binaries (initdb, pg_ctl) are neither on PATH nor in /usr/lib/postgresql/*/bin: \
         install Debian's postgresql package (the tests never start its system cluster)"
            .to_owned()
    })
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0\n"))
}

/// The user the cluster runs as when the tests run as root.
fn run_as() -> &'static str {
    if Command::new("id").arg("postgres").output().is_ok_and(|o| o.status.success()) {
        "postgres"
    } else {
        "nobody"
    }
}

/// `program` of the binaries with `args`, as the cluster's user.
fn pg_command(bin: &Path, program: &str, args: &[&str]) -> Command {
    if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", run_as(), "--"]).arg(bin.join(program)).args(args);
        c
    } else {
        let mut c = Command::new(bin.join(program));
        c.args(args);
        c
    }
}

fn run(mut c: Command, what: &str) {
    let out = c.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn start() -> Cluster {
    let bin = bin_dir();
    let dir = std::env::temp_dir().join(format!("isto-pg-{}-{}", std::process::id(), free_port()));
    std::fs::create_dir_all(&dir).unwrap();
    if is_root() {
        run(
            {
                let mut c = Command::new("chown");
                c.arg(format!("{}:", run_as())).arg(&dir);
                c
            },
            "chown of the cluster directory",
        );
    }
    let data = dir.join("data");
    let (data_s, dir_s) = (data.to_string_lossy().into_owned(), dir.to_string_lossy().into_owned());
    run(
        pg_command(&bin, "initdb", &["-D", &data_s, "--auth=trust", "-U", "isto", "-E", "UTF8", "--no-sync"]),
        "initdb",
    );
    let port = free_port();
    let opts = format!("-p {port} -k {dir_s} -h 127.0.0.1 -F -c max_connections=200");
    let log = dir.join("log").to_string_lossy().into_owned();
    run(pg_command(&bin, "pg_ctl", &["-D", &data_s, "-o", &opts, "-l", &log, "-w", "start"]), "pg_ctl start");
    // The watchdog: once this process is gone, stop the cluster and remove its files.
    let stop = pg_command(&bin, "pg_ctl", &["-D", &data_s, "-m", "immediate", "stop"]);
    let stop_line = format!("{:?}", stop).replace('"', "");
    let script = format!(
        "while kill -0 {pid} 2>/dev/null; do sleep 1; done; {stop_line} >/dev/null 2>&1; rm -rf '{dir_s}'",
        pid = std::process::id()
    );
    // Never waited for: it outlives this process, whose end is what it waits for.
    #[allow(clippy::zombie_processes)]
    Command::new("sh")
        .args(["-c", &script])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    Cluster { port, dir }
}

/// Settings of a new, empty database in the test cluster (started at the first call).
///
/// # Panics
/// When the cluster cannot be started or the database made (tests only).
pub fn database() -> PgSettings {
    let c = CLUSTER.get_or_init(start);
    let n = NEXT_DB.fetch_add(1, Ordering::SeqCst);
    let name = format!("t_{}_{n}", std::process::id());
    let admin = settings(c, "postgres");
    super::pg::execute_once(&admin, &format!("CREATE DATABASE {name} TEMPLATE template0")).unwrap();
    settings(c, &name)
}

/// Runs `sql` (statements without results) on the database of `settings`.
///
/// # Panics
/// On the database's error (tests only).
pub fn execute(settings: &PgSettings, sql: &str) {
    super::pg::execute_once(settings, sql).unwrap();
}

/// The `bigint` in the first column of the first row of `sql` on the database of
/// `settings` (a `SELECT count(*) …`).
///
/// # Panics
/// On the database's error or no such value (tests only).
pub fn query_count(settings: &PgSettings, sql: &str) -> i64 {
    let pool = super::pg::Pool::new(settings).unwrap();
    let lease = pool.lease().unwrap();
    let rows = lease.conn().unwrap().query(sql, &[]).unwrap();
    rows[0].get(0)
}

/// The cluster's data directory and `pg_ctl` as the cluster's user, with `action`
/// (`stop -m immediate`, `start`): for tests of a lost database.
///
/// # Panics
/// When `pg_ctl` fails or no cluster runs in this process (tests only).
pub fn pg_ctl(action: &[&str]) {
    let c = CLUSTER.get().expect("no test cluster runs in this process");
    let data = c.dir.join("data").to_string_lossy().into_owned();
    let opts = format!("-p {} -k {} -h 127.0.0.1 -F -c max_connections=200", c.port, c.dir.to_string_lossy());
    let log = c.dir.join("log").to_string_lossy().into_owned();
    let mut args = vec!["-D", data.as_str(), "-o", opts.as_str(), "-l", log.as_str(), "-w"];
    args.extend_from_slice(action);
    run(pg_command(&bin_dir(), "pg_ctl", &args), "pg_ctl");
}

fn settings(c: &Cluster, db: &str) -> PgSettings {
    PgSettings {
        url: format!("host=127.0.0.1 port={} user=isto dbname={db} application_name=isto-test", c.port),
        pool_size: 4,
    }
}

/// The same empty store on each backend, for tests that run on both: `(backend name,
/// store, the temp directory of the redb file)`.
#[cfg(test)]
pub(crate) fn both() -> Vec<(&'static str, super::Store, tempfile::TempDir)> {
    let d = tempfile::tempdir().unwrap();
    let redb = super::Store::open(&d.path().join("s.redb")).unwrap();
    let pg = super::Store::open_at(&super::Location::Postgres(database())).unwrap();
    vec![("redb", redb, d), ("postgres", pg, tempfile::tempdir().unwrap())]
}
