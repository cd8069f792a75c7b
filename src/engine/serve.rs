//! `alloclab serve`: the user's server started under each allocator (preloaded as exec
//! does), made ready, filled with the built-in service's keys, driven at each fixed rate
//! by the lab's open-loop RESP load ([`super::resp`]), and stopped; its latency from each
//! request's intended start, its memory over time and its counts, per process.
//!
//! Every allocator runs one server process per round, in an order shuffled in every round
//! from a recorded seed; each process runs every rate, lowest first, over the same
//! request stream.

use super::command::{prepare_wrapped, ExecSettings, Observer};
use super::resp::{self, Control};
use super::spawn::{self, LaunchOptions};
use crate::counters::CounterPlan;
use crate::model::record::EncodedHistogram;
pub use crate::model::serve::{
    RatePhase, ServeRecord, ServerAllocator, ServerReading, ServerRun, SCHEMA,
};
use std::ffi::OsString;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The placeholder in the server's arguments that the lab replaces with a free port.
pub const PORT: &str = "{port}";

/// What `alloclab serve` was asked to do, validated.
pub struct ServeSettings {
    /// The allocators, the command, its program, the counters, the seeds and the
    /// verdicts' band and level, as exec takes them (`runs` unused).
    pub exec: ExecSettings,
    /// The rates, requests per second, lowest first.
    pub rates: Vec<u64>,
    /// How long each rate's requests are sent.
    pub seconds: f64,
    /// Connections the requests are spread over.
    pub connections: u32,
    /// Server processes per allocator (rounds).
    pub processes: u32,
    /// The request stream's seed.
    pub seed: u64,
    /// How long a server may take to answer PING.
    pub ready_timeout: Duration,
    /// The port when the command has no `{port}`.
    pub port: Option<u16>,
}

/// A port nothing listens on now (the kernel's pick for a listener on 127.0.0.1:0).
fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?
        .local_addr()?
        .port())
}

/// The server's figures now, from /proc/<pid> (None when it is gone).
fn proc_reading(pid: libc::pid_t, start: Instant) -> Option<ServerReading> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = after.split_whitespace().collect();
    // Fields from 3 (state) on: minflt is field 10, majflt 12, utime 14, stime 15.
    let num = |field: usize| f.get(field - 3)?.parse::<u64>().ok();
    // SAFETY: sysconf has no preconditions.
    let tick_ns = 1_000_000_000 / unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    let statm = std::fs::read_to_string(format!("/proc/{pid}/statm")).ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: as above.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as u64;
    Some(ServerReading {
        minflt: num(10)?,
        majflt: num(12)?,
        utime_ns: num(14)? * tick_ns,
        stime_ns: num(15)? * tick_ns,
        rss_bytes: pages * page,
        used_memory: None,
        t_ms: start.elapsed().as_secs_f64() * 1e3,
    })
}

/// The server's reading with its own `used_memory`.
fn reading(pid: libc::pid_t, start: Instant, control: &mut Control) -> Option<ServerReading> {
    let used = control.used_memory();
    let mut r = proc_reading(pid, start)?;
    r.used_memory = used;
    Some(r)
}

/// Why a server process failed.
struct Failed {
    why: String,
    stderr_tail: Option<String>,
}

/// What the load side of one server process did: the figures up to the stop, or why
/// it could not go on; whether the server stopped when asked; the lines it has to say.
struct Driven {
    outcome: Result<(f64, u64, ServerReading, Vec<RatePhase>), String>,
    clean: bool,
    said: Vec<String>,
}

/// The load side of one server process (on its own thread; the server's launcher waits
/// on the calling one): waits until the server answers PING, fills it, drives every rate,
/// and stops it: `SHUTDOWN NOSAVE`, then SIGTERM to its process group after 10 s, then
/// SIGKILL after 5 more.
fn drive_server(
    settings: &ServeSettings,
    port: u16,
    started: &Mutex<Option<(libc::pid_t, Instant)>>,
    exited: &AtomicBool,
    label: &str,
    round: u32,
) -> Driven {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let began = Instant::now();
    let mut said = Vec::new();
    // What the last connection that took the PING answered instead of +PONG.
    let mut last_answer: Option<String> = None;
    let mut control = loop {
        if exited.load(Ordering::Acquire)
            || began.elapsed() > settings.ready_timeout
            || crate::ui::interrupt::interrupted()
        {
            break None;
        }
        if let Ok(mut c) = Control::connect(addr, Duration::from_millis(500)) {
            match c.call(&[b"PING"]) {
                Ok(resp::Reply::Ok) => {
                    break Control::connect(addr, Duration::from_secs(30))
                        .ok()
                        .or(Some(c));
                }
                Ok(resp::Reply::Error(e)) => last_answer = Some(format!("the error {e:?}")),
                Ok(resp::Reply::Text(t)) => last_answer = Some(format!("{t:?}")),
                Err(e) => last_answer = Some(e.to_string()),
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (pid, start) = started
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .unwrap_or((0, began));
    let outcome = match control.as_mut() {
        None if crate::ui::interrupt::interrupted() => Err("interrupted before it was ready".into()),
        None if exited.load(Ordering::Acquire) => Err(format!(
            "the server ended before it answered PING on port {port}"
        )),
        None => Err(match &last_answer {
            Some(answer) => format!(
                "the server took connections on 127.0.0.1:{port} but did not answer PING with +PONG within {} s (--ready-timeout); the last try got: {answer}; does it speak RESP (the redis protocol)?",
                crate::fmt::trim_float(settings.ready_timeout.as_secs_f64())
            ),
            None => format!(
                "the server did not answer PING on 127.0.0.1:{port} within {} s (--ready-timeout); is {PORT} in its arguments where it takes its port?",
                crate::fmt::trim_float(settings.ready_timeout.as_secs_f64())
            ),
        }),
        Some(c) => load(settings, port, pid, start, c, label, round, &mut said),
    };
    // Stop it.
    if let Some(c) = control.as_mut() {
        let _ = c.send(&[b"SHUTDOWN", b"NOSAVE"]);
    }
    let wait = |d: Duration| {
        let asked = Instant::now();
        while !exited.load(Ordering::Acquire) && asked.elapsed() < d {
            std::thread::sleep(Duration::from_millis(10));
        }
        exited.load(Ordering::Acquire)
    };
    let clean = control.is_some() && wait(Duration::from_secs(10));
    if !clean && pid > 0 && !exited.load(Ordering::Acquire) {
        // SAFETY: signals the server's own process group (set at launch).
        unsafe { libc::kill(-pid, libc::SIGTERM) };
        if !wait(Duration::from_secs(5)) {
            // SAFETY: as above.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
        }
    }
    Driven {
        outcome,
        clean,
        said,
    }
}

/// Fills the ready server and drives it at every rate.
#[allow(clippy::too_many_arguments)]
fn load(
    settings: &ServeSettings,
    port: u16,
    pid: libc::pid_t,
    start: Instant,
    c: &mut Control,
    label: &str,
    round: u32,
    said: &mut Vec<String>,
) -> Result<(f64, u64, ServerReading, Vec<RatePhase>), String> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let ready_ms = start.elapsed().as_secs_f64() * 1e3;
    let mut wire = crate::worker::service::Wire::new(settings.seed);
    let value = vec![b'v'; crate::worker::service::MAX_VALUE];
    let filled = c
        .fill(&wire, &value)
        .map_err(|e| format!("filling the store failed: {e}"))?;
    let gone = || "the server's /proc entry could not be read (it is gone)".to_string();
    let after_fill = reading(pid, start, c).ok_or_else(gone)?;
    let mut phases = Vec::new();
    for &rate in &settings.rates {
        let at = crate::fmt::group_thousands(rate as i64);
        let before = reading(pid, start, c).ok_or_else(gone)?;
        let mut calls = crate::counters::calls::ProcessCalls::open(pid);
        let p = resp::drive(
            addr,
            &mut wire,
            rate,
            settings.seconds,
            settings.connections,
            Duration::from_secs(10),
        )
        .map_err(|e| format!("connecting the load at {at} requests/s failed: {e}"))?;
        let counted = calls.as_mut().map_err(|e| e.clone()).and_then(|c| c.read());
        drop(calls);
        let after = reading(pid, start, c).ok_or_else(gone)?;
        if crate::ui::interrupt::interrupted() {
            return Err("interrupted".into());
        }
        if let Some(why) = &p.broken {
            return Err(format!("the load at {at} requests/s broke off: {why}"));
        }
        if p.errors > 0 {
            return Err(format!(
                "{} of {} replies at {at} requests/s were errors (the first: {})",
                p.errors,
                p.answered,
                p.first_error.as_deref().unwrap_or("?")
            ));
        }
        said.push(format!(
            "{label} process {round} at {at} requests/s: p99 {} from the intended start, {} from the send",
            crate::fmt::fmt_ns(p.from_intended.value_at_quantile(0.99) as f64),
            crate::fmt::fmt_ns(p.from_sent.value_at_quantile(0.99) as f64)
        ));
        phases.push(RatePhase {
            rate_per_s: rate,
            sent_for_ns: p.sent_for_ns,
            sent: p.sent,
            answered: p.answered,
            errors: p.errors,
            from_intended: EncodedHistogram::encode(&p.from_intended),
            from_sent: EncodedHistogram::encode(&p.from_sent),
            send_lag_max_ns: p.send_lag_max_ns,
            write_wait_max_ns: p.write_wait_max_ns,
            calls: counted.as_ref().ok().copied(),
            calls_unavailable: counted.err().map(|e| e.0),
            start: before,
            end: after,
        });
    }
    Ok((ready_ms, filled, after_fill, phases))
}

/// Runs one server process under `prepared`: the server on this thread, its load on
/// another.
fn one_process(
    settings: &ServeSettings,
    prepared: &spawn::Prepared,
    opts: &LaunchOptions,
    port: u16,
    round: u32,
    observer: &mut dyn Observer,
    label: &str,
) -> Result<ServerRun, Failed> {
    let started: Mutex<Option<(libc::pid_t, Instant)>> = Mutex::new(None);
    let exited = AtomicBool::new(false);
    let announce = |pid: libc::pid_t, at: Instant| {
        *started.lock().unwrap_or_else(|e| e.into_inner()) = Some((pid, at));
    };
    let (run, driven) = std::thread::scope(|scope| {
        let load = scope.spawn(|| drive_server(settings, port, &started, &exited, label, round));
        let run = spawn::run_announced(prepared, opts, &announce);
        exited.store(true, Ordering::Release);
        (run, load.join())
    });
    let driven = driven.map_err(|_| Failed {
        why: "the load thread panicked".into(),
        stderr_tail: None,
    })?;
    for l in &driven.said {
        observer.say(l);
    }
    let run = run.map_err(|e| Failed {
        why: format!("the server could not be run: {e}"),
        stderr_tail: None,
    })?;
    let (ready_ms, filled, after_fill, phases) = driven.outcome.map_err(|why| Failed {
        why: if why.starts_with("the server ended") {
            format!("{why}: it {}", run.termination.describe(None))
        } else {
            why
        },
        stderr_tail: run.stderr_tail.clone(),
    })?;
    Ok(ServerRun {
        round,
        port,
        ready_ms,
        filled_keys: filled,
        after_fill,
        phases,
        ended: run.termination.describe(None),
        clean_stop: driven.clean,
        usage: run.usage,
        syscalls: run.syscalls.as_ref().ok().copied(),
        syscalls_unavailable: run.syscalls.as_ref().err().map(|e| e.0.clone()),
        memory: run.memory.as_ref().cloned().unwrap_or_default(),
        memory_unavailable: run.memory.as_ref().err().map(|e| e.0.clone()),
    })
}

/// The server's arguments with `{port}` replaced.
fn with_port(command: &[OsString], port: u16) -> Vec<OsString> {
    command
        .iter()
        .map(|a| {
            let s = a.to_string_lossy();
            if s.contains(PORT) {
                OsString::from(s.replace(PORT, &port.to_string()))
            } else {
                a.clone()
            }
        })
        .collect()
}

/// Runs the session; `save` is called after every server process.
pub fn run_session(
    settings: &ServeSettings,
    observer: &mut dyn Observer,
    save: &mut dyn FnMut(&ServeRecord) -> Result<(), String>,
) -> Result<ServeRecord, String> {
    let exec = &settings.exec;
    let plan = crate::counters::resolve(exec.counters).map_err(|why| why.0)?;
    let count_syscalls = matches!(plan, CounterPlan::Perf(_));
    let no_counts = match &plan {
        CounterPlan::Perf(_) => None,
        CounterPlan::Ptrace => Some("a server is counted by perf only (ptrace would slow every request it serves): run as root or with CAP_PERFMON".to_string()),
        CounterPlan::Unavailable(why) => Some(why.clone()),
    };
    let opts = LaunchOptions {
        count_syscalls,
        memory_every: crate::engine::spawn::memory_every()
            .map(|d| d.max(Duration::from_millis(50))),
        mark: false,
        timeout: None,
        ..super::command::launch_options(exec)
    };
    let mut record = ServeRecord {
        schema: SCHEMA.into(),
        command: exec
            .command
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        protocol: "resp".into(),
        rates_per_s: settings.rates.clone(),
        seconds_per_rate: settings.seconds,
        connections: settings.connections,
        seed: settings.seed,
        processes: settings.processes,
        order_seed: exec.order_seed,
        confidence: exec.level,
        noise_threshold: exec.noise_threshold,
        complete: false,
        environment: crate::counters::envinfo::Environment::capture(
            &super::command::exec_allocator_info(),
        ),
        allocators: exec
            .allocators
            .iter()
            .map(|a| ServerAllocator {
                allocator: a.to_string(),
                preload: None,
                malloc_from: None,
                own_allocator: None,
                version: None,
                failure: None,
                stderr_tail: None,
                runs: Vec::new(),
            })
            .collect(),
    };
    if let Some(why) = no_counts {
        observer.say(&format!("note: syscalls not counted: {why}"));
    }
    // The folder holds a record from the start, so that a session killed before its
    // first server process ends still leaves a serve.json that says it is incomplete.
    save(&record)?;
    let mut order: Vec<usize> = (0..exec.allocators.len()).collect();
    let mut shuffle = crate::analysis::stats::SplitMix(exec.order_seed);
    let mut interrupted = false;
    let total = exec.allocators.len() * settings.processes as usize;
    let mut done = 0usize;
    'rounds: for round in 1..=settings.processes {
        shuffle.shuffle(&mut order);
        for &i in &order {
            if crate::ui::interrupt::interrupted() {
                interrupted = true;
                break 'rounds;
            }
            if record.allocators[i].failure.is_some() {
                continue;
            }
            let a = &exec.allocators[i];
            let port = match settings.port {
                Some(p) => {
                    if Control::connect(
                        SocketAddr::from((Ipv4Addr::LOCALHOST, p)),
                        Duration::from_millis(500),
                    )
                    .is_ok()
                    {
                        return Err(format!(
                            "something already listens on 127.0.0.1:{p} (--port) before the server under {} starts: the load would drive it instead; stop it, or put {PORT} in the server's arguments so that the lab picks a free port",
                            exec.allocators[i]
                        ));
                    }
                    p
                }
                None => free_port().map_err(|e| format!("finding a free port: {e}"))?,
            };
            let command = with_port(&exec.command, port);
            let (row, prepared) = prepare_wrapped(a, exec, &exec.program, &command, None, &[]);
            let entry = &mut record.allocators[i];
            entry.preload = row.preload.clone();
            entry.malloc_from = row.malloc_from.clone();
            entry.own_allocator = row.own_allocator.clone();
            entry.version = row.version.clone();
            let Some(prepared) = prepared else {
                entry.failure = row.failure;
                save(&record)?;
                continue;
            };
            let label = entry.allocator.clone();
            done += 1;
            observer.say(&format!(
                "[{done}/{total}] {label}: server process {round} on port {port}, {} rate(s) of {} s",
                settings.rates.len(),
                crate::fmt::trim_float(settings.seconds)
            ));
            match one_process(settings, &prepared, &opts, port, round, observer, &label) {
                Ok(run) => record.allocators[i].runs.push(run),
                Err(f) => {
                    if crate::ui::interrupt::interrupted() {
                        interrupted = true;
                        break 'rounds;
                    }
                    observer.say(&format!("{label}: {}", f.why));
                    record.allocators[i].failure = Some(f.why);
                    record.allocators[i].stderr_tail = f.stderr_tail;
                }
            }
            save(&record)?;
        }
    }
    record.complete = !interrupted;
    save(&record)?;
    Ok(record)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_port_placeholder_is_replaced_wherever_it_stands() {
        let c: Vec<OsString> = ["srv", "--port", "{port}", "--bind=127.0.0.1:{port}"]
            .iter()
            .map(OsString::from)
            .collect();
        let got = with_port(&c, 6400);
        assert_eq!(got[2], "6400");
        assert_eq!(got[3], "--bind=127.0.0.1:6400");
        assert_eq!(got[0], "srv");
    }

    #[test]
    fn this_process_reads_back_its_own_faults_and_resident_set() {
        let r = proc_reading(std::process::id() as libc::pid_t, Instant::now()).unwrap();
        assert!(r.rss_bytes > 0 && r.minflt > 0, "{r:?}");
    }
}
