//! [`Recorder`]: a [`Timer`] that forwards every call and writes it to a trace.

use std::io::{self, Write};
use std::time::Duration;

use super::{
    prefix_varint, zigzag, Sum, TraceHeader, HEADER_LEN, KIND_CANCEL, KIND_DRAIN, KIND_END,
    KIND_INSERT, KIND_POLL, KIND_RESET, MAGIC, OUTCOME, VERSION,
};
use crate::{Expired, InsertError, StaleKeyError, Stats, Tick, Timer, TimerKey};

/// Bytes buffered before a write to the sink.
const BUFFER: usize = 64 * 1024;

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
/// let (_wheel, bytes) = timer.finish().unwrap();
///
/// let mut trace = TraceReader::new(&bytes[..]).unwrap();
/// assert_eq!(trace.header().start, 0);
/// let ops: Vec<TraceOp> = trace.by_ref().map(|r| r.unwrap().1).collect();
/// assert_eq!(ops[2], TraceOp::Cancel { id: Some(1), found: true });
/// assert_eq!(ops[3], TraceOp::Poll { now: 30, fired: Fired::Id(0) });
/// # let _ = a;
/// ```
#[must_use = "a recorder writes its end record only in `finish`"]
pub struct Recorder<X, W: Write> {
    inner: X,
    sink: W,
    buf: Out,
    /// The checksum of every byte handed to the sink so far.
    sum: Sum,
    /// The `now` ticks are written relative to (see the format).
    cursor: Tick,
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
        let mut buf = Out::new(BUFFER + SLACK);
        buf.extend(&MAGIC);
        buf.extend(&VERSION.to_le_bytes());
        buf.extend(&0u16.to_le_bytes());
        buf.extend(&header.tick_nanos().to_le_bytes());
        buf.extend(&start.to_le_bytes());
        debug_assert_eq!(buf.len, HEADER_LEN);
        Self {
            inner: timer,
            sink,
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
        self.records
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

    /// Ends the trace: writes the end record and flushes. Later calls are forwarded to the
    /// timer and not recorded (a second `stop` does nothing).
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
    /// let (timer, bytes) = r.finish().unwrap();
    /// assert_eq!(timer.len(), 2);
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
                format!("trace write failed after {} records: {e}", self.records),
            ));
        }
        self.buf.byte(KIND_END);
        self.buf.varint(self.records);
        self.sum.bytes(self.buf.as_slice());
        self.buf.extend(&self.sum.value().to_le_bytes());
        self.sink.write_all(self.buf.as_slice())?;
        self.buf = Out::new(0);
        self.sink.flush()
    }

    /// [`stop`](Self::stop)s, then returns the timer and the sink.
    ///
    /// # Errors
    /// As [`stop`](Self::stop).
    ///
    /// ```
    /// use std::time::Duration;
    /// let r = tickwheel::trace::Recorder::new(
    ///     tickwheel::IndexedHeap::<()>::new(), Vec::new(), Duration::from_millis(1));
    /// let (_timer, bytes) = r.finish().unwrap();
    /// assert_eq!(bytes.len(), tickwheel::trace::HEADER_LEN + 2 + 8);
    /// ```
    pub fn finish(mut self) -> io::Result<(X, W)> {
        self.stop()?;
        Ok((self.inner, self.sink))
    }

    /// Ends one record: writes the buffer out once it holds [`BUFFER`] bytes.
    #[inline]
    fn end_record(&mut self) {
        self.records += 1;
        if self.buf.len >= BUFFER {
            self.flush_buffer();
        }
    }

    #[cold]
    fn flush_buffer(&mut self) {
        self.sum.bytes(self.buf.as_slice());
        if self.error.is_none() {
            if let Err(e) = self.sink.write_all(self.buf.as_slice()) {
                self.error = Some(e);
            }
        }
        self.buf.len = 0;
    }

    #[inline]
    fn tick(&mut self, t: Tick) {
        self.buf.varint(zigzag(t.wrapping_sub(self.cursor) as i64));
    }

    /// The tag of a keyed call, then the key's slot when the call found its timer.
    #[inline(always)]
    fn keyed(&mut self, kind: u8, key: TimerKey, outcome: bool) {
        if outcome {
            self.buf.byte(kind | OUTCOME);
            self.buf.varint(u64::from(key.index()));
        } else {
            self.buf.byte(kind);
        }
    }
}

/// Room past [`BUFFER`] for the longest record (a tag and two 9-byte varints) and the end.
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

    /// One prefix varint: a 9-byte store into the slack past `len`, and `len` moved by its
    /// length.
    #[inline(always)]
    fn varint(&mut self, v: u64) {
        let (bytes, n) = prefix_varint(v);
        self.bytes[self.len..self.len + 9].copy_from_slice(&bytes);
        self.len += n;
    }

    fn extend(&mut self, bytes: &[u8]) {
        self.bytes[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }

    fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

impl<T, X: Timer<T>, W: Write> Timer<T> for Recorder<X, W> {
    #[inline(always)]
    fn insert(&mut self, deadline: Tick, payload: T) -> Result<TimerKey, InsertError<T>> {
        if self.stopped {
            return self.inner.insert(deadline, payload);
        }
        let result = self.inner.insert(deadline, payload);
        self.buf
            .byte(KIND_INSERT | if result.is_ok() { OUTCOME } else { 0 });
        self.tick(deadline);
        if let Ok(key) = &result {
            self.buf.varint(u64::from(key.index()));
        }
        self.end_record();
        result
    }

    #[inline(always)]
    fn cancel(&mut self, key: TimerKey) -> Option<T> {
        if self.stopped {
            return self.inner.cancel(key);
        }
        let result = self.inner.cancel(key);
        self.keyed(KIND_CANCEL, key, result.is_some());
        self.end_record();
        result
    }

    #[inline(always)]
    fn reset(&mut self, key: TimerKey, deadline: Tick) -> Result<(), StaleKeyError> {
        if self.stopped {
            return self.inner.reset(key, deadline);
        }
        let result = self.inner.reset(key, deadline);
        self.keyed(KIND_RESET, key, result.is_ok());
        self.tick(deadline);
        self.end_record();
        result
    }

    #[inline(always)]
    fn poll(&mut self, now: Tick) -> Option<Expired<T>> {
        if self.stopped {
            return self.inner.poll(now);
        }
        let result = self.inner.poll(now);
        self.buf
            .byte(KIND_POLL | if result.is_some() { OUTCOME } else { 0 });
        self.tick(now);
        self.cursor = now;
        if let Some(e) = &result {
            self.buf.varint(u64::from(e.key.index()));
        }
        self.end_record();
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

    fn drain(&mut self) -> Vec<Expired<T>> {
        if self.stopped {
            return self.inner.drain();
        }
        let drained = self.inner.drain();
        self.buf.byte(KIND_DRAIN);
        self.buf.varint(drained.len() as u64);
        self.end_record();
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
