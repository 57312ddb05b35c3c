//! One seed, one history (#37): seeds of the deterministic simulation with the services workload
//! replayed in two processes of the `drover-chaos` binary and twice within one, compared by the
//! digest of everything each run recorded; and a replayed seed's `DROVER_SIM_LOG` output compared
//! line for line.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context};
use serde_json::Value;

/// How long one `drover-chaos` process may take (ten seeds of 12 simulated seconds, each run
/// twice, take about a minute on two cores).
const PATIENCE: Duration = Duration::from_secs(900);

/// Runs `drover-chaos` with `args` and `env`, its stdout and stderr in `dir` as `name`.out and
/// `name`.err; kills it after [`PATIENCE`].
fn drover_chaos(dir: &Path, name: &str, args: &[&str], env: &[(&str, &str)]) -> anyhow::Result<ExitStatus> {
    let mut command = Command::new(env!("CARGO_BIN_EXE_drover-chaos"));
    command
        .args(args)
        .env_remove("DROVER_SIM_LOG")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(dir.join(format!("{name}.out")))?)
        .stderr(std::fs::File::create(dir.join(format!("{name}.err")))?);
    for (key, value) in env {
        command.env(key, value);
    }
    let mut child = command.spawn()?;
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        if Instant::now() >= deadline {
            // Already gone is fine: it is reaped either way.
            let _ = child.kill();
            let _ = child.wait();
            bail!("drover-chaos {args:?} took longer than {PATIENCE:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The reports `drover-chaos` wrote to `path`, one per seed.
fn reports(path: &PathBuf) -> anyhow::Result<Vec<Value>> {
    let text = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(serde_json::from_slice(&text)?)
}

#[test]
fn ten_seeds_with_services_replay_alike_in_two_processes_and_twice_in_one() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let (first, second) = (dir.path().join("first.json"), dir.path().join("second.json"));
    let common = [
        "--simulate",
        "--seed",
        "7081",
        "--runs",
        "10",
        "--duration",
        "12",
        "--service-clients",
        "2",
    ];
    for (name, out, replay) in [("first", &first, true), ("second", &second, false)] {
        let mut args: Vec<&str> = common.to_vec();
        args.extend(["--out", out.to_str().context("a path that is not UTF-8")?]);
        if replay {
            args.push("--replay");
        }
        // A violation exits with 1 too: that seed's digests are compared all the same (the
        // hundred seeds of the simulation test hold the runs to their promises).
        let status = drover_chaos(dir.path(), name, &args, &[])?;
        ensure!(status.code().is_some(), "drover-chaos was killed: {status}");
    }
    let (first, second) = (reports(&first)?, reports(&second)?);
    ensure!(first.len() == 10 && second.len() == 10, "one report per seed");
    for (one, other) in first.iter().zip(&second) {
        let seed = &one["seed"];
        ensure!(other["seed"] == *seed, "the reports are in seed order");
        let digest = one["digest"].as_u64().context("a digest")?;
        ensure!(
            one["replay_digest"].as_u64() == Some(digest),
            "seed {seed} replayed in the same process recorded another history: {} then {}",
            one["digest"],
            one["replay_digest"]
        );
        ensure!(
            other["digest"].as_u64() == Some(digest),
            "seed {seed} in another process recorded another history: {} then {}",
            one["digest"],
            other["digest"]
        );
        // Not vacuous: the services workload ran.
        ensure!(
            one["service_changes"].as_u64() >= Some(10),
            "seed {seed}: only {} service changes",
            one["service_changes"]
        );
        println!(
            "seed {seed}: digest {digest:016x} three times, {} register ops, {} service changes",
            one["register_ops"], one["service_changes"]
        );
    }
    Ok(())
}

#[test]
fn a_replayed_seed_logs_the_same_lines() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let args = [
        "--simulate",
        // Not one of the other test's seeds: two runs of one seed at once name their agents'
        // directories apart, and the directories are in the log.
        "--seed",
        "7091",
        "--duration",
        "6",
        "--service-clients",
        "2",
        "--out",
    ];
    let mut logs = Vec::new();
    for name in ["first", "second"] {
        let out = dir.path().join(format!("{name}.json"));
        let mut args: Vec<&str> = args.to_vec();
        args.push(out.to_str().context("a path that is not UTF-8")?);
        // Every crate at info, openraft's own lines too, and Drover's at debug.
        let filter = "info,drover_raft=debug,drover_actors=debug,drover_agent=debug";
        drover_chaos(dir.path(), name, &args, &[("DROVER_SIM_LOG", filter)])?;
        logs.push(std::fs::read_to_string(dir.path().join(format!("{name}.err")))?);
    }
    let (first, second) = (&logs[0], &logs[1]);
    let lines = first.lines().count();
    ensure!(lines >= 100, "only {lines} lines were logged:\n{first}");
    if let Some((number, (one, other))) = first
        .lines()
        .zip(second.lines())
        .enumerate()
        .find(|(_, (one, other))| one != other)
    {
        bail!("the replay's log differs at line {}:\n{one}\n{other}", number + 1);
    }
    ensure!(
        second.lines().count() == lines,
        "the replay logged {} lines, the first run {lines}",
        second.lines().count()
    );
    println!("{lines} lines, the same in both runs");
    Ok(())
}
