//! Resident memory over a process's life: samples of /proc/<pid>/smaps_rollup taken by
//! the driver while the process runs, and the figures they are summarised into (peak,
//! time-weighted mean, last, huge-page share).

use serde::{Deserialize, Serialize};

/// One reading of a process's memory, from outside it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MemorySample {
    /// When it was read, in ms since the process was released to exec.
    pub t_ms: f64,
    /// Resident set (`Rss`), bytes.
    pub rss_bytes: u64,
    /// Proportional set (`Pss`): shared pages divided among their sharers, bytes; None
    /// where only /proc/<pid>/statm could be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pss_bytes: Option<u64>,
    /// Anonymous memory in transparent huge pages (`AnonHugePages`), bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anon_huge_bytes: Option<u64>,
    /// Pages given back with MADV_FREE that the kernel has not reclaimed yet (`LazyFree`):
    /// counted in Rss though the allocator no longer holds them, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lazyfree_bytes: Option<u64>,
}

/// The figures of one process's samples.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MemorySummary {
    /// The highest Rss sampled.
    pub peak: u64,
    /// Rss averaged over time (each sample holds until the next one).
    pub mean: u64,
    /// The last Rss sampled before the process ended.
    pub last: u64,
    /// AnonHugePages averaged over time as Rss is, over the samples that read it (the
    /// full ones); None where none did.
    pub huge_mean: Option<u64>,
    /// The share of Rss in huge pages over the same samples (AnonHugePages averaged over
    /// time against Rss averaged over the samples that read it), in hundredths of a
    /// percent; None where fewer than three samples read it (a process of under 0.2 s)
    /// or the Rss they read averages 0.
    pub huge_share_bp: Option<u64>,
    /// With an idle phase after the burst: the Rss at its first sample, every buffer
    /// freed by then.
    pub freed: Option<u64>,
    /// With an idle phase: µs from its start to the first sample at which at least half
    /// of what the process grew by during the burst (from its first sample to the
    /// highest before the idle) had been given back; None where that never happened
    /// before the process ended.
    pub half_returned_us: Option<u64>,
    /// The kernel's high-water mark of the resident set (VmHWM), where the process read
    /// it (not from the samples: the peak between two samples included).
    pub hwm: Option<u64>,
}

/// The fields of smaps_rollup a sample keeps, by name.
const ROLLUP_FIELDS: [&str; 4] = ["Rss", "Pss", "AnonHugePages", "LazyFree"];

/// VmHWM from the text of /proc/<pid>/status, in bytes.
pub fn parse_vm_hwm(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// A sample at `t_ms` from the text of /proc/<pid>/smaps_rollup; None when it has no Rss
/// line (a process that has exited reads empty).
pub fn parse_rollup(text: &str, t_ms: f64) -> Option<MemorySample> {
    let mut v = [None; 4];
    for line in text.lines() {
        let Some((name, rest)) = line.split_once(':') else {
            continue;
        };
        if let Some(i) = ROLLUP_FIELDS.iter().position(|f| *f == name.trim()) {
            v[i] = rest
                .split_whitespace()
                .next()
                .and_then(|kb| kb.parse::<u64>().ok())
                .map(|kb| kb * 1024);
        }
    }
    // An exiting process whose memory is already torn down reads Rss 0: gone too.
    Some(MemorySample {
        t_ms,
        rss_bytes: v[0].filter(|&r| r > 0)?,
        pss_bytes: v[1],
        anon_huge_bytes: v[2],
        lazyfree_bytes: v[3],
    })
}

/// A sample at `t_ms` from the text of /proc/<pid>/statm (resident pages, the second
/// field) and the page size: Rss only.
pub fn parse_statm(text: &str, page: u64, t_ms: f64) -> Option<MemorySample> {
    let pages: u64 = text.split_whitespace().nth(1)?.parse().ok()?;
    if pages == 0 {
        return None;
    }
    Some(MemorySample {
        t_ms,
        rss_bytes: pages * page,
        ..MemorySample::default()
    })
}

/// The time-weighted mean of `f` over the samples that give it (each holding until the
/// next such sample; the last one counts for nothing unless it is the only one); None
/// where none gives it.
fn time_mean(samples: &[MemorySample], f: impl Fn(&MemorySample) -> Option<u64>) -> Option<u64> {
    let given: Vec<(f64, u64)> = samples
        .iter()
        .filter_map(|s| Some((s.t_ms, f(s)?)))
        .collect();
    let (first, last) = (given.first()?, given.last()?);
    let span = last.0 - first.0;
    if given.len() == 1 || span <= 0.0 {
        return Some(first.1);
    }
    let sum: f64 = given
        .windows(2)
        .map(|w| w[0].1 as f64 * (w[1].0 - w[0].0))
        .sum();
    Some((sum / span).round() as u64)
}

impl MemorySummary {
    /// The figures of `samples` (in time order); None for no samples.
    pub fn of(samples: &[MemorySample]) -> Option<Self> {
        Some(MemorySummary {
            peak: samples.iter().map(|s| s.rss_bytes).max()?,
            mean: time_mean(samples, |s| Some(s.rss_bytes))?,
            last: samples.last()?.rss_bytes,
            huge_mean: time_mean(samples, |s| s.anon_huge_bytes),
            // From three full samples on: with fewer, the first (the process's start,
            // before its buffers exist) weighs for most of its life.
            huge_share_bp: if samples
                .iter()
                .filter(|s| s.anon_huge_bytes.is_some())
                .count()
                < 3
            {
                None
            } else {
                let huge = time_mean(samples, |s| s.anon_huge_bytes);
                let rss = time_mean(samples, |s| s.anon_huge_bytes.map(|_| s.rss_bytes));
                huge.zip(rss.filter(|&r| r > 0))
                    .map(|(h, r)| (h as f64 * 1e4 / r as f64).round() as u64)
            },
            freed: None,
            half_returned_us: None,
            hwm: None,
        })
    }

    /// [`MemorySummary::of`] with an idle phase from `idle_ms` (on the samples' clock):
    /// what was resident once it began, and how long until half the burst's growth was
    /// back.
    pub fn with_idle(samples: &[MemorySample], idle_ms: f64) -> Option<Self> {
        let mut s = MemorySummary::of(samples)?;
        let burst = samples
            .iter()
            .filter(|x| x.t_ms <= idle_ms)
            .map(|x| x.rss_bytes)
            .max()?;
        let base = samples.first()?.rss_bytes;
        s.freed = samples
            .iter()
            .find(|x| x.t_ms > idle_ms)
            .map(|x| x.rss_bytes);
        let half = base + burst.saturating_sub(base) / 2;
        s.half_returned_us = samples
            .iter()
            .find(|x| x.t_ms > idle_ms && x.rss_bytes <= half)
            .map(|x| ((x.t_ms - idle_ms) * 1e3).round() as u64);
        Some(s)
    }
}

/// The samples up to `end_ms` (the end of a worker's idle phase: after it the worker
/// exits, and its memory is torn down rather than given back), at least the first.
pub fn until(samples: &[MemorySample], end_ms: f64) -> &[MemorySample] {
    let kept = samples.iter().take_while(|s| s.t_ms <= end_ms).count();
    &samples[..kept.max(1).min(samples.len())]
}

/// The most samples a process keeps: when full, every other one is dropped and the
/// interval doubles, so that a long run keeps its whole life at a coarser step.
pub const MAX_SAMPLES: usize = 2048;

/// Keeps `sample` in `samples`, halving them (every other one dropped) when they reach
/// [`MAX_SAMPLES`]; says whether they were halved (the caller doubles its interval).
pub fn keep(samples: &mut Vec<MemorySample>, sample: MemorySample) -> bool {
    samples.push(sample);
    if samples.len() < MAX_SAMPLES {
        return false;
    }
    let mut i = 0;
    samples.retain(|_| {
        i += 1;
        i % 2 == 1
    });
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(t_ms: f64, rss: u64) -> MemorySample {
        MemorySample {
            t_ms,
            rss_bytes: rss,
            anon_huge_bytes: Some(rss / 2),
            ..MemorySample::default()
        }
    }

    #[test]
    fn a_rollup_parses_into_bytes_and_an_exited_process_reads_as_none() {
        let text = "55a000000000-7ffd00000000 ---p 00000000 00:00 0  [rollup]\nRss:                1728 kB\nPss:                 900 kB\nAnonymous:           112 kB\nLazyFree:              4 kB\nAnonHugePages:      2048 kB\n";
        let x = parse_rollup(text, 3.5).unwrap();
        assert_eq!(x.rss_bytes, 1728 * 1024);
        assert_eq!(x.pss_bytes, Some(900 * 1024));
        assert_eq!(x.anon_huge_bytes, Some(2048 * 1024));
        assert_eq!(x.lazyfree_bytes, Some(4096));
        assert_eq!(x.t_ms, 3.5);
        assert_eq!(parse_rollup("", 1.0), None);
        assert_eq!(parse_rollup("Rss: 0 kB\n", 1.0), None);
        assert_eq!(parse_statm("0 0 0 0 0 0 0\n", 4096, 0.0), None);
        assert_eq!(
            parse_statm("100 25 3 1 0 20 0\n", 4096, 0.0)
                .unwrap()
                .rss_bytes,
            25 * 4096
        );
        assert_eq!(parse_statm("", 4096, 0.0), None);
    }

    #[test]
    fn the_mean_weighs_each_sample_by_how_long_it_held() {
        // 10 MiB for 9 ms, then 100 MiB for 1 ms: 19 MiB, not the samples' 55.
        let m = 1 << 20;
        let x = MemorySummary::of(&[s(0.0, 10 * m), s(9.0, 100 * m), s(10.0, 100 * m)]).unwrap();
        assert_eq!(x.mean, 19 * m);
        assert_eq!((x.peak, x.last), (100 * m, 100 * m));
        assert_eq!(x.huge_mean, Some(19 * m / 2));
        assert_eq!(MemorySummary::of(&[s(5.0, 7)]).unwrap().mean, 7);
        assert_eq!(MemorySummary::of(&[]), None);
        // Samples without huge pages read (statm's) are left out of the huge-page mean.
        let mut plain = s(1.0, 8 * m);
        plain.anon_huge_bytes = None;
        let x = MemorySummary::of(&[s(0.0, m), plain, s(3.0, 4 * m)]).unwrap();
        assert_eq!(x.huge_mean, Some(m / 2));
        // Coverage wants three samples that read huge pages; over those: half of Rss,
        // though the statm sample between them held 8 MiB.
        assert_eq!(x.huge_share_bp, None);
        let x = MemorySummary::of(&[s(0.0, m), plain, s(3.0, 4 * m), s(5.0, 4 * m)]).unwrap();
        assert_eq!(x.huge_share_bp, Some(5000));
        plain.t_ms = 0.0;
        assert_eq!(MemorySummary::of(&[plain]).unwrap().huge_mean, None);
    }

    #[test]
    fn the_idle_phase_says_when_half_the_growth_was_given_back() {
        let m = 1 << 20;
        // Starts at 1 MiB, peaks at 21 MiB (down to 8 MiB between iterations, as glibc's
        // trims go), idles from 50 ms: 15 MiB once freed, half back (≤ 11 MiB) at the
        // sample of 80 ms, 30 ms in.
        let v = [
            s(0.0, m),
            s(20.0, 21 * m),
            s(45.0, 8 * m),
            s(60.0, 15 * m),
            s(80.0, 11 * m),
            s(100.0, 2 * m),
        ];
        let x = MemorySummary::with_idle(&v, 50.0).unwrap();
        assert_eq!(x.freed, Some(15 * m));
        assert_eq!(x.half_returned_us, Some(30_000));
        assert_eq!(x.last, 2 * m);
        // Kept until the end: no time.
        let kept = [
            s(0.0, m),
            s(20.0, 21 * m),
            s(60.0, 21 * m),
            s(100.0, 20 * m),
        ];
        assert_eq!(
            MemorySummary::with_idle(&kept, 50.0)
                .unwrap()
                .half_returned_us,
            None
        );
        // No sample before the idle phase: no figures of it.
        assert_eq!(MemorySummary::with_idle(&kept[1..], 10.0), None);
    }

    #[test]
    fn the_exit_after_the_idle_is_not_memory_given_back() {
        let m = 1 << 20;
        // Kept through the idle (50 to 150 ms); the sample at 151 ms is the exit's.
        let v = [
            s(0.0, m),
            s(20.0, 28 * m),
            s(60.0, 28 * m),
            s(150.0, 28 * m),
            s(151.0, 12 * m),
        ];
        let all = MemorySummary::with_idle(&v, 50.0).unwrap();
        assert_eq!(all.half_returned_us, Some(101_000));
        let idle = MemorySummary::with_idle(until(&v, 150.5), 50.0).unwrap();
        assert_eq!((idle.half_returned_us, idle.last), (None, 28 * m));
        assert_eq!(until(&v, -1.0).len(), 1);
        assert!(until(&[], 5.0).is_empty());
    }

    #[test]
    fn a_full_timeline_halves_and_keeps_its_ends_in_order() {
        let mut v = Vec::new();
        let mut halved = 0;
        for i in 0..(3 * MAX_SAMPLES) {
            halved += keep(&mut v, s(i as f64, i as u64)) as u32;
        }
        assert!(halved >= 2);
        assert!(v.len() < MAX_SAMPLES);
        assert_eq!(v[0].t_ms, 0.0);
        assert!(v.windows(2).all(|w| w[0].t_ms < w[1].t_ms));
    }
}
