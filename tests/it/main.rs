//! The integration tests, one binary: each module drives isto in-process over a real
//! redb file in a temp dir; `kit` holds the shared fixtures.

mod kit;

mod buyer_flow;
mod demand;
mod holder_flow;
mod http_router;
mod sellers;
