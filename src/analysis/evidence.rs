//! A recorded run's calls and faults turned into [`Evidence`]: one pass over them in
//! time order that follows the heap's break, the blocks mapped, and every range given
//! back (a trim, an unmap, a releasing madvise) until a fault lands on it again. Pure.

use crate::model::evidence::{
    advice_name, BrkMoves, Call, CallKind, Evidence, FaultAt, FaultSplit, GivenBack, Moved, Per,
};
use std::collections::{BTreeMap, HashMap};

const PAGE: u64 = 4096;

fn page_down(a: u64) -> u64 {
    a & !(PAGE - 1)
}

fn page_up(a: u64) -> u64 {
    a.saturating_add(PAGE - 1) & !(PAGE - 1)
}

/// Disjoint page ranges [start, end), each with how it was given back.
#[derive(Clone, Default)]
struct Ranges {
    map: BTreeMap<u64, (u64, GivenBack)>,
}

impl Ranges {
    /// Removes [start, end) (splitting ranges that reach over its edges).
    fn remove(&mut self, start: u64, end: u64) {
        if start >= end {
            return;
        }
        let mut keep = Vec::new();
        let hit: Vec<u64> = self
            .map
            .range(..end)
            .rev()
            .take_while(|(_, (e, _))| *e > start)
            .map(|(s, _)| *s)
            .collect();
        for s in hit {
            if let Some((e, how)) = self.map.remove(&s) {
                if s < start {
                    keep.push((s, start, how));
                }
                if e > end {
                    keep.push((end, e, how));
                }
            }
        }
        for (s, e, how) in keep {
            self.map.insert(s, (e, how));
        }
    }

    fn insert(&mut self, start: u64, end: u64, how: GivenBack) {
        self.remove(start, end);
        if start < end {
            self.map.insert(start, (end, how));
        }
    }

    /// How the page at `page` was given back, if a range holds it.
    fn find(&self, page: u64) -> Option<GivenBack> {
        let (_, (end, how)) = self.map.range(..=page).next_back()?;
        (page < *end).then_some(*how)
    }

    /// Bytes of [start, end) that the ranges hold.
    fn overlap(&self, start: u64, end: u64) -> u64 {
        self.map
            .range(..end)
            .rev()
            .take_while(|(_, (e, _))| *e > start)
            .map(|(s, (e, _))| e.min(&end).saturating_sub(*s.max(&start)))
            .sum()
    }
}

/// What the calls left of one process's address space.
#[derive(Clone, Default)]
struct Space {
    /// Every range given back, with how it was given back last: a fault there is on
    /// memory given back before (its second fault too: a read maps the zero page, the
    /// write then copies it).
    given_back: Ranges,
    /// The heap's top ranges a trim gave back and no growth has covered again.
    trimmed: Ranges,
    /// The break, once a call set or asked for it.
    brk_at: Option<u64>,
    /// Anonymous blocks mmap returned, by address: their length.
    mapped: HashMap<u64, u64>,
    /// Anonymous blocks mapped where mmap's address was not recorded, by length.
    mapped_lengths: HashMap<u64, u64>,
}

enum Step<'a> {
    Call(&'a Call),
    Fault(&'a FaultAt),
}

impl Step<'_> {
    fn time(&self) -> u64 {
        match self {
            Step::Call(c) => c.time_ns,
            Step::Fault(f) => f.time_ns,
        }
    }
}

/// What the faults of a recording were, where they were recorded: the log and what it
/// lost, or why there is none.
pub enum Faults<'a> {
    Recorded {
        faults: &'a [FaultAt],
        lost: u64,
        user_mode_only: bool,
    },
    Unrecorded(String),
}

/// The evidence of a recording: `calls` and `faults` of the whole run (from its exec),
/// counted where they fall in `window` (CLOCK_MONOTONIC, both ends included; None: the
/// whole run), over `units` units of `per`.
pub fn of_recording(
    calls: &[Call],
    faults: Faults<'_>,
    window: Option<(u64, u64)>,
    per: Per,
    units: f64,
    calls_from: &str,
) -> Evidence {
    let inside = |t: u64| window.is_none_or(|(a, b)| t >= a && t <= b);
    let mut steps: Vec<Step> = calls.iter().map(Step::Call).collect();
    let (fault_log, faults_unrecorded) = match &faults {
        Faults::Recorded { faults, .. } => (*faults, None),
        Faults::Unrecorded(why) => (&[][..], Some(why.clone())),
    };
    steps.extend(fault_log.iter().map(Step::Fault));
    // Stable: a call and a fault at the same nanosecond keep the call first (the tracer
    // read the clock at its entry, before anything it did could be touched).
    steps.sort_by_key(Step::time);

    let mut e = Evidence {
        per,
        units,
        calls_from: calls_from.to_string(),
        faults_unrecorded,
        ..Evidence::default()
    };
    let mut split = FaultSplit::default();
    if let Faults::Recorded {
        lost,
        user_mode_only,
        ..
    } = faults
    {
        split.lost = lost;
        split.user_mode_only = user_mode_only;
    }
    let mut brk = BrkMoves::default();
    // Each process's address space as the calls left it; an exec starts a new one.
    let mut spaces: HashMap<u32, Space> = HashMap::new();
    // Releases (counted ones) since the last fault in the window.
    let mut since_fault = Moved::default();
    for step in &steps {
        let counted = inside(step.time());
        let pid = match step {
            Step::Call(c) => c.pid,
            Step::Fault(f) => f.pid,
        };
        match step {
            Step::Call(c) if c.kind == CallKind::Exec => {
                spaces.insert(pid, Space::default());
                continue;
            }
            // A new process starts with a copy of its parent's address space.
            Step::Call(c) if c.kind == CallKind::Fork => {
                let copy = spaces.get(&pid).cloned().unwrap_or_default();
                spaces.insert(c.len as u32, copy);
                continue;
            }
            _ => {}
        }
        let Space {
            given_back,
            trimmed,
            brk_at,
            mapped,
            mapped_lengths,
        } = spaces.entry(pid).or_default();
        match step {
            Step::Fault(f) => {
                let how = given_back.find(page_down(f.addr));
                if counted {
                    since_fault = Moved::default();
                    match how {
                        None => split.first_touch += 1,
                        Some(GivenBack::Trim) => split.after_trim += 1,
                        Some(GivenBack::Unmap) => split.after_unmap += 1,
                        Some(GivenBack::Purge) => split.after_purge += 1,
                        Some(GivenBack::Free) => split.after_free += 1,
                    }
                }
            }
            Step::Call(c) => match c.kind {
                CallKind::Brk => {
                    // The break it set: what it returned, else what it asked for.
                    let new = match (c.ret, c.addr) {
                        (Some(r), _) => Some(r),
                        (None, 0) => None,
                        (None, a) => Some(a),
                    };
                    match (*brk_at, new) {
                        (Some(old), Some(new)) if new > old => {
                            let over = trimmed.overlap(old, new);
                            if counted {
                                brk.grew.add(new - old);
                                brk.regrown_bytes += over;
                                brk.regrew += u64::from(over > 0);
                            }
                            trimmed.remove(old, new);
                        }
                        (Some(old), Some(new)) if new < old => {
                            if counted {
                                brk.shrank.add(old - new);
                            }
                            given_back.insert(page_up(new), page_up(old), GivenBack::Trim);
                            trimmed.insert(new, old, GivenBack::Trim);
                        }
                        _ => {
                            if counted {
                                brk.still += 1;
                            }
                        }
                    }
                    if new.is_some() {
                        *brk_at = new;
                    }
                }
                CallKind::Mmap => {
                    if counted {
                        e.mmap.add(c.len);
                    }
                    // A failed mmap returns -errno; a file's mapping is not the allocator's.
                    let anonymous = c.advice & libc::MAP_ANONYMOUS as u64 != 0;
                    match c.ret.filter(|r| (*r as i64) > 0) {
                        _ if !anonymous => {}
                        Some(at) => {
                            mapped.insert(at, c.len);
                        }
                        None if c.ret.is_none() => {
                            *mapped_lengths.entry(page_up(c.len)).or_default() += 1;
                        }
                        None => {}
                    }
                }
                CallKind::Munmap => {
                    let (start, end) = (page_down(c.addr), page_up(c.addr.saturating_add(c.len)));
                    if counted {
                        e.munmap.add(c.len);
                    }
                    let again = match mapped.get(&c.addr) {
                        Some(len) if page_up(*len) == page_up(c.len) => {
                            mapped.remove(&c.addr);
                            true
                        }
                        _ => match mapped_lengths.get_mut(&page_up(c.len)) {
                            Some(n) if *n > 0 => {
                                *n -= 1;
                                true
                            }
                            _ => false,
                        },
                    };
                    if counted {
                        if again {
                            e.unmapped_again.add(c.len);
                        }
                        since_fault.add(c.len);
                    }
                    given_back.insert(start, end, GivenBack::Unmap);
                }
                CallKind::Madvise => {
                    let (name, releases) = advice_name(c.advice);
                    if counted {
                        e.madvise.entry(name.to_string()).or_default().add(c.len);
                    }
                    let (start, end) = (page_down(c.addr), page_up(c.addr.saturating_add(c.len)));
                    if releases {
                        given_back.insert(start, end, GivenBack::Purge);
                        if counted {
                            since_fault.add(c.len);
                        }
                    } else if name == "free" {
                        given_back.insert(start, end, GivenBack::Free);
                    }
                }
                CallKind::Mremap => {
                    if counted {
                        e.mremap.add(c.len);
                    }
                    // Where the block went (mremap's result): the old range is given back
                    // where the block moved or shrank; the pages that moved are there.
                    let (old, old_len, new_len) = (c.addr, c.advice, c.len);
                    if let Some(new) = c.ret.filter(|r| (*r as i64) > 0) {
                        if new != old {
                            given_back.insert(
                                page_down(old),
                                page_up(old.saturating_add(old_len)),
                                GivenBack::Unmap,
                            );
                            given_back.remove(
                                page_down(new),
                                page_up(new.saturating_add(old_len.min(new_len))),
                            );
                        } else if new_len < old_len {
                            given_back.insert(
                                page_up(old.saturating_add(new_len)),
                                page_up(old.saturating_add(old_len)),
                                GivenBack::Unmap,
                            );
                        }
                        if mapped.remove(&old).is_some() {
                            mapped.insert(new, new_len);
                        }
                    }
                }
                CallKind::Exec | CallKind::Fork => {}
            },
        }
    }
    e.brk = brk;
    if e.faults_unrecorded.is_none() {
        e.faults = Some(split);
        if per == Per::Run {
            e.released_after_last_fault = since_fault;
        }
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(t: u64, kind: CallKind, addr: u64, len: u64, ret: Option<u64>) -> Call {
        Call {
            time_ns: t,
            pid: 1,
            kind,
            addr,
            len,
            advice: if kind == CallKind::Mmap {
                libc::MAP_ANONYMOUS as u64
            } else {
                0
            },
            ret,
        }
    }

    fn faults(t0: u64, from: u64, pages: u64) -> Vec<FaultAt> {
        (0..pages)
            .map(|i| FaultAt {
                time_ns: t0 + i,
                pid: 1,
                addr: from + i * PAGE + 17,
            })
            .collect()
    }

    const MIB: u64 = 1 << 20;

    /// glibc's trim: the heap grows by 16 MiB, is touched, shrinks back, grows again and
    /// is touched again: the second round's faults land on the trimmed top.
    #[test]
    fn a_trim_and_the_faults_on_its_pages() {
        let base = 0x5555_0000_0000;
        let mut calls = vec![call(1, CallKind::Brk, 0, 0, Some(base))];
        let mut log = Vec::new();
        for round in 0..2u64 {
            let t = 1000 + round * 100_000;
            calls.push(call(
                t,
                CallKind::Brk,
                base + 16 * MIB,
                0,
                Some(base + 16 * MIB),
            ));
            log.extend(faults(t + 10, base, 4096));
            calls.push(call(t + 50_000, CallKind::Brk, base + 132 * 1024, 0, None));
        }
        let e = of_recording(
            &calls,
            Faults::Recorded {
                faults: &log,
                lost: 0,
                user_mode_only: false,
            },
            Some((100_000, u64::MAX)),
            Per::Iteration,
            1.0,
            "ptrace",
        );
        assert_eq!(e.brk.grew.calls, 1);
        assert_eq!(e.brk.shrank.calls, 1);
        assert_eq!(e.brk.shrank.bytes, 16 * MIB - 132 * 1024);
        assert_eq!(e.brk.regrown_bytes, 16 * MIB - 132 * 1024);
        let f = e.faults.unwrap();
        // The first 132 KiB of the heap were never given back.
        assert_eq!(f.first_touch, 33);
        assert_eq!(f.after_trim, 4096 - 33);
    }

    /// A purge: one mapping, DONTNEED, touched again; advice that releases nothing is
    /// not a purge.
    #[test]
    fn purged_pages_faulted_in_again_and_advice_apart() {
        let at = 0x7f00_0000_0000;
        let mut calls = vec![call(1, CallKind::Mmap, 0, 8 * MIB, Some(at))];
        let mut huge = call(2, CallKind::Madvise, at, 8 * MIB, None);
        huge.advice = 14;
        calls.push(huge);
        let mut log = faults(10, at, 2048);
        let mut purge = call(5000, CallKind::Madvise, at, 8 * MIB, None);
        purge.advice = 4;
        calls.push(purge);
        log.extend(faults(6000, at, 2048));
        let e = of_recording(
            &calls,
            Faults::Recorded {
                faults: &log,
                lost: 0,
                user_mode_only: true,
            },
            None,
            Per::Run,
            1.0,
            "ptrace",
        );
        let f = e.faults.unwrap();
        assert_eq!((f.first_touch, f.after_purge), (2048, 2048));
        assert_eq!(e.purged().calls, 1);
        assert_eq!(e.advised().calls, 1);
        assert_eq!(e.madvise["hugepage"].bytes, 8 * MIB);
    }

    /// A block mapped and unmapped every time, at the same address: each time again,
    /// and the second time's faults land on what the first unmap gave back.
    #[test]
    fn a_map_per_buffer() {
        let at = 0x7f00_0000_0000;
        let mut calls = Vec::new();
        let mut log = Vec::new();
        for i in 0..3u64 {
            let t = i * 10_000;
            calls.push(call(t, CallKind::Mmap, 0, 64 * MIB, Some(at)));
            log.extend(faults(t + 1, at, 10));
            calls.push(call(t + 5000, CallKind::Munmap, at, 64 * MIB, None));
        }
        let e = of_recording(
            &calls,
            Faults::Recorded {
                faults: &log,
                lost: 0,
                user_mode_only: false,
            },
            None,
            Per::Run,
            1.0,
            "ptrace",
        );
        assert_eq!(e.unmapped_again.calls, 3);
        let f = e.faults.unwrap();
        assert_eq!((f.first_touch, f.after_unmap), (10, 20));
        // Without mmap's address, by the length.
        let blind: Vec<Call> = calls.iter().map(|c| Call { ret: None, ..*c }).collect();
        let e = of_recording(
            &blind,
            Faults::Unrecorded("not here".into()),
            None,
            Per::Run,
            1.0,
            "perf",
        );
        assert_eq!(e.unmapped_again.calls, 3);
        assert!(e.faults.is_none());
    }

    /// Two processes (a launcher and the program it execs) each have their own heap:
    /// their breaks are not one heap's, and an exec starts the address space anew.
    #[test]
    fn every_process_has_its_own_heap_and_an_exec_a_new_one() {
        let (a, b) = (0x5555_0000_0000u64, 0x6666_0000_0000u64);
        let at = |t, pid, kind, addr, ret| Call {
            pid,
            ..call(t, kind, addr, 0, ret)
        };
        let calls = vec![
            at(1, 1, CallKind::Brk, 0, Some(a)),
            at(2, 2, CallKind::Brk, 0, Some(b)),
            at(3, 1, CallKind::Brk, a + MIB, Some(a + MIB)),
            at(4, 2, CallKind::Brk, b + MIB, Some(b + MIB)),
            at(5, 1, CallKind::Brk, a, Some(a)),
            at(6, 2, CallKind::Exec, 0, None),
            // The new program's first break: no trim of the old heap, no growth over it.
            at(7, 2, CallKind::Brk, 0, Some(a + 4 * MIB)),
            at(8, 2, CallKind::Brk, a + 5 * MIB, Some(a + 5 * MIB)),
        ];
        let log = vec![FaultAt {
            time_ns: 9,
            pid: 2,
            addr: a + 4 * MIB + 5,
        }];
        let e = of_recording(
            &calls,
            Faults::Recorded {
                faults: &log,
                lost: 0,
                user_mode_only: false,
            },
            None,
            Per::Run,
            1.0,
            "ptrace",
        );
        assert_eq!((e.brk.grew.calls, e.brk.grew.bytes), (3, 3 * MIB));
        assert_eq!((e.brk.shrank.calls, e.brk.shrank.bytes), (1, MIB));
        assert_eq!(e.brk.regrown_bytes, 0);
        assert_eq!(e.faults.unwrap().first_touch, 1);
    }

    /// What a hostile check found (strace and perf beside): a second fault on a page
    /// given back (a read maps the zero page, the write copies it) is on memory given
    /// back too; MADV_FREE gives nothing back until the kernel takes a page; a forked
    /// child starts from its parent's break; a moved mremap gives its old range back.
    #[test]
    fn second_faults_lazy_frees_forks_and_moves() {
        let at = 0x7f00_0000_0000u64;
        let base = 0x5555_0000_0000u64;
        let mut free = call(20, CallKind::Madvise, at + 64 * MIB, 8 * MIB, None);
        free.advice = 8;
        let mut moved = call(40, CallKind::Mremap, at, 2 * MIB, Some(at + 128 * MIB));
        moved.advice = MIB;
        let calls = vec![
            call(1, CallKind::Mmap, 0, MIB, Some(at)),
            call(5, CallKind::Munmap, at, MIB, None),
            call(6, CallKind::Mmap, 0, MIB, Some(at)),
            free,
            moved,
            call(50, CallKind::Brk, 0, 0, Some(base)),
            call(51, CallKind::Brk, base + MIB, 0, Some(base + MIB)),
            Call {
                len: 7,
                ..call(52, CallKind::Fork, 0, 0, None)
            },
            Call {
                pid: 7,
                ..call(53, CallKind::Brk, base + 3 * MIB, 0, Some(base + 3 * MIB))
            },
        ];
        let fault = |t, addr| FaultAt {
            time_ns: t,
            pid: 1,
            addr,
        };
        let log = vec![
            fault(7, at),
            fault(8, at),
            fault(30, at + 64 * MIB),
            // The moved block's old range, given back by the move.
            fault(45, at + PAGE),
        ];
        let e = of_recording(
            &calls,
            Faults::Recorded {
                faults: &log,
                lost: 0,
                user_mode_only: false,
            },
            None,
            Per::Run,
            1.0,
            "ptrace",
        );
        let f = e.faults.unwrap();
        assert_eq!((f.after_unmap, f.after_free, f.first_touch), (3, 1, 0));
        assert_eq!(e.purged().calls, 0);
        assert_eq!(e.freed().calls, 1);
        // The child's brk grew its copy of the parent's heap by 2 MiB.
        assert_eq!(
            (e.brk.grew.calls, e.brk.grew.bytes, e.brk.still),
            (2, 3 * MIB, 1)
        );
        assert_eq!(e.unmapped_again.calls, 1);
    }

    #[test]
    fn ranges_split_and_overlap() {
        let mut r = Ranges::default();
        r.insert(0, 10 * PAGE, GivenBack::Purge);
        r.remove(3 * PAGE, 4 * PAGE);
        assert_eq!(r.find(3 * PAGE), None);
        assert_eq!(r.find(2 * PAGE), Some(GivenBack::Purge));
        assert_eq!(r.find(9 * PAGE), Some(GivenBack::Purge));
        assert_eq!(r.overlap(0, 20 * PAGE), 9 * PAGE);
        r.insert(5 * PAGE, 15 * PAGE, GivenBack::Unmap);
        assert_eq!(r.find(9 * PAGE), Some(GivenBack::Unmap));
        assert_eq!(r.find(4 * PAGE), Some(GivenBack::Purge));
        assert_eq!(r.overlap(0, 20 * PAGE), 14 * PAGE);
    }
}
