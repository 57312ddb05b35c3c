//! The `drover` command-line client: `drover lease …` speaks the Boskos dialect to any node;
//! `drover cluster status` shows the control plane's members; `drover token` mints a
//! development token for the platform API.

pub mod boskosctl;
pub mod cluster;
pub mod contexts;
pub mod lease;
pub mod progress;
mod recover;
pub mod resources;
mod server;
pub mod service;
pub mod snapshot;
pub mod token;
mod yaml;

pub use server::{SendError, Servers};
