//! Reading callgrind's output: each function's inclusive cost and calls, in the events
//! `--cost simulated` reports, and the model that turns them into estimated cycles.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

/// The estimated-cycles model, as the report states it.
pub(crate) const MODEL: &str = "cycles = Ir + 10 × L1 misses + 100 × LL misses";

/// One call kind's simulated cost, summed over its calls.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Cost {
    /// Calls made.
    pub(crate) calls: u64,
    /// Instructions executed.
    pub(crate) instructions: u64,
    /// First-level cache misses: instruction fetches, data reads and data writes.
    pub(crate) l1_misses: u64,
    /// Last-level cache misses, of the same three.
    pub(crate) ll_misses: u64,
}

impl Cost {
    /// Estimated cycles by [`MODEL`].
    pub(crate) fn cycles(&self) -> u64 {
        self.instructions + 10 * self.l1_misses + 100 * self.ll_misses
    }

    /// Estimated cycles per call (0 without calls).
    pub(crate) fn cycles_per_call(&self) -> f64 {
        self.cycles() as f64 / self.calls.max(1) as f64
    }

    pub(crate) fn add(&mut self, other: &Cost) {
        self.calls += other.calls;
        self.instructions += other.instructions;
        self.l1_misses += other.l1_misses;
        self.ll_misses += other.ll_misses;
    }
}

/// Each function's inclusive cost and calls from a callgrind output file (format version 1,
/// any name or position compression): the cost lines in a function's own blocks, its self
/// cost and the inclusive cost of each call it made, add up to its inclusive cost; its calls
/// are the `calls=` counts of the call sites that name it.
pub(crate) fn parse(text: &str) -> HashMap<String, Cost> {
    let mut names: HashMap<String, String> = HashMap::new();
    let mut events: Vec<String> = Vec::new();
    let mut costs: HashMap<String, Cost> = HashMap::new();
    let mut current = String::new();
    let mut callee = String::new();
    // Resolves `(id) name` (and remembers it) or `(id)` to the name.
    let mut name_of = |spec: &str| -> String {
        let spec = spec.trim();
        match spec.strip_prefix('(').and_then(|s| s.split_once(')')) {
            Some((id, rest)) if !rest.trim().is_empty() => {
                names.insert(id.to_string(), rest.trim().to_string());
                rest.trim().to_string()
            }
            Some((id, _)) => names.get(id).cloned().unwrap_or_default(),
            None => spec.to_string(),
        }
    };
    for line in text.lines() {
        if let Some(list) = line.strip_prefix("events:") {
            events = list.split_whitespace().map(str::to_string).collect();
        } else if let Some(spec) = line.strip_prefix("fn=") {
            current = name_of(spec);
        } else if let Some(spec) = line.strip_prefix("cfn=") {
            callee = name_of(spec);
        } else if let Some(rest) = line.strip_prefix("calls=") {
            let n: u64 = rest
                .split_whitespace()
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            costs.entry(callee.clone()).or_default().calls += n;
        } else if line.starts_with(|c: char| c.is_ascii_digit() || "+-*".contains(c)) {
            // A cost line: a position, then the events in `events:` order.
            let mut cost = Cost::default();
            for (event, value) in events.iter().zip(line.split_whitespace().skip(1)) {
                let v: u64 = value.parse().unwrap_or(0);
                match event.as_str() {
                    "Ir" => cost.instructions += v,
                    "I1mr" | "D1mr" | "D1mw" => cost.l1_misses += v,
                    "ILmr" | "DLmr" | "DLmw" => cost.ll_misses += v,
                    _ => {}
                }
            }
            cost.calls = 0;
            costs.entry(current.clone()).or_default().add(&cost);
        }
    }
    costs
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A callgrind output in the shape valgrind 3.19 writes, names compressed.
    const OUTPUT: &str = "\
# callgrind format
version: 1
positions: line
events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw
summary: 1000

fl=(1) src/wheel.rs
fn=(10) tickwheel::Wheel::insert_inner
12 50 10 5 0 2 1 0 1 0
fn=(3) tickwheel_loadgen::calls::insert
5 20 4 2 1 0 0 1
cfn=(10)
calls=4 12
12 50 10 5 0 2 1 0 1 0
fn=(4) tickwheel_loadgen::virtual_clock::run
cfn=(3)
calls=4 5
5 70 14 7 1 2 1 1 1 0
cfn=(5) tickwheel_loadgen::calls::poll
calls=2 9
9 8
fn=(5)
9 8
";

    #[test]
    fn inclusive_costs_and_calls_come_from_a_function_s_own_blocks() {
        let costs = parse(OUTPUT);
        let insert = costs["tickwheel_loadgen::calls::insert"];
        // Self (20 Ir, I1mr 1, ILmr 1) plus its call (50 Ir, D1mr 2 and D1mw 1, DLmr 1).
        assert_eq!(
            insert,
            Cost {
                calls: 4,
                instructions: 70,
                l1_misses: 1 + 2 + 1,
                ll_misses: 1 + 1,
            }
        );
        assert_eq!(insert.cycles(), 70 + 10 * 4 + 100 * 2);
        let poll = costs["tickwheel_loadgen::calls::poll"];
        assert_eq!((poll.calls, poll.instructions), (2, 8));
    }
}
