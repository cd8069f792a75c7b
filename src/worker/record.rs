//! The worker's side of the run record: building it from a measurement.

use crate::counters::envinfo::Environment;
use crate::model::budget::Budget;
use crate::model::metric::Figures;
use crate::model::record::{EncodedHistogram, RunRecord, Totals, SCHEMA};
use crate::model::run::RunSpec;
use crate::worker::measure::{Measurement, Overhead};
use std::collections::BTreeMap;

impl RunRecord {
    /// Builds the record from a measurement.
    pub fn new(
        spec: &RunSpec,
        budget: Budget,
        m: &Measurement,
        overhead: Overhead,
        checksum: u64,
        env: Environment,
    ) -> Self {
        let n = m.stats.iterations;
        let h = &m.latency_ns;
        let ru = &m.rusage;
        let sc = m.syscalls.as_ref().ok();
        let allocs = m.allocs.as_ref().ok();
        let mut unavailable = BTreeMap::new();
        let mut sources = BTreeMap::new();
        sources.insert(
            "faults".to_string(),
            "getrusage(RUSAGE_SELF) deltas over the measured phase".to_string(),
        );
        for (name, what, result) in [
            (
                "syscalls",
                "perf_event_open tracepoints syscalls:sys_enter_{brk,mmap,munmap,madvise,mremap} and raw_syscalls:sys_enter, enabled only around the measured phase",
                m.syscalls.as_ref().err(),
            ),
            (
                "allocs",
                "alloclab::CountingAlloc around the global allocator (alloc, alloc_zeroed, realloc calls)",
                m.allocs.as_ref().err(),
            ),
            (
                "huge_faults",
                if m.thp_off {
                    "none: THP is off for this process (PR_SET_THP_DISABLE), so no fault of it can map a huge page"
                } else {
                    "perf tracepoint kmem:mm_page_alloc filtered on the PMD huge page's order ('order == 9 && pfn != -1' with 4 KiB pages), opened for this process and the threads it starts, enabled only around the measured phase: its own huge-page faults, no other process's"
                },
                m.huge_faults.as_ref().err(),
            ),
            ("rss_start", "/proc/self/statm", m.rss_start_bytes.as_ref().err()),
            ("rss_end", "/proc/self/statm", m.rss_end_bytes.as_ref().err()),
        ] {
            match result {
                None => {
                    sources.insert(name.to_string(), what.to_string());
                }
                Some(why) => {
                    unavailable.insert(name.to_string(), why.0.clone());
                }
            }
        }
        let totals = Totals {
            usage: *ru,
            syscalls: sc.copied(),
            allocs: allocs.map(|a| a.allocs),
            alloc_bytes: allocs.map(|a| a.bytes),
            huge_faults: m.huge_faults.as_ref().ok().copied(),
        };
        RunRecord {
            schema: SCHEMA.into(),
            allocator: spec.allocator,
            workload: spec.workload,
            variant: spec.variant,
            size: spec.size,
            threads: spec.threads,
            seed: spec.seed,
            knobs: spec.knobs.clone(),
            knobs_effective: BTreeMap::new(),
            thp: spec.thp,
            library: spec.library.clone(),
            thp_disabled: None,
            allocator_stats: BTreeMap::new(),
            budget,
            iterations: n,
            batch: m.batch,
            samples: m.stats.samples,
            warmup_iterations: m.warmup_iterations,
            measured_wall_ns: m.stats.wall_ns,
            measured_start_unix_ns: m.measured_start_unix_ns,
            min_ns: h.min(),
            // HdrHistogram's reference definition, as the percentile files have it.
            p50_ns: crate::model::percentiles::value_at(h, 50.0),
            p90_ns: crate::model::percentiles::value_at(h, 90.0),
            p99_ns: crate::model::percentiles::value_at(h, 99.0),
            p999_ns: crate::model::percentiles::value_at(h, 99.9),
            max_ns: h.max(),
            mean_ns: h.mean(),
            stdev_ns: h.stdev(),
            per_iter: Figures::per_iteration(&totals.sources(), n)
                .counted_by(sc.map(|_| "perf".to_string())),
            rss_start_bytes: m.rss_start_bytes.as_ref().ok().copied(),
            rss_end_bytes: m.rss_end_bytes.as_ref().ok().copied(),
            rss_peak_bytes: ru.maxrss_bytes,
            // Sampled from outside by the driver, which puts them in.
            memory: Default::default(),
            memory_timeline: Vec::new(),
            idle_start_unix_ns: None,
            idle_end_unix_ns: None,
            allocator_stats_after_idle: Default::default(),
            allocator_stats_before_release: Default::default(),
            live_bytes_after_idle: None,
            checksum: format!("{checksum:016x}"),
            overhead,
            totals,
            counter_sources: sources,
            unavailable,
            histogram: EncodedHistogram::encode(h),
            env,
            conditions: Some(m.conditions.clone()),
            timeline: Vec::new(),
            layout: None,
            buffers: Vec::new(),
            service: m.paced.as_ref().map(|p| {
                let s = &p.service_ns;
                crate::model::record::ServiceFigures {
                    offered_per_s: spec.size,
                    served_per_s: n as f64 * 1e9 / m.stats.wall_ns.max(1) as f64,
                    service_p50_ns: crate::model::percentiles::value_at(s, 50.0),
                    service_p99_ns: crate::model::percentiles::value_at(s, 99.0),
                    service_p999_ns: crate::model::percentiles::value_at(s, 99.9),
                    service_max_ns: s.max(),
                    start_lag_max_ns: p.start_lag_max_ns,
                    held_start_bytes: m.held_bytes.map(|h| h.0),
                    held_end_bytes: m.held_bytes.map(|h| h.1),
                    live_start_bytes: m.live_bytes.map(|l| l.0),
                    live_end_bytes: m.live_bytes.map(|l| l.1),
                }
            }),
        }
    }
}
