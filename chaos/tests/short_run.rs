//! The short chaos run of the test command: a few seeds, every fault kind, zero violations.

use std::time::Duration;

use drover_chaos::faults::FaultKind;
use drover_chaos::runner::{run, RunConfig};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn short_runs_with_every_fault_kind_keep_every_promise() -> anyhow::Result<()> {
    for seed in [101, 102] {
        let config = RunConfig {
            seed,
            duration: Duration::from_secs(20),
            clients: 6,
            keys: 4,
            faults: FaultKind::ALL.to_vec(),
        };
        let report = run(&config).await?;
        report.print();
        anyhow::ensure!(
            report.violations.is_empty(),
            "seed {seed}: {:?}",
            report.violations
        );
        anyhow::ensure!(report.writes_ok > 50, "seed {seed}: the workload made progress");
        anyhow::ensure!(report.fault_log.len() >= 2, "seed {seed}: faults were injected");
        if let Some(worst) = report.failover_ms.iter().max() {
            println!("seed {seed}: worst failover {worst} ms");
        }
    }
    Ok(())
}
