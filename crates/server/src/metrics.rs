//! `--metrics-port`: a small HTTP/1.1 server on the `-l` addresses for Prometheus scrapes
//! (`GET /metrics`, text format 0.0.4, from `exec::metrics::render`) and probes (`/healthz`,
//! `/readyz`). One thread per address, one request per connection, with short timeouts:
//! scrapes are rare, so it stays off the event loops and costs them nothing.

use std::{
    fmt::Write as _,
    io::{Read, Write},
    net::{IpAddr, SocketAddr, TcpListener, TcpStream},
    sync::Arc,
    time::Duration,
};

use exec::Shared;

/// The most bytes of a request head read; a scrape's is a few hundred.
const HEAD_BYTES_MAX: usize = 8 * 1024;
const IO_TIMEOUT: Duration = Duration::from_secs(5);
const TEXT_FORMAT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Binds the metrics port on every listen address (before privileges are dropped).
pub fn bind(addresses: &[IpAddr], port: u16) -> Result<Vec<TcpListener>, String> {
    addresses
        .iter()
        .map(|ip| {
            let addr = SocketAddr::new(*ip, port);
            // The metrics port has no default: named, it must open.
            TcpListener::bind(addr)
                .map_err(|e| format!("--metrics-port {port}: cannot listen on {addr}: {e}"))
        })
        .collect()
}

/// What a scrape reads: the shared state, and each worker loop's own figures.
struct Sources {
    shared: Arc<Shared>,
    loops: Vec<Arc<rt::LoopStats>>,
    ports: Arc<crate::ports::Ports>,
}

/// Serves scrapes on each listener from a thread of its own, until the process ends.
pub fn spawn(
    listeners: Vec<TcpListener>,
    shared: &Arc<Shared>,
    loops: &[Arc<rt::LoopStats>],
    ports: &Arc<crate::ports::Ports>,
) -> Result<(), String> {
    let sources = Arc::new(Sources {
        shared: Arc::clone(shared),
        loops: loops.to_vec(),
        ports: Arc::clone(ports),
    });
    for listener in listeners {
        let sources = Arc::clone(&sources);
        std::thread::Builder::new()
            .name("spinel-metrics".into())
            .spawn(move || serve(&listener, &sources))
            .map_err(|e| format!("cannot start the metrics thread: {e}"))?;
    }
    Ok(())
}

fn serve(listener: &TcpListener, sources: &Sources) {
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else { continue };
        if let Err(e) = answer(&mut stream, sources) {
            tracing::debug!("metrics request failed: {e}");
        }
    }
}

fn answer(stream: &mut TcpStream, sources: &Sources) -> std::io::Result<()> {
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    let head = read_head(stream)?;
    let (status, content_type, body) = respond(&head, sources);
    let header = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(header.as_bytes())?;
    stream.write_all(body.as_bytes())?;
    stream.flush()
}

/// The request head, up to its blank line (or what came before the peer stopped).
fn read_head(stream: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(512);
    let mut chunk = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < HEAD_BYTES_MAX {
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&chunk[..n]);
    }
    Ok(head)
}

/// Status line, content type and body for a request head.
fn respond(head: &[u8], sources: &Sources) -> (&'static str, &'static str, String) {
    let line = head.split(|&b| b == b'\r' || b == b'\n').next().unwrap_or_default();
    let mut words = line.split(|&b| b == b' ');
    let (method, target) = (words.next().unwrap_or_default(), words.next().unwrap_or_default());
    let path = target.split(|&b| b == b'?').next().unwrap_or_default();
    if method != b"GET" && method != b"HEAD" {
        return ("405 Method Not Allowed", "text/plain", "only GET\n".into());
    }
    match path {
        b"/metrics" => ("200 OK", TEXT_FORMAT, render(sources)),
        b"/healthz" => ("200 OK", "text/plain", "ok\n".into()),
        b"/readyz" => ("200 OK", "text/plain", "ready\n".into()),
        _ => ("404 Not Found", "text/plain", "not found: try /metrics\n".into()),
    }
}

/// The exposition: the shared counters' families, then the worker loops' and the ports'.
fn render(sources: &Sources) -> String {
    let mut out = exec::metrics::render(&sources.shared);
    render_loops(sources, &mut out);
    render_ports(sources, &mut out);
    out
}

/// A family of per-port samples: name, type, help, and the value from (open, accepted).
type PortFamily = (&'static str, &'static str, &'static str, fn(u64, u64) -> u64);

/// Open and accepted connections of each listening port.
fn render_ports(sources: &Sources, out: &mut String) {
    let ports = sources.ports.snapshot();
    let families: [PortFamily; 2] = [
        ("spinel_connections", "gauge", "Connections open now, by listening port.", |open, _| open),
        (
            "spinel_connections_accepted_total",
            "counter",
            "Connections accepted, by listening port.",
            |_, accepted| accepted,
        ),
    ];
    for (name, kind, help, value) in families {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for (label, open, accepted) in &ports {
            let (listener, port) = (label.listener, escape(&label.port));
            let n = value(*open, *accepted);
            let _ = writeln!(out, "{name}{{listener=\"{listener}\",port=\"{port}\"}} {n}");
        }
    }
}

/// A label value as the text format writes it: backslash, quote and newline escaped.
fn escape(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// Each worker loop's busy time and wake-ups.
fn render_loops(sources: &Sources, out: &mut String) {
    let families = [
        (
            "spinel_loop_busy_seconds_total",
            "Time each worker loop spent working between waits (its utilisation is the rate).",
            &(|stats: &rt::LoopStats| stats.busy_ns() as f64 / 1e9) as &dyn Fn(&rt::LoopStats) -> f64,
        ),
        (
            "spinel_loop_wakeups_total",
            "Wake-ups of each worker loop (requests per wake-up: the requests' rate over this one's).",
            &|stats: &rt::LoopStats| stats.wakeups() as f64,
        ),
    ];
    for (name, help, value) in families {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
        for (thread, stats) in sources.loops.iter().enumerate() {
            let _ = writeln!(out, "{name}{{thread=\"{thread}\"}} {}", value(stats));
        }
    }
    // Worker `i` runs loop `i` and counts into `counters(i)`.
    let name = "spinel_loop_requests_total";
    let _ = writeln!(
        out,
        "# HELP {name} Requests each worker loop executed, of both protocols (over the \
         wake-ups: requests per wake-up).\n# TYPE {name} counter"
    );
    for thread in 0..sources.loops.len() {
        let counters = sources.shared.core.counters(thread);
        let requests = counters.total_commands.load(std::sync::atomic::Ordering::Relaxed);
        let _ = writeln!(out, "{name}{{thread=\"{thread}\"}} {requests}");
    }
}
