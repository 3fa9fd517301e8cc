//! [`TraceReader`]: streams the records of a trace, refusing any byte that does not fit the
//! format with the offset where it stands.

use std::collections::HashMap;
use std::fmt;
use std::io::{self, BufReader, Read};
use std::time::Duration;

use super::{
    unzigzag, Fired, Sum, TraceHeader, TraceOp, HEADER_LEN, KIND_CANCEL, KIND_DRAIN, KIND_END,
    KIND_INSERT, KIND_MASK, KIND_POLL, KIND_RESET, MAGIC, OUTCOME, VERSION,
};
use crate::Tick;

/// Why a trace cannot be read. Every variant but `Io` names the byte offset.
///
/// ```
/// use tickwheel::trace::{TraceError, TraceReader};
/// let err = TraceReader::new(&b"not a trace at all, clearly"[..]).err().unwrap();
/// assert!(matches!(err, TraceError::BadMagic));
/// assert!(err.to_string().contains("byte 0"));
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum TraceError {
    /// Reading failed.
    Io(io::Error),
    /// The first 8 bytes are not `TWTRACE\n`.
    BadMagic,
    /// A version this reader does not know.
    Version(u16),
    /// A header field out of range: which one and its value.
    Header(&'static str, u64),
    /// The file ends inside a record, or before the end record.
    Truncated {
        /// Where the unfinished record (or the missing end record) starts.
        offset: u64,
    },
    /// A record that does not fit the format.
    Corrupt {
        /// Where the record starts.
        offset: u64,
        /// What is wrong with it.
        what: String,
    },
    /// Bytes after the end record.
    TrailingBytes {
        /// Where they start.
        offset: u64,
    },
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io(e) => write!(f, "reading the trace failed: {e}"),
            Self::BadMagic => f.write_str("not a tickwheel trace: byte 0 does not start with TWTRACE"),
            Self::Version(v) => write!(
                f,
                "trace format version {v} at byte 8; this build reads version {VERSION}"
            ),
            Self::Header(field, value) => {
                write!(f, "trace header field `{field}` is {value}, which is out of range")
            }
            Self::Truncated { offset } => write!(
                f,
                "trace is truncated: it stops inside the record at byte {offset}, before its end record"
            ),
            Self::Corrupt { offset, what } => write!(f, "trace is corrupt at byte {offset}: {what}"),
            Self::TrailingBytes { offset } => {
                write!(f, "trace has bytes after its end record, from byte {offset}")
            }
        }
    }
}

impl std::error::Error for TraceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io(e) => Some(e),
            _ => None,
        }
    }
}

/// Reads a trace written by [`Recorder`](super::Recorder): the header at construction, then
/// one `(offset, TraceOp)` per record as an iterator. The iterator ends after the end record;
/// any error ends it too, after yielding the error once.
///
/// ```
/// use std::time::Duration;
/// use tickwheel::trace::{Recorder, TraceReader};
/// use tickwheel::{HashedWheel, Timer};
///
/// let mut r = Recorder::new(HashedWheel::new(), Vec::new(), Duration::from_micros(100));
/// r.insert(7, ()).unwrap();
/// let bytes = r.finish().unwrap();
/// let trace = TraceReader::new(&bytes[..]).unwrap();
/// assert_eq!(trace.header().tick, Duration::from_micros(100));
/// assert_eq!(trace.count(), 1);
///
/// let cut = TraceReader::new(&bytes[..bytes.len() - 1]).unwrap();
/// let last = cut.last().unwrap();
/// assert!(last.unwrap_err().to_string().contains("truncated"));
/// ```
pub struct TraceReader<R: Read> {
    input: BufReader<R>,
    header: TraceHeader,
    /// Bytes consumed.
    offset: u64,
    /// Ids issued so far (accepted inserts).
    issued: u64,
    /// The id of the timer pending in each slot of the recorded timer.
    slots: HashMap<u64, u64>,
    cursor: Tick,
    records: u64,
    done: bool,
    /// The checksum of every byte consumed.
    sum: Sum,
    /// The end record's checksum, once it has been read and checked.
    end: Option<u64>,
}

impl<R: Read> TraceReader<R> {
    /// Reads and checks the header.
    ///
    /// # Errors
    /// [`TraceError`] when the input is not a trace this build reads.
    ///
    /// ```
    /// let err = tickwheel::trace::TraceReader::new(&b"TWTRACE\n\x09\x00"[..]).err().unwrap();
    /// assert!(err.to_string().contains("version 9"));
    /// ```
    pub fn new(input: R) -> Result<Self, TraceError> {
        let mut input = BufReader::with_capacity(64 * 1024, input);
        let mut head = [0u8; HEADER_LEN];
        let got = read_up_to(&mut input, &mut head).map_err(TraceError::Io)?;
        if got < MAGIC.len() || head[..8] != MAGIC {
            return Err(TraceError::BadMagic);
        }
        if got >= 10 {
            let version = u16::from_le_bytes([head[8], head[9]]);
            if version != VERSION {
                return Err(TraceError::Version(version));
            }
        }
        if got < HEADER_LEN {
            return Err(TraceError::Truncated { offset: 0 });
        }
        let reserved = u16::from_le_bytes([head[10], head[11]]);
        if reserved != 0 {
            return Err(TraceError::Header("reserved", u64::from(reserved)));
        }
        let tick = u64_at(&head, 12);
        if tick == 0 {
            return Err(TraceError::Header("tick_nanos", 0));
        }
        let start = u64_at(&head, 20);
        let mut sum = Sum::new();
        sum.bytes(&head);
        Ok(Self {
            sum,
            input,
            header: TraceHeader {
                tick: Duration::from_nanos(tick),
                start,
            },
            offset: HEADER_LEN as u64,
            issued: 0,
            slots: HashMap::new(),
            cursor: start,
            records: 0,
            done: false,
            end: None,
        })
    }

    /// The header.
    ///
    /// ```
    /// use std::time::Duration;
    /// let r = tickwheel::trace::Recorder::new(
    ///     tickwheel::IndexedHeap::<()>::from_options(tickwheel::Options::new().start(9)).unwrap(),
    ///     Vec::new(), Duration::from_millis(1));
    /// # use tickwheel::FromOptions;
    /// let bytes = r.finish().unwrap();
    /// assert_eq!(tickwheel::trace::TraceReader::new(&bytes[..]).unwrap().header().start, 9);
    /// ```
    pub fn header(&self) -> TraceHeader {
        self.header
    }

    /// Timers the trace has issued ids to so far.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel::Timer;
    /// let mut r = tickwheel::trace::Recorder::new(
    ///     tickwheel::LazyHeap::new(), Vec::new(), Duration::from_millis(1));
    /// r.insert(3, ()).unwrap();
    /// let bytes = r.finish().unwrap();
    /// let mut trace = tickwheel::trace::TraceReader::new(&bytes[..]).unwrap();
    /// trace.next();
    /// assert_eq!(trace.ids_issued(), 1);
    /// ```
    pub fn ids_issued(&self) -> u64 {
        self.issued
    }

    /// The trace's checksum, once every record has been read and the end record checked:
    /// an identity for the whole trace (two traces with the same one hold the same calls, but
    /// for a collision of a 64-bit hash). `None` before the end, or when reading failed.
    ///
    /// ```
    /// use std::time::Duration;
    /// let r = tickwheel::trace::Recorder::new(
    ///     tickwheel::LazyHeap::<()>::new(), Vec::new(), Duration::from_millis(1));
    /// let bytes = r.finish().unwrap();
    /// let mut trace = tickwheel::trace::TraceReader::new(&bytes[..]).unwrap();
    /// assert_eq!(trace.checksum(), None);
    /// assert!(trace.next().is_none());
    /// let stored = u64::from_le_bytes(bytes[bytes.len() - 8..].try_into().unwrap());
    /// assert_eq!(trace.checksum(), Some(stored));
    /// ```
    #[must_use]
    pub fn checksum(&self) -> Option<u64> {
        self.end
    }

    fn byte(&mut self, start: u64) -> Result<u8, TraceError> {
        let mut b = [0u8; 1];
        match self.input.read_exact(&mut b) {
            Ok(()) => {
                self.offset += 1;
                self.sum.bytes(&b);
                Ok(b[0])
            }
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                Err(TraceError::Truncated { offset: start })
            }
            Err(e) => Err(TraceError::Io(e)),
        }
    }

    fn varint(&mut self, start: u64, field: &str) -> Result<u64, TraceError> {
        let first = self.byte(start)?;
        if first == 0 {
            let mut b = [0u8; 8];
            for x in &mut b {
                *x = self.byte(start)?;
            }
            let v = u64::from_le_bytes(b);
            if v >> 56 == 0 {
                return Err(
                    self.corrupt(start, format!("`{field}` takes more bytes than it needs"))
                );
            }
            return Ok(v);
        }
        let n = first.trailing_zeros() as usize + 1;
        let mut b = [0u8; 8];
        b[0] = first;
        for x in &mut b[1..n] {
            *x = self.byte(start)?;
        }
        let v = u64::from_le_bytes(b) >> n;
        if n > 1 && v >> (7 * (n - 1)) == 0 {
            return Err(self.corrupt(start, format!("`{field}` takes more bytes than it needs")));
        }
        Ok(v)
    }

    fn tick(&mut self, start: u64, field: &str) -> Result<Tick, TraceError> {
        let delta = unzigzag(self.varint(start, field)?);
        Ok(self.cursor.wrapping_add(delta as u64))
    }

    /// A slot that holds a pending timer: its id. With `leaves`, the timer leaves it.
    fn pending(&mut self, start: u64, leaves: bool) -> Result<u64, TraceError> {
        let slot = self.varint(start, "slot")?;
        let id = if leaves {
            self.slots.remove(&slot)
        } else {
            self.slots.get(&slot).copied()
        };
        id.ok_or_else(|| self.corrupt(start, format!("slot {slot} holds no pending timer")))
    }

    fn corrupt(&self, offset: u64, what: String) -> TraceError {
        TraceError::Corrupt { offset, what }
    }

    fn record(&mut self) -> Result<Option<(u64, TraceOp)>, TraceError> {
        let start = self.offset;
        let tag = self.byte(start)?;
        let kind = tag & KIND_MASK;
        let outcome = tag & OUTCOME != 0;
        if tag & !(KIND_MASK | OUTCOME) != 0 {
            return Err(self.corrupt(start, format!("tag byte {tag:#04x} sets unused bits")));
        }
        let op = match kind {
            KIND_INSERT => {
                let deadline = self.tick(start, "deadline")?;
                if outcome {
                    let slot = self.varint(start, "slot")?;
                    if self.slots.insert(slot, self.issued).is_some() {
                        return Err(self.corrupt(
                            start,
                            format!("an insert into slot {slot}, which holds a pending timer"),
                        ));
                    }
                    self.issued += 1;
                }
                TraceOp::Insert {
                    deadline,
                    accepted: outcome,
                }
            }
            KIND_CANCEL => {
                let id = if outcome {
                    Some(self.pending(start, true)?)
                } else {
                    None
                };
                TraceOp::Cancel { id, found: outcome }
            }
            KIND_RESET => {
                let id = if outcome {
                    Some(self.pending(start, false)?)
                } else {
                    None
                };
                let deadline = self.tick(start, "deadline")?;
                TraceOp::Reset {
                    id,
                    deadline,
                    ok: outcome,
                }
            }
            KIND_POLL => {
                let now = self.tick(start, "now")?;
                self.cursor = now;
                let fired = if outcome {
                    Fired::Id(self.pending(start, true)?)
                } else {
                    Fired::Nothing
                };
                TraceOp::Poll { now, fired }
            }
            KIND_DRAIN if !outcome => {
                self.slots.clear();
                TraceOp::Drain {
                    count: self.varint(start, "count")?,
                }
            }
            KIND_END if !outcome => {
                let count = self.varint(start, "count")?;
                if count != self.records {
                    return Err(self.corrupt(
                        start,
                        format!(
                            "the end record counts {count} records, the trace holds {}",
                            self.records
                        ),
                    ));
                }
                let want = self.sum.value();
                let mut stored = [0u8; 8];
                for b in &mut stored {
                    *b = self.byte(start)?;
                }
                if u64::from_le_bytes(stored) != want {
                    return Err(self.corrupt(
                        start,
                        "the checksum does not match the bytes before it".into(),
                    ));
                }
                let mut extra = [0u8; 1];
                if read_up_to(&mut self.input, &mut extra).map_err(TraceError::Io)? != 0 {
                    return Err(TraceError::TrailingBytes {
                        offset: self.offset,
                    });
                }
                self.end = Some(want);
                return Ok(None);
            }
            _ => {
                return Err(self.corrupt(start, format!("tag byte {tag:#04x} names no record kind")))
            }
        };
        self.records += 1;
        Ok(Some((start, op)))
    }
}

impl<R: Read> Iterator for TraceReader<R> {
    type Item = Result<(u64, TraceOp), TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.record() {
            Ok(Some(op)) => Some(Ok(op)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// The little-endian `u64` at `at` in the header.
fn u64_at(head: &[u8; HEADER_LEN], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&head[at..at + 8]);
    u64::from_le_bytes(b)
}

/// Reads until `buf` is full or the input ends; returns how many bytes came.
fn read_up_to(input: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match input.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}
