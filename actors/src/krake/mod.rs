//! The leader's side of Krake's application hooks (`krake.md` §6.7): an application deleted
//! with the `shutdown` hook is asked to shut down (`PUT http://<its shutdown Service>/shutdown`)
//! once per grace, by [`shutdown_caller::ShutdownCaller`]; what is due is the pure
//! [`drover_model::krake::hooks_due::shutdown_calls`] of the committed state, so a new leader
//! asks again what the old one may have asked (the hook is idempotent for the application).

pub mod child;
pub mod shutdown_caller;

pub use child::KrakeHooksChild;
