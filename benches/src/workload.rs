//! The workloads: what each benchmark does, over any [`Adapter`].
//!
//! | workload | shape | one element is |
//! |---|---|---|
//! | `insert` | insert N timers, deadlines uniform in [1 ms, 60 s], into an empty structure | one insert |
//! | `insert_cancel` | insert N, then cancel all N in random order | one insert or one cancel |
//! | `churn_random` | N live; cancel a uniformly random live timer, insert a new one (time stands still) | one cancel or one insert |
//! | `churn_io` | N live: N − 256 connection idle timeouts (30 s) and 256 request deadlines (5 s); each step inserts a request deadline, cancels the one inserted 256 steps earlier (its response arrived) and pushes a random connection's idle timeout to now + 30 s by reset; the clock moves 1 ms every max(N/1000, 10) steps and is polled (idle timers that fire are re-armed) | one insert, cancel or reset |
//! | `reset_later` | N live idle timeouts; each step resets a random one to now + 30 s (keep-alive refresh); clock and polling as in `churn_io` | one reset |
//! | `expire` | N timers uniform over [1 ms, 10 s]; poll in 1 ms steps until all fired | one fired timer |
//! | `poll_idle` | N timers due in [60 s, 120 s]; `poll(now)` then `next_deadline()` at a `now` with nothing due (`DelayQueue`: `poll_expired` only, see [`Adapter::idle_turn`]) | one poll + next_deadline (an event-loop turn) |
//!
//! All use fixed seeds, so every adapter sees the same deadlines and the same victims. The first
//! two and `expire` start from a fresh structure each iteration (built outside the timed
//! region); the others keep one structure at N live timers across iterations (steady state).

use std::collections::VecDeque;
use std::hint::black_box;
use std::time::{Duration, Instant};

use crate::{Adapter, Rng};

/// Live-timer counts every workload runs at.
pub const SIZES: [usize; 3] = [10_000, 100_000, 1_000_000];

/// The seed every workload starts from.
pub const SEED: u64 = 0x7117_c0de;

/// Ticks per second (a tick is 1 ms).
const SECOND: u64 = 1_000;
/// Latest deadline of `insert`, `insert_cancel` and `churn_random`.
const HORIZON: u64 = 60 * SECOND;
/// Request deadline in `churn_io`.
const REQUEST: u64 = 5 * SECOND;
/// Idle timeout in `churn_io` and `reset_later`.
const IDLE: u64 = 30 * SECOND;
/// Requests in flight in `churn_io`: a response arrives this many steps after its request.
const IN_FLIGHT: usize = 256;
/// Payload of a request deadline (idle timers carry their connection index).
const REQUEST_TAG: u64 = u64::MAX;
/// Span of `expire`'s deadlines.
const EXPIRE_SPAN: u64 = 10 * SECOND;

/// One of the seven workloads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// Insert N into an empty structure.
    Insert,
    /// Insert N, cancel all in random order.
    InsertCancel,
    /// Cancel a random live timer and insert a new one.
    ChurnRandom,
    /// The I/O-timeout shape: request deadlines cancelled soon, idle timeouts pushed later.
    ChurnIo,
    /// Reset a random live timer later.
    ResetLater,
    /// Fire N timers in 1 ms steps.
    Expire,
    /// Poll and ask the next deadline with nothing due.
    PollIdle,
}

impl Workload {
    /// Every workload, in report order.
    pub const ALL: [Workload; 7] = [
        Workload::Insert,
        Workload::InsertCancel,
        Workload::ChurnRandom,
        Workload::ChurnIo,
        Workload::ResetLater,
        Workload::Expire,
        Workload::PollIdle,
    ];

    /// The name in reports and benchmark ids.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Workload::Insert => "insert",
            Workload::InsertCancel => "insert_cancel",
            Workload::ChurnRandom => "churn_random",
            Workload::ChurnIo => "churn_io",
            Workload::ResetLater => "reset_later",
            Workload::Expire => "expire",
            Workload::PollIdle => "poll_idle",
        }
    }

    /// Elements (operations) in one benchmark iteration at size `n`.
    #[must_use]
    pub const fn elements(self, n: usize) -> u64 {
        match self {
            Workload::Insert | Workload::Expire => n as u64,
            Workload::InsertCancel => 2 * n as u64,
            Workload::ChurnRandom => 2,
            Workload::ChurnIo => 3,
            Workload::ResetLater | Workload::PollIdle => 1,
        }
    }

    /// `true` when each iteration builds a fresh structure (and is long: N operations).
    #[must_use]
    pub const fn is_fresh(self) -> bool {
        matches!(
            self,
            Workload::Insert | Workload::InsertCancel | Workload::Expire
        )
    }
}

/// `n` deadlines uniform in `lo..=hi`, from `seed`.
#[must_use]
pub fn deadlines(n: usize, lo: u64, hi: u64, seed: u64) -> Vec<u64> {
    let mut rng = Rng::new(seed);
    (0..n).map(|_| rng.range(lo, hi)).collect()
}

/// The deadlines `insert` uses (also the memory probe's).
#[must_use]
pub fn insert_deadlines(n: usize) -> Vec<u64> {
    deadlines(n, 1, HORIZON, SEED)
}

/// One workload at one size, ready to time any number of iterations.
#[derive(Debug)]
pub enum Runner<A: Adapter> {
    /// [`Workload::Insert`].
    Insert(Vec<u64>),
    /// [`Workload::InsertCancel`]: deadlines and cancel order.
    InsertCancel(Vec<u64>, Vec<usize>),
    /// [`Workload::Expire`].
    Expire(Vec<u64>),
    /// [`Workload::ChurnRandom`].
    ChurnRandom(ChurnRandom<A>),
    /// [`Workload::ChurnIo`].
    ChurnIo(ChurnIo<A>),
    /// [`Workload::ResetLater`].
    ResetLater(ResetLater<A>),
    /// [`Workload::PollIdle`].
    PollIdle(PollIdle<A>),
}

impl<A: Adapter> Runner<A> {
    /// Prepares `workload` at `n` live timers (steady-state ones fill their structure here).
    #[must_use]
    pub fn new(workload: Workload, n: usize) -> Self {
        match workload {
            Workload::Insert => Runner::Insert(insert_deadlines(n)),
            Workload::InsertCancel => {
                Runner::InsertCancel(insert_deadlines(n), Rng::new(SEED + 1).permutation(n))
            }
            Workload::Expire => Runner::Expire(deadlines(n, 1, EXPIRE_SPAN, SEED + 2)),
            Workload::ChurnRandom => Runner::ChurnRandom(ChurnRandom::new(n)),
            Workload::ChurnIo => Runner::ChurnIo(ChurnIo::new(n)),
            Workload::ResetLater => Runner::ResetLater(ResetLater::new(n)),
            Workload::PollIdle => Runner::PollIdle(PollIdle::new(n)),
        }
    }

    /// Runs `iters` iterations and returns the time spent in the timed regions only.
    pub fn run(&mut self, iters: u64) -> Duration {
        match self {
            Runner::Insert(d) => (0..iters).map(|_| time_insert::<A>(d)).sum(),
            Runner::InsertCancel(d, order) => {
                (0..iters).map(|_| time_insert_cancel::<A>(d, order)).sum()
            }
            Runner::Expire(d) => (0..iters).map(|_| time_expire::<A>(d)).sum(),
            Runner::ChurnRandom(w) => w.run(iters),
            Runner::ChurnIo(w) => w.run(iters),
            Runner::ResetLater(w) => w.run(iters),
            Runner::PollIdle(w) => w.run(iters),
        }
    }
}

/// Inserts `deadlines` into a fresh structure; times the inserts only.
fn time_insert<A: Adapter>(deadlines: &[u64]) -> Duration {
    let mut a = A::with_capacity(deadlines.len());
    let elapsed = a.scope(|a| {
        let start = Instant::now();
        for (i, &d) in deadlines.iter().enumerate() {
            black_box(a.insert(d, i as u64));
        }
        start.elapsed()
    });
    assert_eq!(a.len(), deadlines.len());
    drop(black_box(a));
    elapsed
}

/// Inserts `deadlines`, then cancels them in `order`; times both.
fn time_insert_cancel<A: Adapter>(deadlines: &[u64], order: &[usize]) -> Duration {
    let mut a = A::with_capacity(deadlines.len());
    let mut keys = Vec::with_capacity(deadlines.len());
    let elapsed = a.scope(|a| {
        let start = Instant::now();
        for (i, &d) in deadlines.iter().enumerate() {
            keys.push(a.insert(d, i as u64));
        }
        for &i in order {
            black_box(a.cancel(keys[i]));
        }
        start.elapsed()
    });
    assert!(a.is_empty());
    drop(black_box(a));
    elapsed
}

/// Fills a fresh structure (untimed), then polls in 1 ms steps until all fired (timed).
fn time_expire<A: Adapter>(deadlines: &[u64]) -> Duration {
    let mut a = A::with_capacity(deadlines.len());
    let (elapsed, fired) = a.scope(|a| {
        for (i, &d) in deadlines.iter().enumerate() {
            a.insert(d, i as u64);
        }
        let mut fired = 0usize;
        let start = Instant::now();
        for now in 1..=EXPIRE_SPAN {
            while let Some(p) = a.poll(now) {
                black_box(p);
                fired += 1;
            }
        }
        (start.elapsed(), fired)
    });
    assert_eq!(fired, deadlines.len(), "{}: not every timer fired", A::NAME);
    drop(black_box(a));
    elapsed
}

/// `churn_random`: N live; each step cancels a random one and inserts a new one.
#[derive(Debug)]
pub struct ChurnRandom<A: Adapter> {
    a: A,
    keys: Vec<A::Key>,
    rng: Rng,
}

impl<A: Adapter> ChurnRandom<A> {
    /// Fills the structure with `n` timers.
    #[must_use]
    pub fn new(n: usize) -> Self {
        let mut a = A::with_capacity(n);
        let keys = a.scope(|a| {
            insert_deadlines(n)
                .iter()
                .enumerate()
                .map(|(i, &d)| a.insert(d, i as u64))
                .collect()
        });
        Self {
            a,
            keys,
            rng: Rng::new(SEED + 3),
        }
    }

    /// Runs `iters` steps (2 operations each).
    pub fn run(&mut self, iters: u64) -> Duration {
        let Self { a, keys, rng } = self;
        let n = keys.len() as u64;
        a.scope(|a| {
            let start = Instant::now();
            for _ in 0..iters {
                let i = rng.below(n) as usize;
                a.cancel(keys[i]);
                keys[i] = a.insert(rng.range(1, HORIZON), i as u64);
            }
            start.elapsed()
        })
    }

    /// The structure, for checks.
    pub fn adapter(&mut self) -> &mut A {
        &mut self.a
    }
}

/// The event-loop clock of `churn_io` and `reset_later`: 1 ms passes every `every` steps.
#[derive(Debug)]
struct Clock {
    now: u64,
    every: u64,
    left: u64,
}

impl Clock {
    fn new(n: usize) -> Self {
        let every = (n as u64 / 1_000).max(10);
        Self {
            now: 0,
            every,
            left: every,
        }
    }

    /// Counts a step; `true` when the clock moved and the loop should poll.
    #[inline]
    fn step(&mut self) -> bool {
        self.left -= 1;
        if self.left == 0 {
            self.left = self.every;
            self.now += 1;
            true
        } else {
            false
        }
    }
}

/// Polls everything due at `now`; idle timers that fire are re-armed (a new connection).
#[inline]
fn poll_and_rearm<A: Adapter>(a: &mut A, conns: &mut [A::Key], now: u64) {
    while let Some(p) = a.poll(now) {
        if p != REQUEST_TAG {
            conns[p as usize] = a.insert(now + IDLE, p);
        }
    }
}

/// Fills `a` with `n` idle timeouts due uniformly within the next 30 s.
fn fill_idle<A: Adapter>(a: &mut A, n: usize, seed: u64) -> Vec<A::Key> {
    deadlines(n, 1, IDLE, seed)
        .iter()
        .enumerate()
        .map(|(i, &d)| a.insert(d, i as u64))
        .collect()
}

/// `churn_io`: the I/O-timeout shape (see the module table).
#[derive(Debug)]
pub struct ChurnIo<A: Adapter> {
    a: A,
    conns: Vec<A::Key>,
    requests: VecDeque<A::Key>,
    rng: Rng,
    clock: Clock,
}

impl<A: Adapter> ChurnIo<A> {
    /// `n - 256` idle timeouts and 256 requests in flight.
    ///
    /// # Panics
    /// When `n <= 256`.
    #[must_use]
    pub fn new(n: usize) -> Self {
        assert!(n > IN_FLIGHT);
        let mut a = A::with_capacity(n + IN_FLIGHT);
        let (conns, requests) = a.scope(|a| {
            let conns = fill_idle(a, n - IN_FLIGHT, SEED + 4);
            let requests = (0..IN_FLIGHT)
                .map(|_| a.insert(REQUEST, REQUEST_TAG))
                .collect();
            (conns, requests)
        });
        Self {
            a,
            conns,
            requests,
            rng: Rng::new(SEED + 5),
            clock: Clock::new(n),
        }
    }

    /// Runs `iters` steps (3 operations each, plus the polls when the clock moves).
    pub fn run(&mut self, iters: u64) -> Duration {
        let Self {
            a,
            conns,
            requests,
            rng,
            clock,
        } = self;
        let n = conns.len() as u64;
        a.scope(|a| {
            let start = Instant::now();
            for _ in 0..iters {
                let now = clock.now;
                requests.push_back(a.insert(now + REQUEST, REQUEST_TAG));
                if let Some(answered) = requests.pop_front() {
                    a.cancel(answered);
                }
                let c = rng.below(n) as usize;
                conns[c] = a.reset(conns[c], now + IDLE, c as u64);
                if clock.step() {
                    poll_and_rearm(a, conns, clock.now);
                }
            }
            start.elapsed()
        })
    }

    /// The structure, for checks.
    pub fn adapter(&mut self) -> &mut A {
        &mut self.a
    }
}

/// `reset_later`: keep-alive refresh of random live timers.
#[derive(Debug)]
pub struct ResetLater<A: Adapter> {
    a: A,
    conns: Vec<A::Key>,
    rng: Rng,
    clock: Clock,
}

impl<A: Adapter> ResetLater<A> {
    /// `n` idle timeouts.
    #[must_use]
    pub fn new(n: usize) -> Self {
        let mut a = A::with_capacity(n);
        let conns = a.scope(|a| fill_idle(a, n, SEED + 6));
        Self {
            a,
            conns,
            rng: Rng::new(SEED + 7),
            clock: Clock::new(n),
        }
    }

    /// Runs `iters` resets (plus the polls when the clock moves).
    pub fn run(&mut self, iters: u64) -> Duration {
        let Self {
            a,
            conns,
            rng,
            clock,
        } = self;
        let n = conns.len() as u64;
        a.scope(|a| {
            let start = Instant::now();
            for _ in 0..iters {
                let c = rng.below(n) as usize;
                conns[c] = a.reset(conns[c], clock.now + IDLE, c as u64);
                if clock.step() {
                    poll_and_rearm(a, conns, clock.now);
                }
            }
            start.elapsed()
        })
    }

    /// The structure, for checks.
    pub fn adapter(&mut self) -> &mut A {
        &mut self.a
    }
}

/// `poll_idle`: an event-loop turn with nothing due.
#[derive(Debug)]
pub struct PollIdle<A: Adapter> {
    a: A,
}

impl<A: Adapter> PollIdle<A> {
    /// `n` timers due in [60 s, 120 s].
    #[must_use]
    pub fn new(n: usize) -> Self {
        let mut a = A::with_capacity(n);
        a.scope(|a| {
            for (i, &d) in deadlines(n, HORIZON, 2 * HORIZON, SEED + 8)
                .iter()
                .enumerate()
            {
                a.insert(d, i as u64);
            }
        });
        Self { a }
    }

    /// Runs `iters` turns of [`Adapter::idle_turn`] (`poll(0)` + `next_deadline()`).
    pub fn run(&mut self, iters: u64) -> Duration {
        self.a.scope(|a| {
            let start = Instant::now();
            for _ in 0..iters {
                black_box(a.idle_turn(black_box(0)));
            }
            start.elapsed()
        })
    }

    /// The structure, for checks.
    pub fn adapter(&mut self) -> &mut A {
        &mut self.a
    }
}
