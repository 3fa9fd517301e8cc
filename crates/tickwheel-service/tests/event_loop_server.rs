//! The event-loop example server, in-process on an ephemeral loopback port: 1,000 connections,
//! a quarter kept busy, the rest left idle. Idle ones must be closed no earlier than the idle
//! timeout and within a generous bound; busy ones must stay open; once the clients are gone
//! the server holds no connection and no timer.

#[path = "../examples/common/client.rs"]
mod client;
#[path = "../examples/event_loop_server/server.rs"]
mod server;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use client::Role;

const CONNECTIONS: usize = 1_000;
const IDLE: Duration = Duration::from_millis(600);
/// How late an idle close may be on a loaded two-core machine before the test calls it wrong.
const GENEROUS: Duration = Duration::from_secs(5);

#[test]
fn closes_idle_connections_keeps_busy_ones_and_leaks_nothing() {
    let limit = client::ensure_fds(2 * CONNECTIONS as u64);
    assert!(
        limit >= 2 * CONNECTIONS as u64 + 64,
        "open-files limit {limit} is too low for {CONNECTIONS} loopback connections; raise `ulimit -n`"
    );
    let server = server::Server::start(server::Config {
        idle_timeout: IDLE,
        resolution: Duration::from_millis(1),
        record: None,
    })
    .unwrap();
    let plan = client::Plan {
        roles: client::mix(CONNECTIONS, false),
        ping_every: Duration::from_millis(50),
        min_run: IDLE + Duration::from_millis(200),
        max_run: IDLE + GENEROUS,
    };
    let client::Run {
        outcomes,
        streams,
        connect_time,
    } = client::run(server.addr(), &plan).unwrap();

    let (busy, busy_closed, _, _) = client::summary(&outcomes, Role::Busy);
    let (idle, idle_closed, min, max) = client::summary(&outcomes, Role::Idle);
    assert_eq!(busy + idle, CONNECTIONS);
    assert_eq!(busy_closed, 0, "a busy connection was closed");
    assert!(
        client::echoed(&outcomes, Role::Busy) > 0,
        "busy connections got their echoes"
    );
    assert_eq!(idle_closed, idle, "every idle connection was closed");
    let (min, max) = (min.unwrap(), max.unwrap());
    assert!(
        min >= IDLE,
        "an idle connection was closed early: after {min:?}"
    );
    assert!(
        max <= IDLE + GENEROUS,
        "an idle close was far too late: {max:?}"
    );

    // The clients go away: the server closes the busy connections and cancels their timers.
    drop(streams);
    let deadline = Instant::now() + GENEROUS;
    while server.gauges().open.load(Ordering::Relaxed) > 0
        || server.gauges().timers.load(Ordering::Relaxed) > 0
    {
        assert!(Instant::now() < deadline, "connections or timers leaked");
        std::thread::sleep(Duration::from_millis(5));
    }
    let report = server.stop().unwrap();
    assert_eq!(report.accepted, CONNECTIONS as u64);
    assert_eq!(report.closed_idle, idle as u64);
    assert_eq!(report.closed_by_peer, busy as u64);
    assert_eq!(report.closed_early, 0);
    assert!(report.max_idle_observed >= IDLE);
    assert_eq!(
        (report.open_at_stop, report.timers_at_stop),
        (0, 0),
        "the timer's len() returned to zero"
    );
    assert_eq!(report.max_open, CONNECTIONS);
    let s = report.timer_stats;
    assert_eq!(
        s.inserted,
        s.fired + s.cancelled,
        "each timer ended exactly once: {s:?}"
    );
    assert!(s.reset >= busy as u64, "busy reads reset the idle timer");
    println!(
        "event loop: connected in {connect_time:?}; idle closes after {min:?} ..= {max:?}; {} resets; {} idle wake-ups",
        s.reset, report.idle_wakeups
    );
}
