//! The HTTP server of `examples/http_server.rs` (hyper's HTTP/1 server, keep-alive on, a
//! 500 ms header read timeout) against real clients on 127.0.0.1, once with tickwheel-async's
//! `HyperTimer` and once with hyper-util's `TokioTimer`.
//!
//! - 100 slow clients each send a request line and then one header byte every 100 ms, so
//!   their head never ends: the header read timeout must close each one, never before it and
//!   within a generous slack after it. Meanwhile 10 keep-alive clients send request after
//!   request on one connection each: every request must be answered, no connection closed.
//! - One keep-alive connection sends requests back to back for longer than the timeout in
//!   total: the timeout counts per request head, so it must never close it.
//! - Timers shut down under a running server make its connections end at once, not hang.
//!
//! When the server starts its timer: hyper starts the header read timeout when it begins to
//! read a head, which for a new connection is as soon as it serves it, before any byte has
//! come. So the lower bound is measured from the instant before the client's `connect`,
//! which precedes the server's accept; each slow client sends its first bytes right after
//! its `connect` returns. The clients time themselves with tokio's clock, and only the lower
//! bound is tight: the upper one is seconds, so a busy machine does not fail it.

#[path = "../examples/http/server.rs"]
mod server;

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hyper::body::Body as _;
use hyper::Request;
use hyper_util::rt::TokioIo;
use server::{Counters, Timer};
use tickwheel_async::{AsyncTimers, HyperTimer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::runtime::Runtime;

/// The server's header read timeout.
const HEADER_TIMEOUT: Duration = Duration::from_millis(500);
/// Slow clients, their connects spread evenly over `SLOW_SPREAD`.
const SLOW: usize = 100;
const SLOW_SPREAD: Duration = Duration::from_millis(200);
/// How often a slow client sends one more header byte: more often than the timeout, so only
/// a timeout over the whole head closes it, not one per read.
const BYTE_EVERY: Duration = Duration::from_millis(100);
/// How soon after the timeout a slow client must be closed: far above it, so only a timer that
/// never fires (or fires very late) fails it.
const CLOSE_WITHIN: Duration = Duration::from_secs(3);
/// Keep-alive clients beside the slow ones, and the pause between their requests (well
/// under the timeout).
const KEEP_ALIVE: usize = 10;
const KEEP_ALIVE_GAP: Duration = Duration::from_millis(20);
/// Bound on any one request or wait on the server, so that a stuck server fails the test
/// instead of hanging it.
const IO_WITHIN: Duration = Duration::from_secs(5);

/// A server on its own runtime (two workers), as in the example.
struct Server {
    addr: SocketAddr,
    counters: Arc<Counters>,
    runtime: Runtime,
}

impl Server {
    fn start(timer: Timer, header_timeout: Duration) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let listener = {
            let _in_runtime = runtime.enter();
            server::listen(SocketAddr::from(([127, 0, 0, 1], 0))).unwrap()
        };
        let addr = listener.local_addr().unwrap();
        let counters = Arc::new(Counters::default());
        runtime.spawn(server::serve(
            listener,
            timer,
            header_timeout,
            Arc::clone(&counters),
        ));
        Self {
            addr,
            counters,
            runtime,
        }
    }

    /// Waits (up to `IO_WITHIN`) until `done` holds of the counters: a connection's end is
    /// counted just after its socket closes, so a client can see the close first.
    fn wait_for(&self, what: &str, done: impl Fn(&Counters) -> bool) {
        let start = Instant::now();
        while !done(&self.counters) {
            assert!(
                start.elapsed() < IO_WITHIN,
                "the server never got to {what}"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// The clients' runtime, apart from the server's.
fn clients() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A slow client: a request line and a header that never ends, one byte every `BYTE_EVERY`.
/// Returns how long after the instant before its `connect` the server closed it.
async fn slow_client(addr: SocketAddr) -> Duration {
    let start = Instant::now();
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(b"GET / HTTP/1.1\r\nHost: test\r\nX-Slow: ")
        .await
        .unwrap();
    let mut every = tokio::time::interval(BYTE_EVERY);
    every.tick().await; // the first tick is at once
    let mut buf = [0; 256];
    loop {
        tokio::select! {
            read = stream.read(&mut buf) => match read {
                // Closed: end of stream, or a reset when a byte was still unread.
                Ok(0) | Err(_) => return start.elapsed(),
                Ok(n) => panic!("an answer to a head that never ended: {:?}", &buf[..n]),
            },
            _ = every.tick() => {
                if stream.write_all(b"a").await.is_err() {
                    return start.elapsed();
                }
            }
        }
    }
}

/// Reads a response's body to its end.
async fn body_of(response: hyper::Response<hyper::body::Incoming>) -> Vec<u8> {
    let mut body = response.into_body();
    let mut bytes = Vec::new();
    while let Some(frame) = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
        if let Ok(data) = frame.unwrap().into_data() {
            bytes.extend_from_slice(&data);
        }
    }
    bytes
}

/// A keep-alive client on hyper's HTTP/1 client: one connection, one request after another
/// (`gap` apart) until `more` says stop (checked after each answer), then one last one.
/// Every request must be answered `hello`, and the connection must still be open at the
/// end. Returns the requests answered.
async fn keep_alive_client(addr: SocketAddr, gap: Duration, more: impl Fn() -> bool) -> u64 {
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    let conn = tokio::spawn(conn);
    let mut answered = 0;
    loop {
        let request = Request::get("/")
            .header("host", "test")
            .body(String::new())
            .unwrap();
        let response = tokio::time::timeout(IO_WITHIN, sender.send_request(request))
            .await
            .expect("an answer in time")
            .unwrap_or_else(|e| panic!("request {} on a kept-alive connection: {e}", answered + 1));
        assert_eq!(response.status(), 200);
        assert_eq!(body_of(response).await, b"hello\n");
        answered += 1;
        if !more() {
            break;
        }
        tokio::time::sleep(gap).await;
    }
    assert!(!sender.is_closed(), "the server closed a busy connection");
    drop(sender);
    conn.await.unwrap().unwrap(); // closed by this side, cleanly
    answered
}

/// tickwheel-async's timer, on timers of the test's own so it can count them exactly.
fn tickwheel(timers: &AsyncTimers) -> Timer {
    Timer::Tickwheel(HyperTimer::with_handle(timers.handle()))
}

fn tokio_timer() -> Timer {
    Timer::parse("tokio").unwrap()
}

/// Slow clients closed by the timeout, keep-alive clients served beside them.
fn slow_and_keep_alive(timer: Timer) {
    let name = timer.name();
    let server = Server::start(timer, HEADER_TIMEOUT);
    let addr = server.addr;
    let (closes, answered) = clients().block_on(async {
        let slow: Vec<_> = (0..SLOW)
            .map(|i| {
                tokio::spawn(async move {
                    tokio::time::sleep(SLOW_SPREAD * u32::try_from(i).unwrap() / SLOW as u32).await;
                    let limit = HEADER_TIMEOUT + CLOSE_WITHIN + IO_WITHIN;
                    tokio::time::timeout(limit, slow_client(addr))
                        .await
                        .expect("a slow client was never closed")
                })
            })
            .collect();
        let slow_left = Arc::new(std::sync::atomic::AtomicUsize::new(SLOW));
        let busy: Vec<_> = (0..KEEP_ALIVE)
            .map(|_| {
                let slow_left = Arc::clone(&slow_left);
                tokio::spawn(keep_alive_client(addr, KEEP_ALIVE_GAP, move || {
                    slow_left.load(Ordering::SeqCst) > 0
                }))
            })
            .collect();
        let mut closes = Vec::new();
        for s in slow {
            closes.push(s.await.unwrap());
            slow_left.fetch_sub(1, Ordering::SeqCst);
        }
        let mut answered = 0;
        for b in busy {
            answered += b.await.unwrap();
        }
        (closes, answered)
    });
    for (i, closed_after) in closes.iter().enumerate() {
        assert!(
            *closed_after >= HEADER_TIMEOUT,
            "{name}: slow client {i} closed {closed_after:?} after its connect, before the \
             {HEADER_TIMEOUT:?} header timeout"
        );
        assert!(
            *closed_after <= HEADER_TIMEOUT + CLOSE_WITHIN,
            "{name}: slow client {i} closed only {closed_after:?} after its connect"
        );
    }
    let slow = SLOW as u64;
    server.wait_for("count every connection's end", |c| c.open() == 0);
    let c = &server.counters;
    assert_eq!(c.header_timeouts.load(Ordering::SeqCst), slow, "{name}");
    assert_eq!(c.other_errors.load(Ordering::SeqCst), 0, "{name}");
    assert_eq!(c.closed.load(Ordering::SeqCst), KEEP_ALIVE as u64, "{name}");
    assert_eq!(c.requests.load(Ordering::SeqCst), answered, "{name}");
    // Each keep-alive client was answered while the slow ones were open.
    assert!(
        answered >= 2 * KEEP_ALIVE as u64,
        "{name}: {answered} answered"
    );
    drop(server.runtime);
}

/// One connection, requests back to back for one and a half timeouts in all: the timeout
/// counts each request's head, so it never closes the connection.
fn back_to_back(timer: Timer) {
    let name = timer.name();
    let server = Server::start(timer, HEADER_TIMEOUT);
    let start = Instant::now();
    let answered = clients().block_on(keep_alive_client(server.addr, Duration::ZERO, || {
        start.elapsed() < HEADER_TIMEOUT * 3 / 2
    }));
    assert!(start.elapsed() >= HEADER_TIMEOUT * 3 / 2);
    server.wait_for("count the connection's end", |c| c.open() == 0);
    let c = &server.counters;
    assert_eq!(c.requests.load(Ordering::SeqCst), answered, "{name}");
    assert_eq!(c.header_timeouts.load(Ordering::SeqCst), 0, "{name}");
    assert_eq!(c.closed.load(Ordering::SeqCst), 1, "{name}");
}

#[test]
fn slow_clients_are_closed_by_the_header_timeout_keep_alive_ones_served_tickwheel() {
    let timers = AsyncTimers::new().unwrap();
    slow_and_keep_alive(tickwheel(&timers));
    // Every connection's header sleep fired or was cancelled with its connection.
    let stats = timers.handle().stats();
    assert_eq!(stats.pending, 0);
    assert!(stats.fired >= SLOW as u64, "{stats:?}");
}

#[test]
fn slow_clients_are_closed_by_the_header_timeout_keep_alive_ones_served_tokio() {
    slow_and_keep_alive(tokio_timer());
}

#[test]
fn back_to_back_requests_are_never_cut_by_the_header_timeout_tickwheel() {
    let timers = AsyncTimers::new().unwrap();
    back_to_back(tickwheel(&timers));
    assert_eq!(timers.handle().pending(), 0);
}

#[test]
fn back_to_back_requests_are_never_cut_by_the_header_timeout_tokio() {
    back_to_back(tokio_timer());
}

/// Timers shut down under the server: the first poll of a connection's header sleep panics
/// (naming the reason, as a `Sleep` does), which ends the connection's task and closes it at
/// once, long before its 60 s timeout, instead of leaving the client hanging.
#[test]
fn shut_down_timers_close_the_connection_instead_of_hanging() {
    let timers = AsyncTimers::new().unwrap();
    let server = Server::start(tickwheel(&timers), Duration::from_secs(60));
    timers.shutdown();
    let closed_after = clients().block_on(async {
        let start = Instant::now();
        let mut stream = TcpStream::connect(server.addr).await.unwrap();
        let _ = stream.write_all(b"GET / HTTP/1.1\r\n").await;
        let read = tokio::time::timeout(IO_WITHIN, stream.read(&mut [0; 64])).await;
        assert!(
            matches!(read, Ok(Ok(0) | Err(_))),
            "the connection stayed open, or answered: {read:?}"
        );
        start.elapsed()
    });
    assert!(closed_after < IO_WITHIN);
    assert_eq!(server.counters.requests.load(Ordering::SeqCst), 0);
}
