//! A thread-per-connection line echo server whose timeouts live in a shared `TimerService`.
//!
//! The other way to embed tickwheel: blocking I/O on many threads, one service for all of
//! them. Each connection thread
//! - schedules an **idle timeout** at accept and resets it on every read (`reset_after`);
//! - schedules a **request timeout** when a request line starts, and cancels it when the line
//!   is complete (the common case: most request timeouts never fire);
//! - on exit cancels whatever is still pending, so nothing leaks.
//!
//! A timer that fires runs the service's callback on the driver thread, which shuts the socket
//! down; the connection thread's blocking `read` then returns and the thread ends. Cancel and
//! fire race here (a line completes just as its timeout fires): the service guarantees exactly
//! one winner, and `cancel` answering `NotPending` tells the thread it lost.
//!
//! Shared by `examples/threaded_server/main.rs` and `tests/threaded_server.rs`.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use tickwheel::trace::Recorder;
use tickwheel::{FromOptions, HierarchicalWheel, Timer};
use tickwheel_service::{
    Builder, Delivery, Fired, KeyError, ServiceKey, ServiceStats, TimerHandle, TimerService,
};

/// Each shard's timer: a hierarchical wheel, or one under a trace `Recorder`.
type Shard = Box<dyn Timer<Timeout> + Send>;

/// The service's tick.
const TICK: Duration = Duration::from_millis(1);

/// Server settings.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Config {
    /// A connection with no bytes received for this long is closed.
    pub(crate) idle_timeout: Duration,
    /// A request line must be complete this long after its first byte.
    pub(crate) request_timeout: Duration,
}

/// Why a timer fired.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reason {
    Idle,
    Request,
}

/// The timer payload: the connection to close and why. The `Arc` shares the socket with its
/// connection thread without duplicating the descriptor.
struct Timeout {
    stream: Arc<TcpStream>,
    reason: Reason,
}

/// Counters, updated by the connection threads and the timer callback.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) accepted: AtomicU64,
    pub(crate) closed_idle: AtomicU64,
    pub(crate) closed_request: AtomicU64,
    pub(crate) closed_by_peer: AtomicU64,
    /// Lines completed just as their request timeout fired (the timer won the race).
    pub(crate) lost_races: AtomicU64,
    pub(crate) open: AtomicUsize,
}

/// What the server did, returned by [`Server::stop`].
#[derive(Debug)]
pub(crate) struct Report {
    pub(crate) accepted: u64,
    pub(crate) closed_idle: u64,
    pub(crate) closed_request: u64,
    pub(crate) closed_by_peer: u64,
    pub(crate) lost_races: u64,
    /// Connections open and timers pending when `stop` was called.
    pub(crate) open_at_stop: usize,
    pub(crate) timers_at_stop: usize,
    /// Timers handed back by the service's shutdown (0 when nothing leaked).
    pub(crate) unfired_at_shutdown: usize,
    pub(crate) service: ServiceStats,
}

/// A running server.
pub(crate) struct Server {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    counters: Arc<Counters>,
    service: TimerService<Timeout, Shard>,
    acceptor: JoinHandle<()>,
    workers: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl Server {
    /// Binds 127.0.0.1 on an ephemeral port, starts the service and the accept thread.
    pub(crate) fn start(config: Config) -> io::Result<Self> {
        Self::start_recording(config, None)
    }

    /// [`start`](Self::start), with every timer call written to the trace file `record`
    /// (one shard then, so one trace): the shard's wheel sits under a `Recorder`, and the
    /// trace ends when the service drops it after shutdown.
    pub(crate) fn start_recording(
        config: Config,
        record: Option<&std::path::Path>,
    ) -> io::Result<Self> {
        let mut trace = record.map(std::fs::File::create).transpose()?;
        let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))?;
        let addr = listener.local_addr()?;
        let counters = Arc::new(Counters::default());
        let c = counters.clone();
        // The callback runs on the driver thread with no lock held; it only shuts the socket
        // down, so it is quick and never blocks the timers behind it.
        let delivery = Delivery::callback(move |fired: Fired<Timeout>| {
            let t = fired.payload;
            let counter = match t.reason {
                Reason::Idle => &c.closed_idle,
                Reason::Request => &c.closed_request,
            };
            counter.fetch_add(1, Ordering::Relaxed);
            let _ = t.stream.shutdown(Shutdown::Both);
        });
        let mut builder = Builder::new()
            .thread_name("server-timeouts")
            .resolution(TICK);
        if trace.is_some() {
            builder = builder.shards(1);
        }
        let service = builder
            .build_with(delivery, |options| {
                let wheel = HierarchicalWheel::from_options(options)?;
                Ok(match trace.take() {
                    Some(file) => Box::new(Recorder::new(wheel, file, TICK)) as Shard,
                    None => Box::new(wheel) as Shard,
                })
            })
            .map_err(io::Error::other)?;
        let stop = Arc::new(AtomicBool::new(false));
        let workers = Arc::new(Mutex::new(Vec::new()));
        let acceptor = {
            let (stop, counters, workers) = (stop.clone(), counters.clone(), workers.clone());
            let timers = service.handle();
            std::thread::Builder::new()
                .name("acceptor".into())
                .spawn(move || {
                    accept_loop(&listener, &stop, &counters, &workers, &timers, config)
                })?
        };
        Ok(Self {
            addr,
            stop,
            counters,
            service,
            acceptor,
            workers,
        })
    }

    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub(crate) fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Timers pending in the service now.
    pub(crate) fn pending_timers(&self) -> usize {
        self.service.pending()
    }

    /// Stops accepting, shuts the service down (which closes nothing by itself: pending
    /// timeouts come back), closes what is still open, joins every thread.
    pub(crate) fn stop(self) -> io::Result<Report> {
        let open_at_stop = self.counters.open.load(Ordering::Relaxed);
        let timers_at_stop = self.service.pending();
        self.stop.store(true, Ordering::Release);
        // Wake the blocking accept with one last connection.
        let _ = TcpStream::connect(self.addr);
        let _ = self.acceptor.join();
        let service = self.service.stats();
        let unfired = self.service.shutdown();
        let unfired_at_shutdown = unfired.len();
        for t in unfired {
            let _ = t.payload.stream.shutdown(Shutdown::Both);
        }
        let workers = std::mem::take(&mut *self.workers.lock().expect("not poisoned"));
        for w in workers {
            let _ = w.join();
        }
        let c = &self.counters;
        Ok(Report {
            accepted: c.accepted.load(Ordering::Relaxed),
            closed_idle: c.closed_idle.load(Ordering::Relaxed),
            closed_request: c.closed_request.load(Ordering::Relaxed),
            closed_by_peer: c.closed_by_peer.load(Ordering::Relaxed),
            lost_races: c.lost_races.load(Ordering::Relaxed),
            open_at_stop,
            timers_at_stop,
            unfired_at_shutdown,
            service,
        })
    }
}

fn accept_loop(
    listener: &TcpListener,
    stop: &AtomicBool,
    counters: &Arc<Counters>,
    workers: &Mutex<Vec<JoinHandle<()>>>,
    timers: &TimerHandle<Timeout, Shard>,
    config: Config,
) {
    for stream in listener.incoming() {
        if stop.load(Ordering::Acquire) {
            break;
        }
        let Ok(stream) = stream else { continue };
        counters.accepted.fetch_add(1, Ordering::Relaxed);
        counters.open.fetch_add(1, Ordering::Relaxed);
        let (mine, timers) = (counters.clone(), timers.clone());
        // Small stacks: a thousand idle connections are a thousand mostly-sleeping threads.
        let spawned = std::thread::Builder::new()
            .stack_size(64 * 1024)
            .spawn(move || {
                connection(Arc::new(stream), &timers, &mine, config);
                mine.open.fetch_sub(1, Ordering::Relaxed);
            });
        match spawned {
            Ok(handle) => {
                let mut workers = workers.lock().expect("not poisoned");
                workers.retain(|w| !w.is_finished());
                workers.push(handle);
            }
            // Out of threads: the stream was dropped (closed) with the closure.
            Err(_) => {
                counters.open.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }
}

/// Serves one connection: echo each complete line, under an idle and a request timeout.
fn connection(
    stream: Arc<TcpStream>,
    timers: &TimerHandle<Timeout, Shard>,
    counters: &Counters,
    config: Config,
) {
    let timeout = |reason| Timeout {
        stream: stream.clone(),
        reason,
    };
    let Ok(idle) = timers.schedule_after(config.idle_timeout, timeout(Reason::Idle)) else {
        return; // at capacity or shutting down: refuse the connection
    };
    let mut request: Option<ServiceKey> = None;
    let mut line = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = match (&*stream).read(&mut buf) {
            Ok(0) | Err(_) => {
                // The peer closed, or a timeout shut the socket down.
                break;
            }
            Ok(n) => n,
        };
        // Activity: push the idle deadline out. If the idle timer already fired, the callback
        // is closing this connection: stop here.
        if timers.reset_after(idle, config.idle_timeout).is_err() {
            break;
        }
        for &b in &buf[..n] {
            line.push(b);
            if b != b'\n' {
                continue;
            }
            // A complete request: its timeout must not fire any more.
            if let Some(key) = request.take() {
                if matches!(timers.cancel(key), Err(KeyError::NotPending)) {
                    counters.lost_races.fetch_add(1, Ordering::Relaxed);
                    return finish(idle, None, timers);
                }
            }
            if (&*stream).write_all(&line).is_err() {
                return finish(idle, None, timers);
            }
            line.clear();
        }
        if !line.is_empty() && request.is_none() {
            // A request has started: it must complete within the request timeout.
            match timers.schedule_after(config.request_timeout, timeout(Reason::Request)) {
                Ok(key) => request = Some(key),
                Err(_) => break,
            }
        }
    }
    // Distinguish a peer close from a timeout close for the counters: a timeout that fired is
    // no longer pending.
    let idle_pending = timers.deadline(idle).is_some();
    let request_pending = request.map_or(true, |k| timers.deadline(k).is_some());
    if idle_pending && request_pending {
        counters.closed_by_peer.fetch_add(1, Ordering::Relaxed);
    }
    finish(idle, request, timers);
}

/// Cancels the connection's timers that are still pending, so none outlives it.
fn finish(idle: ServiceKey, request: Option<ServiceKey>, timers: &TimerHandle<Timeout, Shard>) {
    let _ = timers.cancel(idle);
    if let Some(key) = request {
        let _ = timers.cancel(key);
    }
}
