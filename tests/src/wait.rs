//! Waiting on conditions with a deadline, never on a fixed sleep.

use std::future::Future;
use std::time::Duration;

use anyhow::{bail, Result};
use tokio::time::Instant;

/// How often conditions are polled.
const POLL: Duration = Duration::from_millis(50);

/// Polls `check` until it returns `Some`, or fails after `timeout` naming `what`.
pub async fn eventually<T, F, Fut>(timeout: Duration, what: &str, mut check: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = check().await {
            return Ok(value);
        }
        if Instant::now() >= deadline {
            bail!("timed out after {timeout:?} waiting for {what}");
        }
        tokio::time::sleep(POLL).await;
    }
}
