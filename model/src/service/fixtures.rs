//! Test fixtures shared by the rollout and reconcile tables: an instance spec and an observed
//! instance of set `acme.web`.

use std::collections::BTreeMap;

use crate::cluster::agent_api::{
    ExecSpec, Health, InstanceId, InstanceSpec, InstanceState, InstanceStatus, Resources, SetName,
};

/// An instance `id` running `program`.
pub fn spec(id: &str, program: &str) -> InstanceSpec {
    InstanceSpec {
        id: InstanceId::parse(id).unwrap(),
        exec: ExecSpec {
            argv: vec![program.into()],
            probe: None,
            files: Default::default(),
            pod: None,
        },
        resources: Resources::default(),
        env: BTreeMap::new(),
    }
}

/// Instance `id` of set `acme.web` as an agent reports it, in `state`.
pub fn seen(id: &str, state: InstanceState) -> InstanceStatus {
    InstanceStatus {
        id: InstanceId::parse(id).unwrap(),
        set: SetName::parse("acme.web").unwrap(),
        state,
        exit_code: None,
        restarts: 0,
        started_at: None,
        health: Health::Unknown,
        pid: None,
        resources: Resources::default(),
        reason: None,
        oom_kills: 0,
        pod: None,
        usage: None,
    }
}
