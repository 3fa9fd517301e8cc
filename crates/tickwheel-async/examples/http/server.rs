//! The HTTP server of `examples/http_server.rs`, which `tests/http_server.rs` includes too, so
//! the tests drive the same code: hyper's HTTP/1 server on tokio sockets, keep-alive on, a
//! header read timeout timed by the timer picked ([`HyperTimer`] or hyper-util's
//! [`TokioTimer`]), and counters of what it served.

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use tickwheel_async::HyperTimer;
use tokio::net::{TcpListener, TcpSocket};

/// The timer hyper times its header read timeout with.
#[derive(Clone, Debug)]
pub(crate) enum Timer {
    /// tickwheel-async's, on the default timers.
    Tickwheel(HyperTimer),
    /// hyper-util's, on tokio's timer driver.
    Tokio(TokioTimer),
}

impl Timer {
    /// `tickwheel` or `tokio`.
    pub(crate) fn parse(name: &str) -> Result<Self, String> {
        match name {
            "tickwheel" => Ok(Self::Tickwheel(HyperTimer::new())),
            "tokio" => Ok(Self::Tokio(TokioTimer::new())),
            _ => Err(format!(
                "unknown timer {name:?}: expected tickwheel or tokio"
            )),
        }
    }

    /// The name [`parse`](Self::parse) takes.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Self::Tickwheel(_) => "tickwheel",
            Self::Tokio(_) => "tokio",
        }
    }
}

/// What the server counts, as it goes.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    /// Connections accepted.
    pub(crate) accepted: AtomicU64,
    /// Requests answered.
    pub(crate) requests: AtomicU64,
    /// Connections closed by the header read timeout.
    pub(crate) header_timeouts: AtomicU64,
    /// Connections ended by another error (e.g. the client closed in the middle of a head).
    pub(crate) other_errors: AtomicU64,
    /// Connections ended cleanly (the client closed between requests).
    pub(crate) closed: AtomicU64,
}

impl Counters {
    /// Connections still open.
    pub(crate) fn open(&self) -> u64 {
        let ended = self.header_timeouts.load(Ordering::Relaxed)
            + self.other_errors.load(Ordering::Relaxed)
            + self.closed.load(Ordering::Relaxed);
        self.accepted.load(Ordering::Relaxed).saturating_sub(ended)
    }
}

/// A listener on `addr` with a backlog of 4,096, for bursts of connects.
///
/// # Errors
/// The socket cannot be made, bound or set listening.
pub(crate) fn listen(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(4_096)
}

/// Serves HTTP/1 on every connection `listener` accepts, forever, each on its own task:
/// keep-alive on, every request answered `200 hello`, and a connection closed once a request
/// head (the first, or the next one on a kept-alive connection) takes longer than
/// `header_timeout` to arrive, as timed by `timer`.
pub(crate) async fn serve(
    listener: TcpListener,
    timer: Timer,
    header_timeout: Duration,
    counters: Arc<Counters>,
) {
    let mut http = http1::Builder::new();
    http.keep_alive(true).header_read_timeout(header_timeout);
    match timer {
        Timer::Tickwheel(t) => http.timer(t),
        Timer::Tokio(t) => http.timer(t),
    };
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _peer)) => stream,
            // Out of file descriptors, or a connection reset before it was accepted: back
            // off a little, and keep serving.
            Err(e) => {
                eprintln!("accept: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        counters.accepted.fetch_add(1, Ordering::Relaxed);
        let _ = stream.set_nodelay(true);
        let served = Arc::clone(&counters);
        let hello = service_fn(move |_: Request<Incoming>| {
            served.requests.fetch_add(1, Ordering::Relaxed);
            async { Ok::<_, Infallible>(Response::new(String::from("hello\n"))) }
        });
        let conn = http.serve_connection(TokioIo::new(stream), hello);
        let counters = Arc::clone(&counters);
        tokio::spawn(async move {
            let ended = match conn.await {
                Ok(()) => &counters.closed,
                Err(e) if e.is_timeout() => &counters.header_timeouts,
                Err(_) => &counters.other_errors,
            };
            ended.fetch_add(1, Ordering::Relaxed);
        });
    }
}
