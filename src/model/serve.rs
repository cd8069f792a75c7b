//! A server's measurements as plain data (`serve.json`): the user's server started under
//! each allocator, driven at fixed request rates by the lab's open-loop load, as
//! [`crate::engine::serve`] records them.

use crate::model::counts::{Rusage, SyscallCounts};
use crate::model::memory::MemorySample;
use crate::model::record::EncodedHistogram;
use serde::{Deserialize, Serialize};

/// The schema of `serve.json`.
pub const SCHEMA: &str = "alloclab.serve/1";

/// One rate's phase of one server process: the load the lab sent and what came back.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RatePhase {
    /// The rate asked for, requests per second.
    pub rate_per_s: u64,
    /// How long requests were sent, in ns.
    pub sent_for_ns: u64,
    /// Requests sent.
    pub sent: u64,
    /// Replies read (each request's reply, in order; `sent - answered` never came before
    /// the phase's drain deadline).
    pub answered: u64,
    /// Replies that were RESP errors.
    pub errors: u64,
    /// Each reply's latency from its request's intended start (i / rate after the phase
    /// began): a stall of the server delays every request due during it, as wrk2 counts.
    pub from_intended: EncodedHistogram,
    /// Each reply's latency from the moment its request was written: what a closed-loop
    /// client reports, hiding the requests a stall kept from being sent.
    pub from_sent: EncodedHistogram,
    /// The latest a request was written after its intended start, in ns (the load
    /// generator's own lag: large when the server stalled and the socket filled, or when
    /// the host preempted the sender).
    pub send_lag_max_ns: u64,
    /// The longest one write of requests took, in ns: long when the server stopped
    /// reading and the socket's buffer filled, short when the late sends were the load
    /// generator's own lateness.
    pub write_wait_max_ns: u64,
    /// The server's memory syscalls during the phase (every thread), madvise by advice;
    /// None where they could not be counted ([`RatePhase::calls_unavailable`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calls: Option<CallCounts>,
    /// Why the calls were not counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calls_unavailable: Option<String>,
    /// The server process's reading just before the phase's first request.
    pub start: ServerReading,
    /// Its reading once the phase's replies were in.
    pub end: ServerReading,
}

/// Memory syscalls in a window, madvise by advice.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallCounts {
    /// brk calls (the heap's end set: grown or trimmed; the direction is not in a count).
    pub brk: u64,
    /// mmap calls.
    pub mmap: u64,
    /// munmap calls.
    pub munmap: u64,
    /// madvise(MADV_DONTNEED): pages dropped at once, faulted in afresh when touched.
    pub madvise_dontneed: u64,
    /// madvise(MADV_FREE): pages the kernel may reclaim lazily.
    pub madvise_free: u64,
    /// madvise with any other advice.
    pub madvise_other: u64,
}

/// The server process's figures at one instant, read from /proc/<pid> and from the
/// server itself (RESP `INFO memory`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerReading {
    /// Minor page faults of the whole process so far (/proc/<pid>/stat field 10).
    pub minflt: u64,
    /// Major page faults so far (field 12).
    pub majflt: u64,
    /// User CPU time so far, ns (field 14).
    pub utime_ns: u64,
    /// Kernel CPU time so far, ns (field 15).
    pub stime_ns: u64,
    /// Resident set, bytes (/proc/<pid>/statm).
    pub rss_bytes: u64,
    /// The bytes the server says it has allocated (`used_memory` of `INFO memory`:
    /// redis and its kin count it through malloc_usable_size); None where the server
    /// does not answer INFO or gives no such field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used_memory: Option<u64>,
    /// On the samples' clock (ms since the server was released to exec).
    pub t_ms: f64,
}

/// One server process under one allocator: started, made ready, filled, driven at each
/// rate, stopped.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServerRun {
    /// 1-based round: every allocator runs one process per round, in a shuffled order.
    pub round: u32,
    /// The TCP port it listened on.
    pub port: u16,
    /// From its release to exec until it answered PING, ms.
    pub ready_ms: f64,
    /// Keys set before the first rate (the store's long-lived data).
    pub filled_keys: u64,
    /// The server's reading after the fill.
    pub after_fill: ServerReading,
    /// Each rate's phase, lowest rate first.
    pub phases: Vec<RatePhase>,
    /// How it ended after the lab asked it to stop (`SHUTDOWN NOSAVE`, then SIGTERM):
    /// the exit code, or the signal that ended it.
    pub ended: String,
    /// Whether it stopped by itself when asked (false: it had to be killed).
    pub clean_stop: bool,
    /// wait4's rusage of its whole life (start-up, fill and stop included).
    pub usage: Rusage,
    /// Its syscalls over its whole life, where they were counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub syscalls: Option<SyscallCounts>,
    /// Why no syscalls were counted, where they were not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub syscalls_unavailable: Option<String>,
    /// Its memory sampled from outside over its life, in time order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub memory: Vec<MemorySample>,
    /// Why there are no memory samples, where there are none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_unavailable: Option<String>,
}

/// Everything about one allocator's server processes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServerAllocator {
    /// The allocator spec as given.
    pub allocator: String,
    /// The preloaded library, or None (the server as it is).
    pub preload: Option<String>,
    /// Where the probe found `malloc` under this environment.
    pub malloc_from: Option<String>,
    /// The allocator library the server links itself (DT_NEEDED), where it links one:
    /// under `system` it then runs glibc's malloc through the lab's shim, and the
    /// library as shipped is measured by naming it as an allocator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_allocator: Option<String>,
    /// The allocator's version, where it was read.
    pub version: Option<String>,
    /// Why this allocator failed (its remaining processes were skipped).
    pub failure: Option<String>,
    /// The end of the server's stderr when it failed, where there was any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr_tail: Option<String>,
    /// Its processes, in round order.
    pub runs: Vec<ServerRun>,
}

/// A `serve` session.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServeRecord {
    /// The record format, [`SCHEMA`].
    pub schema: String,
    /// The server command as given, `{port}` unreplaced.
    pub command: Vec<String>,
    /// The protocol of the load (`resp`).
    pub protocol: String,
    /// The rates, requests per second, in the order they run in every process.
    pub rates_per_s: Vec<u64>,
    /// How long each rate's requests are sent, s.
    pub seconds_per_rate: f64,
    /// Connections the requests are spread over (round robin).
    pub connections: u32,
    /// The request stream's seed (the same stream for every allocator).
    pub seed: u64,
    /// Processes per allocator asked for.
    pub processes: u32,
    /// The seed of each round's shuffled order.
    pub order_seed: u64,
    /// The confidence level of the intervals.
    pub confidence: f64,
    /// The band around 1 within which a ratio is no difference.
    pub noise_threshold: f64,
    /// Whether every planned process ran (false: interrupted or cut).
    pub complete: bool,
    /// The machine and the run's conditions.
    pub environment: crate::model::environment::Environment,
    /// One entry per allocator, in the order given.
    pub allocators: Vec<ServerAllocator>,
}

impl ServeRecord {
    /// Reads `serve.json`'s text, refusing another schema.
    pub fn from_json(text: &str) -> Result<Self, String> {
        let r: ServeRecord = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if r.schema != SCHEMA {
            return Err(format!(
                "schema {:?} is not {SCHEMA:?} (written by another version of alloclab)",
                r.schema
            ));
        }
        Ok(r)
    }
}
