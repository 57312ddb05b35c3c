//! The bearer token every client of the harness sends once the nodes require credentials: the
//! services workload needs the platform API, which never runs open, so those runs start the
//! nodes with the test issuer and every client (workloads, convergence reads, membership
//! changes) speaks as the registered operator. Nodes that run open ignore it.

use std::sync::OnceLock;

use reqwest::header::{HeaderMap, HeaderValue, AUTHORIZATION};
use reqwest::ClientBuilder;

static TOKEN: OnceLock<String> = OnceLock::new();

/// From now on every client sends `token`.
pub fn require(token: String) {
    // One operator for the whole process: a later run keeps the first token.
    let _ = TOKEN.set(token);
}

/// A client builder that sends the token, if one is required.
pub fn client_builder() -> ClientBuilder {
    let builder = reqwest::Client::builder();
    let Some(token) = TOKEN.get() else {
        return builder;
    };
    let Ok(mut value) = HeaderValue::from_str(&format!("Bearer {token}")) else {
        return builder;
    };
    value.set_sensitive(true);
    let mut headers = HeaderMap::new();
    headers.insert(AUTHORIZATION, value);
    builder.default_headers(headers)
}
