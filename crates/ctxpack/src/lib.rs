//! The `ctxpack` command line and MCP server: front ends over [`ctxpack_api`].
//!
//! This crate only adapts the API: [`cli`] parses arguments with clap into the API's typed
//! requests and renders what comes back for a terminal; [`mcp`] serves the same requests over
//! the Model Context Protocol; [`exit`] is the one place an error becomes an exit code and a
//! failure envelope. Defaults, masking, errors and the ledger live in the API.

pub mod args;
pub mod cli;
pub mod client;
pub(crate) mod commands;
pub mod exit;
pub(crate) mod host;
pub mod mcp;
mod output;
pub(crate) mod present;
pub mod serve;
pub(crate) mod tls;
pub mod web;
