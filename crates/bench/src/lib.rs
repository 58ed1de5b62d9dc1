//! `spinel-bench`: a load generator for memcached (text and meta) and Redis (RESP)
//! servers, built on Spinel's own codecs and runtime.
//!
//! ```text
//!   cli ──> runner::Config ──> runner::run ──> threads (engine) ──> report
//!                                 │              │
//!              workload (keys, sizes, mix)   client/{memcache,meta,resp}: compose, parse,
//!              ratelimit (open loop)         verify every value (value.rs)
//!              ketama (sharding)             histogram + stats (per interval, merged)
//!              cluster (Redis Cluster slots, MOVED/ASK)
//! ```
//!
//! Goals:
//! - Measure the server, not the tool: a thread drives more load than one memcached
//!   worker can serve; no allocation per request (buffers are reused per connection).
//! - Trustworthy numbers: values derived from key and version are checked on every get;
//!   errors are counted by kind and printed; an open-loop rate measures latency from each
//!   request's intended send time (no coordinated omission); hdrhistogram percentiles.
//! - Usable as a library: `runner::run(&Config, on_interval)` returns a [`runner::Summary`]
//!   that `report` prints as text or JSON (`spinel-bench compare` builds on this).
//!
//! Beyond get/set: `--structure` maps the sets and gets onto a Redis data type (hash, list,
//! set, zset, stream, geo) or a MULTI/EXEC transaction (`client::family`; a stream's read
//! is a consumer's XREADGROUP and its XACK, sent as a follow-up of the same op), and
//! `spinel-bench memory` measures a server's bytes per hash or sorted-set field, stream
//! entry or geo member.
//!
//! Non-goals: TLS, UDP, the memcached binary protocol.
//!
//! Threads and connections: each thread owns its connections and an epoll
//! [`rt::Poller`]; nothing on the request path is shared between threads. The server's
//! `rt::run` loop only answers input, while a client must send on its own schedule, so the
//! client loop lives here (`engine`) and uses rt's readiness wrapper.

#![forbid(unsafe_code)]

pub mod cli;
pub mod client;
pub mod cluster;
pub mod compare;
pub mod conn;
pub mod engine;
pub mod histogram;
pub mod ketama;
pub mod memory;
pub mod ratelimit;
pub mod report;
pub mod rng;
pub mod runner;
pub mod stats;
pub mod value;
pub mod workload;

pub use runner::{run, Config, Stop, Summary};
