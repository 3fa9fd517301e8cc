//! Memory after a burst: a million timers inserted and all cancelled, then a quiet hour that
//! keeps up to a thousand timers pending (each fired and replaced), then one
//! `shrink_to_fit()`. Prints `allocated_bytes()`
//! at the peak, after the quiet hour, and after the shrink, for every implementation.
//!
//! ```sh
//! cargo run --release -p tickwheel --example burst
//! ```

use tickwheel::{Kind, Options, Timer};

const BURST: u64 = 1_000_000;
const TRICKLE: usize = 1_000;

fn main() {
    println!(
        "| implementation | peak (1M pending) | after the quiet hour | after `shrink_to_fit()` | of peak | pending |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    for kind in Kind::ALL {
        let mut t = kind
            .build::<u64>(Options::new())
            .expect("default options are valid");
        let burst: Vec<_> = (0..BURST)
            .map(|i| t.insert(1_000 + i % 60_000, i).expect("unbounded"))
            .collect();
        let peak = t.allocated_bytes();
        for key in burst {
            t.cancel(key).expect("pending");
        }
        // The quiet hour: a thousand live timers, each fired and replaced in turn.
        let mut next = BURST;
        let mut now = 0;
        while now < 3_600_000 {
            while t.len() < TRICKLE {
                t.insert(now + 1 + next * 7_919 % 5_000, next)
                    .expect("unbounded");
                next += 1;
            }
            now += 1_000;
            while t.poll(now).is_some() {}
        }
        let quiet = t.allocated_bytes();
        let live = t.len();
        t.shrink_to_fit();
        let after = t.allocated_bytes();
        println!(
            "| {} | {:.1} MB | {:.1} MB | {:.1} kB | {:.2} % | {live} |",
            t.name(),
            peak as f64 / 1e6,
            quiet as f64 / 1e6,
            after as f64 / 1e3,
            100.0 * after as f64 / peak as f64
        );
    }
}
