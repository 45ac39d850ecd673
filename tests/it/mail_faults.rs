//! SMTP faults against the real outbox worker and transport: fake SMTP servers on
//! 127.0.0.1 started by the test. A server that accepts and never answers must not hold
//! up a withdrawal; a withdrawn intent's queued mail is never sent; credentials never
//! travel without TLS.

use crate::kit::{self, Opts};
use isto::mail::{check_smtp_url, worker, Transport, SMTP_COMMAND_TIMEOUT};
use isto::state::AppState;
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

/// A consent-link intent with its confirmation mail queued; returns the intentCode.
fn queued_confirmation(h: &AppState, email: &str) -> String {
    let args = json!({"statement": "Hľadám Škoda Octavia combi", "area": "Bratislava"});
    let r = h.intents.publish_draft(h.intents.parse_publish(&args).unwrap()).unwrap();
    let consent = r.consent_url.rsplit('/').next().unwrap().to_owned();
    h.intents.give_consent(&consent, email, "sk").unwrap();
    r.intent_code
}

/// A TCP server that accepts, reads whatever comes, and never writes a byte.
async fn silent_server() -> (u16, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let a = accepted.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            a.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                while let Ok(n) = s.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                }
            });
        }
    });
    (port, accepted)
}

#[test]
fn a_silent_smtp_server_never_holds_up_a_withdrawal() {
    let dir = tempfile::tempdir().unwrap();
    let h = kit::open_state(dir.path(), kit::clock(), Opts::default());
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let (port, accepted) = silent_server().await;
        let code = queued_confirmation(&h, "buyer@example.com");
        let transport = Transport::with_timeout(
            Some(&format!("smtp://127.0.0.1:{port}")),
            &dir.path().join("outbox"),
            false,
            SMTP_COMMAND_TIMEOUT,
        )
        .unwrap();
        let stop = CancellationToken::new();
        let w = tokio::spawn(worker::run(h.base.outbox().clone(), transport, stop.clone()));
        // Wait (bounded) until the worker is stuck in the conversation with the silent
        // server: once it connected, its send has begun, and without a greeting it cannot
        // end.
        let t0 = Instant::now();
        while accepted.load(Ordering::SeqCst) == 0 {
            assert!(t0.elapsed() < Duration::from_secs(10), "the worker never connected");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // Every withdrawal path answers at once although a send is stuck.
        let h2 = h.clone();
        let started = Instant::now();
        tokio::task::spawn_blocking(move || h2.intents.withdraw_by_code(&code, None)).await.unwrap().unwrap();
        assert!(started.elapsed() < Duration::from_secs(1), "withdrawal waited {:?}", started.elapsed());
        assert!(kit::mails(&h).is_empty(), "the withdrawal removed the queued mail");
        // The worker stops promptly when told to, stuck send or not.
        let stopping = Instant::now();
        stop.cancel();
        tokio::time::timeout(Duration::from_secs(10), w).await.expect("the worker did not stop within 10 s").unwrap();
        assert!(stopping.elapsed() < Duration::from_secs(2), "stopping took {:?}", stopping.elapsed());
    });
}

#[test]
fn credentials_never_travel_in_clear() {
    let outbox = tempfile::tempdir().unwrap();
    // A user name without TLS is refused, and the message never shows the password.
    let err =
        Transport::with_timeout(Some("smtp://user:s3cret@127.0.0.1:2525"), outbox.path(), false, SMTP_COMMAND_TIMEOUT)
            .err()
            .unwrap();
    let msg = err.to_string();
    assert!(msg.contains("TLS") && !msg.contains("s3cret"), "{msg}");
    let e = check_smtp_url("smtp://user:s3cret@mail.example:25?tls=opportunistic", false).unwrap_err();
    assert!(e.starts_with("has a user name but no TLS") && !e.contains("s3cret"), "{e}");
    // With TLS, or when the operator allows it explicitly, it is accepted.
    assert!(check_smtp_url("smtps://user:s3cret@mail.example:465", false).unwrap().is_empty());
    assert!(check_smtp_url("smtp://user:s3cret@mail.example:587?tls=required", false).unwrap().is_empty());
    assert!(check_smtp_url("smtp://user:s3cret@127.0.0.1:2525", true).is_ok());
    assert!(Transport::with_timeout(
        Some("smtp://user:s3cret@127.0.0.1:2525"),
        outbox.path(),
        true,
        SMTP_COMMAND_TIMEOUT
    )
    .is_ok());
    // Without credentials plain SMTP is fine (a local relay).
    assert!(check_smtp_url("smtp://127.0.0.1:25", false).unwrap().is_empty());
    // Bad schemes and tls values name the rule; visible port mismatches are warned about.
    assert!(check_smtp_url("http://mail.example", false).unwrap_err().contains("smtp or smtps"));
    assert!(check_smtp_url("smtp://mail.example?tls=yes", false).unwrap_err().contains("tls must be"));
    assert!(check_smtp_url("smtp://mail.example:465", false).unwrap()[0].contains("465"));
    assert!(check_smtp_url("smtps://mail.example:587", false).unwrap()[0].contains("STARTTLS"));
}
