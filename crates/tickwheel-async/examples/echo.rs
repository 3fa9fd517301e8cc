//! An async TCP echo server on tokio whose per-connection idle timeouts are tickwheel sleeps.
//!
//! ```text
//! cargo run --release -p tickwheel-async --example echo -- --idle-timeout 2s
//! cargo run --release -p tickwheel-async --example echo -- --addr 127.0.0.1:7000 --idle-timeout 500ms
//! ```
//! It prints `listening on ADDR` (the default `--addr 127.0.0.1:0` picks a free port), then
//! echoes whatever each connection sends. A connection that sends nothing for longer than
//! `--idle-timeout` (`ms` or `s`, default `10s`) is closed by the server. Try it with
//! `nc ADDR`: type a few lines, then wait.
//!
//! Each connection owns one [`Sleep`] from [`sleep`]: it is made when the connection is
//! accepted, raced against every read, and [`reset`](Sleep::reset) to `now + idle` after each
//! echo, which on an armed timer is one `reset` on the timer service (no new timer). The race
//! is a small hand-written select over `poll_fn`: poll the read, then the sleep (whose first
//! poll arms its timer). Writes are bounded too, with [`timeout`], so a peer that stops
//! reading cannot hold a connection forever; a write that completes at once arms no timer.
//!
//! The timers are runtime-agnostic: tokio runs the sockets, the driver thread of
//! tickwheel-async's default timers (started on first use) fires the sleeps and wakes the
//! tasks.

use std::future::{poll_fn, Future};
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::Poll;
use std::time::{Duration, Instant};

use tickwheel_async::{sleep, timeout, Sleep};
use tokio::io::{AsyncRead, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpSocket, TcpStream};

/// A listener on `addr` that queues up to 1,024 connections not yet accepted, for bursts of
/// connects: `TcpListener::bind` asks for 128, and a connect beyond a full queue is dropped
/// and only retried by the peer a second later.
///
/// # Errors
/// The socket cannot be made, bound or set listening.
pub fn listen(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(1_024)
}

/// Accepts connections on `listener` forever, each served on its own task: echoed back, and
/// closed once idle (nothing received) for longer than `idle`.
pub async fn serve(listener: TcpListener, idle: Duration) {
    loop {
        match listener.accept().await {
            Ok((stream, _peer)) => {
                tokio::spawn(async move {
                    // Every way out (idle, peer closed, I/O error) drops the stream: closed.
                    let _ = echo(stream, idle).await;
                });
            }
            // Out of file descriptors, or a connection reset before it was accepted: report,
            // back off a little, and keep serving.
            Err(e) => {
                eprintln!("accept: {e}");
                sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// How a connection ended without an I/O error.
#[derive(Debug)]
enum Closed {
    /// The peer closed its side.
    ByPeer,
    /// Nothing came for the idle timeout.
    Idle,
}

/// Echoes `stream` until it closes, fails, or stays idle for `idle`.
async fn echo(mut stream: TcpStream, idle: Duration) -> io::Result<Closed> {
    let mut buf = vec![0; 4096];
    let mut idle_timer = sleep(idle);
    loop {
        let Some(n) = read_or_idle(&mut stream, &mut buf, &mut idle_timer).await? else {
            return Ok(Closed::Idle);
        };
        if n == 0 {
            return Ok(Closed::ByPeer);
        }
        // `Elapsed` converts to an `io::Error` of kind `TimedOut`.
        timeout(idle, stream.write_all(&buf[..n])).await??;
        // The idle time counts from the end of the echo: the peer has had its answer.
        idle_timer.reset(Instant::now() + idle);
    }
}

/// Reads from `stream` into `buf` unless `idle` fires first: `Some(bytes read)` (0 at end of
/// stream), or `None` once idle.
async fn read_or_idle(
    stream: &mut TcpStream,
    buf: &mut [u8],
    idle: &mut Sleep,
) -> io::Result<Option<usize>> {
    poll_fn(|cx| {
        // Data that is already there wins over a timer that fired at the same moment.
        let mut read = ReadBuf::new(buf);
        if let Poll::Ready(done) = Pin::new(&mut *stream).poll_read(cx, &mut read) {
            return Poll::Ready(done.map(|()| Some(read.filled().len())));
        }
        // `Sleep` is `Unpin`. Both futures now hold this task's waker: whichever is ready
        // first wakes it, and the loser is simply polled again (or dropped) later.
        // (The default timers are never shut down and have no capacity limit, so the sleep
        // cannot fail; `idle.checked()` would return such an error instead of panicking.)
        Pin::new(&mut *idle).poll(cx).map(|()| Ok(None))
    })
    .await
}

#[path = "common/duration.rs"]
mod duration;
use duration::parse_duration;

/// The command line: `--addr ADDR`, `--idle-timeout DURATION`.
fn parse_args() -> Result<(SocketAddr, Duration), String> {
    let mut addr = SocketAddr::from(([127, 0, 0, 1], 0));
    let mut idle = Duration::from_secs(10);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--addr" => {
                let v = value()?;
                addr = v
                    .parse()
                    .map_err(|_| format!("bad address {v:?}: expected IP:PORT"))?;
            }
            "--idle-timeout" => idle = parse_duration(&value()?)?,
            _ => {
                return Err(format!(
                    "unknown argument {flag:?}\nusage: echo [--addr IP:PORT] [--idle-timeout 2s]"
                ))
            }
        }
    }
    Ok((addr, idle))
}

// Unused when a test includes this file as a module to call `serve`.
#[allow(dead_code)]
#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (addr, idle) = parse_args().unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    let listener = listen(addr)?;
    println!("listening on {}", listener.local_addr()?);
    serve(listener, idle).await;
    Ok(())
}
