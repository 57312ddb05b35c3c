//! Kumori bundles and modules as the marketplace takes them: a zip archive read as hostile
//! input ([`archive`]), a module's manifest in the data subset of CUE that Drover reads
//! ([`module`]) with a component's container images ([`code`]), the npm package a module is published as ([`package`]) and read back
//! ([`tarball`]), and a service deployed from modules ([`deploy`]).

pub mod archive;
pub mod code;
pub mod deploy;
pub mod module;
pub mod package;
pub mod tarball;
