//! What the person at the terminal sees while the lab works: progress and the Ctrl-C
//! flag.

pub mod interrupt;
pub mod progress;
