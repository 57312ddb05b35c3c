//! `drover agent` as a separate process: the `exec` executor runs real processes, restarts
//! them, stops them with their process group, refuses calls from older leaders, adopts its
//! instances after it was killed with SIGKILL, requires the join token (and never shows it);
//! the `sim` executor reports simulated capacity, obeys fault switches and refuses sets that
//! do not fit; a set whose caller hangs up halfway is carried out all the same.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use drover_model::cluster::agent_api::{
    EndReason, Fence, Health, InstanceState, Inventory, Resources, SimFaults,
};
use drover_tests::agent::{
    alive, desired, instance, kill_pid, proc_info, proc_strings, processes, processes_of_instance, sleeper,
    AgentClient, AgentProcess, AGENT_TOKEN,
};
use drover_tests::wait::eventually;

const WAIT: Duration = Duration::from_secs(20);

/// Waits until every instance of the inventory runs with a pid; returns pids by id.
async fn running_pids(client: &AgentClient, count: usize) -> Result<BTreeMap<String, u32>> {
    eventually(WAIT, "every instance running with a pid", || async {
        let inventory = client.inventory().await.ok()?;
        let pids: BTreeMap<String, u32> = inventory
            .instances
            .iter()
            .filter(|i| i.state == InstanceState::Running)
            .filter_map(|i| Some((i.id.to_string(), i.pid?)))
            .collect();
        (pids.len() == count && inventory.instances.len() == count).then_some(pids)
    })
    .await
}

/// Waits until `pid` runs `sleep 1000` (the shell has exec'd) as instance `id`.
async fn runs_as_instance(pid: u32, id: &str) -> Result<()> {
    eventually(WAIT, &format!("process {pid} to run sleep as {id}"), || async {
        let cmdline = proc_strings(pid, "cmdline");
        let environ = proc_strings(pid, "environ");
        let wanted = format!("DROVER_INSTANCE_ID={id}");
        (cmdline == ["sleep", "1000"] && environ.contains(&wanted)).then_some(())
    })
    .await
}

/// Exactly one live process per id carries its `DROVER_INSTANCE_ID`.
fn one_process_each(ids: &[&str]) -> Result<()> {
    for id in ids {
        let pids = processes_of_instance(id);
        ensure!(
            pids.len() == 1,
            "instance {id} runs as {pids:?}, not exactly once"
        );
    }
    Ok(())
}

fn ids(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}.main.r1.{i}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_runs_restarts_and_stops_real_processes() -> Result<()> {
    let agent = AgentProcess::exec(&[])?;
    let client = agent.client();
    let names = ids("alpha", 3);
    let set: Vec<_> = names.iter().map(|id| sleeper(id)).collect();
    let reply = client.put_set("alpha", &desired(1, 1, set.clone())).await?;
    let inventory: Inventory = reply.ok()?;
    ensure!(inventory.instances.len() == 3, "{inventory:?}");

    let pids = running_pids(&client, 3).await?;
    for (id, pid) in &pids {
        runs_as_instance(*pid, id).await?;
        let environ = proc_strings(*pid, "environ");
        ensure!(
            !environ.iter().any(|e| e.contains(AGENT_TOKEN)),
            "the join token leaked into an instance's environment"
        );
        let cwd = proc_info(*pid).and_then(|p| p.cwd).context("cwd")?;
        ensure!(
            cwd == agent.data_dir().join("instances").join(id).join("work"),
            "{cwd:?}"
        );
    }

    // Logs through the API.
    let first = &names[0];
    eventually(WAIT, "the instance's log", || async {
        let reply = client.logs(first, "tail=10").await.ok()?;
        (reply.status == 200 && reply.body.contains(&format!("started {first}"))).then_some(())
    })
    .await?;
    let reply = client.logs(first, "tail=lots").await?;
    ensure!(
        reply.status == 400 && reply.error().starts_with("tail:"),
        "{reply:?}"
    );
    let reply = client.logs(first, "since=yesterday").await?;
    ensure!(
        reply.status == 400 && reply.error().starts_with("since:"),
        "{reply:?}"
    );
    let reply = client.logs(first, "since=2000-01-01T00:00:00Z&tail=1").await?;
    ensure!(reply.status == 200 && reply.body.contains("started"), "{reply:?}");
    let reply = client.logs("nobody.main.r1.0", "").await?;
    ensure!(reply.status == 404, "{reply:?}");

    // A killed instance is started again.
    let victim = pids[first];
    kill_pid(victim)?;
    let restarted = eventually(WAIT, "the killed instance to be restarted", || async {
        let status = client.instance(first).await.ok()??;
        (status.state == InstanceState::Running
            && status.pid.is_some_and(|p| p != victim)
            && status.restarts >= 1)
            .then_some(status)
    })
    .await?;
    let new_pid = restarted.pid.context("pid")?;
    runs_as_instance(new_pid, first).await?;
    ensure!(!alive(victim), "the killed process is gone");

    // The same set again changes nothing.
    let before = running_pids(&client, 3).await?;
    client
        .put_set("alpha", &desired(1, 1, set.clone()))
        .await?
        .ok::<Inventory>()?;
    let after = running_pids(&client, 3).await?;
    ensure!(
        before == after,
        "resending the set restarted something: {before:?} then {after:?}"
    );
    one_process_each(&names.iter().map(String::as_str).collect::<Vec<_>>())?;

    // Restart through the API.
    let reply = client.restart(&names[1], Fence::new(1, 1)).await?;
    ensure!(reply.status == 200, "{reply:?}");
    let status = eventually(WAIT, "the restarted instance to run", || async {
        let status = client.instance(&names[1]).await.ok()??;
        (status.state == InstanceState::Running && status.pid.is_some_and(|p| p != before[&names[1]]))
            .then_some(status)
    })
    .await?;
    ensure!(status.restarts == 1, "{status:?}");
    let reply = client.restart("nobody.main.r1.0", Fence::new(1, 1)).await?;
    ensure!(reply.status == 404, "{reply:?}");

    // A changed spec under the same id replaces the process.
    let mut changed = sleeper(&names[0]);
    changed.env.insert("COLOUR".into(), "blue".into());
    let mut next_set = set.clone();
    next_set[0] = changed;
    let old_pid = running_pids(&client, 3).await?[&names[0]];
    client
        .put_set("alpha", &desired(1, 1, next_set.clone()))
        .await?
        .ok::<Inventory>()?;
    let replaced = eventually(WAIT, "the changed instance to run again", || async {
        let status = client.instance(&names[0]).await.ok()??;
        (status.state == InstanceState::Running && status.pid.is_some_and(|p| p != old_pid)).then_some(status)
    })
    .await?;
    let replaced_pid = replaced.pid.context("pid")?;
    runs_as_instance(replaced_pid, &names[0]).await?;
    ensure!(proc_strings(replaced_pid, "environ").contains(&"COLOUR=blue".to_string()));
    ensure!(!alive(old_pid), "the replaced process is gone");
    let set = next_set;
    let before = running_pids(&client, 3).await?;

    // Dropping an instance stops its process and its process group.
    let gone = names[2].clone();
    let gone_pid = before[&gone];
    let reply = client.put_set("alpha", &desired(1, 1, set[..2].to_vec())).await?;
    let inventory: Inventory = reply.ok()?;
    ensure!(inventory.instances.len() == 2, "{inventory:?}");
    eventually(
        WAIT,
        "the dropped instance's process group to be gone",
        || async {
            let group_left = processes().iter().any(|p| p.pgid == gone_pid && p.state != 'Z');
            (!alive(gone_pid) && !group_left).then_some(())
        },
    )
    .await?;
    ensure!(processes_of_instance(&gone).is_empty());
    ensure!(
        !agent.data_dir().join("instances").join(&gone).try_exists()?,
        "the dropped instance's files are deleted"
    );

    // Faults are for sim agents only; metrics count restarts.
    let reply = client.faults(&SimFaults::default()).await?;
    ensure!(reply.status == 404 && reply.error().contains("sim"), "{reply:?}");
    let metrics = client.get("/metrics").await?;
    ensure!(
        metrics.body.contains("drover_agent_instance_restarts_total 2"),
        "{}",
        metrics.body
    );
    ensure!(
        metrics
            .body
            .contains("drover_agent_instances{state=\"running\"} 2"),
        "{}",
        metrics.body
    );

    // An empty set removes it.
    client
        .put_set("alpha", &desired(1, 1, vec![]))
        .await?
        .ok::<Inventory>()?;
    eventually(WAIT, "every instance to be gone", || async {
        agent.instance_groups().is_empty().then_some(())
    })
    .await?;
    ensure!(client.inventory().await?.instances.is_empty());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fencing_refuses_older_leaders() -> Result<()> {
    let agent = AgentProcess::exec(&[])?;
    let client = agent.client();
    let names = ids("bravo", 2);
    let one = vec![sleeper(&names[0])];
    let two = vec![sleeper(&names[0]), sleeper(&names[1])];
    client
        .put_set("bravo", &desired(5, 1, one.clone()))
        .await?
        .ok::<Inventory>()?;
    let pids = running_pids(&client, 1).await?;
    let before = client.inventory().await?;
    ensure!(before.fence == Fence::new(5, 1), "{before:?}");

    for (term, leader) in [(4, 1), (4, 2), (5, 2)] {
        let reply = client
            .put_set("bravo", &desired(term, leader, two.clone()))
            .await?;
        ensure!(reply.status == 409, "term {term} leader {leader}: {reply:?}");
        ensure!(reply.error().starts_with("fenced: "), "{reply:?}");
        let reply = client.put_set("bravo", &desired(term, leader, vec![])).await?;
        ensure!(
            reply.status == 409,
            "an older leader cannot remove the set: {reply:?}"
        );
        let reply = client.restart(&names[0], Fence::new(term, leader)).await?;
        ensure!(
            reply.status == 409 && reply.error().starts_with("fenced: "),
            "{reply:?}"
        );
    }
    let reply = client.put_set("bravo", &desired(4, 1, two.clone())).await?;
    ensure!(
        reply.error()
            == "fenced: term 4 (leader 1) is older than term 5 (leader 1), which this agent has already accepted",
        "{reply:?}"
    );
    // Usage is sampled as the instances run; everything else must be as it was.
    let without_usage = |mut inventory: Inventory| {
        for instance in &mut inventory.instances {
            instance.usage = None;
        }
        inventory
    };
    ensure!(
        without_usage(client.inventory().await?) == without_usage(before),
        "a refused call changed the inventory"
    );
    ensure!(running_pids(&client, 1).await? == pids);
    ensure!(
        processes_of_instance(&names[1]).is_empty(),
        "a refused set started a process"
    );

    let reply = client.put_set("bravo", &desired(6, 2, two.clone())).await?;
    let inventory: Inventory = reply.ok()?;
    ensure!(inventory.fence == Fence::new(6, 2), "{inventory:?}");
    let now = running_pids(&client, 2).await?;
    ensure!(
        now[&names[0]] == pids[&names[0]],
        "the kept instance was not restarted"
    );
    let reply = client.put_set("bravo", &desired(5, 1, one)).await?;
    ensure!(reply.status == 409, "{reply:?}");

    let metrics = client.get("/metrics").await?.body;
    ensure!(metrics.contains("drover_agent_fenced_total 11"), "{metrics}");
    ensure!(metrics.contains("drover_agent_fence_term 6"), "{metrics}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_agent_adopts_its_instances() -> Result<()> {
    let mut agent = AgentProcess::exec(&[])?;
    let client = agent.client();
    let names = ids("charlie", 3);
    let id_refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let set: Vec<_> = names.iter().map(|id| sleeper(id)).collect();
    client
        .put_set("charlie", &desired(2, 1, set))
        .await?
        .ok::<Inventory>()?;
    let pids = running_pids(&client, 3).await?;
    for (id, pid) in &pids {
        runs_as_instance(*pid, id).await?;
    }

    agent.kill()?;
    for pid in pids.values() {
        ensure!(alive(*pid), "instance {pid} died with the agent");
    }
    agent.restart()?;
    let adopted = running_pids(&client, 3).await?;
    ensure!(
        adopted == pids,
        "not adopted: {pids:?} then {adopted:?}\n{}",
        agent.log()
    );
    one_process_each(&id_refs)?;
    let inventory = client.inventory().await?;
    ensure!(
        inventory.fence == Fence::new(2, 1),
        "the fence survives: {inventory:?}"
    );
    ensure!(
        inventory.instances.iter().all(|i| i.restarts == 0),
        "{inventory:?}"
    );

    // An adopted instance that dies is restarted, still once.
    let victim = pids[&names[0]];
    kill_pid(victim)?;
    let status = eventually(WAIT, "the adopted instance to be restarted", || async {
        let status = client.instance(&names[0]).await.ok()??;
        (status.state == InstanceState::Running && status.pid.is_some_and(|p| p != victim)).then_some(status)
    })
    .await?;
    ensure!(status.restarts == 1, "{status:?}");
    runs_as_instance(status.pid.context("pid")?, &names[0]).await?;
    one_process_each(&id_refs)?;

    // SIGTERM stops the agent and leaves its instances running; the next agent adopts them,
    // the restarted process included.
    let pids = running_pids(&client, 3).await?;
    agent.terminate()?;
    for pid in pids.values() {
        ensure!(alive(*pid), "instance {pid} died with the agent's SIGTERM");
    }
    agent.restart()?;
    ensure!(running_pids(&client, 3).await? == pids, "{}", agent.log());
    one_process_each(&id_refs)?;
    ensure!(agent.log().contains("adopted"), "{}", agent.log());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_join_token_is_required_and_never_shown() -> Result<()> {
    let agent = AgentProcess::exec(&[])?;
    let client = agent.client();
    for path in ["/v1/inventory", "/v1/facts"] {
        let reply = client.with_token(None).get(path).await?;
        ensure!(
            reply.status == 401 && !reply.error().is_empty(),
            "{path}: {reply:?}"
        );
        let reply = client
            .with_token(Some("drover-test-agent-join-token-0123456788"))
            .get(path)
            .await?;
        ensure!(
            reply.status == 401 && !reply.error().is_empty(),
            "{path}: {reply:?}"
        );
    }
    let reply = client
        .with_token(None)
        .put_set("delta", &desired(1, 1, vec![sleeper("delta.main.r1.0")]))
        .await?;
    ensure!(reply.status == 401, "{reply:?}");
    ensure!(client.inventory().await?.instances.is_empty());
    ensure!(client.with_token(None).get("/healthz").await?.status == 200);
    ensure!(client.with_token(None).get("/metrics").await?.status == 200);

    let facts = client.facts().await?;
    ensure!(
        facts.executor == "exec" && facts.nodes == 1 && facts.cpus >= 1,
        "{facts:?}"
    );
    // The machine less the default reserve (100 millicores, 256 MiB).
    ensure!(
        facts.capacity.cpu_millis == u64::from(facts.cpus) * 1000 - 100
            && facts.capacity.memory_mib == facts.memory_mib - 256,
        "{facts:?}"
    );
    ensure!(facts.agent == "test-agent", "{facts:?}");

    // Bad requests name the field.
    let mut bad = sleeper("delta.main.r1.0");
    bad.exec.argv.clear();
    let reply = client.put_set("delta", &desired(1, 1, vec![bad])).await?;
    ensure!(
        reply.status == 400 && reply.error().starts_with("instances[0].exec.argv"),
        "{reply:?}"
    );
    let reply = client.put_set("Delta", &desired(1, 1, vec![])).await?;
    ensure!(
        reply.status == 400 && reply.error().starts_with("set:"),
        "{reply:?}"
    );
    let reply = client
        .call(
            reqwest::Method::PUT,
            "/v1/sets/delta",
            Some(&serde_json::json!({"fence": {"term": 1, "leader": 1}})),
        )
        .await?;
    ensure!(
        reply.status == 400 && reply.error().contains("instances"),
        "{reply:?}"
    );

    let pid = agent.pid().context("agent pid")?;
    ensure!(!proc_strings(pid, "cmdline")
        .iter()
        .any(|a| a.contains(AGENT_TOKEN)));
    let log = agent.log();
    ensure!(log.contains("listening on http://"), "{log}");
    ensure!(!log.contains(AGENT_TOKEN), "the token is in the agent's log");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_refuses_a_token_file_others_may_read() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let token = drover_tests::agent::write_token_file(dir.path(), 0o644)?;
    let output = std::process::Command::new(drover_tests::process::drover_binary()?)
        .args(["agent", "--listen=127.0.0.1:0", "--executor=sim"])
        .arg(format!("--data-dir={}", dir.path().join("data").display()))
        .arg(format!("--join-token-file={}", token.display()))
        .output()?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    ensure!(output.status.code() == Some(2), "{:?}: {stderr}", output.status);
    ensure!(stderr.contains("chmod 600"), "{stderr}");
    ensure!(!stderr.contains(AGENT_TOKEN));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_reports_capacity_obeys_faults_and_refuses_what_does_not_fit() -> Result<()> {
    let agent = AgentProcess::sim(&[
        "--sim-nodes=3",
        "--sim-node-cpu-millis=2000",
        "--sim-node-memory-mib=4096",
        "--label=zone=test",
    ])?;
    let client = agent.client();
    let facts = client.facts().await?;
    ensure!(facts.executor == "sim" && facts.nodes == 3, "{facts:?}");
    ensure!(
        facts.capacity
            == Resources {
                cpu_millis: 6000,
                memory_mib: 12288
            }
            && facts.free == facts.capacity,
        "{facts:?}"
    );
    ensure!(
        facts.labels.get("zone").map(String::as_str) == Some("test"),
        "{facts:?}"
    );

    let big = Resources {
        cpu_millis: 1000,
        memory_mib: 1000,
    };
    let echo = instance("echo.main.r1.0", &["echo"], big);
    let mut probed = instance("echo.main.r1.1", &["echo"], big);
    probed.exec.probe = Some(drover_model::cluster::agent_api::Probe::Tcp { port: 9 });
    let set = vec![echo, probed, instance("echo.main.r1.2", &["echo"], big)];
    client
        .put_set("echo", &desired(1, 1, set))
        .await?
        .ok::<Inventory>()?;
    let inventory = eventually(WAIT, "sim instances to run", || async {
        let inventory = client.inventory().await.ok()?;
        inventory
            .instances
            .iter()
            .all(|i| i.state == InstanceState::Running)
            .then_some(inventory)
    })
    .await?;
    ensure!(inventory.instances.iter().all(|i| i.pid.is_none()));
    ensure!(inventory.instances[1].health == Health::Healthy, "{inventory:?}");
    let facts = client.facts().await?;
    ensure!(
        facts.free
            == Resources {
                cpu_millis: 3000,
                memory_mib: 9288
            },
        "{facts:?}"
    );

    // Four more of 1000 millicpus do not fit in the 3000 left: refused whole.
    let more: Vec<_> = (0..4)
        .map(|i| instance(&format!("more.main.r1.{i}"), &["echo"], big))
        .collect();
    let reply = client.put_set("more", &desired(1, 1, more)).await?;
    ensure!(reply.status == 422, "{reply:?}");
    ensure!(
        reply
            .error()
            .starts_with("instances[3] (more.main.r1.3) does not fit"),
        "{reply:?}"
    );
    ensure!(
        client.inventory().await?.instances.len() == 3,
        "a refused set applied something"
    );
    ensure!(client.facts().await?.free.cpu_millis == 3000);
    // An id that another set holds conflicts.
    let reply = client
        .put_set(
            "other",
            &desired(1, 1, vec![instance("echo.main.r1.0", &["echo"], big)]),
        )
        .await?;
    ensure!(
        reply.status == 409 && reply.error().contains("already belongs to set echo"),
        "{reply:?}"
    );

    // Unreachable: everything answers 503 until switched off.
    let reply = client
        .faults(&SimFaults {
            unreachable: true,
            ..SimFaults::default()
        })
        .await?;
    ensure!(reply.status == 200, "{reply:?}");
    for path in ["/v1/inventory", "/v1/facts", "/healthz"] {
        let reply = client.get(path).await?;
        ensure!(reply.status == 503, "{path}: {reply:?}");
    }
    client.faults(&SimFaults::default()).await?;
    ensure!(client.get("/v1/inventory").await?.status == 200);

    // Pressure is reported; a crash fails an instance once and it is started again.
    let reply = client
        .faults(&SimFaults {
            pressure: Some("memory: simulated".into()),
            crash: vec![drover_model::cluster::agent_api::InstanceId::parse(
                "echo.main.r1.0",
            )?],
            ..SimFaults::default()
        })
        .await?;
    ensure!(reply.status == 200, "{reply:?}");
    ensure!(client.facts().await?.pressure.as_deref() == Some("memory: simulated"));
    let status = eventually(WAIT, "the crashed sim instance to run again", || async {
        let status = client.instance("echo.main.r1.0").await.ok()??;
        (status.restarts == 1 && status.state == InstanceState::Running).then_some(status)
    })
    .await?;
    ensure!(status.exit_code == Some(137), "{status:?}");
    let reply = client
        .faults(&SimFaults {
            crash: vec![drover_model::cluster::agent_api::InstanceId::parse(
                "nobody.main.r1.0",
            )?],
            ..SimFaults::default()
        })
        .await?;
    ensure!(
        reply.status == 404 && reply.error().starts_with("crash:"),
        "{reply:?}"
    );
    Ok(())
}

/// A control plane whose call times out cannot tell whether it was applied, and sends it
/// again; the agent carries a change through even when its caller hangs up halfway, so that
/// what it records is also what it runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_set_whose_caller_hangs_up_is_carried_out() -> Result<()> {
    let agent = AgentProcess::sim(&[])?;
    let client = agent.client();
    let slow = SimFaults {
        slow_apply_ms: 400,
        ..SimFaults::default()
    };
    client.faults(&slow).await?.ok::<serde_json::Value>()?;
    let impatient = reqwest::Client::builder()
        .timeout(Duration::from_millis(100))
        .build()?;
    let set = desired(3, 1, vec![sleeper("web.main.r1.0"), sleeper("web.main.r1.1")]);
    let hung_up = impatient
        .put(format!("http://{}/v1/sets/web", agent.addr()))
        .bearer_auth(AGENT_TOKEN)
        .json(&set)
        .send()
        .await;
    ensure!(
        hung_up.as_ref().is_err_and(|e| e.is_timeout()),
        "the caller gave up first: {hung_up:?}"
    );
    let inventory = eventually(WAIT, "the set to run although its caller hung up", || async {
        let inventory = client.inventory().await.ok()?;
        (inventory.instances.len() == 2
            && inventory
                .instances
                .iter()
                .all(|i| i.state == InstanceState::Running))
        .then_some(inventory)
    })
    .await?;
    ensure!(inventory.fence == Fence::new(3, 1), "{inventory:?}");
    // Sent again, as a control plane does after a timeout: nothing changes.
    client
        .faults(&SimFaults::default())
        .await?
        .ok::<serde_json::Value>()?;
    let again: Inventory = client.put_set("web", &set).await?.ok()?;
    ensure!(again.instances == inventory.instances, "{again:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_run_left_at_a_files_path_never_blocks_the_next_start() -> Result<()> {
    let agent = AgentProcess::exec(&[])?;
    let client = agent.client();
    // The first run finds its file, replaces it with a directory tree (and a link out of its
    // directory inside it) and fails; the next runs must find the file again, and then sleep.
    let id = "tidy.main.r1.0";
    let script = "if [ -e ran-once ]; then \
                    if [ -f conf/app.json ]; then echo second run found $(cat conf/app.json); exec sleep 1000; fi; \
                    echo second run found no file; exit 3; \
                  fi; \
                  touch ran-once; \
                  rm conf/app.json; mkdir -p conf/app.json/deeper; echo x > conf/app.json/deeper/x; \
                  ln -s / conf/app.json/root; \
                  exit 1";
    let mut tidy = instance(
        id,
        &["sh", "-c", script],
        Resources {
            cpu_millis: 10,
            memory_mib: 8,
        },
    );
    tidy.exec.files.insert("conf/app.json".into(), "{\"v\":1}".into());
    // A program that is nowhere: every start fails, and each is counted and told.
    let missing = "lost.main.r1.0";
    let lost = instance(
        missing,
        &["no-such-program-anywhere"],
        Resources {
            cpu_millis: 10,
            memory_mib: 8,
        },
    );
    client
        .put_set("tidy", &desired(1, 1, vec![tidy, lost]))
        .await?
        .ok::<Inventory>()?;
    let status = eventually(WAIT, "the second run to start and keep running", || async {
        let status = client.instance(id).await.ok()??;
        (status.state == InstanceState::Running && status.restarts >= 1).then_some(status)
    })
    .await?;
    ensure!(status.reason.is_none(), "{status:?}");
    // Running from its spawn: its line may come a moment later.
    let log = eventually(WAIT, "the second run's line in the log", || async {
        let log = client.logs(id, "").await.ok()?;
        log.body.contains("second run found").then_some(log.body)
    })
    .await?;
    ensure!(
        log.contains("second run found {\"v\":1}") && !log.contains("cannot start"),
        "{log}"
    );
    let failing = eventually(WAIT, "failed starts to be counted", || async {
        let status = client.instance(missing).await.ok()??;
        (status.restarts >= 2).then_some(status)
    })
    .await?;
    ensure!(
        failing.state == InstanceState::Failed
            && failing.reason == Some(EndReason::StartError)
            && failing.pid.is_none(),
        "{failing:?}"
    );
    let log = client.logs(missing, "").await?;
    ensure!(
        log.body.contains("cannot start \"no-such-program-anywhere\""),
        "{}",
        log.body
    );
    Ok(())
}
