//! The integration tests, one binary: each module drives isto in-process over a real
//! redb file in a temp dir; `kit` holds the shared fixtures.

// Test code: a failed set-up is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod kit;

mod backup;
mod backup_paths;
mod backup_timer;
mod book;
mod buyer_flow;
mod cadence;
mod conn_limits;
mod cost;
mod demand;
mod disk_full;
pub mod explain;
mod failed_start;
mod fixture;
mod group_commit;
mod helo;
mod hidden_limit;
mod holder_flow;
mod http_router;
mod import_exit;
mod limits;
mod link_csrf;
mod log_privacy;
mod mail_faults;
mod mcp_app;
mod mrtr;
mod people;
mod postgres;
mod proxies;
mod quotas;
mod rate_limits;
mod relevance;
mod replicas;
mod rotate;
mod sellers;
mod smtp_faults;
mod stats;
mod stdout_closed;
mod store_guard;
mod systemd;
