//! Two or more behaviours behind one figure, as data (found by
//! `crate::analysis::modes`).

use serde::{Deserialize, Serialize};

/// One group of values.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Group {
    /// The median of the group's values, in the figure's unit.
    pub median: f64,
    /// The group's lowest value.
    pub min: f64,
    /// The group's highest value.
    pub max: f64,
    /// How many values (runs or processes) fell into it.
    pub count: usize,
}

/// What a figure's values are in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Unit {
    /// Nanoseconds (a time).
    Ns,
    /// A plain count (faults, syscalls, …).
    Count,
    /// Bytes of memory (a peak resident set, say).
    Bytes,
}

/// The behaviours of one figure (two or more groups, lowest first).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Behaviours {
    /// The figure, as a person reads it ("minor faults", "wall time").
    pub figure: String,
    /// What the figure's values are in, for formatting them.
    pub unit: Unit,
    /// The groups, lowest first (two or more).
    pub groups: Vec<Group>,
}
