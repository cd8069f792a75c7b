//! What an allocator's memory syscalls and page faults *did* in one recorded run, not
//! only how many there were: how often brk grew or shrank the heap and by how much,
//! mmap and munmap with their bytes and whether a block was unmapped again, madvise by
//! its advice, and, where the faults' addresses were recorded, which faults landed on
//! memory given back before (by a trim, an unmap or a purge) and which were first
//! touches. The mechanisms ([`crate::analysis::mechanism`]) are rules over it.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A memory syscall as a recorder saw it (the ptrace tracer, or perf's tracepoints).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Call {
    /// CLOCK_MONOTONIC when it was entered.
    pub time_ns: u64,
    /// The process whose address space it acted on.
    pub pid: u32,
    /// Which syscall.
    pub kind: CallKind,
    /// brk: the break asked for (0 asks for the current one); mmap: the hint; munmap,
    /// madvise, mremap: the (old) address.
    pub addr: u64,
    /// mmap, munmap, madvise: the length; mremap: the new length; a fork: the new
    /// process; brk: 0.
    pub len: u64,
    /// madvise: the advice; mmap: its flags (MAP_ANONYMOUS, …); mremap: the old length.
    pub advice: u64,
    /// What it returned, where recorded: brk's break, mmap's and mremap's address.
    pub ret: Option<u64>,
}

/// The memory syscalls the recorder keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CallKind {
    /// Moves the heap's end.
    Brk,
    /// Maps memory.
    Mmap,
    /// Unmaps memory.
    Munmap,
    /// Advises the kernel about a range (some advice drops its pages).
    Madvise,
    /// Resizes or moves a mapping.
    Mremap,
    /// Not a memory syscall: the process exec'd, and its address space is new.
    Exec,
    /// Not a memory syscall: the process started another (`len`: its pid), whose
    /// address space starts as a copy of this one.
    Fork,
}

/// A page fault with its address, as the recorder saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultAt {
    /// CLOCK_MONOTONIC when it was taken.
    pub time_ns: u64,
    /// The process it was taken in.
    pub pid: u32,
    /// The address that faulted.
    pub addr: u64,
}

/// Calls of one kind and the bytes they moved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Moved {
    /// How many calls.
    pub calls: u64,
    /// The bytes they asked for, together.
    pub bytes: u64,
    /// The fewest bytes one call asked for (0 without calls).
    #[serde(default)]
    pub least: u64,
    /// The most bytes one call asked for.
    #[serde(default)]
    pub most: u64,
}

impl Moved {
    /// One more call of `bytes`.
    pub fn add(&mut self, bytes: u64) {
        self.least = if self.calls == 0 {
            bytes
        } else {
            self.least.min(bytes)
        };
        self.most = self.most.max(bytes);
        self.calls += 1;
        self.bytes += bytes;
    }

    /// Both together.
    pub fn plus(self, other: Moved) -> Moved {
        let least = match (self.calls, other.calls) {
            (0, _) => other.least,
            (_, 0) => self.least,
            _ => self.least.min(other.least),
        };
        Moved {
            calls: self.calls + other.calls,
            bytes: self.bytes + other.bytes,
            least,
            most: self.most.max(other.most),
        }
    }
}

/// What brk did: grew the heap, shrank it (a trim), or only asked where it ends.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BrkMoves {
    /// Calls that moved the break up, and by how much together.
    pub grew: Moved,
    /// Calls that moved it down (trims), and by how much together.
    pub shrank: Moved,
    /// Calls that moved nothing (brk(0) asks for the break) or failed.
    pub still: u64,
    /// Of the calls that grew it, those that grew it over a range a trim had given back.
    #[serde(default)]
    pub regrew: u64,
    /// Of the growth, the bytes that lie where a trim had given the heap back before:
    /// the heap grown again over its own trimmed top.
    pub regrown_bytes: u64,
}

/// How the memory a fault landed on had been given back before, if it had.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GivenBack {
    /// brk shrank the heap over it.
    Trim,
    /// munmap (or mremap) unmapped it.
    Unmap,
    /// madvise with a releasing advice (DONTNEED, REMOVE, …) dropped its page.
    Purge,
    /// madvise(FREE) let the kernel take its page when it needs memory (and it did: a
    /// fault found the page gone).
    Free,
}

/// The faults of the window by what had happened to their page before.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FaultSplit {
    /// Faults on pages never given back since the process began: first touches.
    pub first_touch: u64,
    /// Faults on pages a trim had given back.
    pub after_trim: u64,
    /// Faults on pages an unmap had given back.
    pub after_unmap: u64,
    /// Faults on pages a purge (a releasing madvise) had given back.
    pub after_purge: u64,
    /// Faults on pages madvise(FREE) had marked free and the kernel had taken.
    #[serde(default)]
    pub after_free: u64,
    /// Faults the recorder lost (a full buffer) over the whole run: the split is short
    /// by up to this many.
    pub lost: u64,
    /// Only user-mode faults were sampled (this user may not sample the kernel's faults
    /// on user memory).
    pub user_mode_only: bool,
}

impl FaultSplit {
    /// Every fault of the split.
    pub fn total(&self) -> u64 {
        self.first_touch + self.given_back()
    }

    /// The faults on memory given back before, however.
    pub fn given_back(&self) -> u64 {
        self.after_trim + self.after_unmap + self.after_purge + self.after_free
    }

    /// The faults on memory given back by `how`.
    pub fn after(&self, how: GivenBack) -> u64 {
        match how {
            GivenBack::Trim => self.after_trim,
            GivenBack::Unmap => self.after_unmap,
            GivenBack::Purge => self.after_purge,
            GivenBack::Free => self.after_free,
        }
    }
}

/// What the figures of an [`Evidence`] are per.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Per {
    /// A worker's measured iteration.
    #[default]
    Iteration,
    /// A whole run of a command.
    Run,
}

impl Per {
    /// "iteration" or "run".
    pub fn word(self) -> &'static str {
        match self {
            Per::Iteration => "iteration",
            Per::Run => "run",
        }
    }
}

/// One recorded run's evidence: totals over its window (a worker's measured phase, a
/// command's whole run) and how many units that window holds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// What its figures are per.
    pub per: Per,
    /// Iterations in the window (1 for a run).
    pub units: f64,
    /// Who recorded the calls: "ptrace" or "perf".
    pub calls_from: String,
    /// What brk did.
    pub brk: BrkMoves,
    /// mmap calls and the bytes they mapped.
    pub mmap: Moved,
    /// munmap calls and the bytes they unmapped.
    pub munmap: Moved,
    /// munmap of an anonymous block mapped by an mmap of the same run, whole (the same
    /// address and length; by the length alone where mmap's address was not recorded).
    pub unmapped_again: Moved,
    /// Of a command's run: what munmap and releasing madvise gave back after its last
    /// page fault (nothing touched it again before the end: a release at exit).
    #[serde(default)]
    pub released_after_last_fault: Moved,
    /// madvise by advice ("dontneed", "free", "hugepage", "dontdump", …).
    pub madvise: BTreeMap<String, Moved>,
    /// mremap calls and their new lengths.
    pub mremap: Moved,
    /// The faults split by what happened to their page before; None where the faults'
    /// addresses were not recorded (`faults_unrecorded` says why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub faults: Option<FaultSplit>,
    /// Why the faults' addresses were not recorded, where they were not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub faults_unrecorded: Option<String>,
}

/// A side's evidence as results keep it: what its recorded run showed, or why there is
/// none (the recording failed, or was not made).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Recorded {
    /// What the recorded run showed.
    Recorded(Box<Evidence>),
    /// Why there is no recording.
    Unrecorded(String),
}

impl Recorded {
    /// The evidence, or why there is none.
    pub fn get(&self) -> Result<&Evidence, &str> {
        match self {
            Recorded::Recorded(e) => Ok(e),
            Recorded::Unrecorded(why) => Err(why),
        }
    }
}

impl From<Result<Evidence, String>> for Recorded {
    fn from(r: Result<Evidence, String>) -> Self {
        match r {
            Ok(e) => Recorded::Recorded(Box::new(e)),
            Err(why) => Recorded::Unrecorded(why),
        }
    }
}

/// madvise's advice by name, and whether it gives pages back (their contents are
/// dropped, and the next touch faults a fresh page in).
pub fn advice_name(advice: u64) -> (&'static str, bool) {
    match advice {
        0 => ("normal", false),
        1 => ("random", false),
        2 => ("sequential", false),
        3 => ("willneed", false),
        4 => ("dontneed", true),
        // Marks the pages free: the kernel takes them only when it needs memory.
        8 => ("free", false),
        9 => ("remove", true),
        10 => ("dontfork", false),
        11 => ("dofork", false),
        12 => ("mergeable", false),
        13 => ("unmergeable", false),
        14 => ("hugepage", false),
        15 => ("nohugepage", false),
        16 => ("dontdump", false),
        17 => ("dodump", false),
        18 => ("wipeonfork", false),
        19 => ("keeponfork", false),
        20 => ("cold", false),
        21 => ("pageout", true),
        22 => ("populate_read", false),
        23 => ("populate_write", false),
        24 => ("dontneed_locked", true),
        25 => ("collapse", false),
        _ => ("other", false),
    }
}

/// Whether the advice named `name` gives pages back at once (FREE does not: the kernel
/// takes them only when it needs memory).
pub fn releases(name: &str) -> bool {
    matches!(name, "dontneed" | "remove" | "pageout" | "dontneed_locked")
}

impl Evidence {
    /// A figure per unit.
    pub fn per_unit(&self, total: u64) -> f64 {
        total as f64 / self.units.max(1e-9)
    }

    /// madvise calls and bytes with a releasing advice.
    pub fn purged(&self) -> Moved {
        self.madvise
            .iter()
            .filter(|(k, _)| releases(k))
            .fold(Moved::default(), |a, (_, m)| a.plus(*m))
    }

    /// madvise(FREE) calls: pages marked free for the kernel to take when it needs memory.
    pub fn freed(&self) -> Moved {
        self.madvise.get("free").copied().unwrap_or_default()
    }

    /// madvise calls with an advice that gives nothing back (huge pages, dumps, …).
    pub fn advised(&self) -> Moved {
        self.madvise
            .iter()
            .filter(|(k, _)| !releases(k) && *k != "free")
            .fold(Moved::default(), |a, (_, m)| a.plus(*m))
    }

    /// The memory-syscall counts it recorded, as the counters count them.
    pub fn counts(&self) -> crate::model::counts::SyscallCounts {
        crate::model::counts::SyscallCounts {
            brk: self.brk.grew.calls + self.brk.shrank.calls + self.brk.still,
            mmap: self.mmap.calls,
            munmap: self.munmap.calls,
            madvise: self.madvise.values().map(|m| m.calls).sum(),
            mremap: self.mremap.calls,
            all: None,
        }
    }
}
