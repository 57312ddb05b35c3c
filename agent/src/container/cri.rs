//! A Container Runtime Interface (CRI v1) client over the runtime's Unix socket: the calls the
//! `container` executor makes of containerd's CRI plugin (or CRI-O), each answered with the
//! runtime's own words on failure. The connection is made lazily and again after a failure, so
//! an agent started before its runtime, or outliving a runtime restart, carries on.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hyper_util::rt::TokioIo;
use k8s_cri::v1 as cri;
use k8s_cri::v1::image_service_client::ImageServiceClient;
use k8s_cri::v1::runtime_service_client::RuntimeServiceClient;
use tonic::transport::{Channel, Endpoint, Uri};

/// How long one CRI call may take (a pull has its own, longer bound).
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a pull may take.
const PULL_TIMEOUT: Duration = Duration::from_secs(300);

/// A failed CRI call: the gRPC status code and the runtime's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{call}: {message} ({code:?})")]
pub struct CriError {
    /// The call that failed.
    pub call: &'static str,
    /// The gRPC status code.
    pub code: tonic::Code,
    /// The runtime's words.
    pub message: String,
}

impl CriError {
    fn of(call: &'static str, status: tonic::Status) -> Self {
        Self {
            call,
            code: status.code(),
            message: status.message().to_string(),
        }
    }

    /// Whether the runtime said the object does not exist.
    pub fn not_found(&self) -> bool {
        self.code == tonic::Code::NotFound
    }
}

/// A CRI client (cheap to clone: clones share one connection).
#[derive(Debug, Clone)]
pub struct Cri {
    runtime: RuntimeServiceClient<Channel>,
    images: ImageServiceClient<Channel>,
    socket: PathBuf,
}

fn request<T>(message: T, timeout: Duration) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request.set_timeout(timeout);
    request
}

impl Cri {
    /// A client of the runtime listening on `socket` (connected at the first call).
    pub fn new(socket: &Path) -> Result<Self, CriError> {
        let path = socket.to_path_buf();
        // The URI is required by the transport but unused: every connection is the socket.
        let endpoint = Endpoint::try_from("http://[::1]:1").map_err(|e| CriError {
            call: "connect",
            code: tonic::Code::Internal,
            message: e.to_string(),
        })?;
        let channel =
            endpoint
                .connect_timeout(Duration::from_secs(5))
                .connect_with_connector_lazy(tower::service_fn(move |_: Uri| {
                    let path = path.clone();
                    async move {
                        Ok::<_, std::io::Error>(TokioIo::new(tokio::net::UnixStream::connect(path).await?))
                    }
                }));
        Ok(Self {
            runtime: RuntimeServiceClient::new(channel.clone()),
            images: ImageServiceClient::new(channel),
            socket: socket.to_path_buf(),
        })
    }

    /// The socket it speaks to.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// The runtime's name and version (`containerd 1.6.20`).
    pub async fn version(&self) -> Result<String, CriError> {
        let answer = self
            .runtime
            .clone()
            .version(request(cri::VersionRequest::default(), CALL_TIMEOUT))
            .await
            .map_err(|s| CriError::of("Version", s))?
            .into_inner();
        Ok(format!("{} {}", answer.runtime_name, answer.runtime_version))
    }

    /// The sandboxes carrying every label of `labels`.
    pub async fn sandboxes(&self, labels: HashMap<String, String>) -> Result<Vec<cri::PodSandbox>, CriError> {
        let filter = cri::PodSandboxFilter {
            label_selector: labels,
            ..Default::default()
        };
        let answer = self
            .runtime
            .clone()
            .list_pod_sandbox(request(
                cri::ListPodSandboxRequest { filter: Some(filter) },
                CALL_TIMEOUT,
            ))
            .await
            .map_err(|s| CriError::of("ListPodSandbox", s))?;
        Ok(answer.into_inner().items)
    }

    /// Starts a sandbox; its id.
    pub async fn run_sandbox(&self, config: cri::PodSandboxConfig) -> Result<String, CriError> {
        let answer = self
            .runtime
            .clone()
            .run_pod_sandbox(request(
                cri::RunPodSandboxRequest {
                    config: Some(config),
                    runtime_handler: String::new(),
                },
                PULL_TIMEOUT,
            ))
            .await
            .map_err(|s| CriError::of("RunPodSandbox", s))?;
        Ok(answer.into_inner().pod_sandbox_id)
    }

    /// A sandbox's status.
    pub async fn sandbox_status(&self, id: &str) -> Result<cri::PodSandboxStatus, CriError> {
        let answer = self
            .runtime
            .clone()
            .pod_sandbox_status(request(
                cri::PodSandboxStatusRequest {
                    pod_sandbox_id: id.to_string(),
                    verbose: false,
                },
                CALL_TIMEOUT,
            ))
            .await
            .map_err(|s| CriError::of("PodSandboxStatus", s))?;
        answer.into_inner().status.ok_or_else(|| CriError {
            call: "PodSandboxStatus",
            code: tonic::Code::NotFound,
            message: format!("no status for sandbox {id}"),
        })
    }

    /// Stops a sandbox and every container in it (gone already counts as stopped).
    pub async fn stop_sandbox(&self, id: &str) -> Result<(), CriError> {
        let answer = self
            .runtime
            .clone()
            .stop_pod_sandbox(request(
                cri::StopPodSandboxRequest {
                    pod_sandbox_id: id.to_string(),
                },
                CALL_TIMEOUT,
            ))
            .await;
        match answer.map_err(|s| CriError::of("StopPodSandbox", s)) {
            Err(e) if !e.not_found() => Err(e),
            _ => Ok(()),
        }
    }

    /// Removes a stopped sandbox with its containers (gone already counts as removed).
    pub async fn remove_sandbox(&self, id: &str) -> Result<(), CriError> {
        let answer = self
            .runtime
            .clone()
            .remove_pod_sandbox(request(
                cri::RemovePodSandboxRequest {
                    pod_sandbox_id: id.to_string(),
                },
                CALL_TIMEOUT,
            ))
            .await;
        match answer.map_err(|s| CriError::of("RemovePodSandbox", s)) {
            Err(e) if !e.not_found() => Err(e),
            _ => Ok(()),
        }
    }

    /// The containers of sandbox `sandbox`.
    pub async fn containers(&self, sandbox: &str) -> Result<Vec<cri::Container>, CriError> {
        let filter = cri::ContainerFilter {
            pod_sandbox_id: sandbox.to_string(),
            ..Default::default()
        };
        let answer = self
            .runtime
            .clone()
            .list_containers(request(
                cri::ListContainersRequest { filter: Some(filter) },
                CALL_TIMEOUT,
            ))
            .await
            .map_err(|s| CriError::of("ListContainers", s))?;
        Ok(answer.into_inner().containers)
    }

    /// A container's status.
    pub async fn container_status(&self, id: &str) -> Result<cri::ContainerStatus, CriError> {
        let answer = self
            .runtime
            .clone()
            .container_status(request(
                cri::ContainerStatusRequest {
                    container_id: id.to_string(),
                    verbose: false,
                },
                CALL_TIMEOUT,
            ))
            .await
            .map_err(|s| CriError::of("ContainerStatus", s))?;
        answer.into_inner().status.ok_or_else(|| CriError {
            call: "ContainerStatus",
            code: tonic::Code::NotFound,
            message: format!("no status for container {id}"),
        })
    }

    /// Creates a container in a sandbox; its id.
    pub async fn create_container(
        &self,
        sandbox: &str,
        config: cri::ContainerConfig,
        sandbox_config: cri::PodSandboxConfig,
    ) -> Result<String, CriError> {
        let answer = self
            .runtime
            .clone()
            .create_container(request(
                cri::CreateContainerRequest {
                    pod_sandbox_id: sandbox.to_string(),
                    config: Some(config),
                    sandbox_config: Some(sandbox_config),
                },
                CALL_TIMEOUT,
            ))
            .await
            .map_err(|s| CriError::of("CreateContainer", s))?;
        Ok(answer.into_inner().container_id)
    }

    /// Starts a created container.
    pub async fn start_container(&self, id: &str) -> Result<(), CriError> {
        self.runtime
            .clone()
            .start_container(request(
                cri::StartContainerRequest {
                    container_id: id.to_string(),
                },
                CALL_TIMEOUT,
            ))
            .await
            .map_err(|s| CriError::of("StartContainer", s))?;
        Ok(())
    }

    /// Stops a container: SIGTERM, then SIGKILL after `grace`.
    pub async fn stop_container(&self, id: &str, grace: Duration) -> Result<(), CriError> {
        let timeout = i64::try_from(grace.as_secs()).unwrap_or(i64::MAX);
        let answer = self
            .runtime
            .clone()
            .stop_container(request(
                cri::StopContainerRequest {
                    container_id: id.to_string(),
                    timeout,
                },
                CALL_TIMEOUT + grace,
            ))
            .await;
        match answer.map_err(|s| CriError::of("StopContainer", s)) {
            Err(e) if !e.not_found() => Err(e),
            _ => Ok(()),
        }
    }

    /// Removes a container (gone already counts as removed).
    pub async fn remove_container(&self, id: &str) -> Result<(), CriError> {
        let answer = self
            .runtime
            .clone()
            .remove_container(request(
                cri::RemoveContainerRequest {
                    container_id: id.to_string(),
                },
                CALL_TIMEOUT,
            ))
            .await;
        match answer.map_err(|s| CriError::of("RemoveContainer", s)) {
            Err(e) if !e.not_found() => Err(e),
            _ => Ok(()),
        }
    }

    /// Runs `command` in a running container; its exit code.
    pub async fn exec_sync(
        &self,
        id: &str,
        command: Vec<String>,
        timeout: Duration,
    ) -> Result<i32, CriError> {
        let answer = self
            .runtime
            .clone()
            .exec_sync(request(
                cri::ExecSyncRequest {
                    container_id: id.to_string(),
                    cmd: command,
                    timeout: i64::try_from(timeout.as_secs().max(1)).unwrap_or(1),
                },
                timeout + Duration::from_secs(2),
            ))
            .await
            .map_err(|s| CriError::of("ExecSync", s))?;
        Ok(answer.into_inner().exit_code)
    }

    /// What a container uses now.
    pub async fn container_stats(&self, id: &str) -> Result<Option<cri::ContainerStats>, CriError> {
        let answer = self
            .runtime
            .clone()
            .container_stats(request(
                cri::ContainerStatsRequest {
                    container_id: id.to_string(),
                },
                CALL_TIMEOUT,
            ))
            .await
            .map_err(|s| CriError::of("ContainerStats", s))?;
        Ok(answer.into_inner().stats)
    }

    /// The image the runtime holds under `reference`, if any: its id and repository digests.
    pub async fn image(&self, reference: &str) -> Result<Option<cri::Image>, CriError> {
        let answer = self
            .images
            .clone()
            .image_status(request(
                cri::ImageStatusRequest {
                    image: Some(image_spec(reference)),
                    verbose: false,
                },
                CALL_TIMEOUT,
            ))
            .await
            .map_err(|s| CriError::of("ImageStatus", s))?;
        Ok(answer.into_inner().image)
    }

    /// Pulls `reference` with `auth`; the image's id (`sha256:…`).
    pub async fn pull(
        &self,
        reference: &str,
        auth: Option<cri::AuthConfig>,
        sandbox: cri::PodSandboxConfig,
    ) -> Result<String, CriError> {
        let answer = self
            .images
            .clone()
            .pull_image(request(
                cri::PullImageRequest {
                    image: Some(image_spec(reference)),
                    auth,
                    sandbox_config: Some(sandbox),
                },
                PULL_TIMEOUT,
            ))
            .await
            .map_err(|s| CriError::of("PullImage", s))?;
        Ok(answer.into_inner().image_ref)
    }
}

impl Cri {
    /// Removes an image from the machine (gone already counts as removed).
    pub async fn remove_image(&self, reference: &str) -> Result<(), CriError> {
        let answer = self
            .images
            .clone()
            .remove_image(request(
                cri::RemoveImageRequest {
                    image: Some(image_spec(reference)),
                },
                CALL_TIMEOUT,
            ))
            .await;
        match answer.map_err(|s| CriError::of("RemoveImage", s)) {
            Err(e) if !e.not_found() => Err(e),
            _ => Ok(()),
        }
    }
}

fn image_spec(reference: &str) -> cri::ImageSpec {
    cri::ImageSpec {
        image: reference.to_string(),
        ..Default::default()
    }
}
