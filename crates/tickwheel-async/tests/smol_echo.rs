//! The smol echo example on loopback: its idle timeouts are tickwheel `timeout`s on a
//! non-tokio executor. Half the connections keep talking and must stay open; the other half go
//! silent and must be closed by the server, never before the idle timeout, and not much later
//! (a lost timer would leave them open).
//!
//! The clients are plain blocking sockets on their own threads, timed with `std`'s clock. Only
//! the lower bound (never early) is tight: it is the property under test, and it holds however
//! loaded the machine is.

#[allow(unreachable_pub)] // `serve` is `pub` for the example's binary, not for this test
#[path = "../examples/smol_echo.rs"]
mod smol_echo;

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// Connections in all (`docs/embedding.md` quotes it; `tests/readme.rs` of the core crate checks).
const CONNECTIONS: usize = 40;
/// Connections of each kind: talkers and silent ones.
const EACH: usize = CONNECTIONS / 2;
/// The server's idle timeout.
const IDLE: Duration = Duration::from_millis(400);
/// How often a talking connection sends a line: a quarter of the idle timeout.
const EVERY: Duration = Duration::from_millis(100);
/// How long a talking connection keeps talking: three idle timeouts.
const TALK_FOR: Duration = Duration::from_millis(1_200);
/// How soon after its line a silent connection must be closed: far above `IDLE`, so only a
/// timer that never fires (or a server that never closes) fails it.
const CLOSE_WITHIN: Duration = Duration::from_secs(3);
/// Bound on any one read, so that a stuck server fails instead of hanging.
const IO_WITHIN: Duration = Duration::from_secs(5);

/// Starts the example's server on a free loopback port, on its own thread and executor.
fn start() -> SocketAddr {
    let listener = smol::block_on(smol::net::TcpListener::bind("127.0.0.1:0")).unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let executor = smol::Executor::new();
        smol::block_on(executor.run(smol_echo::serve(&executor, listener, IDLE)));
    });
    addr
}

fn connect(addr: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(IO_WITHIN)).unwrap();
    stream
}

/// Sends `line` and reads its echo back.
fn round_trip(stream: &mut TcpStream, line: &[u8]) {
    stream.write_all(line).unwrap();
    let mut back = vec![0; line.len()];
    stream
        .read_exact(&mut back)
        .expect("the echo came back: the connection was open");
    assert_eq!(back, line);
}

/// Whether the server has closed `stream`: end of stream, or a reset.
fn closed(stream: &mut TcpStream) -> bool {
    match stream.read(&mut [0; 16]) {
        Ok(0) => true,
        Ok(n) => panic!("{n} bytes from a silent connection"),
        Err(e) if e.kind() == ErrorKind::ConnectionReset => true,
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => false,
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn talking_connections_stay_open_and_silent_ones_close_after_the_idle_timeout() {
    let addr = start();
    let talkers: Vec<_> = (0..EACH)
        .map(|i| {
            std::thread::spawn(move || {
                let mut stream = connect(addr);
                let start = Instant::now();
                let mut lines = 0;
                while start.elapsed() < TALK_FOR {
                    round_trip(&mut stream, format!("talker {i} line {lines}\n").as_bytes());
                    lines += 1;
                    std::thread::sleep(EVERY);
                }
                lines
            })
        })
        .collect();
    let silent: Vec<_> = (0..EACH)
        .map(|i| {
            std::thread::spawn(move || {
                let mut stream = connect(addr);
                // The server arms the idle timeout after it has read the line, so it cannot
                // close the connection sooner than IDLE after the line was sent.
                let sent = Instant::now();
                round_trip(&mut stream, format!("silent {i}\n").as_bytes());
                assert!(
                    closed(&mut stream),
                    "silent {i}: still open after {IO_WITHIN:?}"
                );
                sent.elapsed()
            })
        })
        .collect();
    for t in talkers {
        let lines = t
            .join()
            .expect("a talking connection was closed while talking");
        assert!(lines >= 4, "{lines} lines");
    }
    for (i, t) in silent.into_iter().enumerate() {
        let after = t.join().unwrap();
        assert!(
            after >= IDLE,
            "silent {i} closed early, {after:?} after its line"
        );
        assert!(
            after < CLOSE_WITHIN,
            "silent {i} closed only {after:?} after its line"
        );
    }
}
