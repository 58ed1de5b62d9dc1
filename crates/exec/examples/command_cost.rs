//! What a Redis command costs in exec, in process (no sockets, no kernel): GET and SET of
//! 20-byte values, in batches of 32 as a pipelined connection sends them. Built with and
//! without `--features no-command-stats`, it measures what the per-command counts, latency
//! histograms and SLOWLOG timing cost (scripts/metrics_overhead.py runs both).
//!
//! Prints one line per workload: nanoseconds per command, the best of the rounds, with the
//! slow log on (Redis's default, 10 ms: every SET is timed) and off (`-noslowlog`: only the
//! histogram's sample); then what a pair of clock reads costs.

use std::{hint::black_box, sync::Arc, time::Instant};

const KEYS: usize = 1000;
const BATCH: usize = 32;
const COMMANDS_PER_ROUND: usize = 2_000_000;
const ROUNDS: usize = 7;

fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// The input of one batch per key group: `BATCH` commands back to back.
fn batches(command: &[u8]) -> Vec<Vec<u8>> {
    (0..KEYS / BATCH)
        .map(|b| {
            let mut input = Vec::new();
            for i in 0..BATCH {
                let key = format!("key:{:05}", b * BATCH + i);
                let value = [b'v'; 20];
                let args: Vec<&[u8]> = match command {
                    b"SET" => vec![b"SET", key.as_bytes(), &value],
                    _ => vec![b"GET", key.as_bytes()],
                };
                input.extend_from_slice(&encode(&args));
            }
            input
        })
        .collect()
}

fn main() {
    let config = store::Config { memory_max_bytes: 64 << 20, ..Default::default() };
    let store = store::Store::new(config).expect("store");
    let shared = Arc::new(exec::Shared::new(store, exec::Settings::default(), 1));
    let counters = shared.core.counters(0);
    let mut session = exec::resp::Session::connect(&shared, "127.0.0.1:1", "127.0.0.1:6379");
    let mut out = Vec::with_capacity(1 << 16);
    let mut run_batch = |input: &[u8], out: &mut Vec<u8>| {
        let mut pos = 0;
        let mut storage = proto_resp::ArgStorage::default();
        let limits = proto_resp::Limits::default();
        while pos < input.len() {
            let (command, used) =
                proto_resp::parse_command_in(&input[pos..], &limits, storage).expect("whole");
            pos += used;
            exec::resp::execute(&shared, &counters, &mut session, &command, out);
            storage = command.into_storage();
        }
    };
    for b in batches(b"SET") {
        run_batch(&b, &mut out);
    }
    let slowlog = &shared.redis.slowlog.slower_than_us;
    for (name, slowlog_us) in
        [("GET", 10_000), ("SET", 10_000), ("GET-noslowlog", -1), ("SET-noslowlog", -1)]
    {
        slowlog.store(slowlog_us, std::sync::atomic::Ordering::Relaxed);
        let inputs = batches(&name.as_bytes()[..3]);
        let mut best = f64::MAX;
        for _ in 0..ROUNDS {
            let started = Instant::now();
            let mut done = 0;
            while done < COMMANDS_PER_ROUND {
                for input in &inputs {
                    out.clear();
                    run_batch(input, &mut out);
                    black_box(&out);
                    done += BATCH;
                }
            }
            best = best.min(started.elapsed().as_nanos() as f64 / done as f64);
        }
        println!("{name} {best:.1}");
    }
    // What a clock read costs (a fast command pays two in every `SAMPLE`; a command not
    // flagged fast pays two each while the slow log is on).
    let mut best = f64::MAX;
    for _ in 0..ROUNDS {
        let started = Instant::now();
        for _ in 0..COMMANDS_PER_ROUND {
            black_box(exec::latency::nanos_since(black_box(exec::latency::now())));
        }
        best = best.min(started.elapsed().as_nanos() as f64 / COMMANDS_PER_ROUND as f64);
    }
    println!("clock-pair {best:.1}");
}
