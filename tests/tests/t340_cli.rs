//! The `drover` CLI's resource commands against three `drover serve` processes and a `sim`
//! agent registered as a platform-wide cluster: `-o json` prints what `curl` gets for the same
//! object (a tenant, a Kubernetes lease, a pool resource), `-o name`, `-o yaml` and tables
//! print the same objects — a running service's and a cluster's table rows hold their phase,
//! cluster, revision and state, `-o yaml` reads back in PyYAML (YAML 1.1) as the same strings —
//! a static token in group `operators` that registered sees every tenant's clusters and
//! services (`-A`, with a TENANT column), every documented exit code comes out of the case it
//! names, and completions generate for bash, zsh and fish.

use std::io::Write;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use drover_tests::agent::{AgentProcess, AGENT_TOKEN};
use drover_tests::boskos::static_pool_yaml;
use drover_tests::client::LeaseClient;
use drover_tests::platform::{process_platform_args, token, PlatformClient, OPERATOR_SUBJECT};
use drover_tests::process::{drover_binary, free_ports, ProcessCluster};
use drover_tests::services::{cluster_state, expect_ok};
use drover_tests::wait::eventually;
use reqwest::Method;
use serde_json::{json, Value};

/// A static API token of the machine `ci`, in group `operators`.
const CI_TOKEN: &str = "drover-t340-static-token-of-ci";

struct Cli {
    servers: String,
}

impl Cli {
    fn run(&self, subject: Option<&str>, args: &[&str]) -> Result<Output> {
        self.run_with(subject.map(token).as_deref(), args)
    }

    /// Runs with `DROVER_TOKEN` set to `token` (none when `None`).
    fn run_with(&self, token: Option<&str>, args: &[&str]) -> Result<Output> {
        let mut command = Command::new(drover_binary()?);
        command
            .args(args)
            .env("DROVER_SERVER", &self.servers)
            .env_remove("DROVER_TOKEN")
            .env_remove("DROVER_TENANT")
            .env_remove("DROVER_NAMESPACE");
        if let Some(token) = token {
            command.env("DROVER_TOKEN", token);
        }
        Ok(command.output()?)
    }

    /// The table `args` print with `token`, split into words per line.
    fn table(&self, token: &str, args: &[&str]) -> Result<Vec<Vec<String>>> {
        let out = self.run_with(Some(token), args)?;
        ensure!(
            out.status.success(),
            "drover {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|line| line.split_whitespace().map(str::to_string).collect())
            .collect())
    }

    fn json(&self, subject: &str, args: &[&str]) -> Result<Value> {
        let out = self.run(Some(subject), args)?;
        ensure!(
            out.status.success(),
            "drover {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).context("JSON on stdout")
    }

    fn code(&self, subject: Option<&str>, args: &[&str]) -> Result<i32> {
        self.run(subject, args)?
            .status
            .code()
            .context("killed by a signal")
    }
}

/// What PyYAML (a YAML 1.1 reader) makes of `yaml`, as JSON; `None` without python3's yaml.
fn pyyaml(yaml: &str) -> Result<Option<Value>> {
    let probe = Command::new("python3").args(["-c", "import yaml"]).output();
    if !probe.is_ok_and(|out| out.status.success()) {
        eprintln!("python3 has no yaml module: the PyYAML check is skipped");
        return Ok(None);
    }
    let mut child = Command::new("python3")
        .args([
            "-c",
            "import json, sys, yaml; json.dump(yaml.safe_load(sys.stdin), sys.stdout)",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    child
        .stdin
        .take()
        .context("no stdin")?
        .write_all(yaml.as_bytes())?;
    let out = child.wait_with_output()?;
    // A timestamp or any other non-JSON value fails json.dump: PyYAML did not read strings.
    ensure!(
        out.status.success(),
        "PyYAML read {yaml}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(Some(serde_json::from_slice(&out.stdout)?))
}

async fn curl(addr: &str, subject: &str, path: &str) -> Result<Value> {
    let answer = reqwest::Client::builder()
        .no_proxy()
        .build()?
        .get(format!("http://{addr}{path}"))
        .bearer_auth(token(subject))
        .send()
        .await?;
    ensure!(answer.status() == 200, "GET {path}: {}", answer.status());
    Ok(answer.json().await?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_output_equals_the_api_and_exit_codes_are_as_documented() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let pools = dir.path().join("pools.yaml");
    std::fs::write(&pools, static_pool_yaml("t", &["r0"]))?;
    let tokens = dir.path().join("tokens.csv");
    {
        use std::os::unix::fs::OpenOptionsExt;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tokens)?;
        writeln!(file, "{CI_TOKEN},ci,operators")?;
    }
    let mut args = process_platform_args(dir.path())?;
    args.extend([
        format!("--pools={}", pools.display()),
        "--pool-sync-interval=200ms".into(),
        format!("--api-tokens-file={}", tokens.display()),
        "--cluster-probe-interval=200ms".into(),
    ]);
    let nodes = ProcessCluster::start_with_args(3, &args)?;
    let agent = AgentProcess::sim(&[])?;
    let leader = nodes.leader(Duration::from_secs(20)).await?;
    let addr = nodes.api_addr(leader);
    let cli = Cli {
        servers: (1..=3)
            .map(|id| format!("http://{}", nodes.api_addr(id)))
            .collect::<Vec<_>>()
            .join(","),
    };
    let root = PlatformClient::new(&addr, Some(token(OPERATOR_SUBJECT)));
    root.register(OPERATOR_SUBJECT).await?;
    let alice_token = token("alice");
    let alice = PlatformClient::new(&addr, Some(alice_token.clone()));
    alice.register("alice").await?;
    let registration = json!({"endpoint": format!("http://{}", agent.addr()), "join_token": AGENT_TOKEN});
    expect_ok(
        &root,
        Method::POST,
        "/tenant/operator/cluster/sim",
        Some(&registration),
    )
    .await?;

    // Create, then the same again: a conflict (4).
    ensure!(cli.code(Some("alice"), &["create", "tenant", "acme"])? == 0);
    ensure!(
        cli.code(Some("alice"), &["create", "tenant", "acme"])? == 4,
        "conflict is 4"
    );

    // -o json is what curl gets.
    let shown = cli.json("alice", &["get", "tenants", "acme", "-o", "json"])?;
    ensure!(
        shown == curl(&addr, "alice", "/api/1.0-beta/tenant/acme").await?,
        "{shown}"
    );
    let header = format!("Bearer {}", token("alice"));
    let created = LeaseClient::authorized(&addr, Some(&header))
        .create("acme", "l1", "alice")
        .await?;
    ensure!(created.status == 201, "{created:?}");
    let lease = cli.json("alice", &["get", "leases", "l1", "-n", "acme", "-o", "json"])?;
    let path = "/apis/coordination.k8s.io/v1/namespaces/acme/leases/l1";
    ensure!(lease == curl(&addr, "alice", path).await?, "{lease}");
    let list = cli.json("alice", &["get", "leases", "-n", "acme", "-o", "json"])?;
    ensure!(list["items"][0]["metadata"]["name"] == "l1", "{list}");
    // The pool file is committed a sync interval after the start.
    eventually(Duration::from_secs(20), "the pool's resource r0", || async {
        let all = curl(&addr, "alice", "/pools/resources").await.ok()?;
        (all[0]["name"] == "r0").then_some(())
    })
    .await?;
    let resource = cli.json("alice", &["get", "resources", "r0", "-o", "json"])?;
    let all = curl(&addr, "alice", "/pools/resources").await?;
    ensure!(
        Some(&resource) == all.as_array().and_then(|r| r.first()),
        "{resource} in {all}"
    );

    // Every dialect's kinds: a pool type (the configuration's entry), Akka leases, accounts.
    let pool = cli.json("alice", &["get", "pools", "t", "-o", "json"])?;
    let config = curl(&addr, "alice", "/pools/config").await?;
    ensure!(
        pool == config["resources"][0] && pool["type"] == "t",
        "{pool} in {config}"
    );
    let akka = cli.json("alice", &["get", "akkaleases", "-n", "acme", "-o", "json"])?;
    ensure!(
        akka == curl(&addr, "alice", "/apis/akka.io/v1/namespaces/acme/leases").await?,
        "{akka}"
    );
    let accounts = cli.json("alice", &["get", "accounts", "--tenant", "acme", "-o", "json"])?;
    ensure!(
        accounts == curl(&addr, "alice", "/api/1.0-beta/tenant/acme/account").await?,
        "{accounts}"
    );
    ensure!(
        cli.code(Some("alice"), &["get", "environments", "--tenant", "acme"])? == 2,
        "environments need --account"
    );

    // A service running on the sim cluster: its table row is its phase, cluster, revision and
    // ready instances, read from the service itself (the list answers names only).
    expect_ok(
        &alice,
        Method::POST,
        "/tenant/acme/account/main",
        Some(&json!({"spec": {"iaas": "sim"}})),
    )
    .await?;
    expect_ok(
        &alice,
        Method::POST,
        "/tenant/acme/account/main/environment/prod",
        Some(&json!({"marks": {"vcpu": {"max": 4000}}})),
    )
    .await?;
    cluster_state(&root, "sim", "ONLINE", Duration::from_secs(30)).await?;
    let web = json!({"deployment": {"roles": {"web": {"instances": 2, "exec": {"argv": ["web"]},
        "resources": {"cpu_millis": 100, "memory_mib": 16}}}}, "comment": "first"});
    expect_ok(
        &alice,
        Method::POST,
        "/tenant/acme/service/web?accept=true",
        Some(&web),
    )
    .await?;
    eventually(Duration::from_secs(30), "service web to run", || async {
        let answer = alice.get("/tenant/acme/service/web").await.ok()?;
        let data = &answer.body["data"];
        (data["status"]["converged"] == true && data["reconcile"]["phase"] == "RUNNING").then_some(())
    })
    .await?;
    let services = cli.table(
        &alice_token,
        &["get", "services", "--tenant", "acme", "-o", "table"],
    )?;
    ensure!(
        services
            == [
                vec!["NAME", "PHASE", "CLUSTER", "REVISION", "READY"],
                vec!["web", "RUNNING", "sim", "1", "2/2"]
            ],
        "{services:?}"
    );
    let one = cli.table(
        &alice_token,
        &["get", "service", "web", "--tenant", "acme", "-o", "wide"],
    )?;
    ensure!(
        one.len() == 2 && one[1][..6] == ["web", "RUNNING", "sim", "1", "2/2", "main/prod"],
        "{one:?}"
    );
    let revisions = cli.table(
        &alice_token,
        &[
            "get",
            "revisions",
            "--tenant",
            "acme",
            "--service",
            "web",
            "-o",
            "table",
        ],
    )?;
    ensure!(
        revisions[1][..4] == ["1", "PUT", "true", "-"] && revisions[1][4] == "first",
        "{revisions:?}"
    );
    let environments = cli.table(
        &alice_token,
        &[
            "get",
            "environments",
            "--tenant",
            "acme",
            "--account",
            "main",
            "-o",
            "table",
        ],
    )?;
    ensure!(
        environments[1][..2] == ["prod", "false"] && environments[1][2].contains("vcpu=200/4000m"),
        "{environments:?}"
    );

    // The static token of group operators: refused on the platform until it registers (told
    // how), then an operator, whose -A sees every tenant's clusters and services.
    let unregistered = cli.run_with(Some(CI_TOKEN), &["get", "clusters", "--tenant", "operator"])?;
    ensure!(
        unregistered.status.code() == Some(7)
            && String::from_utf8_lossy(&unregistered.stderr).contains("group operators"),
        "{unregistered:?}"
    );
    PlatformClient::new(&addr, Some(CI_TOKEN.to_string()))
        .register("ci")
        .await?;
    let clusters = cli.table(
        CI_TOKEN,
        &["get", "clusters", "--tenant", "operator", "-o", "table"],
    )?;
    ensure!(
        clusters.len() == 2
            && clusters[1][..3] == ["sim", "ONLINE", format!("http://{}", agent.addr()).as_str()],
        "{clusters:?}"
    );
    let clusters = cli.table(CI_TOKEN, &["get", "clusters", "-A", "-o", "table"])?;
    ensure!(
        clusters[0][..3] == ["TENANT", "NAME", "STATE"] && clusters[1][..3] == ["operator", "sim", "ONLINE"],
        "{clusters:?}"
    );
    let everywhere = cli.table(CI_TOKEN, &["get", "services", "-A", "-o", "table"])?;
    ensure!(
        everywhere
            == [
                vec!["TENANT", "NAME", "PHASE", "CLUSTER", "REVISION", "READY"],
                vec!["acme", "web", "RUNNING", "sim", "1", "2/2"]
            ],
        "{everywhere:?}"
    );
    let tenants = cli.table(CI_TOKEN, &["get", "tenants", "-A", "-o", "table"])?;
    ensure!(
        tenants.iter().any(|t| t[..] == ["acme", "none"])
            && tenants.iter().any(|t| t[..] == ["operator", "owner"]),
        "{tenants:?}"
    );
    let mine = cli.table(CI_TOKEN, &["get", "tenants", "-o", "table"])?;
    ensure!(
        mine == [vec!["NAME", "ROLE"], vec!["operator", "owner"]],
        "{mine:?}"
    );
    for kind in ["leases", "pools", "resources", "members", "akkaleases"] {
        let out = cli.run_with(Some(CI_TOKEN), &["get", kind, "-A", "-o", "table"])?;
        ensure!(out.status.success(), "get {kind} -A: {out:?}");
    }
    let services_json = cli.run_with(Some(CI_TOKEN), &["get", "services", "-A", "-o", "json"])?;
    let services_json: Value = serde_json::from_slice(&services_json.stdout)?;
    ensure!(services_json["data"]["acme"] == json!(["web"]), "{services_json}");
    ensure!(
        cli.code(Some("alice"), &["get", "services", "-A"])? == 7,
        "-A needs an operator"
    );
    ensure!(
        cli.code(Some("alice"), &["get", "services", "web", "-A"])? == 2,
        "one object across tenants is a usage error"
    );

    // The other formats show the same objects.
    let names = cli.run(Some("alice"), &["get", "leases", "-n", "acme", "-o", "name"])?;
    ensure!(
        String::from_utf8_lossy(&names.stdout).trim() == "lease/l1",
        "{names:?}"
    );
    let yaml = cli.run(
        Some("alice"),
        &["get", "leases", "l1", "-n", "acme", "-o", "yaml"],
    )?;
    let yaml = String::from_utf8_lossy(&yaml.stdout).to_string();
    ensure!(
        yaml.contains("holderIdentity: alice") && yaml.contains("name: l1"),
        "{yaml}"
    );
    // Times are quoted as kubectl quotes them, and YAML 1.1 readers read back the strings JSON
    // has — times, yes/no/on/off, numbers as strings — not timestamps, booleans or numbers.
    ensure!(yaml.contains("creationTimestamp: \"20"), "{yaml}");
    let ambiguous = json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "tricky", "annotations": {
            "drover.test/yes": "yes", "drover.test/on": "on", "drover.test/version": "1.0",
            "drover.test/octal": "0777", "drover.test/time": "2024-01-01T00:00:00Z",
            "drover.test/sexagesimal": "1:20", "drover.test/null": "null", "drover.test/empty": "",
            "drover.test/text": "two\nlines\n"}},
        "spec": {"holderIdentity": "no", "leaseDurationSeconds": 15},
    });
    let created = reqwest::Client::builder()
        .no_proxy()
        .build()?
        .post(format!(
            "http://{addr}/apis/coordination.k8s.io/v1/namespaces/acme/leases"
        ))
        .bearer_auth(token("alice"))
        .json(&ambiguous)
        .send()
        .await?;
    ensure!(created.status() == 201, "{created:?}");
    for name in ["l1", "tricky"] {
        let args = ["get", "leases", name, "-n", "acme", "-o"];
        let yaml = cli.run(Some("alice"), &[&args[..], &["yaml"]].concat())?;
        let json = cli.json("alice", &[&args[..], &["json"]].concat())?;
        if let Some(read) = pyyaml(&String::from_utf8_lossy(&yaml.stdout))? {
            ensure!(read == json, "PyYAML read {read} for {json}");
        }
    }
    let table = cli.run(Some("alice"), &["get", "leases", "-n", "acme", "-o", "wide"])?;
    let table = String::from_utf8_lossy(&table.stdout).to_string();
    ensure!(table.starts_with("NAME") && table.contains("alice"), "{table}");

    // Exit codes, one case each.
    ensure!(
        cli.code(Some("alice"), &["get", "tenants", "nowhere"])? == 3,
        "not found is 3"
    );
    ensure!(
        cli.code(None, &["get", "tenants", "acme"])? == 7,
        "no credential is 7"
    );
    ensure!(
        cli.code(Some("alice"), &["get", "clusters"])? == 2,
        "a missing --tenant is a usage error"
    );
    ensure!(
        cli.code(Some("alice"), &["get", "bogus"])? == 2,
        "an unknown kind is a usage error"
    );
    // A server that takes the connection and never answers (the kernel accepts it into the
    // listener's backlog): a timeout for sure, where a microsecond's timeout against a real node
    // sometimes finished first.
    let silent = std::net::TcpListener::bind("127.0.0.1:0")?;
    let mute = Cli {
        servers: format!("http://{}", silent.local_addr()?),
    };
    let slow = mute.code(Some("alice"), &["get", "tenants", "acme", "--timeout", "0.5"])?;
    ensure!(slow == 5, "a timeout is 5, got {slow}");
    drop(silent);
    let (closed, _) = free_ports(&["127.0.0.1".parse()?])?[0];
    let nowhere = Cli {
        servers: format!("http://127.0.0.1:{closed}"),
    };
    ensure!(
        nowhere.code(Some("alice"), &["get", "tenants"])? == 6,
        "no server is 6"
    );
    // watch: the existing lease arrives as ADDED, printed or handed to a command; the stream
    // ends with --timeout (the server's timeoutSeconds) and the watch exits 0.
    let watched = cli.run(
        Some("alice"),
        &["watch", "leases", "-n", "acme", "--timeout", "1"],
    )?;
    let printed = String::from_utf8_lossy(&watched.stdout).to_string();
    ensure!(watched.status.success(), "{watched:?}");
    let first: Value = serde_json::from_str(printed.lines().next().unwrap_or_default())?;
    ensure!(
        first["type"] == "ADDED" && first["object"]["metadata"]["name"] == "l1",
        "{printed}"
    );
    let seen = dir.path().join("events");
    let script = format!("cat >> {0}; echo \" $DROVER_EVENT_TYPE\" >> {0}", seen.display());
    let handed = cli.run(
        Some("alice"),
        &[
            "watch",
            "leases",
            "-n",
            "acme",
            "--timeout",
            "1",
            "--",
            "sh",
            "-c",
            &script,
        ],
    )?;
    ensure!(handed.status.success(), "{handed:?}");
    let events = std::fs::read_to_string(&seen)?;
    ensure!(events.contains("\"l1\"") && events.contains(" ADDED"), "{events}");
    ensure!(
        cli.code(Some("alice"), &["watch", "tenants"])? == 2,
        "tenants are not watched"
    );

    // wait: a condition that holds (0), one that never does (5), then a deletion (0).
    let holder = [
        "wait",
        "lease/l1",
        "-n",
        "acme",
        "--for",
        "spec.holderIdentity=alice",
    ];
    ensure!(cli.code(Some("alice"), &holder)? == 0, "the holder is alice");
    let never = [
        "wait",
        "lease/l1",
        "-n",
        "acme",
        "--for",
        "spec.holderIdentity=bob",
        "--timeout",
        "1",
    ];
    ensure!(
        cli.code(Some("alice"), &never)? == 5,
        "waiting in vain times out with 5"
    );
    ensure!(cli.code(Some("alice"), &["delete", "leases", "l1", "-n", "acme"])? == 0);
    ensure!(
        cli.code(
            Some("alice"),
            &["wait", "lease/l1", "-n", "acme", "--for", "delete"]
        )? == 0
    );
    ensure!(cli.code(Some("alice"), &["delete", "leases", "l1", "-n", "acme"])? == 3);

    // Contexts: the servers and token file come from $XDG_CONFIG_HOME/drover/config.toml.
    let home = tempfile::tempdir()?;
    let token_file = home.path().join("token");
    std::fs::write(&token_file, token("alice"))?;
    let in_context = |args: &[&str]| -> Result<Output> {
        Ok(Command::new(drover_binary()?)
            .args(args)
            .env("XDG_CONFIG_HOME", home.path())
            .env_remove("DROVER_SERVER")
            .env_remove("DROVER_TOKEN")
            .env_remove("DROVER_CONTEXT")
            .output()?)
    };
    let set = in_context(&[
        "config",
        "set-context",
        "local",
        "--server",
        &cli.servers,
        "--token-file",
        &token_file.to_string_lossy(),
    ])?;
    ensure!(set.status.success(), "{set:?}");
    let viewed = in_context(&["config", "view"])?;
    let viewed = String::from_utf8_lossy(&viewed.stdout).to_string();
    ensure!(
        viewed.contains("current-context = \"local\"") && viewed.contains("[contexts.local]"),
        "{viewed}"
    );
    ensure!(
        !viewed.contains(&token("alice")),
        "the token itself is never stored"
    );
    let through = in_context(&["get", "tenants", "acme", "-o", "json"])?;
    ensure!(through.status.success(), "through the context: {through:?}");
    let missing = in_context(&["get", "tenants", "--context", "nowhere"])?;
    ensure!(
        !missing.status.success() && String::from_utf8_lossy(&missing.stderr).contains("no context"),
        "{missing:?}"
    );

    // Completions.
    for shell in ["bash", "zsh", "fish"] {
        let out = cli.run(None, &["completion", shell])?;
        let script = String::from_utf8_lossy(&out.stdout).to_string();
        ensure!(
            out.status.success() && script.contains("drover") && script.len() > 1000,
            "{shell}"
        );
    }
    Ok(())
}
