//! The time left of a session, learned while it runs from what its items took against
//! what the budget's guide said they would ([`crate::model::budget::Budget::expected_seconds`]).

use std::collections::BTreeMap;

/// Work of one kind still to do and already done, for the ETA: runs of one experiment at
/// one size and thread count cost about the same, whatever the allocator.
#[derive(Clone, Debug, Default)]
struct Group {
    /// The experiment (or session part) it belongs to.
    part: String,
    /// Items left, and the guide's seconds for each ([`crate::model::budget::Budget::expected_seconds`]).
    left: usize,
    guide: f64,
    /// Items measured so far, the seconds they took and what the guide said for them.
    done: usize,
    seconds: f64,
    guided: f64,
}

/// The time left of a session whose items differ by orders of magnitude, learned while
/// it runs: an item of a group some of whose items have run costs their mean time; an
/// item of a group not yet started costs the guide's figure scaled by how far the guide
/// was off for its part (or for the whole session, before its part started).
#[derive(Clone, Debug, Default)]
pub struct Eta {
    groups: BTreeMap<String, Group>,
}

impl Eta {
    /// `count` more items of group `key` (in `part`), each guided at `guide` seconds.
    pub fn plan(&mut self, key: &str, part: &str, count: usize, guide: f64) {
        let g = self.groups.entry(key.to_string()).or_default();
        g.part = part.to_string();
        g.left += count;
        g.guide = guide;
    }

    /// Group `key` now has exactly `count` items left (once a session knows them).
    pub fn replan(&mut self, key: &str, part: &str, count: usize, guide: f64) {
        let g = self.groups.entry(key.to_string()).or_default();
        g.part = part.to_string();
        g.left = count;
        g.guide = guide;
    }

    /// An item of group `key` took `seconds`.
    pub fn done(&mut self, key: &str, seconds: f64) {
        if let Some(g) = self.groups.get_mut(key) {
            g.left = g.left.saturating_sub(1);
            g.done += 1;
            g.seconds += seconds;
            g.guided += g.guide;
        }
    }

    /// An item of group `key` needs no doing (kept from before).
    pub fn skip(&mut self, key: &str) {
        if let Some(g) = self.groups.get_mut(key) {
            g.left = g.left.saturating_sub(1);
        }
    }

    /// Seconds measured per guide second over the groups `of` selects that have run: the
    /// median of their ratios, so that a few groups the guide is far off for (the largest
    /// sizes of a sweep) do not set the scale of everything else.
    fn scale(&self, of: impl Fn(&Group) -> bool) -> Option<f64> {
        let ratios: Vec<f64> = self
            .groups
            .values()
            .filter(|g| g.done > 0 && g.guided > 0.0 && of(g))
            .map(|g| g.seconds / g.guided)
            .collect();
        super::stats::median(&ratios)
    }

    /// Seconds left, once anything has been measured.
    pub fn remaining(&self) -> Option<f64> {
        let overall = self.scale(|_| true)?;
        Some(
            self.groups
                .values()
                .filter(|g| g.left > 0)
                .map(|g| {
                    let each = if g.done > 0 {
                        g.seconds / g.done as f64
                    } else {
                        g.guide * self.scale(|o| o.part == g.part).unwrap_or(overall)
                    };
                    each * g.left as f64
                })
                .sum(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_eta_learns_each_groups_cost_and_scales_the_guide_for_groups_not_yet_started() {
        let mut e = Eta::default();
        e.plan("sweep|32", "sweep", 4, 0.3);
        e.plan("sweep|1e8", "sweep", 2, 1.0);
        e.plan("threads|1e6", "threads", 3, 0.5);
        assert_eq!(e.remaining(), None, "nothing measured: no rate");
        e.done("sweep|32", 0.6);
        e.skip("sweep|32");
        // sweep|32: 2 left at the 0.6 s measured; the guide was 2x off for the sweep
        // (2 x 1.0 x 2) and, the threads part not started, overall (3 x 0.5 x 2).
        let left = e.remaining().unwrap();
        assert!((left - (1.2 + 4.0 + 3.0)).abs() < 1e-9, "{left}");
        // The scale is the median of the groups' ratios: one group 10x off does not set
        // it for the rest.
        let mut m = Eta::default();
        for (k, ratio) in [("a", 1.0), ("b", 1.2), ("c", 10.0)] {
            m.plan(k, "x", 1, 1.0);
            m.done(k, ratio);
        }
        m.plan("d", "y", 1, 1.0);
        assert_eq!(m.remaining(), Some(1.2));
        e.done("threads|1e6", 0.5);
        // threads now runs at its guide: 2 x 0.5.
        let left = e.remaining().unwrap();
        assert!((left - (1.2 + 4.0 + 1.0)).abs() < 1e-9, "{left}");
        e.replan("sweep|cliffs", "sweep", 10, 0.1);
        let left = e.remaining().unwrap();
        assert!((left - (1.2 + 4.0 + 1.0 + 2.0)).abs() < 1e-9, "{left}");
    }
}
