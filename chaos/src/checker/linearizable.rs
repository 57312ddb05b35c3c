//! A Wing–Gong linearizability checker with memoisation (the algorithm Porcupine uses), for one
//! key of a compare-and-set register whose versions the server assigns.
//!
//! Each operation has an invoke time and, unless its outcome is unknown, a return time. An
//! operation whose outcome is unknown (a timeout, a lost connection) may have taken effect at any
//! point after its invocation, or never: it gets no return event and may be left out.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

/// What the register holds: a value and the version the server gave it; `None` when the key
/// does not exist. A version of `None` inside means "written by an operation whose answer was
/// lost", so any version is possible until a read pins it down.
pub type Register = Option<(String, Option<u64>)>;

/// One operation on the register with its observed outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum RegisterOp {
    /// A read that returned this state (value and version), or absence.
    Read(Option<(String, u64)>),
    /// A create that succeeded with this version.
    Created {
        /// Value written.
        value: String,
        /// Version assigned.
        version: u64,
    },
    /// A create refused because the key exists.
    CreateRefused,
    /// A compare-and-set from `expected` to `value` that succeeded with `version`.
    Swapped {
        /// Version the caller expected.
        expected: u64,
        /// Value written.
        value: String,
        /// Version assigned.
        version: u64,
    },
    /// A compare-and-set refused because the version had moved on (or the key was gone).
    SwapRefused {
        /// Version the caller expected.
        expected: u64,
    },
    /// A create whose outcome is unknown.
    CreateUnknown {
        /// Value it would write.
        value: String,
    },
    /// A compare-and-set whose outcome is unknown.
    SwapUnknown {
        /// Version the caller expected.
        expected: u64,
        /// Value it would write.
        value: String,
    },
}

/// An operation with its real-time bounds (microseconds from the start of the run).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timed {
    /// Invocation time.
    pub invoked: u64,
    /// Return time; `None` when the outcome is unknown.
    pub returned: Option<u64>,
    /// The operation and its outcome.
    pub op: RegisterOp,
}

fn version_matches(known: Option<u64>, observed: u64) -> bool {
    known.is_none_or(|v| v == observed)
}

/// Applies `op` to `state`; returns the next states it could lead to (empty when the op cannot
/// be linearized at this point). Unknown operations lead to "applied" only; leaving them out is
/// handled by the search.
fn step(state: &Register, op: &RegisterOp) -> Vec<Register> {
    match op {
        RegisterOp::Read(None) => {
            if state.is_none() {
                vec![None]
            } else {
                vec![]
            }
        }
        RegisterOp::Read(Some((value, version))) => match state {
            Some((current, known)) if current == value && version_matches(*known, *version) => {
                vec![Some((value.clone(), Some(*version)))]
            }
            _ => vec![],
        },
        RegisterOp::Created { value, version } => {
            if state.is_none() {
                vec![Some((value.clone(), Some(*version)))]
            } else {
                vec![]
            }
        }
        RegisterOp::CreateRefused => {
            if state.is_some() {
                vec![state.clone()]
            } else {
                vec![]
            }
        }
        RegisterOp::Swapped {
            expected,
            value,
            version,
        } => match state {
            Some((_, known)) if version_matches(*known, *expected) => {
                vec![Some((value.clone(), Some(*version)))]
            }
            _ => vec![],
        },
        RegisterOp::SwapRefused { expected } => match state {
            None => vec![None],
            Some((_, Some(known))) if known != expected => vec![state.clone()],
            // An unknown version may or may not equal `expected`: the refusal says it did not.
            Some((_, None)) => vec![state.clone()],
            Some(_) => vec![],
        },
        RegisterOp::CreateUnknown { value } => {
            if state.is_none() {
                vec![Some((value.clone(), None))]
            } else {
                vec![state.clone()]
            }
        }
        RegisterOp::SwapUnknown { expected, value } => match state {
            Some((_, known)) if version_matches(*known, *expected) => vec![Some((value.clone(), None))],
            _ => vec![state.clone()],
        },
    }
}

/// Why a history is not linearizable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Violation {
    /// The operations that could not be ordered, as far as the search got.
    pub stuck_at: Vec<Timed>,
    /// The search stopped at [`MAX_SEARCH_STATES`] without finding an order: not a proof, but
    /// an honest history is ordered in about as many states as it has operations, and only a
    /// history that has none makes the search explore everything.
    pub gave_up: bool,
}

impl Violation {
    /// What the checker could say: proven, or no order found within the search budget.
    pub fn verdict(&self) -> String {
        if self.gave_up {
            format!("no order found in {MAX_SEARCH_STATES} search states")
        } else {
            "not linearizable".to_string()
        }
    }
}

/// Most search states [`check`] visits for one key before it gives up.
pub const MAX_SEARCH_STATES: usize = 2_000_000;

/// Checks one key's history. `Ok(())` when some order of the operations, each placed between its
/// invocation and its return, explains every observed outcome.
pub fn check(history: &[Timed]) -> Result<(), Violation> {
    // Events in time order: calls before returns at the same instant, so touching intervals
    // overlap (the conservative choice).
    #[derive(Clone, Copy)]
    enum Event {
        Call(usize),
        Return(usize),
    }
    let mut events: Vec<(u64, u8, Event)> = Vec::with_capacity(history.len() * 2);
    for (i, op) in history.iter().enumerate() {
        events.push((op.invoked, 0, Event::Call(i)));
        if let Some(returned) = op.returned {
            events.push((returned, 1, Event::Return(i)));
        }
    }
    events.sort_by_key(|(t, kind, _)| (*t, *kind));
    let events: Vec<Event> = events.into_iter().map(|(_, _, e)| e).collect();

    // Depth-first search over (position, linearized set, state) with memoisation.
    let n = history.len();
    let mut seen: HashSet<(Vec<u64>, Register)> = HashSet::new();
    let words = n.div_ceil(64);
    let mut stack: Vec<(Vec<u64>, Register)> = vec![(vec![0; words], None)];
    let is_done = |set: &Vec<u64>, i: usize| set[i / 64] & (1 << (i % 64)) != 0;
    let mut deepest: Vec<u64> = vec![0; words];
    let mut gave_up = false;
    while let Some((done, state)) = stack.pop() {
        if !seen.insert((done.clone(), state.clone())) {
            continue;
        }
        if seen.len() > MAX_SEARCH_STATES {
            gave_up = true;
            break;
        }
        if done.iter().map(|w| w.count_ones()).sum::<u32>()
            > deepest.iter().map(|w| w.count_ones()).sum::<u32>()
        {
            deepest = done.clone();
        }
        // The candidates: operations invoked before the first unlinearized completed operation
        // returned, not yet linearized.
        let mut candidates = Vec::new();
        let mut blocked = false;
        for event in &events {
            match *event {
                Event::Call(i) if !is_done(&done, i) => candidates.push(i),
                Event::Return(i) if !is_done(&done, i) => {
                    blocked = true;
                    break;
                }
                _ => {}
            }
        }
        if !blocked {
            // Every completed operation is linearized; unknown ones may be left out.
            return Ok(());
        }
        for i in candidates {
            for next in step(&state, &history[i].op) {
                let mut done = done.clone();
                done[i / 64] |= 1 << (i % 64);
                stack.push((done, next));
            }
            // An unknown operation may also never take effect: mark it done without applying.
            if history[i].returned.is_none() {
                let mut done = done.clone();
                done[i / 64] |= 1 << (i % 64);
                stack.push((done, state.clone()));
            }
        }
    }
    let stuck_at = (0..n)
        .filter(|i| !is_done(&deepest, *i))
        .map(|i| history[i].clone())
        .collect();
    Err(Violation { stuck_at, gave_up })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(invoked: u64, returned: u64, op: RegisterOp) -> Timed {
        Timed {
            invoked,
            returned: Some(returned),
            op,
        }
    }

    fn read(value: &str, version: u64) -> RegisterOp {
        RegisterOp::Read(Some((value.into(), version)))
    }

    fn swapped(expected: u64, value: &str, version: u64) -> RegisterOp {
        RegisterOp::Swapped {
            expected,
            value: value.into(),
            version,
        }
    }

    #[test]
    fn sequential_history_is_linearizable() {
        let history = vec![
            op(0, 1, RegisterOp::Read(None)),
            op(
                2,
                3,
                RegisterOp::Created {
                    value: "a".into(),
                    version: 5,
                },
            ),
            op(4, 5, read("a", 5)),
            op(6, 7, swapped(5, "b", 9)),
            op(8, 9, RegisterOp::SwapRefused { expected: 5 }),
            op(10, 11, read("b", 9)),
        ];
        assert!(check(&history).is_ok());
    }

    #[test]
    fn concurrent_operations_may_be_reordered() {
        // The read overlaps the swap and sees its result: fine.
        let history = vec![
            op(
                0,
                1,
                RegisterOp::Created {
                    value: "a".into(),
                    version: 1,
                },
            ),
            op(2, 10, swapped(1, "b", 2)),
            op(3, 4, read("b", 2)),
        ];
        assert!(check(&history).is_ok());
    }

    #[test]
    fn a_stale_read_after_a_completed_write_is_rejected() {
        // The swap to b finished before the read began, yet the read saw a: a deposed leader's
        // stale read after a partition.
        let history = vec![
            op(
                0,
                1,
                RegisterOp::Created {
                    value: "a".into(),
                    version: 1,
                },
            ),
            op(2, 3, swapped(1, "b", 2)),
            op(4, 5, read("a", 1)),
        ];
        assert!(check(&history).is_err());
    }

    #[test]
    fn a_lost_acknowledged_write_is_rejected() {
        // The create was acknowledged, but a later read finds nothing.
        let history = vec![
            op(
                0,
                1,
                RegisterOp::Created {
                    value: "a".into(),
                    version: 1,
                },
            ),
            op(2, 3, RegisterOp::Read(None)),
        ];
        assert!(check(&history).is_err());
    }

    #[test]
    fn two_swaps_from_one_version_both_succeeding_is_rejected() {
        // A double grant: both callers won the same compare-and-set.
        let history = vec![
            op(
                0,
                1,
                RegisterOp::Created {
                    value: "free".into(),
                    version: 1,
                },
            ),
            op(2, 5, swapped(1, "n1", 2)),
            op(3, 6, swapped(1, "n2", 3)),
        ];
        assert!(check(&history).is_err());
    }

    #[test]
    fn unknown_outcomes_may_or_may_not_have_happened() {
        let took_effect = vec![
            op(
                0,
                1,
                RegisterOp::Created {
                    value: "a".into(),
                    version: 1,
                },
            ),
            Timed {
                invoked: 2,
                returned: None,
                op: RegisterOp::SwapUnknown {
                    expected: 1,
                    value: "b".into(),
                },
            },
            op(10, 11, read("b", 7)),
            op(12, 13, swapped(7, "c", 8)),
        ];
        assert!(check(&took_effect).is_ok());
        let did_not = vec![
            op(
                0,
                1,
                RegisterOp::Created {
                    value: "a".into(),
                    version: 1,
                },
            ),
            Timed {
                invoked: 2,
                returned: None,
                op: RegisterOp::SwapUnknown {
                    expected: 1,
                    value: "b".into(),
                },
            },
            op(10, 11, read("a", 1)),
        ];
        assert!(check(&did_not).is_ok());
        // But it cannot take effect before it was invoked.
        let too_early = vec![
            op(
                0,
                1,
                RegisterOp::Created {
                    value: "a".into(),
                    version: 1,
                },
            ),
            op(2, 3, read("b", 7)),
            Timed {
                invoked: 5,
                returned: None,
                op: RegisterOp::SwapUnknown {
                    expected: 1,
                    value: "b".into(),
                },
            },
        ];
        assert!(check(&too_early).is_err());
    }
}
