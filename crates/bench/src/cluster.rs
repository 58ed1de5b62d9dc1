//! Redis Cluster as a client sees it (`--cluster`): the slot map from CLUSTER SLOTS, and
//! the -MOVED / -ASK redirects that correct it.
//!
//! ```text
//!   start:    seeds (--server) --CLUSTER SLOTS--> ranges (start, end, primary host:port)
//!             --> SlotMap: owner[16384] -> node index; nodes = the primaries' addresses
//!   request:  key --key_slot (CRC16, hash tags)--> slot --owner--> node --> that node's
//!             connection of the same client (engine: node * connections + client)
//!   -MOVED s host:port   the slot lives there now: owner[s] = that node (a new node gets
//!                        connections), CLUSTER SLOTS is fetched again from it (at most
//!                        every REFRESH_INTERVAL), and the request is sent again there
//!   -ASK s host:port     this one request is sent there once, after ASKING; the map
//!                        stays as it is (the slot is being migrated)
//! ```
//!
//! A followed redirect is counted (`moved`, `ask`), not an error. A request redirected more
//! than [`REDIRECTS_MAX`] times, or to a node that cannot be reached, is an error
//! (`redirect`), as is any other error reply.
//!
//! Multi-key gets are split by slot, not only by node: Redis Cluster answers MGET with
//! -CROSSSLOT when its keys hash to different slots, even when one node owns them all. So
//! with `--keys-per-get N` and the bench's plain keys (`key:000…`, no hash tag), a get
//! becomes one GET or MGET per distinct slot; `get_keys` still counts the keys asked.

use std::{
    io::{Read, Write},
    net::{SocketAddr, TcpStream, ToSocketAddrs},
    time::Duration,
};

use proto_resp::{cluster::SLOTS, compose_command, parse_reply, ParseError, Value};

/// Redirects one request may follow before it counts as an error (a redirect loop, or a
/// cluster in the middle of a long resharding).
pub const REDIRECTS_MAX: u8 = 5;
/// The slot map is fetched again after a MOVED at most this often; MOVEDs in between
/// correct their own slot only.
pub const REFRESH_INTERVAL: Duration = Duration::from_millis(100);
/// Connect and read timeout of a CLUSTER SLOTS fetch.
const FETCH_TIMEOUT: Duration = Duration::from_secs(2);
/// A CLUSTER SLOTS reply larger than this is refused (16384 single-slot ranges with a
/// replica each fit well within it).
const FETCH_BYTES_MAX: usize = 16 << 20;

/// One range of CLUSTER SLOTS: slots `start..=end` are served by `primary`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotRange {
    pub start: u16,
    pub end: u16,
    pub primary: SocketAddr,
}

/// Which node owns each slot; nodes are indexes into `nodes` (the engine's server list).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotMap {
    /// Per slot: an index into `nodes`, or [`SlotMap::UNOWNED`].
    owner: Box<[u16]>,
    pub nodes: Vec<SocketAddr>,
}

impl SlotMap {
    /// A slot no range covered.
    pub const UNOWNED: u16 = u16::MAX;

    /// The map of `ranges`; nodes are numbered in the order they first appear.
    pub fn new(ranges: &[SlotRange]) -> SlotMap {
        let mut map =
            SlotMap { owner: vec![Self::UNOWNED; usize::from(SLOTS)].into(), nodes: Vec::new() };
        map.apply(ranges);
        map
    }

    /// Replaces the owners named by `ranges` (slots they do not name keep theirs); nodes not
    /// seen before are appended to `nodes`.
    pub fn apply(&mut self, ranges: &[SlotRange]) {
        for range in ranges {
            let node = self.node_index_or_add(range.primary);
            for slot in range.start..=range.end.min(SLOTS - 1) {
                self.owner[usize::from(slot)] = node;
            }
        }
    }

    /// The node that owns `slot`, if any range named one.
    pub fn node_for_slot(&self, slot: u16) -> Option<usize> {
        let node = *self.owner.get(usize::from(slot))?;
        (node != Self::UNOWNED).then_some(usize::from(node))
    }

    /// Moves `slot` to `node` (a MOVED).
    pub fn set_owner(&mut self, slot: u16, node: usize) {
        assert!(node < self.nodes.len(), "a known node");
        self.owner[usize::from(slot)] = node as u16;
    }

    /// The index of the node at `addr`, added when new.
    pub fn node_index_or_add(&mut self, addr: SocketAddr) -> u16 {
        match self.nodes.iter().position(|n| *n == addr) {
            Some(at) => at as u16,
            None => {
                assert!(self.nodes.len() < usize::from(Self::UNOWNED), "too many nodes");
                self.nodes.push(addr);
                (self.nodes.len() - 1) as u16
            }
        }
    }

    /// Slots that have no owner.
    pub fn unowned(&self) -> usize {
        self.owner.iter().filter(|&&n| n == Self::UNOWNED).count()
    }
}

/// A redirect, parsed from an error reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedirectKind {
    Moved,
    Ask,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    pub kind: RedirectKind,
    pub slot: u16,
    /// `host:port` as the server wrote it.
    pub target: String,
}

/// What the front of a reply stream holds, as far as redirects go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Front {
    /// Not a redirect: the ordinary reply parser takes it.
    Other,
    /// A redirect line, not complete yet.
    Incomplete,
    /// A redirect and the bytes its line takes.
    Redirect(Redirect, usize),
    /// `-MOVED` or `-ASK` that cannot be read (the bytes its line takes).
    Malformed(usize),
}

/// Looks at the front of `input` for `-MOVED slot host:port\r\n` or `-ASK ...`.
pub fn front(input: &[u8]) -> Front {
    let kind = if input.starts_with(b"-MOVED ") {
        RedirectKind::Moved
    } else if input.starts_with(b"-ASK ") {
        RedirectKind::Ask
    } else {
        return Front::Other;
    };
    let Some(end) = input.windows(2).position(|w| w == b"\r\n") else {
        return Front::Incomplete;
    };
    match parse_redirect(&input[1..end]) {
        Some(redirect) if redirect.kind == kind => Front::Redirect(redirect, end + 2),
        _ => Front::Malformed(end + 2),
    }
}

/// Parses an error message (without the `-`): `MOVED 3999 127.0.0.1:6381` or
/// `ASK 3999 127.0.0.1:6381`; `None` for any other error.
pub fn parse_redirect(message: &[u8]) -> Option<Redirect> {
    let text = std::str::from_utf8(message).ok()?;
    let mut words = text.split_ascii_whitespace();
    let kind = match words.next()? {
        "MOVED" => RedirectKind::Moved,
        "ASK" => RedirectKind::Ask,
        _ => return None,
    };
    let slot: u16 = words.next()?.parse().ok().filter(|s| *s < SLOTS)?;
    let target = words.next()?;
    let (_, port) = target.rsplit_once(':')?;
    port.parse::<u16>().ok()?;
    if words.next().is_some() {
        return None;
    }
    Some(Redirect { kind, slot, target: target.to_string() })
}

/// Resolves `host:port`; an empty host (Redis writes one for "the node you asked") is
/// `asked`'s address.
pub fn resolve(target: &str, asked: SocketAddr) -> Result<SocketAddr, String> {
    let (host, port) = target.rsplit_once(':').ok_or(format!("{target}: want host:port"))?;
    let port: u16 = port.parse().map_err(|_| format!("{target}: bad port"))?;
    if host.is_empty() || host == "?" {
        return Ok(SocketAddr::new(asked.ip(), port));
    }
    let host = host.trim_start_matches('[').trim_end_matches(']');
    (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("{target}: {e}"))?
        .next()
        .ok_or(format!("{target}: no address"))
}

/// Reads a CLUSTER SLOTS reply: `[[start, end, [host, port, id?, ...], replicas...], ...]`.
/// `asked` stands in for an empty host.
pub fn parse_slots(reply: &Value<'_>, asked: SocketAddr) -> Result<Vec<SlotRange>, String> {
    let Value::Array(ranges) = reply else {
        return Err(match reply {
            Value::Error(e) => format!("CLUSTER SLOTS: {}", String::from_utf8_lossy(e)),
            _ => "CLUSTER SLOTS: not an array".into(),
        });
    };
    let slot = |v: &Value<'_>| match v {
        Value::Integer(n) if (0..i64::from(SLOTS)).contains(n) => Ok(*n as u16),
        _ => Err("CLUSTER SLOTS: a slot that is not an integer in 0..16384".to_string()),
    };
    let mut out = Vec::with_capacity(ranges.len());
    for range in ranges {
        let Value::Array(fields) = range else {
            return Err("CLUSTER SLOTS: a range that is not an array".into());
        };
        let [start, end, primary, ..] = fields.as_slice() else {
            return Err("CLUSTER SLOTS: a range without a primary".into());
        };
        let (start, end) = (slot(start)?, slot(end)?);
        if start > end {
            return Err(format!("CLUSTER SLOTS: range {start}-{end}"));
        }
        let Value::Array(node) = primary else {
            return Err("CLUSTER SLOTS: a node that is not an array".into());
        };
        let (Some(host), Some(Value::Integer(port))) = (node.first(), node.get(1)) else {
            return Err("CLUSTER SLOTS: a node without host and port".into());
        };
        let host = host.as_bytes().ok_or("CLUSTER SLOTS: a host that is not a string")?;
        let host = std::str::from_utf8(host).map_err(|_| "CLUSTER SLOTS: host not UTF-8")?;
        let port = u16::try_from(*port).map_err(|_| "CLUSTER SLOTS: bad port")?;
        let primary = resolve(&format!("{host}:{port}"), asked)?;
        out.push(SlotRange { start, end, primary });
    }
    Ok(out)
}

/// Asks `addr` for CLUSTER SLOTS (a blocking connection of its own, with timeouts).
pub fn fetch_slots(addr: SocketAddr) -> Result<Vec<SlotRange>, String> {
    let fail = |e: std::io::Error| format!("CLUSTER SLOTS from {addr}: {e}");
    let mut stream = TcpStream::connect_timeout(&addr, FETCH_TIMEOUT).map_err(fail)?;
    stream.set_read_timeout(Some(FETCH_TIMEOUT)).map_err(fail)?;
    stream.set_write_timeout(Some(FETCH_TIMEOUT)).map_err(fail)?;
    let mut request = Vec::new();
    compose_command(&[b"CLUSTER", b"SLOTS"], &mut request);
    stream.write_all(&request).map_err(fail)?;
    let mut input = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    // Bounded: every round reads at least a byte, and the reply may not exceed the limit.
    loop {
        match parse_reply(&input) {
            Ok((value, _)) => return parse_slots(&value, addr),
            Err(ParseError::Incomplete) => {}
            Err(_) => return Err(format!("CLUSTER SLOTS from {addr}: malformed reply")),
        }
        let n = stream.read(&mut chunk).map_err(fail)?;
        if n == 0 {
            return Err(format!("CLUSTER SLOTS from {addr}: closed"));
        }
        input.extend_from_slice(&chunk[..n]);
        if input.len() > FETCH_BYTES_MAX {
            return Err(format!("CLUSTER SLOTS from {addr}: reply over {FETCH_BYTES_MAX} bytes"));
        }
    }
}

/// The slot map from the first seed that answers; every slot must have an owner.
pub fn discover(seeds: &[SocketAddr]) -> Result<SlotMap, String> {
    let mut failures = Vec::new();
    for &seed in seeds {
        match fetch_slots(seed) {
            Ok(ranges) => {
                let map = SlotMap::new(&ranges);
                if map.nodes.is_empty() {
                    failures.push(format!("{seed}: no slot has an owner"));
                    continue;
                }
                return match map.unowned() {
                    0 => Ok(map),
                    n => Err(format!("{seed}: {n} slots have no owner (cluster_state:fail)")),
                };
            }
            Err(e) => failures.push(e),
        }
    }
    Err(format!("no seed answered CLUSTER SLOTS: {}", failures.join("; ")))
}

#[cfg(test)]
mod tests {
    use proto_resp::cluster::key_slot;

    use super::*;

    fn addr(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    /// Goal: MOVED and ASK lines parse to kind, slot and target; anything else is not a
    /// redirect. Method: a table of error messages.
    #[test]
    fn redirect_messages() {
        type Want = Option<(RedirectKind, u16, &'static str)>;
        let table: [(&[u8], Want); 9] = [
            (b"MOVED 3999 127.0.0.1:6381", Some((RedirectKind::Moved, 3999, "127.0.0.1:6381"))),
            (b"ASK 0 10.0.0.2:7000", Some((RedirectKind::Ask, 0, "10.0.0.2:7000"))),
            (b"MOVED 16383 :7001", Some((RedirectKind::Moved, 16383, ":7001"))),
            (b"MOVED 16384 127.0.0.1:6381", None),
            (b"MOVED x 127.0.0.1:6381", None),
            (b"MOVED 1 127.0.0.1", None),
            (b"MOVED 1 127.0.0.1:6381 extra", None),
            (b"ERR unknown command", None),
            (b"CROSSSLOT Keys in request don't hash to the same slot", None),
        ];
        for (message, want) in table {
            let got = parse_redirect(message).map(|r| (r.kind, r.slot, r.target));
            let want = want.map(|(k, s, t)| (k, s, t.to_string()));
            assert_eq!(got, want, "{}", String::from_utf8_lossy(message));
        }
    }

    /// Goal: `front` finds a redirect at the front of a reply stream, waits for its whole
    /// line, and leaves every other reply to the ordinary parser.
    #[test]
    fn redirect_at_front() {
        let moved = b"-MOVED 12182 127.0.0.1:7002\r\n+OK\r\n";
        match front(moved) {
            Front::Redirect(r, used) => {
                assert_eq!((r.kind, r.slot, used), (RedirectKind::Moved, 12182, 29));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(front(b"-ASK 5 127.0.0.1:70"), Front::Incomplete);
        assert_eq!(front(b"-MOVED nonsense\r\n"), Front::Malformed(17));
        assert_eq!(front(b"-ERR wrong\r\n"), Front::Other);
        assert_eq!(front(b"$3\r\nabc\r\n"), Front::Other);
        assert_eq!(front(b"-MOV"), Front::Other, "too short to be a redirect yet");
    }

    /// Goal: CLUSTER SLOTS as Redis 7 writes it (with replicas and node ids) becomes ranges
    /// and a full map; an empty host means the node asked.
    #[test]
    fn slots_reply() {
        let reply = b"*2\r\n\
            *4\r\n:0\r\n:8191\r\n*3\r\n$9\r\n127.0.0.1\r\n:7000\r\n$2\r\nid\r\n\
            *3\r\n$9\r\n127.0.0.1\r\n:7003\r\n$2\r\nr1\r\n\
            *3\r\n:8192\r\n:16383\r\n*2\r\n$0\r\n\r\n:7001\r\n";
        let (value, used) = parse_reply(reply).unwrap();
        assert_eq!(used, reply.len());
        let asked = SocketAddr::from(([127, 0, 0, 9], 7009));
        let ranges = parse_slots(&value, asked).unwrap();
        assert_eq!(
            ranges,
            [
                SlotRange { start: 0, end: 8191, primary: addr(7000) },
                SlotRange {
                    start: 8192,
                    end: 16383,
                    primary: SocketAddr::from(([127, 0, 0, 9], 7001))
                },
            ]
        );
        let map = SlotMap::new(&ranges);
        assert_eq!(map.unowned(), 0);
        assert_eq!((map.node_for_slot(0), map.node_for_slot(8191)), (Some(0), Some(0)));
        assert_eq!((map.node_for_slot(8192), map.node_for_slot(16383)), (Some(1), Some(1)));
        assert!(parse_slots(
            &Value::Error(b"ERR This instance has cluster support disabled"),
            asked
        )
        .unwrap_err()
        .contains("cluster support disabled"));
        let (bad, _) = parse_reply(b"*1\r\n*3\r\n:9\r\n:2\r\n*2\r\n$1\r\na\r\n:1\r\n").unwrap();
        assert!(parse_slots(&bad, asked).is_err(), "start after end");
    }

    /// Goal: keys route to the owner of their slot, hash tags keep keys together, and a
    /// MOVED or a refreshed map changes exactly the slots it names. Method: three nodes
    /// splitting the slots as redis-cli does, checked against known CRC16 slots.
    #[test]
    fn routing_by_slot() {
        let ranges = [
            SlotRange { start: 0, end: 5460, primary: addr(7000) },
            SlotRange { start: 5461, end: 10922, primary: addr(7001) },
            SlotRange { start: 10923, end: 16383, primary: addr(7002) },
        ];
        let mut map = SlotMap::new(&ranges);
        // Slots from the Redis Cluster specification and redis-cli: foo 12182, bar 5061.
        let route = |map: &SlotMap, key: &[u8]| map.node_for_slot(key_slot(key)).unwrap();
        assert_eq!(key_slot(b"foo"), 12182);
        assert_eq!(key_slot(b"bar"), 5061);
        assert_eq!(route(&map, b"foo"), 2);
        assert_eq!(route(&map, b"bar"), 0);
        assert_eq!(route(&map, b"{foo}.x"), route(&map, b"foo"), "a hash tag routes as its tag");
        // A MOVED for foo's slot to a node not seen before: it joins the list.
        let new = map.node_index_or_add(addr(7005));
        assert_eq!(new, 3);
        map.set_owner(12182, usize::from(new));
        assert_eq!(route(&map, b"foo"), 3);
        assert_eq!(map.node_for_slot(12181), Some(2), "only the moved slot changes");
        // A refreshed map puts it back and keeps the node list stable.
        map.apply(&ranges);
        assert_eq!(route(&map, b"foo"), 2);
        assert_eq!(map.nodes.len(), 4);
        // Every slot is owned and the three shares are the ranges' sizes.
        let mut counts = [0usize; 3];
        for slot in 0..SLOTS {
            counts[map.node_for_slot(slot).unwrap()] += 1;
        }
        assert_eq!(counts, [5461, 5462, 5461]);
    }

    #[test]
    fn partial_map_is_reported() {
        let map = SlotMap::new(&[SlotRange { start: 0, end: 99, primary: addr(1) }]);
        assert_eq!(map.unowned(), usize::from(SLOTS) - 100);
        assert_eq!(map.node_for_slot(100), None);
    }

    #[test]
    fn resolve_targets() {
        let asked = addr(7000);
        assert_eq!(resolve("127.0.0.1:7001", asked).unwrap(), addr(7001));
        assert_eq!(resolve(":7002", asked).unwrap(), addr(7002));
        assert!(resolve("127.0.0.1", asked).is_err());
    }
}
