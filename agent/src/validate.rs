//! Checks a desired set before anything else happens: every refusal names the field to fix.
//! What an instance may run is checked by the rules the platform checks before it commits
//! anything ([`drover_model::cluster::validate`]), so the agent refuses for its spec only what
//! no platform would have sent; this module adds what only the agent knows. Malformed input is
//! a 400, an id that belongs to another set a 409, and requests beyond the agent's capacity a
//! 422 naming the first instance that does not fit.

use drover_model::cluster::agent_api::{InstanceSpec, Resources, SetName};
use drover_model::cluster::validate::check_set;

use crate::error::AgentError;
use crate::memory::Memory;

/// The environment variable the agent sets itself.
pub use drover_model::cluster::validate::INSTANCE_ID_ENV;

/// Checks that `set` may hold exactly `instances` given what `memory` holds and `capacity`, run
/// by executor `executor` (`exec` runs programs, `container` pods, `sim` pretends either).
pub fn check(
    memory: &Memory,
    set: &SetName,
    instances: &[InstanceSpec],
    capacity: Resources,
    executor: &str,
) -> Result<(), AgentError> {
    check_set(instances).map_err(|e| AgentError::BadRequest(e.to_string()))?;
    for (at, spec) in instances.iter().enumerate() {
        match (executor, spec.exec.pod.is_some()) {
            ("exec", true) => {
                return Err(AgentError::Unfit(format!(
                    "instances[{at}].exec.pod: this agent runs programs (--executor exec); a pod of container images runs on an agent started with --executor container"
                )))
            }
            ("container", false) => {
                return Err(AgentError::Unfit(format!(
                    "instances[{at}].exec.argv: this agent runs pods of container images (--executor container); a program runs on an agent started with --executor exec"
                )))
            }
            _ => {}
        }
    }
    for (at, spec) in instances.iter().enumerate() {
        if let Some(entry) = memory.instances.get(&spec.id) {
            if &entry.set != set {
                return Err(AgentError::Conflict(format!(
                    "instances[{at}].id: {} already belongs to set {}; remove it there first",
                    spec.id, entry.set
                )));
            }
        }
    }
    let mut used = memory.requested(Some(set));
    for (at, spec) in instances.iter().enumerate() {
        let next = used.plus(spec.resources);
        if !capacity.fits(next) {
            let free = capacity.minus(used);
            return Err(AgentError::Unfit(format!(
                "instances[{at}] ({}) does not fit: it requests {} millicpus and {} MiB, but only {} millicpus and {} MiB of the agent's capacity ({} millicpus, {} MiB) are free",
                spec.id,
                spec.resources.cpu_millis,
                spec.resources.memory_mib,
                free.cpu_millis,
                free.memory_mib,
                capacity.cpu_millis,
                capacity.memory_mib
            )));
        }
        used = next;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::spec;
    use drover_model::cluster::agent_api::{Fence, Probe, MAX_SET_INSTANCES};

    fn capacity() -> Resources {
        Resources {
            cpu_millis: 1000,
            memory_mib: 1024,
        }
    }

    fn refusal(instances: &[InstanceSpec]) -> (u16, String) {
        let set = SetName::parse("web").unwrap();
        let e = check(&Memory::default(), &set, instances, capacity(), "exec").unwrap_err();
        (e.status(), e.to_string())
    }

    #[test]
    fn refusals_name_the_field() {
        let mut no_argv = spec("a", &[]);
        no_argv.exec.argv.clear();
        assert_eq!(
            refusal(&[no_argv]),
            (400, "instances[0].exec.argv: must name a program".into())
        );

        let (status, text) = refusal(&[spec("a", &["x"]), spec("a", &["y"])]);
        assert_eq!(status, 400);
        assert!(text.starts_with("instances[1].id: a appears twice"), "{text}");

        for key in ["", "A=B", "A\0", INSTANCE_ID_ENV] {
            let mut bad_env = spec("a", &["x"]);
            bad_env.env.insert(key.to_string(), "v".into());
            let (status, text) = refusal(&[bad_env]);
            assert_eq!(status, 400);
            assert!(text.starts_with("instances[0].env"), "{text}");
        }

        let mut bad_probe = spec("a", &["x"]);
        bad_probe.exec.probe = Some(Probe::Http {
            port: 80,
            path: "/x\r\nHost: y".into(),
        });
        assert!(refusal(&[bad_probe])
            .1
            .starts_with("instances[0].exec.probe.http.path"));

        let too_many: Vec<InstanceSpec> = (0..=MAX_SET_INSTANCES)
            .map(|i| spec(&format!("i{i}"), &["x"]))
            .collect();
        assert!(refusal(&too_many).1.starts_with("instances: "));
    }

    /// Defence in depth: the platform refuses these before it commits anything, and the agent
    /// still refuses them from any caller, by the same rules and with the same words.
    #[test]
    fn the_agent_still_refuses_what_the_platform_refuses() {
        let mut reserved = spec("b", &["x"]);
        reserved.env.insert(INSTANCE_ID_ENV.into(), "x".into());
        assert_eq!(
            refusal(&[spec("a", &["x"]), reserved]),
            (
                400,
                "instances[1].env: DROVER_INSTANCE_ID is set by the agent".into()
            )
        );
        let mut port_zero = spec("a", &["x"]);
        port_zero.exec.probe = Some(Probe::Tcp { port: 0 });
        assert_eq!(
            refusal(&[port_zero]),
            (400, "instances[0].exec.probe.tcp.port: must not be 0".into())
        );
        let mut http_zero = spec("a", &["x"]);
        http_zero.exec.probe = Some(Probe::Http {
            port: 0,
            path: "/".into(),
        });
        assert_eq!(
            refusal(&[http_zero]).1,
            "instances[0].exec.probe.http.port: must not be 0"
        );
        let mut huge = spec("a", &["x"]);
        huge.env.insert("BIG".into(), "x".repeat(64 * 1024));
        let (status, text) = refusal(&[huge]);
        assert_eq!(status, 400);
        assert!(text.starts_with("instances[0].exec: argv and env hold"), "{text}");
        // The platform's message for the same spec, field for field.
        let mut role = spec("a", &["x"]);
        role.env.insert(INSTANCE_ID_ENV.into(), "x".into());
        let platform = drover_model::platform::validate_program("roles.web.", &role.exec, &role.env)
            .unwrap_err()
            .to_string();
        assert_eq!(platform, "roles.web.env: DROVER_INSTANCE_ID is set by the agent");
    }

    #[test]
    fn capacity_names_the_instance_that_does_not_fit() {
        let instances: Vec<InstanceSpec> = (0..11).map(|i| spec(&format!("i{i}"), &["x"])).collect();
        let (status, text) = refusal(&instances);
        assert_eq!(status, 422);
        assert!(text.starts_with("instances[10] (i10) does not fit"), "{text}");
    }

    #[test]
    fn an_id_of_another_set_conflicts() {
        let mut memory = Memory::default();
        let other = SetName::parse("other").unwrap();
        memory.apply(&memory.plan(&other, Fence::default(), vec![spec("a", &["x"])]));
        let set = SetName::parse("web").unwrap();
        let e = check(&memory, &set, &[spec("a", &["x"])], capacity(), "exec").unwrap_err();
        assert_eq!(e.status(), 409);
        assert!(e.to_string().contains("already belongs to set other"), "{e}");
        // Its own set may resend it; the other set's requests count against capacity.
        assert!(check(&memory, &other, &[spec("a", &["x"])], capacity(), "exec").is_ok());
        let nine: Vec<InstanceSpec> = (0..9).map(|i| spec(&format!("w{i}"), &["x"])).collect();
        assert!(check(&memory, &set, &nine, capacity(), "exec").is_ok());
        let ten: Vec<InstanceSpec> = (0..10).map(|i| spec(&format!("w{i}"), &["x"])).collect();
        assert_eq!(
            check(&memory, &set, &ten, capacity(), "exec")
                .unwrap_err()
                .status(),
            422
        );
    }

    #[test]
    fn each_executor_takes_only_what_it_runs() {
        use drover_model::cluster::pod::{ContainerSpec, PodSpec};
        let set = SetName::parse("web").unwrap();
        let program = spec("a", &["x"]);
        let mut pod = spec("b", &["x"]);
        pod.exec.argv.clear();
        pod.exec.pod = Some(PodSpec::of(vec![ContainerSpec::new(
            "web",
            "127.0.0.1:5000/web:v1",
        )]));
        let memory = Memory::default();
        let refused = |instances: &[InstanceSpec], executor| {
            check(&memory, &set, instances, capacity(), executor)
                .err()
                .map(|e| (e.status(), e.to_string()))
        };
        let (status, text) = refused(std::slice::from_ref(&pod), "exec").unwrap();
        assert_eq!(status, 422);
        assert!(
            text.starts_with("instances[0].exec.pod:") && text.contains("--executor container"),
            "{text}"
        );
        let (status, text) = refused(&[pod.clone(), program.clone()], "container").unwrap();
        assert_eq!(status, 422);
        assert!(text.starts_with("instances[1].exec.argv:"), "{text}");
        assert_eq!(refused(&[pod, program], "sim"), None);
    }
}
