//! Panics on a simulation's thread, kept as findings: a node that panics has broken a promise
//! (openraft asserts its own invariants, such as that a follower's log never goes back, which a
//! lost fsync breaks), and the run stops there rather than driving a cluster with a dead task.
//! Every host of one simulation runs on its thread, so what panicked there belongs to the run.

use std::cell::RefCell;
use std::sync::Once;

thread_local! {
    static PANICS: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

static HOOK: Once = Once::new();

/// Starts recording panics on this thread (the hook, installed once, still prints them) and
/// forgets any recorded before.
pub fn record_on_this_thread() {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.with(|panics| panics.borrow_mut().push(info.to_string()));
            previous(info);
        }));
    });
    PANICS.with(|panics| panics.borrow_mut().clear());
}

/// The panics recorded on this thread since the last call.
pub fn take() -> Vec<String> {
    PANICS.with(|panics| std::mem::take(&mut *panics.borrow_mut()))
}
