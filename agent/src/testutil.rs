//! Helpers for the crate's unit tests.

use std::collections::BTreeMap;

use drover_model::cluster::agent_api::{ExecSpec, InstanceId, InstanceSpec, Resources};

/// An instance `id` running `argv` that requests 100 millicpus and 64 MiB.
pub fn spec(id: &str, argv: &[&str]) -> InstanceSpec {
    InstanceSpec {
        id: InstanceId::parse(id).unwrap(),
        exec: ExecSpec {
            argv: argv.iter().map(|a| a.to_string()).collect(),
            probe: None,
            files: Default::default(),
            pod: None,
        },
        resources: Resources {
            cpu_millis: 100,
            memory_mib: 64,
        },
        env: BTreeMap::new(),
    }
}
