//! Traces of timer calls: [`Recorder`] writes every call a server makes on a
//! [`Timer`](crate::Timer), and [`TraceReader`] reads them back, so a load tool can replay one
//! server's traffic on every implementation. Behind the `trace` feature (it needs `std::io`).
//!
//! A trace holds no user data: payloads are not recorded, and keys are not either. A timer is
//! named by the slot index of its key (its low half), which is unique among the timers pending
//! at any moment; the reader turns those into trace-local ids (the `n`-th accepted insert is
//! id `n`, counting from 0). Recording thus keeps no table of its own.
//!
//! # Format, version 2
//!
//! All integers are little-endian. A *varint* is a prefix varint: the number of trailing zero
//! bits of its first byte, plus one, is its length `n` in bytes (1 to 8), and the value is the
//! `n`-byte little-endian word shifted right by `n`, so it holds `7n` bits; a first byte of 0
//! is followed by the value as 8 bytes. A value takes the fewest bytes that hold it. (Unlike
//! LEB128, writing one is a shift and a single 8-byte store, with no loop to mispredict.) A
//! *signed varint* is a zigzag-encoded `i64` in a varint. Ticks are written as
//! the signed difference (wrapping, mod 2⁶⁴) from the *cursor*: the `now` of the latest
//! recorded poll, or the start tick before the first.
//!
//! A trace is a header, then its records in *blocks*: each block is at most
//! [`BLOCK_RECORDS`] (4,096) records, closed by a record that holds their count and a
//! checksum. Every block but the last is closed by a block record; the last one (which may
//! hold no record) by the end record.
//!
//! | part | bytes |
//! |---|---|
//! | header | 28 |
//! | block 1 | 4,096 records, then a block record: tag 6, count (2 bytes), checksum (8 bytes) |
//! | … | more blocks like block 1 |
//! | last block | 0 to 4,096 records, then the end record: tag 7, count of every record of the trace, checksum (8 bytes) |
//!
//! The header, 28 bytes:
//!
//! | bytes | field |
//! |---|---|
//! | 0..8 | magic `TWTRACE\n` |
//! | 8..10 | version, `u16` (2) |
//! | 10..12 | reserved, `u16`, 0 |
//! | 12..20 | tick length in nanoseconds, `u64`, at least 1 |
//! | 20..28 | start tick (the timer's `now` when recording began), `u64` |
//!
//! A record starts with a tag byte: bits 0..3 the kind, bit 3 the call's outcome; other bits
//! are 0. A *slot* is the varint slot index of a key.
//!
//! | kind | record | outcome bit | then |
//! |---|---|---|---|
//! | 1 | `insert` | accepted | signed varint deadline; the new key's slot, if accepted |
//! | 2 | `cancel` | returned a payload | the slot, if it did |
//! | 3 | `reset` | `Ok` | the slot, if `Ok`; signed varint deadline |
//! | 4 | `poll` | returned a timer | signed varint `now`; the fired timer's slot, if any |
//! | 5 | `drain` | 0 | varint count of timers handed back |
//! | 6 | block | 0 | varint count of records in its block, then the checksum, `u64` |
//! | 7 | end | 0 | varint count of records in the trace, then the checksum, `u64` |
//!
//! The checksum in a block or end record covers every byte of the file before it: the
//! header, the earlier blocks with their block records, and its own block's records, tag and
//! count. The bytes are taken as little-endian 8-byte words (the last one zero-padded), and
//! for each word `w`, `h = (h ^ w) * 0x9E3779B97F4A7C15; h ^= h >> 29`, from
//! `h = 0x6A09E667F3BCC908`; then `h ^ length`. A writer or reader keeps one running sum and
//! reads its value at each block's end, so checking a block costs its own bytes only; and as
//! the bytes before the block were checked already, a mismatch falls on the block itself.
//! The end record's checksum covers the whole trace: it is the trace's identity
//! ([`TraceReader::checksum`]).
//!
//! The function is this crate's own, not a checksum crate's: a few lines, specified here in
//! full for readers in other languages, that add no dependency to the core crate. It is 64
//! bits wide because it is also the trace's identity (reports compare it; a 32-bit CRC would
//! collide among some 65,000 traces). Every step is a bijection of `h`, so a change confined
//! to one aligned 8-byte word is always caught, as a CRC-32 catches every burst of up to 32
//! bits; other changes escape with a chance of about 2⁻⁶⁴. And it takes a word per multiply,
//! off the recording path (see the costs).
//!
//! ## Invariants
//!
//! - A block holds at most [`BLOCK_RECORDS`] records. [`Recorder`] writes full blocks,
//!   but the last; a reader accepts any count up to the bound, and refuses a block that runs
//!   past it without a block or end record.
//! - A block or end record's count is the number of records in its block, or in the whole
//!   trace, and its checksum covers every byte before it.
//! - A trace ends with exactly one end record and nothing after it; a file that stops before
//!   it is truncated, and the reader says so with the byte offset.
//! - [`TraceReader`] hands out no record of a block before it has read the whole block, its
//!   checksum matched, and every record of it decoded. A changed byte is thus refused (as
//!   [`TraceError::Checksum`], or as a record that does not fit the format, each naming its
//!   offset) before any record of its block is seen, while every record of the blocks before
//!   it has been handed out as written; a truncated file gives every block before the cut,
//!   then [`TraceError::Truncated`].
//!
//! ## Versions
//!
//! This build writes and reads version 2 only. Version 1 had no blocks: one checksum in the
//! end record, so a reader handed out every record before it could check any (one changed
//! byte could replay as up to a whole trace of wrong calls). Reading it would keep that
//! hazard, so it is refused by its version ([`TraceError::Version`]), with a message naming
//! both versions; record the trace again.
//!
//! # Costs
//! | operation | cost |
//! |---|---|
//! | a recorded call | the call and one 16-byte store; every 4,096 calls are encoded (2 to 19 bytes each) and written in one go, as a block |
//! | block overhead | 11 bytes per block of 4,096 records (tag, 2-byte count, checksum): 0.0027 bytes per record, under 0.1% of a trace at 3 bytes a record (the mix of `tests/trace_blocks.rs` averages 3.04) |
//! | recording memory | 64 KiB of staged calls and a 77 KiB write buffer |
//! | reading memory | one block: its bytes (at most 4,096 × 19 + 10, 76 KiB) and its decoded records (4,096 × 40 bytes, 160 KiB); a 64 KiB input buffer; one map entry per pending timer |
//!
//! The hot path only stages the call: encoding it there would put its instructions behind the
//! timer call's own cache miss, where the CPU needs room to overlap that miss with the next
//! call's. It pays on `reset_later` at 100k timers: a recorded reset took 98 ns against 194 ns
//! encoded inline (medians of four interleaved criterion rounds of each build). Closing a
//! block adds a tag, a count and a copy of the running checksum to that flush: nothing on the
//! hot path.

mod read;
mod record;

pub use read::{TraceError, TraceReader};
pub use record::Recorder;

use crate::Tick;

/// The first 8 bytes of every trace.
pub const MAGIC: [u8; 8] = *b"TWTRACE\n";

/// The format version this crate writes and reads (and the only one it reads).
pub const VERSION: u16 = 2;

/// The most records a block holds; the recorder writes blocks of exactly this many, but the
/// last.
pub const BLOCK_RECORDS: usize = 4096;

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
const KIND_BLOCK: u8 = 6;
const KIND_END: u8 = 7;
const KIND_MASK: u8 = 0b0111;
const OUTCOME: u8 = 0b1000;

/// The trace checksum (see the format): a multiply-xorshift over 8-byte words.
#[derive(Clone, Copy, Debug)]
struct Sum {
    h: u64,
    /// Bytes of the word being filled, and how many.
    word: [u8; 8],
    fill: usize,
    len: u64,
}

impl Sum {
    const fn new() -> Self {
        Self {
            h: 0x6A09_E667_F3BC_C908,
            word: [0; 8],
            fill: 0,
            len: 0,
        }
    }

    fn mix(&mut self, w: u64) {
        self.h = (self.h ^ w).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.h ^= self.h >> 29;
    }

    fn bytes(&mut self, mut bytes: &[u8]) {
        self.len += bytes.len() as u64;
        if self.fill > 0 {
            let take = (8 - self.fill).min(bytes.len());
            self.word[self.fill..self.fill + take].copy_from_slice(&bytes[..take]);
            self.fill += take;
            bytes = &bytes[take..];
            if self.fill < 8 {
                return;
            }
            self.mix(u64::from_le_bytes(self.word));
            self.fill = 0;
        }
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            let mut b = [0u8; 8];
            b.copy_from_slice(w);
            self.mix(u64::from_le_bytes(b));
        }
        let rest = words.remainder();
        self.word[..rest.len()].copy_from_slice(rest);
        self.fill = rest.len();
    }

    /// The checksum of everything so far.
    fn value(&self) -> u64 {
        let mut s = *self;
        if s.fill > 0 {
            s.word[s.fill..].fill(0);
            s.mix(u64::from_le_bytes(s.word));
        }
        s.h ^ s.len
    }
}

/// Writes `v` as a prefix varint at `out[at..]` and returns the index after it. It stores 8
/// bytes (9 for the longest form) whatever the length, so `out` needs 9 bytes of room at `at`.
#[inline(always)]
fn put_varint(out: &mut [u8], at: usize, v: u64) -> usize {
    if v >> 56 == 0 {
        let bits = 64 - (v | 1).leading_zeros() as usize;
        // `div_ceil` compiles to a quotient and a remainder test; this is one multiply.
        #[allow(clippy::manual_div_ceil)]
        let n = (bits + 6) / 7;
        let word = ((v << 1) | 1) << (n - 1);
        out[at..at + 8].copy_from_slice(&word.to_le_bytes());
        at + n
    } else {
        out[at] = 0;
        out[at + 1..at + 9].copy_from_slice(&v.to_le_bytes());
        at + 9
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

#[cfg(test)]
mod varint_tests {
    use super::put_varint;

    #[test]
    fn lengths_and_layout() {
        for (v, n) in [
            (0u64, 1),
            (127, 1),
            (128, 2),
            ((1 << 14) - 1, 2),
            (1 << 14, 3),
            ((1 << 56) - 1, 8),
            (1 << 56, 9),
            (u64::MAX, 9),
        ] {
            let mut bytes = [0xAAu8; 12];
            let len = put_varint(&mut bytes, 1, v) - 1;
            assert_eq!(len, n, "{v}");
            let bytes = &bytes[1..];
            if n < 9 {
                assert_eq!(bytes[0].trailing_zeros() as usize + 1, n);
                let mut w = [0u8; 8];
                w[..n].copy_from_slice(&bytes[..n]);
                assert_eq!(u64::from_le_bytes(w) >> n, v);
            } else {
                assert_eq!(bytes[0], 0);
                assert_eq!(u64::from_le_bytes(bytes[1..9].try_into().unwrap()), v);
            }
        }
    }
}
