//! A load of many held-open HTTP/1 connections on loopback, for `scripts/http-bench.sh` and
//! `examples/http_server.rs`: slow clients that start a request and never finish its head, or
//! idle keep-alive clients.
//!
//! ```text
//! cargo run --release -p tickwheel-async --example slow_clients -- --addr 127.0.0.1:PORT \
//!     --connections 10000 --over 5s --mode slow --timeout 1s --hold 20s
//! ```
//! It opens `--connections` connections to `--addr` (loopback only), their connects spread
//! evenly over `--over`. In `--mode slow` each sends a request line and the first bytes of a
//! header right after its connect, then nothing more, and waits for the server to close it.
//! In `--mode idle` each sends one whole keep-alive request, reads the answer, and then sits
//! idle. It prints `all connected` once every connect is done (`all open` too in idle mode,
//! when every connection has been answered and none closed), and ends when every connection
//! is closed, `--hold` has passed since the start, or on Ctrl-C; then it prints when the
//! server closed the connections and, against `--timeout` (the server's header read
//! timeout), how many were closed early and how late the rest were. Each close is timed from
//! two instants: just before the connect (the server cannot have started its timer earlier)
//! and just after the first bytes were written.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio::time::Instant;

/// What each connection does once connected.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// A request line and the first header bytes, then nothing.
    Slow,
    /// One whole request, its answer read, then nothing.
    Idle,
}

struct Args {
    addr: SocketAddr,
    connections: u32,
    over: Duration,
    mode: Mode,
    timeout: Duration,
    hold: Duration,
}

const USAGE: &str = "usage: slow_clients --addr 127.0.0.1:PORT [--connections 10000] [--over 5s] \
                     [--mode slow|idle] [--timeout 1s] [--hold 20s]";

#[path = "common/duration.rs"]
mod duration;
use duration::parse_duration;

fn parse_args() -> Result<Args, String> {
    let mut addr = None;
    let mut args = Args {
        addr: SocketAddr::from(([127, 0, 0, 1], 0)),
        connections: 10_000,
        over: Duration::from_secs(5),
        mode: Mode::Slow,
        timeout: Duration::from_secs(1),
        hold: Duration::from_secs(20),
    };
    let mut argv = std::env::args().skip(1);
    while let Some(flag) = argv.next() {
        let mut value = || argv.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--addr" => {
                let v = value()?;
                let a: SocketAddr = v
                    .parse()
                    .map_err(|_| format!("bad address {v:?}: expected IP:PORT"))?;
                if !a.ip().is_loopback() {
                    return Err(format!("{v} is not a loopback address"));
                }
                addr = Some(a);
            }
            "--connections" => {
                let v = value()?;
                args.connections = v.parse().map_err(|_| format!("bad count {v:?}"))?;
            }
            "--over" => args.over = parse_duration(&value()?)?,
            "--mode" => {
                args.mode = match value()?.as_str() {
                    "slow" => Mode::Slow,
                    "idle" => Mode::Idle,
                    m => return Err(format!("unknown mode {m:?}: expected slow or idle")),
                }
            }
            "--timeout" => args.timeout = parse_duration(&value()?)?,
            "--hold" => args.hold = parse_duration(&value()?)?,
            _ => return Err(format!("unknown argument {flag:?}\n{USAGE}")),
        }
    }
    args.addr = addr.ok_or(format!("--addr is needed\n{USAGE}"))?;
    Ok(args)
}

/// One connection's close, timed from just before its connect and from just after its first
/// bytes were written.
struct Close {
    from_connect: Duration,
    from_first_byte: Duration,
}

/// What the connections share.
#[derive(Default)]
struct Shared {
    connected: AtomicU64,
    connect_errors: AtomicU64,
    /// Idle mode: answered and still open.
    answered: AtomicU64,
    /// Connections done with their connect (connected or failed), and done altogether
    /// (failed, or closed by the server).
    started: AtomicU64,
    finished: AtomicU64,
    closes: Mutex<Vec<Close>>,
    /// Woken at every count above that `main` waits on.
    changed: Notify,
}

impl Shared {
    fn bump(&self, counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::SeqCst);
        self.changed.notify_one();
    }
}

const SLOW_HEAD: &[u8] = b"GET / HTTP/1.1\r\nHost: bench\r\nX-Slow: a";
const IDLE_REQUEST: &[u8] = b"GET / HTTP/1.1\r\nHost: bench\r\n\r\n";

/// One client: connect at `at`, do what `mode` says, then wait for the server to close.
async fn client(addr: SocketAddr, at: Instant, mode: Mode, shared: Arc<Shared>) {
    tokio::time::sleep_until(at).await;
    let start = Instant::now();
    let connected = TcpStream::connect(addr).await;
    shared.bump(&shared.started);
    let Ok(mut stream) = connected else {
        shared.bump(&shared.connect_errors);
        shared.bump(&shared.finished);
        return;
    };
    shared.bump(&shared.connected);
    let first = if mode == Mode::Slow {
        SLOW_HEAD
    } else {
        IDLE_REQUEST
    };
    let written = stream.write_all(first).await;
    let first_byte = Instant::now();
    let mut buf = vec![0; 512];
    let mut answered = false;
    if written.is_ok() && mode == Mode::Idle {
        // The answer ends with its body, `hello\n`.
        let mut got = Vec::new();
        while !got.ends_with(b"hello\n") {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
        answered = got.ends_with(b"hello\n");
        if answered {
            shared.bump(&shared.answered);
        }
    }
    // Until the server closes it: end of stream, or a reset.
    if written.is_ok() {
        while let Ok(n) = stream.read(&mut buf).await {
            if n == 0 {
                break;
            }
        }
    }
    let end = Instant::now();
    shared.closes.lock().unwrap().push(Close {
        from_connect: end - start,
        from_first_byte: end - first_byte,
    });
    if answered {
        shared.answered.fetch_sub(1, Ordering::SeqCst);
    }
    shared.bump(&shared.finished);
}

/// The `q` quantile of `sorted` (nearest rank), in milliseconds; `NaN` when empty.
fn quantile_ms(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (q * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

fn report(args: &Args, shared: &Shared) {
    let closes = shared.closes.lock().unwrap();
    let timeout_ms = args.timeout.as_secs_f64() * 1e3;
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let mut from_connect: Vec<f64> = closes.iter().map(|c| ms(c.from_connect)).collect();
    let mut from_first: Vec<f64> = closes.iter().map(|c| ms(c.from_first_byte)).collect();
    from_connect.sort_by(f64::total_cmp);
    from_first.sort_by(f64::total_cmp);
    let early_connect = from_connect.iter().filter(|&&t| t < timeout_ms).count();
    let early_first = from_first.iter().filter(|&&t| t < timeout_ms).count();
    let connected = shared.connected.load(Ordering::SeqCst);
    let closed = closes.len() as u64;
    println!(
        "{} connections: {connected} connected, {} connect errors, {closed} closed by the \
         server, {} still open at the end",
        args.connections,
        shared.connect_errors.load(Ordering::SeqCst),
        connected - closed,
    );
    for (name, sorted, early) in [
        ("its connect", &from_connect, early_connect),
        ("its first byte", &from_first, early_first),
    ] {
        println!(
            "closed after {name}: min {:.1} ms, p50 {:.1}, p99 {:.1}, p99.9 {:.1}, max {:.1}; \
             {early} before the {:?} timeout",
            quantile_ms(sorted, 0.0),
            quantile_ms(sorted, 0.5),
            quantile_ms(sorted, 0.99),
            quantile_ms(sorted, 0.999),
            quantile_ms(sorted, 1.0),
            args.timeout,
        );
    }
    // One line for scripts: lateness past the timeout, in ms, from each origin.
    println!(
        "RESULT connected={connected} closed={closed} open={} early_connect={early_connect} \
         early_first_byte={early_first} late_p50_ms={:.2} late_p99_ms={:.2} late_max_ms={:.2} \
         late_from_connect_p99_ms={:.2}",
        connected - closed,
        quantile_ms(&from_first, 0.5) - timeout_ms,
        quantile_ms(&from_first, 0.99) - timeout_ms,
        quantile_ms(&from_first, 1.0) - timeout_ms,
        quantile_ms(&from_connect, 0.99) - timeout_ms,
    );
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = parse_args().unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    rlimit::increase_nofile_limit(u64::MAX)?;
    let shared = Arc::new(Shared::default());
    let start = Instant::now();
    let n = args.connections;
    for i in 0..n {
        let at = start + args.over * i / n.max(1);
        tokio::spawn(client(args.addr, at, args.mode, Arc::clone(&shared)));
    }
    let total = u64::from(n);
    let hold = tokio::time::sleep_until(start + args.hold);
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(hold, ctrl_c);
    let (mut said_connected, mut said_open) = (false, false);
    loop {
        if !said_connected && shared.started.load(Ordering::SeqCst) == total {
            println!("all connected");
            said_connected = true;
        }
        let open = shared.answered.load(Ordering::SeqCst);
        if args.mode == Mode::Idle && !said_open && open == total {
            println!("all open");
            said_open = true;
        }
        if shared.finished.load(Ordering::SeqCst) == total {
            break;
        }
        tokio::select! {
            () = shared.changed.notified() => {}
            () = &mut hold => break,
            _ = &mut ctrl_c => break,
        }
    }
    report(&args, &shared);
    // The connections still open close with the process.
    std::process::exit(0)
}
