//! The modelled server both drivers share: a table of connections, each with its idle timer,
//! and the requests in flight, each with its deadline. The drivers decide *when* things happen
//! (virtual or real time); this module decides *what* each event does to the timer:
//!
//! - an **arrival** resets its connection's idle timer (or inserts one if the connection had
//!   gone idle and closed), inserts the request's deadline, and schedules its response;
//! - a **response** cancels its request's deadline; if that timer already fired, the cancel
//!   misses (the key is stale) and the response counts as late;
//! - a **fire** of an idle timer closes the connection; a fire of a request deadline is a
//!   timeout. Either way its lateness is recorded.
//!
//! Payloads are `u64`: [`IDLE`] plus the connection for idle timers, the deadline in
//! nanoseconds since the start for request deadlines (so the real driver knows each timer's
//! intended instant without a lookup).
//!
//! Memory is proportional to live timers: one key and one deadline per connection, one heap
//! entry per request in flight.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::{Duration, Instant, SystemTime};

use tickwheel::{Expired, Tick, Timer, TimerKey};

use crate::config::{Clock, Workload};
use crate::counter::CallClock;
use crate::error::Error;
use crate::measure::{CallCosts, Hist, Intervals, Probe, LATENESS_MAX};
use crate::outcome::Outcome;
use crate::units::nanos;
use crate::workload::{Arrival, Generator};

/// Flag bit of an idle timer's payload; the low bits are the connection.
pub(crate) const IDLE: u64 = 1 << 63;

/// The server state around the timer under test.
pub(crate) struct Server<X> {
    /// The timer, measured.
    pub(crate) probe: Probe<X>,
    /// Per connection: the key of its pending idle timer, `None` once it fired (closed).
    idle: Vec<Option<TimerKey>>,
    /// Per connection: its idle deadline in ns since the start.
    idle_due_ns: Vec<u64>,
    /// Responses in flight: (due ns, sequence, the request deadline's key).
    responses: BinaryHeap<Reverse<(u64, u64, TimerKey)>>,
    tick_ns: u64,
    idle_ns: u64,
    request_ns: u64,
    seq: u64,
    /// Requests that arrived.
    pub(crate) arrivals: u64,
    /// Idle timers that fired.
    pub(crate) idle_fired: u64,
    /// Request deadlines that fired.
    pub(crate) request_fired: u64,
    /// Fires before their deadline (must stay 0).
    pub(crate) early_fires: u64,
    /// Lateness of each fire, in ns.
    pub(crate) lateness: Hist,
    lateness_intervals: Intervals,
    /// Most timers pending at once.
    pub(crate) peak_live: u64,
    /// `allocated_bytes()` when `peak_live` was reached.
    pub(crate) allocated_at_peak: u64,
    /// When this run started, for the `.hlog`.
    started: SystemTime,
}

impl<X: Timer<u64>> Server<X> {
    /// A server with every connection open and its idle timer pending, deadlines spread over one
    /// idle timeout; every timer call's cost noted in (or, in a charged pass, charged from)
    /// `costs`.
    ///
    /// # Errors
    /// [`Error::Contract`] when the timer refuses an insert.
    pub(crate) fn open(
        timer: X,
        workload: &Workload,
        clock: &CallClock,
        costs: Option<CallCosts>,
    ) -> Result<Self, Error> {
        let connections = workload.connections as usize;
        let mut probe = Probe::new(timer, clock.clone(), workload.duration);
        probe.costs = costs;
        let mut server = Self {
            probe,
            idle: Vec::with_capacity(connections),
            idle_due_ns: Vec::with_capacity(connections),
            responses: BinaryHeap::new(),
            tick_ns: workload.tick_ns(),
            idle_ns: nanos(workload.idle_timeout),
            request_ns: nanos(workload.request_timeout),
            seq: 0,
            arrivals: 0,
            idle_fired: 0,
            request_fired: 0,
            early_fires: 0,
            lateness: Hist::new(LATENESS_MAX),
            lateness_intervals: Intervals::for_run(LATENESS_MAX, workload.duration),
            peak_live: 0,
            allocated_at_peak: 0,
            started: SystemTime::now(),
        };
        for (conn, due_ns) in Generator::initial_idle_deadlines(workload).enumerate() {
            let key = server.insert(due_ns, IDLE | conn as u64)?;
            server.idle.push(Some(key));
            server.idle_due_ns.push(due_ns);
        }
        server.note_live();
        Ok(server)
    }

    /// The tick a deadline `ns` after the start rounds up to.
    fn tick_of(&self, ns: u64) -> Tick {
        ns.div_ceil(self.tick_ns)
    }

    fn insert(&mut self, due_ns: u64, payload: u64) -> Result<TimerKey, Error> {
        let tick = self.tick_of(due_ns);
        self.probe
            .insert(tick, payload)
            .map_err(|e| Error::Contract(format!("an unbounded timer refused an insert: {e}")))
    }

    fn note_live(&mut self) {
        let live = self.probe.timer().len() as u64;
        if live > self.peak_live {
            self.peak_live = live;
            self.allocated_at_peak = self.probe.timer().allocated_bytes() as u64;
        }
    }

    /// Handles one request arrival at its intended time `arrival.at_ns`.
    ///
    /// # Errors
    /// [`Error::Contract`] when the timer refuses an insert or a reset of a pending key.
    pub(crate) fn arrive(&mut self, arrival: Arrival) -> Result<(), Error> {
        self.arrivals += 1;
        let conn = arrival.conn as usize;
        let idle_due = arrival.at_ns.saturating_add(self.idle_ns);
        self.idle_due_ns[conn] = idle_due;
        match self.idle[conn] {
            Some(key) => {
                let tick = self.tick_of(idle_due);
                self.probe.reset(key, tick).map_err(|e| {
                    Error::Contract(format!("reset of a pending idle timer failed: {e}"))
                })?;
            }
            None => {
                let key = self.insert(idle_due, IDLE | conn as u64)?;
                self.idle[conn] = Some(key);
            }
        }
        let request_due = arrival.at_ns.saturating_add(self.request_ns);
        let key = self.insert(request_due, request_due & !IDLE)?;
        self.seq += 1;
        let response_at = arrival.at_ns.saturating_add(arrival.service_ns);
        self.responses.push(Reverse((response_at, self.seq, key)));
        self.note_live();
        Ok(())
    }

    /// When the next response is due, in ns since the start.
    pub(crate) fn next_response_ns(&self) -> Option<u64> {
        self.responses.peek().map(|Reverse((at, _, _))| *at)
    }

    /// Delivers the earliest response: cancels its request's deadline (a miss if it fired).
    pub(crate) fn respond(&mut self) {
        if let Some(Reverse((_, _, key))) = self.responses.pop() {
            self.probe.cancel(key);
        }
    }

    /// The intended deadline of a fired timer, in ns since the start.
    pub(crate) fn due_ns(&self, expired: &Expired<u64>) -> u64 {
        if expired.payload & IDLE != 0 {
            self.idle_due_ns[(expired.payload & !IDLE) as usize]
        } else {
            expired.payload
        }
    }

    /// Accounts one fired timer with its lateness (`None` when it fired early).
    ///
    /// # Errors
    /// [`Error::Contract`] when an idle timer fires that the table says is not pending.
    pub(crate) fn fired(
        &mut self,
        expired: &Expired<u64>,
        lateness: Option<u64>,
    ) -> Result<(), Error> {
        match lateness {
            Some(late) => {
                self.lateness.record(late);
                self.lateness_intervals.record(late);
            }
            None => self.early_fires += 1,
        }
        if expired.payload & IDLE != 0 {
            let conn = (expired.payload & !IDLE) as usize;
            if self.idle.get(conn).copied().flatten() != Some(expired.key) {
                return Err(Error::Contract(format!(
                    "idle timer of connection {conn} fired but was not pending (fired twice?)"
                )));
            }
            self.idle[conn] = None;
            self.idle_fired += 1;
        } else {
            self.request_fired += 1;
        }
        Ok(())
    }

    /// Closes every whole interval that ends by run time `at`.
    pub(crate) fn close_intervals(&mut self, at: Duration) {
        self.lateness_intervals.advance(at);
        self.probe.cost_intervals.advance(at);
    }

    /// Ends the run at tick `now` after `run_time`: times the [cost runs](crate::cost_runs)
    /// there, drains what is left, splitting it into overdue (deadline at or before `now`) and
    /// still pending, and gathers the outcome.
    ///
    /// # Errors
    /// [`Error::Contract`] when the cost runs find the timer broken, or when the run made other
    /// calls than the earlier repetitions of its [`CallCosts`] log.
    pub(crate) fn finish(
        mut self,
        clock: Clock,
        now: Tick,
        run_time: Duration,
        wall: Instant,
        call_clock: &CallClock,
    ) -> Result<Outcome, Error> {
        if let Some(log) = &mut self.probe.costs {
            log.end_run(self.probe.calls)?;
        }
        let stats = self.probe.timer().stats();
        let run_costs = crate::cost_runs::measure(
            self.probe.timer_mut(),
            call_clock,
            now,
            self.request_ns.div_ceil(self.tick_ns),
            self.idle_ns.div_ceil(self.tick_ns),
        )?;
        let busy = self.probe.estimated_busy();
        let name = self.probe.timer().name();
        let left = self.probe.timer_mut().drain();
        let overdue_at_end = left.iter().filter(|e| e.deadline <= now).count() as u64;
        let calls = self.probe.calls;
        Ok(Outcome {
            timer: name,
            clock,
            threads: None,
            arrivals: self.arrivals,
            scheduled: calls.inserted,
            cancelled: calls.cancelled,
            late_responses: calls.cancel_misses,
            reset: calls.reset,
            fired: calls.fired,
            idle_fired: self.idle_fired,
            request_fired: self.request_fired,
            drained: 0,
            early_fires: self.early_fires,
            overdue_at_end,
            pending_at_end: left.len() as u64 - overdue_at_end,
            timer_calls: calls.total(),
            busy,
            run_time,
            wall: wall.elapsed(),
            cost: self.probe.cost,
            cost_intervals: self.probe.cost_intervals.finish(run_time),
            lateness: self.lateness,
            lateness_intervals: self.lateness_intervals.finish(run_time),
            arrival_lag: None,
            arrivals_intended: self.arrivals,
            peak_live: self.peak_live,
            allocated_at_peak: self.allocated_at_peak,
            peak_rss_bytes: None,
            started: self.started,
            run_costs: Some(run_costs),
            stats,
            slow_calls: self.probe.slow,
            call_costs: self.probe.costs,
            min_cost: None,
        })
    }
}
