//! What `alloclab trace` makes of a traced run: perf's samples (page faults and memory
//! syscalls, each with its user call stack and timestamp) read from `perf script`'s
//! text, placed into the worker's iterations by time, folded into call stacks, and a
//! mechanism line per allocator derived from them. Pure: text and records in, data out.

use crate::model::counts::SyscallCounts;
use crate::model::metric::{Figures, SourceTotals, MINOR_FAULTS};
use crate::model::record::IterationSample;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// What a sample is of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EventKind {
    /// A user-mode page fault (sampled: one sample stands for `weight` faults).
    Fault,
    Brk,
    Mmap,
    Munmap,
    Madvise,
    Mremap,
    /// Every user page fault (tracepoint `exceptions:page_fault_user`, no stack): the
    /// exact count over time of a traced command.
    UserFault,
    /// A change of a resident-memory counter (tracepoint `kmem:rss_stat`): the
    /// command's RSS over time.
    Rss,
}

impl EventKind {
    /// The memory syscalls, in the order the lab prints them.
    pub const SYSCALLS: [EventKind; 5] = [
        EventKind::Brk,
        EventKind::Mmap,
        EventKind::Munmap,
        EventKind::Madvise,
        EventKind::Mremap,
    ];

    pub fn name(self) -> &'static str {
        match self {
            EventKind::Fault => "fault",
            EventKind::Brk => "brk",
            EventKind::Mmap => "mmap",
            EventKind::Munmap => "munmap",
            EventKind::Madvise => "madvise",
            EventKind::Mremap => "mremap",
            EventKind::UserFault => "user-fault",
            EventKind::Rss => "rss",
        }
    }

    /// brk, mmap, munmap, madvise or mremap.
    pub fn is_syscall(self) -> bool {
        EventKind::SYSCALLS.contains(&self)
    }

    /// The kind of a perf event name (`syscalls:sys_enter_brk`, `page-faults/period=64/u`).
    fn of_event(event: &str) -> Option<EventKind> {
        if event.ends_with("page_fault_user") {
            return Some(EventKind::UserFault);
        }
        if event.ends_with("rss_stat") {
            return Some(EventKind::Rss);
        }
        if event.contains("page-faults") || event.contains("faults") {
            return Some(EventKind::Fault);
        }
        let name = event.rsplit("sys_enter_").next()?;
        Some(match name {
            "brk" => EventKind::Brk,
            "mmap" => EventKind::Mmap,
            "munmap" => EventKind::Munmap,
            "madvise" => EventKind::Madvise,
            "mremap" => EventKind::Mremap,
            _ => return None,
        })
    }
}

/// One frame of a call stack as perf resolved it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    pub name: String,
    /// Inlined into the frame of the next real function outward.
    pub inlined: bool,
}

/// One sample: a fault or a memory syscall's entry.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub time_ns: u64,
    /// The process (0 where perf script was not asked for it).
    pub pid: u32,
    /// The thread.
    pub tid: u32,
    pub kind: EventKind,
    /// How many events the sample stands for (the fault sampling period; 1 for syscalls).
    pub weight: u64,
    /// brk: the break asked for (0 queries it); mmap, munmap, madvise: the length;
    /// mremap: the new length; rss: the counter's new value in bytes.
    pub arg: Option<u64>,
    /// rss: which counter (0 file pages, 1 anonymous pages, 2 swap entries, 3 shared
    /// memory pages).
    pub rss_member: Option<u8>,
    /// madvise: its advice (4 MADV_DONTNEED, 8 MADV_FREE, 14 MADV_HUGEPAGE, …).
    pub advice: Option<u64>,
    /// Innermost first.
    pub frames: Vec<Frame>,
}

impl Event {
    /// The call as the lab names it: its kind, and a madvise's advice with it
    /// ("madvise(DONTNEED)", "madvise(HUGEPAGE)"): advice that gives nothing back is not
    /// a purge, and is not counted as one.
    pub fn call(&self) -> String {
        match (self.kind, self.advice) {
            (EventKind::Madvise, Some(a)) => format!(
                "madvise({})",
                crate::model::evidence::advice_name(a).0.to_uppercase()
            ),
            (k, _) => k.name().to_string(),
        }
    }
}

/// A process's exec or exit, from `perf script --show-task-events`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Task {
    Exec {
        time_ns: u64,
        pid: u32,
        comm: String,
    },
    Exit {
        time_ns: u64,
        pid: u32,
    },
}

/// What `perf script` said.
#[derive(Debug, Default)]
pub struct Script {
    pub events: Vec<Event>,
    pub tasks: Vec<Task>,
    /// Lines not understood.
    pub skipped: usize,
}

/// Reads `perf script --ns -F [pid,]tid,time,event,trace,ip,sym,dso [--show-task-events]`
/// text: a header line per sample (`[pid/]tid time: event: args`), then one line per
/// frame (`ip symbol (dso)`), innermost first, each after a tab, then a blank line; task
/// lines (`PERF_RECORD_COMM exec: …`, `PERF_RECORD_EXIT(pid:tid):…`) between them.
/// `fault_weight` is the fault sampling period. Lines it does not understand are
/// skipped (counted).
pub fn parse_perf_script(text: &str, fault_weight: u64) -> Script {
    let mut events = Vec::new();
    let mut tasks = Vec::new();
    let mut skipped = 0;
    let mut current: Option<Event> = None;
    // Frames of one address: perf names the first by its symbol and the rest by the
    // functions inlined there (innermost first); the symbol is the outermost of them.
    let mut group: Vec<Frame> = Vec::new();
    let mut group_ip = String::new();
    let flush_group = |group: &mut Vec<Frame>, ev: &mut Option<Event>| {
        if let Some(e) = ev.as_mut() {
            if group.len() > 1 && !group[0].inlined {
                let real = group.remove(0);
                group.push(real);
            }
            e.frames.append(group);
        }
        group.clear();
    };
    for line in text.lines() {
        if line.trim().is_empty() {
            flush_group(&mut group, &mut current);
            events.extend(current.take());
            continue;
        }
        // Frame lines start with a tab; a header may start with spaces (perf pads the
        // thread id to its column: " 4667 10608.591943103: …").
        if line.starts_with('\t') {
            let t = line.trim_start();
            let Some((ip, rest)) = t.split_once(' ') else {
                skipped += 1;
                continue;
            };
            let rest = rest.trim();
            let (name, dso) = match rest.rfind(" (") {
                Some(i) if rest.ends_with(')') => (&rest[..i], &rest[i + 2..rest.len() - 1]),
                _ => (rest, ""),
            };
            if ip != group_ip {
                flush_group(&mut group, &mut current);
                group_ip = ip.to_string();
            }
            group.push(Frame {
                name: name.to_string(),
                inlined: dso == "inlined",
            });
            continue;
        }
        // A header: the previous sample ends here too (perf always writes the blank line,
        // but a cut-off stream may not).
        flush_group(&mut group, &mut current);
        events.extend(current.take());
        group_ip.clear();
        if line.contains("PERF_RECORD_") {
            match parse_task(line) {
                Some(Some(t)) => tasks.push(t),
                Some(None) => {}
                None => skipped += 1,
            }
            continue;
        }
        match parse_header(line, fault_weight) {
            Some(e) => current = Some(e),
            None => skipped += 1,
        }
    }
    flush_group(&mut group, &mut current);
    events.extend(current);
    Script {
        events,
        tasks,
        skipped,
    }
}

/// `123/124 14.5: …` → (pid, tid, time in ns); the pid is 0 without `pid` in the fields.
fn id_and_time<'a>(parts: &mut impl Iterator<Item = &'a str>) -> Option<(u32, u32, u64)> {
    let id = parts.next()?;
    let (pid, tid) = match id.split_once('/') {
        Some((p, t)) => (p.parse().ok()?, t.parse().ok()?),
        None => (0, id.parse().ok()?),
    };
    let time = parts.next()?.trim_end_matches(':');
    let (secs, frac) = time.split_once('.')?;
    let frac9 = format!("{frac:0<9}");
    let time_ns =
        secs.parse::<u64>().ok()? * 1_000_000_000 + frac9.get(..9)?.parse::<u64>().ok()?;
    Some((pid, tid, time_ns))
}

/// A task line: Some(Some(task)) for an exec or an exit, Some(None) for the others
/// (a fork, perf's own comm), None when not understood.
fn parse_task(line: &str) -> Option<Option<Task>> {
    let mut parts = line.split_whitespace();
    let (_, _, time_ns) = id_and_time(&mut parts)?;
    let what = parts.next()?;
    if let Some(rest) = what.strip_prefix("PERF_RECORD_EXIT(") {
        let pid = rest.split(':').next()?.parse().ok()?;
        return Some(Some(Task::Exit { time_ns, pid }));
    }
    if what == "PERF_RECORD_COMM" && parts.next() == Some("exec:") {
        // `python3:28645/28645`: the name may hold ':', the ids come last.
        let rest: String = parts.collect::<Vec<_>>().join(" ");
        let (comm, ids) = rest.rsplit_once(':')?;
        let pid = ids.split('/').next()?.parse().ok()?;
        return Some(Some(Task::Exec {
            time_ns,
            pid,
            comm: comm.to_string(),
        }));
    }
    Some(None)
}

/// `  10619  8779.723660548:     syscalls:sys_enter_brk: brk: 0x560ea757a000`
fn parse_header(line: &str, fault_weight: u64) -> Option<Event> {
    let mut parts = line.split_whitespace();
    let (pid, tid, time_ns) = id_and_time(&mut parts)?;
    let event = parts.next()?.trim_end_matches(':');
    let kind = EventKind::of_event(event)?;
    let args: String = parts.collect::<Vec<_>>().join(" ");
    let field = |name: &str| -> Option<u64> {
        args.split(", ")
            .filter_map(|kv| kv.trim().split_once(": "))
            .find(|(k, _)| *k == name)
            .and_then(|(_, v)| u64::from_str_radix(v.trim().trim_start_matches("0x"), 16).ok())
    };
    // `mm_id=1 curr=1 type=MM_ANONPAGES size=8192B`
    let eq = |name: &str| -> Option<&str> {
        args.split_whitespace()
            .filter_map(|kv| kv.split_once('='))
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v)
    };
    let mut rss_member = None;
    let arg = match kind {
        EventKind::Fault | EventKind::UserFault => None,
        EventKind::Rss => {
            // Another process's counters changed by this one (curr=0): not its own RSS,
            // kept without a counter (the timeline passes over it).
            if eq("curr") != Some("1") {
                return Some(Event {
                    time_ns,
                    pid,
                    tid,
                    kind,
                    weight: 1,
                    arg: None,
                    advice: None,
                    rss_member: None,
                    frames: Vec::new(),
                });
            }
            rss_member = Some(match eq("type")? {
                "MM_FILEPAGES" => 0,
                "MM_ANONPAGES" => 1,
                "MM_SWAPENTS" => 2,
                "MM_SHMEMPAGES" => 3,
                _ => return None,
            });
            eq("size")?
                .trim_end_matches('B')
                .parse::<i64>()
                .ok()
                .map(|v| v.max(0) as u64)
        }
        EventKind::Brk => field("brk"),
        EventKind::Mmap | EventKind::Munmap => field("len"),
        EventKind::Madvise => field("len_in").or_else(|| field("len")),
        EventKind::Mremap => field("new_len"),
    };
    Some(Event {
        time_ns,
        pid,
        tid,
        kind,
        weight: if kind == EventKind::Fault {
            fault_weight.max(1)
        } else {
            1
        },
        arg,
        advice: (kind == EventKind::Madvise)
            .then(|| field("behavior"))
            .flatten(),
        rss_member,
        frames: Vec::new(),
    })
}

/// The memory syscalls of one iteration, and what they asked for.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct IterationEvents {
    pub brk: u64,
    pub mmap: u64,
    pub munmap: u64,
    pub madvise: u64,
    pub mremap: u64,
    /// Net change of the break asked for by this iteration's brk calls (negative: the
    /// heap was trimmed).
    pub brk_delta_bytes: i64,
    /// What its brk calls added to the heap, and what they gave back (trims).
    pub brk_grow_bytes: u64,
    pub brk_trim_bytes: u64,
    pub mmap_bytes: u64,
    pub munmap_bytes: u64,
    pub madvise_bytes: u64,
}

impl IterationEvents {
    /// Its counts by the registry: each memory syscall (the rest: None).
    pub fn figures(&self) -> Figures {
        Figures::of_totals(&SourceTotals {
            syscalls: Some(SyscallCounts {
                brk: self.brk,
                mmap: self.mmap,
                munmap: self.munmap,
                madvise: self.madvise,
                mremap: self.mremap,
                all: None,
            }),
            ..Default::default()
        })
    }

    pub fn syscalls(&self) -> u64 {
        self.brk + self.mmap + self.munmap + self.madvise + self.mremap
    }

    fn add(&mut self, e: &Event, brk_before: &mut Option<u64>) {
        let len = e.arg.unwrap_or(0);
        match e.kind {
            EventKind::Fault | EventKind::UserFault | EventKind::Rss => {}
            EventKind::Brk => {
                self.brk += 1;
                if len != 0 {
                    if let Some(prev) = *brk_before {
                        let delta = len as i64 - prev as i64;
                        self.brk_delta_bytes += delta;
                        if delta > 0 {
                            self.brk_grow_bytes += delta as u64;
                        } else {
                            self.brk_trim_bytes += delta.unsigned_abs();
                        }
                    }
                    *brk_before = Some(len);
                }
            }
            EventKind::Mmap => {
                self.mmap += 1;
                self.mmap_bytes += len;
            }
            EventKind::Munmap => {
                self.munmap += 1;
                self.munmap_bytes += len;
            }
            EventKind::Madvise => {
                self.madvise += 1;
                self.madvise_bytes += len;
            }
            EventKind::Mremap => self.mremap += 1,
        }
    }
}

/// A traced run's recorded memory syscalls against an independent count of the same run
/// (the lab's tracepoint counters beside perf's recording).
#[derive(Clone, Debug, Default, Serialize)]
pub struct CountCheck {
    /// The independent count; None where there is none (`text` says why).
    pub counted: Option<crate::model::counts::SyscallCounts>,
    /// Whether every kind's count equals the recorded one (None: not checked).
    pub agrees: Option<bool>,
    pub text: String,
}

fn kinds_text(brk: u64, mmap: u64, munmap: u64, madvise: u64, mremap: u64) -> String {
    let n = |v: u64| crate::fmt::group_thousands(v as i64);
    let mut parts: Vec<String> = [
        (brk, "brk"),
        (mmap, "mmap"),
        (munmap, "munmap"),
        (madvise, "madvise"),
    ]
    .iter()
    .map(|(v, k)| format!("{} {k}", n(*v)))
    .collect();
    if mremap > 0 {
        parts.push(format!("{} mremap", n(mremap)));
    }
    parts.join(", ")
}

/// Checks `recorded` (the run's memory syscalls as sampled) against `counted`, or says
/// why nothing was checked.
pub fn count_check(
    recorded: &IterationEvents,
    counted: Result<crate::model::counts::SyscallCounts, String>,
) -> CountCheck {
    let c = match counted {
        Ok(c) => c,
        Err(why) => {
            return CountCheck {
                counted: None,
                agrees: None,
                text: format!("the recorded counts are not checked: {why}"),
            }
        }
    };
    let r = recorded;
    let rec = kinds_text(r.brk, r.mmap, r.munmap, r.madvise, r.mremap);
    let cnt = kinds_text(c.brk, c.mmap, c.munmap, c.madvise, c.mremap);
    let agrees = (r.brk, r.mmap, r.munmap, r.madvise, r.mremap)
        == (c.brk, c.mmap, c.munmap, c.madvise, c.mremap);
    let text = if agrees {
        format!(
            "all {} memory syscalls counted beside the recording were recorded ({rec})",
            crate::fmt::group_thousands(c.memory() as i64)
        )
    } else {
        format!(
            "MISMATCH: {} memory syscalls recorded ({rec}) where the counters beside the recording counted {} ({cnt}); the shares above are of the recorded ones",
            crate::fmt::group_thousands(r.syscalls() as i64),
            crate::fmt::group_thousands(c.memory() as i64)
        )
    };
    CountCheck {
        counted: Some(c),
        agrees: Some(agrees),
        text,
    }
}

/// Events placed into iterations by time: per iteration its syscalls, and the samples
/// that fell inside some iteration (those outside the measured iterations — set-up,
/// warm-up, the lab's own reads between iterations, exit — are left out).
pub struct Placed<'a> {
    pub per_iteration: Vec<IterationEvents>,
    pub inside: Vec<&'a Event>,
    /// Samples (weighted) of each kind outside every iteration but within the measured
    /// phase's span: the observer's own between-iteration reads.
    pub between: BTreeMap<EventKind, u64>,
}

/// Places `events` (sorted or not) into the iterations of `timeline`.
pub fn place<'a>(timeline: &[IterationSample], events: &'a [Event]) -> Placed<'a> {
    let mut sorted: Vec<&Event> = events.iter().collect();
    sorted.sort_by_key(|e| e.time_ns);
    let mut per_iteration = vec![IterationEvents::default(); timeline.len()];
    let mut inside = Vec::new();
    let mut between = BTreeMap::new();
    let first = timeline.first().map_or(0, |s| s.start_ns);
    let last = timeline.last().map_or(0, |s| s.start_ns + s.elapsed_ns);
    // The break before the measured phase: the last one asked for before it.
    let mut brk: Option<u64> = None;
    let mut i = 0;
    for e in sorted {
        while i < timeline.len() && timeline[i].start_ns + timeline[i].elapsed_ns < e.time_ns {
            i += 1;
        }
        let hit = timeline
            .get(i)
            .is_some_and(|s| s.start_ns <= e.time_ns && e.time_ns <= s.start_ns + s.elapsed_ns);
        if hit {
            per_iteration[i].add(e, &mut brk);
            inside.push(e);
        } else {
            if e.kind == EventKind::Brk && e.arg.is_some_and(|a| a != 0) {
                brk = e.arg;
            }
            if e.time_ns >= first && e.time_ns <= last {
                *between.entry(e.kind).or_insert(0) += e.weight;
            }
        }
    }
    Placed {
        per_iteration,
        inside,
        between,
    }
}

/// One time bin of a traced command, from its exec on.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Bin {
    /// The bin's start, since the exec.
    pub start_ns: u64,
    /// Every user page fault in the bin (None where they were not counted).
    pub faults: Option<u64>,
    /// The memory syscalls in the bin, of every process of the command.
    pub events: IterationEvents,
    /// The command's own process's resident set at the bin's end (file, anonymous and
    /// shared-memory pages; None before its first change was seen or without the
    /// tracepoint).
    pub rss_bytes: Option<u64>,
    /// The break its own process last asked for, against the first it asked for.
    pub heap_top_offset_bytes: Option<i64>,
}

/// A traced command over time: its events from the exec to the exit of the process
/// perf started, in bins.
pub struct RunTimeline<'a> {
    /// The process perf started, and its first program's name.
    pub pid: u32,
    pub comm: String,
    /// CLOCK_MONOTONIC of its exec and of its exit (or of the last event).
    pub start_ns: u64,
    pub end_ns: u64,
    pub exited: bool,
    pub bin_ns: u64,
    pub bins: Vec<Bin>,
    /// The samples with stacks (faults, memory syscalls) of the whole run.
    pub inside: Vec<&'a Event>,
    /// The memory syscalls of the whole run.
    pub totals: IterationEvents,
    /// Every user page fault of the run (None where not counted).
    pub faults: Option<u64>,
    pub peak_rss_bytes: Option<u64>,
    /// Processes that left an event (the command and what it started).
    pub processes: usize,
    /// The programs the process perf started ran in turn (more than one behind a wrapper
    /// script such as pyenv's shims).
    pub programs: Vec<String>,
}

/// The smallest of 1, 2, 5 × 10^k ns (at least 1 µs) that cuts `span_ns` into at most
/// `max_bins` bins.
pub fn bin_width(span_ns: u64, max_bins: u64) -> u64 {
    let raw = span_ns.div_ceil(max_bins.max(1)).max(1000);
    let mut decade = 1u64;
    loop {
        for m in [1, 2, 5] {
            if m * decade >= raw {
                return m * decade;
            }
        }
        decade *= 10;
    }
}

/// The timeline of a traced command (`faults_counted`: `exceptions:page_fault_user` was
/// recorded). None without the exec of the process perf started.
pub fn run_timeline<'a>(
    script: &'a Script,
    faults_counted: bool,
    max_bins: u64,
) -> Option<RunTimeline<'a>> {
    let (start_ns, pid, comm) = script.tasks.iter().find_map(|t| match t {
        Task::Exec { time_ns, pid, comm } => Some((*time_ns, *pid, comm.clone())),
        Task::Exit { .. } => None,
    })?;
    // The run ends when the process ends: the last exit of its threads (perf reports an
    // exit per thread, every one with the process's pid; the first one is a thread that
    // ended early, such as one of OpenBLAS's).
    let exit = script
        .tasks
        .iter()
        .filter_map(|t| match t {
            Task::Exit { time_ns, pid: p } if *p == pid && *time_ns >= start_ns => Some(*time_ns),
            _ => None,
        })
        .max();
    let mut sorted: Vec<&Event> = script
        .events
        .iter()
        .filter(|e| e.time_ns >= start_ns && exit.is_none_or(|x| e.time_ns <= x))
        .collect();
    sorted.sort_by_key(|e| e.time_ns);
    let end_ns = exit.unwrap_or_else(|| sorted.last().map_or(start_ns, |e| e.time_ns));
    let bin_ns = bin_width(end_ns - start_ns, max_bins);
    let n = ((end_ns - start_ns) / bin_ns + 1) as usize;
    let mut bins: Vec<Bin> = (0..n)
        .map(|i| Bin {
            start_ns: i as u64 * bin_ns,
            faults: faults_counted.then_some(0),
            ..Bin::default()
        })
        .collect();
    let mut totals = IterationEvents::default();
    let mut brk_of: BTreeMap<u32, Option<u64>> = BTreeMap::new();
    let mut pids = std::collections::BTreeSet::new();
    let mut members: [Option<u64>; 4] = [None; 4];
    let mut first_brk: Option<u64> = None;
    let mut peak: Option<u64> = None;
    let mut inside = Vec::new();
    let mut faults = 0u64;
    // Each exec starts a new image: its break and resident counters are its own.
    let mut execs: Vec<(u64, u32)> = script
        .tasks
        .iter()
        .filter_map(|t| match t {
            Task::Exec { time_ns, pid, .. } if *time_ns > start_ns => Some((*time_ns, *pid)),
            _ => None,
        })
        .collect();
    execs.sort_unstable();
    let mut next_exec = 0;
    let mut i = 0;
    for e in sorted {
        while next_exec < execs.len() && execs[next_exec].0 <= e.time_ns {
            let p = execs[next_exec].1;
            brk_of.insert(p, None);
            if p == pid {
                members = [None; 4];
                first_brk = None;
            }
            next_exec += 1;
        }
        pids.insert(e.pid);
        while i + 1 < n && e.time_ns - start_ns >= bins[i + 1].start_ns {
            i += 1;
            bins[i].rss_bytes = bins[i - 1].rss_bytes;
            bins[i].heap_top_offset_bytes = bins[i - 1].heap_top_offset_bytes;
        }
        match e.kind {
            EventKind::UserFault => {
                faults += 1;
                if let Some(f) = bins[i].faults.as_mut() {
                    *f += 1;
                }
            }
            EventKind::Rss if e.pid == pid => {
                if let (Some(m), Some(v)) = (e.rss_member, e.arg) {
                    if let Some(slot) = members.get_mut(m as usize) {
                        *slot = Some(v);
                    }
                    let rss: u64 = [0, 1, 3].iter().filter_map(|&k| members[k]).sum();
                    bins[i].rss_bytes = Some(rss);
                    peak = Some(peak.map_or(rss, |p: u64| p.max(rss)));
                }
            }
            EventKind::Rss => {}
            kind => {
                inside.push(e);
                if kind.is_syscall() {
                    let before = brk_of.entry(e.pid).or_insert(None);
                    bins[i].events.add(e, &mut before.clone());
                    totals.add(e, before);
                    if kind == EventKind::Brk && e.pid == pid {
                        if let Some(a) = e.arg.filter(|a| *a != 0) {
                            first_brk.get_or_insert(a);
                            bins[i].heap_top_offset_bytes = first_brk.map(|f| a as i64 - f as i64);
                        }
                    }
                }
            }
        }
    }
    // Bins after the last event keep the last values seen.
    for j in i + 1..n {
        bins[j].rss_bytes = bins[j - 1].rss_bytes;
        bins[j].heap_top_offset_bytes = bins[j - 1].heap_top_offset_bytes;
    }
    Some(RunTimeline {
        pid,
        comm,
        start_ns,
        end_ns,
        exited: exit.is_some(),
        bin_ns,
        bins,
        inside,
        totals,
        faults: faults_counted.then_some(faults),
        peak_rss_bytes: peak,
        processes: pids.len(),
        programs: script
            .tasks
            .iter()
            .filter_map(|t| match t {
                Task::Exec { pid: p, comm, .. } if *p == pid => Some(comm.clone()),
                _ => None,
            })
            .collect(),
    })
}

/// Frames the stack is cut at, outward: the Rust and C runtimes' start-up, never
/// informative.
fn is_runtime(name: &str) -> bool {
    const PREFIXES: [&str; 10] = [
        "std::rt::",
        "std::panic",
        "std::sys::backtrace",
        "__rust_begin_short_backtrace",
        "<&dyn core::ops::function::Fn",
        "__libc_start",
        "_start",
        "core::ops::function::FnOnce::call_once",
        "lang_start",
        "std::thread::scope",
    ];
    PREFIXES.iter().any(|p| name.starts_with(p))
}

/// A frame's name as a person reads it: `free` for glibc's `__GI___libc_free`, paths
/// dropped (`<Scale as Kernel>::iterate`), an inlined frame's generic arguments dropped.
pub fn short_name(f: &Frame) -> String {
    let mut name = f.name.as_str();
    for p in [
        "__GI___libc_",
        "__GI___",
        "__libc_",
        "__GI_",
        "_rjem_je_",
        "_rjem_",
    ] {
        if let Some(rest) = name.strip_prefix(p) {
            name = rest;
            break;
        }
    }
    let mut name = name.to_string();
    if f.inlined && !name.starts_with('<') {
        if let Some(i) = name.find('<') {
            name.truncate(i);
        }
    }
    drop_paths(&name)
}

/// `alloclab::worker::workload::Scale` → `Scale`: every `ident::` run before a name is
/// dropped (a `::` after `>` or `}` stays).
fn drop_paths(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut ident = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_alphanumeric() || c == '_' {
            ident.push(c);
            continue;
        }
        if c == ':' && chars.peek() == Some(&':') && !ident.is_empty() {
            chars.next();
            ident.clear();
            continue;
        }
        out.push_str(&ident);
        ident.clear();
        out.push(c);
    }
    out.push_str(&ident);
    out
}

/// The frames of `e` outermost first, cut above the runtime's start-up, as short names.
fn stack_names(e: &Event) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for f in &e.frames {
        if is_runtime(&f.name) {
            break;
        }
        names.push(short_name(f).replace(';', ":"));
    }
    names.reverse();
    names
}

/// Folded stacks (`outer;…;inner weight`, sorted) of the samples of `kinds`; with more
/// than one kind each stack ends in the syscall's name, so that one flame graph shows
/// all memory syscalls.
pub fn fold(events: &[&Event], kinds: &[EventKind]) -> Vec<String> {
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    for e in events.iter().filter(|e| kinds.contains(&e.kind)) {
        let mut names = stack_names(e);
        if names.is_empty() {
            names.push("[no user stack]".into());
        }
        if kinds.len() > 1 {
            names.push(e.kind.name().to_string());
        }
        *counts.entry(names.join(";")).or_insert(0) += e.weight;
    }
    counts
        .into_iter()
        .map(|(stack, n)| format!("{stack} {n}"))
        .collect()
}

/// Wrappers around the system call itself, skipped when naming what made a syscall.
fn is_wrapper(name: &str) -> bool {
    let bare = name.trim_start_matches('_');
    let bare = bare
        .strip_prefix("GI_")
        .unwrap_or(bare)
        .trim_start_matches('_');
    matches!(
        bare,
        "brk"
            | "sbrk"
            | "glibc_morecore"
            | "morecore"
            | "mmap"
            | "mmap64"
            | "munmap"
            | "madvise"
            | "mremap"
            | "syscall"
            | "internal_syscall"
    ) || bare.ends_with("_syscall")
}

/// What made an event: three frames outward from where it happened, outermost first
/// ("free → _int_free → systrim" for a trim, "astype_f64 → new_filled → write" for a
/// fault), skipping the syscall's wrappers and closures.
pub fn cause(e: &Event) -> String {
    let mut chain: Vec<String> = e
        .frames
        .iter()
        .take_while(|f| !is_runtime(&f.name))
        .skip_while(|f| e.kind != EventKind::Fault && is_wrapper(&f.name))
        .map(short_name)
        .filter(|n| !n.starts_with('{'))
        .take(3)
        .collect();
    if chain.is_empty() {
        return match e.frames.first() {
            Some(f) => format!("[not unwound past {}]", short_name(f)),
            None => "[no user stack]".to_string(),
        };
    }
    chain.reverse();
    chain.join(" → ")
}

/// One kind's events of one allocator: how many per iteration, and the causes with their
/// share, largest first.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Attribution {
    pub kind: EventKind,
    /// Per iteration (per run for a command); None where the faults were not counted
    /// (only the shares among the samples are known).
    pub per_iteration: Option<f64>,
    /// Samples behind the shares (faults are sampled: one in `weight`).
    pub samples: u64,
    pub causes: Vec<Cause>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cause {
    pub chain: String,
    pub share: f64,
    /// Its share made after main returned (exit handlers, destructors).
    pub at_exit: f64,
    /// What led to it, where its stacks part ways: the frames outward from where they
    /// first differ, with their share of this cause (largest first; empty where every
    /// stack reaching it is the same).
    pub triggers: Vec<Trigger>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Trigger {
    /// Up to three frames, outermost first, from where the stacks part ways outward.
    pub chain: String,
    /// Of the cause's weight.
    pub share: f64,
}

/// Frames that run only after main has returned (or exit was called).
fn is_exit_frame(name: &str) -> bool {
    matches!(
        name.trim_start_matches('_'),
        "run_exit_handlers" | "dl_fini" | "dl_call_fini" | "libc_csu_fini" | "call_fini"
    ) || name == "exit"
}

/// The names of `e`'s frames innermost first: without the syscall's wrappers, closures
/// and Rust's drop glue (two drops of one value differ only in how much of it was
/// inlined), cut at the runtime's start-up.
fn inner_names(e: &Event) -> Vec<String> {
    e.frames
        .iter()
        .take_while(|f| !is_runtime(&f.name))
        .skip_while(|f| e.kind != EventKind::Fault && is_wrapper(&f.name))
        .map(short_name)
        .filter(|n| !n.starts_with('{') && n != "drop" && n != "drop_in_place")
        .collect()
}

/// The triggers of one cause's events (see [`Cause::triggers`]).
fn triggers(of: &[&Event]) -> Vec<Trigger> {
    let stacks: Vec<(Vec<String>, u64)> = of.iter().map(|e| (inner_names(e), e.weight)).collect();
    let Some((first, _)) = stacks.first() else {
        return Vec::new();
    };
    // How far inward every stack agrees.
    let common = stacks.iter().fold(first.len(), |n, (s, _)| {
        n.min(first.iter().zip(s).take_while(|(a, b)| a == b).count())
    });
    if stacks.iter().all(|(s, _)| s.len() == common) {
        return Vec::new();
    }
    let total: u64 = stacks.iter().map(|(_, w)| w).sum();
    let mut groups: BTreeMap<String, (Vec<&[String]>, u64)> = BTreeMap::new();
    for (s, w) in &stacks {
        let rest = &s[common.min(s.len())..];
        let key = rest
            .first()
            .cloned()
            .unwrap_or_else(|| "[the stack ends here]".into());
        let g = groups.entry(key).or_default();
        g.0.push(rest);
        g.1 += w;
    }
    let mut out: Vec<Trigger> = groups
        .into_values()
        .map(|(rests, w)| {
            // The frames every stack of the group shares from the parting on, three at
            // most, outermost first.
            let first = rests[0];
            let shared = rests.iter().fold(first.len().min(3), |n, r| {
                n.min(
                    first
                        .iter()
                        .zip(r.iter())
                        .take_while(|(a, b)| a == b)
                        .count(),
                )
            });
            let mut chain: Vec<&str> = first[..shared].iter().map(String::as_str).collect();
            chain.reverse();
            Trigger {
                chain: if chain.is_empty() {
                    "[the stack ends here]".into()
                } else {
                    chain.join(" → ")
                },
                share: w as f64 / total.max(1) as f64,
            }
        })
        .collect();
    out.sort_by(|a, b| b.share.total_cmp(&a.share));
    out
}

/// The causes of each kind among the samples `inside` the iterations; `per_iteration` of
/// faults from the timeline's own counts (exact), of syscalls from the samples (every
/// syscall is one).
pub fn attribute(placed: &Placed<'_>, timeline: &[IterationSample]) -> Vec<Attribution> {
    let n = timeline.len().max(1) as f64;
    let faults = timeline
        .iter()
        .filter_map(|s| s.figures()[MINOR_FAULTS])
        .sum::<f64>()
        / n;
    attribute_among(&placed.inside, n, Some(faults))
}

/// The causes of each kind among `inside`, per one of `n` units (iterations, or 1 for a
/// whole run); faults per unit from `faults_per` (an exact count; None: not counted, only
/// the shares are known), syscalls from the samples (every syscall is one).
pub fn attribute_among(inside: &[&Event], n: f64, faults_per: Option<f64>) -> Vec<Attribution> {
    let mut out = Vec::new();
    for kind in std::iter::once(EventKind::Fault).chain(EventKind::SYSCALLS) {
        let of: Vec<&&Event> = inside.iter().filter(|e| e.kind == kind).collect();
        let total: u64 = of.iter().map(|e| e.weight).sum();
        let per_iteration = if kind == EventKind::Fault {
            faults_per
        } else {
            Some(total as f64 / n)
        };
        if total == 0 && per_iteration.unwrap_or(0.0) == 0.0 {
            continue;
        }

        // A madvise's cause names its advice: a purge and huge-page advice from the same
        // place are two causes.
        let mut by: BTreeMap<String, Vec<&Event>> = BTreeMap::new();
        for e in &of {
            let key = match (e.kind, e.advice) {
                (EventKind::Madvise, Some(a)) => format!(
                    "{} ({})",
                    cause(e),
                    crate::model::evidence::advice_name(a).0.to_uppercase()
                ),
                _ => cause(e),
            };
            by.entry(key).or_default().push(e);
        }
        let mut causes: Vec<Cause> = by
            .into_iter()
            .map(|(chain, events)| {
                let w: u64 = events.iter().map(|e| e.weight).sum();
                let exit: u64 = events
                    .iter()
                    .filter(|e| e.frames.iter().any(|f| is_exit_frame(&f.name)))
                    .map(|e| e.weight)
                    .sum();
                Cause {
                    chain,
                    share: w as f64 / total.max(1) as f64,
                    at_exit: exit as f64 / w.max(1) as f64,
                    triggers: if kind == EventKind::Fault {
                        Vec::new()
                    } else {
                        triggers(&events)
                    },
                }
            })
            .collect();
        causes.sort_by(|a, b| b.share.total_cmp(&a.share));
        out.push(Attribution {
            kind,
            per_iteration,
            samples: of.len() as u64,
            causes,
        });
    }
    out
}

/// The mechanism in one paragraph's parts: what the evidence run shows the calls and
/// faults did ([`crate::analysis::mechanism::said_parts`]), then where they came from,
/// by the attribution: ["system: 1.00 brk per iteration shrank the heap …", "where from:
/// 3.00 brk per iteration, 100 % from free → _int_free → systrim", "3,874 faults per
/// iteration, 99 % (of 6,100 samples) in <Scale as Kernel>::iterate"]. [`paragraph`]
/// joins them.
pub fn mechanism(
    label: &str,
    evidence: Option<&crate::model::evidence::Recorded>,
    attributions: &[Attribution],
    events: &[IterationEvents],
) -> Vec<String> {
    with_evidence(
        label,
        evidence,
        mechanism_per(attributions, events, "per iteration"),
    )
}

/// [`mechanism`] for a whole run of a command: `events` holds the run's totals, and the
/// counts are "in the run".
pub fn run_mechanism(
    label: &str,
    evidence: Option<&crate::model::evidence::Recorded>,
    attributions: &[Attribution],
    totals: &IterationEvents,
) -> Vec<String> {
    with_evidence(
        label,
        evidence,
        mechanism_per(attributions, std::slice::from_ref(totals), "in the run"),
    )
}

/// The paragraph of a mechanism's parts: "system: …; where from: ….".
pub fn paragraph(parts: &[String]) -> String {
    format!("{}.", parts.join("; "))
}

fn with_evidence(
    label: &str,
    evidence: Option<&crate::model::evidence::Recorded>,
    from: Vec<String>,
) -> Vec<String> {
    let mut parts = crate::analysis::mechanism::said_parts(evidence);
    if let Some(first) = parts.first_mut() {
        *first = format!("{label}: {first}");
    }
    for (i, f) in from.into_iter().enumerate() {
        parts.push(if i == 0 {
            format!("where from: {f}")
        } else {
            f
        });
    }
    parts
}

fn mechanism_per(
    attributions: &[Attribution],
    events: &[IterationEvents],
    per: &str,
) -> Vec<String> {
    let n = events.len().max(1) as f64;
    let run = per == "in the run";
    let mut no_stacks = false;
    let mut parts = Vec::new();
    for a in attributions {
        // Without any stack (the ptrace tracer's calls) only the counts are said.
        let stackless = a.causes.len() == 1 && a.causes[0].chain == "[no user stack]";
        let top = a
            .causes
            .first()
            .filter(|_| !stackless || a.kind == EventKind::Fault);
        let Some(top) = top else {
            if a.kind != EventKind::Fault && a.per_iteration.unwrap_or(0.0) > 0.0 {
                no_stacks = true;
                parts.push(format!(
                    "{} {} {per}{}",
                    count_text(a.per_iteration.unwrap_or(0.0), run),
                    a.kind.name(),
                    syscall_bytes(a.kind, events, n, per)
                ));
            }
            if a.kind == EventKind::Fault && a.per_iteration.unwrap_or(0.0) >= 0.5 {
                parts.push(format!(
                    "{} faults {per} (no fault sampled)",
                    crate::fmt::group_thousands(a.per_iteration.unwrap_or(0.0).round() as i64)
                ));
            }
            continue;
        };
        let pct = 100.0 * top.share;
        let verb = if a.kind == EventKind::Fault {
            "in"
        } else {
            "from"
        };
        let rest = match a.causes.get(1) {
            Some(second) if second.share >= 0.05 => format!(
                ", {:.0} % {verb} {}{}{}",
                100.0 * second.share,
                second.chain,
                cause_detail(second),
                if a.causes.len() > 2 {
                    ", the rest elsewhere"
                } else {
                    ""
                }
            ),
            Some(_) => ", the rest elsewhere".to_string(),
            None => String::new(),
        };
        if a.kind == EventKind::Fault && a.per_iteration.is_none() {
            parts.push(format!(
                "{} fault samples (the faults were not counted), {pct:.0} % in {}{rest}",
                crate::fmt::group_thousands(a.samples as i64),
                top.chain
            ));
        } else if a.kind == EventKind::Fault {
            if a.per_iteration.unwrap_or(0.0) < 0.5 {
                continue;
            }
            parts.push(format!(
                "{} faults {per} ({} sample{}), {pct:.0} % in {}{rest}",
                crate::fmt::group_thousands(a.per_iteration.unwrap_or(0.0).round() as i64),
                crate::fmt::group_thousands(a.samples as i64),
                if a.samples == 1 { "" } else { "s" },
                top.chain
            ));
        } else {
            let bytes = syscall_bytes(a.kind, events, n, per);
            let count = count_text(a.per_iteration.unwrap_or(0.0), run);
            parts.push(format!(
                "{count} {} {per}{bytes}, {pct:.0} % from {}{}{rest}",
                a.kind.name(),
                top.chain,
                cause_detail(top)
            ));
        }
    }
    let has_syscalls = attributions
        .iter()
        .any(|a| a.kind != EventKind::Fault && a.per_iteration.unwrap_or(0.0) > 0.0);
    if !has_syscalls {
        parts.push(if run {
            "no memory syscall in the run".to_string()
        } else {
            "no memory syscall in the measured iterations".to_string()
        });
    }
    if !run
        && !attributions
            .iter()
            .any(|a| a.kind == EventKind::Fault && a.per_iteration.unwrap_or(0.0) >= 0.5)
    {
        parts.push("fewer than one fault per iteration".to_string());
    }
    if no_stacks {
        parts.push("no call stacks".to_string());
    }
    parts
}

/// What a cause's line adds about it: " at exit" (or the share at exit), and the
/// triggers it parts into, largest first: " (triggered 52 % by large_dalloc →
/// extent_record → extent_maximally_purge, 48 % by …)".
fn cause_detail(c: &Cause) -> String {
    let mut s = String::new();
    if c.at_exit >= 0.995 {
        s.push_str(" at exit");
    }
    let mut said: Vec<String> = c
        .triggers
        .iter()
        .take(3)
        .filter(|t| t.share >= 0.05)
        .map(|t| format!("{:.0} % by {}", 100.0 * t.share, t.chain))
        .collect();
    if said.len() >= 2 {
        if c.triggers.len() > said.len() {
            said.push("the rest by others".into());
        }
        let _ = write!(s, " (triggered {})", said.join(", "));
    }
    if c.at_exit >= 0.005 && c.at_exit < 0.995 {
        let _ = write!(s, " ({:.0} % at exit)", 100.0 * c.at_exit);
    }
    s
}

/// A count per iteration (two decimals) or in a whole run (a whole number).
fn count_text(v: f64, run: bool) -> String {
    if run {
        crate::fmt::group_thousands(v.round() as i64)
    } else {
        format!("{v:.2}")
    }
}

/// What the calls of `kind` moved: the heap's growth and trim for brk, the mean size
/// for mmap, munmap and madvise.
fn syscall_bytes(kind: EventKind, events: &[IterationEvents], n: f64, per: &str) -> String {
    match kind {
        EventKind::Brk => {
            let grow: u64 = events.iter().map(|e| e.brk_grow_bytes).sum();
            let trim: u64 = events.iter().map(|e| e.brk_trim_bytes).sum();
            if grow == 0 && trim == 0 {
                String::new()
            } else {
                format!(
                    " (the heap grows by {} and is trimmed by {} {per})",
                    crate::fmt::human_bytes((grow as f64 / n) as u64),
                    crate::fmt::human_bytes((trim as f64 / n) as u64)
                )
            }
        }
        EventKind::Mmap => bytes_each(events.iter().map(|e| (e.mmap, e.mmap_bytes))),
        EventKind::Munmap => bytes_each(events.iter().map(|e| (e.munmap, e.munmap_bytes))),
        EventKind::Madvise => bytes_each(events.iter().map(|e| (e.madvise, e.madvise_bytes))),
        _ => String::new(),
    }
}

/// " (2.0 MiB each)": the mean size of calls of one kind.
fn bytes_each(it: impl Iterator<Item = (u64, u64)>) -> String {
    let (calls, bytes) = it.fold((0u64, 0u64), |(c, b), (c1, b1)| (c + c1, b + b1));
    if calls == 0 {
        return String::new();
    }
    format!(" ({} each)", crate::fmt::human_bytes(bytes / calls))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCRIPT: &str = "\
10619  8779.539020608:     syscalls:sys_enter_brk: brk: 0x560ea848d000
\t           fdc47 __brk (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t           fdd14 __GI___sbrk (inlined)
\t           96041 __glibc_morecore (inlined)
\t           960e3 systrim (inlined)
\t           9692c _int_free (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t           98f5e __GI___libc_free (inlined)
\t           a3640 <alloclab::worker::workload::Scale as alloclab::worker::workload::Kernel>::iterate (/x/alloclab-system)
\t           a3640 drop_in_place<alloc::vec::Vec<f64>> (inlined)
\t           b572e alloclab::worker::measure::timeline_loop (/x/alloclab-system)
\t           655e8 std::rt::lang_start::{{closure}} (/x/alloclab-system)

10619  8779.539020700:    page-faults/period=64/u: 
\t           a3650 <alloclab::worker::workload::Scale as alloclab::worker::workload::Kernel>::iterate (/x/alloclab-system)
\t           a3650 divide (inlined)
\t           b572e alloclab::worker::measure::timeline_loop (/x/alloclab-system)

  619  8779.539030000:     syscalls:sys_enter_madvise: start: 0x7f0000000000, len_in: 0x00200000, behavior: 0x00000004
\t           1234 madvise (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t           5678 _rjem_je_pages_purge_forced (/x/alloclab-jemalloc)

";

    #[test]
    fn perf_script_samples_parse_with_their_stacks_and_arguments() {
        let Script {
            events, skipped, ..
        } = parse_perf_script(SCRIPT, 64);
        assert_eq!(skipped, 0);
        assert_eq!(events.len(), 3);
        let brk = &events[0];
        assert_eq!(brk.kind, EventKind::Brk);
        assert_eq!(brk.time_ns, 8_779_539_020_608);
        assert_eq!(brk.arg, Some(0x560e_a848_d000));
        assert_eq!(cause(brk), "free → _int_free → systrim");
        // The symbol of an address with inlined frames is the outermost of them.
        let names: Vec<&str> = brk.frames.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names[6], "drop_in_place<alloc::vec::Vec<f64>>");
        assert!(names[7].ends_with("::iterate"));
        let fault = &events[1];
        assert_eq!(
            (fault.kind, fault.weight, fault.arg),
            (EventKind::Fault, 64, None)
        );
        assert_eq!(
            cause(fault),
            "timeline_loop → <Scale as Kernel>::iterate → divide"
        );
        let madvise = &events[2];
        assert_eq!((madvise.arg, madvise.advice), (Some(0x20_0000), Some(4)));
        assert_eq!(cause(madvise), "pages_purge_forced");
        // Folded: outermost first, the runtime cut, paths dropped.
        let refs: Vec<&Event> = events.iter().collect();
        let folded = fold(&refs, &EventKind::SYSCALLS);
        assert_eq!(
            folded,
            [
                "pages_purge_forced;madvise;madvise 1",
                "timeline_loop;<Scale as Kernel>::iterate;drop_in_place;free;_int_free;systrim;__glibc_morecore;sbrk;__brk;brk 1",
            ]
        );
        assert_eq!(
            fold(&refs, &[EventKind::Fault]),
            ["timeline_loop;<Scale as Kernel>::iterate;divide 64"]
        );
    }

    #[test]
    fn events_fall_into_the_iteration_whose_span_holds_them() {
        let events = parse_perf_script(SCRIPT, 64).events;
        let sample = |start_ns, elapsed_ns| IterationSample::sample(start_ns, elapsed_ns, 10);
        // The brk and the fault in the first iteration, the madvise between the two.
        let timeline = [
            sample(8_779_539_020_000, 1_000),
            sample(8_779_539_040_000, 1_000),
        ];
        let placed = place(&timeline, &events);
        assert_eq!(placed.per_iteration[0].brk, 1);
        assert_eq!(
            placed.per_iteration[0].madvise + placed.per_iteration[1].madvise,
            0
        );
        assert_eq!(placed.inside.len(), 2);
        assert_eq!(placed.between.get(&EventKind::Madvise), Some(&1));
        let a = attribute(&placed, &timeline);
        let fault = a.iter().find(|a| a.kind == EventKind::Fault).unwrap();
        assert_eq!(
            fault.per_iteration,
            Some(10.0),
            "faults per iteration from rusage"
        );
        let brk = a.iter().find(|a| a.kind == EventKind::Brk).unwrap();
        assert_eq!(brk.per_iteration, Some(0.5));
        assert_eq!(brk.causes[0].chain, "free → _int_free → systrim");
        let m = paragraph(&mechanism("system", None, &a, &placed.per_iteration));
        assert!(m.contains("0.50 brk per iteration"), "{m}");
        assert!(m.contains("100 % from free → _int_free → systrim"), "{m}");
        assert!(
            m.contains("10 faults per iteration (1 sample), 100 % in"),
            "{m}"
        );
    }

    #[test]
    fn names_lose_paths_and_glibc_aliases() {
        let f = |name: &str, inlined| Frame {
            name: name.into(),
            inlined,
        };
        assert_eq!(short_name(&f("__GI___libc_free", true)), "free");
        assert_eq!(
            short_name(&f("alloclab::worker::measure::timeline_loop", false)),
            "timeline_loop"
        );
        assert_eq!(
            short_name(&f("with_capacity_in<f64, alloc::alloc::Global>", true)),
            "with_capacity_in"
        );
        assert_eq!(
            short_name(&f("hdrhistogram::Histogram<T>::resize", false)),
            "Histogram<T>::resize"
        );
    }

    /// A command whose process runs a wrapper first (bash), then the real program: the
    /// exec starts a new break (no 1 GiB "trim" between the two images), the faults
    /// and syscalls fall into their bins, the RSS is the new image's.
    const COMMAND: &str = "\
    0/0         0.000000000: PERF_RECORD_COMM: perf-exec:700/700
700/700 10.000000000: PERF_RECORD_COMM exec: bash:700/700
700/700 10.000100000:     syscalls:sys_enter_brk: brk: 0x50000000
\t           fdc47 __brk (/usr/lib/x86_64-linux-gnu/libc.so.6)

700/700 10.000200000:              kmem:rss_stat: mm_id=1 curr=1 type=MM_ANONPAGES size=900000B ffffffff815e6b03 finish_fault ([kernel.kallsyms])
700/700 10.001000000: PERF_RECORD_COMM exec: python3:700/700
700/700 10.001100000:     syscalls:sys_enter_brk: brk: 0x10000000
\t           fdc47 __brk (/usr/lib/x86_64-linux-gnu/libc.so.6)

700/700 10.001200000: exceptions:page_fault_user: address=0x1 ip=0x2 error_code=0x6 ffffffff821f5340 exc_page_fault ([kernel.kallsyms])
700/700 10.001300000:              kmem:rss_stat: mm_id=2 curr=1 type=MM_ANONPAGES size=8192B ffffffff815e6b03 finish_fault ([kernel.kallsyms])
700/700 10.001310000:              kmem:rss_stat: mm_id=3 curr=0 type=MM_ANONPAGES size=99999999B ffffffff815e6b03 zap ([kernel.kallsyms])
700/700 10.002500000:     syscalls:sys_enter_brk: brk: 0x10021000
\t           fdc47 __brk (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t           96f98 sysmalloc (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t           98a4d __GI___libc_malloc (inlined)

700/700 10.002600000: exceptions:page_fault_user: address=0x1 ip=0x2 error_code=0x6 ffffffff821f5340 exc_page_fault ([kernel.kallsyms])
700/700 10.003000000: PERF_RECORD_EXIT(700:700):(699:699)
";

    /// A madvise whose stack is `outer_to_inner`, outermost first.
    fn madvise_from(outer_to_inner: &[&str]) -> Event {
        Event {
            time_ns: 0,
            pid: 1,
            tid: 1,
            kind: EventKind::Madvise,
            weight: 1,
            arg: Some(4096),
            rss_member: None,
            advice: Some(4),
            frames: outer_to_inner
                .iter()
                .rev()
                .map(|n| Frame {
                    name: n.to_string(),
                    inlined: false,
                })
                .collect(),
        }
    }

    #[test]
    fn a_cause_reached_two_ways_names_both_triggers_and_what_ran_at_exit() {
        const PURGE: [&str; 4] = [
            "extent_dalloc_wrapper",
            "ehooks_purge_forced",
            "pages_purge_forced",
            "madvise",
        ];
        let with = |outer: &[&str]| {
            let mut s: Vec<&str> = outer.to_vec();
            s.extend(PURGE);
            madvise_from(&s)
        };
        let mut events = Vec::new();
        for _ in 0..3 {
            events.push(with(&[
                "main",
                "free",
                "large_dalloc",
                "extent_record",
                "extent_maximally_purge",
            ]));
        }
        events.push(with(&[
            "main",
            "malloc",
            "arena_handle_deferred_work",
            "pac_decay_to_limit",
        ]));
        // Drop glue inlined or not is one path.
        events.push(with(&[
            "main",
            "run",
            "drop",
            "drop_in_place",
            "free",
            "large_dalloc",
            "extent_record",
            "extent_maximally_purge",
        ]));
        let refs: Vec<&Event> = events.iter().collect();
        let a = attribute_among(&refs, 1.0, None);
        let madvise = a.iter().find(|a| a.kind == EventKind::Madvise).unwrap();
        assert_eq!(madvise.causes.len(), 1);
        let c = &madvise.causes[0];
        assert_eq!(
            c.chain,
            "extent_dalloc_wrapper → ehooks_purge_forced → pages_purge_forced (DONTNEED)"
        );
        // The same place with huge-page advice is another cause: advice is not a purge.
        let mut advised = events.clone();
        for e in advised.iter_mut().take(2) {
            e.advice = Some(14);
        }
        let refs_advised: Vec<&Event> = advised.iter().collect();
        let both = attribute_among(&refs_advised, 1.0, None);
        let m = both.iter().find(|a| a.kind == EventKind::Madvise).unwrap();
        let chains: Vec<&str> = m.causes.iter().map(|c| c.chain.as_str()).collect();
        assert_eq!(
            chains,
            [
                "extent_dalloc_wrapper → ehooks_purge_forced → pages_purge_forced (DONTNEED)",
                "extent_dalloc_wrapper → ehooks_purge_forced → pages_purge_forced (HUGEPAGE)"
            ]
        );
        assert_eq!(advised[0].call(), "madvise(HUGEPAGE)");
        let t: Vec<(&str, f64)> = c
            .triggers
            .iter()
            .map(|t| (t.chain.as_str(), t.share))
            .collect();
        assert_eq!(
            t,
            [
                ("large_dalloc → extent_record → extent_maximally_purge", 0.8),
                (
                    "malloc → arena_handle_deferred_work → pac_decay_to_limit",
                    0.2
                ),
            ]
        );
        let line = paragraph(&run_mechanism(
            "jemalloc",
            None,
            &a,
            &IterationEvents {
                madvise: 5,
                ..Default::default()
            },
        ));
        assert!(
            line.contains("(triggered 80 % by large_dalloc → extent_record → extent_maximally_purge, 20 % by malloc → arena_handle_deferred_work → pac_decay_to_limit)"),
            "{line}"
        );
        assert_eq!(c.at_exit, 0.0);

        // One path only: no triggers. After main returned: said.
        let exit: Vec<Event> = (0..4)
            .map(|_| {
                madvise_from(&[
                    "__libc_start_call_main",
                    "exit",
                    "__run_exit_handlers",
                    "_dl_fini",
                    "mi_process_done",
                    "mi_os_decommit_ex",
                    "madvise",
                ])
            })
            .collect();
        let refs: Vec<&Event> = exit.iter().collect();
        let a = attribute_among(&refs, 1.0, None);
        let c = &a[0].causes[0];
        assert!(c.triggers.is_empty(), "{:?}", c.triggers);
        assert_eq!(c.at_exit, 1.0);
        let line = paragraph(&run_mechanism(
            "mimalloc",
            None,
            &a,
            &IterationEvents {
                madvise: 4,
                ..Default::default()
            },
        ));
        assert!(
            line.contains("mi_os_decommit_ex (DONTNEED) at exit"),
            "{line}"
        );
    }

    #[test]
    fn the_count_check_agrees_only_when_every_kind_is_equal_and_says_why_when_unchecked() {
        use crate::model::counts::SyscallCounts;
        let recorded = IterationEvents {
            brk: 13,
            mmap: 20,
            munmap: 10,
            madvise: 8,
            ..IterationEvents::default()
        };
        let counted = SyscallCounts {
            brk: 13,
            mmap: 20,
            munmap: 10,
            madvise: 8,
            mremap: 0,
            all: Some(400),
        };
        let ok = count_check(&recorded, Ok(counted));
        assert_eq!(ok.agrees, Some(true));
        assert!(ok.text.starts_with("all 51 memory syscalls"), "{}", ok.text);
        // The same total, split differently, is a mismatch too.
        let moved = SyscallCounts {
            brk: 12,
            madvise: 9,
            ..counted
        };
        let bad = count_check(&recorded, Ok(moved));
        assert_eq!(bad.agrees, Some(false));
        assert!(bad
            .text
            .starts_with("MISMATCH: 51 memory syscalls recorded (13 brk"));
        assert!(bad.text.contains("counted 51 (12 brk"), "{}", bad.text);
        let none = count_check(&recorded, Err("no perf events".into()));
        assert_eq!((none.agrees, none.counted), (None, None));
        assert!(none.text.ends_with("no perf events"));
    }

    #[test]
    fn a_command_run_ends_when_its_last_thread_ends_not_its_first() {
        // A thread (701) of the process ends before the process's last brk.
        let text = COMMAND.replace(
            "700/700 10.002500000:     syscalls:sys_enter_brk",
            "700/701 10.002000000: PERF_RECORD_EXIT(700:701):(700:700)\n700/700 10.002500000:     syscalls:sys_enter_brk",
        );
        let script = parse_perf_script(&text, 64);
        assert_eq!(script.skipped, 0);
        let tl = run_timeline(&script, true, 200).unwrap();
        assert_eq!(tl.end_ns - tl.start_ns, 3_000_000);
        assert_eq!(tl.totals.brk, 3, "the brk after the thread's exit counts");
        assert_eq!(tl.faults, Some(2));
    }

    #[test]
    fn a_command_timeline_starts_each_image_afresh() {
        let script = parse_perf_script(COMMAND, 64);
        assert_eq!(script.skipped, 0);
        assert_eq!(script.tasks.len(), 3, "{:?}", script.tasks);
        let tl = run_timeline(&script, true, 200).unwrap();
        assert_eq!((tl.pid, tl.comm.as_str()), (700, "bash"));
        assert_eq!(tl.programs, ["bash", "python3"]);
        assert_eq!(tl.end_ns - tl.start_ns, 3_000_000);
        assert!(tl.exited);
        // 3 ms in at most 200 bins: 20 µs each.
        assert_eq!(tl.bin_ns, 20_000);
        assert_eq!(tl.faults, Some(2));
        assert_eq!(tl.totals.brk, 3);
        // Only python3's own growth: 0x21000 bytes, no jump between the images.
        assert_eq!(tl.totals.brk_grow_bytes, 0x21000);
        assert_eq!(tl.totals.brk_trim_bytes, 0);
        // The RSS of the process itself (curr=1), the new image's after the exec.
        assert_eq!(tl.peak_rss_bytes, Some(900_000));
        assert_eq!(tl.bins.last().unwrap().rss_bytes, Some(8192));
        assert_eq!(tl.bins.last().unwrap().heap_top_offset_bytes, Some(0x21000));
        let faults: u64 = tl.bins.iter().filter_map(|b| b.faults).sum();
        assert_eq!(faults, 2);
        assert_eq!(tl.bins.iter().map(|b| b.events.brk).sum::<u64>(), 3);
        // The unwound call is named; the others say they were not unwound.
        let causes: Vec<String> = tl.inside.iter().map(|e| cause(e)).collect();
        assert!(
            causes.contains(&"malloc → sysmalloc".to_string()),
            "{causes:?}"
        );
        assert!(
            causes.contains(&"[not unwound past __brk]".to_string()),
            "{causes:?}"
        );
        let a = attribute_among(&tl.inside, 1.0, tl.faults.map(|f| f as f64));
        let m = paragraph(&run_mechanism("system", None, &a, &tl.totals));
        assert!(m.contains("3 brk in the run"), "{m}");
        assert!(m.contains("2 faults in the run"), "{m}");
    }

    #[test]
    fn bins_are_one_two_five_steps() {
        assert_eq!(bin_width(3_000_000, 200), 20_000);
        assert_eq!(bin_width(1_440_000_000, 200), 10_000_000);
        assert_eq!(bin_width(10, 200), 1000);
        assert_eq!(bin_width(1_000_000_001, 200), 10_000_000);
    }
}
