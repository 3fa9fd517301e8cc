//! The thread-per-connection example server, in-process on an ephemeral loopback port: 1,000
//! connections, a quarter busy, a quarter stalled mid-request, the rest idle. Stalled ones must
//! be closed after the request timeout, idle ones after the idle timeout — never earlier, and
//! within a generous bound; busy ones stay open; once the clients are gone the service holds no
//! timer.

#[path = "../../tickwheel/examples/event_loop_server/client.rs"]
mod client;
#[path = "../examples/threaded_server/server.rs"]
mod server;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use client::Role;

const CONNECTIONS: usize = 1_000;
const IDLE: Duration = Duration::from_millis(700);
const REQUEST: Duration = Duration::from_millis(250);
const GENEROUS: Duration = Duration::from_secs(5);

#[test]
fn closes_idle_and_stalled_connections_keeps_busy_ones_and_leaks_nothing() {
    let limit = client::ensure_fds(2 * CONNECTIONS as u64);
    assert!(
        limit >= 2 * CONNECTIONS as u64 + 64,
        "open-files limit {limit} is too low for {CONNECTIONS} loopback connections; raise `ulimit -n`"
    );
    let server = server::Server::start(server::Config {
        idle_timeout: IDLE,
        request_timeout: REQUEST,
    })
    .unwrap();
    let plan = client::Plan {
        roles: client::mix(
            CONNECTIONS,
            &[Role::Busy, Role::Stuck, Role::Idle, Role::Idle],
        ),
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
    let (idle, idle_closed, imin, imax) = client::summary(&outcomes, Role::Idle);
    let (stuck, stuck_closed, smin, smax) = client::summary(&outcomes, Role::Stuck);
    assert_eq!(busy + idle + stuck, CONNECTIONS);
    if busy_closed > 0 {
        let closed: Vec<_> = outcomes
            .iter()
            .enumerate()
            .filter(|(_, o)| o.role == Role::Busy && o.closed_after.is_some())
            .take(5)
            .collect();
        eprintln!("busy closed: {closed:?}");
        let report = server.stop().unwrap();
        panic!("{busy_closed} busy connections were closed; server: {report:?}");
    }
    assert!(client::echoed(&outcomes, Role::Busy) > 0);
    assert_eq!(idle_closed, idle, "every idle connection was closed");
    assert_eq!(stuck_closed, stuck, "every stalled request was cut off");
    let (imin, imax, smin, smax) = (imin.unwrap(), imax.unwrap(), smin.unwrap(), smax.unwrap());
    assert!(
        imin >= IDLE,
        "an idle connection was closed early: after {imin:?}"
    );
    assert!(
        imax <= IDLE + GENEROUS,
        "an idle close was far too late: {imax:?}"
    );
    assert!(
        smin >= REQUEST,
        "a stalled request was cut early: after {smin:?}"
    );
    assert!(
        smax <= REQUEST + GENEROUS,
        "a request timeout was far too late: {smax:?}"
    );

    drop(streams);
    let deadline = Instant::now() + GENEROUS;
    while server.counters().open.load(Ordering::Relaxed) > 0 || server.pending_timers() > 0 {
        assert!(Instant::now() < deadline, "connections or timers leaked");
        std::thread::sleep(Duration::from_millis(5));
    }
    let report = server.stop().unwrap();
    assert_eq!(report.accepted, CONNECTIONS as u64);
    assert_eq!(report.closed_idle, idle as u64);
    assert_eq!(report.closed_request, stuck as u64);
    assert_eq!((report.open_at_stop, report.timers_at_stop), (0, 0));
    assert_eq!(
        report.unfired_at_shutdown, 0,
        "the service's len() returned to zero"
    );
    let s = &report.service;
    assert_eq!(
        s.scheduled,
        s.fired + s.cancelled,
        "each timer ended exactly once: {s:?}"
    );
    assert_eq!(s.fired, (idle + stuck) as u64);
    assert_eq!(s.panicked, 0);
    println!(
        "threaded: connected in {connect_time:?}; idle closes after {imin:?} ..= {imax:?}, request timeouts after {smin:?} ..= {smax:?}; \
         lateness p50 {} us, p99 {} us, max {} us; {} resets, {} lost races, {} closed by peer",
        s.lateness_us.value_at_quantile(0.5),
        s.lateness_us.value_at_quantile(0.99),
        s.lateness_us.max(),
        s.reset,
        report.lost_races,
        report.closed_by_peer
    );
}
