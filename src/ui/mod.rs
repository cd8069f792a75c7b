//! What the person at the terminal sees while the lab works: progress, the Ctrl-C flag,
//! and number formatting.

pub mod fmt;
pub mod interrupt;
pub mod progress;
