//! A `BTreeMap<(deadline, seq), payload>`: the ordered-map timer a user writes in ten lines.

use std::collections::BTreeMap;

use super::Adapter;

/// Timers as map entries keyed by deadline then insertion sequence (FIFO among equal
/// deadlines). Reset is remove + insert under a new key, as a user would write it.
#[derive(Debug, Default)]
pub struct BTreeTimer {
    map: BTreeMap<(u64, u64), u64>,
    next_seq: u64,
}

impl Adapter for BTreeTimer {
    type Key = (u64, u64);
    const NAME: &'static str = "btreemap";
    const IS_TICKWHEEL: bool = false;
    const NATIVE_RESET: bool = false;

    fn with_capacity(_capacity: usize) -> Self {
        Self::default()
    }

    #[inline(always)]
    fn insert(&mut self, deadline: u64, payload: u64) -> (u64, u64) {
        let key = (deadline, self.next_seq);
        self.next_seq += 1;
        self.map.insert(key, payload);
        key
    }

    #[inline(always)]
    fn cancel(&mut self, key: (u64, u64)) -> bool {
        self.map.remove(&key).is_some()
    }

    #[inline(always)]
    fn reset(&mut self, key: (u64, u64), deadline: u64, payload: u64) -> (u64, u64) {
        let payload = self.map.remove(&key).unwrap_or(payload);
        self.insert(deadline, payload)
    }

    #[inline(always)]
    fn poll(&mut self, now: u64) -> Option<u64> {
        let entry = self.map.first_entry()?;
        if entry.key().0 <= now {
            Some(entry.remove())
        } else {
            None
        }
    }

    #[inline(always)]
    fn next_deadline(&mut self) -> Option<u64> {
        self.map.first_key_value().map(|(k, _)| k.0)
    }

    fn len(&self) -> usize {
        self.map.len()
    }
}
