//! The short chaos run of the test command: the `drover-chaos` binary (which makes its own
//! network namespace for partitions) over four seeds that inject every one of the ten
//! control-plane fault kinds and kill, pause and flap the services workload's two agents, none
//! skipped, with zero violations, on three nodes and then on five.

use std::process::Command;

use serde_json::Value;

#[test]
fn short_runs_with_every_fault_kind_keep_every_promise() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let out = dir.path().join("report.json");
    let status = Command::new(env!("CARGO_BIN_EXE_drover-chaos"))
        .args(["--seed", "101", "--runs", "4", "--duration", "30"])
        .arg("--out")
        .arg(&out)
        .status()?;
    let reports: Vec<Value> = serde_json::from_slice(&std::fs::read(&out)?)?;
    anyhow::ensure!(status.success(), "drover-chaos exited with {status}");
    anyhow::ensure!(reports.len() == 4, "one report per seed");
    let mut kinds = std::collections::BTreeSet::new();
    let mut grants = 0;
    let mut moved = 0;
    for report in &reports {
        let seed = &report["seed"];
        let violations = report["violations"].as_array().map(Vec::len);
        anyhow::ensure!(violations == Some(0), "seed {seed}: {}", report["violations"]);
        let skipped = report["faults_skipped"].as_array().map(Vec::len);
        anyhow::ensure!(
            skipped == Some(0),
            "seed {seed}: faults not injected: {}",
            report["faults_skipped"]
        );
        anyhow::ensure!(
            report["writes_ok"].as_u64() > Some(50),
            "seed {seed}: the workload made progress"
        );
        anyhow::ensure!(
            report["service_changes"].as_u64() >= Some(10),
            "seed {seed}: the services workload made progress: {}",
            report["service_changes"]
        );
        // Faults can hold the small pool up for a while in one seed (a grant whose answer was
        // lost stays busy until the reaper), so the pool's progress is counted over all seeds.
        grants += report["grants"].as_u64().unwrap_or(0);
        moved += report["service_instances_moved"].as_u64().unwrap_or(0);
        anyhow::ensure!(
            report["converged_ms"].is_u64(),
            "seed {seed}: the cluster converged"
        );
        for fault in report["fault_log"].as_array().into_iter().flatten() {
            kinds.insert(fault["kind"].to_string());
        }
    }
    anyhow::ensure!(grants >= 20, "the pool was used: {grants} grants in all");
    // Flapping `sim` moves services to `exec`, so the check after healing (each instance on one
    // agent only) has seen moves to check.
    anyhow::ensure!(moved > 0, "no instance moved between the agents in three seeds");
    // Four seeds start three kinds apart (kinds 3, 6, 9 and 2 of ten) and fit at least three
    // faults each: all ten kinds, and the agents are killed, paused and flapped beside them.
    anyhow::ensure!(kinds.len() == 13, "every fault kind was injected: {kinds:?}");

    // Five nodes: minorities of two and a two-against-two bridge, one seed.
    let out = dir.path().join("report-5.json");
    let status = Command::new(env!("CARGO_BIN_EXE_drover-chaos"))
        .args(["--nodes", "5", "--seed", "501", "--runs", "1", "--duration", "20"])
        .arg("--out")
        .arg(&out)
        .status()?;
    let reports: Vec<Value> = serde_json::from_slice(&std::fs::read(&out)?)?;
    anyhow::ensure!(status.success(), "drover-chaos --nodes 5 exited with {status}");
    let report = reports
        .first()
        .ok_or_else(|| anyhow::anyhow!("no five-node report"))?;
    anyhow::ensure!(
        report["violations"].as_array().map(Vec::len) == Some(0),
        "{}",
        report["violations"]
    );
    anyhow::ensure!(
        report["writes_ok"].as_u64() > Some(50),
        "five nodes: the workload made progress"
    );
    anyhow::ensure!(
        report["converged_ms"].is_u64(),
        "five nodes: the cluster converged"
    );
    Ok(())
}
