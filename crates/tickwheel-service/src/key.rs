//! Service keys: which shard a timer lives in, plus the [`TimerKey`] its shard's timer issued.

use core::fmt;

use tickwheel::TimerKey;

/// Names one timer scheduled through a [`TimerHandle`](crate::TimerHandle).
///
/// A key is the shard index plus the 8-byte [`TimerKey`] of that shard's timer: 12 bytes,
/// `Copy`, safe to keep after the timer ended. Like a `TimerKey` it carries a generation, so a
/// key whose timer fired or was cancelled stays stale even after its storage is reused: every
/// later [`cancel`](crate::TimerHandle::cancel) or [`reset`](crate::TimerHandle::reset_at)
/// answers [`KeyError::NotPending`](crate::KeyError::NotPending) and never touches another timer.
/// Keys are only meaningful for the service that issued them.
///
/// ```
/// use std::time::Duration;
/// use tickwheel_service::{Builder, Delivery, KeyError, ServiceKey};
///
/// let (delivery, _fired) = Delivery::channel();
/// let service = Builder::new().build::<&str>(delivery).unwrap();
/// let key: ServiceKey = service.schedule_after(Duration::from_secs(60), "idle").unwrap();
/// assert_eq!(ServiceKey::from_u128(key.to_u128()), key);
/// assert_eq!(service.cancel(key), Ok("idle"));
/// assert_eq!(service.cancel(key), Err(KeyError::NotPending)); // stale now
/// ```
#[must_use = "a timer can only be cancelled or reset through its key"]
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ServiceKey {
    shard: u32,
    key: TimerKey,
}

impl ServiceKey {
    pub(crate) fn new(shard: usize, key: TimerKey) -> Self {
        // The builder caps shards far below u32::MAX.
        Self {
            shard: shard as u32,
            key,
        }
    }

    /// The index of the shard holding the timer (`0..shards`).
    ///
    /// ```
    /// # use tickwheel_service::{Builder, Delivery};
    /// # use std::time::Duration;
    /// let (delivery, _rx) = Delivery::channel();
    /// let service = Builder::new().shards(4).build::<()>(delivery).unwrap();
    /// let key = service.schedule_after(Duration::from_secs(1), ()).unwrap();
    /// assert!(key.shard() < 4);
    /// ```
    #[must_use]
    pub const fn shard(self) -> usize {
        self.shard as usize
    }

    /// The key inside the shard's timer.
    ///
    /// ```
    /// # use tickwheel_service::{Builder, Delivery};
    /// # use std::time::Duration;
    /// let (delivery, _rx) = Delivery::channel();
    /// let service = Builder::new().shards(1).build::<()>(delivery).unwrap();
    /// let key = service.schedule_after(Duration::from_secs(1), ()).unwrap();
    /// assert_eq!(key.timer_key().index(), 0);
    /// ```
    #[must_use]
    pub const fn timer_key(self) -> TimerKey {
        self.key
    }

    /// Packs the key into a `u128`: the shard in bits 64..96, [`TimerKey::to_u64`] below.
    ///
    /// ```
    /// # use tickwheel_service::{Builder, Delivery, ServiceKey};
    /// # use std::time::Duration;
    /// let (delivery, _rx) = Delivery::channel();
    /// let service = Builder::new().build::<()>(delivery).unwrap();
    /// let key = service.schedule_after(Duration::from_secs(1), ()).unwrap();
    /// let raw = key.to_u128();
    /// assert_eq!((raw >> 64) as usize, key.shard());
    /// assert_eq!(ServiceKey::from_u128(raw), key);
    /// ```
    #[must_use]
    pub const fn to_u128(self) -> u128 {
        ((self.shard as u128) << 64) | self.key.to_u64() as u128
    }

    /// Rebuilds a key packed by [`ServiceKey::to_u128`]. Any value is accepted; one that was
    /// never issued is simply a stale key.
    ///
    /// ```
    /// use tickwheel_service::{Builder, Delivery, KeyError, ServiceKey};
    /// let (delivery, _rx) = Delivery::channel();
    /// let service = Builder::new().build::<()>(delivery).unwrap();
    /// assert_eq!(service.cancel(ServiceKey::from_u128(u128::MAX)), Err(KeyError::NotPending));
    /// ```
    pub const fn from_u128(raw: u128) -> Self {
        Self {
            shard: (raw >> 64) as u32,
            key: TimerKey::from_u64(raw as u64),
        }
    }
}

impl fmt::Debug for ServiceKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ServiceKey(shard {}, {:?})", self.shard, self.key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packs_and_unpacks() {
        for shard in [0usize, 1, 7, 1 << 20] {
            for raw in [0u64, 1, u64::MAX, 0x1234_5678_9abc_def0] {
                let key = ServiceKey::new(shard, TimerKey::from_u64(raw));
                let back = ServiceKey::from_u128(key.to_u128());
                assert_eq!(back, key);
                assert_eq!(back.shard(), shard);
                assert_eq!(back.timer_key().to_u64(), raw);
            }
        }
        assert_eq!(core::mem::size_of::<ServiceKey>(), 12);
    }
}
