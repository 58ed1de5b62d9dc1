//! Test harness: a real store with a manual clock, commands written as inline wire text.

use std::sync::Arc;

use proto_resp::{parse_command, Limits, Protocol};
use store::{Config, ManualClock, Store};

use super::{execute, Session};
use crate::{Counters, Flow, Settings, Shared};

/// 2023-11-14T22:13:20Z, a round Unix time in milliseconds.
pub(crate) const START_MS: u64 = 1_700_000_000_000;

pub(crate) struct Harness {
    pub shared: Shared,
    pub clock: Arc<ManualClock>,
    pub counters: Arc<Counters>,
    pub session: Session,
    pub last_flow: Flow,
}

impl Harness {
    pub fn new() -> Harness {
        let clock = Arc::new(ManualClock::new(START_MS));
        let config = Config {
            memory_bytes: 8 << 20,
            memory_max_bytes: 64 << 20,
            clock: clock.clone(),
            ..Config::default()
        };
        let store = Store::new(config).expect("test store config is valid");
        let shared = Shared::new(store, Settings::default(), 1);
        let counters = shared.core.counters(0);
        Harness { shared, clock, counters, session: Session::default(), last_flow: Flow::Continue }
    }

    /// Runs one command given as wire bytes; returns the reply bytes.
    pub fn run_raw(&mut self, wire: &[u8]) -> Vec<u8> {
        let (command, used) = parse_command(wire, &Limits::default()).expect("test command parses");
        assert_eq!(used, wire.len(), "one command per call");
        let mut out = Vec::new();
        self.last_flow =
            execute(&self.shared, &self.counters, &mut self.session, &command, &mut out);
        out
    }

    /// Runs one command given as its arguments (for values an inline line cannot carry).
    pub fn run_args(&mut self, args: &[&[u8]]) -> Vec<u8> {
        let mut wire = Vec::new();
        proto_resp::compose_command(args, &mut wire);
        self.run_raw(&wire)
    }

    /// Runs one inline command (`SET k "a b"`) and returns the reply as text.
    pub fn run(&mut self, line: &str) -> String {
        let wire = format!("{line}\r\n");
        String::from_utf8_lossy(&self.run_raw(wire.as_bytes())).into_owned()
    }

    /// Runs each (command, expected reply) in order.
    pub fn check(&mut self, table: &[(&str, &str)]) {
        for (line, want) in table {
            let got = self.run(line);
            assert_eq!(got, *want, "{line} ({:?})", self.session.protocol);
        }
    }

    /// Runs a table in RESP3 and restores the protocol afterwards.
    pub fn check3(&mut self, table: &[(&str, &str)]) {
        let before = self.session.protocol;
        self.session.protocol = Protocol::Resp3;
        self.check(table);
        self.session.protocol = before;
    }
}
