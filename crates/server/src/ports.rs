//! Connections per listening port (`spinel_connections{listener,port}` and
//! `spinel_connections_accepted_total`): one pair of counters per kind of listener, the
//! four tags of `worker.rs`, each of which is one port (or the memcached Unix socket, which
//! replaces the memcached TCP port).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::worker::{TAG_MEMCACHE, TAG_MEMCACHE_TLS, TAG_RESP, TAG_RESP_TLS};

/// One listener kind's counts.
#[derive(Debug, Default)]
struct Counts {
    open: AtomicU64,
    accepted: AtomicU64,
}

/// A listener kind as the metrics label it: its name and its port (or socket path).
#[derive(Debug, Clone)]
pub struct Label {
    pub listener: &'static str,
    pub port: String,
}

/// Counts for each tag, labelled; only the listeners configured are shown.
#[derive(Debug, Default)]
pub struct Ports {
    counts: [Counts; 4],
    labels: [Option<Label>; 4],
}

impl Ports {
    /// `labels`: (tag, port or path) of each listener the server has.
    pub fn new(labels: impl IntoIterator<Item = (u32, String)>) -> Ports {
        let mut ports = Ports::default();
        for (tag, port) in labels {
            let listener = match tag {
                TAG_MEMCACHE => "memcache",
                TAG_RESP => "resp",
                TAG_MEMCACHE_TLS => "memcache_tls",
                TAG_RESP_TLS => "resp_tls",
                _ => continue,
            };
            ports.labels[tag as usize] = Some(Label { listener, port });
        }
        ports
    }

    pub fn opened(&self, tag: u32) {
        if let Some(counts) = self.counts.get(tag as usize) {
            counts.open.fetch_add(1, Relaxed);
            counts.accepted.fetch_add(1, Relaxed);
        }
    }

    pub fn closed(&self, tag: u32) {
        if let Some(counts) = self.counts.get(tag as usize) {
            counts.open.fetch_sub(1, Relaxed);
        }
    }

    /// (label, open now, accepted in all) of each listener the server has.
    pub fn snapshot(&self) -> Vec<(Label, u64, u64)> {
        self.labels
            .iter()
            .zip(&self.counts)
            .filter_map(|(label, counts)| {
                let label = label.clone()?;
                Some((label, counts.open.load(Relaxed), counts.accepted.load(Relaxed)))
            })
            .collect()
    }
}
