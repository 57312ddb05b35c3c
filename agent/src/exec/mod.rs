//! The `exec` executor: every instance is a child process, watched by its own supervisor task
//! ([`supervise`]), confined in a cgroup of its own ([`confine`]) and measured there
//! ([`usage`]).
//!
//! **Adoption.** Instances outlive the agent (SIGTERM, SIGKILL or a crash of the agent leaves
//! them running). The run record on disk names each instance's pid and the process's start
//! time (field 22 of `/proc/<pid>/stat`). When the agent starts again it adopts a process whose
//! pid still has that start time instead of starting another copy, and watches it by polling
//! `/proc` (it is no longer the agent's child); when it ends it counts as failed with an
//! unknown exit code and is restarted as usual. A process that an earlier agent started but
//! could not record (killed between spawn and write) is found by its working directory,
//! `instances/<id>/work`: a group leader working there is adopted, and every other process
//! group working under `instances/` that no desired instance owns is killed. So one instance
//! id never runs twice, as long as instances do not change their working directory.

pub mod confine;
pub mod enter;
pub mod files;
pub mod probe;
pub mod process;
pub mod procfs;
pub mod supervise;
pub mod usage;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use drover_model::cluster::agent_api::{Confinement, Health, InstanceId, InstanceState, Resources, Usage};
use drover_model::cluster::identity::AgentId;
use futures::future::BoxFuture;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::config::AgentConfig;
use crate::error::AgentError;
use crate::executor::{Executor, Launch, Machine, UsageTotal};
use crate::layout::Layout;
use crate::shared::Shared;
use confine::Confiner;
use process::Proc;
use supervise::{Begin, Cmd, Ctx, Supervisor};

/// Runs instances as child processes.
#[derive(Debug)]
pub struct ExecExecutor {
    ctx: Arc<Ctx>,
    /// What the agent keeps for itself.
    reserve: Resources,
    supervisors: Mutex<HashMap<InstanceId, mpsc::UnboundedSender<Cmd>>>,
    /// Processes found working under `instances/` at start-up, until the first `start`.
    found: Mutex<Option<Vec<procfs::Found>>>,
}

impl ExecExecutor {
    /// An executor for `config`, sharing `shared`, confining instances under the cgroup of
    /// agent `agent_id`; its tasks end when `shutdown` is cancelled. Fails where instances
    /// cannot be confined and the operator did not allow them unconfined.
    pub fn new(
        config: &AgentConfig,
        shared: Arc<Shared>,
        shutdown: CancellationToken,
        agent_id: &AgentId,
    ) -> Result<Self, AgentError> {
        let layout = Layout::new(&config.data_dir);
        let found = procfs::processes_under(&layout.instances());
        let capacity =
            machine_now(config.reserve).offered(config.capacity_cpu_millis, config.capacity_memory_mib);
        let confine = &config.confine;
        let confiner = Confiner::open(
            &confine.root,
            &confine.parent,
            agent_id.as_str(),
            capacity,
            confine.allow_unconfined,
        )
        .map_err(|e| AgentError::Unconfinable(e.to_string()))?;
        if let Some(cgroups) = confiner.cgroups() {
            let memory = shared.lock();
            cgroups.prune(&|name| InstanceId::parse(name).is_ok_and(|id| memory.instances.contains_key(&id)));
        }
        Ok(Self {
            ctx: Arc::new(Ctx {
                shared,
                layout,
                stop_grace: config.stop_grace,
                restart_backoff: config.restart_backoff,
                log_max_bytes: config.log_max_bytes,
                shutdown,
                confiner,
                pids_max: confine.pids_max,
            }),
            reserve: config.reserve,
            supervisors: Mutex::new(HashMap::new()),
            found: Mutex::new(Some(found)),
        })
    }

    fn supervisors(&self) -> std::sync::MutexGuard<'_, HashMap<InstanceId, mpsc::UnboundedSender<Cmd>>> {
        self.supervisors.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How `launch` begins: adopting its recorded process, or one found in its working
    /// directory, or starting afresh. `found` loses the processes adopted.
    fn begin(&self, launch: &Launch, found: &mut Vec<procfs::Found>) -> Begin {
        let id = &launch.spec.id;
        let recorded = match (launch.run.pid, launch.run.start_ticks) {
            (Some(pid), Some(ticks)) if procfs::alive(pid, ticks) => Some((pid, ticks)),
            _ => None,
        };
        let work = self.ctx.layout.work(id);
        let adopted = recorded.or_else(|| {
            found
                .iter()
                .find(|f| f.cwd == work && f.stat.pgid == f.pid)
                .map(|f| (f.pid, f.stat.start_ticks))
        });
        if let Some((pid, start_ticks)) = adopted {
            // Its group is adopted with it.
            found.retain(|f| f.stat.pgid != pid);
            let probed = launch.spec.exec.probe.is_some();
            self.ctx.shared.update(id, launch.epoch, |run| {
                run.pid = Some(pid);
                run.start_ticks = Some(start_ticks);
                run.state = if probed {
                    InstanceState::Starting
                } else {
                    InstanceState::Running
                };
                if !probed {
                    run.health = Health::Unknown;
                }
            });
            tracing::info!(instance = %id, pid, "adopted the instance's running process");
            return Begin::Adopt(Proc::Adopted { pid, start_ticks });
        }
        if launch.run.state == InstanceState::Exited {
            return Begin::Idle;
        }
        Begin::Spawn {
            again: launch.run.pid.is_some(),
        }
    }
}

impl Executor for ExecExecutor {
    fn kind(&self) -> &'static str {
        "exec"
    }

    fn machine(&self) -> Machine {
        machine_now(self.reserve)
    }

    fn confinement(&self) -> Confinement {
        self.ctx.confiner.describe()
    }

    fn usage(&self, id: &InstanceId, pid: Option<u32>) -> Option<Usage> {
        usage::of(self.ctx.confiner.cgroups(), id, pid)
    }

    fn usage_total(&self) -> Option<UsageTotal> {
        let running: Vec<(InstanceId, Option<u32>)> = self
            .ctx
            .shared
            .lock()
            .instances
            .values()
            .map(|e| (e.spec.id.clone(), e.run.pid))
            .collect();
        let mut total = UsageTotal::default();
        for (id, pid) in running {
            if let Some(used) = self.usage(&id, pid) {
                total.cpu_time_ms = total.cpu_time_ms.saturating_add(used.cpu_time_ms);
                total.memory_bytes = total.memory_bytes.saturating_add(used.memory_bytes);
            }
        }
        Some(total)
    }

    fn start(&self, launches: Vec<Launch>) {
        // The processes found at start-up are only for the instances loaded then.
        let mut found = self
            .found
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .unwrap_or_default();
        let mut supervisors = self.supervisors();
        for launch in launches {
            let begin = self.begin(&launch, &mut found);
            let (tx, rx) = mpsc::unbounded_channel();
            let id = launch.spec.id.clone();
            let supervisor = Supervisor::new(self.ctx.clone(), launch.spec, launch.epoch, rx);
            if let Some(old) = supervisors.insert(id.clone(), tx) {
                // The core stops an instance before starting it again; never leave two.
                tracing::error!(instance = %id, "an instance was started twice; stopping the older run");
                let (done, _) = oneshot::channel();
                let _ = old.send(Cmd::Stop { forget: false, done });
            }
            tokio::spawn(supervisor.run(begin));
        }
        let mut groups: Vec<u32> = found.iter().map(|f| f.stat.pgid).collect();
        groups.sort_unstable();
        groups.dedup();
        for pgid in groups {
            tracing::warn!(
                pgid,
                "killing a process group left under instances/ that no instance owns"
            );
            process::signal_group(pgid, rustix::process::Signal::KILL);
        }
    }

    fn stop(&self, ids: Vec<InstanceId>, forget: bool) -> BoxFuture<'static, ()> {
        let mut waits = Vec::new();
        let mut orphans = Vec::new();
        {
            let mut supervisors = self.supervisors();
            for id in ids {
                let (done, wait) = oneshot::channel();
                match supervisors.remove(&id) {
                    Some(tx) if tx.send(Cmd::Stop { forget, done }).is_ok() => waits.push(wait),
                    _ => orphans.push(id),
                }
            }
        }
        let ctx = self.ctx.clone();
        Box::pin(async move {
            for wait in waits {
                let _ = wait.await;
            }
            if forget {
                for id in orphans {
                    supervise::forget_files(ctx.layout.instance(&id)).await;
                    supervise::forget_cgroup(&ctx, &id).await;
                }
            }
        })
    }

    fn restart(&self, id: InstanceId) -> BoxFuture<'static, ()> {
        let (done, wait) = oneshot::channel();
        let sent = self
            .supervisors()
            .get(&id)
            .is_some_and(|tx| tx.send(Cmd::Restart { done }).is_ok());
        Box::pin(async move {
            if sent {
                let _ = wait.await;
            }
        })
    }
}

/// The machine now: its CPUs and memory, less `reserve` for what instances may take.
pub(crate) fn machine_now(reserve: Resources) -> Machine {
    let cpus = std::thread::available_parallelism()
        .map(|n| u32::try_from(n.get()).unwrap_or(u32::MAX))
        .unwrap_or(1);
    let (total_kib, available_kib) = procfs::meminfo().unwrap_or((0, 0));
    let memory_mib = total_kib / 1024;
    let pressure = (total_kib > 0 && available_kib.saturating_mul(20) < total_kib).then(|| {
        format!(
            "memory: MemAvailable ({} MiB) below 5% of MemTotal ({memory_mib} MiB)",
            available_kib / 1024
        )
    });
    Machine {
        nodes: 1,
        cpus,
        memory_mib,
        capacity: Resources {
            cpu_millis: u64::from(cpus) * 1000,
            memory_mib,
        }
        .minus(reserve),
        capacity_is_ceiling: true,
        pressure,
    }
}
