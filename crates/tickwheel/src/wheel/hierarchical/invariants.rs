//! Every invariant of the wheel, checked in full: O(n), for tests and debugging.

use alloc::vec;

use super::level::{level_for, slot_for, span, LEVELS, SLOTS};
use super::nodes::{list_id, MAX_LIST};
use super::HierarchicalWheel;
use crate::slab::NIL;

impl<T> HierarchicalWheel<T> {
    /// Panics with a description of the first broken invariant.
    pub(super) fn invariants(&self) {
        assert!(
            self.elapsed <= self.now,
            "cursor {} past now {}",
            self.elapsed,
            self.now
        );
        let nodes = &self.nodes;
        let mut reached = vec![false; nodes.count()];
        for &free in nodes.free() {
            assert!(!reached[free as usize], "node {free} freed twice");
            reached[free as usize] = true;
        }
        let mut timers = 0usize;
        let mut overdue = 0usize;
        let mut stack = vec![];
        for (level, &root) in self.levels.iter().enumerate() {
            let n = nodes.node(root);
            assert_eq!(
                n.level as usize, level,
                "root of level {level} has level {}",
                n.level
            );
            assert_eq!(n.parent, NIL, "root of level {level} has a parent");
            stack.push(root);
        }
        while let Some(node) = stack.pop() {
            assert!(!reached[node as usize], "node {node} reached twice or free");
            reached[node as usize] = true;
            let n = nodes.node(node);
            assert!(
                n.parent == NIL || n.occupied != 0,
                "child node {node} is empty"
            );
            for slot in 0..SLOTS {
                let s = n.slots[slot];
                let id = list_id(node, slot);
                if s.is_child() {
                    assert!(
                        n.occupied & (1 << slot) != 0,
                        "node {node}: a child without its bit"
                    );
                    let child = nodes.node(s.head);
                    assert_eq!(
                        child.parent, id,
                        "child {} of {node}/{slot} names another parent",
                        s.head
                    );
                    assert_eq!(child.level + 1, n.level, "child {} level", s.head);
                    stack.push(s.head);
                    continue;
                }
                assert_eq!(
                    n.occupied & (1 << slot) != 0,
                    s.len != 0,
                    "node {node} slot {slot}: occupancy bit vs length {}",
                    s.len
                );
                assert!(
                    n.level == 0 || s.len <= MAX_LIST,
                    "node {node} slot {slot} of level {} holds {} timers",
                    n.level,
                    s.len
                );
                let mut prev = NIL;
                let mut cur = s.head;
                let mut len = 0;
                while cur != NIL {
                    assert!(len < s.len, "list {id} is longer than its length {}", s.len);
                    let e = self.slab.at(cur);
                    let link = nodes.link(cur);
                    assert_eq!(link.prev, prev, "list {id}: broken prev link at {cur}");
                    assert_eq!(
                        e.list, id,
                        "timer {cur} names list {} but is in {id}",
                        e.list
                    );
                    let level = level_for(self.elapsed, e.deadline);
                    let (want, _) = nodes.find(self.levels[level], level, e.deadline);
                    assert_eq!(want, id, "timer {cur} due {} is out of place", e.deadline);
                    if n.parent != NIL {
                        let span = u128::from(span(n.level as usize));
                        let at = u128::from(n.base) + slot as u128 * span;
                        let d = u128::from(e.deadline);
                        assert!(
                            at <= d && d < at + span,
                            "timer {cur} outside its node's slot"
                        );
                    } else {
                        assert_eq!(
                            slot_for(e.deadline, level_for(self.elapsed, e.deadline)),
                            slot
                        );
                    }
                    assert!(
                        self.hint <= e.deadline,
                        "hint {} above deadline {}",
                        self.hint,
                        e.deadline
                    );
                    if e.deadline < self.elapsed {
                        overdue += 1;
                    }
                    prev = cur;
                    cur = link.next;
                    len += 1;
                }
                assert_eq!(len, s.len, "list {id} length");
                assert_eq!(s.tail, prev, "list {id} tail");
                timers += len as usize;
            }
        }
        assert!(
            reached.iter().all(|&r| r),
            "a node is neither reachable nor free"
        );
        assert_eq!(timers, self.slab.len(), "timers in lists vs pending");
        assert_eq!(overdue, self.overdue, "overdue count");
        assert_eq!(LEVELS, self.levels.len());
        self.slab.check();
    }
}
