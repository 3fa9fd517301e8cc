//! The slowest call at its fastest repetition: a deterministic run's worst single call without
//! the preemptions of a shared machine.
//!
//! On the virtual clock (and in a replay) the seed alone decides which calls are made and in
//! which order, so call `i` of one repetition is call `i` of every other repetition of the same
//! implementation. A preemption, a page fault or another process's burst lands on different
//! calls in different repetitions; the time a call takes in its fastest repetition is what the
//! call itself costs, and the machine shows only where it hits the same call in every
//! repetition. The slowest call taken that way is the timer's own worst call.
//!
//! [`Probe`](crate::measure::Probe) keeps every call that took at least [`SLOW_NS`]: its
//! number, operation and time. A call missing from one repetition's list took less there, so
//! it is under [`SLOW_NS`] at its fastest: the lists hold every call that can be the slowest,
//! and 0 in the result means every call of that operation was under [`SLOW_NS`] in some
//! repetition. A list holds about one call in a hundred.
//!
//! # Invariants
//! - A list holds the calls of one repetition in call order, each at most once.
//! - The result is `None` unless there are two repetitions or more, each made the same number
//!   of calls, and every call kept by all of them is the same operation in each.

use crate::op::Op;

/// Calls at least this slow (ns) are kept.
pub(crate) const SLOW_NS: u64 = 1_000;

/// One call of a run that took at least [`SLOW_NS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SlowCall {
    /// The call's number in the run, from 0, counting every timed call.
    pub(crate) index: u64,
    /// Its time in ns, saturated at `u32::MAX`.
    pub(crate) ns: u32,
    /// What it was.
    pub(crate) op: Op,
}

/// The calls of one run at least [`SLOW_NS`] slow, and how many calls it made.
#[derive(Clone, Debug, Default)]
pub(crate) struct SlowCalls {
    /// Every call timed.
    pub(crate) calls: u64,
    /// The slow ones, in call order.
    pub(crate) slow: Vec<SlowCall>,
}

impl SlowCalls {
    /// Counts a call of `ns` nanoseconds, keeping it when it is slow.
    #[inline]
    pub(crate) fn record(&mut self, op: Op, ns: u64) {
        if ns >= SLOW_NS {
            self.slow.push(SlowCall {
                index: self.calls,
                ns: u32::try_from(ns).unwrap_or(u32::MAX),
                op,
            });
        }
        self.calls += 1;
    }
}

/// Per operation, indexed by [`Op`], the slowest call of `runs` (repetitions of one
/// deterministic run) with each call taken at its fastest repetition, in ns; 0 when every call
/// of that operation was under [`SLOW_NS`] in some repetition. `None` when there are fewer
/// than two repetitions or they did not make the same calls.
pub(crate) fn fastest_max(runs: &[&SlowCalls]) -> Option<[u64; 5]> {
    let (first, rest) = runs.split_first()?;
    if rest.is_empty() || rest.iter().any(|r| r.calls != first.calls) {
        return None;
    }
    let mut kept: Vec<SlowCall> = first.slow.clone();
    for run in rest {
        let mut other = run.slow.iter().peekable();
        let mut same_calls = true;
        kept.retain_mut(|call| {
            while other.next_if(|o| o.index < call.index).is_some() {}
            match other.next_if(|o| o.index == call.index) {
                Some(o) => {
                    same_calls &= o.op == call.op;
                    call.ns = call.ns.min(o.ns);
                    true
                }
                None => false,
            }
        });
        if !same_calls {
            return None;
        }
    }
    let mut max = [0u64; 5];
    for call in kept {
        let m = &mut max[call.op as usize];
        *m = (*m).max(u64::from(call.ns));
    }
    Some(max)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(calls: u64, slow: &[(u64, Op, u64)]) -> SlowCalls {
        let mut r = SlowCalls::default();
        for i in 0..calls {
            let (op, ns) = slow
                .iter()
                .find(|s| s.0 == i)
                .map_or((Op::Insert, 20), |s| (s.1, s.2));
            r.record(op, ns);
        }
        r
    }

    #[test]
    fn keeps_only_slow_calls_in_order() {
        let r = run(10, &[(3, Op::Fire, 5_000), (7, Op::Cancel, SLOW_NS)]);
        assert_eq!(r.calls, 10);
        let kept: Vec<_> = r.slow.iter().map(|c| (c.index, c.op, c.ns)).collect();
        assert_eq!(kept, [(3, Op::Fire, 5_000), (7, Op::Cancel, 1_000)]);
    }

    #[test]
    fn each_call_at_its_fastest_repetition() {
        // Call 3 is slow in every repetition: its own cost is its fastest, 4 µs. Call 5 was
        // preempted in two repetitions out of three; call 8 in one.
        let a = run(
            10,
            &[
                (3, Op::Fire, 9_000),
                (5, Op::Insert, 800_000),
                (8, Op::Reset, 2_000),
            ],
        );
        let b = run(10, &[(3, Op::Fire, 4_000), (5, Op::Insert, 300_000)]);
        let c = run(10, &[(3, Op::Fire, 6_000), (8, Op::Reset, 3_000)]);
        let max = fastest_max(&[&a, &b, &c]).unwrap();
        assert_eq!(max[Op::Fire as usize], 4_000);
        assert_eq!(
            max[Op::Insert as usize],
            0,
            "call 5 was fast in the third run"
        );
        assert_eq!(
            max[Op::Reset as usize],
            0,
            "call 8 was fast in the second run"
        );
        assert_eq!(
            fastest_max(&[&a, &b]).unwrap()[Op::Insert as usize],
            300_000
        );
    }

    #[test]
    fn needs_two_repetitions_of_the_same_calls() {
        let a = run(10, &[(3, Op::Fire, 9_000)]);
        assert_eq!(fastest_max(&[&a]), None);
        assert_eq!(fastest_max(&[]), None);
        let longer = run(11, &[(3, Op::Fire, 9_000)]);
        assert_eq!(fastest_max(&[&a, &longer]), None);
        let other_op = run(10, &[(3, Op::Cancel, 9_000)]);
        assert_eq!(fastest_max(&[&a, &other_op]), None);
        let quiet = run(10, &[]);
        assert_eq!(fastest_max(&[&a, &quiet]), Some([0; 5]));
    }
}
