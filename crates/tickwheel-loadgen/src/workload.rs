//! The seeded workload: an open-loop stream of requests over a server's connections.
//! The stream depends only on the [`Workload`] (seed included), never on the timer
//! under test, so every implementation sees the same events in the same order.
//!
//! - **Arrivals** form a Poisson process of `rate` requests per second (exponential gaps): open
//!   loop, so a slow server never slows the arrivals down.
//! - **Connections** are picked with a Zipf law (exponent 1): a few connections are busy and many
//!   are quiet, so quiet ones sit idle long enough for their idle timeout to fire.
//! - **Service times** are heavy-tailed: with probability `slow_fraction` a response is slower
//!   than the request timeout by at least one tick plus a Pareto-distributed excess (shape 1.5), so
//!   its timer fires; otherwise it is log-normal (median timeout/50, σ = 1) and faster than the
//!   timeout, so its timer is cancelled.
//! - **Initial idle deadlines** are spread uniformly over one idle timeout, as if each connection
//!   had last been active at some moment before the run started.
//!
//! The generator uses PCG-64 (`rand_pcg::Pcg64Mcg`), a fixed algorithm, so a seed means the same
//! sequence on every platform and version of this tool.

use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Exp, LogNormal, Pareto, Zipf};
use rand_pcg::Pcg64Mcg;

use crate::config::Workload;
use crate::units::nanos;

/// One request: when it arrives, on which connection, and how long its response takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Arrival {
    /// Nanoseconds since the start of the run; never decreases from one arrival to the next.
    pub(crate) at_ns: u64,
    /// The connection, in `0..connections`.
    pub(crate) conn: u32,
    /// Time from arrival to response, in nanoseconds; at least 1.
    pub(crate) service_ns: u64,
}

/// Produces the arrivals of one run, in time order, up to the end of the run.
pub(crate) struct Generator {
    rng: Pcg64Mcg,
    gap: Exp<f64>,
    conn: Zipf<f64>,
    fast: LogNormal<f64>,
    slow_excess: Pareto<f64>,
    slow_fraction: f64,
    timeout_ns: u64,
    tick_ns: u64,
    /// Time of the next arrival in nanoseconds, kept as `f64` so gaps below 1 ns accumulate.
    next_ns: f64,
    end_ns: u64,
}

impl Generator {
    /// A generator for `workload`, starting at time 0.
    pub(crate) fn new(workload: &Workload) -> Self {
        let timeout_ns = nanos(workload.request_timeout).max(1);
        let fast_median = (timeout_ns as f64 / 50.0).max(1.0);
        let mut rng = Pcg64Mcg::seed_from_u64(workload.seed);
        // Config validated rate > 0 and connections >= 1, so every distribution accepts its
        // parameters; a failure here is a bug in the validation.
        let gap = Exp::new(workload.rate / 1e9).expect("validated rate > 0");
        let first: f64 = gap.sample(&mut rng);
        Self {
            conn: Zipf::new(u64::from(workload.connections), 1.0).expect("validated connections"),
            fast: LogNormal::new(fast_median.ln(), 1.0).expect("finite median"),
            slow_excess: Pareto::new(1.0, 1.5).expect("constant parameters"),
            gap,
            rng,
            slow_fraction: workload.slow_fraction,
            timeout_ns,
            tick_ns: workload.tick_ns(),
            next_ns: first,
            end_ns: nanos(workload.duration),
        }
    }

    /// The next arrival, or `None` once the next one would fall after the end of the run.
    pub(crate) fn next_arrival(&mut self) -> Option<Arrival> {
        if self.next_ns > self.end_ns as f64 {
            return None;
        }
        let at_ns = self.next_ns as u64;
        self.next_ns += self.gap.sample(&mut self.rng);
        let conn = (self.conn.sample(&mut self.rng) as u64).saturating_sub(1) as u32;
        let service_ns = self.service_ns();
        Some(Arrival {
            at_ns,
            conn,
            service_ns,
        })
    }

    fn service_ns(&mut self) -> u64 {
        let timeout = self.timeout_ns as f64;
        if self.slow_fraction > 0.0 && self.rng.gen::<f64>() < self.slow_fraction {
            // Slower than the timeout by at least a tick, so the timer fires before it.
            let excess = (self.slow_excess.sample(&mut self.rng) - 1.0) * timeout;
            let ns = timeout + self.tick_ns as f64 + excess.min(1e15);
            return ns as u64;
        }
        for _ in 0..8 {
            let ns = self.fast.sample(&mut self.rng);
            if ns < timeout {
                return (ns as u64).max(1);
            }
        }
        (self.timeout_ns / 2).max(1)
    }

    /// How many arrivals, from `arrival` on, were intended within the run: those a loop that
    /// fell behind never handled.
    pub(crate) fn count_rest(&mut self, mut arrival: Option<Arrival>) -> u64 {
        let mut rest = 0;
        while arrival.is_some_and(|a| a.at_ns <= self.end_ns) {
            rest += 1;
            arrival = self.next_arrival();
        }
        rest
    }

    /// The deadline of each connection's first idle timer: uniform over one idle timeout (all
    /// at the timeout for a herd), in nanoseconds since the start. Drawn from a separate stream so it does not shift arrivals.
    pub(crate) fn initial_idle_deadlines(workload: &Workload) -> impl Iterator<Item = u64> {
        let mut rng = Pcg64Mcg::seed_from_u64(workload.seed ^ 0x1d1e_1d1e_1d1e_1d1e);
        let idle = nanos(workload.idle_timeout).max(1);
        let herd = workload.herd;
        (0..workload.connections).map(move |_| if herd { idle } else { rng.gen_range(1..=idle) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    pub(crate) fn small() -> Workload {
        Workload {
            connections: 1_000,
            rate: 50_000.0,
            duration: Duration::from_secs(2),
            idle_timeout: Duration::from_millis(500),
            request_timeout: Duration::from_millis(50),
            slow_fraction: 0.05,
            tick: Duration::from_millis(1),
            seed: 7,
            handler_cost: Duration::ZERO,
            herd: false,
        }
    }

    #[test]
    fn same_seed_same_stream_and_arrivals_in_order() {
        let w = small();
        let a: Vec<_> = std::iter::from_fn({
            let mut g = Generator::new(&w);
            move || g.next_arrival()
        })
        .collect();
        let b: Vec<_> = std::iter::from_fn({
            let mut g = Generator::new(&w);
            move || g.next_arrival()
        })
        .collect();
        assert_eq!(a, b);
        assert!(a.windows(2).all(|p| p[0].at_ns <= p[1].at_ns));
        assert!(a
            .iter()
            .all(|x| x.conn < w.connections && x.at_ns <= 2_000_000_000));
        // Poisson count: 100k expected, well within 2 %.
        assert!((98_000..102_000).contains(&a.len()), "{}", a.len());
        let slow = a.iter().filter(|x| x.service_ns > 50_000_000).count() as f64;
        let share = slow / a.len() as f64;
        assert!((0.045..0.055).contains(&share), "slow share {share}");
        assert!(a
            .iter()
            .filter(|x| x.service_ns > 50_000_000)
            .all(|x| x.service_ns >= 51_000_000));
        let mut other = w.clone();
        other.seed = 8;
        let c = Generator::new(&other).next_arrival();
        assert_ne!(Some(a[0]), c);
    }

    #[test]
    fn slow_fraction_extremes() {
        let mut w = small();
        w.slow_fraction = 0.0;
        let mut g = Generator::new(&w);
        while let Some(a) = g.next_arrival() {
            assert!(a.service_ns < 50_000_000);
        }
        w.slow_fraction = 1.0;
        let mut g = Generator::new(&w);
        while let Some(a) = g.next_arrival() {
            assert!(a.service_ns > 50_000_000);
        }
    }
}
