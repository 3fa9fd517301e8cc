//! The event-loop example server, in-process on an ephemeral loopback port, against a loopback
//! client: idle connections (one line, then silence) must be closed after the idle timeout and
//! never before it; chatty ones (a line every 100 ms, for several timeouts in a row) must stay
//! open; once the clients go, the server holds no connection and no timer.
//!
//! Timings are meant for a loaded two-core machine: a chatty connection has 400 ms of slack
//! before its timer could fire, an idle close may be seconds late before the test calls it
//! wrong, and nothing asserts a tight time.

#[path = "../examples/event_loop_server/client.rs"]
mod client;
#[path = "../examples/event_loop_server/server.rs"]
mod server;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use client::Role;

/// Connections in all (`docs/embedding.md` quotes it; `tests/readme.rs` checks).
const CONNECTIONS: usize = 100;
/// Connections of each kind: chatty and idle.
const N: usize = CONNECTIONS / 2;
const IDLE: Duration = Duration::from_millis(500);
const CHATTY_EVERY: Duration = Duration::from_millis(100);
/// Chatty connections must outlive this many idle timeouts.
const TIMEOUTS_SURVIVED: u32 = 3;
/// How late an idle close may be before the test calls it wrong.
const GENEROUS: Duration = Duration::from_secs(10);

#[test]
fn closes_idle_connections_and_keeps_chatty_ones() {
    // 2N connections, both ends in this process: far below the usual 1,024 descriptors.
    client::ensure_fds(4 * N as u64);
    let server = server::Server::start(server::Config {
        idle_timeout: IDLE,
        resolution: Duration::from_millis(1),
        record: None,
    })
    .unwrap();
    let plan = client::Plan {
        // Alternating: chatty (busy), idle, chatty, idle, ...
        roles: client::mix(CONNECTIONS, &[Role::Busy, Role::Idle]),
        ping_every: CHATTY_EVERY,
        min_run: IDLE * TIMEOUTS_SURVIVED,
        max_run: IDLE * TIMEOUTS_SURVIVED + GENEROUS,
    };
    let started = Instant::now();
    let client::Run {
        outcomes,
        streams,
        connect_time,
    } = client::run(server.addr(), &plan).unwrap();
    let ran = started.elapsed();

    let (chatty, chatty_closed, _, _) = client::summary(&outcomes, Role::Busy);
    let (idle, idle_closed, min, max) = client::summary(&outcomes, Role::Idle);
    assert_eq!((chatty, idle), (N, N));
    assert_eq!(
        chatty_closed, 0,
        "a chatty connection was closed (client ran {ran:?}, connecting took {connect_time:?})"
    );
    // Each chatty connection got echoes back beyond its first line: the server kept serving it.
    for o in outcomes.iter().filter(|o| o.role == Role::Busy) {
        assert!(
            o.echoed > b"hello\n".len(),
            "a chatty connection got no echo: {o:?}"
        );
    }
    assert_eq!(
        idle_closed, idle,
        "every idle connection was closed within {:?}",
        plan.max_run
    );
    let (min, max) = (min.unwrap(), max.unwrap());
    assert!(
        min >= IDLE,
        "an idle connection was closed early: after {min:?}"
    );
    assert!(
        max <= IDLE + GENEROUS,
        "an idle close was far too late: {max:?}"
    );

    // The clients go away: the server closes the chatty connections and cancels their timers.
    drop(streams);
    let deadline = Instant::now() + GENEROUS;
    while server.gauges().open.load(Ordering::Relaxed) > 0
        || server.gauges().timers.load(Ordering::Relaxed) > 0
    {
        assert!(Instant::now() < deadline, "connections or timers leaked");
        std::thread::sleep(Duration::from_millis(5));
    }
    let report = server.stop().unwrap();
    assert_eq!(report.accepted, 2 * N as u64);
    assert_eq!(report.closed_idle, N as u64);
    assert_eq!(report.closed_by_peer, N as u64);
    assert_eq!(report.closed_early, 0);
    assert!(report.max_idle_observed >= IDLE);
    // When the last (idle) connection was accepted, every chatty one was open too.
    assert!((N + 1..=2 * N).contains(&report.max_open), "{report:?}");
    assert_eq!((report.open_at_stop, report.timers_at_stop), (0, 0));
    let s = report.timer_stats;
    assert_eq!(
        s.inserted,
        s.fired + s.cancelled,
        "each timer ended exactly once: {s:?}"
    );
    assert_eq!(s.fired, N as u64, "one fire per idle connection");
    // Each chatty connection read at least one line per timeout it outlived.
    assert!(
        s.reset >= (N as u64) * u64::from(TIMEOUTS_SURVIVED),
        "chatty reads reset their timers: {s:?}"
    );
    println!(
        "event loop: {N} idle + {N} chatty, connected in {connect_time:?}, client ran {ran:?}; \
         idle closes after {min:?} ..= {max:?} (timeout {IDLE:?}); {} bytes echoed to chatty \
         ones; {} resets; {} idle wake-ups",
        client::echoed(&outcomes, Role::Busy),
        s.reset,
        report.idle_wakeups
    );
}

#[test]
fn a_record_file_that_cannot_be_created_fails_the_start_naming_the_flag_and_the_path() {
    let path = std::env::temp_dir()
        .join(format!(
            "tickwheel-no-such-directory-{}",
            std::process::id()
        ))
        .join("trace.bin");
    let error = server::Server::start(server::Config {
        idle_timeout: IDLE,
        resolution: Duration::from_millis(1),
        record: Some(path.clone()),
    })
    .err()
    .expect("the start must fail");
    let message = error.to_string();
    assert!(
        message.starts_with("--record ") && message.contains(&path.display().to_string()),
        "{message}"
    );
    assert_eq!(error.kind(), std::io::ErrorKind::NotFound, "{message}");
}
