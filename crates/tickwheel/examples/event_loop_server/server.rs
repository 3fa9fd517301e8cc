//! An echo server on one thread: a mio event loop that owns a `HierarchicalWheel` directly.
//!
//! This is the standard way an event loop embeds a timer, with no service and no locks:
//! - each connection has one idle-timeout timer, **reset on every read**;
//! - the loop's poll timeout is `next_deadline()` converted to a `Duration` (and `None`, block
//!   forever, when no timer is pending: an idle server does not tick);
//! - after each poll the loop takes every expired timer out with `poll(now)` and closes those
//!   connections; a connection that closes first cancels its timer, so nothing leaks;
//! - a `reset` whose timer already fired gets a `StaleKeyError`: the loop matches it and arms
//!   a new timer, it does not propagate it (see `on_readable`).
//!
//! Needs only `tickwheel` (with its `trace` feature, for `Config::record`) and mio. Shared by
//! `examples/event_loop_server/main.rs`, `tests/event_loop_server.rs`, and the load
//! generator's trace test, which records a run and replays it.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token, Waker};
use tickwheel::trace::Recorder;
use tickwheel::{HierarchicalWheel, StaleKeyError, Stats, TickClock, Timer, TimerKey};

const LISTENER: Token = Token(0);
const WAKER: Token = Token(1);
const FIRST_CONN: usize = 2;

/// Server settings.
#[derive(Clone, Debug)]
pub(crate) struct Config {
    /// A connection with no bytes received for this long is closed.
    pub(crate) idle_timeout: Duration,
    /// Tick length of the wheel.
    pub(crate) resolution: Duration,
    /// Write every timer call to this trace file (`tickwheel-loadgen replay` replays it on
    /// every implementation).
    pub(crate) record: Option<std::path::PathBuf>,
}

/// What the server did, returned by [`Server::stop`].
#[derive(Clone, Debug, Default)]
pub(crate) struct Report {
    pub(crate) accepted: u64,
    pub(crate) closed_idle: u64,
    pub(crate) closed_by_peer: u64,
    /// Idle closes that came sooner than `idle_timeout` after the last read: must be 0.
    pub(crate) closed_early: u64,
    /// The longest idle close measured from the last read (how late the timer was, plus
    /// the timeout).
    pub(crate) max_idle_observed: Duration,
    pub(crate) max_open: usize,
    /// Connections open and timers pending when `stop` was called (before the server closed
    /// whatever was still open).
    pub(crate) open_at_stop: usize,
    pub(crate) timers_at_stop: usize,
    /// Poll calls that returned with no events (timeouts); an idle server makes none.
    pub(crate) idle_wakeups: u64,
    pub(crate) timer_stats: Stats,
}

/// Live gauges the loop updates on every iteration (for tests that wait for a state).
#[derive(Debug, Default)]
pub(crate) struct Gauges {
    pub(crate) open: AtomicUsize,
    pub(crate) timers: AtomicUsize,
}

/// A running server: its address and how to stop it.
pub(crate) struct Server {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    waker: Arc<Waker>,
    gauges: Arc<Gauges>,
    thread: JoinHandle<io::Result<Report>>,
}

struct Conn {
    stream: TcpStream,
    timer: TimerKey,
    last_read: Instant,
    /// Echo bytes not yet written (the socket was full).
    out: Vec<u8>,
}

impl Server {
    /// Binds 127.0.0.1 on an ephemeral port and starts the loop on its own thread. The
    /// `record` file is created here, so a path that cannot be written fails the start with
    /// its own error, naming the file.
    pub(crate) fn start(config: Config) -> io::Result<Self> {
        let trace = match &config.record {
            Some(path) => Some(std::fs::File::create(path).map_err(|e| {
                io::Error::new(e.kind(), format!("--record {}: {e}", path.display()))
            })?),
            None => None,
        };
        let poll = Poll::new()?;
        let mut listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))?;
        let addr = listener.local_addr()?;
        poll.registry()
            .register(&mut listener, LISTENER, Interest::READABLE)?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
        let stop = Arc::new(AtomicBool::new(false));
        let gauges = Arc::new(Gauges::default());
        let (s, g) = (stop.clone(), gauges.clone());
        let thread = std::thread::Builder::new()
            .name("event-loop".into())
            .spawn(move || run(config, trace, poll, listener, &s, &g))?;
        Ok(Self {
            addr,
            stop,
            waker,
            gauges,
            thread,
        })
    }

    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub(crate) fn gauges(&self) -> &Gauges {
        &self.gauges
    }

    /// Stops the loop, closes what is open, and returns the report.
    pub(crate) fn stop(self) -> io::Result<Report> {
        self.stop.store(true, Ordering::Release);
        self.waker.wake()?;
        self.thread
            .join()
            .map_err(|_| io::Error::other("event loop panicked"))?
    }
}

fn run(
    config: Config,
    trace: Option<std::fs::File>,
    poll: Poll,
    listener: TcpListener,
    stop: &AtomicBool,
    gauges: &Gauges,
) -> io::Result<Report> {
    let clock = TickClock::new(config.resolution).map_err(io::Error::other)?;
    let wheel: HierarchicalWheel<Token> = HierarchicalWheel::new();
    match trace {
        // Recording is these lines: wrap the timer, and finish the trace at the end.
        Some(file) => {
            let mut timer = Recorder::new(wheel, file, config.resolution);
            let report = serve(&config, &clock, &mut timer, poll, listener, stop, gauges)?;
            timer.finish()?;
            Ok(report)
        }
        None => {
            let mut timer = wheel;
            serve(&config, &clock, &mut timer, poll, listener, stop, gauges)
        }
    }
}

/// The event loop, on any timer.
fn serve<X: Timer<Token>>(
    config: &Config,
    clock: &TickClock,
    timer: &mut X,
    mut poll: Poll,
    listener: TcpListener,
    stop: &AtomicBool,
    gauges: &Gauges,
) -> io::Result<Report> {
    let mut conns: HashMap<Token, Conn> = HashMap::new();
    let mut next_token = FIRST_CONN;
    let mut events = Events::with_capacity(1024);
    let mut report = Report::default();
    let mut buf = vec![0u8; 16 * 1024];

    while !stop.load(Ordering::Acquire) {
        // Sleep until the earliest timer (never later: next_deadline may be a slot boundary
        // before it), or forever when none is pending.
        let timeout = timer.next_deadline().map(|tick| {
            clock.instant_of(tick).map_or(Duration::MAX, |at| {
                at.saturating_duration_since(Instant::now())
            })
        });
        match poll.poll(&mut events, timeout) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        if events.is_empty() {
            report.idle_wakeups += 1;
        }
        for event in events.iter() {
            match event.token() {
                LISTENER => loop {
                    match listener.accept() {
                        Ok((mut stream, _)) => {
                            let token = Token(next_token);
                            next_token += 1;
                            poll.registry()
                                .register(&mut stream, token, Interest::READABLE)?;
                            let now = Instant::now();
                            let deadline = clock.deadline_after(now, config.idle_timeout);
                            let key = timer.insert(deadline, token).expect("unbounded wheel");
                            conns.insert(
                                token,
                                Conn {
                                    stream,
                                    timer: key,
                                    last_read: now,
                                    out: Vec::new(),
                                },
                            );
                            report.accepted += 1;
                            report.max_open = report.max_open.max(conns.len());
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        // Out of descriptors or a reset before accept: drop this one, go on.
                        Err(_) => break,
                    }
                },
                WAKER => {}
                token => {
                    let Some(conn) = conns.get_mut(&token) else {
                        continue;
                    };
                    let open = if event.is_readable() {
                        on_readable(conn, token, &mut buf, clock, timer, config.idle_timeout)
                    } else {
                        true
                    } && (!event.is_writable() || flush(conn));
                    if open {
                        let interest = if conn.out.is_empty() {
                            Interest::READABLE
                        } else {
                            Interest::READABLE | Interest::WRITABLE
                        };
                        poll.registry()
                            .reregister(&mut conn.stream, token, interest)?;
                    } else {
                        // The peer closed (or failed): the connection ends before its timer,
                        // so the timer is cancelled, not leaked.
                        let mut conn = conns.remove(&token).expect("present");
                        timer
                            .cancel(conn.timer)
                            .expect("a live connection has a pending timer");
                        let _ = poll.registry().deregister(&mut conn.stream);
                        report.closed_by_peer += 1;
                    }
                }
            }
        }
        // Close every connection whose idle timer expired.
        let now = Instant::now();
        while let Some(expired) = timer.poll(clock.now_tick(now)) {
            let mut conn = conns
                .remove(&expired.payload)
                .expect("timer names a live connection");
            let idle = now.saturating_duration_since(conn.last_read);
            if idle < config.idle_timeout {
                report.closed_early += 1;
            }
            report.max_idle_observed = report.max_idle_observed.max(idle);
            let _ = poll.registry().deregister(&mut conn.stream);
            report.closed_idle += 1;
            // Dropping the stream closes it; the client reads end-of-file.
        }
        gauges.open.store(conns.len(), Ordering::Relaxed);
        gauges.timers.store(timer.len(), Ordering::Relaxed);
    }
    report.open_at_stop = conns.len();
    report.timers_at_stop = timer.len();
    for (_, conn) in conns.drain() {
        timer.cancel(conn.timer);
    }
    debug_assert!(timer.is_empty());
    report.timer_stats = timer.stats();
    Ok(report)
}

/// Reads what is there, echoes it, and pushes the idle timer out. Returns `false` when the
/// connection is finished.
fn on_readable<X: Timer<Token>>(
    conn: &mut Conn,
    token: Token,
    buf: &mut [u8],
    clock: &TickClock,
    timer: &mut X,
    idle_timeout: Duration,
) -> bool {
    let mut got_bytes = false;
    let open = loop {
        match conn.stream.read(buf) {
            Ok(0) => break false,
            Ok(n) => {
                got_bytes = true;
                conn.out.extend_from_slice(&buf[..n]);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break true,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break false,
        }
    };
    if got_bytes {
        // Activity: push the idle deadline out. O(1) on the wheel; no allocation.
        conn.last_read = Instant::now();
        let deadline = clock.deadline_after(conn.last_read, idle_timeout);
        match timer.reset(conn.timer, deadline) {
            Ok(()) => {}
            // The timer fired before these bytes were read, so its key is stale. This loop
            // closes a connection in the turn its timer fires, so here that cannot happen; a
            // loop that closes later (after a last flush, say) meets it. Either way the bytes
            // prove the connection alive: arm a new timer rather than fail the loop.
            Err(StaleKeyError { .. }) => {
                conn.timer = timer.insert(deadline, token).expect("unbounded wheel");
            }
        }
    }
    open && flush(conn)
}

/// Writes buffered echo bytes; `false` when the peer is gone.
fn flush(conn: &mut Conn) -> bool {
    while !conn.out.is_empty() {
        match conn.stream.write(&conn.out) {
            Ok(0) => return false,
            Ok(n) => {
                conn.out.drain(..n);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    true
}
