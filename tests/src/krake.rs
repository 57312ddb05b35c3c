//! Krake 1.0.1's own code beside the tests: the Python of the environment `make setup` builds
//! (scripts/setup-krake.sh), the scripts in `tests/compat/krake` that drive Drover through
//! `krake.client`, and Krake's own API server (with etcd) as the reference for the wire.

use std::path::PathBuf;
use std::process::Output;

use anyhow::{ensure, Context, Result};

/// The Python of Krake's environment: `$DROVER_KRAKE_VENV/bin/python`, by default under
/// `~/.cache/drover/krake-venv`.
pub fn python() -> Result<PathBuf> {
    let venv = match std::env::var_os("DROVER_KRAKE_VENV") {
        Some(venv) => PathBuf::from(venv),
        None => PathBuf::from(std::env::var_os("HOME").context("HOME is not set")?)
            .join(".cache/drover/krake-venv"),
    };
    let python = venv.join("bin/python");
    ensure!(
        python.try_exists().unwrap_or(false),
        "Krake's environment is missing at {}: run `make setup` (scripts/setup-krake.sh)",
        venv.display()
    );
    Ok(python)
}

/// A script of `tests/compat/krake`.
pub fn script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("compat/krake")
        .join(name)
}

/// Runs a script of `tests/compat/krake` with Krake's Python, off the async runtime, and fails
/// with everything it printed unless it succeeded.
pub async fn run(name: &str, args: Vec<String>) -> Result<String> {
    let python = python()?;
    let script = script(name);
    let output: Output = tokio::task::spawn_blocking(move || {
        std::process::Command::new(python)
            .arg(script)
            .args(args)
            .env("PYTHONWARNINGS", "ignore")
            .output()
    })
    .await??;
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    ensure!(output.status.success(), "{name} failed:\n{said}");
    Ok(said)
}
