//! Whether a cluster actor may drive the agent that answers at its endpoint, as a pure function
//! of who the agent says it is and which registered cluster holds the cluster object it is
//! bound to. One agent is driven by one cluster object: an agent registered twice (under
//! `127.0.0.1` and under `localhost`, say) is driven by the cluster object it bound itself to
//! first, and the other is `NOTREADY`, saying why, and never sends it anything.

use drover_model::cluster::identity::AgentIdentity;
use drover_model::cluster::ClusterRef;
use drover_model::platform::OPERATOR_TENANT;

/// What a cluster actor does with the agent that answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ownership {
    /// Drive it: it is bound to this cluster object, or to none yet (the first change binds it),
    /// or it keeps no identity.
    Drive,
    /// Take it over from cluster object `from`, which it is bound to and which is registered
    /// no more (deregistered, or registered again under a new uid), then drive it.
    TakeOver {
        /// The uid of the cluster object it is bound to.
        from: String,
    },
    /// Send it nothing: another registered cluster drives it.
    Refuse {
        /// Why, for the cluster's state.
        reason: String,
    },
}

/// Whether cluster `me` (registered with `my_uid`) may drive the agent that reported
/// `identity`; `holder` is the registered cluster whose uid the agent says it is bound to, if
/// it is bound to one that is registered. The holder is named only when the caller may see it
/// (a cluster of the same tenant, or a platform-wide one): a reason is shown to `me`'s tenant.
pub fn ownership(
    me: &ClusterRef,
    my_uid: &str,
    identity: Option<&AgentIdentity>,
    holder: Option<&ClusterRef>,
) -> Ownership {
    let Some(identity) = identity else {
        return Ownership::Drive;
    };
    let Some(bound) = identity.cluster_uid.as_deref() else {
        return Ownership::Drive;
    };
    if bound == my_uid {
        return Ownership::Drive;
    }
    match holder {
        None => Ownership::TakeOver {
            from: bound.to_string(),
        },
        Some(holder) => {
            let named = if holder.tenant == me.tenant || holder.tenant == OPERATOR_TENANT {
                format!("cluster {holder}")
            } else {
                "a cluster of another tenant".to_string()
            };
            Ownership::Refuse {
                reason: format!(
                    "agent {} is already driven by {named}: one agent is driven by one cluster",
                    identity.agent_id
                ),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use drover_model::cluster::identity::AgentId;

    fn at(tenant: &str, name: &str) -> ClusterRef {
        ClusterRef {
            tenant: tenant.into(),
            name: name.into(),
        }
    }

    fn agent(bound: Option<&str>) -> AgentIdentity {
        AgentIdentity {
            agent_id: AgentId::from_random_bytes([3; 16]),
            cluster_uid: bound.map(str::to_string),
        }
    }

    #[test]
    fn who_drives_an_agent() {
        let me = at("acme", "edge-alias");
        let edge = at("acme", "edge");
        let shared = at(OPERATOR_TENANT, "shared");
        let theirs = at("globex", "edge");
        let drive = || Ownership::Drive;
        let take = |from: &str| Ownership::TakeOver { from: from.into() };
        let refused = |named: &str| Ownership::Refuse {
            reason: format!(
                "agent {} is already driven by {named}: one agent is driven by one cluster",
                agent(None).agent_id
            ),
        };
        let table = [
            // (identity, holder, expected)
            // An agent (or another kind of cluster) without an identity cannot be checked.
            (None, None, drive()),
            // Not bound yet: the first change binds it.
            (Some(agent(None)), None, drive()),
            (Some(agent(Some("uid-me"))), None, drive()),
            // Bound to a cluster object that is registered no more: taken over.
            (Some(agent(Some("uid-gone"))), None, take("uid-gone")),
            // Bound to another registered cluster: refused, naming it when it may be seen.
            (
                Some(agent(Some("uid-edge"))),
                Some(&edge),
                refused("cluster acme/edge"),
            ),
            (
                Some(agent(Some("uid-shared"))),
                Some(&shared),
                refused("cluster operator/shared"),
            ),
            (
                Some(agent(Some("uid-globex"))),
                Some(&theirs),
                refused("a cluster of another tenant"),
            ),
        ];
        for (identity, holder, expected) in table {
            let got = ownership(&me, "uid-me", identity.as_ref(), holder);
            assert_eq!(got, expected, "{identity:?} held by {holder:?}");
        }
    }
}
