//! Where a split cuts: the start times at which parts begin, greedy, from the events'
//! starts and bytes (a Chrome event's mark, a `.pftrace` slice), counted into buckets of
//! equal time so that only the buckets a cut can fall in are sorted.

use crate::error::Error;
use crate::Result;

/// Something a part holds, placed by its start: its start and bytes (None: in every part,
/// not placed).
pub(crate) trait Timed {
    type Start: Start;
    fn timed(&self) -> Option<(Self::Start, u32)>;
}

impl<T: Start> Timed for (T, u32) {
    type Start = T;
    fn timed(&self) -> Option<(T, u32)> {
        Some(*self)
    }
}

/// A start time, as a number that orders as it does (for the buckets of [`cut_points`]).
pub(crate) trait Start: Copy + Default + PartialOrd + std::fmt::Display {
    fn number(self) -> f64;
}

impl Start for f64 {
    fn number(self) -> f64 {
        self
    }
}

impl Start for u64 {
    fn number(self) -> f64 {
        // rounding keeps the order (x <= y gives x as f64 <= y as f64)
        self as f64
    }
}

/// The start times at which parts begin after the first (ascending): greedy, each part as
/// full as `budget` bytes allow; events that start at the same time stay together. `timed`
/// holds the events (their starts and bytes, [`Timed`]), in any order, in runs (read where
/// they lie: no copy of them all).
///
/// The starts are counted into buckets of equal time, and only the starts of the buckets a
/// cut can fall in are gathered and sorted ([`cut_buckets`]); the others are added whole
/// (2.2 M starts: a sort of them all took 85-151 ms; a copy of them all, sorted into their
/// buckets, 35 MB).
pub(crate) fn cut_points<E: Timed>(timed: &[&[E]], budget: u64) -> Result<Vec<E::Start>> {
    let all = || timed.iter().flat_map(|run| run.iter()).filter_map(E::timed);
    let (lo, hi, starts) = all().fold(
        (f64::INFINITY, f64::NEG_INFINITY, 0usize),
        |(lo, hi, n), t| (lo.min(t.0.number()), hi.max(t.0.number()), n + 1),
    );
    let buckets = (starts / 16).clamp(1, 1 << 20);
    let scale = match hi > lo {
        true => buckets as f64 / (hi - lo),
        false => 0.0,
    };
    let bucket = |t: E::Start| (((t.number() - lo) * scale) as usize).min(buckets - 1);
    let mut bytes = vec![0u64; buckets];
    for (t, len) in all() {
        bytes[bucket(t)] += u64::from(len);
    }
    // The starts of the candidate buckets, grouped by bucket: `at[b]..at[b + 1]`.
    let candidate = cut_buckets(&bytes, budget);
    let mut at = vec![0usize; buckets + 1];
    for (t, _) in all() {
        let b = bucket(t);
        if candidate[b] {
            at[b + 1] += 1;
        }
    }
    for b in 0..buckets {
        at[b + 1] += at[b];
    }
    let mut next = at.clone();
    let mut gathered = vec![(E::Start::default(), 0u32); at[buckets]];
    for (t, len) in all() {
        let b = bucket(t);
        if candidate[b] {
            gathered[next[b]] = (t, len);
            next[b] += 1;
        }
    }
    let mut cuts = Vec::new();
    let mut used = 0u64;
    for b in 0..buckets {
        if !candidate[b] {
            used += bytes[b];
            if used > budget {
                return Err(Error::Internal(format!(
                    "splitting: a cut outside the buckets that can hold one (bucket {b})"
                )));
            }
            continue;
        }
        let ours = &mut gathered[at[b]..at[b + 1]];
        ours.sort_unstable_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal));
        for group in ours.chunk_by(|a, b| a.0 == b.0) {
            let ts = group[0].0;
            let group: u64 = group.iter().map(|(_, len)| u64::from(*len)).sum();
            if group > budget {
                return Err(Error::Usage(format!(
                    "--max-size: the events starting at {ts} take {group} bytes beside the \
                     metadata, more than a part holds"
                )));
            }
            if used + group > budget && used > 0 {
                cuts.push(ts);
                used = 0;
            }
            used += group;
        }
    }
    Ok(cuts)
}

/// Which buckets (`bytes`: each one's, in time order) a greedy cut can fall in. A part
/// closes when the next group of equal starts does not fit, so it holds more than `budget -
/// G` bytes (G: the largest group, at most the largest bucket) and at most `budget`: the
/// k-th cut comes after more than k (budget - G) and at most k budget bytes. A bucket is a
/// candidate when the bytes before it and its own reach into such a range for some k.
fn cut_buckets(bytes: &[u64], budget: u64) -> Vec<bool> {
    let largest = bytes.iter().copied().max().unwrap_or(0);
    let least_part = budget.saturating_sub(largest);
    let mut before = 0u64;
    (bytes.iter())
        .map(|&own| {
            let (first, last) = (before, before + own);
            before = last;
            // the least k whose range ends at or after the bucket's first byte
            let k = first.div_ceil(budget.max(1)).max(1);
            // the offsets first..last of the bucket's groups meet (k least_part, k budget]
            own > 0 && k * least_part < last && first <= k * budget
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_keep_each_part_under_budget_and_ties_together() {
        let timed = vec![(1.0, 40), (2.0, 40), (2.0, 40), (3.0, 40), (4.0, 10)];
        assert_eq!(cut_points(&[&timed], 100).unwrap(), vec![2.0, 3.0]);
        assert!(cut_points(&[&timed], 50).is_err());
        let one_time = vec![(7u64, 10); 5];
        assert_eq!(cut_points(&[&one_time], 100).unwrap(), Vec::<u64>::new());
    }

    #[test]
    fn only_the_buckets_a_cut_can_fall_in_are_candidates() {
        // 10 buckets of 10 bytes, parts of 25: cuts after 20 and 40 bytes or so
        let candidate = cut_buckets(&[10; 10], 25);
        // a part holds more than 15 bytes: cut k lies in (15 k, 25 k]
        let want: Vec<bool> = (0..10u64)
            .map(|b| (1..=10u64).any(|k| (b * 10..b * 10 + 10).any(|p| 15 * k < p && p <= 25 * k)))
            .collect();
        for (b, (got, want)) in candidate.iter().zip(&want).enumerate() {
            assert!(*got || !*want, "bucket {b}: a cut can fall in it");
        }
        assert!(
            !candidate[0],
            "the first part cannot end inside the first 10 bytes"
        );
        assert_eq!(cut_buckets(&[0, 5, 0], 100), [false, false, false]);
    }

    /// The greedy cuts of a sort of all the starts, as a reference.
    fn cuts_of_sorted(timed: &[(u64, u32)], budget: u64) -> Vec<u64> {
        let mut sorted = timed.to_vec();
        sorted.sort();
        let (mut cuts, mut used) = (Vec::new(), 0u64);
        for group in sorted.chunk_by(|a, b| a.0 == b.0) {
            let bytes: u64 = group.iter().map(|(_, len)| u64::from(*len)).sum();
            if used + bytes > budget && used > 0 {
                cuts.push(group[0].0);
                used = 0;
            }
            used += bytes;
        }
        cuts
    }

    #[test]
    fn bucketed_cuts_are_the_cuts_of_a_full_sort() {
        // clustered, tied and spread starts, in no order, with a few large events
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut random = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for round in 0..60 {
            let n = 1 + (random() % 50_000) as usize;
            let timed: Vec<(u64, u32)> = (0..n)
                .map(|i| {
                    let ts = match i % 3 {
                        0 => 1_700_000_000_000_000_000 + random() % 1_000_000_000,
                        1 => 1_700_000_000_000_000_000 + (random() % 50) * 1000,
                        _ => 1_700_000_000_500_000_000 + random() % 1000,
                    };
                    (ts, 1 + (random() % 400) as u32)
                })
                .collect();
            let mut groups = std::collections::HashMap::<u64, u64>::new();
            for (ts, len) in &timed {
                *groups.entry(*ts).or_default() += u64::from(*len);
            }
            let largest = groups.values().copied().max().unwrap_or(0);
            let budget = largest.max(500 + random() % 200_000);
            let want = cuts_of_sorted(&timed, budget);
            assert_eq!(
                cut_points(&[&timed], budget).unwrap(),
                want,
                "round {round}"
            );
            let (a, b) = timed.split_at((random() as usize) % (n + 1));
            assert_eq!(
                cut_points(&[a, b], budget).unwrap(),
                want,
                "round {round} in runs"
            );
        }
    }
}
