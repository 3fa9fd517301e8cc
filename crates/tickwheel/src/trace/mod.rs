//! Traces of timer calls: [`Recorder`] writes every call a server makes on a [`Timer`], and
//! [`TraceReader`] reads them back, so a load tool can replay one server's traffic on every
//! implementation. Behind the `trace` feature (it needs `std::io`).
//!
//! A trace holds no user data: payloads are not recorded, and keys are not either. A timer is
//! named by the slot index of its key (its low half), which is unique among the timers pending
//! at any moment; the reader turns those into trace-local ids (the `n`-th accepted insert is
//! id `n`, counting from 0). Recording thus keeps no table of its own.
//!
//! # Format, version 1
//!
//! All integers are little-endian. A *varint* is unsigned LEB128 (at most 10 bytes, no bits
//! beyond 64); a *signed varint* is a zigzag-encoded `i64` in a varint. Ticks are written as
//! the signed difference (wrapping, mod 2⁶⁴) from the *cursor*: the `now` of the latest
//! recorded poll, or the start tick before the first.
//!
//! The header, 28 bytes:
//!
//! | bytes | field |
//! |---|---|
//! | 0..8 | magic `TWTRACE\n` |
//! | 8..10 | version, `u16` (1) |
//! | 10..12 | reserved, `u16`, 0 |
//! | 12..20 | tick length in nanoseconds, `u64`, at least 1 |
//! | 20..28 | start tick (the timer's `now` when recording began), `u64` |
//!
//! Then one record per call. A record starts with a tag byte: bits 0..3 the kind, bit 3 the
//! call's outcome; other bits are 0. A *slot* is the varint slot index of a key.
//!
//! | kind | call | outcome bit | then |
//! |---|---|---|---|
//! | 1 | `insert` | accepted | signed varint deadline; the new key's slot, if accepted |
//! | 2 | `cancel` | returned a payload | the slot, if it did |
//! | 3 | `reset` | `Ok` | the slot, if `Ok`; signed varint deadline |
//! | 4 | `poll` | returned a timer | signed varint `now`; the fired timer's slot, if any |
//! | 5 | `drain` | 0 | varint count of timers handed back |
//! | 7 | end | 0 | varint count of records before it, then the checksum, `u64` |
//!
//! A trace ends with exactly one end record; a file that stops before it is truncated, and
//! the reader says so with the byte offset. The checksum is FNV-1a (64-bit) over every byte
//! before it, header included, so a flipped byte is refused as corrupt instead of replayed as
//! a different server. (FNV-1a is ten lines, here rather than a dependency of the core crate.)
//!
//! # Costs
//! | operation | cost |
//! |---|---|
//! | a recorded call | the call, and 2 to 16 bytes into a 64 KiB buffer |
//! | memory | the buffer; the reader keeps one map entry per pending timer |

mod read;
mod record;

pub use read::{TraceError, TraceReader};
pub use record::Recorder;

use crate::Tick;

/// The first 8 bytes of every trace.
pub const MAGIC: [u8; 8] = *b"TWTRACE\n";

/// The format version this crate writes and reads.
pub const VERSION: u16 = 1;

/// Bytes in the header.
pub const HEADER_LEN: usize = 28;

/// What a trace says about the recorded timer.
///
/// ```
/// use std::time::Duration;
/// use tickwheel::trace::TraceHeader;
///
/// let header = TraceHeader { tick: Duration::from_millis(1), start: 0 };
/// assert_eq!(header.tick_nanos(), 1_000_000);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceHeader {
    /// How long one tick lasts.
    pub tick: std::time::Duration,
    /// The timer's `now` when recording began.
    pub start: Tick,
}

impl TraceHeader {
    /// The tick length in whole nanoseconds, as the header stores it (at least 1).
    ///
    /// ```
    /// use std::time::Duration;
    /// let h = tickwheel::trace::TraceHeader { tick: Duration::from_micros(10), start: 5 };
    /// assert_eq!(h.tick_nanos(), 10_000);
    /// ```
    #[must_use]
    pub fn tick_nanos(&self) -> u64 {
        u64::try_from(self.tick.as_nanos())
            .unwrap_or(u64::MAX)
            .max(1)
    }
}

/// One recorded call, with what it returned.
///
/// ```
/// use tickwheel::trace::TraceOp;
/// let op = TraceOp::Insert { deadline: 30, accepted: true };
/// assert!(matches!(op, TraceOp::Insert { accepted: true, .. }));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceOp {
    /// `insert(deadline, _)`; when accepted, the timer got the next id.
    Insert {
        /// The deadline asked for.
        deadline: Tick,
        /// Whether the timer took it (`Ok`), or refused it as full.
        accepted: bool,
    },
    /// `cancel(key)`.
    Cancel {
        /// The timer the key named, or `None` when the call found none (a stale key).
        id: Option<u64>,
        /// Whether the call returned a payload.
        found: bool,
    },
    /// `reset(key, deadline)`.
    Reset {
        /// As for [`TraceOp::Cancel`].
        id: Option<u64>,
        /// The new deadline asked for.
        deadline: Tick,
        /// Whether the call returned `Ok`.
        ok: bool,
    },
    /// `poll(now)`.
    Poll {
        /// The `now` passed.
        now: Tick,
        /// What it returned: nothing, or a timer by id.
        fired: Fired,
    },
    /// `drain()`.
    Drain {
        /// How many timers it handed back.
        count: u64,
    },
}

/// What a recorded poll returned.
///
/// ```
/// assert_ne!(tickwheel::trace::Fired::Nothing, tickwheel::trace::Fired::Id(0));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fired {
    /// `None`.
    Nothing,
    /// The timer with this id.
    Id(u64),
}

const KIND_INSERT: u8 = 1;
const KIND_CANCEL: u8 = 2;
const KIND_RESET: u8 = 3;
const KIND_POLL: u8 = 4;
const KIND_DRAIN: u8 = 5;
const KIND_END: u8 = 7;
const KIND_MASK: u8 = 0b0111;
const OUTCOME: u8 = 0b1000;

/// FNV-1a, 64-bit: the trace checksum.
#[derive(Clone, Copy, Debug)]
struct Fnv(u64);

impl Fnv {
    const fn new() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }
    fn bytes(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

#[cfg(test)]
mod tests;
