//! One task per `container` instance, in the kubelet's manner: every tick it compares the pod's
//! spec with what the runtime holds — one sandbox, found by its labels, and in it the latest
//! run of each container — and does the one next thing each container needs (pull, create,
//! start, start again after its backoff, stop when its liveness probe fails), then reports
//! the pod in Kubernetes' words ([`super::status`]). It obeys stop and restart commands, and
//! when the agent shuts down it ends and leaves the pod running: the next agent adopts it.
//!
//! **Never two copies.** Before a sandbox is made, every sandbox labelled with the instance and
//! the agent is stopped and removed; a sandbox made for another spec (its digest label differs)
//! is never adopted.

use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use drover_model::cluster::agent_api::{EndReason, InstanceId, InstanceSpec, Probe, Usage};
use drover_model::cluster::image::ImageRef;
use drover_model::cluster::pod::{
    ContainerPhase, ContainerReport, PodProbe, PodReport, PodSpec, ProbeAction, PullPolicy,
};
use k8s_cri::v1 as cri;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::config::{self, CONTAINER_LABEL, SPEC_LABEL};
use super::cri::Cri;
use super::pulls;
use super::status::{self, Backoff};
use crate::exec::probe;
pub use crate::executor::Cmd;
use crate::layout::Layout;
use crate::memory::Run;
use crate::shared::Shared;

/// How often a pod is compared with its spec.
const TICK: Duration = Duration::from_millis(500);
/// Longest restart delay.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// A run this long resets a container's restart delay.
const STABLE_RUN: Duration = Duration::from_secs(10);
/// How often usage is sampled.
const USAGE_EVERY: Duration = Duration::from_secs(2);

/// What every supervisor needs.
#[derive(Debug)]
pub struct Ctx {
    /// Shared state.
    pub shared: Arc<Shared>,
    /// Paths.
    pub layout: Layout,
    /// The runtime.
    pub cri: Cri,
    /// The agent's id, on every sandbox it makes.
    pub agent: String,
    /// The cgroup under which each pod's cgroup is made (`/drover/<agent id>`).
    pub cgroup_parent: String,
    /// First restart delay.
    pub restart_backoff: Duration,
    /// Cancelled when the agent shuts down.
    pub shutdown: CancellationToken,
    /// What each instance used when last sampled.
    pub usage: Mutex<std::collections::HashMap<InstanceId, Usage>>,
    /// Largest image a pod may run, in bytes.
    pub max_image_bytes: Option<u64>,
    /// Who pulled each image.
    pub pulls: pulls::Pulls,
}

impl Ctx {
    /// The cgroup of `id`'s pod.
    pub fn pod_cgroup(&self, id: &InstanceId) -> String {
        format!("{}/{id}", self.cgroup_parent)
    }
}

/// The sandbox the pod runs in.
#[derive(Debug)]
struct Sandbox {
    id: String,
    ip: Option<IpAddr>,
    config: cri::PodSandboxConfig,
}

/// One container of the pod, as the supervisor follows it.
#[derive(Debug)]
struct Slot {
    /// Its current run's container id.
    container: Option<String>,
    /// The attempt of that run (its restarts); the next run is one more.
    attempt: Option<u32>,
    /// The run whose end was counted.
    counted_end: Option<String>,
    /// Why it waits, and the runtime's words.
    waiting: Option<(&'static str, String)>,
    /// When it may be tried again.
    retry_at: Option<Instant>,
    backoff: Backoff,
    /// When its current run started (this agent's clock).
    started: Option<Instant>,
    running: bool,
    /// Ended and not started again (restart policy).
    terminal: bool,
    exit_code: Option<i32>,
    exit_reason: Option<&'static str>,
    ready: bool,
    /// The digest of the image it runs (`repository@sha256:…`).
    image_id: Option<String>,
    next_probe: Option<Instant>,
    liveness_failures: u32,
}

impl Slot {
    fn new(first_backoff: Duration) -> Self {
        Self {
            container: None,
            attempt: None,
            counted_end: None,
            waiting: None,
            retry_at: None,
            backoff: Backoff::new(first_backoff, MAX_BACKOFF),
            started: None,
            running: false,
            terminal: false,
            exit_code: None,
            exit_reason: None,
            ready: false,
            image_id: None,
            next_probe: None,
            liveness_failures: 0,
        }
    }

    fn next_attempt(&self) -> u32 {
        self.attempt.map_or(0, |a| a.saturating_add(1))
    }

    fn wait(&mut self, reason: &'static str, message: String, delay: Duration) {
        self.waiting = Some((reason, message));
        self.retry_at = Some(Instant::now() + delay);
        self.running = false;
        self.ready = false;
    }
}

/// Supervises one pod until it is stopped or the agent shuts down.
pub struct Supervisor {
    ctx: Arc<Ctx>,
    spec: InstanceSpec,
    pod: PodSpec,
    epoch: u64,
    commands: mpsc::UnboundedReceiver<Cmd>,
    sandbox: Option<Sandbox>,
    /// Whether the runtime has been asked for the pod's existing sandbox.
    adopted: bool,
    sandbox_attempt: u32,
    sandbox_retry: Option<Instant>,
    sandbox_backoff: Backoff,
    slots: Vec<Slot>,
    oom_kills: u32,
    last_reason: Option<EndReason>,
    started_at: Option<String>,
    last_usage: Option<Instant>,
}

impl Supervisor {
    /// A supervisor of `spec` (entry `epoch`, its pod `pod`) obeying `commands`; `run` is what
    /// was recorded of it.
    pub fn new(
        ctx: Arc<Ctx>,
        spec: InstanceSpec,
        pod: PodSpec,
        epoch: u64,
        run: &Run,
        commands: mpsc::UnboundedReceiver<Cmd>,
    ) -> Self {
        let first = ctx.restart_backoff;
        let slots = pod.containers.iter().map(|_| Slot::new(first)).collect();
        Self {
            ctx,
            spec,
            pod,
            epoch,
            commands,
            sandbox: None,
            adopted: false,
            sandbox_attempt: 0,
            sandbox_retry: None,
            sandbox_backoff: Backoff::new(first, MAX_BACKOFF),
            slots,
            oom_kills: run.oom_kills,
            last_reason: run.reason,
            started_at: run.started_at.clone(),
            last_usage: None,
        }
    }

    /// Runs until stopped.
    pub async fn run(mut self) {
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = self.ctx.shutdown.cancelled() => return,
                command = self.commands.recv() => match command {
                    Some(Cmd::Stop { forget, done }) => {
                        self.remove_pod().await;
                        if forget {
                            self.forget_files().await;
                        }
                        self.ctx.usage.lock().unwrap_or_else(|p| p.into_inner()).remove(&self.spec.id);
                        let _ = done.send(());
                        return;
                    }
                    Some(Cmd::Restart { done }) => {
                        self.remove_pod().await;
                        for slot in &mut self.slots {
                            let attempt = slot.attempt;
                            *slot = Slot::new(self.ctx.restart_backoff);
                            slot.attempt = attempt;
                        }
                        self.sync().await;
                        self.report().await;
                        let _ = done.send(());
                    }
                    None => return,
                },
                _ = tick.tick() => {
                    self.sync().await;
                    self.report().await;
                }
            }
        }
    }

    /// Brings the pod one step closer to its spec.
    async fn sync(&mut self) {
        if !self.adopted {
            match self.adopt().await {
                Ok(()) => self.adopted = true,
                Err(e) => {
                    self.all_waiting(status::CONTAINER_CREATING, e.to_string());
                    return;
                }
            }
        }
        if !self.sandbox_ready().await {
            return;
        }
        let Some(sandbox) = self.sandbox.as_ref() else {
            return;
        };
        let listed = match self.ctx.cri.containers(&sandbox.id).await {
            Ok(listed) => listed,
            Err(e) => {
                tracing::warn!(instance = %self.spec.id, "cannot list the pod's containers: {e}");
                return;
            }
        };
        for index in 0..self.slots.len() {
            self.sync_container(index, &listed).await;
        }
        self.sample_usage().await;
    }

    /// Finds the sandbox an earlier agent (or supervisor) made for this spec, and removes every
    /// other one of this instance.
    async fn adopt(&mut self) -> Result<(), super::cri::CriError> {
        let selector = config::sandbox_selector(self.spec.id.as_str(), &self.ctx.agent);
        let mut found = self.ctx.cri.sandboxes(selector).await?;
        found.sort_by_key(|s| std::cmp::Reverse(s.created_at));
        let digest = config::spec_digest(&self.spec, &self.pod);
        let ready = cri::PodSandboxState::SandboxReady as i32;
        let keep = found
            .iter()
            .position(|s| s.state == ready && s.labels.get(SPEC_LABEL) == Some(&digest));
        for (at, sandbox) in found.iter().enumerate() {
            if Some(at) != keep {
                tracing::info!(instance = %self.spec.id, sandbox = %sandbox.id, "removing a sandbox this spec does not run");
                self.remove_sandbox(&sandbox.id).await;
            }
        }
        let Some(kept) = keep.and_then(|at| found.get(at)) else {
            return Ok(());
        };
        let attempt = kept.metadata.as_ref().map_or(0, |m| m.attempt);
        let status = self.ctx.cri.sandbox_status(&kept.id).await?;
        let log_dir = self.ctx.layout.instance(&self.spec.id);
        let config = config::sandbox_config(
            &self.spec,
            &self.pod,
            &self.ctx.agent,
            attempt,
            &log_dir,
            &self.ctx.pod_cgroup(&self.spec.id),
        );
        self.sandbox = Some(Sandbox {
            id: kept.id.clone(),
            ip: self.address(&status),
            config,
        });
        self.sandbox_attempt = attempt.saturating_add(1);
        for container in self.ctx.cri.containers(&kept.id).await? {
            let name = container.labels.get(CONTAINER_LABEL);
            let Some(index) = self.pod.containers.iter().position(|c| Some(&c.name) == name) else {
                continue;
            };
            let attempt = container.metadata.as_ref().map_or(0, |m| m.attempt);
            let slot = &mut self.slots[index];
            if slot.attempt.is_none_or(|a| attempt >= a) {
                slot.attempt = Some(attempt);
                slot.container = Some(container.id.clone());
                slot.started = Some(Instant::now());
            }
        }
        tracing::info!(instance = %self.spec.id, sandbox = %kept.id, "adopted the instance's running pod");
        Ok(())
    }

    fn address(&self, status: &cri::PodSandboxStatus) -> Option<IpAddr> {
        if self.pod.host_network {
            return Some(IpAddr::V4(std::net::Ipv4Addr::LOCALHOST));
        }
        status.network.as_ref().and_then(|n| n.ip.parse().ok())
    }

    /// Makes sure a ready sandbox runs (making one when due); whether one does.
    async fn sandbox_ready(&mut self) -> bool {
        if let Some(sandbox) = &self.sandbox {
            let ready = cri::PodSandboxState::SandboxReady as i32;
            match self.ctx.cri.sandbox_status(&sandbox.id).await {
                Ok(status) if status.state == ready => return true,
                Ok(_) => {
                    // Its pause process ended: the kubelet makes the pod again.
                    tracing::warn!(instance = %self.spec.id, "the pod's sandbox stopped; making it again");
                    self.remove_pod().await;
                }
                Err(e) if e.not_found() => self.sandbox = None,
                Err(e) => {
                    tracing::warn!(instance = %self.spec.id, "cannot read the pod's sandbox: {e}");
                    return false;
                }
            }
        }
        if self.slots.iter().all(|s| s.terminal) {
            return false;
        }
        if self.sandbox_retry.is_some_and(|at| Instant::now() < at) {
            return false;
        }
        self.make_sandbox().await
    }

    async fn make_sandbox(&mut self) -> bool {
        // Never two: whatever this instance left is removed first.
        let selector = config::sandbox_selector(self.spec.id.as_str(), &self.ctx.agent);
        if let Ok(left) = self.ctx.cri.sandboxes(selector).await {
            for sandbox in left {
                self.remove_sandbox(&sandbox.id).await;
            }
        }
        let log_dir = self.ctx.layout.instance(&self.spec.id);
        if let Err(e) = tokio::fs::create_dir_all(&log_dir).await {
            self.all_waiting(
                status::CONTAINER_CREATING,
                format!("cannot make {}: {e}", log_dir.display()),
            );
            return false;
        }
        let config = config::sandbox_config(
            &self.spec,
            &self.pod,
            &self.ctx.agent,
            self.sandbox_attempt,
            &log_dir,
            &self.ctx.pod_cgroup(&self.spec.id),
        );
        self.sandbox_attempt = self.sandbox_attempt.saturating_add(1);
        let made = self.ctx.cri.run_sandbox(config.clone()).await;
        let status = match made {
            Ok(id) => self.ctx.cri.sandbox_status(&id).await.map(|status| (id, status)),
            Err(e) => Err(e),
        };
        match status {
            Ok((id, status)) => {
                self.sandbox_backoff.reset();
                self.sandbox_retry = None;
                self.started_at = Some(now_rfc3339());
                self.sandbox = Some(Sandbox {
                    id,
                    ip: self.address(&status),
                    config,
                });
                true
            }
            Err(e) => {
                let delay = self.sandbox_backoff.take();
                self.sandbox_retry = Some(Instant::now() + delay);
                tracing::warn!(instance = %self.spec.id, "cannot make the pod's sandbox: {e}");
                self.all_waiting(status::CONTAINER_CREATING, e.message);
                false
            }
        }
    }

    fn all_waiting(&mut self, reason: &'static str, message: String) {
        for slot in self.slots.iter_mut().filter(|s| !s.terminal) {
            slot.waiting = Some((reason, message.clone()));
            slot.running = false;
            slot.ready = false;
        }
    }

    /// Does the next thing container `index` needs.
    async fn sync_container(&mut self, index: usize, listed: &[cri::Container]) {
        let name = self.pod.containers[index].name.clone();
        let latest = listed
            .iter()
            .filter(|c| c.labels.get(CONTAINER_LABEL) == Some(&name))
            .max_by_key(|c| c.metadata.as_ref().map_or(0, |m| m.attempt));
        let running = cri::ContainerState::ContainerRunning as i32;
        let created = cri::ContainerState::ContainerCreated as i32;
        match latest {
            Some(c) if c.state == running => {
                let probed = self.pod.containers[index].readiness.is_some();
                let slot = &mut self.slots[index];
                slot.container = Some(c.id.clone());
                slot.running = true;
                slot.waiting = None;
                if !probed {
                    // Without a readiness probe a running container is ready (an adopted one too).
                    slot.ready = true;
                }
                if slot.image_id.is_none() {
                    // The runtime's status names the digest the run was made from.
                    if let Ok(status) = self.ctx.cri.container_status(&c.id).await {
                        let slot = &mut self.slots[index];
                        slot.image_id = Some(status.image_ref).filter(|r| !r.is_empty());
                    }
                }
                let slot = &mut self.slots[index];
                if slot.started.is_some_and(|at| at.elapsed() >= STABLE_RUN) {
                    slot.backoff.reset();
                }
                self.probe(index).await;
            }
            Some(c) if c.state == created => {
                // Made but never started (an agent ended in between): start it now.
                let id = c.id.clone();
                self.start(index, id).await;
            }
            Some(c) => {
                let id = c.id.clone();
                self.ended(index, &id).await;
                let slot = &self.slots[index];
                if !slot.terminal && slot.retry_at.is_none_or(|at| Instant::now() >= at) {
                    if let Err(e) = self.ctx.cri.remove_container(&id).await {
                        tracing::warn!(instance = %self.spec.id, container = %name, "cannot remove an ended run: {e}");
                        return;
                    }
                    self.create(index).await;
                }
            }
            None => {
                let slot = &mut self.slots[index];
                if slot.terminal {
                    return;
                }
                if slot.retry_at.is_some_and(|at| Instant::now() < at) {
                    // A pull that failed waits as ImagePullBackOff, as the kubelet says.
                    if let Some((reason, _)) = &mut slot.waiting {
                        if *reason == status::ERR_IMAGE_PULL {
                            *reason = status::IMAGE_PULL_BACK_OFF;
                        }
                    }
                    return;
                }
                self.create(index).await;
            }
        }
    }

    /// Counts the end of run `id` of container `index` once, and decides whether it runs again.
    async fn ended(&mut self, index: usize, id: &str) {
        if self.slots[index].counted_end.as_deref() == Some(id) {
            return;
        }
        let (exit_code, runtime_reason, message) = match self.ctx.cri.container_status(id).await {
            Ok(s) => (s.exit_code, s.reason, s.message),
            Err(e) => (-1, String::new(), e.message),
        };
        let reason = status::exit_reason(exit_code, &runtime_reason);
        if reason == status::OOM_KILLED {
            self.oom_kills = self.oom_kills.saturating_add(1);
            self.last_reason = Some(EndReason::OomKilled);
        } else {
            self.last_reason = None;
        }
        let policy = self.pod.restart_policy;
        let name = self.pod.containers[index].name.clone();
        let slot = &mut self.slots[index];
        slot.counted_end = Some(id.to_string());
        slot.exit_code = Some(exit_code);
        slot.exit_reason = Some(reason);
        slot.running = false;
        slot.ready = false;
        tracing::info!(instance = %self.spec.id, container = %name, exit_code, reason, "a container ended");
        if policy.restarts(exit_code) {
            if slot.started.is_some_and(|at| at.elapsed() >= STABLE_RUN) {
                slot.backoff.reset();
            }
            let delay = slot.backoff.take();
            let words = if message.is_empty() {
                format!("back-off {delay:?} restarting container {name} (exit code {exit_code}, {reason})")
            } else {
                format!("back-off {delay:?} restarting container {name}: {message}")
            };
            slot.wait(status::CRASH_LOOP_BACK_OFF, words, delay);
        } else {
            slot.terminal = true;
            slot.waiting = None;
        }
    }

    /// Pulls, creates and starts a new run of container `index`.
    async fn create(&mut self, index: usize) {
        let Some(sandbox) = self.sandbox.as_ref() else {
            return;
        };
        let (sandbox_id, sandbox_config) = (sandbox.id.clone(), sandbox.config.clone());
        let image = match self.image(index, &sandbox_config).await {
            Ok(image) => image,
            Err((reason, message)) => {
                let slot = &mut self.slots[index];
                let delay = slot.backoff.take();
                slot.wait(reason, message, delay);
                return;
            }
        };
        let attempt = self.slots[index].next_attempt();
        let container = &self.pod.containers[index];
        let config = config::container_config(&self.spec, (index, container), attempt, &image);
        match self
            .ctx
            .cri
            .create_container(&sandbox_id, config, sandbox_config)
            .await
        {
            Ok(id) => {
                let slot = &mut self.slots[index];
                slot.attempt = Some(attempt);
                slot.container = Some(id.clone());
                self.start(index, id).await;
            }
            Err(e) => {
                let slot = &mut self.slots[index];
                let delay = slot.backoff.take();
                slot.wait(status::CREATE_CONTAINER_ERROR, e.message, delay);
            }
        }
    }

    async fn start(&mut self, index: usize, id: String) {
        match self.ctx.cri.start_container(&id).await {
            Ok(()) => {
                let probed = self.pod.containers[index].readiness.is_some();
                // The runtime's status names the digest the run was made from.
                let image_id = match self.ctx.cri.container_status(&id).await {
                    Ok(status) => Some(status.image_ref).filter(|r| !r.is_empty()),
                    Err(_) => None,
                };
                let slot = &mut self.slots[index];
                slot.image_id = image_id.or(slot.image_id.take());
                slot.container = Some(id);
                slot.started = Some(Instant::now());
                slot.running = true;
                slot.waiting = None;
                slot.retry_at = None;
                slot.ready = !probed;
                slot.liveness_failures = 0;
                slot.next_probe = None;
            }
            Err(e) => {
                self.last_reason = Some(EndReason::StartError);
                let _ = self.ctx.cri.remove_container(&id).await;
                let slot = &mut self.slots[index];
                slot.container = None;
                slot.exit_code = Some(128);
                let delay = slot.backoff.take();
                slot.wait(status::START_ERROR, e.message, delay);
            }
        }
    }

    /// The image container `index` runs: pulled as its policy says (with the credentials of
    /// its registry), or the one the runtime holds; its id.
    async fn image(
        &self,
        index: usize,
        sandbox: &cri::PodSandboxConfig,
    ) -> Result<String, (&'static str, String)> {
        let container = &self.pod.containers[index];
        let reference =
            ImageRef::parse(&container.image).map_err(|e| (status::INVALID_IMAGE_NAME, e.to_string()))?;
        let policy = container.effective_pull_policy();
        let auth = self
            .pod
            .pull_auth
            .iter()
            .find(|a| a.registry == reference.registry);
        let key = pulls::key(auth);
        // An image on the machine is used without a pull only by pods that could pull it: it
        // was pulled without credentials, or with the credentials this pod presents (else the
        // registry is asked, which checks them: another tenant's pull is never reused).
        let may_reuse = self.ctx.pulls.may_reuse(&container.image, &key);
        if policy == PullPolicy::Never || (policy == PullPolicy::IfNotPresent && may_reuse) {
            if let Ok(Some(held)) = self.ctx.cri.image(&container.image).await {
                self.within_size_limit(&container.image, &held.id, held.size)
                    .await?;
                return Ok(held.id);
            }
            if policy == PullPolicy::Never {
                return Err((
                    "ErrImageNeverPull",
                    format!(
                        "image {} is not on the machine and its pull policy is Never",
                        container.image
                    ),
                ));
            }
        }
        let auth = auth.map(|a| cri::AuthConfig {
            username: a.username.clone(),
            password: a.password.clone(),
            // The runtime reads it as a URL and offers the credentials to its host only.
            server_address: format!("https://{}", a.registry),
            ..Default::default()
        });
        let pulled = self
            .ctx
            .cri
            .pull(&container.image, auth, sandbox.clone())
            .await
            .map_err(|e| (status::ERR_IMAGE_PULL, e.message))?;
        let size = match self.ctx.cri.image(&pulled).await {
            Ok(Some(image)) => image.size,
            _ => 0,
        };
        self.within_size_limit(&container.image, &pulled, size).await?;
        self.ctx.pulls.record(&container.image, key);
        Ok(pulled)
    }

    /// Refuses (and removes) image `id` (named `reference`) of `size` bytes when it is over the
    /// agent's limit.
    async fn within_size_limit(
        &self,
        reference: &str,
        id: &str,
        size: u64,
    ) -> Result<(), (&'static str, String)> {
        let Some(limit) = self.ctx.max_image_bytes.filter(|limit| size > *limit) else {
            return Ok(());
        };
        if let Err(e) = self.ctx.cri.remove_image(id).await {
            tracing::warn!(instance = %self.spec.id, "cannot remove an image over the size limit: {e}");
        }
        Err((
            status::ERR_IMAGE_PULL,
            format!(
                "image {reference} is {} MiB, over this agent's limit of {} MiB (--max-image-mib)",
                size.div_ceil(1024 * 1024),
                limit / (1024 * 1024)
            ),
        ))
    }

    /// Runs container `index`'s probes when due.
    async fn probe(&mut self, index: usize) {
        let container = &self.pod.containers[index];
        let (readiness, liveness) = (container.readiness.clone(), container.liveness.clone());
        let slot = &self.slots[index];
        let Some(started) = slot.started else {
            return;
        };
        if slot.next_probe.is_some_and(|at| Instant::now() < at) {
            return;
        }
        let (Some(host), Some(id)) = (self.sandbox.as_ref().and_then(|s| s.ip), slot.container.clone())
        else {
            return;
        };
        let mut period = Duration::from_secs(1);
        if let Some(probe) = &readiness {
            if started.elapsed() >= secs(probe.initial_delay_secs) {
                let ok = self.try_probe(host, &id, probe).await;
                self.slots[index].ready = ok;
            }
            period = period.min(secs(probe.period_secs));
        }
        if let Some(probe) = &liveness {
            if started.elapsed() >= secs(probe.initial_delay_secs) {
                let ok = self.try_probe(host, &id, probe).await;
                let slot = &mut self.slots[index];
                slot.liveness_failures = if ok {
                    0
                } else {
                    slot.liveness_failures.saturating_add(1)
                };
                if slot.liveness_failures >= probe.failure_threshold {
                    tracing::info!(instance = %self.spec.id, container = %container.name, "liveness probe failed; restarting the container");
                    slot.liveness_failures = 0;
                    let grace = secs(self.pod.termination_grace_secs);
                    if let Err(e) = self.ctx.cri.stop_container(&id, grace).await {
                        tracing::warn!(instance = %self.spec.id, "cannot stop a container that failed its liveness probe: {e}");
                    }
                }
            }
            period = period.min(secs(probe.period_secs));
        }
        self.slots[index].next_probe = Some(Instant::now() + period);
    }

    async fn try_probe(&self, host: IpAddr, container: &str, probe: &PodProbe) -> bool {
        let timeout = secs(probe.timeout_secs);
        match &probe.action {
            ProbeAction::HttpGet { port, path } => {
                let probe = Probe::Http {
                    port: *port,
                    path: path.clone(),
                };
                probe::answers(host, &probe, timeout).await
            }
            ProbeAction::TcpSocket { port } => {
                probe::answers(host, &Probe::Tcp { port: *port }, timeout).await
            }
            ProbeAction::Exec { command } => matches!(
                self.ctx.cri.exec_sync(container, command.clone(), timeout).await,
                Ok(0)
            ),
        }
    }

    /// Samples what the pod's running containers use, now and then.
    async fn sample_usage(&mut self) {
        if self.last_usage.is_some_and(|at| at.elapsed() < USAGE_EVERY) {
            return;
        }
        self.last_usage = Some(Instant::now());
        let mut used = Usage::default();
        let mut limit = 0u64;
        for (slot, container) in self.slots.iter().zip(&self.pod.containers) {
            let Some(id) = slot.container.as_deref().filter(|_| slot.running) else {
                continue;
            };
            let Ok(Some(stats)) = self.ctx.cri.container_stats(id).await else {
                continue;
            };
            let cpu_ns = stats
                .cpu
                .and_then(|c| c.usage_core_nano_seconds)
                .map_or(0, |v| v.value);
            let memory = stats
                .memory
                .and_then(|m| m.working_set_bytes)
                .map_or(0, |v| v.value);
            used.cpu_time_ms = used.cpu_time_ms.saturating_add(cpu_ns / 1_000_000);
            used.memory_bytes = used.memory_bytes.saturating_add(memory);
            used.processes = used.processes.saturating_add(1);
            limit = limit.saturating_add(container.limits.memory_mib.saturating_mul(1024 * 1024));
        }
        used.memory_limit_bytes = (limit > 0).then_some(limit);
        self.ctx
            .usage
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(self.spec.id.clone(), used);
    }

    /// Writes the pod's state into its run record (and to disk when it changed).
    async fn report(&self) {
        let containers: Vec<ContainerReport> = self
            .slots
            .iter()
            .zip(&self.pod.containers)
            .map(|(slot, spec)| container_report(slot, spec))
            .collect();
        let probed = self.pod.containers.iter().any(|c| c.readiness.is_some());
        let (state, health) = status::instance_state(&containers, probed);
        let restarts = self.slots.iter().map(|s| s.attempt.unwrap_or(0)).sum::<u32>();
        let exit_code = self.slots.iter().filter_map(|s| s.exit_code).next_back();
        let pod = PodReport {
            ip: self.sandbox.as_ref().and_then(|s| s.ip).map(|ip| ip.to_string()),
            containers,
        };
        let next = Run {
            state,
            exit_code,
            restarts,
            started_at: self.started_at.clone(),
            health,
            pid: None,
            start_ticks: None,
            reason: self.last_reason,
            oom_kills: self.oom_kills,
            pod: Some(pod),
        };
        // Only a change reaches the run record: every write grows the agent's generation, which
        // makes the cluster actor read the whole inventory again.
        let current = {
            let memory = self.ctx.shared.lock();
            memory
                .instances
                .get(&self.spec.id)
                .filter(|e| e.epoch == self.epoch)
                .map(|e| e.run.clone())
        };
        let Some(current) = current.filter(|run| *run != next) else {
            return;
        };
        let persist =
            current.state != next.state || current.restarts != next.restarts || current.reason != next.reason;
        self.ctx
            .shared
            .update(&self.spec.id, self.epoch, |run| *run = next);
        if persist {
            if let Err(e) = self.ctx.shared.persist(&self.spec.id).await {
                tracing::error!(instance = %self.spec.id, "cannot record the instance's run: {e}");
            }
        }
    }

    /// Stops the pod's containers (each with the grace period), then stops and removes its
    /// sandbox and its cgroup.
    async fn remove_pod(&mut self) {
        let grace = secs(self.pod.termination_grace_secs);
        if let Some(sandbox) = self.sandbox.take() {
            for slot in &self.slots {
                if let Some(id) = slot.container.as_deref().filter(|_| slot.running) {
                    if let Err(e) = self.ctx.cri.stop_container(id, grace).await {
                        tracing::warn!(instance = %self.spec.id, "cannot stop a container: {e}");
                    }
                }
            }
            self.remove_sandbox(&sandbox.id).await;
        }
        let selector = config::sandbox_selector(self.spec.id.as_str(), &self.ctx.agent);
        if let Ok(left) = self.ctx.cri.sandboxes(selector).await {
            for sandbox in left {
                self.remove_sandbox(&sandbox.id).await;
            }
        }
        for slot in &mut self.slots {
            slot.container = None;
            slot.running = false;
            slot.ready = false;
        }
        super::cgroups::remove(&self.ctx.pod_cgroup(&self.spec.id));
    }

    async fn remove_sandbox(&self, id: &str) {
        let stopped = self.ctx.cri.stop_sandbox(id).await;
        let removed = match stopped {
            Ok(()) => self.ctx.cri.remove_sandbox(id).await,
            Err(e) => Err(e),
        };
        if let Err(e) = removed {
            tracing::error!(instance = %self.spec.id, sandbox = %id, "cannot remove the pod's sandbox (the agent tries again at its next sweep): {e}");
        }
    }

    async fn forget_files(&self) {
        let dir = self.ctx.layout.instance(&self.spec.id);
        if let Err(e) = tokio::fs::remove_dir_all(&dir).await {
            if e.kind() != std::io::ErrorKind::NotFound {
                tracing::warn!(instance = %self.spec.id, "cannot remove {}: {e}", dir.display());
            }
        }
    }
}

fn container_report(slot: &Slot, spec: &drover_model::cluster::pod::ContainerSpec) -> ContainerReport {
    let (state, reason, message) = if let Some((reason, message)) = &slot.waiting {
        (
            ContainerPhase::Waiting,
            Some(reason.to_string()),
            Some(message.clone()),
        )
    } else if slot.running {
        (ContainerPhase::Running, None, None)
    } else if slot.terminal {
        (
            ContainerPhase::Terminated,
            slot.exit_reason.map(str::to_string),
            None,
        )
    } else {
        (
            ContainerPhase::Waiting,
            Some(status::CONTAINER_CREATING.to_string()),
            None,
        )
    };
    ContainerReport {
        name: spec.name.clone(),
        image: spec.image.clone(),
        image_id: slot.image_id.clone(),
        state,
        reason,
        message,
        exit_code: slot.exit_code,
        restart_count: slot.attempt.unwrap_or(0),
        ready: slot.running && slot.ready,
    }
}

fn secs(n: u32) -> Duration {
    Duration::from_secs(u64::from(n))
}

fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}
