//! Plain data the lab passes around: run specs and their names, allocator knobs,
//! experiments, worker records, a command's runs, counts, the environment, outcomes and
//! summary rows. Imports nothing of the lab above it.

pub mod behaviours;
pub mod budget;
pub mod command;
pub mod conditions;
pub mod counts;
pub mod environment;
pub mod evidence;
pub mod experiment;
pub mod knobs;
pub mod layout;
pub mod library;
pub mod memory;
pub mod metric;
pub mod overhead;
pub mod percentiles;
pub mod random;
pub mod record;
pub mod run;
pub mod serve;
pub mod spec;
pub mod summary;
