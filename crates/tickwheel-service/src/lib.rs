//! A thread-safe timer service on top of [`tickwheel`]: schedule, cancel and reset timeouts from
//! any thread; one driver thread sleeps until the next deadline and delivers expired timers on a
//! channel or to a callback.
//!
//! Built for network servers with many threads: most timeouts are cancelled or pushed later
//! before they fire, so those paths are one short lock on one shard and, unless the deadline is
//! a new earliest one, no syscall.
//!
//! # Design
//! - **Shards.** Timers live in `shards` independent `parking_lot::Mutex<Timer>`s (default: one
//!   per core) so producers on different cores do not queue on one lock (tokio's single timer
//!   mutex, and its sharding that was merged then reverted, are the cautionary tale). A thread
//!   schedules into its own preferred shard, so one thread's timers keep FIFO order; cancel and
//!   reset go to the shard named in the [`ServiceKey`].
//! - **One driver, asleep when idle.** The driver locks each shard briefly, polls at most
//!   [`BATCH`] expired timers out, unlocks, then delivers with no lock held. It then parks until
//!   the earliest deadline over all shards: an idle service uses no CPU (no periodic tick, unlike
//!   Netty's 1 ms `HashedWheelTimer`). It publishes the tick it sleeps until in an atomic; a
//!   schedule or reset only unparks it when it brings that deadline earlier, so no wake-up is lost
//!   and ordinary schedules pay no syscall. A thread that makes timers anyway may take what a
//!   late driver has not taken yet with [`TimerHandle::take_due`] and deliver it itself, so
//!   timers due together need not wait for the driver thread to get a core.
//! - **Cancel racing fire has exactly one winner.** A timer the driver polled out of its shard
//!   (under the lock) is delivered; `cancel` succeeds only if it removes the timer from the shard
//!   itself, and then returns the payload, which is never delivered.
//! - **Faults stay contained.** A panicking callback is caught and counted; later timers still
//!   fire. A slow callback makes later timers late, never lost (the lateness histogram shows it).
//!   At capacity a schedule fails with the payload. A panic inside a shard's timer fails that
//!   shard alone (`Failed` errors for its keys; schedules go to the others). `shutdown` hands back every unfired payload,
//!   and every later call fails with a permanent `Shutdown` error; dropping the service shuts it
//!   down and joins the driver.
//! - **Deterministic core.** The driver's step is [`ManualDriver::turn`]`(now)`: the same code the
//!   thread runs, with the clock in the caller's hands and no threads, for tests and simulations.
//!
//! Time: deadlines round **up** to the tick resolution (default 1 ms) and the driver's `now`
//! rounds **down** (see [`tickwheel::TickClock`]), so a timer never fires before its `Instant`.
//!
//! # Example
//! ```
//! use std::time::Duration;
//! use tickwheel_service::{Builder, Delivery, KeyError};
//!
//! let (delivery, fired) = Delivery::channel();
//! let service = Builder::new().shards(2).build(delivery).unwrap();
//! let handle = service.handle(); // Clone + Send + Sync
//!
//! let request = handle.schedule_after(Duration::from_secs(5), "request 1 timed out").unwrap();
//! let idle = handle.schedule_after(Duration::from_millis(10), "connection idle").unwrap();
//! assert_eq!(handle.cancel(request), Ok("request 1 timed out")); // response came in time
//!
//! let f = fired.recv().unwrap();
//! assert_eq!((f.key, f.payload), (idle, "connection idle"));
//! assert_eq!(handle.cancel(idle), Err(KeyError::NotPending)); // it fired: the timer won
//! assert!(service.shutdown().is_empty());
//! ```
//!
//! # Public API in brief
//! | item | what |
//! |---|---|
//! | [`Builder`] | resolution, shards, capacity, preallocate; `build(delivery)`, `build_with(delivery, factory)`, `build_manual*` |
//! | [`Delivery`] | `Delivery::channel()` → (delivery, `Receiver<Fired<T>>`), or `Delivery::callback(f)` |
//! | [`TimerService`] | owns the driver; derefs to a [`TimerHandle`]; `shutdown()` → `Vec<Unfired<T>>` |
//! | [`TimerHandle`] | `schedule_at/after/at_tick`, `cancel`, `reset_at/after/at_tick`, `deadline`, `pending`, `stats`, `take_due` |
//! | [`ManualDriver`] | the driver's step without a thread: `turn(now)`, `run_due(now)`, `arm(now)`, `woken()` |
//! | [`ServiceStats`] | pending, scheduled, cancelled, reset, fired, drained, panicked, timer panics, failed shards, allocated bytes, rejected, undelivered, wake-ups, empty wake-ups, turns, shards, lateness histogram |
//! | errors | [`ScheduleError`] (`Full(T)`, `Shutdown(T)`, `Failed(T)`), [`KeyError`] (`NotPending`, `Shutdown`, `Failed`), [`BuildError`] |

mod builder;
mod delivery;
mod driver;
mod error;
mod key;
mod service;
mod shared;
mod stats;

pub use builder::{Builder, MAX_SHARDS};
pub use delivery::{Callback, Delivery, Fired, Unfired};
pub use driver::{ManualDriver, Turn};
pub use error::{BuildError, KeyError, ScheduleError};
pub use key::ServiceKey;
pub use service::{TimerHandle, TimerService};
pub use shared::BATCH;
pub use stats::{ServiceStats, LATENESS_MAX_US};

/// Re-exported so users name the same versions the service uses.
pub use crossbeam_channel;
pub use hdrhistogram;
pub use tickwheel;
