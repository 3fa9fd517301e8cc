//! Both example servers record their timer calls (`--record`), and `replay` gives all four
//! implementations the recorded outcomes, with the counts the servers reported. The event-loop
//! server wraps its wheel in a `Recorder`; the threaded one runs its service's one shard under
//! a `Recorder`, whose trace ends when the service drops it.

#[path = "../../tickwheel/examples/event_loop_server/client.rs"]
mod client;
// The tests drive each server through its recording entry point; the rest of their API is
// the examples'.
#[allow(dead_code)]
#[path = "../../tickwheel/examples/event_loop_server/server.rs"]
mod event_loop;
#[allow(dead_code)]
#[path = "../../tickwheel-service/examples/threaded_server/server.rs"]
mod threaded;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use client::Role;

const CONNECTIONS: usize = 200;
const IDLE: Duration = Duration::from_millis(300);
const REQUEST: Duration = Duration::from_millis(150);

/// Runs the client mix against `addr`, checks the server did its job, and closes the clients;
/// returns how many were idle and how many stalled mid-request.
fn drive(addr: std::net::SocketAddr, stuck: bool) -> (usize, usize) {
    // A quarter busy, a quarter stuck mid-request when the server has a request timeout.
    let middle = if stuck { Role::Stuck } else { Role::Idle };
    client::ensure_fds(2 * CONNECTIONS as u64 + 64);
    let plan = client::Plan {
        roles: client::mix(CONNECTIONS, &[Role::Busy, middle, Role::Idle, Role::Idle]),
        ping_every: Duration::from_millis(20),
        min_run: IDLE + Duration::from_millis(200),
        max_run: IDLE + Duration::from_secs(5),
    };
    let run = client::run(addr, &plan).unwrap();
    let (idle, idle_closed, _, _) = client::summary(&run.outcomes, Role::Idle);
    let (stuck, stuck_closed, _, _) = client::summary(&run.outcomes, Role::Stuck);
    let (_, busy_closed, _, _) = client::summary(&run.outcomes, Role::Busy);
    assert_eq!((idle_closed, stuck_closed, busy_closed), (idle, stuck, 0));
    assert!(client::echoed(&run.outcomes, Role::Busy) > 0);
    eprintln!("connected in {:?}", run.connect_time);
    // The busy clients go now; the server sees them close.
    drop(run.streams);
    (idle, stuck)
}

/// Waits until `open` reads 0 (the clients are gone), for at most 5 s.
fn until_closed(open: impl Fn() -> usize) {
    let until = Instant::now() + Duration::from_secs(5);
    while open() > 0 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Replays `trace` on all four; returns each one's scheduled and fired counts from the
/// replay's report.json.
fn replayed(trace: &Path) -> Vec<(String, u64, u64)> {
    let out = tempfile::tempdir().unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_tickwheel-loadgen"))
        .args(["replay", trace.to_str().unwrap(), "--out"])
        .arg(out.path())
        .output()
        .unwrap();
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    let text = std::fs::read_to_string(out.path().join("report.json")).unwrap();
    let report: serde_json::Value = serde_json::from_str(&text).unwrap();
    let results = report["results"].as_array().unwrap();
    assert_eq!(results.len(), 4);
    results
        .iter()
        .map(|r| {
            (
                r["timer"].as_str().unwrap().to_string(),
                r["scheduled"].as_u64().unwrap(),
                r["fired"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn a_trace_from_the_event_loop_server_replays_on_all_four() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("event-loop.trace");
    let server = event_loop::Server::start(event_loop::Config {
        idle_timeout: IDLE,
        resolution: Duration::from_millis(1),
        record: Some(trace.clone()),
    })
    .unwrap();
    drive(server.addr(), false);
    until_closed(|| {
        server
            .gauges()
            .open
            .load(std::sync::atomic::Ordering::Relaxed)
    });
    let report = server.stop().unwrap();
    assert!(report.closed_idle > 0, "{report:?}");
    for (timer, inserted, fired) in replayed(&trace) {
        assert_eq!(
            inserted, report.accepted,
            "{timer}: one idle timer per connection"
        );
        assert_eq!(
            fired, report.closed_idle,
            "{timer}: one fire per idle close"
        );
    }
}

#[test]
fn a_trace_from_the_threaded_server_replays_on_all_four() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("threaded.trace");
    let config = threaded::Config {
        idle_timeout: IDLE,
        request_timeout: REQUEST,
    };
    let server = threaded::Server::start_recording(config, Some(&trace)).unwrap();
    let (idle, stuck) = drive(server.addr(), true);
    until_closed(|| {
        server
            .counters()
            .open
            .load(std::sync::atomic::Ordering::Relaxed)
    });
    // Stopping shuts the service down and drops its shard: the trace's end record is written.
    let report = server.stop().unwrap();
    assert_eq!(report.accepted, CONNECTIONS as u64, "{report:?}");
    assert_eq!(report.closed_by_peer as usize, CONNECTIONS - idle - stuck);
    assert_eq!(
        (
            report.open_at_stop,
            report.timers_at_stop,
            report.unfired_at_shutdown
        ),
        (0, 0, 0),
        "nothing left behind"
    );
    assert_eq!(
        report.service.fired,
        report.closed_idle + report.closed_request
    );
    for (timer, _, fired) in replayed(&trace) {
        assert_eq!(
            fired,
            report.closed_idle + report.closed_request,
            "{timer}: one fire per timeout close"
        );
    }
}
