//! Checks a desired set before anything else happens: every refusal names the field to fix.
//! Malformed input is a 400, an id that belongs to another set a 409, and requests beyond the
//! agent's capacity a 422 naming the first instance that does not fit.

use std::collections::BTreeSet;

use drover_model::cluster::agent_api::{InstanceSpec, Probe, Resources, SetName, MAX_SET_INSTANCES};

use crate::error::AgentError;
use crate::memory::Memory;

/// The environment variable the agent sets itself.
pub const INSTANCE_ID_ENV: &str = "DROVER_INSTANCE_ID";

/// Longest argv or environment entry accepted, in bytes.
const MAX_ARG_LEN: usize = 128 * 1024;

fn bad(field: String, reason: impl std::fmt::Display) -> AgentError {
    AgentError::BadRequest(format!("{field}: {reason}"))
}

/// Checks the shape of one instance; `at` is its index in the request.
fn check_instance(at: usize, spec: &InstanceSpec) -> Result<(), AgentError> {
    let field = |name: &str| format!("instances[{at}].{name}");
    if spec.exec.argv.is_empty() {
        return Err(bad(field("exec.argv"), "must name a program"));
    }
    if spec.exec.argv[0].is_empty() {
        return Err(bad(field("exec.argv[0]"), "the program must not be empty"));
    }
    for (i, arg) in spec.exec.argv.iter().enumerate() {
        if arg.contains('\0') {
            return Err(bad(field(&format!("exec.argv[{i}]")), "must not hold a NUL byte"));
        }
        if arg.len() > MAX_ARG_LEN {
            return Err(bad(field(&format!("exec.argv[{i}]")), "is too long"));
        }
    }
    for (key, value) in &spec.env {
        if key.is_empty() || key.contains('=') || key.contains('\0') {
            return Err(bad(
                field("env"),
                format!("{key:?} is not a variable name: it must be non-empty, without '=' or NUL"),
            ));
        }
        if key == INSTANCE_ID_ENV {
            return Err(bad(
                field("env"),
                format!("{INSTANCE_ID_ENV} is set by the agent"),
            ));
        }
        if value.contains('\0') || value.len() > MAX_ARG_LEN {
            return Err(bad(
                field(&format!("env.{key}")),
                "must not hold a NUL byte or be longer than 128 KiB",
            ));
        }
    }
    match &spec.exec.probe {
        Some(Probe::Http { port, path }) => {
            if *port == 0 {
                return Err(bad(field("exec.probe.port"), "must not be 0"));
            }
            if !path.starts_with('/')
                || path.len() > 2048
                || path.chars().any(|c| c.is_ascii_whitespace() || c.is_control())
            {
                return Err(bad(
                    field("exec.probe.path"),
                    "must start with '/' and hold no spaces or control characters",
                ));
            }
        }
        Some(Probe::Tcp { port }) if *port == 0 => {
            return Err(bad(field("exec.probe.port"), "must not be 0"));
        }
        _ => {}
    }
    Ok(())
}

/// Checks that `set` may hold exactly `instances` given what `memory` holds and `capacity`.
pub fn check(
    memory: &Memory,
    set: &SetName,
    instances: &[InstanceSpec],
    capacity: Resources,
) -> Result<(), AgentError> {
    if instances.len() > MAX_SET_INSTANCES {
        return Err(bad(
            "instances".to_string(),
            format!(
                "{} instances, but a set holds at most {MAX_SET_INSTANCES}",
                instances.len()
            ),
        ));
    }
    let mut seen = BTreeSet::new();
    for (at, spec) in instances.iter().enumerate() {
        if !seen.insert(&spec.id) {
            return Err(bad(
                format!("instances[{at}].id"),
                format!("{} appears twice", spec.id),
            ));
        }
        check_instance(at, spec)?;
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
    use drover_model::cluster::agent_api::Fence;

    fn capacity() -> Resources {
        Resources {
            cpu_millis: 1000,
            memory_mib: 1024,
        }
    }

    fn refusal(instances: &[InstanceSpec]) -> (u16, String) {
        let set = SetName::parse("web").unwrap();
        let e = check(&Memory::default(), &set, instances, capacity()).unwrap_err();
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
            .starts_with("instances[0].exec.probe.path"));

        let too_many: Vec<InstanceSpec> = (0..=MAX_SET_INSTANCES)
            .map(|i| spec(&format!("i{i}"), &["x"]))
            .collect();
        assert!(refusal(&too_many).1.starts_with("instances: "));
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
        let e = check(&memory, &set, &[spec("a", &["x"])], capacity()).unwrap_err();
        assert_eq!(e.status(), 409);
        assert!(e.to_string().contains("already belongs to set other"), "{e}");
        // Its own set may resend it; the other set's requests count against capacity.
        assert!(check(&memory, &other, &[spec("a", &["x"])], capacity()).is_ok());
        let nine: Vec<InstanceSpec> = (0..9).map(|i| spec(&format!("w{i}"), &["x"])).collect();
        assert!(check(&memory, &set, &nine, capacity()).is_ok());
        let ten: Vec<InstanceSpec> = (0..10).map(|i| spec(&format!("w{i}"), &["x"])).collect();
        assert_eq!(check(&memory, &set, &ten, capacity()).unwrap_err().status(), 422);
    }
}
