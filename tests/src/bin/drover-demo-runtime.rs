//! The container runtime of `make demo` (scripts/demo.sh): a plain registry on a free port of
//! 127.0.0.1 holding `hello-web:v1` (busybox `httpd` on port 8080 serving a page that says it is
//! the demo's container), and a containerd of its own that knows that registry, both made by
//! the test fixtures of [`drover_tests::containers`]. When they are ready it writes
//! `runtime.env` (shell `KEY=value` lines: the CRI endpoint, the cgroup parent, the image, the
//! containerd socket and its CNI bridge) into the directory given with `--dir`, then runs until
//! SIGTERM or SIGINT, when it removes everything it made (containerd, shims, containers,
//! mounts, network namespaces, bridge, cgroups, registries) and exits 0 only if nothing is left.
//!
//! On a machine that cannot run containers (not root, a package missing) it says what is
//! missing on stderr and exits 3 without starting anything: the demo goes on without it.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use drover_tests::containers::{self, Containerd, ImageSpec, Layout, Registry};
use tokio::signal::unix::{signal, SignalKind};

/// The port the demo's web server listens on inside its container.
const WEB_PORT: u16 = 8080;
/// The image's name and tag in the registry.
const IMAGE: &str = "hello-web:v1";
/// The page it serves.
const PAGE: &str = "Hello from the Drover demo's container: busybox httpd, pulled from the demo's \
                    registry and run by containerd's CRI through a drover agent.\n";
/// The exit code for a machine that cannot run containers.
const CANNOT_RUN: u8 = 3;

/// What runs while the demo does; dropping it removes everything.
struct Runtime {
    containerd: Containerd,
    registry: Registry,
    image: String,
}

fn main() -> ExitCode {
    let dir = match directory_flag(std::env::args().skip(1)) {
        Ok(dir) => dir,
        Err(error) => {
            eprintln!("drover-demo-runtime: {error:#}");
            return ExitCode::from(2);
        }
    };
    let missing = containers::missing_prerequisites();
    if !missing.is_empty() {
        eprintln!(
            "drover-demo-runtime: this machine cannot run containers, missing: {}",
            missing.join(", ")
        );
        return ExitCode::from(CANNOT_RUN);
    }
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("drover-demo-runtime: starting tokio: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(&dir)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("drover-demo-runtime: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// The directory of `--dir DIR` (or `--dir=DIR`), the only argument.
fn directory_flag(mut args: impl Iterator<Item = String>) -> Result<PathBuf> {
    let dir = match (args.next(), args.next()) {
        (Some(flag), Some(dir)) if flag == "--dir" => dir,
        (Some(flag), None) if flag.starts_with("--dir=") => flag["--dir=".len()..].to_string(),
        _ => bail!("usage: drover-demo-runtime --dir DIR (where runtime.env is written)"),
    };
    if args.next().is_some() || dir.is_empty() {
        bail!("usage: drover-demo-runtime --dir DIR (where runtime.env is written)");
    }
    Ok(PathBuf::from(dir))
}

/// Starts the runtime, writes `runtime.env`, waits for SIGTERM or SIGINT, removes everything.
async fn run(dir: &Path) -> Result<()> {
    // Registered before anything starts: a signal during the start is kept and ends the wait
    // below at once, after the start, so what was started is still removed.
    let mut term = signal(SignalKind::terminate()).context("handling SIGTERM")?;
    let mut interrupt = signal(SignalKind::interrupt()).context("handling SIGINT")?;
    let started = tokio::task::spawn_blocking(start).await??;
    write_env(dir, &started)?;
    eprintln!(
        "drover-demo-runtime: {} ready at {}; stop with SIGTERM",
        started.image,
        started.containerd.endpoint()
    );
    tokio::select! {
        _ = term.recv() => {}
        _ = interrupt.recv() => {}
    }
    eprintln!("drover-demo-runtime: stopping; removing containerd, its containers and the registry");
    tokio::task::spawn_blocking(move || stop(started)).await?
}

/// The registry with the image pushed, and a containerd that knows it.
fn start() -> Result<Runtime> {
    let registry = Registry::start_plain().context("starting the registry")?;
    let layout = Layout::new().context("making an image layout")?;
    layout
        .build("v1", &ImageSpec::httpd(WEB_PORT, PAGE))
        .context("building the web server's image")?;
    let image = registry
        .push(&layout, "v1", IMAGE)
        .context("pushing the image")?
        .reference;
    let containerd = Containerd::start(&[&registry]).context("starting containerd")?;
    Ok(Runtime {
        containerd,
        registry,
        image,
    })
}

/// Writes `DIR/runtime.env` whole (a temporary file renamed), so a reader never sees half.
fn write_env(dir: &Path, runtime: &Runtime) -> Result<()> {
    let footprint = runtime.containerd.footprint();
    let text = format!(
        "CRI_ENDPOINT={}\nCGROUP_PARENT={}\nIMAGE={}\nREGISTRY={}\nSOCKET={}\nBRIDGE={}\n",
        runtime.containerd.endpoint(),
        runtime.containerd.cgroup_parent(),
        runtime.image,
        runtime.registry.host(),
        runtime.containerd.socket().display(),
        footprint.bridge,
    );
    std::fs::create_dir_all(dir).with_context(|| format!("making {}", dir.display()))?;
    let partial = dir.join("runtime.env.partial");
    std::fs::write(&partial, text).with_context(|| format!("writing {}", partial.display()))?;
    std::fs::rename(&partial, dir.join("runtime.env"))
        .with_context(|| format!("writing {}/runtime.env", dir.display()))?;
    Ok(())
}

/// Removes containerd and all it made, then the registry; fails naming whatever is left.
fn stop(runtime: Runtime) -> Result<()> {
    let Runtime {
        containerd, registry, ..
    } = runtime;
    let footprint = containerd.footprint();
    let shutdown = containerd.shutdown();
    drop(registry);
    shutdown?;
    let left = footprint.leftovers();
    if !left.is_empty() {
        bail!("still on the machine after stopping: {}", left.join("; "));
    }
    eprintln!("drover-demo-runtime: stopped; nothing of it is left");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_directory_flag_is_read_in_both_spellings_and_nothing_else() {
        let read = |args: &[&str]| {
            directory_flag(args.iter().map(|a| a.to_string()))
                .ok()
                .map(|p| p.display().to_string())
        };
        let table: &[(&[&str], Option<&str>)] = &[
            (&["--dir", "state/runtime"], Some("state/runtime")),
            (&["--dir=state/runtime"], Some("state/runtime")),
            (&[], None),
            (&["--dir"], None),
            (&["--dir="], None),
            (&["--dir", ""], None),
            (&["--dir", "a", "b"], None),
            (&["--out", "a"], None),
        ];
        for (args, expected) in table {
            assert_eq!(read(args).as_deref(), *expected, "{args:?}");
        }
    }
}
