//! The result record of one run, as a worker prints it (one JSON object on stdout) and as
//! the driver reads it back. Field names carry their units.

use crate::model::budget::Budget;
use crate::model::counts::{HugeFaults, Rusage, SyscallCounts};
use crate::model::environment::Environment;
use crate::model::metric::{Figures, MemoryFigures, Source, SourceTotals, MINOR_FAULTS};
use crate::model::overhead::Overhead;
use crate::model::run::RunSpec;
use crate::model::spec::{Allocator, Variant, Workload};
use base64::Engine;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Lowest and highest latency the histogram tracks, in ns, and its precision.
pub const HIST_LOWEST_NS: u64 = 1;
/// Highest latency the histogram tracks, in ns (one hour); longer samples are clamped to it.
pub const HIST_HIGHEST_NS: u64 = 3_600_000_000_000;
/// Significant decimal digits the histogram keeps (a resolution of 0.1 %).
pub const HIST_SIGFIG: u8 = 3;

/// A latency histogram in nanoseconds with the lab's fixed bounds (never resizes, so
/// recording never allocates).
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(HIST_LOWEST_NS, HIST_HIGHEST_NS, HIST_SIGFIG)
        .expect("constant histogram bounds are valid")
}

/// Version of the record layout; bumped on any incompatible change.
pub const SCHEMA: &str = "alloclab.run/1";

/// Encoding of [`EncodedHistogram::data`].
pub const HISTOGRAM_ENCODING: &str = "hdrhistogram-v2-deflate-base64";

/// The latency histogram in HdrHistogram's standard compressed V2 encoding, base64 — the
/// form HdrHistogram interval logs use, readable by every HdrHistogram implementation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EncodedHistogram {
    /// The unit of the recorded values: always "ns".
    pub unit: String,
    /// How `data` is encoded: [`HISTOGRAM_ENCODING`].
    pub encoding: String,
    /// The serialized histogram, base64 (standard alphabet, padded).
    pub data: String,
}

impl EncodedHistogram {
    /// Encodes `h` in HdrHistogram's V2 format, deflate-compressed, as base64.
    pub fn encode(h: &Histogram<u64>) -> Self {
        let mut bytes = Vec::new();
        V2DeflateSerializer::new()
            .serialize(h, &mut bytes)
            .expect("serializing into a Vec cannot fail");
        EncodedHistogram {
            unit: "ns".into(),
            encoding: HISTOGRAM_ENCODING.into(),
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
        }
    }

    /// The histogram back, exactly as encoded; Err where the encoding is not
    /// [`HISTOGRAM_ENCODING`] or the data does not decode.
    pub fn decode(&self) -> Result<Histogram<u64>, String> {
        if self.encoding != HISTOGRAM_ENCODING {
            return Err(format!("unknown histogram encoding '{}'", self.encoding));
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&self.data)
            .map_err(|e| format!("histogram is not valid base64: {e}"))?;
        Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(|e| format!("histogram does not decode: {e:?}"))
    }
}

/// Totals over the measured phase (the `*_per_iter` fields are these / iterations).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    /// getrusage's differences over the phase, of the whole process (every thread), as
    /// flat fields; its `maxrss_bytes` the process's peak at the phase's end (absent in
    /// records from before it was kept).
    #[serde(flatten)]
    pub usage: Rusage,
    /// Memory-syscall counts (and all syscalls, where seen); None where they were not counted.
    pub syscalls: Option<SyscallCounts>,
    /// Allocation calls (alloc, alloc_zeroed, realloc) through [`crate::CountingAlloc`]; None
    /// where the global allocator is not wrapped in it.
    pub allocs: Option<u64>,
    /// Bytes those allocation calls asked for; None as for `allocs`.
    pub alloc_bytes: Option<u64>,
    /// The faults of the phase that mapped a transparent huge page, counted for the
    /// process alone (perf's `kmem:mm_page_alloc` of the huge page's order); None where
    /// they could not be counted (`unavailable.huge_faults` says why) and in records
    /// from before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub huge_faults: Option<HugeFaults>,
}

impl Totals {
    /// These totals by source, as the registry's entries read them (no peak RSS: the
    /// reading's is the process's so far, not the phase's).
    pub fn sources(&self) -> SourceTotals {
        SourceTotals {
            rusage: Some(self.usage),
            syscalls: self.syscalls,
            allocations: self.allocs.zip(self.alloc_bytes),
            peak_rss: None,
            memory: None,
            huge_faults: self.huge_faults,
        }
    }
}

/// The default of a record's `batch` where a record from before had none: one
/// iteration a sample.
fn one_iteration() -> u64 {
    1
}

/// One measured iteration of a run asked for its timeline (`alloclab trace`): when it
/// started on CLOCK_MONOTONIC (the clock `perf record -k mono` stamps events with), how
/// long it took, the minor faults of the process during it, and the resident set and
/// heap top (the program break, `sbrk(0)`) right after it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct IterationSample {
    /// When the iteration began, on CLOCK_MONOTONIC, in ns.
    pub start_ns: u64,
    /// How long it took, in ns.
    pub elapsed_ns: u64,
    /// Minor page faults of the whole process during it.
    pub minflt: u64,
    /// None where /proc/self/statm could not be read.
    pub rss_bytes: Option<u64>,
    /// The program break right after it (`sbrk(0)`), as an address.
    pub heap_top: u64,
}

impl IterationSample {
    /// An iteration that began at `start_ns`, took `elapsed_ns` with `faults` faults and
    /// left 1 byte resident (for tests of what is made of timelines).
    #[cfg(test)]
    pub fn sample(start_ns: u64, elapsed_ns: u64, faults: u64) -> Self {
        IterationSample {
            start_ns,
            elapsed_ns,
            minflt: faults,
            rss_bytes: Some(1),
            heap_top: 0,
        }
    }

    /// Its counts by the registry: the faults the worker read around it (the rest its
    /// timeline does not read: None).
    pub fn figures(&self) -> Figures {
        let mut f = Figures::default();
        f[MINOR_FAULTS] = Some(self.minflt as f64);
        f
    }
}

/// One run's result: what its worker measured, with the spec it ran and how it counted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The record layout, [`SCHEMA`].
    pub schema: String,
    /// The allocator the worker is linked with (`system` for an installed library).
    pub allocator: Allocator,
    /// The workload it ran.
    pub workload: Workload,
    /// How the workload treated its temporaries.
    pub variant: Variant,
    /// Elements in the input array.
    pub size: u64,
    /// Threads that ran the workload, the main thread included.
    pub threads: u32,
    /// Seed of the input data.
    pub seed: u64,
    /// Allocator knobs requested (canonical values).
    #[serde(default)]
    pub knobs: Vec<crate::model::knobs::Knob>,
    /// Each requested knob as the allocator reports it back (or why it cannot).
    #[serde(default)]
    pub knobs_effective: BTreeMap<String, String>,
    /// The THP mode the run asked for (`thp_disabled` says what the worker got).
    #[serde(default)]
    pub thp: crate::model::spec::Thp,
    /// The installed allocator library the system worker ran with preloaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub library: Option<crate::model::library::Library>,
    /// PR_GET_THP_DISABLE of the worker: whether THP was off for it.
    #[serde(default)]
    pub thp_disabled: Option<bool>,
    /// The allocator's own statistics at the end of the measured phase, in bytes
    /// (jemalloc stats.*, mimalloc process info, glibc mallinfo2).
    #[serde(default)]
    pub allocator_stats: BTreeMap<String, u64>,
    /// The measurement budget the worker ran under.
    pub budget: Budget,
    /// Measured iterations of every thread together; the `*_per_iter` figures divide by it.
    pub iterations: u64,
    /// Iterations per latency sample: 1 when each iteration is timed alone; more when
    /// an iteration is shorter than 100 clock-read pairs, each sample then being a
    /// batch's time divided by its iterations (the percentiles are of those means).
    #[serde(default = "one_iteration")]
    pub batch: u64,
    /// Latency samples in the histogram (records before batching: `iterations`).
    #[serde(default)]
    pub samples: u64,
    /// Warm-up iterations of the main thread before the measured phase.
    pub warmup_iterations: u64,
    /// Wall time of the measured loop, harness included.
    pub measured_wall_ns: u64,
    /// When the measured loop began, on the wall clock (CLOCK_REALTIME, ns since the Unix
    /// epoch), read by the worker just before its first timed iteration: the start of
    /// this process's interval in `histograms/<id>.ns.hlog`. None in records written
    /// before the lab kept it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_start_unix_ns: Option<u64>,
    /// The smallest latency sample, in ns (with `batch` above 1, a batch's time per iteration).
    pub min_ns: u64,
    /// The median latency sample, in ns (percentiles as [`crate::model::percentiles`] defines
    /// them).
    pub p50_ns: u64,
    /// The 90th percentile of the latency samples, in ns.
    pub p90_ns: u64,
    /// The 99th percentile of the latency samples, in ns.
    pub p99_ns: u64,
    /// The 99.9th percentile of the latency samples, in ns.
    pub p999_ns: u64,
    /// The largest latency sample, in ns.
    pub max_ns: u64,
    /// The mean of the latency samples, in ns.
    pub mean_ns: f64,
    /// The standard deviation of the latency samples, in ns.
    pub stdev_ns: f64,
    /// Every count of the registry per iteration ([`crate::model::metric::METRICS`]:
    /// faults, context switches, CPU time, syscalls, allocations; whole process,
    /// measured phase), null where not read, and which method counted the syscalls.
    #[serde(flatten)]
    pub per_iter: Figures,
    /// Resident set when the measured phase began and ended.
    pub rss_start_bytes: Option<u64>,
    /// Resident set when the measured phase ended, in bytes (None where it could not be read).
    pub rss_end_bytes: Option<u64>,
    /// Peak resident set of the whole process (ru_maxrss), warm-up included.
    pub rss_peak_bytes: u64,
    /// The process's memory over its life, sampled by the driver
    /// ([`crate::model::metric::MEMORY_METRICS`]: peak, mean, last, huge pages); null
    /// where it was not sampled (`unavailable.memory` says why).
    #[serde(flatten)]
    pub memory: MemoryFigures,
    /// When the idle phase after the measured one began (the buffers freed), on the wall
    /// clock in ns since the Unix epoch, where the budget asked for one (`idle_ns`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_start_unix_ns: Option<u64>,
    /// When it ended (before the worker prints its record and exits), on the same clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_end_unix_ns: Option<u64>,
    /// The allocator's own statistics at the end of the idle phase (as
    /// `allocator_stats`), where there was one.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub allocator_stats_after_idle: BTreeMap<String, u64>,
    /// With the lab's knob release_at_idle: the allocator's own statistics just before it
    /// was asked to give its free memory back (every buffer freed by then), as
    /// `allocator_stats`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub allocator_stats_before_release: BTreeMap<String, u64>,
    /// The bytes the worker still held through its global allocator at the end of the
    /// idle phase (allocated and not freed, as requested: its live data), counted by the
    /// lab's allocation wrapper; None without an idle phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live_bytes_after_idle: Option<u64>,
    /// The samples behind those figures, in time order (empty where none were taken).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub memory_timeline: Vec<crate::model::memory::MemorySample>,
    /// FNV-1a 64 of the output's bit patterns, as 16 hex digits.
    pub checksum: String,
    /// What observing cost in this worker (its fields sit at the record's top level).
    #[serde(flatten)]
    pub overhead: Overhead,
    /// The counts behind the per-iteration figures, over the measured phase.
    pub totals: Totals,
    /// Where each counter comes from.
    pub counter_sources: BTreeMap<String, String>,
    /// Counter group → why it has no value. Absent groups were measured.
    pub unavailable: BTreeMap<String, String>,
    /// Every latency sample of the measured phase, of every thread, in ns.
    pub histogram: EncodedHistogram,
    /// The machine and software the worker ran on.
    pub env: Environment,
    /// What could move this process's time against another's over its measured phase
    /// (the CPU, migrations, run delay, steal, CPU pressure, huge pages); None in
    /// records written before the lab read them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<crate::model::conditions::Conditions>,
    /// Every measured iteration of the main thread, in order, when the request asked for
    /// a timeline (each iteration then timed alone); empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timeline: Vec<IterationSample>,
    /// What the lab randomised in this process's layout (its heap shift and environment
    /// padding; [`crate::model::layout`]): with the request, what replays it. None where
    /// the layout was held fixed, and in records written before the lab drew one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<crate::model::layout::LayoutDraw>,
    /// Where the allocator put each kind of hot buffer (input, temporary, output): its
    /// addresses modulo 64 and 4096. Empty in records written before the lab noted them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub buffers: Vec<crate::model::layout::BufferAlignment>,
    /// What a service run (open loop) measured besides its latencies, which for such a
    /// run (`p50_ns` … `max_ns`, the histogram) count from each request's intended
    /// start; None for other workloads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<ServiceFigures>,
}

/// A service run's figures besides its latencies from the intended starts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServiceFigures {
    /// Requests per second the open-loop schedule offered (the run's size), all threads.
    pub offered_per_s: u64,
    /// Requests answered per second of the measured phase, all threads.
    pub served_per_s: f64,
    /// Percentiles of each request's own time, from its actual start: what a tool that
    /// waits for each answer before it sends the next reports (coordinated omission).
    pub service_p50_ns: u64,
    /// The 99th percentile of the requests' own times.
    pub service_p99_ns: u64,
    /// The 99.9th percentile of the requests' own times.
    pub service_p999_ns: u64,
    /// The longest request's own time.
    pub service_max_ns: u64,
    /// The most a request's actual start lagged its intended one.
    pub start_lag_max_ns: u64,
    /// Bytes of keys and values the store held when the measured phase began; None
    /// where the kernel does not say what it holds.
    #[serde(default)]
    pub held_start_bytes: Option<u64>,
    /// … and when it ended.
    #[serde(default)]
    pub held_end_bytes: Option<u64>,
    /// The program's live bytes (allocated through the global allocator and not yet
    /// freed, as requested) then; None where the counting wrapper is not installed.
    pub live_start_bytes: Option<u64>,
    /// … and when it ended.
    pub live_end_bytes: Option<u64>,
}

impl ServiceFigures {
    /// Resident set over live bytes at the end of the measured phase: how much memory
    /// the allocator holds per byte the program holds (1.0: none beyond it).
    pub fn resident_per_live(&self, rss_end_bytes: Option<u64>) -> Option<f64> {
        let live = self.live_end_bytes.filter(|&l| l > 0)?;
        Some(rss_end_bytes? as f64 / live as f64)
    }
}

impl RunRecord {
    /// Puts in the memory-syscall counts of a separate ptrace-traced pass of the same
    /// run (`iterations` measured iterations); everything else stays this pass's.
    pub fn set_traced_syscalls(&mut self, counts: &SyscallCounts, iterations: u64) {
        let traced = SourceTotals {
            syscalls: Some(SyscallCounts {
                all: None,
                ..*counts
            }),
            ..SourceTotals::default()
        };
        self.per_iter
            .replace_source(Source::Syscalls, &traced, iterations);
        self.totals.syscalls = Some(*counts);
        self.per_iter.syscall_counter = Some("ptrace".into());
        self.unavailable.remove("syscalls");
        self.unavailable.insert(
            "syscalls_all".into(),
            "the ptrace method stops the worker only on memory syscalls, so it does not count syscalls of other kinds".into(),
        );
        self.counter_sources.insert(
            "syscalls".into(),
            format!(
                "ptrace with a seccomp filter (only brk, mmap, munmap, madvise, mremap stop the worker), counted between the worker's phase markers in a separate traced pass of {iterations} iterations; latency and faults come from the untraced pass"
            ),
        );
    }

    /// The run this record is of, rebuilt from its fields.
    pub fn spec(&self) -> RunSpec {
        RunSpec {
            allocator: self.allocator,
            workload: self.workload,
            variant: self.variant,
            size: self.size,
            threads: self.threads,
            seed: self.seed,
            knobs: self.knobs.clone(),
            thp: self.thp,
            library: self.library.clone(),
        }
    }

    /// Parses a record and checks that it is one this version understands and that it
    /// is internally consistent.
    pub fn from_json(text: &str) -> Result<Self, String> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        match value.get("schema").and_then(|s| s.as_str()) {
            Some(SCHEMA) => {}
            Some(other) => return Err(format!("schema '{other}', expected '{SCHEMA}'")),
            None => return Err("no \"schema\" field: not an alloclab run record".into()),
        }
        let r: RunRecord =
            serde_json::from_value(value).map_err(|e| format!("malformed record: {e}"))?;
        let h = r.histogram.decode()?;
        let samples = if r.samples == 0 {
            r.iterations
        } else {
            r.samples
        };
        if h.len() != samples {
            return Err(format!(
                "histogram holds {} samples but the record says {samples} ({} iterations in batches of {})",
                h.len(),
                r.iterations,
                r.batch
            ));
        }
        Ok(r)
    }
}

/// Why a run produced no record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunFailure {
    /// One line: "killed by signal 9 (SIGKILL)", "exit code 1: …", "invalid output: …".
    pub cause: String,
}

/// One run's spec and what came of it.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The run.
    pub spec: RunSpec,
    /// Its record, or why it produced none.
    pub result: Result<RunRecord, RunFailure>,
}

/// One spec measured in several worker processes, one per round of interleaved rounds.
#[derive(Clone, Debug)]
pub struct Cell {
    /// The run every process of the cell measured.
    pub spec: RunSpec,
    /// (round, what came of that round's process), in round order.
    pub runs: Vec<(u32, Result<RunRecord, RunFailure>)>,
    /// The confidence level its intervals are made at and its verdicts ask for (the
    /// session's `--confidence`, or the one its folder was measured at).
    pub level: f64,
    /// What its memory syscalls and faults did, from one more process recorded with
    /// their arguments ([`crate::model::evidence`]), or why there is none; None where no
    /// recording was asked for (a folder from before the lab recorded it).
    pub evidence: Option<crate::model::evidence::Recorded>,
}

impl Cell {
    /// The records of the processes that produced one, with their rounds.
    pub fn records(&self) -> impl Iterator<Item = (u32, &RunRecord)> {
        self.runs
            .iter()
            .filter_map(|(round, r)| r.as_ref().ok().map(|r| (*round, r)))
    }

    /// Each process as a single-run outcome.
    pub fn outcomes(&self) -> impl Iterator<Item = Outcome> + '_ {
        self.runs.iter().map(|(_, result)| Outcome {
            spec: self.spec.clone(),
            result: result.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_keep_their_flat_fields_and_read_records_from_before_the_peak() {
        // A record's totals from before they kept the process's peak RSS.
        let old = r#"{"minflt":3874,"majflt":0,"nvcsw":1,"nivcsw":2,"utime_ns":5,"stime_ns":6,"syscalls":null,"allocs":7,"alloc_bytes":8}"#;
        let t: Totals = serde_json::from_str(old).unwrap();
        assert_eq!((t.usage.minflt, t.usage.maxrss_bytes), (3874, 0));
        assert_eq!(t.sources().allocations, Some((7, 8)));
        let v = serde_json::to_value(&t).unwrap();
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "minflt",
                "majflt",
                "nvcsw",
                "nivcsw",
                "utime_ns",
                "stime_ns",
                "maxrss_bytes",
                "syscalls",
                "allocs",
                "alloc_bytes"
            ]
        );
        // A reading without its figures is refused, not read as 0.
        assert!(serde_json::from_str::<Totals>(
            r#"{"syscalls":null,"allocs":null,"alloc_bytes":null}"#
        )
        .is_err());
    }

    #[test]
    fn histogram_round_trips_exactly() {
        let mut h = new_histogram();
        for v in [1u64, 55, 1_000, 1_234_567, 9_999_999_999] {
            h.record_n(v, v % 7 + 1).unwrap();
        }
        let back = EncodedHistogram::encode(&h).decode().unwrap();
        assert_eq!(back.len(), h.len());
        for q in [0.0, 0.25, 0.5, 0.9, 0.99, 1.0] {
            assert_eq!(back.value_at_quantile(q), h.value_at_quantile(q));
        }
        assert_eq!(back.max(), h.max());
        assert_eq!(back.min(), h.min());
    }

    #[test]
    fn foreign_json_is_rejected_with_the_reason() {
        assert!(RunRecord::from_json("nope")
            .unwrap_err()
            .contains("not JSON"));
        assert!(RunRecord::from_json("{}").unwrap_err().contains("schema"));
        let e = RunRecord::from_json(r#"{"schema":"alloclab.run/99"}"#).unwrap_err();
        assert!(e.contains("alloclab.run/99"), "{e}");
    }
}
