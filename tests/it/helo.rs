//! The SMTP EHLO name (`mail.helo_name`) against the real binary: a fake SMTP server on
//! 127.0.0.1 that, like Postfix with `reject_non_fqdn_helo_hostname`, answers `504` to
//! an EHLO or HELO name without a dot. `isto serve` runs with the public URL
//! `http://isto.test:PORT` (the test's HTTP client resolves `isto.test` to 127.0.0.1)
//! and no `mail.helo_name`: the confirmation e-mail is delivered, the server saw
//! `EHLO isto.test`, and the Message-ID's domain is the same name. `isto admin
//! check-config` warns about a name without a dot.

use super::smtp_faults::{csrf_for, find_str, free_port, header, runtime, wait_until};
use serde_json::{json, Value};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// What the strict fake server saw: the EHLO/HELO names and the accepted messages.
#[derive(Default)]
struct Seen {
    hellos: Mutex<Vec<String>>,
    received: Mutex<Vec<String>>,
}

/// Starts the strict fake SMTP server; answers its port.
async fn strict_smtp(seen: Arc<Seen>) -> u16 {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            let seen = seen.clone();
            tokio::spawn(async move {
                let _ = converse(s, &seen).await;
            });
        }
    });
    port
}

/// One SMTP conversation: a name without a dot in EHLO/HELO gets 504 (and nothing
/// after it is accepted), as Postfix answers it.
async fn converse(s: tokio::net::TcpStream, seen: &Seen) -> std::io::Result<()> {
    let (r, mut w) = s.into_split();
    let mut r = BufReader::new(r);
    w.write_all(b"220 strict.test ESMTP\r\n").await?;
    let mut greeted = false;
    let mut line = String::new();
    loop {
        line.clear();
        if r.read_line(&mut line).await? == 0 {
            return Ok(());
        }
        let cmd = line.trim_end().to_owned();
        let verb = cmd.split(' ').next().unwrap_or_default().to_ascii_uppercase();
        let reply: String = match verb.as_str() {
            "EHLO" | "HELO" => {
                let name = cmd[4..].trim().to_owned();
                seen.hellos.lock().unwrap().push(name.clone());
                if name.contains('.') {
                    greeted = true;
                    if verb == "EHLO" {
                        "250-strict.test\r\n250-8BITMIME\r\n250 SMTPUTF8\r\n".into()
                    } else {
                        "250 strict.test\r\n".into()
                    }
                } else {
                    format!("504 5.5.2 <{name}>: Helo command rejected: need fully-qualified hostname\r\n")
                }
            }
            "MAIL" | "RCPT" if !greeted => "503 5.5.1 Error: send HELO/EHLO first\r\n".into(),
            "MAIL" | "RCPT" | "RSET" | "NOOP" => "250 ok\r\n".into(),
            "DATA" if greeted => {
                w.write_all(b"354 go ahead\r\n").await?;
                let mut data = String::new();
                loop {
                    let mut l = String::new();
                    if r.read_line(&mut l).await? == 0 {
                        return Ok(());
                    }
                    if l == ".\r\n" {
                        break;
                    }
                    data.push_str(&l);
                }
                seen.received.lock().unwrap().push(data);
                "250 queued\r\n".into()
            }
            "QUIT" => {
                w.write_all(b"221 bye\r\n").await?;
                return Ok(());
            }
            _ => "503 5.5.1 bad sequence\r\n".into(),
        };
        w.write_all(reply.as_bytes()).await?;
    }
}

/// `isto serve` with public URL `http://isto.test:PORT`; killed when dropped.
struct Holder {
    child: Child,
    base: String,
    http: reqwest::Client,
    log: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Holder {
    async fn start(smtp_port: u16) -> Holder {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let config = dir.path().join("isto.toml");
        std::fs::write(&config, "[mail]\nsmtp_timeout_secs = 2\nretry_base_secs = 1\n").unwrap();
        let log = dir.path().join("isto.log");
        let child = Command::new(env!("CARGO_BIN_EXE_isto"))
            .arg("serve")
            .env("ISTO_CONFIG", &config)
            .env("ISTO_DATA_DIR", dir.path().join("data"))
            .env("ISTO_LISTEN", format!("127.0.0.1:{port}"))
            .env("ISTO_PUBLIC_URL", format!("http://isto.test:{port}"))
            .env("ISTO_SMTP_URL", format!("smtp://127.0.0.1:{smtp_port}"))
            .env("ISTO_MAIL_FROM", "Holder <noreply@localhost>")
            .env_remove("ISTO_MAIL_HELO_NAME")
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .resolve("isto.test", std::net::SocketAddr::from(([127, 0, 0, 1], port)))
            .timeout(Duration::from_secs(10))
            .build()
            .unwrap();
        let h = Holder { child, base: format!("http://isto.test:{port}"), http, log, _dir: dir };
        let t0 = Instant::now();
        while !h.http.get(format!("{}/healthz", h.base)).send().await.is_ok_and(|r| r.status().is_success()) {
            assert!(t0.elapsed() < Duration::from_secs(20), "isto did not start:\n{}", h.log());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        h
    }

    fn log(&self) -> String {
        let port = self.base.rsplit(':').next().and_then(|p| p.parse().ok()).unwrap_or(0);
        crate::kit::load::settled_log(port, &self.log)
    }

    async fn rpc(&self, sid: Option<&str>, body: Value) -> (Option<String>, Value) {
        let mut b = self
            .http
            .post(format!("{}/mcp", self.base))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(s) = sid {
            b = b.header("mcp-session-id", s).header("mcp-protocol-version", "2025-06-18");
        }
        let res = b.body(body.to_string()).send().await.unwrap();
        let sid = res.headers().get("mcp-session-id").map(|v| v.to_str().unwrap().to_owned());
        let text = res.text().await.unwrap();
        let msg = text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .or_else(|| serde_json::from_str(&text).ok())
            .unwrap_or(Value::Null);
        (sid, msg)
    }

    /// Publishes an intent on `/mcp` and consents for `email` on its page.
    async fn consent(&self, email: &str) {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
                          "capabilities": {}, "clientInfo": {"name": "helo", "version": "1"}}});
        let (sid, out) = self.rpc(None, init).await;
        let sid = sid.unwrap_or_else(|| panic!("no session: {out}"));
        self.rpc(Some(&sid), json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        let args =
            json!({"statement": "Hľadám Škoda Octavia combi", "criteria": {"category": "vehicles"}, "area": "SK"});
        let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                          "params": {"name": "intent_publish_intent", "arguments": args}});
        let (_, out) = self.rpc(Some(&sid), call).await;
        let url = find_str(&out, "consentUrl").unwrap_or_else(|| panic!("no consentUrl: {out}"));
        let path = url.strip_prefix(&self.base).unwrap_or_else(|| panic!("{url}")).to_owned();
        let page = self.http.get(&url).send().await.unwrap().text().await.unwrap();
        let form = [("csrf", csrf_for(&page, &path)), ("email", email.into()), ("accept", "yes".into())];
        let r = self.http.post(&url).form(&form).send().await.unwrap();
        assert_eq!(r.status(), reqwest::StatusCode::SEE_OTHER, "{}", r.text().await.unwrap());
    }
}

#[test]
fn the_ehlo_name_defaults_to_the_public_url_host_and_a_strict_relay_takes_the_mail() {
    runtime().block_on(async {
        let seen = Arc::new(Seen::default());
        let smtp = strict_smtp(seen.clone()).await;
        let isto = Holder::start(smtp).await;
        isto.consent("buyer@buyer.example").await;
        wait_until(20, "the confirmation e-mail at the strict server", || !seen.received.lock().unwrap().is_empty())
            .await;
        let hellos = seen.hellos.lock().unwrap().clone();
        assert!(hellos.iter().all(|h| h == "isto.test"), "EHLO names sent: {hellos:?}\n{}", isto.log());
        let mail = seen.received.lock().unwrap()[0].clone();
        let id = header(&mail, "Message-ID").unwrap_or_else(|| panic!("no Message-ID in:\n{mail}"));
        assert!(id.ends_with("@isto.test>"), "Message-ID {id} is not on the EHLO name's domain");
        assert!(mail.contains("/confirm/"), "not the confirmation e-mail:\n{mail}");
    });
}

#[test]
fn check_config_warns_about_an_ehlo_name_without_a_dot() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("isto.toml"), "").unwrap();
    let run = |public_url: &str, helo: Option<&str>| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_isto"));
        c.args(["admin", "check-config"])
            .env("ISTO_CONFIG", dir.path().join("isto.toml"))
            .env("ISTO_DATA_DIR", dir.path())
            .env("ISTO_PUBLIC_URL", public_url)
            .env("ISTO_SMTP_URL", "smtp://127.0.0.1:25")
            .env("ISTO_MAIL_FROM", "Holder <noreply@localhost>")
            .env_remove("ISTO_MAIL_HELO_NAME");
        if let Some(h) = helo {
            c.env("ISTO_MAIL_HELO_NAME", h);
        }
        let out = c.output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        (String::from_utf8_lossy(&out.stderr).into_owned(), String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let (warn, out) = run("http://vps-4821:8080", None);
    assert!(warn.contains("warning: mail.helo_name: \"vps-4821\" has no dot"), "{warn}");
    assert!(out.contains("\"helo_name\": \"vps-4821\""), "{out}");
    let (warn, out) = run("https://holder.example", None);
    assert!(!warn.contains("helo_name"), "{warn}");
    assert!(out.contains("\"helo_name\": \"holder.example\""), "{out}");
    let (warn, _) = run("https://holder.example", Some("relay"));
    assert!(warn.contains("warning: mail.helo_name: \"relay\" has no dot"), "{warn}");
}
