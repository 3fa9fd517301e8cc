//! Example: a single-threaded mio echo server that owns a `HierarchicalWheel` directly and
//! closes idle connections (see `server.rs` for the embedding pattern). The server needs only
//! `tickwheel` and mio: no timer service, no locks.
//!
//! ```text
//! cargo run --release -p tickwheel --example event_loop_server                 # built-in demo load
//! cargo run --release -p tickwheel --example event_loop_server -- --serve 30   # just serve 30 s
//! ```
//! The demo opens `--connections` (default 1000) loopback connections: a quarter stay busy, the
//! rest go idle and must be closed after `--idle-ms` (default 500). It prints what happened and
//! exits non-zero if an invariant broke. `--serve SECS` only serves on 127.0.0.1 (try
//! `nc 127.0.0.1 PORT`) and stops after SECS. `--record FILE` writes every timer call to a
//! trace; `tickwheel-loadgen replay FILE` replays it on all four implementations.

mod client;
mod server;

use std::process::ExitCode;
use std::time::Duration;

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
            eprintln!("event_loop_server: {e}");
            ExitCode::from(2)
        }
    }
}

fn run() -> std::io::Result<bool> {
    let idle = Duration::from_millis(arg("--idle-ms").unwrap_or(500));
    let args: Vec<String> = std::env::args().collect();
    let record = args
        .iter()
        .position(|a| a == "--record")
        .and_then(|i| args.get(i + 1))
        .map(std::path::PathBuf::from);
    let config = server::Config {
        idle_timeout: idle,
        resolution: Duration::from_millis(1),
        record,
    };
    if let Some(secs) = arg("--serve") {
        let server = server::Server::start(config.clone())?;
        println!(
            "echo server on {} (idle timeout {idle:?}) for {secs} s",
            server.addr()
        );
        std::thread::sleep(Duration::from_secs(secs));
        println!("{:#?}", server.stop()?);
        return Ok(true);
    }
    let n = arg("--connections").unwrap_or(1000) as usize;
    let limit = client::ensure_fds(2 * n as u64);
    let server = server::Server::start(config)?;
    println!(
        "echo server on {}; {n} connections, idle timeout {idle:?}, fd limit {limit}",
        server.addr()
    );
    let plan = client::Plan {
        roles: client::mix(n, &[Role::Busy, Role::Idle, Role::Idle, Role::Idle]),
        ping_every: Duration::from_millis(50),
        min_run: idle + Duration::from_millis(300),
        max_run: idle + Duration::from_secs(10),
    };
    let client::Run {
        outcomes,
        streams: busy,
        connect_time,
    } = client::run(server.addr(), &plan)?;
    println!("connected in {connect_time:?}");
    let (busy_n, busy_closed, _, _) = client::summary(&outcomes, Role::Busy);
    let (idle_n, idle_closed, min, max) = client::summary(&outcomes, Role::Idle);
    println!(
        "busy: {busy_n} connections, {busy_closed} closed (want 0), {} bytes echoed",
        client::echoed(&outcomes, Role::Busy)
    );
    println!("idle: {idle_n} connections, {idle_closed} closed after {min:?} ..= {max:?} (want all, >= {idle:?})");
    drop(busy);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while server
        .gauges()
        .open
        .load(std::sync::atomic::Ordering::Relaxed)
        > 0
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(5));
    }
    let report = server.stop()?;
    println!("{report:#?}");
    Ok(busy_closed == 0
        && idle_closed == idle_n
        && min.map_or(true, |m| m >= idle)
        && report.closed_early == 0
        && report.timers_at_stop == 0)
}
