//! A load client for the example servers: many loopback connections in one mio loop, each
//! playing a role (busy, idle, or stuck mid-request), recording when the server closed it.
//!
//! The one copy, shared by path by both example servers (this event-loop server and
//! `tickwheel-service`'s threaded one), their demos and integration tests, and the load
//! generator's trace test. Bounded: it stops after `max_run` at the latest.

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};

/// What a connection does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// Sends a line every `ping_every` until the end: must stay open.
    Busy,
    /// Sends one line, then nothing: the server must close it after its idle timeout.
    Idle,
    /// Sends one line, then half a request line (no newline), then nothing: a server with a
    /// request timeout closes it after that.
    Stuck,
}

/// How one connection ended.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Outcome {
    pub(crate) role: Role,
    /// Time from the connection's last send to the server closing it (`None`: still open).
    pub(crate) closed_after: Option<Duration>,
    /// Echoed bytes received.
    pub(crate) echoed: usize,
}

/// Client settings.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    pub(crate) roles: Vec<Role>,
    pub(crate) ping_every: Duration,
    /// Keep going at least this long (so busy connections outlive the idle timeout) ...
    pub(crate) min_run: Duration,
    /// ... and until every non-busy connection is closed, but never longer than this.
    pub(crate) max_run: Duration,
}

struct Conn {
    stream: TcpStream,
    role: Role,
    last_send: Instant,
    closed_at: Option<Instant>,
    echoed: usize,
}

/// The roles for `n` connections: `pattern` over and over.
pub(crate) fn mix(n: usize, pattern: &[Role]) -> Vec<Role> {
    pattern.iter().copied().cycle().take(n).collect()
}

/// What [`run`] returns.
pub(crate) struct Run {
    /// One per connection, in `Plan::roles` order.
    pub(crate) outcomes: Vec<Outcome>,
    /// The client ends, still open where the server did not close them: dropping them closes
    /// the rest (so the caller decides when busy connections go away).
    pub(crate) streams: Vec<TcpStream>,
    /// How long connecting them all took.
    pub(crate) connect_time: Duration,
}

/// Connects every connection, plays the roles, returns each one's outcome.
pub(crate) fn run(addr: SocketAddr, plan: &Plan) -> io::Result<Run> {
    let mut poll = Poll::new()?;
    let mut events = Events::with_capacity(1024);
    let mut conns: Vec<Conn> = Vec::with_capacity(plan.roles.len());
    let connect_start = Instant::now();
    let mut next_ping = connect_start + plan.ping_every;
    for (i, &role) in plan.roles.iter().enumerate() {
        // Connecting a thousand sockets takes a while on a loaded machine: keep the busy ones
        // that are already connected busy meanwhile.
        if Instant::now() >= next_ping {
            ping(&mut conns);
            next_ping += plan.ping_every;
            // Record closes as they happen, without waiting.
            handle_events(&mut poll, &mut events, &mut conns, Some(Duration::ZERO))?;
        }
        let std = std::net::TcpStream::connect(addr)?;
        std.set_nodelay(true)?;
        // Wait for the echo of a first line before opening the next connection: it paces the
        // client to the server (a full accept queue would otherwise stall `connect` for a
        // one-second SYN retry) and proves the connection is served.
        std.set_read_timeout(Some(Duration::from_secs(10)))?;
        // Taken just before each send: the server's read, and so its timer, can only be later
        // (a timestamp taken after `write` could be late if this thread is preempted).
        let mut last_send = Instant::now();
        (&std).write_all(b"hello\n")?;
        let mut echo = [0u8; 6];
        (&std).read_exact(&mut echo)?;
        if role == Role::Stuck {
            last_send = Instant::now();
            (&std).write_all(b"GET /never-finished")?;
        }
        std.set_nonblocking(true)?;
        let mut stream = TcpStream::from_std(std);
        poll.registry()
            .register(&mut stream, Token(i), Interest::READABLE)?;
        conns.push(Conn {
            stream,
            role,
            last_send,
            closed_at: None,
            echoed: echo.len(),
        });
    }
    let start = Instant::now();
    let connect_time = start - connect_start;
    loop {
        let now = Instant::now();
        let elapsed = now - start;
        let all_closed = conns
            .iter()
            .all(|c| c.role == Role::Busy || c.closed_at.is_some());
        if elapsed >= plan.max_run || (elapsed >= plan.min_run && all_closed) {
            break;
        }
        if now >= next_ping {
            ping(&mut conns);
            next_ping += plan.ping_every;
        }
        let wait = next_ping
            .saturating_duration_since(Instant::now())
            .min(Duration::from_millis(10));
        handle_events(&mut poll, &mut events, &mut conns, Some(wait))?;
    }
    let outcomes = conns
        .iter()
        .map(|c| Outcome {
            role: c.role,
            closed_after: c
                .closed_at
                .map(|t| t.saturating_duration_since(c.last_send)),
            echoed: c.echoed,
        })
        .collect();
    Ok(Run {
        outcomes,
        streams: conns.into_iter().map(|c| c.stream).collect(),
        connect_time,
    })
}

/// Reads what arrived (echoes, end-of-file) and records closes.
fn handle_events(
    poll: &mut Poll,
    events: &mut Events,
    conns: &mut [Conn],
    timeout: Option<Duration>,
) -> io::Result<()> {
    let mut buf = [0u8; 4096];
    match poll.poll(events, timeout) {
        Err(e) if e.kind() != io::ErrorKind::Interrupted => return Err(e),
        _ => {}
    }
    for event in events.iter() {
        let c = &mut conns[event.token().0];
        if c.closed_at.is_some() {
            continue;
        }
        loop {
            match c.stream.read(&mut buf) {
                Ok(0) => {
                    c.closed_at = Some(Instant::now());
                    break;
                }
                Ok(n) => c.echoed += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    c.closed_at = Some(Instant::now());
                    break;
                }
            }
        }
        if c.closed_at.is_some() {
            let _ = poll.registry().deregister(&mut c.stream);
        }
    }
    Ok(())
}

/// Sends a line on every open busy connection.
fn ping(conns: &mut [Conn]) {
    for c in conns
        .iter_mut()
        .filter(|c| c.role == Role::Busy && c.closed_at.is_none())
    {
        let before = Instant::now();
        match c.stream.write(b"ping\n") {
            Ok(_) => c.last_send = before,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(_) => c.closed_at = Some(Instant::now()),
        }
    }
}

/// Echoed bytes received by the connections of `role`.
pub(crate) fn echoed(outcomes: &[Outcome], role: Role) -> usize {
    outcomes
        .iter()
        .filter(|o| o.role == role)
        .map(|o| o.echoed)
        .sum()
}

/// Counts per role: (connections, closed), and the shortest and longest close delay.
pub(crate) fn summary(
    outcomes: &[Outcome],
    role: Role,
) -> (usize, usize, Option<Duration>, Option<Duration>) {
    let of_role: Vec<_> = outcomes.iter().filter(|o| o.role == role).collect();
    let closed: Vec<Duration> = of_role.iter().filter_map(|o| o.closed_after).collect();
    (
        of_role.len(),
        closed.len(),
        closed.iter().min().copied(),
        closed.iter().max().copied(),
    )
}

/// Raises the soft open-files limit to fit `sockets` (both ends count) plus slack; returns the
/// limit in force.
pub(crate) fn ensure_fds(sockets: u64) -> u64 {
    let want = sockets + 256;
    match rlimit::increase_nofile_limit(want) {
        Ok(limit) => limit,
        Err(_) => rlimit::getrlimit(rlimit::Resource::NOFILE).map_or(0, |(soft, _)| soft),
    }
}
