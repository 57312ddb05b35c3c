//! `drover service logs`: three `drover serve` processes and an `exec` agent running a service
//! whose instances count out loud. Without `-f` the CLI prints each instance's last lines behind
//! `[instance]`; with `-f` on one instance it prints every line the instance writes, once and
//! in order, with no gap, across the agent's log rotation; following the whole service picks
//! up an instance a scale-up started. An unknown instance is exit 3.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use drover_tests::agent::AgentProcess;
use drover_tests::platform::{process_platform_args, token, PlatformClient, OPERATOR_SUBJECT};
use drover_tests::process::{drover_binary, ProcessCluster};
use drover_tests::services::{expect_ok, tenant_with_clusters};
use reqwest::Method;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};

const ELECTION: Duration = Duration::from_secs(20);
const CONVERGE: Duration = Duration::from_secs(30);
const ID0: &str = "acme.t390.talker.r1.0";
const ID2: &str = "acme.t390.talker.r1.2";

fn cli(servers: &str, args: &[&str]) -> Result<tokio::process::Command> {
    let mut command = tokio::process::Command::new(drover_binary()?);
    command
        .args(["service", "logs", "t390", "--tenant", "acme"])
        .args(args)
        .env("DROVER_SERVER", servers)
        .env("DROVER_TOKEN", token("alice"))
        .stdin(Stdio::null())
        .kill_on_drop(true);
    Ok(command)
}

/// `(instance, n)` of a line `[instance] instance n` (or `instance n` when unprefixed).
fn counted(line: &str) -> Option<(String, u64)> {
    let line = line
        .strip_prefix('[')
        .map_or(line, |rest| rest.split_once("] ").map_or(rest, |(_, l)| l));
    let (id, n) = line.rsplit_once(' ')?;
    Some((id.to_string(), n.parse().ok()?))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_print_tails_and_follow_every_line_once() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let args = process_platform_args(dir.path())?;
    let nodes = ProcessCluster::start_with_args(3, &args)?;
    // A small log limit so the agent rotates while the CLI follows.
    let agent = AgentProcess::exec(&["--log-max-bytes=2048"])?;
    let leader = nodes.leader(ELECTION).await?;
    let addr = nodes.api_addr(leader);
    let servers = (1..=3)
        .map(|id| format!("http://{}", nodes.api_addr(id)))
        .collect::<Vec<_>>()
        .join(",");
    let alice = PlatformClient::new(&addr, Some(token("alice")));
    let root = PlatformClient::new(&addr, Some(token(OPERATOR_SUBJECT)));
    tenant_with_clusters(&root, &alice, &[(&agent, "exec")], 4000).await?;
    let talker = |instances: u32| {
        json!({"deployment": {"roles": {"talker": {
            "instances": instances,
            "resources": {"cpu_millis": 10, "memory_mib": 8},
            "exec": {"argv": ["sh", "-c",
                "i=0; while [ $i -lt 100000 ]; do echo \"$DROVER_INSTANCE_ID $i\"; i=$((i+1)); sleep 0.05; done; sleep 1000"]},
        }}}})
    };
    expect_ok(
        &alice,
        Method::POST,
        "/tenant/acme/service/t390?accept=true",
        Some(&talker(2)),
    )
    .await?;

    // The last lines of both instances, prefixed, once both have written some.
    let deadline = tokio::time::Instant::now() + CONVERGE;
    let tails = loop {
        let out = cli(&servers, &["--tail", "3"])?.output().await?;
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let ids: Vec<String> = text.lines().filter_map(counted).map(|(id, _)| id).collect();
        if out.status.success() && ids.iter().filter(|id| *id == ID0).count() == 3 && ids.len() == 6 {
            break text;
        }
        ensure!(
            tokio::time::Instant::now() < deadline,
            "no tails of both instances: {text} {}",
            String::from_utf8_lossy(&out.stderr)
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    ensure!(
        tails.lines().all(|l| l.starts_with("[acme.t390.talker.r1.")),
        "{tails}"
    );

    // Following one instance: 160 consecutive numbers (8 s of output, across two 2 KiB
    // rotations; copytruncate could lose a line written between the copy and the truncation,
    // a window of microseconds against a line every 50 ms).
    let mut follow = cli(&servers, &[ID0, "-f", "--tail", "1"])?
        .stdout(Stdio::piped())
        .spawn()?;
    let mut lines = BufReader::new(follow.stdout.take().context("stdout")?).lines();
    let mut seen: Vec<u64> = Vec::new();
    tokio::time::timeout(Duration::from_secs(60), async {
        while seen.len() < 160 {
            let line = lines.next_line().await?.context("the follower ended")?;
            let (id, n) = counted(&line).with_context(|| format!("not a counted line: {line:?}"))?;
            ensure!(id == ID0, "another instance's line unprefixed: {line}");
            seen.push(n);
        }
        anyhow::Ok(())
    })
    .await
    .context("160 lines within 60 s")??;
    follow.kill().await?;
    let gaps: Vec<_> = seen.windows(2).filter(|w| w[1] != w[0] + 1).collect();
    ensure!(gaps.is_empty(), "lines repeated or skipped: {gaps:?} in {seen:?}");
    let rotated = agent.data_dir().join(format!("instances/{ID0}/output.log.1"));
    ensure!(rotated.try_exists()?, "the agent rotated the log meanwhile");

    // Following the service: a third instance started by a scale-up shows up.
    let mut follow = cli(&servers, &["-f", "--tail", "0"])?
        .stdout(Stdio::piped())
        .spawn()?;
    let mut lines = BufReader::new(follow.stdout.take().context("stdout")?).lines();
    let scale = json!({"scale": {"talker": 3}});
    expect_ok(
        &alice,
        Method::PATCH,
        "/tenant/acme/service/t390/revision/1/scale?accept=true",
        Some(&scale),
    )
    .await?;
    let mut by_instance: BTreeMap<String, u64> = BTreeMap::new();
    tokio::time::timeout(CONVERGE * 2, async {
        while by_instance.get(ID2).copied().unwrap_or(0) < 5 {
            let line = lines.next_line().await?.context("the follower ended")?;
            if let Some((id, _)) = counted(&line) {
                *by_instance.entry(id).or_default() += 1;
            }
        }
        anyhow::Ok(())
    })
    .await
    .with_context(|| format!("no lines of {ID2}: {by_instance:?}"))??;
    follow.kill().await?;
    ensure!(by_instance.len() == 3, "{by_instance:?}");

    let unknown = cli(&servers, &["acme.t390.talker.r1.9"])?.output().await?;
    ensure!(unknown.status.code() == Some(3), "{unknown:?}");
    Ok(())
}
