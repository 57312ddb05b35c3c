//! The container fixtures themselves, with containerd's own CLI (`ctr`) as ground truth: an
//! image built from Debian's busybox, pushed to a registry with TLS and basic auth, pulled by a
//! containerd of the test's own and run; dropping the containerd leaves the machine clean. And
//! the registry's credentials are real: wrong ones are refused. Needs root and the packages
//! `make setup` installs (the tests panic naming what is missing).

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use drover_tests::containers::{self, Containerd, CtrTask, ImageSpec, Layout, Registry};

const USER: &str = "puller";
const PASSWORD: &str = "registry-secret";

/// Polls `check` until it returns `Some`, or fails after `timeout` naming `what`.
fn eventually<T>(timeout: Duration, what: &str, mut check: impl FnMut() -> Result<Option<T>>) -> Result<T> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = check()? {
            return Ok(value);
        }
        if Instant::now() >= deadline {
            bail!("timed out after {timeout:?} waiting for {what}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn task(containerd: &Containerd, id: &str) -> Result<Option<CtrTask>> {
    Ok(containerd.tasks()?.into_iter().find(|task| task.id == id))
}

fn task_in(containerd: &Containerd, id: &str, status: &str) -> Result<CtrTask> {
    eventually(Duration::from_secs(10), &format!("task {id} {status}"), || {
        Ok(task(containerd, id)?.filter(|task| task.status == status))
    })
}

#[test]
fn an_image_from_a_secure_registry_runs_under_containerd_and_dropping_it_leaves_nothing() -> Result<()> {
    containers::require();
    let layout = Layout::new()?;
    layout.build("web", &ImageSpec::httpd(8080, "hello from v1"))?;
    let registry = Registry::start_secure(USER, PASSWORD)?;
    let pushed = registry.push(&layout, "web", "web:v1")?;
    let mut containerd = Containerd::start(&[&registry])?;
    let plugins = containerd.ctr(&["plugins", "ls"])?;
    assert!(
        plugins.lines().any(|line| line.contains("io.containerd.grpc.v1")
            && line.contains(" cri ")
            && line.trim_end().ends_with("ok")),
        "the CRI plugin is not serving: {plugins}"
    );
    assert!(
        !containerd.log().contains("no network config found"),
        "{}",
        containerd.log()
    );

    // The CRI's namespace knows no image until one is pulled; a pull without credentials is refused.
    assert!(containerd.images()?.is_empty());
    let refused = containerd.pull(&pushed.reference, None).unwrap_err();
    assert!(format!("{refused:#}").contains("401"), "{refused:#}");
    containerd.pull(&pushed.reference, registry.credentials())?;
    let images = containerd.images()?;
    assert!(
        images
            .iter()
            .any(|image| image.reference == pushed.reference && image.digest == pushed.digest),
        "{pushed:?} not in {images:?}"
    );

    // The image's own command (httpd) runs, in the containerd's cgroup parent.
    containerd.run_detached(&pushed.reference, "web", &[])?;
    let running = task_in(&containerd, "web", "RUNNING")?;
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", running.pid))?;
    assert_eq!(
        cmdline.split(|b| *b == 0).next(),
        Some(&b"httpd"[..]),
        "{cmdline:?}"
    );
    let cgroups = std::fs::read_to_string(format!("/proc/{}/cgroup", running.pid))?;
    assert!(
        cgroups.contains(&format!("{}/web", containerd.cgroup_parent())),
        "{cgroups}"
    );
    let container = containerd.containers()?.into_iter().find(|c| c.id == "web");
    assert_eq!(container.map(|c| c.image), Some(pushed.reference.clone()));
    assert!(containerd
        .snapshots()?
        .iter()
        .any(|s| s.key == "web" && s.kind == "Active"));

    // containerd stopped, then killed, and started again: the container ran on in its shim.
    containerd.restart()?;
    assert_eq!(task_in(&containerd, "web", "RUNNING")?.pid, running.pid);
    containerd.kill();
    containerd.start_again()?;
    assert_eq!(task_in(&containerd, "web", "RUNNING")?.pid, running.pid);

    // Killed and removed: no task, no container, no snapshot of it.
    containerd.ctr(&["tasks", "kill", "-s", "SIGKILL", "web"])?;
    task_in(&containerd, "web", "STOPPED")?;
    containerd.ctr(&["tasks", "rm", "web"])?;
    containerd.ctr(&["containers", "rm", "web"])?;
    assert_eq!(task(&containerd, "web")?, None);
    assert!(containerd.containers()?.is_empty());
    assert!(!containerd.snapshots()?.iter().any(|s| s.key == "web"));

    // One left running when the fixture goes: dropping it must remove it all the same.
    containerd.run_detached(&pushed.reference, "left", &["/bin/sleep", "600"])?;
    let left = task_in(&containerd, "left", "RUNNING")?;
    let footprint = containerd.footprint();
    let socket = containerd.socket().to_string_lossy().into_owned();
    assert!(
        !footprint.leftovers().is_empty(),
        "a running container shows in the footprint"
    );
    drop(containerd);

    assert_eq!(footprint.leftovers(), Vec::<String>::new());
    assert!(
        !Path::new(&format!("/proc/{}", left.pid)).try_exists()?,
        "the container's process is gone"
    );
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")?;
    assert!(
        !mountinfo.contains(&*footprint.dir.to_string_lossy()),
        "{mountinfo}"
    );
    assert!(!footprint.dir.try_exists()?, "its directory is removed");
    for entry in std::fs::read_dir("/proc")?.flatten() {
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            assert!(
                !String::from_utf8_lossy(&cmdline).contains(&socket),
                "process {:?} still names {socket}",
                entry.file_name()
            );
        }
    }
    assert!(!Path::new("/sys/class/net").join(&footprint.bridge).try_exists()?);
    for hierarchy in ["memory", "pids", "cpu"] {
        let dir = Path::new("/sys/fs/cgroup")
            .join(hierarchy)
            .join(footprint.cgroup_parent.trim_start_matches('/'));
        assert!(!dir.try_exists()?, "{} is left", dir.display());
    }
    Ok(())
}

#[test]
fn the_registry_refuses_wrong_credentials_and_keeps_its_storage_across_a_restart() -> Result<()> {
    containers::require();
    let layout = Layout::new()?;
    layout.build("app", &ImageSpec::busybox(&["sleep", "3600"]).env("MODE", "test"))?;
    let mut registry = Registry::start_secure(USER, PASSWORD)?;

    let refused = registry
        .push_as(&layout, "app", "app:v1", Some((USER, "wrong")))
        .unwrap_err();
    assert!(
        format!("{refused:#}").contains("authentication required"),
        "{refused:#}"
    );
    let anonymous = registry.push_as(&layout, "app", "app:v1", None).unwrap_err();
    assert!(
        format!("{anonymous:#}").contains("authentication required"),
        "{anonymous:#}"
    );

    let pushed = registry.push(&layout, "app", "app:v1")?;
    assert_eq!(
        registry.inspect_as("app:v1", registry.credentials())?,
        pushed.digest
    );
    assert!(registry.inspect_as("app:v1", Some((USER, "wrong"))).is_err());
    assert!(registry.inspect_as("app:v1", None).is_err());

    // Down: nothing answers; up again on the same port: the image is still there.
    registry.stop();
    assert!(registry.inspect_as("app:v1", registry.credentials()).is_err());
    registry.start_again()?;
    assert_eq!(
        registry.inspect_as("app:v1", registry.credentials())?,
        pushed.digest
    );

    // A second tag with other content has another digest.
    layout.build("app2", &ImageSpec::busybox(&["sleep", "3600"]).env("MODE", "v2"))?;
    let second = registry.push(&layout, "app2", "app:v2")?;
    assert_ne!(second.digest, pushed.digest);
    assert_eq!(
        registry.inspect_as("app:v1", registry.credentials())?,
        pushed.digest
    );

    // A large image: its random layer does not compress.
    layout.build("big", &ImageSpec::busybox(&["true"]).random_mib(8))?;
    let (small, big) = (layout.size("app")?, layout.size("big")?);
    assert!(
        small < 2 << 20 && big > 8 << 20,
        "small {small} bytes, big {big} bytes"
    );
    registry.push(&layout, "big", "big:v1")?;
    Ok(())
}

/// Runs the fixture's CNI network (its conflist, plugin by plugin, as libcni does for an ADD)
/// for container `id` in the network namespace `netns`, mapping `host_port` to `port`; returns
/// the pod's address.
fn cni_add(containerd: &Containerd, netns: &Path, id: &str, host_port: u16, port: u16) -> Result<String> {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let conflist: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(containerd.cni_config())?)?;
    let mut previous: Option<serde_json::Value> = None;
    for plugin in conflist["plugins"].as_array().into_iter().flatten() {
        let mut config = plugin.clone();
        config["cniVersion"] = conflist["cniVersion"].clone();
        config["name"] = conflist["name"].clone();
        if plugin["capabilities"]["portMappings"] == true {
            config["runtimeConfig"] = serde_json::json!({
                "portMappings": [{ "hostPort": host_port, "containerPort": port, "protocol": "tcp" }]
            });
        }
        if let Some(previous) = &previous {
            config["prevResult"] = previous.clone();
        }
        let kind = plugin["type"].as_str().unwrap_or_default();
        let mut child = Command::new(Path::new("/usr/lib/cni").join(kind))
            .env("CNI_COMMAND", "ADD")
            .env("CNI_CONTAINERID", id)
            .env("CNI_NETNS", netns)
            .env("CNI_IFNAME", "eth0")
            .env("CNI_PATH", "/usr/lib/cni")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        if let Some(mut stdin) = child.stdin.take() {
            stdin.write_all(config.to_string().as_bytes())?;
        }
        let output = child.wait_with_output()?;
        if !output.status.success() {
            bail!("CNI plugin {kind}: {}", String::from_utf8_lossy(&output.stdout));
        }
        previous = Some(serde_json::from_slice(&output.stdout)?);
    }
    let result = previous.unwrap_or_default();
    let address = result["ips"][0]["address"].as_str().unwrap_or_default();
    Ok(address.split('/').next().unwrap_or_default().to_string())
}

/// What an HTTP/1.0 GET of `/` at `address` answers, if anything.
fn http_get(address: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut stream =
        std::net::TcpStream::connect_timeout(&address.parse().ok()?, Duration::from_secs(1)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    stream.write_all(b"GET / HTTP/1.0\r\n\r\n").ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    Some(answer)
}

#[test]
fn the_cni_network_answers_at_the_pod_address_and_a_host_port_and_is_removed_with_the_fixture() -> Result<()>
{
    containers::require();
    let layout = Layout::new()?;
    layout.build("web", &ImageSpec::httpd(8080, "hello through CNI"))?;
    let registry = Registry::start_plain()?;
    let pushed = registry.push(&layout, "web", "web:v1")?;
    let containerd = Containerd::start(&[&registry])?;
    containerd.pull(&pushed.reference, None)?;

    // The sandbox image runs, and ends at once with status 0 on SIGTERM.
    containerd.pull(containerd.sandbox_image(), None)?;
    containerd.run_detached(containerd.sandbox_image(), "pause", &[])?;
    task_in(&containerd, "pause", "RUNNING")?;
    containerd.ctr(&["tasks", "kill", "pause"])?;
    task_in(&containerd, "pause", "STOPPED")?;
    let ended = containerd.ctr(&["tasks", "delete", "pause"])?;
    assert!(!ended.contains("exit"), "{ended}");

    // A network namespace where the CRI plugin mounts them, wired by the fixture's own conflist
    // (what RunPodSandbox does), and the web server run in it.
    std::fs::create_dir_all(containerd.netns_dir())?;
    let netns = containerd.netns_dir().join("cni-t500");
    std::fs::write(&netns, "")?;
    let status = std::process::Command::new("unshare")
        .arg(format!("--net={}", netns.display()))
        .arg("true")
        .status()?;
    assert!(status.success(), "unshare --net={}", netns.display());
    let host_port = drover_tests::agent::free_port()?;
    let pod_ip = cni_add(&containerd, &netns, "t500", host_port, 8080)?;
    let network = format!("network:{}", netns.display());
    containerd.ctr(&[
        "run",
        "-d",
        "--null-io",
        "--with-ns",
        &network,
        "--runc-root",
        &containerd.runc_root().to_string_lossy(),
        "--cgroup",
        &format!("{}/web", containerd.cgroup_parent()),
        &pushed.reference,
        "web",
    ])?;
    task_in(&containerd, "web", "RUNNING")?;

    for address in [format!("{pod_ip}:8080"), format!("127.0.0.1:{host_port}")] {
        let answer = eventually(Duration::from_secs(10), &format!("httpd at {address}"), || {
            Ok(http_get(&address).filter(|answer| answer.starts_with("HTTP/1.") && answer.contains(" 200 ")))
        })?;
        assert!(answer.ends_with("hello through CNI"), "{address}: {answer}");
    }

    // libcni's cache of the loopback network the CRI plugin adds to every pod, as it writes it.
    let cached =
        Path::new("/var/lib/cni/results").join(format!("cni-loopback-t500-{}-lo", std::process::id()));
    std::fs::create_dir_all("/var/lib/cni/results")?;
    let record = serde_json::json!({
        "kind": "cniCacheV1", "containerId": "t500", "ifName": "lo", "networkName": "cni-loopback",
        "result": { "cniVersion": "0.3.1", "interfaces": [{ "name": "lo", "sandbox": netns }] }
    });
    std::fs::write(&cached, record.to_string())?;

    // Dropped with the pod still up, as a crashed test would leave it: nothing remains.
    let footprint = containerd.footprint();
    let leftovers = footprint.leftovers();
    for trace in [
        "bridge",
        "nat rule",
        "IPAM state",
        "cgroup",
        "mount",
        "CNI result",
    ] {
        assert!(
            leftovers.iter().any(|found| found.starts_with(trace)),
            "no {trace} in {leftovers:?}"
        );
    }
    drop(containerd);
    assert_eq!(footprint.leftovers(), Vec::<String>::new());
    assert!(
        http_get(&format!("127.0.0.1:{host_port}")).is_none(),
        "the host port still answers"
    );
    let nat = std::process::Command::new("iptables")
        .args(["-t", "nat", "-S"])
        .output()?;
    let nat = String::from_utf8_lossy(&nat.stdout);
    assert!(
        !nat.contains(&pod_ip) && !nat.contains(&footprint.network),
        "{nat}"
    );
    Ok(())
}

/// Set in the environment of the test process that [`a_fixture_left_by_a_killed_test_is_swept_by_the_next`]
/// starts and kills.
const KILLED_CHILD: &str = "DROVER_T500_KILLED_CHILD";

#[test]
fn a_fixture_left_by_a_killed_test_is_swept_by_the_next() -> Result<()> {
    containers::require();
    if std::env::var_os(KILLED_CHILD).is_some() {
        // The child: a containerd with a container running, then wait to be killed.
        let layout = Layout::new()?;
        layout.build("sleeper", &ImageSpec::busybox(&["sleep", "600"]))?;
        let registry = Registry::start_plain()?;
        let pushed = registry.push(&layout, "sleeper", "sleeper:v1")?;
        let containerd = Containerd::start(&[&registry])?;
        containerd.pull(&pushed.reference, None)?;
        containerd.run_detached(&pushed.reference, "sleeper", &[])?;
        task_in(&containerd, "sleeper", "RUNNING")?;
        println!("FOOTPRINT {}", serde_json::to_string(&containerd.footprint())?);
        std::thread::sleep(Duration::from_secs(60));
        bail!("the parent did not kill this test process");
    }
    let mut child = std::process::Command::new(std::env::current_exe()?)
        .args([
            "a_fixture_left_by_a_killed_test_is_swept_by_the_next",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(KILLED_CHILD, "1")
        .stdout(std::process::Stdio::piped())
        .spawn()?;
    let stdout = child.stdout.take().expect("piped stdout");
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some((_, json)) = line.split_once("FOOTPRINT ") {
                let _ = sender.send(json.to_string());
            }
        }
    });
    let json = receiver.recv_timeout(Duration::from_secs(60));
    child.kill()?;
    child.wait()?;
    let footprint: containers::Footprint = serde_json::from_str(&json?)?;
    assert!(
        !footprint.leftovers().is_empty(),
        "the killed test left its containerd running"
    );

    // The next fixture to start sweeps what the dead test left.
    let registry = Registry::start_plain()?;
    assert_eq!(footprint.leftovers(), Vec::<String>::new());
    assert!(
        !footprint.dir.try_exists()?,
        "{} is left",
        footprint.dir.display()
    );
    drop(registry);
    Ok(())
}
