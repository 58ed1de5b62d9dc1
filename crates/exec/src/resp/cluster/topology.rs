//! The cluster's map as Redis's `nodes.conf` holds it: every node (id, address, flags,
//! primary, epochs, link state) and which node owns each slot, with this node's open
//! migrations. It is read from the file at start and on SIGHUP, changed by CLUSTER
//! SETSLOT and its kin, and written back after each change as Redis writes it.
//!
//! One line per node:
//!
//! ```text
//! <id> <ip>:<port>@<bus-port>[,<hostname>] <flags> <primary-id|-> <ping-sent> <pong-recv>
//!     <config-epoch> <link-state> <slot>...
//! vars currentEpoch <n> lastVoteEpoch <n>
//! ```
//!
//! A slot is `N` or `N-M`; on this node's line `[N->-<id>]` is a slot it migrates to `<id>`
//! and `[N-<-<id>]` one it imports from `<id>`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use proto_resp::cluster::SLOTS;

/// One node of the map.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Node {
    /// 40 hex characters.
    pub id: String,
    pub ip: String,
    pub port: u16,
    pub bus_port: u16,
    /// What follows the bus port after a comma (a hostname, and Redis 7.2's `key=value`
    /// fields), kept as written.
    pub endpoint_extra: String,
    /// Its flags but `myself` (`master`, `slave`, `fail`, `nofailover`, ...).
    pub flags: Vec<String>,
    /// The id of its primary, for a replica.
    pub primary: Option<String>,
    pub ping_sent_ms: u64,
    pub pong_received_ms: u64,
    pub config_epoch: u64,
    /// `connected` or `disconnected`.
    pub link: String,
}

impl Node {
    pub(crate) fn is_primary(&self) -> bool {
        self.flags.iter().any(|flag| flag == "master")
    }

    /// Flagged `slave` (Redis's `nodeIsSlave`).
    pub(crate) fn is_replica(&self) -> bool {
        self.flags.iter().any(|flag| flag == "slave")
    }

    /// Its role flag becomes `role` (`master` or `slave`), first among its flags.
    fn set_role(&mut self, role: &str) {
        self.flags.retain(|flag| flag != "master" && flag != "slave" && flag != "noflags");
        self.flags.insert(0, role.to_owned());
    }

    /// Its hostname, if the file gives one.
    pub(crate) fn hostname(&self) -> &str {
        self.endpoint_extra.split(',').next().filter(|name| !name.contains('=')).unwrap_or("")
    }

    fn address(&self) -> String {
        let extra = if self.endpoint_extra.is_empty() {
            String::new()
        } else {
            format!(",{}", self.endpoint_extra)
        };
        format!("{}:{}@{}{extra}", self.ip, self.port, self.bus_port)
    }
}

/// The whole map, as one node sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Topology {
    pub nodes: Vec<Node>,
    /// The index of this node in `nodes`.
    pub myself: usize,
    pub current_epoch: u64,
    pub last_vote_epoch: u64,
    /// The owner of each slot, an index in `nodes`.
    pub owner: Vec<Option<usize>>,
    /// Slots this node moves away: slot -> the node it moves them to.
    pub migrating: BTreeMap<u16, usize>,
    /// Slots this node takes in: slot -> the node they come from.
    pub importing: BTreeMap<u16, usize>,
}

impl Topology {
    /// A node alone, owning no slot: what Redis makes when it finds no config file.
    pub(crate) fn new_alone(id: String, ip: &str, port: u16, bus_port: u16) -> Topology {
        let myself = Node {
            id,
            ip: ip.to_owned(),
            port,
            bus_port,
            endpoint_extra: String::new(),
            flags: vec!["master".to_owned()],
            primary: None,
            ping_sent_ms: 0,
            pong_received_ms: 0,
            config_epoch: 0,
            link: "connected".to_owned(),
        };
        Topology {
            nodes: vec![myself],
            myself: 0,
            current_epoch: 0,
            last_vote_epoch: 0,
            owner: vec![None; usize::from(SLOTS)],
            migrating: BTreeMap::new(),
            importing: BTreeMap::new(),
        }
    }

    pub(crate) fn me(&self) -> &Node {
        &self.nodes[self.myself]
    }

    pub(crate) fn find(&self, id: &[u8]) -> Option<usize> {
        self.nodes.iter().position(|node| node.id.as_bytes().eq_ignore_ascii_case(id))
    }

    /// The primary a node serves the slots of: itself, or its primary for a replica.
    pub(crate) fn primary_of(&self, index: usize) -> usize {
        let node = &self.nodes[index];
        node.primary.as_deref().and_then(|id| self.find(id.as_bytes())).unwrap_or(index)
    }

    /// Replicas of the node at `index`.
    pub(crate) fn replicas_of(&self, index: usize) -> impl Iterator<Item = usize> + '_ {
        let id = &self.nodes[index].id;
        (0..self.nodes.len()).filter(move |&at| self.nodes[at].primary.as_ref() == Some(id))
    }

    /// The node at `index` becomes a replica of the node at `primary`. This node closes its
    /// open slots when it becomes one, as Redis's `clusterSetMaster` does.
    pub(crate) fn set_replica_of(&mut self, index: usize, primary: usize) {
        let primary_id = self.nodes[primary].id.clone();
        let node = &mut self.nodes[index];
        node.set_role("slave");
        node.primary = Some(primary_id);
        if index == self.myself {
            self.migrating.clear();
            self.importing.clear();
        }
    }

    /// The node at `index` becomes a primary (of no slot yet).
    pub(crate) fn set_primary(&mut self, index: usize) {
        let node = &mut self.nodes[index];
        node.set_role("master");
        node.primary = None;
    }

    /// How many slots the node at `index` owns.
    pub(crate) fn slot_count(&self, index: usize) -> usize {
        self.owner.iter().filter(|owner| **owner == Some(index)).count()
    }

    /// CLUSTER FORGET: the node leaves the map; its slots are unassigned.
    pub(crate) fn remove_node(&mut self, index: usize) {
        let shift = |at: usize| if at > index { at - 1 } else { at };
        self.nodes.remove(index);
        for owner in &mut self.owner {
            *owner = owner.filter(|at| *at != index).map(shift);
        }
        self.migrating.retain(|_, at| *at != index);
        self.importing.retain(|_, at| *at != index);
        self.migrating
            .values_mut()
            .chain(self.importing.values_mut())
            .for_each(|at| *at = shift(*at));
        self.myself = shift(self.myself);
    }

    pub(crate) fn slots_assigned(&self) -> usize {
        self.owner.iter().filter(|owner| owner.is_some()).count()
    }

    /// The slot ranges owned by the node at `index`, in order.
    pub(crate) fn ranges_of(&self, index: usize) -> Vec<(u16, u16)> {
        ranges(&self.owner, |owner| owner == Some(index))
    }

    /// Every owned range with its owner, in slot order (CLUSTER SLOTS).
    pub(crate) fn owned_ranges(&self) -> Vec<(u16, u16, usize)> {
        let mut out = Vec::new();
        let mut slot = 0;
        while slot < self.owner.len() {
            let Some(owner) = self.owner[slot] else {
                slot += 1;
                continue;
            };
            let start = slot;
            while slot < self.owner.len() && self.owner[slot] == Some(owner) {
                slot += 1;
            }
            out.push((start as u16, (slot - 1) as u16, owner));
        }
        out
    }

    /// The line of one node, as CLUSTER NODES and the config file show it.
    pub(crate) fn node_line(&self, index: usize) -> String {
        let node = &self.nodes[index];
        let mut flags = node.flags.clone();
        if index == self.myself {
            flags.insert(0, "myself".to_owned());
        }
        let flags = if flags.is_empty() { "noflags".to_owned() } else { flags.join(",") };
        let mut line = format!(
            "{} {} {} {} {} {} {} {}",
            node.id,
            node.address(),
            flags,
            node.primary.as_deref().unwrap_or("-"),
            node.ping_sent_ms,
            node.pong_received_ms,
            // A replica shows its primary's epoch, as Redis shows it.
            self.nodes[self.primary_of(index)].config_epoch,
            node.link,
        );
        for (start, end) in self.ranges_of(index) {
            match start == end {
                true => write!(line, " {start}"),
                false => write!(line, " {start}-{end}"),
            }
            .expect("a String takes any write");
        }
        if index == self.myself {
            for (slot, to) in &self.migrating {
                write!(line, " [{slot}->-{}]", self.nodes[*to].id).expect("a String");
            }
            for (slot, from) in &self.importing {
                write!(line, " [{slot}-<-{}]", self.nodes[*from].id).expect("a String");
            }
        }
        line
    }

    /// CLUSTER NODES: every node's line, each ending in a newline.
    pub(crate) fn nodes_text(&self) -> String {
        (0..self.nodes.len()).map(|index| self.node_line(index) + "\n").collect()
    }

    /// The config file's text.
    pub(crate) fn to_config(&self) -> String {
        format!(
            "{}vars currentEpoch {} lastVoteEpoch {}\n",
            self.nodes_text(),
            self.current_epoch,
            self.last_vote_epoch
        )
    }

    /// Reads a config file's text; the error names the line at fault.
    pub(crate) fn parse(text: &str) -> Result<Topology, String> {
        let mut nodes = Vec::new();
        let mut slot_fields = Vec::new();
        let mut myself = None;
        let (mut current_epoch, mut last_vote_epoch) = (0, 0);
        for (number, line) in text.lines().enumerate() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let at_line = |why: &str| format!("line {}: {why}: {line:?}", number + 1);
            match fields.first() {
                None => continue,
                Some(&"vars") => {
                    for pair in fields[1..].chunks(2) {
                        let value = pair.get(1).and_then(|v| v.parse().ok());
                        let value = value.ok_or_else(|| at_line("a vars value"))?;
                        match pair[0] {
                            "currentEpoch" => current_epoch = value,
                            "lastVoteEpoch" => last_vote_epoch = value,
                            _ => {}
                        }
                    }
                    continue;
                }
                Some(_) => {}
            }
            if fields.len() < 8 {
                return Err(at_line("a node line has at least 8 fields"));
            }
            let (node, is_myself) = parse_node(&fields).map_err(|why| at_line(&why))?;
            if is_myself {
                if myself.is_some() {
                    return Err(at_line("a second node flagged myself"));
                }
                myself = Some(nodes.len());
            }
            if nodes.iter().any(|other: &Node| other.id == node.id) {
                return Err(at_line("a node id given twice"));
            }
            nodes.push(node);
            slot_fields.push((fields[8..].join(" "), number + 1));
        }
        let myself = myself.ok_or("no node is flagged myself")?;
        let mut topology = Topology {
            nodes,
            myself,
            current_epoch,
            last_vote_epoch,
            owner: vec![None; usize::from(SLOTS)],
            migrating: BTreeMap::new(),
            importing: BTreeMap::new(),
        };
        for (index, (fields, number)) in slot_fields.iter().enumerate() {
            for field in fields.split_whitespace() {
                topology
                    .apply_slot_field(index, field)
                    .map_err(|why| format!("line {number}: {why}: {field:?}"))?;
            }
        }
        Ok(topology)
    }

    fn apply_slot_field(&mut self, index: usize, field: &str) -> Result<(), String> {
        if let Some(open) = field.strip_prefix('[').and_then(|f| f.strip_suffix(']')) {
            if index != self.myself {
                return Ok(()); // Redis shows other nodes' open slots nowhere; ignore them.
            }
            let (slot, rest, migrating) = match open.split_once("->-") {
                Some((slot, to)) => (slot, to, true),
                None => {
                    let (slot, from) = open.split_once("-<-").ok_or("an open slot")?;
                    (slot, from, false)
                }
            };
            let slot = parse_slot(slot)?;
            let other = self.find(rest.as_bytes()).ok_or("an open slot names an unknown node")?;
            match migrating {
                true => self.migrating.insert(slot, other),
                false => self.importing.insert(slot, other),
            };
            return Ok(());
        }
        let (start, end) = match field.split_once('-') {
            Some((start, end)) => (parse_slot(start)?, parse_slot(end)?),
            None => (parse_slot(field)?, parse_slot(field)?),
        };
        if start > end {
            return Err("a slot range ends before it starts".into());
        }
        for slot in start..=end {
            self.owner[usize::from(slot)] = Some(index);
        }
        Ok(())
    }
}

/// Ranges of consecutive slots whose owner passes `wanted`.
fn ranges(owner: &[Option<usize>], wanted: impl Fn(Option<usize>) -> bool) -> Vec<(u16, u16)> {
    let mut out: Vec<(u16, u16)> = Vec::new();
    for (slot, who) in owner.iter().enumerate() {
        if !wanted(*who) {
            continue;
        }
        let slot = slot as u16;
        match out.last_mut() {
            Some((_, end)) if *end + 1 == slot => *end = slot,
            _ => out.push((slot, slot)),
        }
    }
    out
}

/// A slot number, 0 to 16383.
pub(crate) fn parse_slot(text: &str) -> Result<u16, String> {
    text.parse::<u16>().ok().filter(|slot| *slot < SLOTS).ok_or_else(|| "a slot number".into())
}

fn parse_node(fields: &[&str]) -> Result<(Node, bool), String> {
    let id = fields[0];
    if id.len() != 40 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err("a node id is 40 hex digits".into());
    }
    let (address, endpoint_extra) = fields[1].split_once(',').unwrap_or((fields[1], ""));
    let (host_port, bus_port) = address.rsplit_once('@').ok_or("an address ip:port@bus-port")?;
    let (ip, port) = host_port.rsplit_once(':').ok_or("an address ip:port@bus-port")?;
    let port = port.parse().map_err(|_| "a port number")?;
    let bus_port = bus_port.parse().map_err(|_| "a bus port number")?;
    let mut flags: Vec<String> = fields[2].split(',').map(str::to_owned).collect();
    let is_myself = flags.iter().any(|flag| flag == "myself");
    flags.retain(|flag| flag != "myself" && flag != "noflags");
    let primary = (fields[3] != "-").then(|| fields[3].to_owned());
    let number = |at: usize, what: &str| fields[at].parse::<u64>().map_err(|_| what.to_owned());
    let node = Node {
        id: id.to_ascii_lowercase(),
        ip: ip.to_owned(),
        port,
        bus_port,
        endpoint_extra: endpoint_extra.to_owned(),
        flags,
        primary,
        ping_sent_ms: number(4, "a ping-sent time")?,
        pong_received_ms: number(5, "a pong-received time")?,
        config_epoch: number(6, "a config epoch")?,
        link: fields[7].to_owned(),
    };
    Ok((node, is_myself))
}

#[cfg(test)]
mod tests {
    use super::*;

    const THREE: &str = "\
6a37e51cf54848e0d4c9e0699658c2200254ec33 127.0.0.1:7713@17713 master - 0 1795615167095 3 connected 10923-16383
012827c08e1c855822f18bfe616c92ccf3e0ba26 127.0.0.1:7712@17712 master - 0 1795615167798 2 connected 5461-10922
11c3b2bb4b62e7fd206da09e52e330a068360be7 127.0.0.1:7711@17711 myself,master - 0 0 1 connected 0-5460
vars currentEpoch 3 lastVoteEpoch 0
";

    #[test]
    fn a_redis_file_reads_and_writes_back_unchanged() {
        let topology = Topology::parse(THREE).unwrap();
        assert_eq!(topology.myself, 2);
        assert_eq!(topology.me().port, 7711);
        assert_eq!(topology.owner[0], Some(2));
        assert_eq!(topology.owner[16383], Some(0));
        assert_eq!(topology.slots_assigned(), 16384);
        assert_eq!(topology.to_config(), THREE);
    }

    #[test]
    fn open_slots_and_single_slots_round_trip() {
        let text = THREE.replace(
            "connected 0-5460",
            "connected 0-5459 5460 [5460->-012827c08e1c855822f18bfe616c92ccf3e0ba26] \
             [10923-<-6a37e51cf54848e0d4c9e0699658c2200254ec33]",
        );
        let topology = Topology::parse(&text).unwrap();
        assert_eq!(topology.migrating.get(&5460), Some(&1));
        assert_eq!(topology.importing.get(&10923), Some(&0));
        let written = topology.to_config();
        assert!(written.contains("connected 0-5460 [5460->-0128"), "{written}");
        assert_eq!(Topology::parse(&written).unwrap(), topology);
    }

    #[test]
    fn bad_files_name_the_line() {
        assert!(Topology::parse("").unwrap_err().contains("myself"));
        let bad = THREE.replace("0-5460", "0-99999");
        assert!(Topology::parse(&bad).unwrap_err().starts_with("line 3: a slot number"));
        let short = "11c3b2bb4b62e7fd206da09e52e330a068360be7 127.0.0.1:1@2 myself,master -\n";
        assert!(Topology::parse(short).unwrap_err().contains("8 fields"));
    }
}
