//! Kumori bundles and modules as the marketplace takes them: a zip archive read as hostile
//! input ([`archive`]), a module's manifest in the data subset of CUE that Drover reads
//! ([`module`]), and the npm package a module is published as ([`package`]).

pub mod archive;
pub mod module;
pub mod package;
