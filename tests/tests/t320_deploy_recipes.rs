//! The deployment recipes in `deploy/` validate (`scripts/check-recipes.sh`): the systemd units
//! (`systemd-analyze verify` and `security`, the example configuration accepted by the real
//! binary), the compose file (`docker-compose config` and a structural check) and the
//! Kubernetes StatefulSet (`kubectl kustomize`, checked against the Kubernetes Python client's
//! models: parallel start, a headless peer service publishing not-ready addresses, a
//! PodDisruptionBudget of one).

use std::path::PathBuf;
use std::process::Command;

use anyhow::{ensure, Result};
use drover_tests::process::drover_binary;

#[test]
fn the_systemd_compose_and_kustomize_recipes_validate() -> Result<()> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let output = Command::new("bash")
        .arg(root.join("scripts/check-recipes.sh"))
        .arg(drover_binary()?)
        .current_dir(&root)
        .output()?;
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    ensure!(output.status.success(), "check-recipes.sh failed:\n{said}");
    ensure!(said.contains("check-recipes: all checks passed"), "{said}");
    for validator in ["systemd-analyze verify", "docker", "kubectl kustomize"] {
        ensure!(
            said.lines().any(|l| l.starts_with("ok") && l.contains(validator)),
            "{validator} did not run:\n{said}"
        );
    }
    Ok(())
}
