//! The mechanisms the lab can name, one registry: each is a rule over what a recorded run
//! shows its memory syscalls and faults did ([`Evidence`]), with its name, its threshold
//! and its words. A mechanism is said only where its rule holds, and only of the side
//! whose calls they were; where none holds, the counts are said and that no known
//! mechanism explains them; where nothing was recorded, that the mechanism was not.
//! [`why`] is the one place a comparison's cause is worded.

use crate::fmt::{fmt_count, group_thousands, human_bytes};
use crate::model::evidence::{Evidence, GivenBack, Moved, Per, Recorded};
use serde::Serialize;

/// The least calls per unit a mechanism or a difference is named from: half a call per
/// iteration (one every other iteration), one call in a run.
pub fn calls_floor(per: Per) -> f64 {
    match per {
        Per::Iteration => crate::model::metric::BRK.named_from(),
        Per::Run => 1.0,
    }
}

/// The least faults per unit: one per iteration, two in a run.
pub fn faults_floor(per: Per) -> f64 {
    match per {
        Per::Iteration => crate::model::metric::MINOR_FAULTS.named_from(),
        Per::Run => crate::model::metric::RUN_MINOR_FAULTS.named_from(),
    }
}

/// The one rule by which two counts differ: by at least `floor` and by a tenth of the
/// larger.
pub fn differs(a: f64, b: f64, floor: f64) -> bool {
    let d = (a - b).abs();
    d >= floor && d >= 0.1 * a.abs().max(b.abs())
}

/// One mechanism that holds in a recording: its figures per unit and its sentence.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Held {
    /// The registry's key ("trim", "purge", …).
    pub key: &'static str,
    /// Its name in words ("a trim").
    pub name: &'static str,
    pub per: Per,
    /// Its calls per unit (0 for faults alone).
    pub calls: f64,
    /// The bytes they moved per unit.
    pub bytes: f64,
    /// The faults per unit it accounts for; None where the faults' addresses were not
    /// recorded.
    pub faults: Option<f64>,
    /// The sentence every surface prints.
    pub sentence: String,
}

/// One entry of the registry.
pub struct Mechanism {
    pub key: &'static str,
    pub name: &'static str,
    /// What the rule reads: the evidence it needs (docs/why.md lists it).
    pub needs: &'static str,
    /// What the lab says where that evidence is not there.
    pub without: &'static str,
    rule: fn(&Evidence, &Mechanism) -> Option<Held>,
}

/// Every mechanism the lab names, in the order it names them.
pub const MECHANISMS: &[Mechanism] = &[
    Mechanism {
        key: "trim",
        name: "a trim",
        needs: "brk calls with the break each asked for and set: one that moved it down shrank the heap; a later one that moved it up over that range grew it back",
        without: "without brk's arguments (counters only) the brk calls are counted and no trim is said",
        rule: trim,
    },
    Mechanism {
        key: "purge",
        name: "a purge",
        needs: "madvise calls with their advice and range (DONTNEED, REMOVE, PAGEOUT drop the range's pages at once), and each fault's address: faults on a purged range are its pages faulted in again",
        without: "without the faults' addresses the purge is said with its bytes, and that whether its pages were faulted in again was not recorded",
        rule: purge,
    },
    Mechanism {
        key: "lazy-free",
        name: "a lazy free",
        needs: "madvise(FREE) calls with their range, and the faults' addresses: FREE only marks pages the kernel may take when it needs memory; a fault on them shows it took them",
        without: "without the faults' addresses it is said that the pages were marked free, not that they were given back",
        rule: lazy_free,
    },
    Mechanism {
        key: "unused-purge",
        name: "a purge of pages not touched again",
        needs: "releasing madvise calls as for a purge, and the faults' addresses: no fault lands on what they gave back (a decay purge that costs calls, not faults)",
        without: "without the faults' addresses it cannot be told from a purge",
        rule: unused_purge,
    },
    Mechanism {
        key: "exit-release",
        name: "a release at exit",
        needs: "a command's releasing madvise and munmap calls, and the time of its last fault: those after it gave back memory nothing touched again",
        without: "without the faults' times it is not said",
        rule: exit_release,
    },
    Mechanism {
        key: "map-per-buffer",
        name: "a map per buffer",
        needs: "mmap calls with the address each returned and munmap calls with theirs: the same anonymous block unmapped whole after it was mapped, every iteration",
        without: "without mmap's results the blocks are matched by length",
        rule: map_per_buffer,
    },
    Mechanism {
        key: "first-touch",
        name: "first touches",
        needs: "each fault's address and every range given back before it: a fault on memory never given back is a first touch",
        without: "without the faults' addresses faults are counted and not said to be first touches or faulted in again",
        rule: first_touch,
    },
    Mechanism {
        key: "keeps-pages",
        name: "pages kept",
        needs: "the faults' addresses and every releasing call: fewer than one fault per iteration (two in a run) and nothing given back",
        without: "without a recording the counts are said alone",
        rule: keeps_pages,
    },
    Mechanism {
        key: "advice",
        name: "advice",
        needs: "madvise's advice: HUGEPAGE, NOHUGEPAGE, DONTDUMP and the like give nothing back",
        without: "without the advice every madvise is only counted",
        rule: advice,
    },
];

/// The mechanism of `key`.
pub fn by_key(key: &str) -> Option<&'static Mechanism> {
    MECHANISMS.iter().find(|m| m.key == key)
}

/// "3,874 faults", "1 fault": a count of faults per unit.
fn faults_word(f: f64, per: Per) -> String {
    let n = count(f, per);
    if n == "1" {
        "1 fault".to_string()
    } else {
        format!("{n} faults")
    }
}

/// "of 8.0 MiB", "of 4.1 to 64.1 MiB": the size of the calls of `m`, one size or the
/// range.
fn sizes(m: &Moved) -> String {
    if m.calls == 0 {
        return String::new();
    }
    if m.most == 0 || m.least == m.most {
        bytes(m.bytes as f64 / m.calls as f64)
    } else {
        format!("{} to {}", bytes(m.least as f64), bytes(m.most as f64))
    }
}

/// A count per unit: two decimals per iteration, a whole number in a run.
fn count(v: f64, per: Per) -> String {
    match per {
        Per::Iteration => fmt_count(v),
        Per::Run => group_thousands(v.round() as i64),
    }
}

fn bytes(v: f64) -> String {
    human_bytes(v.max(0.0).round() as u64)
}

fn unit(per: Per) -> String {
    format!("per {}", per.word())
}

/// Faults per unit that landed on memory given back by `how`, where recorded.
fn faults_after(e: &Evidence, how: GivenBack) -> Option<f64> {
    e.faults.map(|f| e.per_unit(f.after(how)))
}

/// "; 3,874 faults per iteration landed on the trimmed pages", or that none did.
fn faults_clause(e: &Evidence, how: GivenBack, what: &str) -> String {
    match faults_after(e, how) {
        Some(f) if f >= faults_floor(e.per) => format!(
            "; {} {} landed on the {what} pages",
            faults_word(f, e.per),
            unit(e.per)
        ),
        Some(_) => format!("; no fault landed on the {what} pages"),
        None => String::new(),
    }
}

fn held(m: &Mechanism, e: &Evidence, moved: Moved, faults: Option<f64>, sentence: String) -> Held {
    Held {
        key: m.key,
        name: m.name,
        per: e.per,
        calls: e.per_unit(moved.calls),
        bytes: e.per_unit(moved.bytes),
        faults,
        sentence,
    }
}

fn trim(e: &Evidence, m: &Mechanism) -> Option<Held> {
    let s = e.brk.shrank;
    let n = e.per_unit(s.calls);
    if n < calls_floor(e.per) {
        return None;
    }
    let regrown = if e.brk.regrown_bytes > 0 {
        format!(
            " and {} grew it back over the trimmed top by {}",
            count(e.per_unit(e.brk.regrew), e.per),
            bytes(e.per_unit(e.brk.regrown_bytes))
        )
    } else {
        ", and it did not grow back over it".to_string()
    };
    let sentence = format!(
        "{} brk {} shrank the heap by {} ({}){regrown}{}",
        count(n, e.per),
        unit(e.per),
        bytes(e.per_unit(s.bytes)),
        m.name,
        faults_clause(e, GivenBack::Trim, "trimmed")
    );
    Some(held(m, e, s, faults_after(e, GivenBack::Trim), sentence))
}

/// "madvise(DONTNEED)", "madvise(DONTNEED, FREE)": the releasing advice used.
fn releasing_advice(e: &Evidence) -> String {
    let names: Vec<String> = e
        .madvise
        .keys()
        .filter(|k| crate::model::evidence::releases(k))
        .map(|k| k.to_uppercase())
        .collect();
    format!("madvise({})", names.join(", "))
}

fn purge(e: &Evidence, m: &Mechanism) -> Option<Held> {
    let p = e.purged();
    let n = e.per_unit(p.calls);
    if n < calls_floor(e.per) {
        return None;
    }
    let faults = faults_after(e, GivenBack::Purge);
    let refaulted = faults.map(|f| f >= faults_floor(e.per));
    if refaulted == Some(false) {
        return None;
    }
    let tail = if refaulted.is_some() {
        faults_clause(e, GivenBack::Purge, "purged")
    } else {
        "; whether its pages were faulted in again was not recorded".to_string()
    };
    let sentence = format!(
        "{} {} {} over {} ({}){tail}",
        count(n, e.per),
        releasing_advice(e),
        unit(e.per),
        bytes(e.per_unit(p.bytes)),
        m.name
    );
    Some(held(m, e, p, faults, sentence))
}

fn lazy_free(e: &Evidence, m: &Mechanism) -> Option<Held> {
    let p = e.freed();
    let n = e.per_unit(p.calls);
    if n < calls_floor(e.per) {
        return None;
    }
    let faults = faults_after(e, GivenBack::Free);
    let tail = match faults {
        Some(f) if f >= faults_floor(e.per) => format!(
            "; {} {} landed on them: the kernel had taken them",
            faults_word(f, e.per),
            unit(e.per)
        ),
        Some(_) => "; no fault landed on them: the kernel took none of them back here (it does when it needs memory)".to_string(),
        None => "; whether the kernel took them was not recorded".to_string(),
    };
    let sentence = format!(
        "{} madvise(FREE) {} marked {} free ({}){tail}",
        count(n, e.per),
        unit(e.per),
        bytes(e.per_unit(p.bytes)),
        m.name
    );
    Some(held(m, e, p, faults, sentence))
}

fn unused_purge(e: &Evidence, m: &Mechanism) -> Option<Held> {
    let p = e.purged();
    let n = e.per_unit(p.calls);
    let faults = faults_after(e, GivenBack::Purge)?;
    if n < calls_floor(e.per) || faults >= faults_floor(e.per) {
        return None;
    }
    let sentence = format!(
        "{} {} {} over {} that no fault touched again (calls, not faults)",
        count(n, e.per),
        releasing_advice(e),
        unit(e.per),
        bytes(e.per_unit(p.bytes)),
    );
    Some(held(m, e, p, Some(faults), sentence))
}

fn exit_release(e: &Evidence, m: &Mechanism) -> Option<Held> {
    let r = e.released_after_last_fault;
    if e.per != Per::Run || e.faults.is_none() || (r.calls as f64) < calls_floor(e.per) {
        return None;
    }
    let sentence = format!(
        "{} munmap and releasing madvise calls gave back {} after the run's last page fault (at exit)",
        count(r.calls as f64, e.per),
        bytes(r.bytes as f64),
    );
    Some(held(m, e, r, Some(0.0), sentence))
}

fn map_per_buffer(e: &Evidence, m: &Mechanism) -> Option<Held> {
    let u = e.unmapped_again;
    let n = e.per_unit(u.calls);
    // Where the faults were recorded, the block's pages must be faulted in again: a block
    // mapped and unmapped untouched costs two calls, not a mechanism.
    let faults = faults_after(e, GivenBack::Unmap);
    if n < calls_floor(e.per) || faults.is_some_and(|f| f < faults_floor(e.per)) {
        return None;
    }
    let sentence = format!(
        "{} mmap and munmap of the same block ({}) {} ({}){}",
        count(n, e.per),
        sizes(&u),
        unit(e.per),
        m.name,
        faults_clause(e, GivenBack::Unmap, "unmapped")
    );
    Some(held(m, e, u, faults, sentence))
}

fn first_touch(e: &Evidence, m: &Mechanism) -> Option<Held> {
    let f = e.per_unit(e.faults?.first_touch);
    if f < faults_floor(e.per) {
        return None;
    }
    let sentence = format!(
        "{} {} were first touches of memory never given back",
        faults_word(f, e.per),
        unit(e.per),
    );
    Some(held(m, e, Moved::default(), Some(f), sentence))
}

fn keeps_pages(e: &Evidence, m: &Mechanism) -> Option<Held> {
    let f = e.faults?;
    let floor = faults_floor(e.per);
    let released = e.brk.shrank.calls + e.munmap.calls + e.purged().calls;
    if e.per_unit(f.total()) >= floor || e.per_unit(released) >= calls_floor(e.per) {
        return None;
    }
    let sentence = format!(
        "fewer than {} {} and nothing given back: it keeps and reuses its pages",
        match e.per {
            Per::Iteration => "one fault",
            Per::Run => "two faults",
        },
        unit(e.per)
    );
    Some(held(
        m,
        e,
        Moved::default(),
        Some(e.per_unit(f.total())),
        sentence,
    ))
}

fn advice(e: &Evidence, m: &Mechanism) -> Option<Held> {
    let a = e.advised();
    let n = e.per_unit(a.calls);
    if n < calls_floor(e.per) {
        return None;
    }
    let names: Vec<String> = e
        .madvise
        .keys()
        .filter(|k| !crate::model::evidence::releases(k) && *k != "free")
        .map(|k| k.to_uppercase())
        .collect();
    let sentence = format!(
        "{} madvise({}) {} gave nothing back ({})",
        count(n, e.per),
        names.join(", "),
        unit(e.per),
        m.name
    );
    Some(held(m, e, a, None, sentence))
}

/// Every mechanism whose rule holds in `e`.
pub fn held_in(e: &Evidence) -> Vec<Held> {
    MECHANISMS.iter().filter_map(|m| (m.rule)(e, m)).collect()
}

/// What one side's recorded calls and faults did, in words: every mechanism that holds,
/// "no known mechanism" with what was recorded, or why nothing was.
pub fn said_of(recorded: Option<&Recorded>) -> String {
    said_parts(recorded).join("; ")
}

/// [`said_of`] in its parts: one per mechanism (the faults' note with the last).
pub fn said_parts(recorded: Option<&Recorded>) -> Vec<String> {
    match recorded.map(Recorded::get) {
        Some(Ok(e)) => {
            let held = held_in(e);
            let mut parts: Vec<String> = if held.is_empty() {
                let c = e.counts();
                vec![format!(
                    "no known mechanism: its recorded run made {} brk, {} mmap, {} munmap and {} madvise {}",
                    count(e.per_unit(c.brk), e.per),
                    count(e.per_unit(c.mmap), e.per),
                    count(e.per_unit(c.munmap), e.per),
                    count(e.per_unit(c.madvise), e.per),
                    unit(e.per)
                )]
            } else {
                held.into_iter().map(|h| h.sentence).collect()
            };
            if let Some(last) = parts.last_mut() {
                last.push_str(&faults_note(e));
            }
            parts
        }
        Some(Err(why)) => vec![format!("the mechanism was not recorded ({why})")],
        None => vec!["the mechanism was not recorded".to_string()],
    }
}

/// A side's counts per unit from its timed processes (or runs), as the comparison reads
/// them.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counts {
    pub faults: f64,
    pub brk: f64,
    pub mmap: f64,
    pub munmap: f64,
    pub madvise: f64,
    /// The memory syscalls were not counted: the call fields are 0 for want of a figure.
    pub calls_uncounted: bool,
    /// The bytes its faults mapped in and how many of them mapped a huge page, where the
    /// kernel's huge-page count was read.
    pub faulted: Option<(f64, f64)>,
}

impl Counts {
    /// A summary row's counts per iteration (medians over its processes).
    pub fn of_row(r: &crate::model::summary::SummaryRow) -> Self {
        use crate::model::metric::{
            BRK, FAULTED_BYTES, HUGE_FAULTS, MADVISE, MINOR_FAULTS, MMAP, MUNMAP,
        };
        Counts {
            calls_uncounted: r.per_iter[BRK].is_none(),
            faults: r.per_iter[MINOR_FAULTS].unwrap_or(0.0),
            brk: r.per_iter[BRK].unwrap_or(0.0),
            mmap: r.per_iter[MMAP].unwrap_or(0.0),
            munmap: r.per_iter[MUNMAP].unwrap_or(0.0),
            madvise: r.per_iter[MADVISE].unwrap_or(0.0),
            faulted: r.per_iter[FAULTED_BYTES].zip(r.per_iter[HUGE_FAULTS]),
        }
    }

    /// What a recorded run itself counted, per unit: its faults (where recorded) and its
    /// memory syscalls.
    pub fn of_evidence(e: &Evidence) -> Self {
        let c = e.counts();
        Counts {
            calls_uncounted: false,
            faults: e.faults.map_or(0.0, |f| e.per_unit(f.total())),
            brk: e.per_unit(c.brk),
            mmap: e.per_unit(c.mmap),
            munmap: e.per_unit(c.munmap),
            madvise: e.per_unit(c.madvise),
            faulted: None,
        }
    }

    /// A command's counts per run (medians over its runs).
    pub fn of_run(f: &crate::model::metric::RunFigures) -> Self {
        use crate::model::metric::{RUN_BRK, RUN_MADVISE, RUN_MINOR_FAULTS, RUN_MMAP, RUN_MUNMAP};
        Counts {
            calls_uncounted: f[RUN_BRK].is_none(),
            faults: f[RUN_MINOR_FAULTS].unwrap_or(0.0),
            brk: f[RUN_BRK].unwrap_or(0.0),
            mmap: f[RUN_MMAP].unwrap_or(0.0),
            munmap: f[RUN_MUNMAP].unwrap_or(0.0),
            madvise: f[RUN_MADVISE].unwrap_or(0.0),
            faulted: None,
        }
    }

    fn calls(&self) -> [(&'static str, f64); 4] {
        [
            ("brk", self.brk),
            ("mmap", self.mmap),
            ("munmap", self.munmap),
            ("madvise", self.madvise),
        ]
    }
}

/// One side of a comparison: its name in the sentence, its counts, and its evidence (or
/// why there is none).
#[derive(Clone, Copy)]
pub struct Side<'a> {
    /// How the sentence names it ("out-of-place", "system", "mimalloc in-place").
    pub name: &'a str,
    pub counts: Counts,
    pub evidence: Option<&'a Recorded>,
}

/// Whether two sides' counts differ enough to be said: faults or a memory syscall by
/// [`differs`].
pub fn counts_differ(a: Counts, b: Counts, per: Per) -> bool {
    differs(a.faults, b.faults, faults_floor(per))
        || (!a.calls_uncounted
            && !b.calls_uncounted
            && a.calls()
                .iter()
                .zip(b.calls())
                .any(|((_, x), (_, y))| differs(*x, y, calls_floor(per))))
}

/// The least huge-page faults per iteration that make one side's fewer faults a matter of
/// page size: one every other iteration.
const HUGE_FAULTS_NAMED: f64 = 0.5;

/// "3,874 more page faults and 3.00 more brk per iteration": `subject`'s counts against
/// `base`'s, the differences by [`differs`].
fn count_words(subject: Counts, base: Counts, per: Per) -> String {
    let mut parts = Vec::new();
    let d = subject.faults - base.faults;
    if differs(subject.faults, base.faults, faults_floor(per)) {
        let (fewer_side, more_side) = if d < 0.0 {
            (subject, base)
        } else {
            (base, subject)
        };
        let huge = fewer_side.faulted.map_or(0.0, |(_, h)| h);
        let same_bytes = match (fewer_side.faulted, more_side.faulted) {
            (Some((f, _)), Some((m, _))) => f >= 0.75 * m,
            _ => false,
        };
        let mut s = format!(
            "{} {} page faults",
            count(d.abs(), per),
            if d > 0.0 { "more" } else { "fewer" }
        );
        if huge >= HUGE_FAULTS_NAMED && same_bytes {
            s.push_str(&format!(
                " ({} of the fewer map a huge page each: as much memory is faulted in with fewer, larger faults)",
                count(huge, per)
            ));
        }
        parts.push(s);
    }
    if subject.calls_uncounted || base.calls_uncounted {
        parts.push("memory syscalls not counted".to_string());
    } else {
        for ((name, a), (_, b)) in subject.calls().iter().zip(base.calls()) {
            if differs(*a, b, calls_floor(per)) {
                parts.push(format!(
                    "{} {} {name}",
                    count((a - b).abs(), per),
                    if *a > b { "more" } else { "fewer" }
                ));
            }
        }
    }
    if parts.is_empty() {
        return String::new();
    }
    format!("{} {}", parts.join(", "), unit(per))
}

/// What a sentence about faults owes its reader of how they were recorded: that their
/// addresses were not, that the recorder lost some, or that only user-mode faults were
/// sampled; empty where every fault was recorded.
fn faults_note(e: &Evidence) -> String {
    match e.faults {
        None => " (the faults' addresses were not recorded)".to_string(),
        Some(f) if f.lost > 0 => format!(
            " ({} faults of the recorded run were lost by the recorder: the fault figures are short by up to that many)",
            group_thousands(f.lost as i64)
        ),
        Some(f) if f.user_mode_only => " (user-mode faults only: this user may not sample the kernel's faults on user memory)".to_string(),
        Some(_) => String::new(),
    }
}

/// Where the recorded run's counts differ from the timed ones': "the recorded process of
/// out-of-place made 2.00 brk per iteration where the timed ones made 3.00".
fn check(side: &Side, e: &Evidence) -> Option<String> {
    if side.counts.calls_uncounted {
        return None;
    }
    let c = e.counts();
    let recorded = [
        ("brk", c.brk),
        ("mmap", c.mmap),
        ("munmap", c.munmap),
        ("madvise", c.madvise),
    ];
    let off: Vec<String> = recorded
        .iter()
        .zip(side.counts.calls())
        .filter(|((_, r), (_, t))| differs(e.per_unit(*r), *t, calls_floor(e.per)))
        .map(|((name, r), (_, t))| {
            format!(
                "{} {name} {} where the timed ones made {}",
                count(e.per_unit(*r), e.per),
                unit(e.per),
                count(t, e.per)
            )
        })
        .collect();
    (!off.is_empty()).then(|| {
        format!(
            "the recorded {} of {} made {}",
            match e.per {
                Per::Iteration => "process",
                Per::Run => "run",
            },
            side.name,
            off.join(", ")
        )
    })
}

/// The faults a mechanism of the other side's class accounts for there: its faults on
/// memory given back before (for a mechanism of given-back memory), or its first touches.
fn class_faults(key: &str, other: Option<&Evidence>) -> f64 {
    let Some(e) = other else { return 0.0 };
    let Some(f) = e.faults else { return 0.0 };
    match key {
        "first-touch" => e.per_unit(f.first_touch),
        _ => e.per_unit(f.given_back()),
    }
}

/// The mechanisms of `of` that explain what the costly side does more of than the other:
/// where it has more faults (by [`differs`]: `faults` are the costly side's and the
/// other's), those whose faults exceed the other side's faults of their class by a tenth
/// of that difference; where it makes more memory syscalls (by [`differs`]), those whose
/// calls exceed the other side's of the same mechanism by a tenth of it. Each with the
/// other side's figures where it holds there too. (A total one call apart says nothing
/// of a mechanism of twenty: the other side made as many calls of its own.)
fn beyond<'a, 'b>(
    of: &'a [Held],
    against: &'b [Held],
    other: Option<&Evidence>,
    ((faults, other_faults), (calls, other_calls)): ((f64, f64), (f64, f64)),
) -> Vec<(&'a Held, Option<&'b Held>)> {
    let (faults_d, calls_d) = (faults - other_faults, calls - other_calls);
    of.iter()
        .filter(|h| h.key != "advice" || against.iter().all(|a| a.key != "advice"))
        .filter_map(|h| {
            let a = against.iter().find(|a| a.key == h.key);
            let floor_f = faults_floor(h.per);
            let floor_c = calls_floor(h.per);
            let f_extra = h.faults.unwrap_or(0.0) - class_faults(h.key, other);
            let c_extra = h.calls - a.map_or(0.0, |a| a.calls);
            let by_faults = faults_d > 0.0
                && differs(faults, other_faults, floor_f)
                && f_extra >= floor_f.max(0.1 * faults_d);
            let by_calls = calls_d > 0.0
                && differs(calls, other_calls, floor_c)
                && c_extra >= floor_c.max(0.1 * calls_d);
            (by_faults || by_calls).then_some((h, a))
        })
        .collect()
}

/// " (under in-place: 1.00 calls, 8.0 MiB, 1,954 faults per iteration)": what the other
/// side shows of a mechanism both hold.
fn also_under(name: &str, a: &Held) -> String {
    let mut parts = Vec::new();
    if a.calls > 0.0 {
        parts.push(format!(
            "{} {}, {}",
            count(a.calls, a.per),
            if a.calls == 1.0 { "call" } else { "calls" },
            bytes(a.bytes)
        ));
    }
    if let Some(f) = a.faults.filter(|f| *f > 0.0) {
        parts.push(faults_word(f, a.per));
    }
    format!(" (under {name}: {} {})", parts.join(", "), unit(a.per))
}

/// A comparison's cause, from the counts and the evidence.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Why {
    /// The sentence: the count differences, then what the costlier side's recorded calls
    /// did, or that no known mechanism or no recording explains them, or that the counts
    /// are the same.
    pub text: String,
    /// The mechanisms it names, with their figures.
    pub mechanisms: Vec<Held>,
    /// What the sentence rests on: "mechanism" (named from the evidence),
    /// "no-known-mechanism" (the counts differ, no rule holds), "not-recorded" (the counts
    /// differ, nothing was recorded), "no-difference" (neither the counts nor the
    /// evidence differ).
    pub basis: &'static str,
}

impl Why {
    /// Whether it explains a difference: the counts differ, or a mechanism was named.
    pub fn explains(&self) -> bool {
        self.basis != "no-difference"
    }
}

/// Why `subject` differs from `base` (its time over theirs `ratio`), per `per`: the
/// mechanisms of the slower side (the one whose recorded calls can explain a cost) that
/// the other shows less of, after the count differences of `subject` against `base`.
pub fn why_of(subject: Side, base: Side, (ratio, decided): (f64, bool), per: Per) -> Why {
    // Without a verdict on time, the costlier side is the one with more faults, or else
    // with more memory syscalls.
    let calls = |c: &Counts| c.brk + c.mmap + c.munmap + c.madvise;
    let (s, b) = (subject.counts, base.counts);
    let subject_costly = if decided {
        ratio > 1.0
    } else if differs(s.faults, b.faults, faults_floor(per)) {
        s.faults > b.faults
    } else if differs(calls(&s), calls(&b), calls_floor(per)) {
        calls(&s) > calls(&b)
    } else {
        ratio > 1.0
    };
    if subject_costly {
        why(subject, base, true, per)
    } else {
        why(base, subject, false, per)
    }
}

/// Why `costly` (whose recorded calls the sentence reads) differs from `other`, per
/// `per`; the count words are of `costly` against `other` where `subject_is_costly`, of
/// `other` against `costly` otherwise.
pub fn why(costly: Side, other: Side, subject_is_costly: bool, per: Per) -> Why {
    let (subject, base) = if subject_is_costly {
        (costly.counts, other.counts)
    } else {
        (other.counts, costly.counts)
    };
    let base_name = if subject_is_costly {
        other.name
    } else {
        costly.name
    };
    let counted = count_words(subject, base, per);
    let mine = costly.evidence.map(|r| r.get().map(held_in));
    let theirs: Vec<Held> = match other.evidence.map(Recorded::get) {
        Some(Ok(e)) => held_in(e),
        _ => Vec::new(),
    };
    let same = || {
        Why {
        text: format!(
            "the same page faults and memory syscalls as {base_name}{}: the counts do not explain the difference",
            if subject.calls_uncounted || base.calls_uncounted {
                " (memory syscalls not counted)"
            } else {
                ""
            }
        ),
        mechanisms: Vec::new(),
        basis: "no-difference",
    }
    };
    let lead = |rest: &str| {
        if counted.is_empty() {
            rest.to_string()
        } else {
            format!("{counted}: {rest}")
        }
    };
    let (mut text, mechanisms, basis) = match mine {
        Some(Ok(held)) => {
            let calls = |c: &Counts| c.brk + c.mmap + c.munmap + c.madvise;
            let difference = (
                (costly.counts.faults, other.counts.faults),
                (calls(&costly.counts), calls(&other.counts)),
            );
            let other_evidence = other.evidence.and_then(|r| r.get().ok());
            let pairs = beyond(&held, &theirs, other_evidence, difference);
            let said: Vec<String> = pairs
                .iter()
                .map(|(h, a)| match a {
                    Some(a) => format!("{}{}", h.sentence, also_under(other.name, a)),
                    None => h.sentence.clone(),
                })
                .collect();
            let named: Vec<Held> = pairs.into_iter().map(|(h, _)| h.clone()).collect();
            if named.is_empty() {
                if counted.is_empty() {
                    return same();
                }
                let names = |h: &[Held]| {
                    h.iter()
                        .filter(|h| h.key != "advice")
                        .map(|h| h.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                let (mine, yours) = (names(&held), names(&theirs));
                let text = if mine.is_empty() {
                    format!(
                        "under {}, no known mechanism: its recorded run holds no rule the lab knows",
                        costly.name
                    )
                } else if mine == yours {
                    format!(
                        "under {}, no known mechanism costs more than under {}: both show {mine}",
                        costly.name, other.name
                    )
                } else if yours.is_empty() {
                    format!(
                        "under {}, no known mechanism costs more than under {}: {} shows {mine}, costing no more faults or calls",
                        costly.name, other.name, costly.name
                    )
                } else {
                    format!(
                        "under {}, no known mechanism costs more than under {}: {} shows {mine}, {} {yours}",
                        costly.name, other.name, costly.name, other.name
                    )
                };
                (lead(&text), Vec::new(), "no-known-mechanism")
            } else {
                let mut text = lead(&format!("under {}, {}", costly.name, said.join("; ")));
                if let Some(Ok(e)) = costly.evidence.map(Recorded::get) {
                    if named
                        .iter()
                        .any(|h| h.faults.is_some() || h.key != "advice")
                    {
                        text.push_str(&faults_note(e));
                    }
                }
                (text, named, "mechanism")
            }
        }
        Some(Err(why)) => {
            if counted.is_empty() {
                return same();
            }
            (
                format!("{counted}; the mechanism was not recorded ({why})"),
                Vec::new(),
                "not-recorded",
            )
        }
        None => {
            if counted.is_empty() {
                return same();
            }
            (
                format!("{counted}; the mechanism was not recorded"),
                Vec::new(),
                "not-recorded",
            )
        }
    };
    if let Some(Ok(e)) = costly.evidence.map(Recorded::get) {
        if let Some(c) = check(&costly, e) {
            text.push_str(&format!(" ({c})"));
        }
    }
    Why {
        text,
        mechanisms,
        basis,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::evidence::{BrkMoves, FaultSplit};

    const MIB: u64 = 1 << 20;

    fn glibc_out_of_place() -> Evidence {
        Evidence {
            per: Per::Iteration,
            units: 100.0,
            calls_from: "ptrace".into(),
            brk: BrkMoves {
                grew: Moved {
                    calls: 200,
                    bytes: 1510 * MIB,
                    ..Moved::default()
                },
                shrank: Moved {
                    calls: 100,
                    bytes: 1510 * MIB,
                    ..Moved::default()
                },
                still: 0,
                regrew: 200,
                regrown_bytes: 1510 * MIB,
            },
            faults: Some(FaultSplit {
                after_trim: 387_400,
                ..FaultSplit::default()
            }),
            ..Evidence::default()
        }
    }

    fn quiet() -> Evidence {
        Evidence {
            per: Per::Iteration,
            units: 100.0,
            calls_from: "ptrace".into(),
            faults: Some(FaultSplit::default()),
            ..Evidence::default()
        }
    }

    #[test]
    fn a_trim_is_named_with_its_evidence() {
        let e = glibc_out_of_place();
        let held = held_in(&e);
        assert_eq!(held.len(), 1, "{held:?}");
        assert_eq!(
            held[0].sentence,
            "1.00 brk per iteration shrank the heap by 15.1 MiB (a trim) and 2.00 grew it back over the trimmed top by 15.1 MiB; 3,874 faults per iteration landed on the trimmed pages"
        );
    }

    #[test]
    fn a_comparison_names_the_costly_sides_mechanism_only() {
        let oop = Recorded::Recorded(Box::new(glibc_out_of_place()));
        let ip = Recorded::Recorded(Box::new(quiet()));
        let costly = Side {
            name: "out-of-place",
            counts: Counts {
                faults: 3874.0,
                brk: 3.0,
                ..Counts::default()
            },
            evidence: Some(&oop),
        };
        let other = Side {
            name: "in-place",
            counts: Counts::default(),
            evidence: Some(&ip),
        };
        let w = why(costly, other, true, Per::Iteration);
        assert!(w.text.starts_with("3,874 more page faults, 3.00 more brk per iteration: under out-of-place, 1.00 brk per iteration shrank the heap"), "{}", w.text);
        assert_eq!(w.basis, "mechanism");
        // The recorded process made 3.00 brk per iteration: no check note.
        assert!(!w.text.contains("recorded process"), "{}", w.text);
        // Seen from the faster side (reuse vs in-place), the words are "fewer".
        let w = why(costly, other, false, Per::Iteration);
        assert!(w.text.starts_with("3,874 fewer page faults"), "{}", w.text);
    }

    /// A heap that never trims: counts differ, no rule holds for the costly side.
    #[test]
    fn no_mechanism_is_invented_where_no_rule_holds() {
        let grows = Recorded::Recorded(Box::new(Evidence {
            per: Per::Run,
            units: 1.0,
            faults: Some(FaultSplit {
                first_touch: 10,
                ..FaultSplit::default()
            }),
            madvise: [(
                "hugepage".to_string(),
                Moved {
                    calls: 3,
                    bytes: 3 * MIB,
                    ..Moved::default()
                },
            )]
            .into_iter()
            .collect(),
            ..Evidence::default()
        }));
        let other = Recorded::Recorded(Box::new(Evidence {
            per: Per::Run,
            units: 1.0,
            faults: Some(FaultSplit {
                first_touch: 6000,
                ..FaultSplit::default()
            }),
            ..Evidence::default()
        }));
        let costly = Side {
            name: "snmalloc",
            counts: Counts {
                faults: 10.0,
                madvise: 3.0,
                ..Counts::default()
            },
            evidence: Some(&grows),
        };
        let base = Side {
            name: "system",
            counts: Counts {
                faults: 6000.0,
                ..Counts::default()
            },
            evidence: Some(&other),
        };
        let w = why(costly, base, true, Per::Run);
        assert!(!w.text.contains("trim"), "{}", w.text);
        assert!(!w.text.contains("faulted in again"), "{}", w.text);
        assert!(
            w.text
                .contains("3 madvise(HUGEPAGE) per run gave nothing back (advice)"),
            "{}",
            w.text
        );
    }

    #[test]
    fn without_a_recording_the_counts_stand_alone() {
        let none = Recorded::Unrecorded("the evidence run failed: x".into());
        let costly = Side {
            name: "jemalloc",
            counts: Counts {
                faults: 1954.0,
                madvise: 1.0,
                ..Counts::default()
            },
            evidence: Some(&none),
        };
        let other = Side {
            name: "in-place",
            counts: Counts::default(),
            evidence: None,
        };
        let w = why(costly, other, true, Per::Iteration);
        assert_eq!(
            w.text,
            "1,954 more page faults, 1.00 more madvise per iteration; the mechanism was not recorded (the evidence run failed: x)"
        );
        assert_eq!(w.basis, "not-recorded");
    }

    #[test]
    fn purge_without_fault_addresses_says_so() {
        let e = Evidence {
            per: Per::Iteration,
            units: 10.0,
            madvise: [(
                "dontneed".to_string(),
                Moved {
                    calls: 10,
                    bytes: 80 * MIB,
                    ..Moved::default()
                },
            )]
            .into_iter()
            .collect(),
            faults_unrecorded: Some("paranoid".into()),
            ..Evidence::default()
        };
        let h = held_in(&e);
        assert_eq!(h.len(), 1);
        assert_eq!(h[0].sentence, "1.00 madvise(DONTNEED) per iteration over 8.0 MiB (a purge); whether its pages were faulted in again was not recorded");
    }

    /// The same faults on both sides, given back by different mechanisms (jemalloc's
    /// purge, glibc's map per buffer of a large calloc): neither is named as the cost.
    #[test]
    fn a_mechanism_of_as_many_faults_is_not_the_cost() {
        let purge = Recorded::Recorded(Box::new(Evidence {
            per: Per::Run,
            units: 1.0,
            madvise: [(
                "dontneed".to_string(),
                Moved {
                    calls: 17,
                    bytes: 630 * MIB,
                    ..Moved::default()
                },
            )]
            .into_iter()
            .collect(),
            faults: Some(FaultSplit {
                after_purge: 143_361,
                ..FaultSplit::default()
            }),
            ..Evidence::default()
        }));
        let unmap = Recorded::Recorded(Box::new(Evidence {
            per: Per::Run,
            units: 1.0,
            unmapped_again: Moved {
                calls: 15,
                bytes: 600 * MIB,
                ..Moved::default()
            },
            faults: Some(FaultSplit {
                after_unmap: 143_360,
                ..FaultSplit::default()
            }),
            ..Evidence::default()
        }));
        let costly = Side {
            name: "jemalloc",
            counts: Counts {
                faults: 143_361.0,
                madvise: 17.0,
                ..Counts::default()
            },
            evidence: Some(&purge),
        };
        let other = Side {
            name: "system",
            counts: Counts {
                faults: 143_360.0,
                mmap: 15.0,
                munmap: 15.0,
                ..Counts::default()
            },
            evidence: Some(&unmap),
        };
        let w = why(costly, other, true, Per::Run);
        assert_eq!(w.basis, "no-known-mechanism", "{}", w.text);
        assert!(
            w.text
                .contains("jemalloc shows a purge, system a map per buffer"),
            "{}",
            w.text
        );
    }

    /// A fresh program (48 MiB malloc'd, touched and freed per iteration; strace: glibc
    /// mmaps and munmaps it each time, jemalloc madvises it DONTNEED): the slower side's
    /// map per buffer is no cause when its memory syscalls are one call apart in all and
    /// the faults alike.
    #[test]
    fn a_total_one_call_apart_names_no_mechanism_of_twenty() {
        let unmap = Recorded::Recorded(Box::new(Evidence {
            per: Per::Run,
            units: 1.0,
            unmapped_again: Moved {
                calls: 20,
                bytes: 960 * MIB,
                ..Moved::default()
            },
            faults: Some(FaultSplit {
                after_unmap: 233_491,
                ..FaultSplit::default()
            }),
            ..Evidence::default()
        }));
        let purge = Recorded::Recorded(Box::new(Evidence {
            per: Per::Run,
            units: 1.0,
            madvise: [(
                "dontneed".to_string(),
                Moved {
                    calls: 20,
                    bytes: 1000 * MIB,
                    ..Moved::default()
                },
            )]
            .into_iter()
            .collect(),
            faults: Some(FaultSplit {
                after_purge: 233_500,
                ..FaultSplit::default()
            }),
            ..Evidence::default()
        }));
        let system = Side {
            name: "system",
            counts: Counts {
                faults: 245_839.0,
                brk: 3.0,
                mmap: 28.0,
                munmap: 21.0,
                ..Counts::default()
            },
            evidence: Some(&unmap),
        };
        let jemalloc = Side {
            name: "jemalloc",
            counts: Counts {
                faults: 245_939.0,
                brk: 2.0,
                mmap: 24.0,
                munmap: 3.0,
                madvise: 22.0,
                ..Counts::default()
            },
            evidence: Some(&purge),
        };
        // jemalloc 0.85x system's time, undecided: system is the costlier side.
        let w = why_of(jemalloc, system, (0.85, false), Per::Run);
        assert_eq!(w.basis, "no-known-mechanism", "{}", w.text);
        assert!(
            w.text
                .contains("system shows a map per buffer, jemalloc a purge"),
            "{}",
            w.text
        );
    }

    #[test]
    fn the_rule_of_difference() {
        assert!(differs(10.0, 8.0, 1.0));
        assert!(!differs(100.0, 95.0, 1.0));
        assert!(!differs(0.3, 0.0, 0.5));
        assert!(differs(0.5, 0.0, 0.5));
    }
}
