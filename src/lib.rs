//! isto: an Isto Intents intent holder in one binary.
//!
//! Module map (one concern each): [`config`] settings, [`clock`] time, [`text`] folding,
//! [`gazetteer`] SK/CZ areas, [`protocol`] the objects and tool schemas of PROTOCOL.md §2–§3,
//! [`crypto`] sealing and tokens, [`store`] the tables, [`intents`] the operations of the
//! consent-link flow, [`matching`] PROTOCOL.md §6, [`mail`] e-mails and the outbox.

pub mod accounts;
pub mod admin;
pub mod app;
pub mod base;
pub mod catalogue;
pub mod check;
pub mod cli;
pub mod clock;
pub mod config;
pub mod crypto;
pub mod deliveries;
pub mod demand;
pub mod gazetteer;
pub mod generate;
pub mod intents;
pub mod mail;
pub mod matching;
pub mod mcp;
pub mod messages;
pub mod metadata;
pub mod net;
pub mod oauth;
pub mod outbound;
pub mod policy;
pub mod protocol;
pub mod records;
pub mod schedule;
pub mod sellers;
pub mod state;
pub mod store;
pub mod telemetry;
pub mod text;
pub mod web;
