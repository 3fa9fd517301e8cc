//! hyper's HTTP/1 server on tokio, its header read timeout timed by tickwheel-async's
//! `HyperTimer` or by hyper-util's `TokioTimer`: one binary to compare the two.
//!
//! ```text
//! cargo run --release -p tickwheel-async --features hyper --example http_server -- --timer tickwheel
//! cargo run --release -p tickwheel-async --features hyper --example http_server -- \
//!     --timer tokio --addr 127.0.0.1:8080 --header-timeout 500ms --for 30s
//! ```
//! It prints `listening on ADDR` (the default `--addr 127.0.0.1:0` picks a free port; only
//! loopback addresses are taken), then answers every request `hello`, keep-alive on. A client
//! must send each request's whole head within `--header-timeout` (`ms` or `s`, default `1s`)
//! of the server starting to read it (at the connection's start, and after each response on
//! a kept-alive connection), or the server closes the connection: slow clients cannot hold it
//! open. It runs until Ctrl-C, `--for DURATION`, or with `--stdin` until standard input
//! closes, then prints the requests served, the connections closed by the header timeout,
//! and the timer's own counts (tickwheel's timer service counts its timers and how late it
//! fired them; tokio's timer exposes no counts). `curl -v http://ADDR/` gets an answer;
//! `nc ADDR` and a slow typist get closed.
//!
//! The server itself is `http/server.rs`, which the tests include too.

#[path = "http/server.rs"]
mod server;

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::TokioTimer;
use server::{Counters, Timer};

/// The command line.
struct Args {
    addr: SocketAddr,
    timer: Timer,
    header_timeout: Duration,
    run_for: Option<Duration>,
    until_stdin_closes: bool,
}

const USAGE: &str = "usage: http_server [--addr 127.0.0.1:PORT] [--timer tickwheel|tokio] \
                     [--header-timeout 1s] [--for 30s] [--stdin]";

#[path = "common/duration.rs"]
mod duration;
use duration::parse_duration;

fn parse_args() -> Result<Args, String> {
    // The timer is made once the flags are read (tickwheel's starts the default timers'
    // thread): until then, tokio's, which starts nothing.
    let mut timer = String::from("tickwheel");
    let mut args = Args {
        addr: SocketAddr::from(([127, 0, 0, 1], 0)),
        timer: Timer::Tokio(TokioTimer::new()),
        header_timeout: Duration::from_secs(1),
        run_for: None,
        until_stdin_closes: false,
    };
    let mut argv = std::env::args().skip(1);
    while let Some(flag) = argv.next() {
        let mut value = || argv.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--addr" => {
                let v = value()?;
                args.addr = v
                    .parse()
                    .map_err(|_| format!("bad address {v:?}: expected IP:PORT"))?;
                if !args.addr.ip().is_loopback() {
                    return Err(format!("{v} is not a loopback address"));
                }
            }
            "--timer" => timer = value()?,
            "--header-timeout" => args.header_timeout = parse_duration(&value()?)?,
            "--for" => args.run_for = Some(parse_duration(&value()?)?),
            "--stdin" => args.until_stdin_closes = true,
            _ => return Err(format!("unknown argument {flag:?}\n{USAGE}")),
        }
    }
    args.timer = Timer::parse(&timer)?;
    Ok(args)
}

/// Returns once the run should end: Ctrl-C, `--for` elapsed, or standard input closed.
async fn end_of_run(run_for: Option<Duration>, until_stdin_closes: bool) {
    let deadline = async {
        match run_for {
            Some(d) => tokio::time::sleep(d).await,
            None => std::future::pending().await,
        }
    };
    let stdin_closed = async {
        if !until_stdin_closes {
            return std::future::pending().await;
        }
        let (closed, on_close) = tokio::sync::oneshot::channel::<()>();
        // A plain thread: a blocked read would hold up the runtime's shutdown, not the exit.
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
            let _ = closed.send(());
        });
        let _ = on_close.await;
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = deadline => {}
        () = stdin_closed => {}
    }
}

fn report(timer: &Timer, counters: &Counters) {
    let n = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed);
    println!("timer: {}", timer.name());
    println!("requests served: {}", n(&counters.requests));
    println!(
        "connections: {} accepted, {} closed by the header timeout, {} ended by another error, \
         {} closed by the client, {} open",
        n(&counters.accepted),
        n(&counters.header_timeouts),
        n(&counters.other_errors),
        n(&counters.closed),
        counters.open(),
    );
    match timer {
        Timer::Tickwheel(t) => {
            let s = t.handle().stats();
            println!(
                "tickwheel timers: {} scheduled, {} fired, {} cancelled, {} reset, {} pending, \
                 {} driver wake-ups",
                s.scheduled, s.fired, s.cancelled, s.reset, s.pending, s.wakeups
            );
            // When each fired timer's delivery started, past its deadline: the timer's own
            // share of a close's lateness (the task still has to run and close the socket).
            let l = &s.lateness_us;
            println!(
                "tickwheel fire lateness: p50 {} us, p99 {} us, max {} us",
                l.value_at_quantile(0.5),
                l.value_at_quantile(0.99),
                l.max()
            );
        }
        Timer::Tokio(_) => println!("tokio timers: no counts (tokio's timer exposes none)"),
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = parse_args().unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    // Room for tens of thousands of connections, as far as the hard limit allows.
    rlimit::increase_nofile_limit(u64::MAX)?;
    let listener = server::listen(args.addr)?;
    println!(
        "listening on {} (timer {}, header timeout {:?})",
        listener.local_addr()?,
        args.timer.name(),
        args.header_timeout
    );
    let counters = Arc::new(Counters::default());
    let serving = tokio::spawn(server::serve(
        listener,
        args.timer.clone(),
        args.header_timeout,
        Arc::clone(&counters),
    ));
    end_of_run(args.run_for, args.until_stdin_closes).await;
    serving.abort();
    report(&args.timer, &counters);
    Ok(())
}
