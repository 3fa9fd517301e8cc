//! A month of a server's timers in virtual time, on every implementation.
//!
//! 30 days of 1 ms ticks, looked at once per virtual second: a diurnal load of I/O timeouts
//! (most cancelled by their response, some reset, the rest firing) and, on three of the days,
//! a spike of a million connections that all arm a timeout at once and then drain away. Each
//! implementation makes over 10^8 calls. The test checks every call against its own record of
//! what is pending:
//!
//! - no fire is early, none is lost or doubled, and each carries its key and current deadline;
//! - every count in `stats()` and `len()` equals what the test did;
//! - an hour after each spike, one `shrink_to_fit()` brings `allocated_bytes()` under a tenth
//!   of the spike's peak and within twice what a fresh timer holding the same live set takes.
//!
//! It runs in release only (`scripts/test.sh` builds the tests in release, as CI does; alone:
//! `cargo test --release -p tickwheel --test soak`); a debug build would take an hour. In
//! release each implementation makes 1.9 × 10^8 calls in about 14 s.

use tickwheel::{
    FromOptions, HashedWheel, HierarchicalWheel, IndexedHeap, LazyHeap, Options, Tick, Timer,
    TimerKey,
};

const SECOND: Tick = 1_000;
const HOUR: Tick = 3_600 * SECOND;
const DAY: Tick = 24 * HOUR;
const DAYS: Tick = 30;
/// New timeouts per second at the quietest and the busiest hour of a day.
const NIGHT: f64 = 5.0;
const NOON: f64 = 60.0;
const SPIKE: u32 = 1_000_000;
const SPIKE_DAYS: [Tick; 3] = [6, 16, 26];

/// SplitMix64: small, fast and good enough to shape a workload.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next()) * u128::from(n)) >> 64) as u64
    }
}

/// What the test knows of one pending timer.
#[derive(Clone, Copy)]
struct Pending {
    key: TimerKey,
    deadline: Tick,
    /// Where it sits in `Book::live`.
    at: u32,
}

/// The test's record: every pending timer by payload (an index into `table`), and a list of
/// them for picking one at random.
#[derive(Default)]
struct Book {
    table: Vec<Option<Pending>>,
    free: Vec<u32>,
    live: Vec<u32>,
    inserted: u64,
    cancelled: u64,
    reset: u64,
    fired: u64,
    calls: u64,
}

impl Book {
    fn insert<X: Timer<u32>>(&mut self, t: &mut X, deadline: Tick) {
        let id = self.free.pop().unwrap_or_else(|| {
            self.table.push(None);
            (self.table.len() - 1) as u32
        });
        let key = t.insert(deadline, id).expect("unbounded");
        self.table[id as usize] = Some(Pending {
            key,
            deadline,
            at: self.live.len() as u32,
        });
        self.live.push(id);
        self.inserted += 1;
        self.calls += 1;
    }

    /// Forgets timer `id`, which has just left the timer.
    fn forget(&mut self, id: u32) -> Pending {
        let p = self.table[id as usize]
            .take()
            .unwrap_or_else(|| panic!("timer {id} left twice"));
        let last = self.live.pop().expect("live list holds it");
        if last != id {
            self.live[p.at as usize] = last;
            self.table[last as usize].as_mut().expect("live").at = p.at;
        }
        self.free.push(id);
        p
    }

    fn random_live(&self, rng: &mut Rng) -> Option<u32> {
        (!self.live.is_empty()).then(|| self.live[rng.below(self.live.len() as u64) as usize])
    }

    fn cancel<X: Timer<u32>>(&mut self, t: &mut X, id: u32) {
        let key = self.table[id as usize].expect("live").key;
        assert_eq!(
            t.cancel(key),
            Some(id),
            "{}: cancel of a pending timer",
            t.name()
        );
        self.forget(id);
        self.cancelled += 1;
        self.calls += 1;
    }

    fn reset<X: Timer<u32>>(&mut self, t: &mut X, id: u32, deadline: Tick) {
        let p = self.table[id as usize].as_mut().expect("live");
        t.reset(p.key, deadline).expect("reset of a pending timer");
        p.deadline = deadline;
        self.reset += 1;
        self.calls += 1;
    }

    fn poll<X: Timer<u32>>(&mut self, t: &mut X, now: Tick) {
        while let Some(e) = t.poll(now) {
            let p = self.forget(e.payload);
            assert!(e.deadline <= now, "{}: early fire", t.name());
            assert_eq!((e.key, e.deadline), (p.key, p.deadline), "{}", t.name());
            self.fired += 1;
            self.calls += 1;
        }
        self.calls += 1;
    }

    fn check_counts<X: Timer<u32>>(&self, t: &X) {
        let s = t.stats();
        let name = t.name();
        assert_eq!(t.len(), self.live.len(), "{name}: len");
        assert_eq!(s.inserted, self.inserted, "{name}: inserted");
        assert_eq!(s.cancelled, self.cancelled, "{name}: cancelled");
        assert_eq!(s.reset, self.reset, "{name}: reset");
        assert_eq!(s.fired, self.fired, "{name}: fired");
    }
}

/// New timeouts per second at `now`: fewest at midnight, most at noon.
fn diurnal(now: Tick) -> f64 {
    let phase = (now % DAY) as f64 / DAY as f64;
    let s = (core::f64::consts::PI * phase).sin();
    NIGHT + (NOON - NIGHT) * s * s
}

fn soak<X: Timer<u32> + FromOptions>() {
    let mut t = X::from_options(Options::new()).unwrap();
    let name = t.name();
    let mut rng = Rng(0x5EED);
    let mut book = Book::default();
    let mut now: Tick = 0;
    // Expected arrivals carried between seconds, so fractional rates add up.
    let mut due_arrivals = 0.0;
    // (tick the spike's aftermath is checked at, peak bytes)
    let mut spike_check: Option<(Tick, usize)> = None;
    while now < DAYS * DAY {
        now += SECOND;
        due_arrivals += diurnal(now);
        while due_arrivals >= 1.0 {
            due_arrivals -= 1.0;
            // A request timeout of 1-60 s.
            book.insert(&mut t, now + SECOND + rng.below(59 * SECOND));
            // Most responses arrive in time: cancel a pending timer; some connections are
            // active again: push one later.
            match rng.below(10) {
                0..=6 => {
                    if let Some(id) = book.random_live(&mut rng) {
                        book.cancel(&mut t, id);
                    }
                }
                7 | 8 => {
                    if let Some(id) = book.random_live(&mut rng) {
                        book.reset(&mut t, id, now + SECOND + rng.below(59 * SECOND));
                    }
                }
                _ => {}
            }
        }
        if SPIKE_DAYS.contains(&(now / DAY)) && now % DAY == 9 * HOUR {
            // A million connections arrive at once, each arming a 10-40 minute idle timeout;
            // nine in ten close within the hour (cancelled below as the load picks them).
            for _ in 0..SPIKE {
                book.insert(&mut t, now + 10 * 60 * SECOND + rng.below(30 * 60 * SECOND));
            }
            for _ in 0..SPIKE / 10 * 9 {
                let id = book.random_live(&mut rng).expect("the spike is pending");
                book.cancel(&mut t, id);
            }
            spike_check = Some((now + HOUR, t.allocated_bytes()));
        }
        book.poll(&mut t, now);
        if let Some((at, peak)) = spike_check {
            if now == at {
                book.check_counts(&t);
                t.shrink_to_fit();
                t.check_invariants();
                let after = t.allocated_bytes();
                let mut fresh = X::from_options(Options::new().start(now)).unwrap();
                for &id in &book.live {
                    fresh
                        .insert(book.table[id as usize].unwrap().deadline, id)
                        .unwrap();
                }
                let needed = fresh.allocated_bytes();
                assert!(
                    after * 10 < peak,
                    "{name} day {}: {after} B after the spike, {peak} B at its peak",
                    now / DAY
                );
                assert!(
                    after <= 2 * needed,
                    "{name} day {}: {after} B for {} timers, a fresh timer takes {needed} B",
                    now / DAY,
                    book.live.len()
                );
                spike_check = None;
            }
        }
    }
    book.check_counts(&t);
    book.poll(&mut t, Tick::MAX - 1);
    assert!(
        book.live.is_empty(),
        "{name}: {} timers never fired",
        book.live.len()
    );
    assert!(t.is_empty());
    book.check_counts(&t);
    assert!(
        book.calls >= 100_000_000,
        "{name}: only {} calls; the soak must make 10^8",
        book.calls
    );
    eprintln!(
        "{name}: {} calls over {DAYS} days: {} inserted, {} cancelled, {} reset, {} fired",
        book.calls, book.inserted, book.cancelled, book.reset, book.fired
    );
}

macro_rules! soak_tests {
    ($($name:ident: $ty:ty),* $(,)?) => {
        $(
            #[test]
            #[cfg_attr(debug_assertions, ignore = "release only: cargo test --release --test soak")]
            fn $name() {
                soak::<$ty>();
            }
        )*
    };
}

soak_tests! {
    hashed: HashedWheel<u32>,
    hierarchical: HierarchicalWheel<u32>,
    indexed_heap: IndexedHeap<u32>,
    lazy_heap: LazyHeap<u32>,
}
