//! The event-loop example server records its timer calls (`--record`), and `replay` drives
//! all four implementations with them: each returns what the recorded wheel returned, fires
//! included, with the counts the server reported.

#[path = "../../tickwheel-service/examples/common/client.rs"]
mod client;
#[path = "../../tickwheel-service/examples/event_loop_server/server.rs"]
mod server;

use std::process::Command;
use std::time::Duration;

const CONNECTIONS: usize = 200;
const IDLE: Duration = Duration::from_millis(300);

#[test]
fn a_trace_from_the_event_loop_server_replays_on_all_four() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("server.trace");
    client::ensure_fds(2 * CONNECTIONS as u64 + 64);
    let server = server::Server::start(server::Config {
        idle_timeout: IDLE,
        resolution: Duration::from_millis(1),
        record: Some(trace.clone()),
    })
    .unwrap();
    let plan = client::Plan {
        roles: client::mix(CONNECTIONS, false),
        ping_every: Duration::from_millis(20),
        min_run: IDLE + Duration::from_millis(200),
        max_run: IDLE + Duration::from_secs(5),
    };
    let run = client::run(server.addr(), &plan).unwrap();
    let (idle, idle_closed, _, _) = client::summary(&run.outcomes, client::Role::Idle);
    let (_, busy_closed, _, _) = client::summary(&run.outcomes, client::Role::Busy);
    assert_eq!(
        (idle_closed, busy_closed),
        (idle, 0),
        "the server still does its job"
    );
    assert!(client::echoed(&run.outcomes, client::Role::Busy) > 0);
    eprintln!("connected in {:?}", run.connect_time);
    drop(run.streams);
    // Let the server see the busy clients go before it stops.
    let until = std::time::Instant::now() + Duration::from_secs(5);
    while server
        .gauges()
        .open
        .load(std::sync::atomic::Ordering::Relaxed)
        > 0
        && std::time::Instant::now() < until
    {
        std::thread::sleep(Duration::from_millis(5));
    }
    let report = server.stop().unwrap();
    assert!(report.closed_idle > 0, "{report:?}");

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
        let (inserted, fired): (u64, u64) = (row[1].parse().unwrap(), row[4].parse().unwrap());
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
