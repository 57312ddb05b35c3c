//! One task per `exec` instance: it runs the process, probes it, rotates its log, restarts it
//! after a failure with exponential backoff, and obeys stop and restart commands. When the
//! agent shuts down the task ends and leaves the process running.

use std::sync::Arc;
use std::time::{Duration, Instant};

use drover_model::cluster::agent_api::{EndReason, Health, InstanceSpec, InstanceState};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::confine::{Confiner, Limits};
use super::probe;
use super::process::{self, Proc};
pub use crate::executor::Cmd;
use crate::layout::Layout;
use crate::logs;
use crate::memory::Run;
use crate::shared::Shared;

/// Longest restart delay.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// A run this long resets the restart delay.
const STABLE_RUN: Duration = Duration::from_secs(10);
/// How often probes and log rotation run.
const TICK: Duration = Duration::from_secs(1);
/// A probe that has never answered marks the instance unhealthy after this long.
const PROBE_GRACE: Duration = Duration::from_secs(10);

/// What every supervisor needs.
#[derive(Debug)]
pub struct Ctx {
    /// Shared state.
    pub shared: Arc<Shared>,
    /// Paths.
    pub layout: Layout,
    /// SIGTERM to SIGKILL.
    pub stop_grace: Duration,
    /// First restart delay.
    pub restart_backoff: Duration,
    /// Log rotation size.
    pub log_max_bytes: u64,
    /// Cancelled when the agent shuts down.
    pub shutdown: CancellationToken,
    /// How instances are confined.
    pub confiner: Confiner,
    /// Most processes (and threads) of one instance.
    pub pids_max: u64,
}

/// How a supervisor begins.
#[derive(Debug)]
pub enum Begin {
    /// Watch a process an earlier agent started.
    Adopt(Proc),
    /// Start a process; `again` counts it as a restart.
    Spawn {
        /// Whether this counts as a restart.
        again: bool,
    },
    /// The instance exited with 0 earlier: wait for commands.
    Idle,
}

enum Phase {
    Running(Box<Proc>, Instant),
    Backoff,
    Idle,
}

/// Supervises one instance until it is stopped or the agent shuts down.
pub struct Supervisor {
    ctx: Arc<Ctx>,
    spec: InstanceSpec,
    epoch: u64,
    commands: mpsc::UnboundedReceiver<Cmd>,
    backoff: Duration,
}

impl Supervisor {
    /// A supervisor of `spec` (entry `epoch`) obeying `commands`.
    pub fn new(
        ctx: Arc<Ctx>,
        spec: InstanceSpec,
        epoch: u64,
        commands: mpsc::UnboundedReceiver<Cmd>,
    ) -> Self {
        let backoff = ctx.restart_backoff;
        Self {
            ctx,
            spec,
            epoch,
            commands,
            backoff,
        }
    }

    fn update(&self, change: impl FnOnce(&mut Run)) -> bool {
        self.ctx.shared.update(&self.spec.id, self.epoch, change)
    }

    async fn persist(&self) {
        if let Err(e) = self.ctx.shared.persist(&self.spec.id).await {
            tracing::error!(instance = %self.spec.id, "cannot record the instance's run: {e}");
        }
    }

    /// Runs until stopped.
    pub async fn run(mut self, begin: Begin) {
        let mut phase = match begin {
            Begin::Adopt(proc) => Phase::Running(Box::new(proc), Instant::now()),
            Begin::Spawn { again } => self.launch(again).await,
            Begin::Idle => Phase::Idle,
        };
        loop {
            let next = match phase {
                Phase::Running(proc, since) => self.running(proc, since).await,
                Phase::Backoff => self.backing_off().await,
                Phase::Idle => self.idle().await,
            };
            match next {
                Some(next) => phase = next,
                None => return,
            }
        }
    }

    /// Its cgroup, ready for a new run: created with the spec's limits, emptied of anything an
    /// earlier run left; the `cgroup.procs` files to enter it (none when unconfined).
    fn cgroup(&self) -> std::io::Result<Option<Vec<std::path::PathBuf>>> {
        let Some(cgroups) = self.ctx.confiner.cgroups() else {
            return Ok(None);
        };
        cgroups.kill_all(&self.spec.id);
        let limits = Limits::of(self.spec.resources, self.ctx.pids_max);
        cgroups.prepare(&self.spec.id, &limits).map(Some)
    }

    /// Reads the cgroup's OOM-kill counter into the run record; whether it grew since the
    /// record last counted (a run, or a process of it, was killed at the memory limit).
    fn count_oom_kills(&self) -> bool {
        let Some(counted) = self
            .ctx
            .confiner
            .cgroups()
            .and_then(|c| c.oom_kills(&self.spec.id))
        else {
            return false;
        };
        let counted = u32::try_from(counted).unwrap_or(u32::MAX);
        let mut grew = false;
        self.update(|run| {
            grew = counted > run.oom_kills;
            run.oom_kills = counted;
        });
        grew
    }

    /// Starts a process.
    async fn launch(&mut self, again: bool) -> Phase {
        // A run killed at its limit while no agent watched it is told now.
        if self.count_oom_kills() {
            self.update(|run| run.reason = Some(EndReason::OomKilled));
        }
        let spawned = self
            .cgroup()
            .map_err(|e| std::io::Error::new(e.kind(), format!("cannot confine it: {e}")))
            .and_then(|cgroup| process::spawn(&self.ctx.layout, &self.spec, cgroup.as_deref()));
        match spawned {
            Ok((proc, start_ticks)) => {
                let pid = proc.pid();
                let probed = self.spec.exec.probe.is_some();
                let counted = self.update(|run| {
                    if again {
                        run.restarts = run.restarts.saturating_add(1);
                    }
                    run.state = if probed {
                        InstanceState::Starting
                    } else {
                        InstanceState::Running
                    };
                    run.health = Health::Unknown;
                    run.pid = Some(pid);
                    run.start_ticks = Some(start_ticks);
                    run.started_at = Some(now_rfc3339());
                });
                if again && counted {
                    self.ctx.shared.metrics.restarts.inc();
                }
                tracing::info!(instance = %self.spec.id, pid, "instance started");
                self.persist().await;
                Phase::Running(Box::new(proc), Instant::now())
            }
            Err(e) => {
                // A start that fails is a run that failed: counted, told in the inventory
                // (`StartError`) and in the log, and tried again after the backoff.
                let program = self.spec.exec.argv.first().cloned().unwrap_or_default();
                tracing::warn!(instance = %self.spec.id, "cannot start {program:?}: {e}; trying again in {:?}", self.backoff);
                append_note(
                    &self.ctx.layout,
                    &self.spec,
                    &format!("cannot start {program:?}: {e}"),
                );
                let counted = self.update(|run| {
                    if again {
                        run.restarts = run.restarts.saturating_add(1);
                    }
                    run.state = InstanceState::Failed;
                    run.reason = Some(EndReason::StartError);
                    run.exit_code = None;
                    run.pid = None;
                    run.start_ticks = None;
                    run.health = Health::Unknown;
                });
                if again && counted {
                    self.ctx.shared.metrics.restarts.inc();
                }
                self.persist().await;
                Phase::Backoff
            }
        }
    }

    async fn running(&mut self, mut proc: Box<Proc>, since: Instant) -> Option<Phase> {
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                code = proc.wait() => return Some(self.ended(proc.pid(), code, since).await),
                command = self.commands.recv() => match command {
                    None => return None,
                    Some(Cmd::Stop { forget, done }) => {
                        proc.terminate(self.ctx.stop_grace).await;
                        tracing::info!(instance = %self.spec.id, "instance stopped");
                        if forget {
                            self.forget().await;
                        }
                        let _ = done.send(());
                        return None;
                    }
                    Some(Cmd::Restart { done }) => {
                        proc.terminate(self.ctx.stop_grace).await;
                        let next = self.launch(true).await;
                        let _ = done.send(());
                        return Some(next);
                    }
                },
                () = self.ctx.shutdown.cancelled() => return None,
                _ = tick.tick() => self.check(since).await,
            }
        }
    }

    /// The process ended on its own.
    async fn ended(&mut self, pid: u32, code: Option<i32>, since: Instant) -> Phase {
        // Whatever it left behind in its group (or its cgroup) goes too, so a restart never
        // runs beside it.
        process::signal_group(pid, rustix::process::Signal::KILL);
        if let Some(cgroups) = self.ctx.confiner.cgroups() {
            cgroups.kill_all(&self.spec.id);
        }
        if since.elapsed() >= STABLE_RUN {
            self.backoff = self.ctx.restart_backoff;
        }
        let exited = code == Some(0);
        // Killed by SIGKILL (or ended unseen, when adopted) while the kernel counted a kill at
        // the memory limit.
        let killed = matches!(code, None | Some(137));
        let oom = self.count_oom_kills() && killed;
        let limit = self.spec.resources.memory_mib;
        if oom {
            // In the log before the inventory says so.
            append_note(
                &self.ctx.layout,
                &self.spec,
                &format!("killed at its memory limit of {limit} MiB (OOMKilled)"),
            );
        }
        self.update(|run| {
            run.state = if exited {
                InstanceState::Exited
            } else {
                InstanceState::Failed
            };
            run.reason = oom.then_some(EndReason::OomKilled);
            run.exit_code = code;
            run.pid = None;
            run.start_ticks = None;
            run.health = Health::Unknown;
        });
        self.persist().await;
        if exited {
            tracing::info!(instance = %self.spec.id, pid, "instance exited with 0; it is not restarted");
            Phase::Idle
        } else if oom {
            tracing::warn!(instance = %self.spec.id, pid, "instance killed at its memory limit of {limit} MiB (OOMKilled); restarting in {:?}", self.backoff);
            Phase::Backoff
        } else {
            tracing::warn!(instance = %self.spec.id, pid, ?code, "instance failed; restarting in {:?}", self.backoff);
            Phase::Backoff
        }
    }

    /// Probes and rotates the log.
    async fn check(&self, since: Instant) {
        let (current, rotated) = (
            self.ctx.layout.log(&self.spec.id),
            self.ctx.layout.rotated_log(&self.spec.id),
        );
        let max = self.ctx.log_max_bytes;
        match tokio::task::spawn_blocking(move || logs::rotate_if_needed(&current, &rotated, max)).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => tracing::warn!(instance = %self.spec.id, "cannot rotate the log: {e}"),
            Err(e) => tracing::warn!(instance = %self.spec.id, "log rotation: {e}"),
        }
        let Some(probe) = &self.spec.exec.probe else {
            return;
        };
        let ready = probe::ready(probe).await;
        self.update(|run| {
            if ready {
                run.state = InstanceState::Running;
                run.health = Health::Healthy;
            } else if run.health == Health::Healthy || since.elapsed() >= PROBE_GRACE {
                run.health = Health::Unhealthy;
            }
        });
    }

    async fn backing_off(&mut self) -> Option<Phase> {
        let delay = self.backoff;
        self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
        tokio::select! {
            () = tokio::time::sleep(delay) => Some(self.launch(true).await),
            command = self.commands.recv() => self.obey_without_process(command).await,
            () = self.ctx.shutdown.cancelled() => None,
        }
    }

    async fn idle(&mut self) -> Option<Phase> {
        tokio::select! {
            command = self.commands.recv() => self.obey_without_process(command).await,
            () = self.ctx.shutdown.cancelled() => None,
        }
    }

    async fn obey_without_process(&mut self, command: Option<Cmd>) -> Option<Phase> {
        match command {
            None => None,
            Some(Cmd::Stop { forget, done }) => {
                if forget {
                    self.forget().await;
                }
                let _ = done.send(());
                None
            }
            Some(Cmd::Restart { done }) => {
                let next = self.launch(true).await;
                let _ = done.send(());
                Some(next)
            }
        }
    }

    /// Deletes the instance's files and its cgroup.
    async fn forget(&self) {
        let dir = self.ctx.layout.instance(&self.spec.id);
        forget_files(dir).await;
        forget_cgroup(&self.ctx, &self.spec.id).await;
    }
}

/// How long a removed instance's cgroup may take to empty (its killed processes to be reaped).
const CGROUP_EMPTY_WAIT: Duration = Duration::from_secs(5);

/// Kills what is left in `id`'s cgroup and removes it, once the kernel has reaped them.
pub async fn forget_cgroup(ctx: &Ctx, id: &drover_model::cluster::agent_api::InstanceId) {
    let Some(cgroups) = ctx.confiner.cgroups() else {
        return;
    };
    let deadline = Instant::now() + CGROUP_EMPTY_WAIT;
    loop {
        cgroups.kill_all(id);
        if cgroups.pids(id).is_empty() || Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    cgroups.remove(id);
}

/// Deletes an instance's directory.
pub async fn forget_files(dir: std::path::PathBuf) {
    let shown = dir.display().to_string();
    match tokio::task::spawn_blocking(move || std::fs::remove_dir_all(&dir)).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::NotFound => {}
        Ok(Err(e)) => tracing::warn!("cannot delete {shown}: {e}"),
        Err(e) => tracing::warn!("deleting {shown}: {e}"),
    }
}

/// Appends a line from the agent to the instance's log, so `logs` shows why it did not start.
fn append_note(layout: &Layout, spec: &InstanceSpec, note: &str) {
    use std::io::Write;
    use std::os::fd::AsFd;
    let log = super::files::dir_chain(&layout.instances(), &[spec.id.as_str()])
        .and_then(|dir| super::files::append_at(dir.as_fd(), Layout::LOG, 0o600));
    if let Ok(mut file) = log {
        let _ = writeln!(file, "drover agent: {note}");
    }
}

/// Now as RFC 3339.
pub fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}
