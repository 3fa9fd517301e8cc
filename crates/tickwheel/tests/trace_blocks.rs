//! Traces checked a block at a time: a real timer's trace of several blocks round-trips
//! exactly; a byte changed in block 2 (in a record, or in the record that closes the block)
//! gives every record of block 1 as written, then an error, and never a record of block 2; a
//! cut gives the blocks before it, then says the trace is truncated; an old version's header
//! is refused naming both versions.
//!
//! `trace` is on through the crate's dev-dependency on itself; without it (as in the
//! published package, unless `--features trace` is given) this file is empty.
#![cfg(feature = "trace")]

use std::cell::RefCell;
use std::io::Write;
use std::rc::Rc;
use std::time::Duration;

use tickwheel::trace::{
    Fired, Recorder, TraceError, TraceOp, TraceReader, BLOCK_RECORDS, HEADER_LEN, MAGIC, VERSION,
};
use tickwheel::{HierarchicalWheel, Timer, TimerKey};

/// The block record that closes a full block: its tag, the count 4,096 as a 2-byte varint,
/// and the 8-byte checksum.
const CLOSING: usize = 11;
const BLOCK_TAG: u8 = 6;
const END_TAG: u8 = 7;

/// Drives a hierarchical wheel under a recorder with a mix of calls (inserts, cancels,
/// resets, stale cancels, polls that fire) until exactly `calls` were recorded; returns the
/// ops the trace must hold. The trace goes to `sink`.
fn drive<W: Write>(r: &mut Recorder<HierarchicalWheel<u64>, W>, calls: usize) -> Vec<TraceOp> {
    let mut rng = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut pending: Vec<(TimerKey, u64)> = Vec::new();
    let mut want = Vec::with_capacity(calls);
    let (mut now, mut id) = (0u64, 0u64);
    while want.len() < calls {
        match next() % 8 {
            0..=2 => {
                let deadline = now + 1 + next() % 2_000;
                let key = r.insert(deadline, id).unwrap();
                pending.push((key, id));
                want.push(TraceOp::Insert {
                    deadline,
                    accepted: true,
                });
                id += 1;
            }
            3 if !pending.is_empty() => {
                let i = (next() % pending.len() as u64) as usize;
                let (key, kid) = pending.swap_remove(i);
                assert_eq!(r.cancel(key), Some(kid));
                want.push(TraceOp::Cancel {
                    id: Some(kid),
                    found: true,
                });
            }
            4 if !pending.is_empty() => {
                let (key, kid) = pending[(next() % pending.len() as u64) as usize];
                let deadline = now + 1 + next() % 2_000;
                r.reset(key, deadline).unwrap();
                want.push(TraceOp::Reset {
                    id: Some(kid),
                    deadline,
                    ok: true,
                });
            }
            5 => {
                assert_eq!(r.cancel(TimerKey::from_u64(0)), None);
                want.push(TraceOp::Cancel {
                    id: None,
                    found: false,
                });
            }
            _ => {
                now += next() % 20;
                while want.len() < calls {
                    let Some(e) = r.poll(now) else {
                        want.push(TraceOp::Poll {
                            now,
                            fired: Fired::Nothing,
                        });
                        break;
                    };
                    pending.retain(|&(_, p)| p != e.payload);
                    want.push(TraceOp::Poll {
                        now,
                        fired: Fired::Id(e.payload),
                    });
                }
            }
        }
    }
    assert_eq!(r.records(), calls as u64);
    want
}

/// A trace of exactly `calls` records, and the ops it holds.
fn record(calls: usize) -> (Vec<u8>, Vec<TraceOp>) {
    let mut r = Recorder::new(
        HierarchicalWheel::new(),
        Vec::new(),
        Duration::from_millis(1),
    );
    let want = drive(&mut r, calls);
    (r.finish().unwrap(), want)
}

/// Everything a reader hands out: the records, then the error that ended it, if one did.
fn read(bytes: &[u8]) -> (Vec<(u64, TraceOp)>, Option<TraceError>) {
    let trace = match TraceReader::new(bytes) {
        Ok(t) => t,
        Err(e) => return (Vec::new(), Some(e)),
    };
    let mut ops = Vec::new();
    let mut items = trace.into_iter();
    for item in items.by_ref() {
        match item {
            Ok(op) => ops.push(op),
            Err(e) => {
                assert!(items.next().is_none(), "an error ends the iterator");
                return (ops, Some(e));
            }
        }
    }
    (ops, None)
}

/// A trace of three full blocks and a partial fourth, read back intact: its records with their
/// offsets, and where each block starts (the last entry: where the end record starts).
struct Fixture {
    bytes: Vec<u8>,
    ops: Vec<(u64, TraceOp)>,
    starts: Vec<usize>,
}

fn fixture() -> Fixture {
    let (bytes, want) = record(3 * BLOCK_RECORDS + 1_234);
    let (ops, err) = read(&bytes);
    assert!(err.is_none(), "{}", err.unwrap());
    assert_eq!(
        ops.iter().map(|&(_, op)| op).collect::<Vec<_>>(),
        want,
        "an intact trace round-trips exactly"
    );
    let mut starts: Vec<usize> = (0..4).map(|b| ops[b * BLOCK_RECORDS].0 as usize).collect();
    let end_len = 1 + 2 + 8; // the count 13,522 takes 2 bytes too
    starts.push(bytes.len() - end_len);
    Fixture { bytes, ops, starts }
}

/// Asserts `bytes` gives exactly the first `blocks` blocks of `f`, then an error, and
/// returns the error.
fn gives_blocks_then_error(f: &Fixture, bytes: &[u8], blocks: usize, what: &str) -> TraceError {
    let (ops, err) = read(bytes);
    let err = err.unwrap_or_else(|| panic!("{what}: read without an error"));
    assert_eq!(
        ops.len(),
        blocks * BLOCK_RECORDS,
        "{what}: {err}: handed out {} records",
        ops.len()
    );
    assert_eq!(
        ops[..],
        f.ops[..ops.len()],
        "{what}: the records handed out"
    );
    assert!(!err.to_string().is_empty());
    err
}

#[test]
fn an_intact_trace_of_several_blocks_round_trips_exactly() {
    let f = fixture();
    assert_eq!(f.starts[0], HEADER_LEN);
    // Each full block is closed by its block record: tag 6, the count 4,096, the checksum.
    for b in 1..4 {
        let closing = f.starts[b] - CLOSING;
        assert_eq!(
            f.bytes[closing..closing + 3],
            [BLOCK_TAG, 0x02, 0x40],
            "block {b}"
        );
    }
    assert_eq!(f.bytes[f.starts[4]], END_TAG);
    let mut trace = TraceReader::new(&f.bytes[..]).unwrap();
    let accepted_in_block_1 = f.ops[..BLOCK_RECORDS]
        .iter()
        .filter(|(_, op)| matches!(op, TraceOp::Insert { accepted: true, .. }))
        .count() as u64;
    for _ in 0..BLOCK_RECORDS {
        trace.next().unwrap().unwrap();
    }
    assert_eq!(trace.ids_issued(), accepted_in_block_1);
    assert_eq!(trace.checksum(), None);
    assert_eq!(trace.by_ref().count(), f.ops.len() - BLOCK_RECORDS);
    let stored = u64::from_le_bytes(f.bytes[f.bytes.len() - 8..].try_into().unwrap());
    assert_eq!(trace.checksum(), Some(stored));
    let per_record = (f.bytes.len() - HEADER_LEN) as f64 / f.ops.len() as f64;
    eprintln!(
        "{} records in {} bytes: {per_record:.2} bytes a record",
        f.ops.len(),
        f.bytes.len()
    );
}

#[test]
fn a_changed_byte_in_a_record_of_block_2_gives_block_1_then_an_error() {
    let f = fixture();
    let (block2, closing2) = (f.starts[1], f.starts[2] - CLOSING);
    // In the middle of block 2: a byte inside a record, then the record's tag.
    let middle = f.ops[BLOCK_RECORDS + BLOCK_RECORDS / 2].0 as usize;
    let next = f.ops[BLOCK_RECORDS + BLOCK_RECORDS / 2 + 1].0 as usize;
    assert!(
        next > middle + 1,
        "the middle record has a byte after its tag"
    );
    let mut bytes = f.bytes.clone();
    bytes[middle + 1] ^= 0x10;
    let err = gives_blocks_then_error(&f, &bytes, 1, "a record's byte");
    assert!(
        matches!(err, TraceError::Checksum { block, offset }
            if block == block2 as u64 && offset == closing2 as u64),
        "{err}"
    );
    assert!(err.to_string().contains(&format!("byte {block2}")), "{err}");
    for mask in [0x01, 0x02, 0x04, 0x08, 0x10, 0x80, 0xFF] {
        let mut bytes = f.bytes.clone();
        bytes[middle] ^= mask;
        gives_blocks_then_error(&f, &bytes, 1, &format!("the tag ^ {mask:#x}"));
    }
    // And spread over the whole block, with a few masks each.
    for at in (block2..closing2).step_by(61) {
        for mask in [0x01, 0x80, 0x5A] {
            let mut bytes = f.bytes.clone();
            bytes[at] ^= mask;
            gives_blocks_then_error(&f, &bytes, 1, &format!("byte {at} ^ {mask:#x}"));
        }
    }
}

#[test]
fn a_changed_byte_in_the_record_closing_block_2_gives_block_1_then_an_error() {
    let f = fixture();
    let (block2, closing2) = (f.starts[1], f.starts[2] - CLOSING);
    for at in closing2..f.starts[2] {
        for mask in [0x01, 0x02, 0x40, 0x80, 0xFF] {
            let mut bytes = f.bytes.clone();
            bytes[at] ^= mask;
            let what = format!("block record byte {} ^ {mask:#x}", at - closing2);
            let err = gives_blocks_then_error(&f, &bytes, 1, &what);
            if at >= closing2 + 3 {
                // The checksum itself.
                assert!(
                    matches!(err, TraceError::Checksum { block, offset }
                        if block == block2 as u64 && offset == closing2 as u64),
                    "{what}: {err}"
                );
            }
        }
    }
}

#[test]
fn a_changed_byte_anywhere_gives_exactly_the_blocks_before_its_own() {
    let f = fixture();
    for at in (0..f.bytes.len()).step_by(89) {
        let mask = ((at * 7) % 255) as u8 | 1;
        let mut bytes = f.bytes.clone();
        bytes[at] ^= mask;
        // The block a byte belongs to: the header and block 1 come before any record.
        let blocks = f.starts[1..4].iter().filter(|&&s| s <= at).count();
        gives_blocks_then_error(&f, &bytes, blocks, &format!("byte {at} ^ {mask:#x}"));
    }
}

#[test]
fn a_truncated_trace_gives_the_blocks_before_the_cut_then_says_so() {
    let f = fixture();
    let len = f.bytes.len();
    let middle2 = f.ops[BLOCK_RECORDS + 100].0 as usize + 1;
    for (cut, blocks) in [
        (HEADER_LEN, 0),
        (f.starts[1] - 1, 0),
        (middle2, 1),
        (f.starts[2] - CLOSING, 1),
        (f.starts[2] - 4, 1),
        (f.starts[2], 2),
        (f.starts[4], 3),
        (len - 1, 3),
    ] {
        let err = gives_blocks_then_error(&f, &f.bytes[..cut], blocks, &format!("cut at {cut}"));
        let TraceError::Truncated { offset } = err else {
            panic!("cut at {cut}: {err}");
        };
        assert!(offset as usize <= cut, "cut at {cut}: offset {offset}");
        let message = err.to_string();
        assert!(
            message.contains("truncated") && message.contains(&format!("byte {offset}")),
            "{message}"
        );
    }
}

#[test]
fn a_block_without_its_closing_record_is_refused_at_the_bound() {
    let f = fixture();
    // Block 1 loses its block record: blocks 1 and 2 run together, past the bound.
    let mut bytes = f.bytes[..f.starts[1] - CLOSING].to_vec();
    bytes.extend_from_slice(&f.bytes[f.starts[1]..]);
    let err = gives_blocks_then_error(&f, &bytes, 0, "merged blocks");
    assert!(
        matches!(err, TraceError::Corrupt { .. }) && err.to_string().contains("4096"),
        "{err}"
    );
}

#[test]
fn full_blocks_end_with_an_empty_last_block() {
    let (bytes, want) = record(2 * BLOCK_RECORDS);
    let (ops, err) = read(&bytes);
    assert!(err.is_none(), "{}", err.unwrap());
    assert_eq!(ops.into_iter().map(|(_, op)| op).collect::<Vec<_>>(), want);
    // The end record (tag, the count 8,192 in 2 bytes, checksum) right after block 2's.
    let end = bytes.len() - 11;
    assert_eq!(bytes[end], END_TAG);
    assert_eq!(bytes[end - CLOSING], BLOCK_TAG);
}

#[test]
fn a_dropped_recorder_writes_its_last_block() {
    #[derive(Clone, Default)]
    struct Shared(Rc<RefCell<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.borrow_mut().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let sink = Shared::default();
    let mut r = Recorder::new(
        HierarchicalWheel::new(),
        sink.clone(),
        Duration::from_millis(1),
    );
    let want = drive(&mut r, BLOCK_RECORDS + 100);
    drop(r);
    let bytes = sink.0.borrow().clone();
    let (ops, err) = read(&bytes);
    assert!(err.is_none(), "{}", err.unwrap());
    assert_eq!(ops.into_iter().map(|(_, op)| op).collect::<Vec<_>>(), want);
}

#[test]
fn an_old_version_is_refused_naming_both_versions() {
    assert_eq!(VERSION, 2);
    // A version 1 trace with no records: its header, then its end record (count 0, then the
    // checksum, here left 0: the reader stops at the version).
    let mut old = MAGIC.to_vec();
    old.extend_from_slice(&1u16.to_le_bytes());
    old.extend_from_slice(&0u16.to_le_bytes());
    old.extend_from_slice(&1_000_000u64.to_le_bytes());
    old.extend_from_slice(&0u64.to_le_bytes());
    old.extend_from_slice(&[END_TAG, 0x01]);
    old.extend_from_slice(&[0; 8]);
    let err = TraceReader::new(&old[..])
        .err()
        .expect("version 1 is refused");
    assert!(matches!(err, TraceError::Version(1)), "{err}");
    let message = err.to_string();
    assert!(
        message.contains("version 1") && message.contains("version 2"),
        "{message}"
    );
    // A later version too.
    let (mut newer, _) = record(10);
    newer[8..10].copy_from_slice(&3u16.to_le_bytes());
    let message = TraceReader::new(&newer[..]).err().unwrap().to_string();
    assert!(
        message.contains("version 3") && message.contains("version 2"),
        "{message}"
    );
}
