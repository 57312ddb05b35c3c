//! The `container` executor: every instance is a pod — one pod sandbox with its containers —
//! run by a container runtime (containerd's CRI plugin, or CRI-O) over the Container Runtime
//! Interface, as the kubelet runs pods. Each pod is watched by its own supervisor task
//! ([`supervise`]), which pulls, creates, starts, probes and starts again its containers and
//! reports them in Kubernetes' words ([`status`]).
//!
//! **Adoption.** Pods outlive the agent. Every sandbox is labelled with its instance, the
//! agent's id and a digest of its spec ([`config`]); a restarted agent's supervisors find their
//! instance's sandbox by those labels and adopt it when it runs the desired spec, and remove
//! any other. A sweep (at the first start, then every [`SWEEP_EVERY`]) removes the sandboxes of
//! this agent that no desired instance owns, so one instance id never runs twice and none is
//! forgotten in the runtime.

pub mod cgroups;
pub mod config;
pub mod cri;
pub mod pulls;
pub mod status;
pub mod supervise;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use drover_model::cluster::agent_api::{Confinement, InstanceId, Resources, Usage};
use drover_model::cluster::identity::AgentId;
use futures::future::BoxFuture;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::config::AgentConfig;
use crate::error::AgentError;
use crate::executor::{Executor, Launch, Machine, UsageTotal};
use crate::layout::Layout;
use crate::shared::Shared;
use supervise::{Cmd, Ctx, Supervisor};

/// How often sandboxes no desired instance owns are looked for.
pub const SWEEP_EVERY: Duration = Duration::from_secs(30);

/// Runs instances as pods through a CRI runtime.
#[derive(Debug)]
pub struct ContainerExecutor {
    ctx: Arc<Ctx>,
    reserve: Resources,
    supervisors: Mutex<HashMap<InstanceId, mpsc::UnboundedSender<Cmd>>>,
    sweeping: AtomicBool,
}

impl ContainerExecutor {
    /// An executor for `config`, sharing `shared`, labelling its sandboxes with `agent_id`; its
    /// tasks end when `shutdown` is cancelled.
    pub fn new(
        config: &AgentConfig,
        shared: Arc<Shared>,
        shutdown: CancellationToken,
        agent_id: &AgentId,
    ) -> Result<Self, AgentError> {
        let socket = &config.container.runtime_endpoint;
        let cri = cri::Cri::new(socket)
            .map_err(|e| AgentError::config("--container-runtime-endpoint", e.to_string()))?;
        let parent = config.confine.parent.trim_matches('/');
        Ok(Self {
            ctx: Arc::new(Ctx {
                shared,
                layout: Layout::new(&config.data_dir),
                cri,
                agent: agent_id.as_str().to_string(),
                cgroup_parent: format!("/{parent}/{agent_id}"),
                restart_backoff: config.restart_backoff,
                shutdown,
                usage: Mutex::new(HashMap::new()),
                max_image_bytes: config.container.max_image_bytes,
                pulls: pulls::Pulls::default(),
            }),
            reserve: config.reserve,
            supervisors: Mutex::new(HashMap::new()),
            sweeping: AtomicBool::new(false),
        })
    }

    fn supervisors(&self) -> std::sync::MutexGuard<'_, HashMap<InstanceId, mpsc::UnboundedSender<Cmd>>> {
        self.supervisors.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts the sweep of sandboxes no desired instance owns (once).
    fn start_sweeping(&self) {
        if self.sweeping.swap(true, Ordering::SeqCst) {
            return;
        }
        let ctx = self.ctx.clone();
        tokio::spawn(async move {
            loop {
                sweep(&ctx).await;
                tokio::select! {
                    () = ctx.shutdown.cancelled() => return,
                    () = tokio::time::sleep(SWEEP_EVERY) => {}
                }
            }
        });
    }
}

/// Removes this agent's sandboxes whose instance is not desired.
async fn sweep(ctx: &Ctx) {
    let mine = HashMap::from([(config::AGENT_LABEL.to_string(), ctx.agent.clone())]);
    let sandboxes = match ctx.cri.sandboxes(mine).await {
        Ok(sandboxes) => sandboxes,
        Err(e) => {
            tracing::warn!(
                "cannot list the runtime's sandboxes ({}): {e}",
                ctx.cri.socket().display()
            );
            return;
        }
    };
    for sandbox in sandboxes {
        let owner = sandbox
            .labels
            .get(config::INSTANCE_LABEL)
            .and_then(|id| InstanceId::parse(id).ok());
        let desired = owner
            .as_ref()
            .is_some_and(|id| ctx.shared.lock().instances.contains_key(id));
        if desired {
            continue;
        }
        tracing::warn!(sandbox = %sandbox.id, instance = ?owner, "removing a sandbox that no desired instance owns");
        let removed = match ctx.cri.stop_sandbox(&sandbox.id).await {
            Ok(()) => ctx.cri.remove_sandbox(&sandbox.id).await,
            Err(e) => Err(e),
        };
        match removed {
            Ok(()) => {
                if let Some(id) = owner {
                    cgroups::remove(&ctx.pod_cgroup(&id));
                }
            }
            Err(e) => tracing::error!(sandbox = %sandbox.id, "cannot remove a sandbox no instance owns: {e}"),
        }
    }
}

impl Executor for ContainerExecutor {
    fn kind(&self) -> &'static str {
        "container"
    }

    fn machine(&self) -> Machine {
        crate::exec::machine_now(self.reserve)
    }

    fn confinement(&self) -> Confinement {
        // runc confines every container in a cgroup of its own.
        if std::path::Path::new("/sys/fs/cgroup/cgroup.controllers")
            .try_exists()
            .unwrap_or(false)
        {
            Confinement::CgroupV2
        } else {
            Confinement::CgroupV1
        }
    }

    fn usage(&self, id: &InstanceId, _pid: Option<u32>) -> Option<Usage> {
        self.ctx
            .usage
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
            .copied()
    }

    fn usage_total(&self) -> Option<UsageTotal> {
        let usage = self.ctx.usage.lock().unwrap_or_else(|p| p.into_inner());
        Some(
            usage
                .values()
                .fold(UsageTotal::default(), |total, used| UsageTotal {
                    cpu_time_ms: total.cpu_time_ms.saturating_add(used.cpu_time_ms),
                    memory_bytes: total.memory_bytes.saturating_add(used.memory_bytes),
                }),
        )
    }

    fn start(&self, launches: Vec<Launch>) {
        let mut supervisors = self.supervisors();
        for launch in launches {
            let id = launch.spec.id.clone();
            let Some(pod) = launch.spec.exec.pod.clone() else {
                // Refused when the set was put; an older state file may still hold one.
                tracing::error!(instance = %id, "a program cannot run on a container agent; it stays stopped");
                continue;
            };
            let (tx, rx) = mpsc::unbounded_channel();
            let supervisor =
                Supervisor::new(self.ctx.clone(), launch.spec, pod, launch.epoch, &launch.run, rx);
            if let Some(old) = supervisors.insert(id.clone(), tx) {
                tracing::error!(instance = %id, "an instance was started twice; stopping the older run");
                let (done, _) = oneshot::channel();
                let _ = old.send(Cmd::Stop { forget: false, done });
            }
            tokio::spawn(supervisor.run());
        }
        drop(supervisors);
        self.start_sweeping();
    }

    fn stop(&self, ids: Vec<InstanceId>, forget: bool) -> BoxFuture<'static, ()> {
        let mut waits = Vec::new();
        {
            let mut supervisors = self.supervisors();
            for id in ids {
                let (done, wait) = oneshot::channel();
                if let Some(tx) = supervisors.remove(&id) {
                    if tx.send(Cmd::Stop { forget, done }).is_ok() {
                        waits.push(wait);
                    }
                }
            }
        }
        let ctx = self.ctx.clone();
        Box::pin(async move {
            for wait in waits {
                let _ = wait.await;
            }
            if forget {
                // An instance without a supervisor (one that could not run) may have left
                // files; a sandbox of it is the sweep's.
                sweep(&ctx).await;
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
