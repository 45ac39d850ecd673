//! What a client sends never reaches the server's log (README "Logging"), also where rmcp
//! itself logs a refused request: rmcp logs a JSON-RPC error response at `warn` with its
//! message, which quotes a client's unknown tool or method name, so other crates are held
//! to `error` for rmcp (`app::log_ceiling`). Real binary, real MCP requests on 127.0.0.1.

use crate::kit::load::{admin, mcp, mcp_session, Serve};
use serde_json::json;

#[test]
fn unknown_tool_and_method_names_a_client_chose_are_not_logged() {
    let work = tempfile::tempdir().unwrap();
    let data = work.path().join("data");
    let init = admin(&data, &["init"]);
    assert!(init.status.success(), "{}", String::from_utf8_lossy(&init.stderr));
    let serve = Serve::start(&data, work.path().join("serve.log"));
    let sid = mcp_session(serve.port, "log-privacy");
    let secret = "victim.person@example.com";
    for (id, method, params) in [
        (2, "tools/call".to_owned(), json!({"name": format!("evil_tool_{secret}"), "arguments": {}})),
        (3, format!("evil/{secret}"), json!({})),
        (4, "tools/call".to_owned(), json!({"name": "intent_get_intent", "arguments": {"intentCode": secret}})),
    ] {
        let (_, msg) =
            mcp(serve.port, Some(&sid), &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        // Each is refused (an error or a tool error): the request reached the server.
        assert!(msg["error"].is_object() || msg["result"]["isError"] == true, "{method}: {msg}");
    }
    let log = serve.log();
    assert!(log.contains("request"), "the server logged nothing at all:\n{log}");
    assert!(!log.contains(secret) && !log.contains("victim"), "a client's string reached the log:\n{log}");
    serve.stop();
}
