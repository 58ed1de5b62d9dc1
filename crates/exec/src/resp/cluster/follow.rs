//! Once a second (the server's cluster thread calls [`super::Cluster::tick`]) a node reads
//! the other nodes' CLUSTER NODES. A replica takes its primary's slot owners and config
//! epochs (never its own flags or open slots): Redis replicas learn slot moves over the
//! cluster bus, a Spinel replica has none, and `redis-cli --cluster reshard` tells only
//! primaries. Every node takes what the others say of themselves where a failover shows
//! (`gossip.rs`). The map is written to its file when it changed, and the replication link
//! is moved to follow the primary the map names (`failover::sync_link`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use super::topology::Topology;
use crate::Shared;

/// How long a node waits for another's answer.
const TIMEOUT: Duration = Duration::from_secs(1);
/// How long it waits to connect (a node that is down must not hold up the round).
const CONNECT_TIMEOUT: Duration = Duration::from_millis(300);
/// Nodes read per round besides the primary (a large cluster is read in turns).
const PEERS_PER_ROUND: usize = 16;

impl super::Cluster {
    /// One round: reads the primary's map (a replica) and some other nodes', takes what
    /// they say, then moves the replication link to the map's primary. Ok(true) when the
    /// map changed; the error says what failed (the primary's answer), for the server's log.
    pub fn tick(&self, shared: &Arc<Shared>) -> Result<bool, String> {
        let (primary, peers) = {
            let topology = self.topology.read();
            (primary_address(&topology), self.peers_this_round(&topology))
        };
        let primary_view = primary.as_ref().map(|address| {
            let view = ask_nodes(address, shared).and_then(|text| Topology::parse(&text));
            view.map_err(|why| format!("primary {address}: {why}"))
        });
        let views: Vec<Topology> = peers
            .iter()
            .filter(|address| Some(*address) != primary.as_ref())
            .filter_map(|address| ask_nodes(address, shared).ok())
            .filter_map(|text| Topology::parse(&text).ok())
            .chain(primary_view.iter().filter_map(|view| view.as_ref().ok().cloned()))
            .collect();
        let mut changed = false;
        self.change_if(|topology| {
            if let Some(Ok(view)) = &primary_view {
                changed |= adopt(topology, view);
            }
            changed |= super::gossip::learn(topology, &views);
            changed
        })?;
        super::failover::sync_link(shared, self);
        match primary_view {
            Some(Err(why)) => Err(why),
            _ => Ok(changed),
        }
    }

    /// The addresses of the nodes to read this round, in turns when there are many.
    fn peers_this_round(&self, topology: &Topology) -> Vec<String> {
        let mut addresses: Vec<String> = (0..topology.nodes.len())
            .filter(|&at| at != topology.myself)
            .map(|at| &topology.nodes[at])
            .filter(|node| !node.ip.is_empty() && node.port != 0)
            .map(|node| format!("{}:{}", node.ip, node.port))
            .collect();
        addresses.sort_unstable();
        addresses.dedup();
        if addresses.len() <= PEERS_PER_ROUND {
            return addresses;
        }
        let start = self.next_peer.fetch_add(PEERS_PER_ROUND, Relaxed) % addresses.len();
        addresses.rotate_left(start);
        addresses.truncate(PEERS_PER_ROUND);
        addresses
    }
}

/// `ip:port` of this node's primary, if this node is a replica with a known primary.
fn primary_address(topology: &Topology) -> Option<String> {
    let primary = topology.primary_of(topology.myself);
    let node = &topology.nodes[primary];
    (primary != topology.myself && !node.ip.is_empty())
        .then(|| format!("{}:{}", node.ip, node.port))
}

/// The largest CLUSTER NODES answer read (a line per node, a few hundred bytes each).
const MAX_ANSWER: usize = 16 << 20;

/// A connection to another node, logged in with `masteruser`/`masterauth` when they are
/// set (as the replication link logs in).
pub(super) fn connect(address: &str, shared: &Shared) -> Result<BufReader<TcpStream>, String> {
    let socket_address = address.parse().map_err(|_| format!("bad address {address}"))?;
    let stream =
        TcpStream::connect_timeout(&socket_address, CONNECT_TIMEOUT).map_err(|e| e.to_string())?;
    stream.set_read_timeout(Some(TIMEOUT)).map_err(|e| e.to_string())?;
    stream.set_write_timeout(Some(TIMEOUT)).map_err(|e| e.to_string())?;
    let mut link = BufReader::new(stream);
    let auth = crate::resp::replication::kept_text(shared, "masterauth");
    if !auth.is_empty() {
        let user = crate::resp::replication::kept_text(shared, "masteruser");
        let mut parts = vec![b"AUTH".as_slice()];
        if !user.is_empty() {
            parts.push(user.as_bytes());
        }
        parts.push(auth.as_bytes());
        send(&mut link, &parts)?;
        read_line(&mut link)?;
    }
    Ok(link)
}

/// Sends one command.
pub(super) fn send(link: &mut BufReader<TcpStream>, parts: &[&[u8]]) -> Result<(), String> {
    let mut out = format!("*{}\r\n", parts.len()).into_bytes();
    for part in parts {
        out.extend_from_slice(format!("${}\r\n", part.len()).as_bytes());
        out.extend_from_slice(part);
        out.extend_from_slice(b"\r\n");
    }
    link.get_mut().write_all(&out).map_err(|e| e.to_string())
}

/// One reply line, without its CRLF (at most 4 KiB).
pub(super) fn read_line(link: &mut BufReader<TcpStream>) -> Result<String, String> {
    let mut line = Vec::new();
    link.by_ref().take(4096).read_until(b'\n', &mut line).map_err(|e| e.to_string())?;
    if !line.ends_with(b"\n") {
        return Err("no answer".into());
    }
    Ok(String::from_utf8_lossy(&line).trim_end().to_owned())
}

/// A bulk string reply (a verbatim string's `txt:` prefix removed).
pub(super) fn read_bulk(link: &mut BufReader<TcpStream>) -> Result<String, String> {
    let header = read_line(link)?;
    let length = header
        .strip_prefix('$')
        .and_then(|n| n.parse::<usize>().ok())
        .filter(|length| *length <= MAX_ANSWER)
        .ok_or_else(|| format!("answered {header}"))?;
    let mut body = vec![0; length + 2];
    link.read_exact(&mut body).map_err(|e| e.to_string())?;
    body.truncate(length);
    String::from_utf8(body).map_err(|e| e.to_string())
}

/// CLUSTER NODES of the server at `address`.
fn ask_nodes(address: &str, shared: &Shared) -> Result<String, String> {
    let mut link = connect(address, shared)?;
    send(&mut link, &[b"CLUSTER", b"NODES"])?;
    read_bulk(&mut link)
}

/// Takes the slot owners and epochs of `view` (the primary's map) into `topology`, adding
/// the nodes it did not know; true if anything changed.
fn adopt(topology: &mut Topology, view: &Topology) -> bool {
    let before = topology.clone();
    let mut index_of = Vec::with_capacity(view.nodes.len());
    for node in &view.nodes {
        let index = match topology.find(node.id.as_bytes()) {
            Some(index) => index,
            None => {
                topology.nodes.push(node.clone());
                topology.nodes.len() - 1
            }
        };
        topology.nodes[index].config_epoch = node.config_epoch;
        index_of.push(index);
    }
    for (slot, owner) in view.owner.iter().enumerate() {
        topology.owner[slot] = owner.map(|at| index_of[at]);
    }
    topology.current_epoch = topology.current_epoch.max(view.current_epoch);
    *topology != before
}

#[cfg(test)]
mod tests {
    use super::*;

    const PRIMARY_VIEW: &str = "\
aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa 127.0.0.1:7001@17001 myself,master - 0 0 1 connected 0-99
bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb 127.0.0.1:7002@17002 master - 0 0 5 connected 100-16383
cccccccccccccccccccccccccccccccccccccccc 127.0.0.1:7003@17003 slave aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa 0 0 1 connected
vars currentEpoch 5 lastVoteEpoch 0
";

    #[test]
    fn a_replica_takes_its_primarys_owners_and_keeps_its_own_flags() {
        let replica_text = "\
aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa 127.0.0.1:7001@17001 master - 0 0 1 connected 0-5000
cccccccccccccccccccccccccccccccccccccccc 127.0.0.1:7003@17003 myself,slave aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa 0 0 1 connected
vars currentEpoch 1 lastVoteEpoch 0
";
        let mut replica = Topology::parse(replica_text).unwrap();
        assert_eq!(primary_address(&replica).as_deref(), Some("127.0.0.1:7001"));
        let view = Topology::parse(PRIMARY_VIEW).unwrap();
        assert!(adopt(&mut replica, &view));
        assert_eq!(replica.me().id, "c".repeat(40));
        assert!(!replica.me().is_primary());
        assert_eq!(replica.ranges_of(0), vec![(0, 99)]);
        let added = replica.find(b"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb").unwrap();
        assert_eq!(replica.ranges_of(added), vec![(100, 16383)]);
        assert_eq!(replica.current_epoch, 5);
        assert!(!adopt(&mut replica, &view), "nothing new the second time");
    }
}
