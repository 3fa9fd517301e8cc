//! [`TraceReader`]: streams the records of a trace a block at a time, handing out none of a
//! block before its checksum matched, and refusing any byte that does not fit the format with
//! the offset where it stands.

use std::collections::HashMap;
use std::fmt;
use std::io::{self, BufReader, Read};
use std::time::Duration;

use super::{
    unzigzag, Fired, Sum, TraceHeader, TraceOp, BLOCK_RECORDS, HEADER_LEN, KIND_BLOCK, KIND_CANCEL,
    KIND_DRAIN, KIND_END, KIND_INSERT, KIND_MASK, KIND_POLL, KIND_RESET, MAGIC, OUTCOME, VERSION,
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
    /// A version this reader does not know (it reads [`VERSION`] only).
    Version(u16),
    /// A header field out of range: which one and its value.
    Header(&'static str, u64),
    /// The file ends inside a record, or before the end record.
    Truncated {
        /// Where the unfinished record (or the missing end record) starts.
        offset: u64,
    },
    /// A block's checksum does not match the bytes before it: some byte of the block (its
    /// records, its count or the checksum itself) changed. No record of the block was
    /// handed out.
    Checksum {
        /// Where the block's first record starts.
        block: u64,
        /// Where the record that closes the block (and holds the checksum) starts.
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
            Self::BadMagic => {
                f.write_str("not a tickwheel trace: byte 0 does not start with TWTRACE")
            }
            Self::Version(v) if *v < VERSION => write!(
                f,
                "trace format version {v} at byte 8; this build reads version {VERSION} only \
                 (version {v} checks its bytes only at its end, after handing out its records; \
                 record the trace again)"
            ),
            Self::Version(v) => write!(
                f,
                "trace format version {v} at byte 8; this build reads version {VERSION} only"
            ),
            Self::Header(field, value) => {
                write!(
                    f,
                    "trace header field `{field}` is {value}, which is out of range"
                )
            }
            Self::Truncated { offset } => write!(
                f,
                "trace is truncated: it stops at or inside the record at byte {offset}, before \
                 the checksum of its block and the trace's end record"
            ),
            Self::Checksum { block, offset } => write!(
                f,
                "trace is corrupt: the checksum in the record at byte {offset} does not match \
                 the block of records from byte {block}; none of that block was read"
            ),
            Self::Corrupt { offset, what } => {
                write!(f, "trace is corrupt at byte {offset}: {what}")
            }
            Self::TrailingBytes { offset } => {
                write!(
                    f,
                    "trace has bytes after its end record, from byte {offset}"
                )
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
/// Records come a block at a time (see the [format](super)): the reader reads a block's every
/// byte, matches its checksum and decodes all its records before it hands out the first, so
/// a changed byte is refused before any record of its block is seen, and every record handed
/// out lies in a block whose checksum matched. It holds one block in memory (see the costs).
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
    /// What decoding the records so far left: ids, pending slots, the tick cursor.
    state: Decoder,
    /// The bytes of the block being read: its records, then the tag and count of the record
    /// that closes it (the checksum is kept apart).
    raw: Vec<u8>,
    /// The current block's records, checked and decoded, and how many were handed out.
    ops: Vec<(u64, TraceOp)>,
    handed: usize,
    /// Ids in the records handed out so far (accepted inserts).
    issued: u64,
    /// The checksum of every byte consumed.
    sum: Sum,
    /// The end record's checksum, once the last block was read and checked.
    last: Option<u64>,
    /// The same, once every record of the last block was handed out too.
    end: Option<u64>,
    done: bool,
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
            state: Decoder {
                issued: 0,
                slots: HashMap::new(),
                cursor: start,
                records: 0,
            },
            raw: Vec::new(),
            ops: Vec::new(),
            handed: 0,
            issued: 0,
            last: None,
            end: None,
            done: false,
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

    /// Timers the records handed out so far issued ids to.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel::Timer;
    /// let mut r = tickwheel::trace::Recorder::new(
    ///     tickwheel::LazyHeap::new(), Vec::new(), Duration::from_millis(1));
    /// r.insert(3, ()).unwrap();
    /// r.insert(4, ()).unwrap();
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

    /// One byte of the block being read, into `raw`.
    fn take(&mut self, start: u64) -> Result<u8, TraceError> {
        let mut b = [0u8; 1];
        self.exact(&mut b, start)?;
        self.raw.push(b[0]);
        Ok(b[0])
    }

    /// Fills `buf` from the input; the input ending first truncates the record at `start`.
    fn exact(&mut self, buf: &mut [u8], start: u64) -> Result<(), TraceError> {
        match self.input.read_exact(buf) {
            Ok(()) => {
                self.offset += buf.len() as u64;
                Ok(())
            }
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                Err(TraceError::Truncated { offset: start })
            }
            Err(e) => Err(TraceError::Io(e)),
        }
    }

    /// A varint's bytes, into `raw`, unchecked (decoding checks them once the block's
    /// checksum matched).
    fn take_varint(&mut self, start: u64) -> Result<(), TraceError> {
        let first = self.take(start)?;
        let n = if first == 0 {
            9
        } else {
            first.trailing_zeros() + 1
        };
        for _ in 1..n {
            self.take(start)?;
        }
        Ok(())
    }

    /// Reads the next block whole, matches its checksum, decodes its records into `ops`; and
    /// when it is the last, checks the end record's count and that nothing follows.
    fn load_block(&mut self) -> Result<(), TraceError> {
        self.raw.clear();
        self.ops.clear();
        self.handed = 0;
        let block = self.offset;
        let mut count = 0usize;
        // The bytes of its records, by their lengths alone: what they say waits for the check.
        let (kind, closing) = loop {
            let start = self.offset;
            let tag = self.take(start)?;
            if tag & !(KIND_MASK | OUTCOME) != 0 {
                return Err(corrupt(
                    start,
                    format!("tag byte {tag:#04x} sets unused bits"),
                ));
            }
            let outcome = usize::from(tag & OUTCOME != 0);
            let varints = match tag & KIND_MASK {
                KIND_INSERT | KIND_POLL => 1 + outcome,
                KIND_CANCEL => outcome,
                KIND_RESET => outcome + 1,
                KIND_DRAIN if outcome == 0 => 1,
                kind @ (KIND_BLOCK | KIND_END) if outcome == 0 => break (kind, start),
                _ => {
                    return Err(corrupt(
                        start,
                        format!("tag byte {tag:#04x} names no record kind"),
                    ))
                }
            };
            if count == BLOCK_RECORDS {
                return Err(corrupt(
                    start,
                    format!(
                        "the block from byte {block} runs past {BLOCK_RECORDS} records \
                         without a checksum"
                    ),
                ));
            }
            for _ in 0..varints {
                self.take_varint(start)?;
            }
            count += 1;
        };
        let records_len = self.raw.len() - 1;
        self.take_varint(closing)?;
        self.sum.bytes(&self.raw);
        let want = self.sum.value();
        let mut stored = [0u8; 8];
        self.exact(&mut stored, closing)?;
        if u64::from_le_bytes(stored) != want {
            return Err(TraceError::Checksum {
                block,
                offset: closing,
            });
        }
        self.sum.bytes(&stored);
        // Checked: now what the bytes say.
        let mut counted = Bytes {
            bytes: &self.raw[records_len + 1..],
            at: 0,
        };
        let stated = counted.varint(closing, "count")?;
        let (what, holds) = if kind == KIND_END {
            ("the end record", self.state.records + count as u64)
        } else {
            ("the block's checksum record", count as u64)
        };
        if stated != holds {
            return Err(corrupt(
                closing,
                format!("{what} counts {stated} records, the trace holds {holds}"),
            ));
        }
        self.state
            .decode(&self.raw[..records_len], block, &mut self.ops)?;
        if kind == KIND_END {
            let mut extra = [0u8; 1];
            if read_up_to(&mut self.input, &mut extra).map_err(TraceError::Io)? != 0 {
                return Err(TraceError::TrailingBytes {
                    offset: self.offset,
                });
            }
            self.last = Some(want);
        }
        Ok(())
    }
}

impl<R: Read> Iterator for TraceReader<R> {
    type Item = Result<(u64, TraceOp), TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.done {
                return None;
            }
            if let Some(&item) = self.ops.get(self.handed) {
                self.handed += 1;
                if let TraceOp::Insert { accepted: true, .. } = item.1 {
                    self.issued += 1;
                }
                return Some(Ok(item));
            }
            if self.last.is_some() {
                self.end = self.last;
                self.done = true;
                self.ops = Vec::new();
                self.raw = Vec::new();
                return None;
            }
            if let Err(e) = self.load_block() {
                self.done = true;
                self.ops = Vec::new();
                return Some(Err(e));
            }
        }
    }
}

fn corrupt(offset: u64, what: String) -> TraceError {
    TraceError::Corrupt { offset, what }
}

/// What the records decoded so far left behind.
struct Decoder {
    /// Ids issued so far (accepted inserts).
    issued: u64,
    /// The id of the timer pending in each slot of the recorded timer.
    slots: HashMap<u64, u64>,
    cursor: Tick,
    /// Records decoded so far.
    records: u64,
}

impl Decoder {
    /// Decodes every record of a checked block (`bytes`, which starts at byte `base` of the
    /// trace) into `ops`.
    fn decode(
        &mut self,
        bytes: &[u8],
        base: u64,
        ops: &mut Vec<(u64, TraceOp)>,
    ) -> Result<(), TraceError> {
        let mut input = Bytes { bytes, at: 0 };
        while input.at < bytes.len() {
            let start = base + input.at as u64;
            let op = self.record(&mut input, start)?;
            ops.push((start, op));
            self.records += 1;
        }
        Ok(())
    }

    fn tick(&mut self, input: &mut Bytes<'_>, start: u64, field: &str) -> Result<Tick, TraceError> {
        let delta = unzigzag(input.varint(start, field)?);
        Ok(self.cursor.wrapping_add(delta as u64))
    }

    /// A slot that holds a pending timer: its id. With `leaves`, the timer leaves it.
    fn pending(
        &mut self,
        input: &mut Bytes<'_>,
        start: u64,
        leaves: bool,
    ) -> Result<u64, TraceError> {
        let slot = input.varint(start, "slot")?;
        let id = if leaves {
            self.slots.remove(&slot)
        } else {
            self.slots.get(&slot).copied()
        };
        id.ok_or_else(|| corrupt(start, format!("slot {slot} holds no pending timer")))
    }

    fn record(&mut self, input: &mut Bytes<'_>, start: u64) -> Result<TraceOp, TraceError> {
        let tag = input.byte(start)?;
        let outcome = tag & OUTCOME != 0;
        Ok(match tag & KIND_MASK {
            KIND_INSERT => {
                let deadline = self.tick(input, start, "deadline")?;
                if outcome {
                    let slot = input.varint(start, "slot")?;
                    if self.slots.insert(slot, self.issued).is_some() {
                        return Err(corrupt(
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
                    Some(self.pending(input, start, true)?)
                } else {
                    None
                };
                TraceOp::Cancel { id, found: outcome }
            }
            KIND_RESET => {
                let id = if outcome {
                    Some(self.pending(input, start, false)?)
                } else {
                    None
                };
                let deadline = self.tick(input, start, "deadline")?;
                TraceOp::Reset {
                    id,
                    deadline,
                    ok: outcome,
                }
            }
            KIND_POLL => {
                let now = self.tick(input, start, "now")?;
                self.cursor = now;
                let fired = if outcome {
                    Fired::Id(self.pending(input, start, true)?)
                } else {
                    Fired::Nothing
                };
                TraceOp::Poll { now, fired }
            }
            KIND_DRAIN if !outcome => {
                self.slots.clear();
                TraceOp::Drain {
                    count: input.varint(start, "count")?,
                }
            }
            // The block was split into records by these same rules: nothing else is left.
            _ => {
                return Err(corrupt(
                    start,
                    format!("tag byte {tag:#04x} names no record kind"),
                ))
            }
        })
    }
}

/// Checked bytes of a block, read from the front.
struct Bytes<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Bytes<'_> {
    fn byte(&mut self, start: u64) -> Result<u8, TraceError> {
        let b = self
            .bytes
            .get(self.at)
            .copied()
            .ok_or_else(|| corrupt(start, "the record runs past its block".into()))?;
        self.at += 1;
        Ok(b)
    }

    fn varint(&mut self, start: u64, field: &str) -> Result<u64, TraceError> {
        let first = self.byte(start)?;
        let mut b = [0u8; 8];
        if first == 0 {
            for x in &mut b {
                *x = self.byte(start)?;
            }
            let v = u64::from_le_bytes(b);
            if v >> 56 == 0 {
                return Err(corrupt(
                    start,
                    format!("`{field}` takes more bytes than it needs"),
                ));
            }
            return Ok(v);
        }
        let n = first.trailing_zeros() as usize + 1;
        b[0] = first;
        for x in &mut b[1..n] {
            *x = self.byte(start)?;
        }
        let v = u64::from_le_bytes(b) >> n;
        if n > 1 && v >> (7 * (n - 1)) == 0 {
            return Err(corrupt(
                start,
                format!("`{field}` takes more bytes than it needs"),
            ));
        }
        Ok(v)
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
