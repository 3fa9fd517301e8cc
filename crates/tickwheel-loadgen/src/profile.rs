//! `--profile NAME`: workload shapes taken from real systems' defaults. A profile sets the
//! connections, rate, run length, timeouts and slow share; any of those flags given as well
//! overrides it.

use std::time::Duration;

use clap::ValueEnum;

/// A named workload shape. The doc comment of each is its `--help` line, with its source.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Profile {
    /// HTTP keep-alive: 100k connections idle-timed at 75 s (nginx's keepalive_timeout
    /// default), requests at 60 s (nginx's client_body_timeout and send_timeout defaults).
    HttpKeepalive,
    /// RPC deadlines: 250 ms per call, nearly all cancelled by the reply (gRPC sets no
    /// deadline by default; callers pick a few hundred ms), channels idle-timed at 30 min
    /// (grpc-java's idleTimeout default).
    RpcDeadlines,
    /// TCP retransmission: a 200 ms RTO per segment (Linux's TCP_RTO_MIN) cancelled by its
    /// ACK, 1 in 10,000 lost; 2 h keep-alive per flow (Linux's tcp_keepalive_time default).
    TcpRto,
    /// Session keep-alive: a million mostly idle sessions at 60 s (MQTT keep-alive; Eclipse
    /// Paho's default), each reset by a ping every 30 s on average, 10 s to answer a ping.
    SessionKeepalive,
    /// A thundering herd: a million connections opened together, so every first idle timer
    /// (10 s) falls on one deadline.
    Herd,
    /// `compare` only: every profile above in turn, then which implementation wins each
    /// metric family on each.
    All,
}

/// What a profile sets.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Shape {
    pub(crate) connections: u64,
    pub(crate) rate: f64,
    pub(crate) duration: Duration,
    pub(crate) idle_timeout: Duration,
    pub(crate) request_timeout: Duration,
    pub(crate) slow_fraction: f64,
    /// Every connection's first idle timer at the same deadline.
    pub(crate) herd: bool,
}

const fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

impl Profile {
    /// Every profile `all` runs, in order.
    pub(crate) const EACH: [Profile; 5] = [
        Profile::HttpKeepalive,
        Profile::RpcDeadlines,
        Profile::TcpRto,
        Profile::SessionKeepalive,
        Profile::Herd,
    ];

    /// The name on the command line.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Profile::HttpKeepalive => "http-keepalive",
            Profile::RpcDeadlines => "rpc-deadlines",
            Profile::TcpRto => "tcp-rto",
            Profile::SessionKeepalive => "session-keepalive",
            Profile::Herd => "herd",
            Profile::All => "all",
        }
    }

    /// The shape; `None` for `all`, which is not one.
    pub(crate) fn shape(self) -> Option<Shape> {
        Some(match self {
            Profile::HttpKeepalive => Shape {
                connections: 100_000,
                rate: 50_000.0,
                duration: secs(90),
                idle_timeout: secs(75),
                request_timeout: secs(60),
                slow_fraction: 0.0001,
                herd: false,
            },
            Profile::RpcDeadlines => Shape {
                connections: 10_000,
                rate: 200_000.0,
                duration: secs(10),
                idle_timeout: secs(30 * 60),
                request_timeout: Duration::from_millis(250),
                slow_fraction: 0.005,
                herd: false,
            },
            Profile::TcpRto => Shape {
                connections: 100_000,
                rate: 500_000.0,
                duration: secs(5),
                idle_timeout: secs(2 * 3600),
                request_timeout: Duration::from_millis(200),
                slow_fraction: 0.0001,
                herd: false,
            },
            Profile::SessionKeepalive => Shape {
                connections: 1_000_000,
                rate: 1_000_000.0 / 30.0,
                duration: secs(90),
                idle_timeout: secs(60),
                request_timeout: secs(10),
                slow_fraction: 0.001,
                herd: false,
            },
            Profile::Herd => Shape {
                connections: 1_000_000,
                rate: 1_000.0,
                duration: secs(12),
                idle_timeout: secs(10),
                request_timeout: secs(1),
                slow_fraction: 0.01,
                herd: true,
            },
            Profile::All => return None,
        })
    }
}
