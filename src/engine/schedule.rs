//! The one schedule of the lab: optional warm-up rounds, then measured rounds in which
//! every subject still in the plan runs once, in an order shuffled in *every* round from
//! a recorded seed — so that drift over time and the carry-over of one run into the next
//! (a heavy run leaves the machine's caches, page allocator and frequency changed) reach
//! every subject alike instead of always the same neighbour. Ctrl-C stops it between
//! runs; the caller decides after each round whether another is wanted.
//!
//! [`Order::Blocked`] keeps the subjects that are compared with each other close in time
//! within a round: the blocks run in a shuffled order, each block's subjects one after
//! another, in an order drawn once per pair of rounds and reversed in the second round
//! of the pair (A B C, then C B A): every two subjects of a block run in both orders
//! equally often, and a drift that is linear over the block cancels out of their ratio.

use crate::analysis::stats::SplitMix;
use crate::ui::interrupt::interrupted;

/// A round of the schedule (0-based).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pass {
    /// A warm-up round: run, not kept.
    Warmup(u32),
    /// A measured round.
    Round(u32),
}

/// What the schedule does with a subject after one of its runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// It stays in the plan.
    Keep,
    /// It leaves the plan (its row failed); the others go on.
    Retire,
    /// The whole schedule stops now (the run was interrupted, or results cannot be saved).
    Stop,
}

/// How a schedule ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// Every round asked for ran (subjects that retired excepted).
    Finished,
    /// Ctrl-C or SIGTERM, or a step said [`Next::Stop`].
    Stopped,
}

/// How a round orders its subjects.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Order {
    /// One shuffled permutation of all subjects per round.
    #[default]
    Shuffled,
    /// The block of each subject (any ids): blocks in a shuffled order per round, each
    /// block's subjects together, in an order reversed every second round (ABBA).
    Blocked(Vec<usize>),
}

impl Order {
    /// The name the command line and the results use: "shuffled" or "blocked".
    pub fn name(&self) -> &'static str {
        match self {
            Order::Shuffled => "shuffled",
            Order::Blocked(_) => "blocked",
        }
    }
}

/// `subjects` subjects, `warmup` warm-up rounds, the seed every round's order comes
/// from (record it with the results: the same seed gives the same orders) and how a
/// round is ordered.
#[derive(Clone, Debug)]
pub struct Schedule {
    /// How many subjects the plan has; they are numbered from 0.
    pub subjects: usize,
    /// Warm-up rounds before the measured ones (their runs are not kept).
    pub warmup: u32,
    /// The seed every round's order comes from.
    pub seed: u64,
    /// How each round orders its subjects.
    pub order: Order,
}

/// Warm-up rounds draw their orders from a stream of their own.
const WARMUP_STREAM: u64 = 0x5741_524d_5550_0000;
/// The orders within blocks come from a stream of their own too, one per pair of rounds.
const BLOCK_STREAM: u64 = 0x424c_4f43_4b00_0000;

impl Schedule {
    /// The order of `pass`: a permutation of the subjects, fixed by the seed. Measured
    /// round r uses `seed + r` (the order `run` and `compare` have always recorded).
    pub fn order(&self, pass: Pass) -> Vec<usize> {
        let stream = match pass {
            Pass::Warmup(w) => WARMUP_STREAM.wrapping_add(self.seed) ^ u64::from(w),
            Pass::Round(r) => self.seed.wrapping_add(u64::from(r)),
        };
        let block_of = match &self.order {
            Order::Blocked(b) if b.len() == self.subjects => b,
            _ => {
                let mut order: Vec<usize> = (0..self.subjects).collect();
                SplitMix(stream).shuffle(&mut order);
                return order;
            }
        };
        // The blocks, in the order they first appear; shuffled per round.
        let mut blocks: Vec<usize> = Vec::new();
        for &b in block_of {
            if !blocks.contains(&b) {
                blocks.push(b);
            }
        }
        let mut members: Vec<Vec<usize>> = blocks
            .iter()
            .map(|b| (0..self.subjects).filter(|&i| block_of[i] == *b).collect())
            .collect();
        // Within blocks: one draw per pair of rounds, reversed in the pair's second.
        let (pair, second) = match pass {
            Pass::Warmup(w) => (WARMUP_STREAM ^ u64::from(w / 2), w % 2 == 1),
            Pass::Round(r) => (u64::from(r / 2), r % 2 == 1),
        };
        let mut within = SplitMix(BLOCK_STREAM ^ self.seed.wrapping_add(pair));
        for m in &mut members {
            within.shuffle(m);
            if second {
                m.reverse();
            }
        }
        let mut ids: Vec<usize> = (0..blocks.len()).collect();
        SplitMix(stream).shuffle(&mut ids);
        ids.into_iter().flat_map(|k| members[k].clone()).collect()
    }

    /// Runs the warm-up rounds, then measured rounds for as long as `plan.more` says,
    /// each subject through `plan.step`. Stops before a run once Ctrl-C has been pressed
    /// (with [`crate::engine::begin`] in force).
    pub fn run(&self, plan: &mut dyn Rounds) -> Ended {
        let mut retired = vec![false; self.subjects];
        for w in 0..self.warmup {
            if !self.one_round(Pass::Warmup(w), &mut retired, plan) {
                return Ended::Stopped;
            }
        }
        let mut done = 0;
        while plan.more(done) {
            if self.subjects > 0 && retired.iter().all(|r| *r) {
                break;
            }
            if !self.one_round(Pass::Round(done), &mut retired, plan) {
                return Ended::Stopped;
            }
            done += 1;
        }
        Ended::Finished
    }

    fn one_round(&self, pass: Pass, retired: &mut [bool], plan: &mut dyn Rounds) -> bool {
        let mut position = 0;
        for i in self.order(pass) {
            if retired[i] || (matches!(pass, Pass::Round(_)) && !plan.takes_part(i)) {
                continue;
            }
            if interrupted() {
                return false;
            }
            match plan.step(i, pass, position) {
                Next::Keep => {}
                Next::Retire => retired[i] = true,
                Next::Stop => return false,
            }
            position += 1;
        }
        if matches!(plan.end_round(pass), Next::Stop) {
            return false;
        }
        !interrupted()
    }

    /// [`Schedule::run`] for exactly `rounds` measured rounds.
    pub fn rounds(&self, rounds: u32, step: &mut dyn FnMut(usize, Pass, usize) -> Next) -> Ended {
        struct Fixed<'a>(u32, &'a mut dyn FnMut(usize, Pass, usize) -> Next);
        impl Rounds for Fixed<'_> {
            fn more(&mut self, done: u32) -> bool {
                done < self.0
            }
            fn step(&mut self, subject: usize, pass: Pass, position: usize) -> Next {
                (self.1)(subject, pass, position)
            }
        }
        self.run(&mut Fixed(rounds, step))
    }
}

/// What a command's plan does with the schedule: whether another measured round is
/// wanted (after `done` of them), and one subject's run.
pub trait Rounds {
    /// Whether another measured round is wanted, `done` rounds having run (asked before
    /// every round, the first time with 0).
    fn more(&mut self, done: u32) -> bool;
    /// Whether `subject` runs in the measured round that [`Rounds::more`] has just
    /// allowed (adaptive rounds spend further rounds only where a verdict is still
    /// open); every subject by default. The others keep their place in the order.
    fn takes_part(&self, _subject: usize) -> bool {
        true
    }
    /// Runs `subject` in `pass` at `position` (its place in that round's order, 0-based)
    /// and says what happens to it next.
    fn step(&mut self, subject: usize, pass: Pass, position: usize) -> Next;
    /// Called when every subject of `pass` has had its step: a plan that runs several
    /// subjects at once runs those it still holds (Stop ends the schedule).
    fn end_round(&mut self, _pass: Pass) -> Next {
        Next::Keep
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_round_runs_every_subject_once_in_its_own_order_fixed_by_the_seed() {
        let s = Schedule {
            subjects: 6,
            warmup: 2,
            seed: 11,
            order: Order::Shuffled,
        };
        let mut seen: Vec<(usize, Pass, usize)> = Vec::new();
        let ended = s.rounds(4, &mut |i, pass, pos| {
            seen.push((i, pass, pos));
            Next::Keep
        });
        assert_eq!(ended, Ended::Finished);
        assert_eq!(seen.len(), 6 * 6);
        let mut orders: Vec<Vec<usize>> = Vec::new();
        for chunk in seen.chunks(6) {
            let mut ids: Vec<usize> = chunk.iter().map(|x| x.0).collect();
            orders.push(ids.clone());
            assert!(
                chunk.iter().all(|x| x.1 == chunk[0].1),
                "one pass per round"
            );
            assert_eq!(
                chunk.iter().map(|x| x.2).collect::<Vec<_>>(),
                (0..6).collect::<Vec<_>>()
            );
            ids.sort();
            assert_eq!(ids, (0..6).collect::<Vec<_>>(), "every subject once");
        }
        assert_eq!(seen[0].1, Pass::Warmup(0));
        assert_eq!(seen[12].1, Pass::Round(0));
        // Not one fixed order: the measured rounds differ from each other, and the
        // subject that runs after subject 0 is not always the same one.
        let measured = &orders[2..];
        assert!(measured.windows(2).any(|w| w[0] != w[1]));
        let after0: std::collections::BTreeSet<Option<usize>> = measured
            .iter()
            .map(|o| {
                o.iter()
                    .position(|&x| x == 0)
                    .and_then(|p| o.get(p + 1).copied())
            })
            .collect();
        assert!(after0.len() > 1, "{measured:?}");
        // The seed fixes the orders.
        assert_eq!(s.order(Pass::Round(3)), s.order(Pass::Round(3)));
        let other = Schedule {
            seed: 12,
            ..s.clone()
        };
        assert_ne!(
            (0..4).map(|r| s.order(Pass::Round(r))).collect::<Vec<_>>(),
            (0..4)
                .map(|r| other.order(Pass::Round(r)))
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_subject_that_does_not_take_part_skips_the_round_and_the_others_keep_their_order() {
        struct Half(Vec<(usize, u32, usize)>, u32);
        impl Rounds for Half {
            fn more(&mut self, done: u32) -> bool {
                self.1 = done;
                done < 4
            }
            fn takes_part(&self, subject: usize) -> bool {
                self.1 < 2 || subject.is_multiple_of(2)
            }
            fn step(&mut self, subject: usize, pass: Pass, position: usize) -> Next {
                let Pass::Round(r) = pass else { unreachable!() };
                self.0.push((subject, r, position));
                Next::Keep
            }
        }
        let s = Schedule {
            subjects: 5,
            warmup: 0,
            seed: 3,
            order: Order::Shuffled,
        };
        let mut plan = Half(Vec::new(), 0);
        assert_eq!(s.run(&mut plan), Ended::Finished);
        let runs = |i: usize| plan.0.iter().filter(|x| x.0 == i).count();
        assert_eq!((0..5).map(runs).collect::<Vec<_>>(), vec![4, 2, 4, 2, 4]);
        for r in 2..4 {
            let got: Vec<usize> = plan.0.iter().filter(|x| x.1 == r).map(|x| x.0).collect();
            let want: Vec<usize> = s
                .order(Pass::Round(r))
                .into_iter()
                .filter(|i| i % 2 == 0)
                .collect();
            assert_eq!(got, want);
            let positions: Vec<usize> = plan.0.iter().filter(|x| x.1 == r).map(|x| x.2).collect();
            assert_eq!(positions, vec![0, 1, 2]);
        }
    }

    #[test]
    fn a_blocked_round_keeps_each_block_together_and_every_second_round_reverses_it() {
        // Three blocks of two to three subjects, interleaved in subject order.
        let blocks = vec![0, 1, 2, 0, 1, 2, 0, 1];
        let s = Schedule {
            subjects: 8,
            warmup: 0,
            seed: 21,
            order: Order::Blocked(blocks.clone()),
        };
        let mut first_blocks = std::collections::BTreeSet::new();
        // How often subject a ran before subject b, for each pair in a block.
        let mut before = std::collections::BTreeMap::new();
        for r in 0..8 {
            let order = s.order(Pass::Round(r));
            let mut sorted = order.clone();
            sorted.sort();
            assert_eq!(sorted, (0..8).collect::<Vec<_>>(), "every subject once");
            // Contiguous blocks: the block changes exactly twice along the round.
            let changes = order
                .windows(2)
                .filter(|w| blocks[w[0]] != blocks[w[1]])
                .count();
            assert_eq!(changes, 2, "round {r}: {order:?}");
            first_blocks.insert(blocks[order[0]]);
            if r % 2 == 1 {
                let previous = s.order(Pass::Round(r - 1));
                for b in 0..3 {
                    let now: Vec<usize> =
                        order.iter().copied().filter(|&i| blocks[i] == b).collect();
                    let mut then: Vec<usize> = previous
                        .iter()
                        .copied()
                        .filter(|&i| blocks[i] == b)
                        .collect();
                    then.reverse();
                    assert_eq!(now, then, "round {r}, block {b}");
                }
            }
            for (x, &a) in order.iter().enumerate() {
                for &b in &order[x + 1..] {
                    if blocks[a] == blocks[b] {
                        *before.entry((a.min(b), a.max(b), a < b)).or_insert(0) += 1;
                    }
                }
            }
        }
        // The blocks' order is shuffled, and within a block each pair ran both ways
        // equally often (ABBA).
        assert!(first_blocks.len() > 1);
        for ((a, b, _), n) in &before {
            assert_eq!(
                before.get(&(*a, *b, true)),
                before.get(&(*a, *b, false)),
                "{a},{b}: {n}"
            );
        }
        // Seeded; and a plain schedule is unchanged by the option's existence.
        assert_eq!(s.order(Pass::Round(5)), s.order(Pass::Round(5)));
        let plain = Schedule {
            order: Order::Shuffled,
            ..s.clone()
        };
        assert_eq!(plain.order(Pass::Round(3)), {
            let mut o: Vec<usize> = (0..8).collect();
            SplitMix(21 + 3).shuffle(&mut o);
            o
        });
    }

    #[test]
    fn a_retired_subject_leaves_the_later_rounds_and_stop_ends_the_schedule() {
        let s = Schedule {
            subjects: 3,
            warmup: 0,
            seed: 5,
            order: Order::Shuffled,
        };
        let mut runs = [0u32; 3];
        s.rounds(4, &mut |i, _, _| {
            runs[i] += 1;
            if i == 1 {
                Next::Retire
            } else {
                Next::Keep
            }
        });
        assert_eq!(runs, [4, 1, 4]);
        let mut n = 0;
        let ended = s.rounds(4, &mut |_, _, _| {
            n += 1;
            if n == 5 {
                Next::Stop
            } else {
                Next::Keep
            }
        });
        assert_eq!((ended, n), (Ended::Stopped, 5));
    }
}
