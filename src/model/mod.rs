//! Plain data the lab passes around: run specs and their names, allocator knobs,
//! experiments, worker records, outcomes and summary rows.

pub mod budget;
pub mod experiment;
pub mod knobs;
pub mod library;
pub mod overhead;
pub mod record;
pub mod run;
pub mod spec;
pub mod summary;
