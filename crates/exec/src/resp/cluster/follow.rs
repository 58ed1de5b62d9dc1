//! A replica's view of the map follows its primary's. Redis replicas learn slot moves over
//! the cluster bus; a Spinel replica has none, and `redis-cli --cluster reshard` tells only
//! primaries. So a node that is a replica asks its primary for CLUSTER NODES (the server
//! calls [`super::Cluster::follow_primary`] once a second) and takes the slot owners and config epochs it answers (never its own flags or open
//! slots), writing its file when they changed.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use super::topology::Topology;

/// How long a replica waits for its primary's answer.
const TIMEOUT: Duration = Duration::from_secs(1);

impl super::Cluster {
    /// If this node is a replica: asks its primary for CLUSTER NODES and takes the slot
    /// owners and epochs from it (the server calls this once a second). Ok(true) when the
    /// map changed; the error says what failed, for the server's log.
    pub fn follow_primary(&self) -> Result<bool, String> {
        let Some(address) = primary_address(&self.topology.read()) else { return Ok(false) };
        let view = ask_nodes(&address).and_then(|text| Topology::parse(&text));
        let view = view.map_err(|why| format!("primary {address}: {why}"))?;
        let mut changed = false;
        self.change_if(|topology| {
            changed = adopt(topology, &view);
            changed
        })?;
        Ok(changed)
    }
}

/// `ip:port` of this node's primary, if this node is a replica with a known primary.
fn primary_address(topology: &Topology) -> Option<String> {
    let primary = topology.primary_of(topology.myself);
    let node = &topology.nodes[primary];
    (primary != topology.myself && !node.ip.is_empty())
        .then(|| format!("{}:{}", node.ip, node.port))
}

/// CLUSTER NODES of the server at `address`.
fn ask_nodes(address: &str) -> Result<String, String> {
    let socket_address = address.parse().map_err(|_| format!("bad address {address}"))?;
    let mut stream =
        TcpStream::connect_timeout(&socket_address, TIMEOUT).map_err(|e| e.to_string())?;
    stream.set_read_timeout(Some(TIMEOUT)).map_err(|e| e.to_string())?;
    stream.write_all(b"*2\r\n$7\r\nCLUSTER\r\n$5\r\nNODES\r\n").map_err(|e| e.to_string())?;
    let mut reader = BufReader::new(stream);
    let mut header = String::new();
    reader.read_line(&mut header).map_err(|e| e.to_string())?;
    let length = header
        .strip_prefix('$')
        .and_then(|n| n.trim_end().parse::<usize>().ok())
        .ok_or_else(|| format!("answered {}", header.trim_end()))?;
    let mut body = vec![0; length];
    reader.read_exact(&mut body).map_err(|e| e.to_string())?;
    String::from_utf8(body).map_err(|e| e.to_string())
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
