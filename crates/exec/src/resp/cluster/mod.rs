//! Redis Cluster, as one node of it: `--cluster-enabled yes` with a `nodes.conf` map.
//!
//! ```text
//!   nodes.conf --parse--> Topology (RwLock: nodes, epochs, open slots)
//!                             | publish (after every change)
//!                             v
//!   command --keys (key specs)--> slots --words[slot] (atomics)--> run here
//!                                                              \--> -MOVED / -ASK / -CROSSSLOT
//! ```
//!
//! There is no cluster bus: the map is what the operator's file says, changed by CLUSTER
//! SETSLOT (as `redis-cli --cluster reshard` sends it to every node), ADDSLOTS and their
//! kin, and read again on SIGHUP. Each change is written back to the file. Failure
//! detection and failover are the operator's (or an orchestrator's): it edits the files
//! and signals the nodes.
//!
//! The request path reads one atomic word per slot; the map's lock is taken only to
//! answer a redirect or a CLUSTER command.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};

use parking_lot::RwLock;
use proto_resp::{cluster::key_slot, commands::Flags, Command, Route, Routed};

use super::Session;
use crate::Shared;

mod admin;
mod commands;
mod dump;
mod follow;
mod migrate;
pub(crate) mod topology;

pub(super) use commands::replica_of;
pub(super) use commands::{dispatch, dispatch_sub, role};
/// A key's value as DUMP reads it and RESTORE stores it: RDB files (`crate::snapshot`), the
/// replication stream's RESTOREs (`crate::repl`) and the fuzz targets (`crate::fuzzing`).
pub(crate) use dump::{to_stored, value_of};
use topology::Topology;

/// No node: the value of an empty field of a slot word.
const NONE: u64 = 0xFFFF;

/// This node's part in a cluster.
#[derive(Debug)]
pub struct Cluster {
    /// Per slot: owner | migrating-to << 16 | importing-from << 32, node indexes in the
    /// topology's list, [`NONE`] where there is none.
    words: Box<[AtomicU64]>,
    /// This node's index in the list.
    myself: AtomicUsize,
    /// Every slot has an owner (Redis's `cluster_state:ok` with full coverage required).
    state_ok: AtomicBool,
    topology: RwLock<Topology>,
    /// The config file, read at start and on SIGHUP, written after each change.
    path: PathBuf,
}

impl Cluster {
    /// Reads the map from `path`, or, where there is no file, makes a node of its own that
    /// owns no slot (as Redis does) and writes the file.
    pub fn open(path: &Path, ip: &str, port: u16) -> Result<Cluster, String> {
        let topology = match std::fs::read_to_string(path) {
            Ok(text) => Topology::parse(&text).map_err(|why| bad_file(path, &why))?,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                // Redis's bus port is the port + 10000; Spinel binds none, so a port above
                // 55535 (which Redis refuses in cluster mode) names bus port 0.
                let bus_port = port.checked_add(10000).unwrap_or(0);
                Topology::new_alone(random_node_id(), ip, port, bus_port)
            }
            Err(error) => return Err(format!("{}: {error}", path.display())),
        };
        let cluster = Cluster {
            words: (0..proto_resp::cluster::SLOTS).map(|_| AtomicU64::new(NONE)).collect(),
            myself: AtomicUsize::new(0),
            state_ok: AtomicBool::new(false),
            topology: RwLock::new(topology),
            path: path.to_owned(),
        };
        let topology = cluster.topology.read();
        cluster.publish(&topology);
        cluster.save(&topology)?;
        drop(topology);
        Ok(cluster)
    }

    /// The config file's name, as CONFIG GET shows `cluster-config-file`.
    pub fn file_name(&self) -> String {
        self.path.file_name().map_or_else(String::new, |name| name.to_string_lossy().into_owned())
    }

    /// SIGHUP: reads the file again; on an error the map in force is kept.
    pub fn reload(&self) -> Result<(), String> {
        let text = std::fs::read_to_string(&self.path)
            .map_err(|error| format!("{}: {error}", self.path.display()))?;
        let fresh = Topology::parse(&text).map_err(|why| bad_file(&self.path, &why))?;
        let mut topology = self.topology.write();
        *topology = fresh;
        self.publish(&topology);
        Ok(())
    }

    /// Makes the request path see `topology`.
    fn publish(&self, topology: &Topology) {
        let index = |node: Option<usize>| node.map_or(NONE, |at| at as u64);
        for (slot, word) in self.words.iter().enumerate() {
            let slot16 = slot as u16;
            let value = index(topology.owner[slot])
                | index(topology.migrating.get(&slot16).copied()) << 16
                | index(topology.importing.get(&slot16).copied()) << 32;
            word.store(value, Relaxed);
        }
        self.myself.store(topology.myself, Relaxed);
        self.state_ok.store(topology.slots_assigned() == self.words.len(), Relaxed);
    }

    /// Writes the file as Redis does: a temporary file beside it, renamed over it.
    fn save(&self, topology: &Topology) -> Result<(), String> {
        let temporary = self.path.with_extension("tmp-spinel");
        let written = std::fs::write(&temporary, topology.to_config())
            .and_then(|()| std::fs::rename(&temporary, &self.path));
        written.map_err(|error| format!("{}: {error}", self.path.display()))
    }

    /// Changes the map under its lock, then publishes and saves it.
    fn change<T>(
        &self,
        edit: impl FnOnce(&mut Topology) -> Result<T, String>,
    ) -> Result<T, String> {
        let mut topology = self.topology.write();
        let mut draft = topology.clone();
        let value = edit(&mut draft)?;
        *topology = draft;
        self.publish(&topology);
        self.save(&topology)
            .map_err(|why| format!("ERR Error saving the cluster config: {why}"))?;
        Ok(value)
    }

    /// Applies `edit` to a copy of the map; publishes and saves it only if `edit` says it
    /// changed something.
    fn change_if(&self, edit: impl FnOnce(&mut Topology) -> bool) -> Result<(), String> {
        let mut topology = self.topology.write();
        let mut draft = topology.clone();
        if !edit(&mut draft) {
            return Ok(());
        }
        *topology = draft;
        self.publish(&topology);
        self.save(&topology)
    }

    fn word(&self, slot: u16) -> (u64, u64, u64) {
        let word = self.words[usize::from(slot)].load(Relaxed);
        (word & NONE, word >> 16 & NONE, word >> 32 & NONE)
    }

    /// `-MOVED slot ip:port` or `-ASK slot ip:port` to the node at `index`.
    fn redirect(&self, kind: &str, slot: u16, index: u64) -> Vec<u8> {
        let topology = self.topology.read();
        match topology.nodes.get(index as usize) {
            Some(node) => format!("{kind} {slot} {}:{}", node.ip, node.port).into_bytes(),
            None => CLUSTER_DOWN_UNBOUND.as_bytes().to_vec(),
        }
    }

    /// Whether this node replicates the owner at `owner` (READONLY reads).
    fn replicates(&self, owner: u64) -> bool {
        let topology = self.topology.read();
        let me = topology.me();
        let owner_id = topology.nodes.get(owner as usize).map(|node| node.id.as_str());
        !me.is_primary() && me.primary.as_deref() == owner_id && owner_id.is_some()
    }
}

fn bad_file(path: &Path, why: &str) -> String {
    format!("Unrecoverable error: corrupted cluster config file {}: {why}", path.display())
}

/// 40 hex digits from the OS's randomness (a new node's id).
fn random_node_id() -> String {
    let mut bytes = [0u8; 20];
    let filled = std::fs::File::open("/dev/urandom")
        .and_then(|mut file| std::io::Read::read_exact(&mut file, &mut bytes));
    if filled.is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_nanos());
        bytes[..16].copy_from_slice(&nanos.to_le_bytes());
    }
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

const CROSSSLOT: &str = "CROSSSLOT Keys in request don't hash to the same slot";
const TRYAGAIN: &str = "TRYAGAIN Multiple keys request during rehashing of slot";
const CLUSTER_DOWN_UNBOUND: &str = "CLUSTERDOWN Hash slot not served";
const CLUSTER_DOWN: &str = "CLUSTERDOWN The cluster is down";
/// What a CLUSTER command, READONLY, READWRITE and ASKING answer without cluster mode.
pub(super) const DISABLED: &str = "ERR This instance has cluster support disabled";

/// Per-connection cluster state.
#[derive(Debug, Default)]
pub struct ClientCluster {
    /// READONLY: reads of the primary's slots may be served by its replica.
    readonly: bool,
    /// ASKING: the next command may reach a slot this node imports.
    asking: bool,
    /// The slot of the running command's keys (a script's calls must keep to it).
    slot: Option<u16>,
    /// The running script may touch keys of several slots.
    cross_slot_allowed: bool,
}

/// After each command but ASKING, outside MULTI: ASKING lasts one command.
pub(super) fn after_command(session: &mut Session, routed: &Routed) {
    let asking = matches!(
        routed.route,
        Route::Command(proto_resp::CommandId::Cluster(proto_resp::commands::ClusterId::Asking))
    );
    if !asking && session.tx.is_none() {
        session.cluster.asking = false;
    }
}

/// Redis's `getNodeByQuery`: the error that sends `command` elsewhere, or None to run it
/// here. EXEC is judged by the commands it queued, together.
pub(super) fn refusal(
    shared: &Shared,
    session: &Session,
    routed: &Routed,
    command: &Command<'_>,
) -> Option<Vec<u8>> {
    judge(shared, session, routed, command).err()
}

/// [`refusal`], and when the command runs here, the slot of its keys (None: no key).
pub(super) fn judge(
    shared: &Shared,
    session: &Session,
    routed: &Routed,
    command: &Command<'_>,
) -> Result<Option<u16>, Vec<u8>> {
    let Some(cluster) = shared.redis.cluster.get() else { return Ok(None) };
    let is_exec = matches!(
        routed.route,
        Route::Command(proto_resp::CommandId::Transactions(proto_resp::commands::TxId::Exec))
    );
    let mut query = Query::default();
    let mut is_write = routed.spec.flags.contains(Flags::WRITE);
    if is_exec {
        is_write = false;
        let Some(queued) = super::tx::queued_commands(session) else { return Ok(None) };
        for command in &queued {
            let args: Vec<&[u8]> = command.args().collect();
            let Some((name, flags)) = name_and_flags(&args) else { continue };
            is_write |= flags.contains(Flags::WRITE);
            query.add_all(shared, cluster, command_keys(name, &args))?;
        }
    } else if let Some(positions) = fixed_key_positions(routed, command) {
        // Most commands: keys at fixed positions, read without a key spec lookup.
        let keys = positions.filter_map(|at| command.arg(at));
        query.add_all(shared, cluster, keys)?;
    } else if has_keys(routed) {
        let args: Vec<&[u8]> = command.args().collect();
        let name = name_and_flags(&args).map_or(routed.spec.name, |(name, _)| name);
        query.add_all(shared, cluster, command_keys(name, &args))?;
    }
    let asking = session.cluster.asking || !is_exec && routed.spec.flags.contains(Flags::ASKING);
    match query.verdict(cluster, session, is_write, asking, routed) {
        Some(message) => Err(message),
        None => Ok(query.slot),
    }
}

/// A command a script runs (`redis.call`): refused unless this node serves its keys, as
/// Redis's `scriptVerifyClusterState` refuses it, and, unless the script may
/// (`allow-cross-slot-keys`, or an EVAL without a shebang), when its keys are of another
/// slot than the script's keys so far.
pub(super) fn script_refusal(
    shared: &Shared,
    session: &mut Session,
    routed: &Routed,
    command: &Command<'_>,
) -> Option<&'static str> {
    match judge(shared, session, routed, command) {
        Ok(None) => None,
        Ok(Some(slot)) => {
            let state = &mut session.cluster;
            match state.slot {
                None => state.slot = Some(slot),
                Some(first) if first != slot && !state.cross_slot_allowed => {
                    return Some(
                        "ERR Script attempted to access keys that do not hash to the same slot",
                    );
                }
                Some(_) => {}
            }
            None
        }
        Err(refused) if refused == CLUSTER_DOWN.as_bytes() => {
            Some("ERR Script attempted to execute a command while the cluster is down")
        }
        Err(_) => Some("ERR Script attempted to access a non local key in a cluster node"),
    }
}

/// The slot of the command about to run (its script's calls compare theirs with it).
pub(super) fn set_command_slot(session: &mut Session, slot: Option<u16>) {
    session.cluster.slot = slot;
}

/// Before a script runs: whether it may touch keys of several slots.
pub(super) fn allow_cross_slot(session: &mut Session, allowed: bool) {
    session.cluster.cross_slot_allowed = allowed;
}

/// What a script's shebang flag `no-cluster` gets on a cluster node.
pub(super) const NO_CLUSTER_SCRIPT: &str =
    "ERR Can not run script on cluster, 'no-cluster' flag is set.";

/// The key positions of a command whose keys are where its (first, last, step) triple
/// says (no `numkeys`, no keyword, not a subcommand): None for the others.
fn fixed_key_positions(
    routed: &Routed,
    command: &Command<'_>,
) -> Option<std::iter::StepBy<std::ops::RangeInclusive<usize>>> {
    let spec = routed.spec;
    let fixed = spec.first_key > 0
        && !spec.flags.contains(Flags::MOVABLEKEYS)
        && matches!(routed.route, Route::Command(_))
        && !is_shard_channel_command(spec.name);
    if !fixed {
        return None;
    }
    let argc = command.argc() as i32;
    let last = if spec.last_key < 0 { argc + spec.last_key } else { spec.last_key };
    let (first, last) = (spec.first_key as usize, last.max(0) as usize);
    Some((first..=last).step_by(spec.step.max(1) as usize))
}

/// A command's full name and flags (a subcommand's are its container's here: none of
/// the containers with keyed subcommands differ).
fn name_and_flags(args: &[&[u8]]) -> Option<(&'static str, Flags)> {
    let spec = proto_resp::lookup(args.first()?)?;
    let (name, _) = proto_resp::commands::command_of_line(args)?;
    Some((name, spec.flags))
}

/// Whether a command can name a key at all (Redis skips the check for those that cannot).
fn has_keys(routed: &Routed) -> bool {
    let spec = routed.spec;
    spec.first_key > 0
        || spec.flags.contains(Flags::MOVABLEKEYS)
        || matches!(routed.route, Route::Subcommand(_)) && spec.name == "object"
        || is_shard_channel_command(spec.name)
}

fn is_shard_channel_command(name: &str) -> bool {
    matches!(name, "spublish" | "ssubscribe" | "sunsubscribe")
}

/// The keys Redis routes a command line by: its key specs' keys, and a sharded pub/sub
/// command's channels.
fn command_keys<'a>(name: &str, args: &[&'a [u8]]) -> Vec<&'a [u8]> {
    match name {
        "spublish" => args.get(1).copied().into_iter().collect(),
        "ssubscribe" | "sunsubscribe" => args[1..].to_vec(),
        _ => match proto_resp::commands::command_meta(name) {
            Some(meta) => meta.keys(args).into_iter().map(|key| args[key.at]).collect(),
            None => Vec::new(),
        },
    }
}

/// What the keys of one query found.
#[derive(Default)]
struct Query {
    /// The slot of the first key, and its word's fields.
    slot: Option<u16>,
    owner: u64,
    migrating_to: u64,
    importing_from: u64,
    multiple_keys: bool,
    missing_keys: usize,
    existing_keys: usize,
    scratch: Vec<u8>,
}

impl Query {
    fn add_all<'k>(
        &mut self,
        shared: &Shared,
        cluster: &Cluster,
        keys: impl IntoIterator<Item = &'k [u8]>,
    ) -> Result<(), Vec<u8>> {
        let mut add = |key| self.add(shared, cluster, key).map_err(|e| e.as_bytes().to_vec());
        keys.into_iter().try_for_each(&mut add)
    }

    fn add(&mut self, shared: &Shared, cluster: &Cluster, key: &[u8]) -> Result<(), &'static str> {
        let slot = key_slot(key);
        match self.slot {
            None => {
                let (owner, migrating_to, importing_from) = cluster.word(slot);
                if owner == NONE {
                    return Err(CLUSTER_DOWN_UNBOUND);
                }
                let myself = cluster.myself.load(Relaxed) as u64;
                self.slot = Some(slot);
                self.owner = owner;
                self.migrating_to = if owner == myself { migrating_to } else { NONE };
                self.importing_from = if self.migrating_to == NONE { importing_from } else { NONE };
            }
            Some(first) if first != slot => return Err(CROSSSLOT),
            Some(_) => self.multiple_keys = true,
        }
        if self.migrating_to != NONE || self.importing_from != NONE {
            let stored = crate::keyspace::encode(0, key, &mut self.scratch);
            match shared.core.store.reader().peek(stored).is_some() {
                true => self.existing_keys += 1,
                false => self.missing_keys += 1,
            }
        }
        Ok(())
    }

    fn verdict(
        &self,
        cluster: &Cluster,
        session: &Session,
        is_write: bool,
        asking: bool,
        routed: &Routed,
    ) -> Option<Vec<u8>> {
        let slot = self.slot?; // No key: served here.
        if !cluster.state_ok.load(Relaxed) {
            return Some(CLUSTER_DOWN.as_bytes().to_vec());
        }
        let open = self.migrating_to != NONE || self.importing_from != NONE;
        let is_migrate = matches!(
            routed.route,
            Route::Command(proto_resp::CommandId::Cluster(
                proto_resp::commands::ClusterId::Migrate
            ))
        );
        if open && is_migrate {
            return None;
        }
        if self.migrating_to != NONE && self.missing_keys > 0 {
            if self.existing_keys > 0 {
                return Some(TRYAGAIN.as_bytes().to_vec());
            }
            return Some(cluster.redirect("ASK", slot, self.migrating_to));
        }
        if self.importing_from != NONE && asking {
            if self.multiple_keys && self.missing_keys > 0 {
                return Some(TRYAGAIN.as_bytes().to_vec());
            }
            return None;
        }
        let myself = cluster.myself.load(Relaxed) as u64;
        if self.owner == myself {
            return None;
        }
        if session.cluster.readonly && !is_write && cluster.replicates(self.owner) {
            return None;
        }
        Some(cluster.redirect("MOVED", slot, self.owner))
    }
}
