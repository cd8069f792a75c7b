//! What `alloclab trace` makes of a traced run: perf's samples (page faults and memory
//! syscalls, each with its user call stack and timestamp) read from `perf script`'s
//! text, placed into the worker's iterations by time, folded into call stacks, and a
//! mechanism line per allocator derived from them. Pure: text and records in, data out.

use crate::model::record::IterationSample;
use serde::Serialize;
use std::collections::BTreeMap;

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
        }
    }

    /// The kind of a perf event name (`syscalls:sys_enter_brk`, `page-faults/period=64/u`).
    fn of_event(event: &str) -> Option<EventKind> {
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
    pub kind: EventKind,
    /// How many events the sample stands for (the fault sampling period; 1 for syscalls).
    pub weight: u64,
    /// brk: the break asked for (0 queries it); mmap, munmap, madvise: the length;
    /// mremap: the new length.
    pub arg: Option<u64>,
    /// madvise: its advice (4 MADV_DONTNEED, 8 MADV_FREE, 14 MADV_HUGEPAGE, …).
    pub advice: Option<u64>,
    /// Innermost first.
    pub frames: Vec<Frame>,
}

/// Reads `perf script --ns -F tid,time,event,trace,ip,sym,dso` text: a header line per
/// sample (`tid time: event: args`), then one line per frame (`ip symbol (dso)`),
/// innermost first, each after a tab, then a blank line. `fault_weight` is the fault sampling period.
/// Lines it does not understand are skipped (counted in the second value).
pub fn parse_perf_script(text: &str, fault_weight: u64) -> (Vec<Event>, usize) {
    let mut events = Vec::new();
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
        match parse_header(line, fault_weight) {
            Some(e) => current = Some(e),
            None => skipped += 1,
        }
    }
    flush_group(&mut group, &mut current);
    events.extend(current);
    (events, skipped)
}

/// `  10619  8779.723660548:     syscalls:sys_enter_brk: brk: 0x560ea757a000`
fn parse_header(line: &str, fault_weight: u64) -> Option<Event> {
    let mut parts = line.split_whitespace();
    let _tid = parts.next()?;
    let time = parts.next()?.trim_end_matches(':');
    let (secs, frac) = time.split_once('.')?;
    let frac9 = format!("{frac:0<9}");
    let time_ns =
        secs.parse::<u64>().ok()? * 1_000_000_000 + frac9.get(..9)?.parse::<u64>().ok()?;
    let event = parts.next()?.trim_end_matches(':');
    let kind = EventKind::of_event(event)?;
    let args: String = parts.collect::<Vec<_>>().join(" ");
    let field = |name: &str| -> Option<u64> {
        args.split(", ")
            .filter_map(|kv| kv.trim().split_once(": "))
            .find(|(k, _)| *k == name)
            .and_then(|(_, v)| u64::from_str_radix(v.trim().trim_start_matches("0x"), 16).ok())
    };
    let arg = match kind {
        EventKind::Fault => None,
        EventKind::Brk => field("brk"),
        EventKind::Mmap | EventKind::Munmap => field("len"),
        EventKind::Madvise => field("len_in").or_else(|| field("len")),
        EventKind::Mremap => field("new_len"),
    };
    Some(Event {
        time_ns,
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
    pub fn syscalls(&self) -> u64 {
        self.brk + self.mmap + self.munmap + self.madvise + self.mremap
    }

    fn add(&mut self, e: &Event, brk_before: &mut Option<u64>) {
        let len = e.arg.unwrap_or(0);
        match e.kind {
            EventKind::Fault => {}
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
        return "[no user stack]".to_string();
    }
    chain.reverse();
    chain.join(" → ")
}

/// One kind's events of one allocator: how many per iteration, and the causes with their
/// share, largest first.
#[derive(Clone, Debug, Serialize)]
pub struct Attribution {
    pub kind: EventKind,
    pub per_iteration: f64,
    /// Samples behind the shares (faults are sampled: one in `weight`).
    pub samples: u64,
    pub causes: Vec<Cause>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Cause {
    pub chain: String,
    pub share: f64,
}

/// The causes of each kind among the samples `inside` the iterations; `per_iteration` of
/// faults from the timeline's own counts (exact), of syscalls from the samples (every
/// syscall is one).
pub fn attribute(placed: &Placed<'_>, timeline: &[IterationSample]) -> Vec<Attribution> {
    let n = timeline.len().max(1) as f64;
    let mut out = Vec::new();
    for kind in std::iter::once(EventKind::Fault).chain(EventKind::SYSCALLS) {
        let of: Vec<&&Event> = placed.inside.iter().filter(|e| e.kind == kind).collect();
        let total: u64 = of.iter().map(|e| e.weight).sum();
        let per_iteration = if kind == EventKind::Fault {
            timeline.iter().map(|s| s.minflt).sum::<u64>() as f64 / n
        } else {
            total as f64 / n
        };
        if total == 0 && per_iteration == 0.0 {
            continue;
        }
        let mut by: BTreeMap<String, u64> = BTreeMap::new();
        for e in &of {
            *by.entry(cause(e)).or_insert(0) += e.weight;
        }
        let mut causes: Vec<Cause> = by
            .into_iter()
            .map(|(chain, w)| Cause {
                chain,
                share: w as f64 / total.max(1) as f64,
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

/// The mechanism in one paragraph, from the attribution: "3.00 brk per iteration, 100 %
/// from free → _int_free → systrim; 3,874 faults per iteration, 99 % (of 6,100 samples)
/// in <Scale as Kernel>::iterate".
pub fn mechanism(label: &str, attributions: &[Attribution], events: &[IterationEvents]) -> String {
    let n = events.len().max(1) as f64;
    let mut parts = Vec::new();
    for a in attributions {
        let Some(top) = a.causes.first() else {
            if a.kind == EventKind::Fault && a.per_iteration >= 0.5 {
                parts.push(format!(
                    "{} faults per iteration (no fault sampled)",
                    crate::fmt::group_thousands(a.per_iteration.round() as i64)
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
                ", {:.0} % {verb} {}{}",
                100.0 * second.share,
                second.chain,
                if a.causes.len() > 2 {
                    ", the rest elsewhere"
                } else {
                    ""
                }
            ),
            Some(_) => ", the rest elsewhere".to_string(),
            None => String::new(),
        };
        if a.kind == EventKind::Fault {
            if a.per_iteration < 0.5 {
                continue;
            }
            parts.push(format!(
                "{} faults per iteration ({} samples), {pct:.0} % in {}{rest}",
                crate::fmt::group_thousands(a.per_iteration.round() as i64),
                crate::fmt::group_thousands(a.samples as i64),
                top.chain
            ));
        } else {
            let bytes = match a.kind {
                EventKind::Brk => {
                    let grow: u64 = events.iter().map(|e| e.brk_grow_bytes).sum();
                    let trim: u64 = events.iter().map(|e| e.brk_trim_bytes).sum();
                    format!(
                        " (the heap grows by {} and is trimmed by {} per iteration)",
                        crate::fmt::human_bytes((grow as f64 / n) as u64),
                        crate::fmt::human_bytes((trim as f64 / n) as u64)
                    )
                }
                EventKind::Mmap => bytes_each(events.iter().map(|e| (e.mmap, e.mmap_bytes))),
                EventKind::Munmap => bytes_each(events.iter().map(|e| (e.munmap, e.munmap_bytes))),
                EventKind::Madvise => {
                    bytes_each(events.iter().map(|e| (e.madvise, e.madvise_bytes)))
                }
                _ => String::new(),
            };
            parts.push(format!(
                "{:.2} {} per iteration{bytes}, {pct:.0} % from {}{rest}",
                a.per_iteration,
                a.kind.name(),
                top.chain
            ));
        }
    }
    let has_syscalls = attributions
        .iter()
        .any(|a| a.kind != EventKind::Fault && a.per_iteration > 0.0);
    if !has_syscalls {
        parts.push("no memory syscall in the measured iterations".to_string());
    }
    if !attributions
        .iter()
        .any(|a| a.kind == EventKind::Fault && a.per_iteration >= 0.5)
    {
        parts.push("fewer than one fault per iteration: it keeps and reuses its pages".to_string());
    }
    format!("{label}: {}.", parts.join("; "))
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
        let (events, skipped) = parse_perf_script(SCRIPT, 64);
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
        let (events, _) = parse_perf_script(SCRIPT, 64);
        let sample = |start_ns, elapsed_ns| IterationSample {
            start_ns,
            elapsed_ns,
            minflt: 10,
            rss_bytes: Some(1),
            heap_top: 0,
        };
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
            fault.per_iteration, 10.0,
            "faults per iteration from rusage"
        );
        let brk = a.iter().find(|a| a.kind == EventKind::Brk).unwrap();
        assert_eq!(brk.per_iteration, 0.5);
        assert_eq!(brk.causes[0].chain, "free → _int_free → systrim");
        let m = mechanism("system", &a, &placed.per_iteration);
        assert!(m.contains("0.50 brk per iteration"), "{m}");
        assert!(m.contains("100 % from free → _int_free → systrim"), "{m}");
        assert!(
            m.contains("10 faults per iteration (1 samples), 100 % in"),
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
}
