//! A run: everything that identifies one worker process's measurement.

use crate::model::budget::Budget;
use crate::model::counts::CounterMode;
use crate::model::knobs::{AllocatorSpec, Knob};
use crate::model::library::Library;
use crate::model::spec::{Allocator, Thp, Variant, Workload};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Everything that identifies one run; one run is one worker process.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunSpec {
    /// The allocator whose worker binary runs it (`system` for an installed library).
    pub allocator: Allocator,
    /// The workload the worker runs.
    pub workload: Workload,
    /// How the workload treats its temporaries.
    pub variant: Variant,
    /// Elements in the input array.
    pub size: u64,
    /// Threads running the workload (the main thread is always one of them).
    pub threads: u32,
    /// Seed of the input data.
    pub seed: u64,
    /// Allocator knobs (canonical, sorted by name); empty for the allocator's defaults.
    #[serde(default)]
    pub knobs: Vec<Knob>,
    /// Transparent huge pages for the worker (default: as the system sets them).
    #[serde(default)]
    pub thp: Thp,
    /// An installed allocator library the system worker runs with preloaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub library: Option<Library>,
}

impl RunSpec {
    /// The allocator with its knobs, as users write it: `jemalloc:dirty_decay_ms=-1`.
    pub fn allocator_spec(&self) -> AllocatorSpec {
        AllocatorSpec {
            allocator: self.allocator,
            knobs: self.knobs.clone(),
            library: self.library.clone(),
        }
    }

    /// The allocator label of reports: its spec, plus `thp=never` when THP is off and
    /// `thp=advise` when the workload asks for huge pages.
    pub fn allocator_label(&self) -> String {
        match self.thp {
            Thp::System => self.allocator_spec().to_string(),
            Thp::Never => format!("{} thp=never", self.allocator_spec()),
            Thp::Advise => format!("{} thp=advise", self.allocator_spec()),
        }
    }
}

impl fmt::Display for RunSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {} size={}",
            self.allocator_label(),
            self.workload,
            self.variant,
            self.size
        )?;
        if self.threads != 1 {
            write!(f, " threads={}", self.threads)?;
        }
        Ok(())
    }
}

/// What the lab asks of a worker process, serialized as one JSON argument
/// (`alloclab-<allocator> --request '{…}'`): the run, its budget and how syscalls are
/// counted. The worker's flags say the same for a person at a shell.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkerRequest {
    /// The run to measure.
    pub spec: RunSpec,
    /// How long to measure it.
    pub budget: Budget,
    /// How to count its syscalls.
    pub counters: CounterMode,
    /// Record every measured iteration of the main thread ([`IterationSample`]): each
    /// timed alone, at most `budget.max_iters` of them.
    ///
    /// [`IterationSample`]: crate::model::record::IterationSample
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub timeline: bool,
    /// The CPU the worker keeps every thread on (sched_setaffinity before it prepares
    /// anything), where one was asked for (`--cpu`); None lets the kernel place it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<u32>,
    /// This process's layout draw: the heap shift it makes before anything of the
    /// workload, and the environment padding the lab gave it; None holds the layout
    /// fixed ([`crate::model::layout`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<crate::model::layout::LayoutDraw>,
    /// The service workload's injected stall, for tests of its corrected latency only;
    /// no command of the lab sends one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stall: Option<Stall>,
}

/// An injected stall: every `every`-th request of each thread of the service workload
/// sleeps `ns` inside its handling, as a server held up by something does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stall {
    /// Every how many requests of a thread one stalls.
    pub every: u64,
    /// How long it stalls, in ns.
    pub ns: u64,
}
