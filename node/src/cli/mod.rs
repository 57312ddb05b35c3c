//! The `drover` command-line client: `drover lease …` speaks the Boskos dialect to any node;
//! `drover token` mints a development token for the platform API.

pub mod lease;
mod server;
pub mod token;

pub use server::Servers;
