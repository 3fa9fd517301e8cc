//! A TCP echo server on smol, not tokio, whose per-connection idle timeouts are tickwheel
//! [`timeout`]s: tickwheel-async needs nothing from the executor but `std`'s `Waker`.
//!
//! ```text
//! cargo run --release -p tickwheel-async --example smol_echo -- 127.0.0.1:7000 2000
//! ```
//! Arguments: the address to listen on (default `127.0.0.1:0`, a free port) and the idle
//! timeout in milliseconds (default 10,000). It prints `listening on ADDR`, then echoes
//! whatever each connection sends, and closes a connection that sends nothing for longer than
//! the idle timeout. Try it with `nc ADDR`: type a few lines, then wait.
//!
//! Each read is raced against its idle timeout with [`timeout`]: a read that completes at its
//! first poll arms no timer, and one that waits arms one, cancelled when the read wins (the
//! future is dropped). Each write is bounded the same way, so a peer that stops reading cannot
//! hold a connection forever. smol runs the sockets and the tasks; the driver thread of
//! tickwheel-async's default timers (started on first use) fires the timeouts and wakes the
//! tasks.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use smol::io::{AsyncReadExt, AsyncWriteExt};
use smol::net::{TcpListener, TcpStream};
use tickwheel_async::timeout;

/// Accepts connections on `listener` forever, each served on its own task of `executor`:
/// echoed back, and closed once idle (nothing received) for longer than `idle`.
pub async fn serve(executor: &smol::Executor<'_>, listener: TcpListener, idle: Duration) {
    loop {
        match listener.accept().await {
            Ok((stream, _peer)) => {
                // Every way out (idle, peer closed, I/O error) drops the stream: closed.
                executor.spawn(echo(stream, idle)).detach();
            }
            // Out of file descriptors, or a connection reset before it was accepted: report,
            // back off a little, and keep serving.
            Err(e) => {
                eprintln!("accept: {e}");
                tickwheel_async::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// Echoes `stream` until the peer closes it, an I/O error, or `idle` passes with nothing read.
async fn echo(mut stream: TcpStream, idle: Duration) -> io::Result<()> {
    let mut buf = vec![0; 4096];
    loop {
        // `Elapsed` converts to an `io::Error` of kind `TimedOut`: idle ends the connection.
        let n = timeout(idle, stream.read(&mut buf)).await??;
        if n == 0 {
            return Ok(());
        }
        timeout(idle, stream.write_all(&buf[..n])).await??;
    }
}

/// The command line: `[IP:PORT] [IDLE_MS]`.
fn parse_args() -> Result<(SocketAddr, Duration), String> {
    let mut args = std::env::args().skip(1);
    let addr = match args.next() {
        Some(a) => a
            .parse()
            .map_err(|_| format!("bad address {a:?}: expected IP:PORT"))?,
        None => SocketAddr::from(([127, 0, 0, 1], 0)),
    };
    let idle = match args.next() {
        Some(ms) => Duration::from_millis(
            ms.parse()
                .map_err(|_| format!("bad idle timeout {ms:?}: expected milliseconds"))?,
        ),
        None => Duration::from_secs(10),
    };
    if let Some(extra) = args.next() {
        return Err(format!(
            "unexpected argument {extra:?}\nusage: smol_echo [IP:PORT] [IDLE_MS]"
        ));
    }
    Ok((addr, idle))
}

// Unused when a test includes this file as a module to call `serve`.
#[allow(dead_code)]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (addr, idle) = parse_args().unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    let executor = smol::Executor::new();
    smol::block_on(executor.run(async {
        let listener = TcpListener::bind(addr).await?;
        println!("listening on {}", listener.local_addr()?);
        serve(&executor, listener, idle).await;
        Ok(())
    }))
}
