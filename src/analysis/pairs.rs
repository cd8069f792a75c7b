//! Which cells are compared with which, the one pairing every surface uses: each
//! variant against its allocator's in-place, each allocator against the fastest of its
//! variant.

use crate::model::spec::{Choice, Variant};
use crate::model::summary::SummaryRow;

/// Per allocator spec (and size): its in-place row and the rows of its other variants,
/// in the order of [`Variant::ALL`] (only rows that ran).
pub fn against_in_place(rows: &[SummaryRow]) -> Vec<(usize, Vec<usize>)> {
    let ok = |i: &usize| rows[*i].status.is_ok();
    let mut labels: Vec<(String, u64)> = Vec::new();
    for r in rows {
        if !labels.contains(&(r.allocator_spec.clone(), r.size)) {
            labels.push((r.allocator_spec.clone(), r.size));
        }
    }
    labels
        .iter()
        .filter_map(|(label, size)| {
            let of = |v: Variant| {
                (0..rows.len()).filter(ok).find(|&i| {
                    rows[i].allocator_spec == *label
                        && rows[i].size == *size
                        && rows[i].variant == v
                })
            };
            let base = of(Variant::InPlace)?;
            let others = Variant::ALL
                .iter()
                .filter(|v| **v != Variant::InPlace)
                .filter_map(|v| of(*v))
                .collect();
            Some((base, others))
        })
        .collect()
}

/// Per variant (and size) with at least two rows that ran: the fastest (lowest p50) and
/// the others.
pub fn against_fastest(rows: &[SummaryRow]) -> Vec<(usize, Vec<usize>)> {
    let mut groups: Vec<(Variant, u64)> = Vec::new();
    for r in rows {
        if !groups.contains(&(r.variant, r.size)) {
            groups.push((r.variant, r.size));
        }
    }
    groups
        .into_iter()
        .filter_map(|(variant, size)| {
            let members: Vec<usize> = (0..rows.len())
                .filter(|&i| rows[i].status.is_ok())
                .filter(|&i| rows[i].variant == variant && rows[i].size == size)
                .collect();
            if members.len() < 2 {
                return None;
            }
            let &fastest = members
                .iter()
                .min_by_key(|&&i| rows[i].p50_ns.unwrap_or(u64::MAX))?;
            Some((
                fastest,
                members.into_iter().filter(|&i| i != fastest).collect(),
            ))
        })
        .collect()
}

/// Every comparison the explanation lines print, as (base row, other row): each variant
/// against its allocator's in-place, each allocator against the fastest of its variant.
pub fn printed_comparisons(rows: &[SummaryRow]) -> Vec<(usize, usize)> {
    against_in_place(rows)
        .into_iter()
        .chain(against_fastest(rows))
        .flat_map(|(base, others)| others.into_iter().map(move |o| (base, o)))
        .collect()
}
