use std::time::Duration;

use proptest::prelude::*;

use super::*;
use crate::{FromOptions, HierarchicalWheel, Timer, TimerKey};

#[derive(Clone, Debug)]
enum Call {
    Insert(u64),
    Cancel(usize),
    Reset(usize, u64),
    Poll(u64),
    Stale,
}

fn call() -> impl Strategy<Value = Call> {
    prop_oneof![
        4 => (0u64..5_000).prop_map(Call::Insert),
        2 => any::<usize>().prop_map(Call::Cancel),
        2 => (any::<usize>(), 0u64..5_000).prop_map(|(i, d)| Call::Reset(i, d)),
        3 => (0u64..300).prop_map(Call::Poll),
        1 => Just(Call::Stale),
    ]
}

/// Records `calls` on a capacity-limited wheel; returns the trace and the ops it must hold.
fn record(calls: &[Call]) -> (Vec<u8>, Vec<TraceOp>) {
    let wheel = HierarchicalWheel::from_options(crate::Options::new().capacity(40)).unwrap();
    let mut r = Recorder::new(wheel, Vec::new(), Duration::from_millis(1));
    let mut keys: Vec<(TimerKey, u64)> = Vec::new();
    let mut pending: Vec<u64> = Vec::new();
    let mut want = Vec::new();
    let mut now = 0u64;
    let mut next_id = 0;
    for c in calls {
        match *c {
            Call::Insert(after) => {
                let deadline = now + after;
                let ok = r.insert(deadline, next_id).ok();
                want.push(TraceOp::Insert {
                    deadline,
                    accepted: ok.is_some(),
                });
                if let Some(k) = ok {
                    keys.push((k, next_id));
                    pending.push(next_id);
                    next_id += 1;
                }
            }
            Call::Cancel(i) if !keys.is_empty() => {
                let (k, id) = keys[i % keys.len()];
                let found = r.cancel(k).is_some();
                assert_eq!(found, pending.contains(&id));
                want.push(TraceOp::Cancel {
                    id: found.then_some(id),
                    found,
                });
                pending.retain(|&p| p != id);
            }
            Call::Reset(i, after) if !keys.is_empty() => {
                let (k, id) = keys[i % keys.len()];
                let ok = r.reset(k, now + after).is_ok();
                want.push(TraceOp::Reset {
                    id: ok.then_some(id),
                    deadline: now + after,
                    ok,
                });
            }
            Call::Cancel(_) | Call::Reset(..) => {}
            Call::Poll(step) => {
                now += step;
                loop {
                    let e = r.poll(now);
                    let fired = e.as_ref().map_or(Fired::Nothing, |e| Fired::Id(e.payload));
                    want.push(TraceOp::Poll { now, fired });
                    match e {
                        Some(e) => pending.retain(|&p| p != e.payload),
                        None => break,
                    }
                }
            }
            Call::Stale => {
                let found = r.cancel(TimerKey::from_u64(0)).is_some();
                want.push(TraceOp::Cancel { id: None, found });
            }
        }
    }
    let count = r.drain().len() as u64;
    want.push(TraceOp::Drain { count });
    let bytes = r.finish().unwrap();
    (bytes, want)
}

fn read_all(bytes: &[u8]) -> Result<Vec<TraceOp>, TraceError> {
    TraceReader::new(bytes)?
        .map(|r| r.map(|(_, op)| op))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// What is read back is exactly what was called and returned.
    #[test]
    fn round_trips(calls in proptest::collection::vec(call(), 0..200)) {
        let (bytes, want) = record(&calls);
        prop_assert_eq!(read_all(&bytes).unwrap(), want);
    }

    /// Every prefix short of the whole file is refused as truncated (or, inside the header,
    /// as not a trace), never read as a shorter trace.
    #[test]
    fn every_cut_is_refused(calls in proptest::collection::vec(call(), 0..60), at in any::<prop::sample::Index>()) {
        let (bytes, _) = record(&calls);
        let cut = at.index(bytes.len());
        let err = read_all(&bytes[..cut]).unwrap_err();
        let named = matches!(err, TraceError::Truncated { .. } | TraceError::BadMagic);
        prop_assert!(named, "cut at {}: {}", cut, err);
    }

    /// Flipped bytes are refused (the checksum catches what the format cannot), never
    /// replayed as another server and never a panic.
    #[test]
    fn every_mutation_is_refused(
        calls in proptest::collection::vec(call(), 1..60),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
    ) {
        let (mut bytes, _) = record(&calls);
        let mut seen = Vec::new();
        for (at, b) in flips {
            let i = at.index(bytes.len());
            if !seen.contains(&i) {
                seen.push(i);
                bytes[i] ^= b | 1;
            }
        }
        let err = read_all(&bytes).unwrap_err();
        prop_assert!(!err.to_string().is_empty());
    }
}

#[test]
fn a_write_error_is_reported_at_finish_and_not_before() {
    struct Failing;
    impl std::io::Write for Failing {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("disk full"))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut r = Recorder::new(HierarchicalWheel::new(), Failing, Duration::from_millis(1));
    for i in 0..100_000u64 {
        let k = r.insert(i, i).unwrap();
        r.cancel(k);
    }
    assert!(
        r.write_error().is_some(),
        "the buffer filled and its write failed"
    );
    let err = r.finish().err().expect("finish reports the failure");
    assert!(err.to_string().contains("disk full"), "{err}");
}

#[test]
fn header_errors_name_the_field() {
    let (mut bytes, _) = record(&[Call::Insert(5)]);
    bytes[12..20].copy_from_slice(&0u64.to_le_bytes());
    assert!(matches!(
        read_all(&bytes),
        Err(TraceError::Header("tick_nanos", 0))
    ));
    let (mut bytes, _) = record(&[]);
    bytes.push(0);
    assert!(matches!(
        read_all(&bytes),
        Err(TraceError::TrailingBytes { .. })
    ));
}

/// The module docs put a block's decoded records at 4,096 × 40 bytes.
#[test]
fn a_decoded_record_takes_at_most_40_bytes() {
    assert!(std::mem::size_of::<(u64, TraceOp)>() <= 40);
}
