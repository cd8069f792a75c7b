//! Two or more behaviours behind one figure, as data (found by
//! `crate::analysis::modes`).

use serde::{Deserialize, Serialize};

/// One group of values.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Group {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// How many values (runs or processes) fell into it.
    pub count: usize,
}

/// What a figure's values are in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Unit {
    Ns,
    Count,
    Bytes,
}

/// The behaviours of one figure (two or more groups, lowest first).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Behaviours {
    /// The figure, as a person reads it ("minor faults", "wall time").
    pub figure: String,
    pub unit: Unit,
    pub groups: Vec<Group>,
}
