//! Example: a thread-per-connection line echo server whose idle and request timeouts live in
//! one shared `TimerService` (see `server.rs`).
//!
//! ```text
//! cargo run --release -p tickwheel-service --example threaded_server                 # built-in demo load
//! cargo run --release -p tickwheel-service --example threaded_server -- --serve 30   # just serve 30 s
//! ```
//! The demo opens `--connections` (default 1000) loopback connections: a quarter stay busy, a
//! quarter send half a request line and stall (closed after `--request-ms`, default 200), the
//! rest go idle (closed after `--idle-ms`, default 500). It prints what happened and exits
//! non-zero if an invariant broke. `--record FILE` writes every timer call of the demo to a
//! trace (one shard); `tickwheel-loadgen replay FILE` replays it on all four implementations.

#[path = "../../../tickwheel/examples/event_loop_server/client.rs"]
mod client;
mod server;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use client::Role;

fn arg(name: &str) -> Option<u64> {
    let args: Vec<String> = std::env::args().collect();
    let i = args.iter().position(|a| a == name)?;
    args.get(i + 1)?.parse().ok()
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("threaded_server: {e}");
            ExitCode::from(2)
        }
    }
}

fn run() -> std::io::Result<bool> {
    let idle = Duration::from_millis(arg("--idle-ms").unwrap_or(500));
    let request = Duration::from_millis(arg("--request-ms").unwrap_or(200));
    let config = server::Config {
        idle_timeout: idle,
        request_timeout: request,
    };
    if let Some(secs) = arg("--serve") {
        let server = server::Server::start(config)?;
        println!(
            "line echo server on {} (idle {idle:?}, request {request:?}) for {secs} s",
            server.addr()
        );
        std::thread::sleep(Duration::from_secs(secs));
        println!("{:#?}", server.stop()?);
        return Ok(true);
    }
    let n = arg("--connections").unwrap_or(1000) as usize;
    let limit = client::ensure_fds(2 * n as u64);
    let args: Vec<String> = std::env::args().collect();
    let record = args
        .iter()
        .position(|a| a == "--record")
        .and_then(|i| args.get(i + 1))
        .map(std::path::PathBuf::from);
    let server = server::Server::start_recording(config, record.as_deref())?;
    println!("line echo server on {}; {n} connections, idle {idle:?}, request {request:?}, fd limit {limit}", server.addr());
    let plan = client::Plan {
        roles: client::mix(n, &[Role::Busy, Role::Stuck, Role::Idle, Role::Idle]),
        ping_every: Duration::from_millis(50),
        min_run: idle + Duration::from_millis(300),
        max_run: idle + Duration::from_secs(10),
    };
    let client::Run {
        outcomes,
        streams,
        connect_time,
    } = client::run(server.addr(), &plan)?;
    println!("connected in {connect_time:?}");
    let (busy_n, busy_closed, _, _) = client::summary(&outcomes, Role::Busy);
    let (idle_n, idle_closed, imin, imax) = client::summary(&outcomes, Role::Idle);
    let (stuck_n, stuck_closed, smin, smax) = client::summary(&outcomes, Role::Stuck);
    println!(
        "busy:  {busy_n} connections, {busy_closed} closed (want 0), {} bytes echoed",
        client::echoed(&outcomes, Role::Busy)
    );
    println!("idle:  {idle_n} connections, {idle_closed} closed after {imin:?} ..= {imax:?} (want all, >= {idle:?})");
    println!("stuck: {stuck_n} connections, {stuck_closed} closed after {smin:?} ..= {smax:?} (want all, >= {request:?})");
    drop(streams);
    let deadline = Instant::now() + Duration::from_secs(5);
    while (server
        .counters()
        .open
        .load(std::sync::atomic::Ordering::Relaxed)
        > 0
        || server.pending_timers() > 0)
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(5));
    }
    let report = server.stop()?;
    println!(
        "server: {} accepted, {} closed idle, {} closed mid-request, {} closed by peer, {} lost races, \
         {} open / {} timers at stop, {} unfired at shutdown",
        report.accepted,
        report.closed_idle,
        report.closed_request,
        report.closed_by_peer,
        report.lost_races,
        report.open_at_stop,
        report.timers_at_stop,
        report.unfired_at_shutdown
    );
    let lateness = &report.service.lateness_us;
    println!(
        "timer lateness: p50 {} us, p99 {} us, max {} us",
        lateness.value_at_quantile(0.5),
        lateness.value_at_quantile(0.99),
        lateness.max()
    );
    Ok(busy_closed == 0
        && idle_closed == idle_n
        && stuck_closed == stuck_n
        && imin.map_or(true, |m| m >= idle)
        && smin.map_or(true, |m| m >= request)
        && report.timers_at_stop == 0
        && report.open_at_stop == 0
        && report.unfired_at_shutdown == 0
        && report.accepted == n as u64)
}
