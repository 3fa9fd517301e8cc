//! The threaded example server records its shared service's timer calls (one shard under a
//! `Recorder`, whose trace ends when the service drops it), and `replay` gives all four
//! implementations the recorded outcomes, with the counts the server reported.

#[path = "../../tickwheel-service/examples/common/client.rs"]
mod client;
// The test drives the server through `start_recording`; the rest of its API is the example's.
#[allow(dead_code)]
#[path = "../../tickwheel-service/examples/threaded_server/server.rs"]
mod server;

use std::process::Command;
use std::time::Duration;

use client::Role;

const CONNECTIONS: usize = 200;
const IDLE: Duration = Duration::from_millis(300);
const REQUEST: Duration = Duration::from_millis(150);

#[test]
fn a_trace_from_the_threaded_server_replays_on_all_four() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("threaded.trace");
    client::ensure_fds(2 * CONNECTIONS as u64 + 64);
    let config = server::Config {
        idle_timeout: IDLE,
        request_timeout: REQUEST,
    };
    let server = server::Server::start_recording(config, Some(&trace)).unwrap();
    let plan = client::Plan {
        roles: client::mix(CONNECTIONS, true),
        ping_every: Duration::from_millis(20),
        min_run: IDLE + Duration::from_millis(200),
        max_run: IDLE + Duration::from_secs(5),
    };
    let run = client::run(server.addr(), &plan).unwrap();
    let (idle, idle_closed, _, _) = client::summary(&run.outcomes, Role::Idle);
    let (stuck, stuck_closed, _, _) = client::summary(&run.outcomes, Role::Stuck);
    let (_, busy_closed, _, _) = client::summary(&run.outcomes, Role::Busy);
    assert_eq!((idle_closed, stuck_closed, busy_closed), (idle, stuck, 0));
    assert!(client::echoed(&run.outcomes, Role::Busy) > 0);
    eprintln!("connected in {:?}", run.connect_time);
    drop(run.streams);
    let until = std::time::Instant::now() + Duration::from_secs(5);
    while server
        .counters()
        .open
        .load(std::sync::atomic::Ordering::Relaxed)
        > 0
        && std::time::Instant::now() < until
    {
        std::thread::sleep(Duration::from_millis(5));
    }
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

    let out = Command::new(env!("CARGO_BIN_EXE_tickwheel-loadgen"))
        .args(["replay", trace.to_str().unwrap()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for timer in ["hashed", "hierarchical", "heap", "lazy-heap"] {
        let row: Vec<&str> = stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(timer))
            .unwrap_or_else(|| panic!("no row for {timer}:\n{stdout}"))
            .split_whitespace()
            .collect();
        let fired: u64 = row[4].parse().unwrap();
        assert_eq!(
            fired,
            report.closed_idle + report.closed_request,
            "{timer}: one fire per timeout close"
        );
    }
}
