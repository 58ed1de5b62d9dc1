//! `--instances N`: each server of a comparison started N times, the way the studies ran
//! several memcached processes per host with the client sharding keys by ketama.
//!
//! ```text
//!   Group = N x Running    same spec, threads, value size and server CPUs; each on its own
//!                          free loopback port (and its own RESP port where it has one)
//!   load                   -s 127.0.0.1:P1,...,127.0.0.1:PN: the runner's ketama ring
//!                          (twemproxy names host:port), preload included
//!   server CPU             the sum over the instances' threads (schedstat)
//! ```
//!
//! With N = 1 a group is the one server, and the load has one server and no ring, as before.

use super::servers::{self, Launch, Running, Spec};
use crate::client::Protocol;

/// The instances of one server; stopped (each by pid) when dropped.
pub struct Group {
    /// At least one.
    pub instances: Vec<Running>,
}

impl Group {
    /// Starts `count` instances of `spec`, one after the other; if one fails, those
    /// already started are stopped (dropped) and the error names the instance.
    pub fn start(
        spec: &Spec,
        launch: &Launch,
        threads: usize,
        cpus: &[usize],
        value_size: usize,
        count: usize,
    ) -> Result<Group, String> {
        let mut instances = Vec::with_capacity(count);
        for i in 0..count.max(1) {
            match servers::start(spec, launch, threads, cpus, value_size) {
                Ok(running) => instances.push(running),
                Err(e) if count > 1 => return Err(format!("instance {} of {count}: {e}", i + 1)),
                Err(e) => return Err(e),
            }
        }
        Ok(Group { instances })
    }

    fn first(&self) -> &Running {
        &self.instances[0]
    }

    pub fn spec(&self) -> &Spec {
        &self.first().spec
    }

    pub fn name(&self) -> &str {
        self.first().name()
    }

    pub fn protocol(&self) -> Protocol {
        self.first().protocol()
    }

    /// The value size the instances were started for.
    pub fn value_size(&self) -> usize {
        self.first().value_size
    }

    /// The instances' main ports, in start order (the order of the ketama server list).
    pub fn ports(&self) -> Vec<u16> {
        self.instances.iter().map(|r| r.port).collect()
    }

    /// The instances' RESP ports, when they have them (`--resp`).
    pub fn resp_ports(&self) -> Option<Vec<u16>> {
        self.instances.iter().map(|r| r.resp_port).collect()
    }

    /// CPU seconds used so far by all instances' threads.
    pub fn cpu_secs(&self) -> f64 {
        self.instances.iter().map(Running::cpu_secs).sum()
    }

    /// CPU seconds used so far by each instance, in start order.
    pub fn instance_cpu_secs(&self) -> Vec<f64> {
        self.instances.iter().map(Running::cpu_secs).collect()
    }

    /// Every instance still running?
    pub fn alive(&mut self) -> bool {
        self.instances.iter_mut().all(Running::alive)
    }

    /// `pid 12, port 3456`, or for several instances `pids 12,13, ports 3456,3457`.
    pub fn describe(&self) -> String {
        let list =
            |f: fn(&Running) -> String| self.instances.iter().map(f).collect::<Vec<_>>().join(",");
        let (pids, ports) = (list(|r| r.pid().to_string()), list(|r| r.port.to_string()));
        if self.instances.len() == 1 {
            format!("pid {pids}, port {ports}")
        } else {
            format!("{} instances: pids {pids}, ports {ports}", self.instances.len())
        }
    }
}
