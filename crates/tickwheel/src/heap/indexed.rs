//! `IndexedHeap`: a d-ary min-heap of timers that knows where each timer sits.
//!
//! The heap array holds `(deadline, seq, slab index)` so that sifting compares within one array
//! and never chases a pointer; each slab entry holds its payload and its position in the array,
//! so `cancel` and `reset` find their element in O(1) and fix the heap with one sift. Nothing is
//! left behind by a cancel (no tombstones). The arity `D` defaults to 4, as Go's runtime and .NET's
//! `PriorityQueue` use: a shallower tree than a binary heap, and the four children share a cache
//! line or two.
//!
//! # Invariants
//! - Heap order: no element orders before its parent by `(deadline, seq)`.
//! - Positions: for every element at array position `p`, its slab entry's `pos == p`; the array
//!   and the slab hold the same timers (`heap.len() == slab.len()`).
//! - `seq` values are unique and grow with every insert and reset, so equal deadlines leave in
//!   first-in first-out order.
//!
//! # Costs
//! | operation | cost |
//! |---|---|
//! | insert | O(log_D n) sift up |
//! | cancel | O(log_D n) (swap in the last element, sift) |
//! | reset | O(log_D n) one sift, up or down |
//! | poll per fired timer | O(D log_D n) sift down |
//! | poll with nothing due, `next_deadline` | O(1) |
//! | memory per timer | 24 B array element + slab slot (payload + 4 B position + 4 B generation, padded) |
//!
//! Follows the Go runtime's 4-ary timer heap and libuv's `(timeout, start_id)` tie-break.

use alloc::vec::Vec;

use crate::slab::Slab;
use crate::{
    ConfigError, Expired, FromOptions, InsertError, Options, StaleKeyError, Stats, Tick, Timer,
    TimerKey,
};

#[derive(Clone, Copy, Debug)]
struct Item {
    deadline: Tick,
    seq: u64,
    index: u32,
}

impl Item {
    #[inline]
    fn before(&self, other: &Item) -> bool {
        (self.deadline, self.seq) < (other.deadline, other.seq)
    }
}

struct Entry<T> {
    payload: T,
    /// Position of this timer's element in `heap`.
    pos: u32,
}

/// A d-ary indexed min-heap timer (`D` = 4 by default). See the module docs for costs.
///
/// ```
/// use tickwheel::{FromOptions, IndexedHeap, Options, Timer};
///
/// // A binary heap instead of the default 4-ary one.
/// let mut heap = IndexedHeap::<&str, 2>::from_options(Options::new()).unwrap();
/// let k = heap.insert(10, "late").unwrap();
/// heap.insert(3, "soon").unwrap();
/// heap.reset(k, 1).unwrap();
/// assert_eq!(heap.next_deadline(), Some(1));
/// assert_eq!(heap.poll(10).unwrap().payload, "late");
/// ```
pub struct IndexedHeap<T, const D: usize = 4> {
    slab: Slab<Entry<T>>,
    heap: Vec<Item>,
    /// Next insertion sequence number.
    seq: u64,
    /// Latest `now` seen; only increases.
    now: Tick,
    stats: Stats,
}

impl<T> IndexedHeap<T> {
    /// An empty, unbounded 4-ary heap at tick 0.
    ///
    /// ```
    /// let heap: tickwheel::IndexedHeap<u64> = tickwheel::IndexedHeap::new();
    /// assert_eq!(tickwheel::Timer::len(&heap), 0);
    /// ```
    #[must_use]
    pub fn new() -> Self {
        Self::with(Options::new())
    }
}

impl<T> Default for IndexedHeap<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T, const D: usize> FromOptions for IndexedHeap<T, D> {
    fn from_options(options: Options) -> Result<Self, ConfigError> {
        options.validate()?;
        Ok(Self::with(options))
    }
}

impl<T, const D: usize> IndexedHeap<T, D> {
    const ARITY_OK: () = assert!(D >= 2, "a heap needs an arity of at least 2");

    fn with(options: Options) -> Self {
        #[allow(clippy::let_unit_value)]
        let () = Self::ARITY_OK;
        let pre = options
            .preallocate
            .min(options.capacity.unwrap_or(usize::MAX));
        Self {
            slab: Slab::new(options.capacity, pre),
            heap: Vec::with_capacity(pre),
            seq: 0,
            now: options.start,
            stats: Stats::default(),
        }
    }

    #[inline]
    fn next_seq(&mut self) -> u64 {
        let s = self.seq;
        self.seq += 1;
        s
    }

    #[inline]
    fn place(&mut self, pos: usize, item: Item) {
        self.heap[pos] = item;
        self.slab.at_mut(item.index).pos = pos as u32;
    }

    fn sift_up(&mut self, mut pos: usize) {
        let item = self.heap[pos];
        while pos > 0 {
            let parent = (pos - 1) / D;
            if !item.before(&self.heap[parent]) {
                break;
            }
            let p = self.heap[parent];
            self.place(pos, p);
            pos = parent;
        }
        self.place(pos, item);
    }

    fn sift_down(&mut self, mut pos: usize) {
        let item = self.heap[pos];
        let len = self.heap.len();
        loop {
            let first = pos * D + 1;
            if first >= len {
                break;
            }
            let last = (first + D).min(len);
            let mut best = first;
            for c in first + 1..last {
                if self.heap[c].before(&self.heap[best]) {
                    best = c;
                }
            }
            if !self.heap[best].before(&item) {
                break;
            }
            let b = self.heap[best];
            self.place(pos, b);
            pos = best;
        }
        self.place(pos, item);
    }

    /// Takes the element at `pos` out of the heap, keeping heap order.
    fn remove_pos(&mut self, pos: usize) -> Item {
        let last = self.heap.pop().expect("remove from a non-empty heap");
        if pos == self.heap.len() {
            return last;
        }
        let removed = self.heap[pos];
        self.heap[pos] = last;
        self.slab.at_mut(last.index).pos = pos as u32;
        if pos > 0 && last.before(&self.heap[(pos - 1) / D]) {
            self.sift_up(pos);
        } else {
            self.sift_down(pos);
        }
        removed
    }
}

impl<T, const D: usize> Timer<T> for IndexedHeap<T, D> {
    fn insert(&mut self, deadline: Tick, payload: T) -> Result<TimerKey, InsertError<T>> {
        let pos = self.heap.len() as u32;
        let key = match self.slab.insert(Entry { payload, pos }) {
            Ok(key) => key,
            Err(entry) => {
                self.stats.rejected += 1;
                return Err(InsertError::Full(entry.payload));
            }
        };
        let seq = self.next_seq();
        self.heap.push(Item {
            deadline,
            seq,
            index: key.index,
        });
        self.sift_up(pos as usize);
        self.stats.inserted += 1;
        Ok(key)
    }

    fn cancel(&mut self, key: TimerKey) -> Option<T> {
        let index = self.slab.resolve(key)?;
        let pos = self.slab.at(index).pos as usize;
        self.remove_pos(pos);
        self.stats.cancelled += 1;
        Some(self.slab.remove_at(index).payload)
    }

    fn reset(&mut self, key: TimerKey, deadline: Tick) -> Result<(), StaleKeyError> {
        let index = self.slab.resolve(key).ok_or(StaleKeyError { key })?;
        let pos = self.slab.at(index).pos as usize;
        let seq = self.next_seq();
        let old = self.heap[pos];
        self.heap[pos] = Item {
            deadline,
            seq,
            index,
        };
        // The new (deadline, seq) orders after the old one iff the deadline did not move earlier.
        if deadline < old.deadline {
            self.sift_up(pos);
        } else {
            self.sift_down(pos);
        }
        self.stats.reset += 1;
        Ok(())
    }

    fn poll(&mut self, now: Tick) -> Option<Expired<T>> {
        self.now = self.now.max(now);
        let top = *self.heap.first()?;
        if top.deadline > self.now {
            return None;
        }
        let key = self.slab.key_at(top.index);
        self.remove_pos(0);
        self.stats.fired += 1;
        Some(Expired {
            key,
            deadline: top.deadline,
            payload: self.slab.remove_at(top.index).payload,
        })
    }

    fn next_deadline(&self) -> Option<Tick> {
        self.heap.first().map(|i| i.deadline)
    }

    fn deadline(&self, key: TimerKey) -> Option<Tick> {
        let e = self.slab.get(key)?;
        Some(self.heap[e.pos as usize].deadline)
    }

    fn get(&self, key: TimerKey) -> Option<&T> {
        self.slab.get(key).map(|e| &e.payload)
    }

    fn now(&self) -> Tick {
        self.now
    }

    fn len(&self) -> usize {
        self.slab.len()
    }

    fn capacity(&self) -> Option<usize> {
        self.slab.limit()
    }

    fn stats(&self) -> Stats {
        self.stats
    }

    fn drain(&mut self) -> Vec<Expired<T>> {
        let mut items = core::mem::take(&mut self.heap);
        items.sort_unstable_by_key(|i| (i.deadline, i.seq));
        self.stats.drained += items.len() as u64;
        items
            .into_iter()
            .map(|i| Expired {
                key: self.slab.key_at(i.index),
                deadline: i.deadline,
                payload: self.slab.remove_at(i.index).payload,
            })
            .collect()
    }

    fn allocated_bytes(&self) -> usize {
        self.slab.allocated_bytes() + self.heap.capacity() * core::mem::size_of::<Item>()
    }

    fn name(&self) -> &'static str {
        "heap"
    }

    fn check_invariants(&self) {
        self.slab.check();
        assert_eq!(
            self.heap.len(),
            self.slab.len(),
            "heap and slab disagree on len"
        );
        for (pos, item) in self.heap.iter().enumerate() {
            assert_eq!(
                self.slab.at(item.index).pos as usize,
                pos,
                "slab position of element {pos} is wrong"
            );
            if pos > 0 {
                assert!(
                    !item.before(&self.heap[(pos - 1) / D]),
                    "element {pos} orders before its parent"
                );
            }
            assert!(item.seq < self.seq, "seq from the future");
        }
    }
}
