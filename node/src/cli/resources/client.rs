//! The HTTP side of the resource commands: a client over the nodes of one command, asked in turn
//! with the common arguments' timeout, whose requests answer JSON or a failure by status.

use std::time::Duration;

use reqwest::Method;
use serde_json::Value;

use super::common::Common;
use super::failure::{exit, Failure};
use crate::cli::Servers;

/// The nodes of one command, asked in turn (built once: a token file and CA are read once).
pub(super) struct Client {
    servers: Servers,
}

impl Client {
    pub(super) fn of(common: &Common) -> Result<Self, Failure> {
        if !(common.timeout.is_finite() && common.timeout > 0.0) {
            return Err(Failure::usage("--timeout must be a positive number of seconds"));
        }
        let servers = common
            .server
            .servers()?
            .with_timeout(Duration::from_secs_f64(common.timeout));
        Ok(Self { servers })
    }

    /// One request; the answer as JSON (`Null` for an empty body).
    pub(super) async fn send(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
        body: Option<String>,
    ) -> Result<Value, Failure> {
        let reply = self.servers.try_send(method, path, query, body).await?;
        if !reply.status.is_success() {
            return Err(Failure::of_status(reply.status, &reply.text));
        }
        if reply.text.trim().is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_str(&reply.text).map_err(|e| Failure {
            code: exit::ERROR,
            message: format!("the answer is not JSON: {e}"),
        })
    }

    pub(super) async fn get(&self, path: &str) -> Result<Value, Failure> {
        self.send(Method::GET, path, &[], None).await
    }
}

/// One request, with a client of its own: for commands that make a single request.
pub(in crate::cli) async fn call(
    common: &Common,
    method: Method,
    path: &str,
    body: Option<String>,
) -> Result<Value, Failure> {
    Client::of(common)?.send(method, path, &[], body).await
}
