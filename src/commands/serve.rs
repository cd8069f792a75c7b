//! `alloclab serve`: the user's server under each allocator, driven at fixed rates by the
//! lab's open-loop RESP load ([`crate::engine::serve`]).

use crate::cli::ServeArgs;
use crate::commands::exec::{take_out_dir, ExecProgress};
use crate::commands::options::{command_settings, CommandOptions};
use crate::engine::serve::{ServeRecord, ServeSettings, PORT};
use crate::error::{Error, Result};
use crate::export::folder::Kind;
use std::time::Duration;

/// A latency such as `500us`, `1ms`, `2.5ms` or `1s`, in ns.
pub fn parse_latency(text: &str) -> std::result::Result<f64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| c.is_ascii_alphabetic() || c == 'µ')
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let scale = match unit {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => {
            return Err(format!(
                "--p99-target {text:?}: give a number and a unit, ns, us, ms or s (1ms, 500us)"
            ))
        }
    };
    match number.trim().parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() => Ok(v * scale),
        _ => Err(format!(
            "--p99-target {text:?}: the number before the unit must be above 0 (1ms, 500us)"
        )),
    }
}

/// The rates, comma-separated, each as the lab reads a size (10k, 5e4, 50000).
pub fn parse_rates(text: &str) -> std::result::Result<Vec<u64>, String> {
    let mut rates = Vec::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        if item.parse::<f64>() == Ok(0.0) {
            return Err(format!(
                "--rates: {item} requests/s is outside 1 to 10,000,000"
            ));
        }
        let r = crate::model::spec::parse_size(item).map_err(|e| {
            format!("--rates: {item:?} is not a rate: {e} (write 10k,50k or 10000,50000)")
        })?;
        if r == 0 || r > 10_000_000 {
            return Err(format!(
                "--rates: {item} requests/s is outside 1 to 10,000,000"
            ));
        }
        rates.push(r);
    }
    if rates.is_empty() {
        return Err("--rates: no rate given (write 10k,50k)".into());
    }
    rates.sort_unstable();
    rates.dedup();
    Ok(rates)
}

/// The fewest requests a phase may send: a p99 of fewer is one of its few requests.
pub const MIN_REQUESTS: f64 = 100.0;

/// Refuses a phase too short for a p99 at the lowest rate.
pub fn check_requests(lowest_rate: u64, seconds: f64) -> std::result::Result<(), String> {
    let requests = lowest_rate as f64 * seconds;
    if requests < MIN_REQUESTS {
        return Err(format!(
            "--seconds {} at {} requests/s sends {} request(s): a p99 needs at least {MIN_REQUESTS}; give --seconds {} or more, or a higher rate",
            seconds,
            crate::fmt::group_thousands(lowest_rate as i64),
            requests.floor(),
            (MIN_REQUESTS / lowest_rate as f64 * 100.0).ceil() / 100.0
        ));
    }
    Ok(())
}

/// What was asked, validated before anything starts: the session's settings and the p99
/// target in ns, or what is wrong with the input.
fn settings(args: &ServeArgs, level: f64) -> std::result::Result<(ServeSettings, f64), String> {
    let rates = parse_rates(&args.rates)?;
    let target_ns = parse_latency(&args.p99_target)?;
    check_requests(rates[0], args.seconds)?;
    let has_port = args
        .command
        .iter()
        .any(|a| a.to_string_lossy().contains(PORT));
    if !has_port && args.port.is_none() {
        return Err(format!(
            "the server's arguments have no {PORT} and no --port was given: put {PORT} where it takes its port (redis-server --port {PORT}), or give --port N if it always listens on N"
        ));
    }
    if has_port && args.port.is_some() {
        return Err(format!(
            "--port and {PORT} both given: the lab picks a free port for {PORT}; drop one"
        ));
    }
    let allocators =
        crate::model::knobs::parse_spec_list(&args.allocators).map_err(|e| e.to_string())?;
    let exec = command_settings(
        allocators,
        &args.command,
        CommandOptions {
            runs: 1,
            warmup: 0,
            show_output: args.show_output,
            thp: crate::model::spec::Thp::System,
            timeout: None,
            counters: args.counters,
            noise_threshold: args.noise_threshold,
            level,
            order_seed: args.order_seed,
        },
    )?;
    let settings = ServeSettings {
        exec,
        rates,
        seconds: args.seconds,
        connections: args.connections,
        processes: args.processes,
        seed: args.seed,
        ready_timeout: Duration::from_secs_f64(args.ready_timeout),
        port: args.port,
    };
    Ok((settings, target_ns))
}

pub fn run(args: &ServeArgs, level: f64) -> Result<()> {
    let (settings, target_ns) = settings(args, level).map_err(Error::BadInput)?;
    let mut folder = args
        .out
        .as_deref()
        .map(|d| take_out_dir(d, Kind::Serve, args.force_out))
        .transpose()?;
    crate::engine::begin();
    let mut progress = ExecProgress::quiet();
    let mut save = |record: &ServeRecord| match &folder {
        Some(f) => crate::export::serve::save(f, record, target_ns),
        None => Ok(()),
    };
    let record = crate::engine::serve::run_session(&settings, &mut progress, &mut save);
    progress.0.clear();
    let record = record.map_err(Error::RunFailed)?;
    if let Some(f) = &mut folder {
        f.finish(record.complete).map_err(Error::failed)?;
    }
    super::print_out(&crate::export::serve::screen(
        &record,
        target_ns,
        crate::fmt::screen_width(),
    ))?;
    if let Some(dir) = &args.out {
        crate::fmt::say!("results in {}", dir.display());
    }
    if !record.complete {
        return Err(Error::Interrupted(
            "the finished server processes are kept".into(),
        ));
    }
    let failed = record
        .allocators
        .iter()
        .filter(|a| a.failure.is_some())
        .count();
    super::failed_runs(failed, record.allocators.len(), "allocators")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_and_targets_read_as_written_and_bad_ones_say_what_is_right() {
        assert_eq!(parse_rates("50k, 10k,10000").unwrap(), vec![10_000, 50_000]);
        assert!(parse_rates("0").unwrap_err().contains("outside 1 to"));
        assert!(parse_rates("20M").unwrap_err().contains("outside"));
        assert!(parse_rates("fast").unwrap_err().contains("10k,50k"));
        assert_eq!(parse_latency("1ms").unwrap(), 1e6);
        assert_eq!(parse_latency("2.5ms").unwrap(), 2.5e6);
        assert_eq!(parse_latency("500us").unwrap(), 5e5);
        assert!(parse_latency("1").unwrap_err().contains("unit"));
        assert!(parse_latency("-1ms").unwrap_err().contains("above 0"));
        assert!(check_requests(1000, 0.001)
            .unwrap_err()
            .contains("--seconds 0.1 or more"));
        assert!(check_requests(1000, 0.1).is_ok());
    }
}
