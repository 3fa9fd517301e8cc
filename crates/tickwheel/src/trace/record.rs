//! [`Recorder`]: a [`Timer`] that forwards every call and writes it to a trace.

use std::io::{self, Write};
use std::time::Duration;

use super::{
    put_varint, zigzag, Sum, TraceHeader, BLOCK_RECORDS, HEADER_LEN, KIND_BLOCK, KIND_CANCEL,
    KIND_DRAIN, KIND_END, KIND_INSERT, KIND_MASK, KIND_POLL, KIND_RESET, MAGIC, OUTCOME, VERSION,
};
use crate::{Expired, InsertError, StaleKeyError, Stats, Tick, Timer, TimerKey};

/// Wraps any [`Timer`] and records each call to a trace (format: [`trace`](super)).
///
/// Queries (`next_deadline`, `deadline`, `get`, `len`, …) and `shrink_to_fit` change nothing
/// and are forwarded unrecorded. A write error never panics and never reaches the timer call:
/// the first one is kept (see [`write_error`](Self::write_error)), nothing more is written,
/// and [`finish`](Self::finish) returns it, so a trace is either complete or reported broken.
///
/// ```
/// use std::time::Duration;
/// use tickwheel::trace::{Fired, Recorder, TraceOp, TraceReader};
/// use tickwheel::{HierarchicalWheel, Timer};
///
/// let mut timer = Recorder::new(HierarchicalWheel::new(), Vec::new(), Duration::from_millis(1));
/// let a = timer.insert(30, "idle").unwrap();
/// let b = timer.insert(5, "request").unwrap();
/// timer.cancel(b);
/// assert_eq!(timer.poll(30).map(|e| e.payload), Some("idle"));
/// let bytes = timer.finish().unwrap();
///
/// let mut trace = TraceReader::new(&bytes[..]).unwrap();
/// assert_eq!(trace.header().start, 0);
/// let ops: Vec<TraceOp> = trace.by_ref().map(|r| r.unwrap().1).collect();
/// assert_eq!(ops[2], TraceOp::Cancel { id: Some(1), found: true });
/// assert_eq!(ops[3], TraceOp::Poll { now: 30, fired: Fired::Id(0) });
/// # let _ = a;
/// ```
pub struct Recorder<X, W: Write> {
    inner: X,
    /// `None` once [`finish`](Self::finish) took it.
    sink: Option<W>,
    /// Calls not encoded yet: the hot path stores 16 bytes and moves on.
    staged: Box<[Raw]>,
    staged_len: usize,
    /// Encoded bytes on their way to the sink.
    buf: Out,
    /// The checksum of every byte handed to the sink so far.
    sum: Sum,
    /// The `now` ticks are written relative to (see the format).
    cursor: Tick,
    /// Records encoded so far (the staged ones are not counted yet).
    records: u64,
    error: Option<io::Error>,
    /// Set by [`stop`](Self::stop): calls are forwarded, no longer recorded.
    stopped: bool,
}

impl<X, W: Write> Recorder<X, W> {
    /// Starts a trace of `timer` into `sink`, with ticks of length `tick`; writes the header.
    ///
    /// ```
    /// use std::time::Duration;
    /// let recorder = tickwheel::trace::Recorder::new(
    ///     tickwheel::IndexedHeap::<u8>::new(), Vec::new(), Duration::from_millis(1));
    /// assert!(recorder.write_error().is_none());
    /// # let _ = recorder.finish();
    /// ```
    pub fn new<T>(timer: X, sink: W, tick: Duration) -> Self
    where
        X: Timer<T>,
    {
        let start = timer.now();
        let header = TraceHeader { tick, start };
        let mut buf = Out::new(HEADER_LEN + STAGED * MAX_RECORD + SLACK);
        buf.extend(&MAGIC);
        buf.extend(&VERSION.to_le_bytes());
        buf.extend(&0u16.to_le_bytes());
        buf.extend(&header.tick_nanos().to_le_bytes());
        buf.extend(&start.to_le_bytes());
        debug_assert_eq!(buf.len, HEADER_LEN);
        Self {
            inner: timer,
            sink: Some(sink),
            staged: vec![Raw::default(); STAGED].into_boxed_slice(),
            staged_len: 0,
            buf,
            sum: Sum::new(),
            cursor: start,
            records: 0,
            error: None,
            stopped: false,
        }
    }

    /// The first write error, if one happened; the trace stopped there.
    ///
    /// ```
    /// use std::time::Duration;
    /// let r = tickwheel::trace::Recorder::new(
    ///     tickwheel::HashedWheel::<()>::new(), std::io::sink(), Duration::from_millis(1));
    /// assert!(r.write_error().is_none());
    /// # let _ = r.finish();
    /// ```
    pub fn write_error(&self) -> Option<&io::Error> {
        self.error.as_ref()
    }

    /// Records written so far (not counting the end record).
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel::Timer;
    /// let mut r = tickwheel::trace::Recorder::new(
    ///     tickwheel::HashedWheel::new(), Vec::new(), Duration::from_millis(1));
    /// r.insert(5, ()).unwrap();
    /// assert_eq!(r.records(), 1);
    /// # let _ = r.finish();
    /// ```
    pub fn records(&self) -> u64 {
        self.records + self.staged_len as u64
    }

    /// The recorded timer.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel::Timer;
    /// let r = tickwheel::trace::Recorder::new(
    ///     tickwheel::LazyHeap::<()>::new(), Vec::new(), Duration::from_millis(1));
    /// assert_eq!(r.inner().name(), "lazy-heap");
    /// # let _ = r.finish();
    /// ```
    pub fn inner(&self) -> &X {
        &self.inner
    }

    /// Ends the trace: writes the last block (the calls since the last full one), closed by
    /// the end record, and flushes. Later calls are forwarded to the timer and not recorded
    /// (a second `stop` does nothing).
    ///
    /// # Errors
    /// The first write error of the whole trace (then the trace is incomplete and says so:
    /// it has no end record), or the error of this last write and flush.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel::Timer;
    /// let mut r = tickwheel::trace::Recorder::new(
    ///     tickwheel::HashedWheel::new(), Vec::new(), Duration::from_millis(1));
    /// r.insert(5, ()).unwrap();
    /// r.stop().unwrap();
    /// r.insert(6, ()).unwrap(); // not recorded
    /// assert_eq!(r.len(), 2);
    /// let bytes = r.finish().unwrap();
    /// assert_eq!(tickwheel::trace::TraceReader::new(&bytes[..]).unwrap().count(), 1);
    /// ```
    pub fn stop(&mut self) -> io::Result<()> {
        if self.stopped {
            return Ok(());
        }
        self.stopped = true;
        if let Some(e) = self.error.take() {
            return Err(io::Error::new(
                e.kind(),
                format!("trace write failed after {} records: {e}", self.records()),
            ));
        }
        self.encode_staged();
        self.buf.byte(KIND_END);
        self.buf.varint(self.records);
        self.sum.bytes(self.buf.as_slice());
        self.buf.extend(&self.sum.value().to_le_bytes());
        let Some(sink) = self.sink.as_mut() else {
            return Ok(());
        };
        sink.write_all(self.buf.as_slice())?;
        self.buf = Out::new(0);
        self.staged = Box::new([]);
        sink.flush()
    }

    /// [`stop`](Self::stop)s, then returns the sink. (Dropping a recorder stops it too, but
    /// can report no error: a failed last write then leaves a trace without its end record,
    /// which readers refuse as truncated.)
    ///
    /// # Errors
    /// As [`stop`](Self::stop).
    ///
    /// ```
    /// use std::time::Duration;
    /// let r = tickwheel::trace::Recorder::new(
    ///     tickwheel::IndexedHeap::<()>::new(), Vec::new(), Duration::from_millis(1));
    /// let bytes = r.finish().unwrap();
    /// assert_eq!(bytes.len(), tickwheel::trace::HEADER_LEN + 2 + 8);
    /// ```
    pub fn finish(mut self) -> io::Result<W> {
        self.stop()?;
        self.sink
            .take()
            .ok_or_else(|| io::Error::other("the trace's sink was already taken"))
    }

    /// Stores one call for encoding; encodes and writes out every [`STAGED`] calls, as a block.
    #[inline(always)]
    fn stage(&mut self, tag: u8, slot: u32, value: u64) {
        self.staged[self.staged_len] = Raw { tag, slot, value };
        self.staged_len += 1;
        if self.staged_len == STAGED {
            self.flush_staged();
        }
    }

    /// Encodes the staged calls as one block, closes it with its count and checksum, and
    /// writes it out.
    #[cold]
    #[inline(never)]
    fn flush_staged(&mut self) {
        let count = self.staged_len as u64;
        self.encode_staged();
        self.buf.byte(KIND_BLOCK);
        self.buf.varint(count);
        self.sum.bytes(self.buf.as_slice());
        let checksum = self.sum.value().to_le_bytes();
        self.sum.bytes(&checksum);
        self.buf.extend(&checksum);
        if self.error.is_none() {
            if let Some(Err(e)) = self.sink.as_mut().map(|s| s.write_all(self.buf.as_slice())) {
                self.error = Some(e);
            }
        }
        self.buf.len = 0;
    }

    /// Encodes the staged calls into `buf` (see the format).
    fn encode_staged(&mut self) {
        let out = &mut self.buf.bytes[..];
        let mut at = self.buf.len;
        let mut cursor = self.cursor;
        for &Raw { tag, slot, value } in &self.staged[..self.staged_len] {
            let hit = tag & OUTCOME != 0;
            let slot = u64::from(slot);
            let tick = zigzag(value.wrapping_sub(cursor) as i64);
            out[at] = tag;
            at += 1;
            match tag & KIND_MASK {
                KIND_INSERT | KIND_POLL => {
                    at = put_varint(out, at, tick);
                    if hit {
                        at = put_varint(out, at, slot);
                    }
                }
                KIND_CANCEL => {
                    if hit {
                        at = put_varint(out, at, slot);
                    }
                }
                KIND_RESET => {
                    if hit {
                        at = put_varint(out, at, slot);
                    }
                    at = put_varint(out, at, tick);
                }
                _ => at = put_varint(out, at, value),
            }
            if tag & KIND_MASK == KIND_POLL {
                cursor = value;
            }
        }
        self.buf.len = at;
        self.cursor = cursor;
        self.records += self.staged_len as u64;
        self.staged_len = 0;
    }
}

/// A call as the hot path stores it.
#[derive(Clone, Copy, Debug, Default)]
struct Raw {
    tag: u8,
    /// The key's slot, when the call found or made a timer.
    slot: u32,
    /// The deadline, `now` or count.
    value: u64,
}

/// Calls staged before they are encoded and written as one block: 64 KiB of [`Raw`]s.
const STAGED: usize = BLOCK_RECORDS;

/// The longest encoded record: a tag and two 9-byte varints.
const MAX_RECORD: usize = 19;

/// Room for the record that closes a block (a block's or the end record: a tag, a varint
/// and the checksum) and a varint's full-width store past the last byte.
const SLACK: usize = 64;

/// The write buffer: a fixed array and a fill mark, so encoding a record is a few indexed
/// stores with no capacity checks to branch on.
struct Out {
    bytes: Box<[u8]>,
    len: usize,
}

impl Out {
    fn new(capacity: usize) -> Self {
        Self {
            bytes: vec![0; capacity].into_boxed_slice(),
            len: 0,
        }
    }

    #[inline(always)]
    fn byte(&mut self, b: u8) {
        self.bytes[self.len] = b;
        self.len += 1;
    }

    /// One prefix varint, `len` moved past it.
    fn varint(&mut self, v: u64) {
        self.len = put_varint(&mut self.bytes, self.len, v);
    }

    fn extend(&mut self, bytes: &[u8]) {
        self.bytes[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }

    fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

impl<X, W: Write> Drop for Recorder<X, W> {
    fn drop(&mut self) {
        // Best effort: see `finish`.
        let _ = self.stop();
    }
}

impl<T, X: Timer<T>, W: Write> Timer<T> for Recorder<X, W> {
    #[inline(always)]
    fn insert(&mut self, deadline: Tick, payload: T) -> Result<TimerKey, InsertError<T>> {
        let result = self.inner.insert(deadline, payload);
        if !self.stopped {
            let (tag, slot) = match &result {
                Ok(key) => (KIND_INSERT | OUTCOME, key.index()),
                Err(_) => (KIND_INSERT, 0),
            };
            self.stage(tag, slot, deadline);
        }
        result
    }

    #[inline(always)]
    fn cancel(&mut self, key: TimerKey) -> Option<T> {
        let result = self.inner.cancel(key);
        if !self.stopped {
            let hit = if result.is_some() { OUTCOME } else { 0 };
            self.stage(KIND_CANCEL | hit, key.index(), 0);
        }
        result
    }

    #[inline(always)]
    fn reset(&mut self, key: TimerKey, deadline: Tick) -> Result<(), StaleKeyError> {
        let result = self.inner.reset(key, deadline);
        if !self.stopped {
            let hit = if result.is_ok() { OUTCOME } else { 0 };
            self.stage(KIND_RESET | hit, key.index(), deadline);
        }
        result
    }

    #[inline(always)]
    fn poll(&mut self, now: Tick) -> Option<Expired<T>> {
        let result = self.inner.poll(now);
        if !self.stopped {
            let (tag, slot) = match &result {
                Some(e) => (KIND_POLL | OUTCOME, e.key.index()),
                None => (KIND_POLL, 0),
            };
            self.stage(tag, slot, now);
        }
        result
    }

    fn next_deadline(&self) -> Option<Tick> {
        self.inner.next_deadline()
    }

    fn deadline(&self, key: TimerKey) -> Option<Tick> {
        self.inner.deadline(key)
    }

    fn get(&self, key: TimerKey) -> Option<&T> {
        self.inner.get(key)
    }

    fn now(&self) -> Tick {
        self.inner.now()
    }

    fn len(&self) -> usize {
        self.inner.len()
    }

    fn capacity(&self) -> Option<usize> {
        self.inner.capacity()
    }

    fn stats(&self) -> Stats {
        self.inner.stats()
    }

    fn work_bound(&self) -> Option<u64> {
        self.inner.work_bound()
    }

    fn drain(&mut self) -> Vec<Expired<T>> {
        let drained = self.inner.drain();
        if !self.stopped {
            self.stage(KIND_DRAIN, 0, drained.len() as u64);
        }
        drained
    }

    fn allocated_bytes(&self) -> usize {
        self.inner.allocated_bytes()
    }

    fn shrink_to_fit(&mut self) {
        self.inner.shrink_to_fit();
    }

    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn check_invariants(&self) {
        self.inner.check_invariants();
    }
}
