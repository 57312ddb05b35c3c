//! The `drover` command-line client: `drover lease …` speaks the Boskos dialect to any node.

pub mod lease;
mod server;

pub use server::Servers;
