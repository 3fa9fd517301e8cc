//! The echo example under load: 1,000 loopback connections to `serve`, whose idle timeouts
//! (400 ms) are tickwheel sleeps. Half the connections are busy and must stay open; the other
//! half go silent and must be closed by the server, never before their idle timeout, and not
//! much later either (a lost timer would leave them open).
//!
//! The clients time themselves with tokio's clock, not tickwheel's, and wait for the server
//! with generous upper bounds: only the lower bound (never early) is tight, because it is the
//! property under test and it holds however loaded the machine is.

#[allow(unreachable_pub)] // `serve` is `pub` for the example's binary, not for this test
#[path = "../examples/echo.rs"]
mod echo;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

/// Connections, half busy and half idle.
const CONNECTIONS: usize = 1_000;
/// The server's idle timeout.
const IDLE: Duration = Duration::from_millis(400);
/// How often a busy connection sends a line: a quarter of the idle timeout.
const BUSY_EVERY: Duration = Duration::from_millis(100);
/// How long a busy connection keeps sending (at least; until every idle one is closed too).
const BUSY_FOR: Duration = Duration::from_millis(1_200);
/// How soon after its echo an idle connection must be closed: far above `IDLE`, so only a
/// timer that never fires (or a server that never closes) fails it.
const CLOSE_WITHIN: Duration = Duration::from_secs(3);
/// Bound on any one connect or echo round trip, so that a stuck server fails instead of hanging.
const IO_WITHIN: Duration = Duration::from_secs(5);
/// The connects are spread evenly over this: a burst of 1,000 at once would stall every
/// client for a while (connection setup costs the two sides' kernels and tasks), and the busy
/// connections' lines arrive evenly rather than 500 at a time. It is half the idle timeout, so
/// all 1,000 connections are open together before the first idle one can be closed.
const SPREAD: Duration = Duration::from_millis(200);

/// What the client tasks share.
#[derive(Default)]
struct Shared {
    /// Idle connections not yet finished: the busy ones keep going until none is left.
    idle_left: AtomicUsize,
    /// Connections open now, and the most open at once.
    open: AtomicUsize,
    peak: AtomicUsize,
}

/// A connection counted as open while this lives.
struct Open(Arc<Shared>);

impl Open {
    fn new(shared: &Arc<Shared>) -> Self {
        let now = shared.open.fetch_add(1, Ordering::SeqCst) + 1;
        shared.peak.fetch_max(now, Ordering::SeqCst);
        Self(Arc::clone(shared))
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::SeqCst);
    }
}

/// An idle connection counted as finished once dropped, even by a panic, so that the busy
/// ones never wait on a failed idle one.
struct Finished(Arc<Shared>);

impl Drop for Finished {
    fn drop(&mut self) {
        self.0.idle_left.fetch_sub(1, Ordering::SeqCst);
    }
}

/// What an idle connection saw.
struct Idle {
    id: usize,
    /// Just before it sent its only line.
    sent: Instant,
    /// Just after it read that line's echo.
    echoed: Instant,
    /// When its read ended: end of stream, or an error (a connection reset), as `eof` says.
    closed: Instant,
    eof: bool,
}

/// Sends `line` and reads its echo, which must be identical.
async fn echo_line(stream: &mut TcpStream, line: &str) -> std::io::Result<()> {
    let round_trip = async {
        stream.write_all(line.as_bytes()).await?;
        let mut back = vec![0; line.len()];
        stream.read_exact(&mut back).await?;
        assert_eq!(
            String::from_utf8_lossy(&back),
            line,
            "the echo does not match what was sent"
        );
        Ok(())
    };
    tokio::time::timeout(IO_WITHIN, round_trip)
        .await
        .unwrap_or_else(|_| panic!("no echo of {line:?} within {IO_WITHIN:?}"))
}

/// Connection `id`, opened at its turn in `SPREAD` from `start`.
async fn connect(
    addr: SocketAddr,
    id: usize,
    start: Instant,
    shared: &Arc<Shared>,
) -> (TcpStream, Open) {
    let turn = start + SPREAD * id as u32 / CONNECTIONS as u32;
    tokio::time::sleep_until(turn.into()).await;
    let stream = tokio::time::timeout(IO_WITHIN, TcpStream::connect(addr))
        .await
        .unwrap_or_else(|_| panic!("connect to {addr} took longer than {IO_WITHIN:?}"))
        .expect("connect");
    (stream, Open::new(shared))
}

/// Echoes a line every `BUSY_EVERY` until `BUSY_FOR` has passed and no idle connection is left
/// open, then a final one; returns how many echoes it got.
async fn busy(addr: SocketAddr, id: usize, start: Instant, shared: Arc<Shared>) -> usize {
    let (mut stream, _open) = connect(addr, id, start, &shared).await;
    let connected = Instant::now();
    let mut echoes = 0;
    let mut last_echo = connected;
    loop {
        let line = format!("busy {id} round {echoes}\n");
        if let Err(e) = echo_line(&mut stream, &line).await {
            panic!(
                "busy connection {id} lost at round {echoes} ({e}), {:?} after its previous \
                 echo, {:?} after it connected (a silence near {IDLE:?} means this client \
                 stalled)",
                last_echo.elapsed(),
                connected.elapsed()
            );
        }
        echoes += 1;
        last_echo = Instant::now();
        if connected.elapsed() >= BUSY_FOR && shared.idle_left.load(Ordering::SeqCst) == 0 {
            break;
        }
        tokio::time::sleep(BUSY_EVERY).await;
    }
    // Every idle connection has been closed by now, and this one is still served.
    let line = format!("busy {id} final\n");
    if let Err(e) = echo_line(&mut stream, &line).await {
        panic!("busy connection {id} closed at the end: {e}");
    }
    echoes + 1
}

/// Sends one line, reads its echo, then stays silent until the server closes the connection.
async fn idle(addr: SocketAddr, id: usize, start: Instant, shared: Arc<Shared>) -> Idle {
    let finished = Finished(Arc::clone(&shared));
    let (mut stream, open) = connect(addr, id, start, &shared).await;
    let sent = Instant::now();
    let line = format!("idle {id}\n");
    echo_line(&mut stream, &line)
        .await
        .unwrap_or_else(|e| panic!("idle connection {id}: its one echo failed: {e}"));
    let echoed = Instant::now();
    let mut byte = [0; 1];
    let read = tokio::time::timeout(CLOSE_WITHIN, stream.read(&mut byte)).await;
    let closed = Instant::now();
    let eof = match read {
        Err(_) => panic!(
            "idle connection {id} still open {CLOSE_WITHIN:?} after its echo \
             (idle timeout {IDLE:?}): its timer never closed it"
        ),
        Ok(Ok(0)) => true,
        Ok(Ok(n)) => panic!("idle connection {id} got {n} unexpected byte(s)"),
        Ok(Err(_)) => false,
    };
    drop((open, finished));
    Idle {
        id,
        sent,
        echoed,
        closed,
        eof,
    }
}

/// A task's output, or its panic, carried on.
async fn join<T>(task: JoinHandle<T>) -> T {
    match task.await {
        Ok(v) => v,
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_close_after_the_timeout_and_busy_ones_stay_open() {
    // Both ends of every connection are in this process, plus the listener, the runtime's and
    // the harness's own descriptors.
    let needed = 2 * CONNECTIONS as u64 + 64;
    let limit = rlimit::increase_nofile_limit(4_096).expect("read or raise RLIMIT_NOFILE");
    assert!(
        limit >= needed,
        "the open-file limit is {limit}, below the {needed} that {CONNECTIONS} loopback connections \
         need (raise the hard limit: ulimit -Hn)"
    );

    // The server's sleeps are on the default timers, which nothing else in this test uses.
    let handle = tickwheel_async::default_handle();
    let listener = echo::listen(SocketAddr::from(([127, 0, 0, 1], 0))).expect("listen");
    let addr = listener.local_addr().expect("local address");
    tokio::spawn(echo::serve(listener, IDLE));

    let test_start = Instant::now();
    let shared = Arc::new(Shared {
        idle_left: AtomicUsize::new(CONNECTIONS / 2),
        ..Shared::default()
    });
    let (mut busy_tasks, mut idle_tasks) = (Vec::new(), Vec::new());
    for id in 0..CONNECTIONS {
        let shared = Arc::clone(&shared);
        if id % 2 == 0 {
            busy_tasks.push(tokio::spawn(busy(addr, id, test_start, shared)));
        } else {
            idle_tasks.push(tokio::spawn(idle(addr, id, test_start, shared)));
        }
    }

    let mut idles = Vec::with_capacity(idle_tasks.len());
    for task in idle_tasks {
        idles.push(join(task).await);
    }
    let idle_done = test_start.elapsed();
    let mut echoes = 0;
    for task in busy_tasks {
        echoes += join(task).await;
    }
    let busy_done = test_start.elapsed();

    // Never early. The server reads a line, echoes it, and only then resets the idle timer to
    // now + IDLE; the client took `sent` before sending that line, so the server's deadline is
    // later than `sent + IDLE`, and tickwheel never fires before a deadline (it rounds up to
    // its tick). Both clocks are the same monotonic `Instant`, so this needs no slack at all.
    // Measured from `echoed` instead, the bound is only `IDLE` minus that line's round trip:
    // the client may read its echo well after the server reset the timer (tens of ms on a
    // loaded machine), so a bound from `echoed` could fail with nothing wrong.
    let early: Vec<&Idle> = idles
        .iter()
        .filter(|c| c.closed.duration_since(c.sent) < IDLE)
        .collect();
    assert!(
        early.is_empty(),
        "{} idle connection(s) closed before the {IDLE:?} idle timeout, e.g. #{} after {:?}",
        early.len(),
        early[0].id,
        early[0].closed.duration_since(early[0].sent)
    );
    let after_echo: Vec<Duration> = idles
        .iter()
        .map(|c| c.closed.duration_since(c.echoed))
        .collect();
    let (min, max) = (
        after_echo.iter().min().expect("idle connections"),
        after_echo.iter().max().expect("idle connections"),
    );
    let eofs = idles.iter().filter(|c| c.eof).count();

    // Every server-side connection has ended now (its client closed), each dropping its sleep:
    // none is left on the timer service.
    let drain_start = Instant::now();
    while handle.pending() != 0 {
        assert!(
            drain_start.elapsed() < IO_WITHIN,
            "{} timer(s) still pending {IO_WITHIN:?} after every client closed",
            handle.pending()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Exactly the idle connections' timers fired: those closes were the tickwheel sleeps, and
    // no busy connection's timer ever did.
    let stats = handle.stats();
    assert_eq!(
        stats.fired,
        (CONNECTIONS / 2) as u64,
        "timers fired: {}, idle connections: {}",
        stats.fired,
        CONNECTIONS / 2
    );

    let since_sent = idles.iter().map(|c| c.closed.duration_since(c.sent));
    let round_trip = idles.iter().map(|c| c.echoed.duration_since(c.sent));
    println!(
        "{} connections, {} open at once; {} idle ones closed {:?}..{:?} after sending their \
         line ({min:?}..{max:?} after its echo, whose round trip took up to {:?}; {eofs} by end \
         of stream, the rest by a connection reset), all by {idle_done:?}; {} busy ones got {echoes} \
         echoes, all open at {busy_done:?}; {} idle-timer resets",
        CONNECTIONS,
        shared.peak.load(Ordering::SeqCst),
        idles.len(),
        since_sent.clone().min().expect("idle connections"),
        since_sent.max().expect("idle connections"),
        round_trip.max().expect("idle connections"),
        CONNECTIONS / 2,
        stats.reset
    );
}
