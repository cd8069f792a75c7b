//! Pure functions on measured data: explanations, jumps and cliffs, tune verdicts.

pub mod answer;
pub mod calibration;
pub mod causes;
pub mod cells;
pub mod cliff;
pub mod command;
pub mod diff;
pub mod eta;
pub mod evidence;
pub mod findings;
pub mod jumps;
pub mod layout;
pub mod mechanism;
pub mod modes;
pub mod noise;
pub mod order;
pub mod pairs;
pub mod price;
pub mod python;
pub mod serve;
pub mod service;
pub mod stats;
pub mod thresholds;
pub mod trace;
pub mod tune;
