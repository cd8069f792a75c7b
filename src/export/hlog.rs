//! HdrHistogram interval logs (`.hlog`), the format HdrHistogram's HistogramLogProcessor
//! and the Java, Rust and Python HdrHistogram log readers read, merge and re-slice by
//! time: one log per cell (or per allocator of `exec` and `sweep`), one interval per
//! worker process (or run) — its own histogram, compressed V2 in base64, placed at the
//! real time it began and as long as it lasted.
//!
//! ```text
//!     #[alloclab interval log: latency per iteration of cell scale-in-place-system-n2000-t1, ...]
//!     #[Values in nanoseconds, Interval_Max too (max value unit ratio 1) ...]
//!     #[Histogram log format version 1.3]
//!     #[StartTime: 1795311911.000 (seconds since epoch), 2026-11-22T01:45:11Z]
//!     #[BaseTime: 1795311911.000 (seconds since epoch)]
//!     "StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"
//!     #[p1: round 1, runs/scale-in-place-system-n2000-t1.p1.json]
//!     0.734,0.101,88063.000,HISTFAAAAC...
//! ```
//!
//! Interval lines carry no tag: HistogramLogProcessor reads only untagged lines unless
//! told a tag, so untagged lines are what it merges by default. Which process a line is
//! stands in the comment line before it. Timestamps are seconds since BaseTime, written
//! to the millisecond as HdrHistogram's writers write them.

use hdrhistogram::serialization::interval_log::IntervalLogWriterBuilder;
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::Histogram;
use std::time::Duration;

/// One interval: a process's (or run's) histogram with the span it was recorded in.
#[derive(Clone, Debug)]
pub struct Interval {
    /// Which process or run it is, written as a comment line before it.
    pub label: String,
    /// When it began, ns since the Unix epoch; None when its record did not keep that
    /// (written by an earlier alloclab): it is then named in a comment, not placed.
    pub start_unix_ns: Option<u64>,
    pub length_ns: u64,
    /// Values in ns.
    pub histogram: Histogram<u64>,
}

/// What one `.hlog` file holds.
#[derive(Clone, Debug)]
pub struct IntervalLog {
    /// One line on what its values are and what an interval is.
    pub what: String,
    pub intervals: Vec<Interval>,
}

/// HdrHistogram's interval log format version this module writes.
pub const FORMAT_VERSION: &str = "1.3";

/// The log's text. BaseTime and StartTime are `session_start_unix_ns` (the start of the
/// measurement that wrote it), or the first interval's start if that is earlier (a
/// record kept from an earlier measurement), floored to the millisecond so that no
/// timestamp is negative.
pub fn text(log: &IntervalLog, session_start_unix_ns: u64) -> String {
    let mut placed: Vec<&Interval> = log
        .intervals
        .iter()
        .filter(|i| i.start_unix_ns.is_some())
        .collect();
    placed.sort_by_key(|i| i.start_unix_ns);
    let earliest = placed.first().and_then(|i| i.start_unix_ns);
    let base_ns = earliest.map_or(session_start_unix_ns, |e| e.min(session_start_unix_ns));
    let base_ns = base_ns - base_ns % 1_000_000;
    let base_s = format!(
        "{}.{:03}",
        base_ns / 1_000_000_000,
        base_ns / 1_000_000 % 1000
    );
    let date =
        humantime::format_rfc3339_seconds(std::time::UNIX_EPOCH + Duration::from_nanos(base_ns));

    let mut out = String::new();
    let mut comment = |s: &str| {
        for l in s.lines() {
            out.push('#');
            out.push_str(l);
            out.push('\n');
        }
    };
    comment(&format!("[alloclab interval log: {}]", log.what));
    comment(
        "[Values in nanoseconds, Interval_Max too (max value unit ratio 1): HistogramLogProcessor's default -outputValueUnitRatio 1000000 prints them in ms, 1000 in µs]",
    );
    comment("[Timestamps: seconds since BaseTime, to the millisecond; BaseTime and StartTime: when this measurement began (folder.json \"started\"), or the first interval's start if earlier]");
    comment(&format!("[Histogram log format version {FORMAT_VERSION}]"));
    out.push_str(&format!(
        "#[StartTime: {base_s} (seconds since epoch), {date}]\n#[BaseTime: {base_s} (seconds since epoch)]\n"
    ));
    out.push_str(
        "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n",
    );
    for i in log.intervals.iter().filter(|i| i.start_unix_ns.is_none()) {
        out.push_str(&format!(
            "#[{}: not in this log: its record has no start time (written by an earlier alloclab); its values are in the .us.hgrm only]\n",
            i.label
        ));
    }
    let mut bytes = out.into_bytes();
    for i in placed {
        let start = i.start_unix_ns.unwrap_or(base_ns);
        bytes.extend_from_slice(format!("#[{}]\n", i.label).as_bytes());
        let mut serializer = V2DeflateSerializer::new();
        // Nothing set on the builder: it writes no header of its own, only the line.
        let written = IntervalLogWriterBuilder::new()
            .begin_log_with(&mut bytes, &mut serializer)
            .and_then(|mut w| {
                w.write_histogram(
                    &i.histogram,
                    Duration::from_nanos(start - base_ns),
                    Duration::from_nanos(i.length_ns),
                    None,
                )
                .map_err(|e| std::io::Error::other(e.to_string()))
            });
        if let Err(e) = written {
            // Writing into a Vec fails only if the histogram does not serialize.
            bytes.extend_from_slice(format!("#[{}: not written: {e}]\n", i.label).as_bytes());
        }
    }
    String::from_utf8(bytes).unwrap_or_default()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::model::record::new_histogram;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    use hdrhistogram::serialization::Deserializer;

    fn hist(values: &[u64]) -> Histogram<u64> {
        let mut h = new_histogram();
        for v in values {
            h.record(*v).unwrap();
        }
        h
    }

    const SESSION: u64 = 1_795_311_911_000_000_000;

    fn log() -> IntervalLog {
        IntervalLog {
            what: "test".into(),
            intervals: vec![
                Interval {
                    label: "p2".into(),
                    start_unix_ns: Some(SESSION + 2_500_000_000),
                    length_ns: 120_000_000,
                    histogram: hist(&[5_000, 6_000, 7_000_000]),
                },
                Interval {
                    label: "p1".into(),
                    start_unix_ns: Some(SESSION + 1_234_567_890),
                    length_ns: 1_000_000_000,
                    histogram: hist(&[1_000, 2_000]),
                },
                Interval {
                    label: "p3".into(),
                    start_unix_ns: None,
                    length_ns: 5,
                    histogram: hist(&[9]),
                },
            ],
        }
    }

    #[test]
    fn the_rust_reader_reads_back_every_placed_interval_in_time_order() {
        let text = text(&log(), SESSION);
        let mut base = None;
        let mut got = Vec::new();
        for e in IntervalLogIterator::new(text.as_bytes()) {
            match e.unwrap() {
                LogEntry::BaseTime(t) => base = Some(t),
                LogEntry::StartTime(_) => {}
                LogEntry::Interval(i) => {
                    let bytes = base64::Engine::decode(
                        &base64::engine::general_purpose::STANDARD,
                        i.encoded_histogram(),
                    )
                    .unwrap();
                    let h: Histogram<u64> = Deserializer::new()
                        .deserialize(&mut bytes.as_slice())
                        .unwrap();
                    got.push((i.start_timestamp(), i.duration(), i.max(), h));
                }
            }
        }
        assert_eq!(base, Some(Duration::from_secs(1_795_311_911)));
        assert_eq!(got.len(), 2, "p3 has no start time: not placed\n{text}");
        assert_eq!(got[0].0, Duration::from_millis(1_235), "ms, rounded");
        assert_eq!(got[0].1, Duration::from_secs(1));
        assert_eq!(got[0].3.len(), 2);
        assert_eq!(got[1].0, Duration::from_millis(2_500));
        assert_eq!(got[1].1, Duration::from_millis(120));
        assert_eq!(got[1].3.len(), 3);
        assert_eq!(got[1].2, got[1].3.max() as f64, "Interval_Max in ns");
        assert!(text.contains("#[p3: not in this log"), "{text}");
        assert!(text.contains("\n\"StartTimestamp\",\"Interval_Length\""));
        assert!(text.contains("#[p1]\n1.235,1.000,"), "{text}");
    }

    #[test]
    fn a_record_older_than_the_session_moves_the_base_time_back() {
        let text = text(&log(), SESSION + 2_000_000_000);
        assert!(
            text.contains("#[BaseTime: 1795311912.234 (seconds since epoch)]"),
            "{text}"
        );
        assert!(text.contains("#[p1]\n0.001,"), "{text}");
    }
}
