//! The floor: a keyed store that does only what every keyed timer must do per operation —
//! reach the timer's own slot through its key (generation-checked) and write it — and keeps no
//! order at all, so it never fires. Not a timer and not in the criterion suite; the profile
//! binary runs it (`profile churn_io floor 1000000 …`) to measure the workload harness plus one
//! slot access per operation: a lower bound under every implementation, used to tell how large
//! a lead over a peer is possible at all.

use super::Adapter;

const NIL: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct Slot {
    deadline: u64,
    payload: u64,
    /// Even while occupied, odd while vacant; keys carry the even value they were issued with.
    generation: u32,
    /// Next free slot when vacant.
    next_free: u32,
}

/// A generational slot vector with a free list and no ordering.
#[derive(Debug)]
pub struct Floor {
    slots: Vec<Slot>,
    free: u32,
    len: usize,
}

impl Floor {
    #[inline]
    fn slot(&mut self, (index, generation): (u32, u32)) -> Option<&mut Slot> {
        self.slots
            .get_mut(index as usize)
            .filter(|s| s.generation == generation)
    }
}

impl Adapter for Floor {
    type Key = (u32, u32);
    const NAME: &'static str = "floor";
    const IS_TICKWHEEL: bool = false;
    const NATIVE_RESET: bool = true;

    fn with_capacity(capacity: usize) -> Self {
        Self {
            slots: Vec::with_capacity(capacity),
            free: NIL,
            len: 0,
        }
    }

    #[inline(always)]
    fn insert(&mut self, deadline: u64, payload: u64) -> (u32, u32) {
        self.len += 1;
        if self.free != NIL {
            let index = self.free;
            let slot = &mut self.slots[index as usize];
            self.free = slot.next_free;
            slot.generation = slot.generation.wrapping_add(1);
            slot.deadline = deadline;
            slot.payload = payload;
            return (index, slot.generation);
        }
        self.slots.push(Slot {
            deadline,
            payload,
            generation: 0,
            next_free: NIL,
        });
        ((self.slots.len() - 1) as u32, 0)
    }

    #[inline(always)]
    fn cancel(&mut self, key: (u32, u32)) -> bool {
        let free = self.free;
        let Some(slot) = self.slot(key) else {
            return false;
        };
        slot.generation = slot.generation.wrapping_add(1);
        slot.next_free = free;
        self.free = key.0;
        self.len -= 1;
        true
    }

    #[inline(always)]
    fn reset(&mut self, key: (u32, u32), deadline: u64, _payload: u64) -> (u32, u32) {
        if let Some(slot) = self.slot(key) {
            slot.deadline = deadline;
        }
        key
    }

    #[inline(always)]
    fn poll(&mut self, _now: u64) -> Option<u64> {
        None
    }

    fn next_deadline(&mut self) -> Option<u64> {
        None
    }

    fn len(&self) -> usize {
        self.len
    }
}
