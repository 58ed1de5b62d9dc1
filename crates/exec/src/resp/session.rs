//! A Redis connection's state (`Session`): its database and protocol, login, transaction,
//! subscriptions, blocking wait, tracking, and its part in replication.

use proto_resp::Protocol;

use super::{
    acl, auth, blocking, clients, cluster, monitor, pubsub, replication, script, tracking, ttl, tx,
    ClientInfo, SharedClient,
};
use crate::Shared;

/// Per-connection state of a Redis connection.
#[derive(Debug, Default)]
pub struct Session {
    pub db: u8,
    pub protocol: Protocol,
    /// What `CLIENT INFO` shows of this connection; `client.id` is 0 for a session that
    /// was made with `Default` rather than [`Session::connect`].
    pub client: SharedClient,
    /// Reused for encoded keys of databases other than 0.
    pub(super) key_scratch: Vec<u8>,
    /// The open transaction, between MULTI and EXEC or DISCARD.
    pub(super) tx: Option<tx::Transaction>,
    /// Keys WATCHed since the last EXEC, DISCARD or UNWATCH.
    pub(super) watched: Vec<tx::Watched>,
    /// The user it logged in as; None until it has (then it may run only AUTH, HELLO,
    /// QUIT and RESET; see `auth`).
    pub(super) account: Option<std::sync::Arc<acl::Account>>,
    /// Its pub/sub subscriptions, once it has made one.
    pub(super) pubsub: Option<Box<pubsub::Subscriptions>>,
    /// What CLIENT LIST shows of its commands (shared with `client`'s entry).
    pub(super) activity: std::sync::Arc<clients::Activity>,
    /// CLIENT REPLY.
    pub(super) reply_mode: ReplyMode,
    /// The command composed a (un)subscribe confirmation: a push, which Redis sends even
    /// under CLIENT REPLY OFF or SKIP (a client that subscribes waits for it).
    pub(super) pushed: bool,
    /// A command held by CLIENT PAUSE waits, unread, for the pause to end.
    pub(super) postponed: bool,
    /// It ran MONITOR (its subscriber is in `RedisState::monitors`).
    pub(super) monitoring: bool,
    /// A script's `redis.call` runs (MONITOR shows its commands as from `lua`).
    pub(super) in_script: bool,
    /// While it waits in a blocking command (BLPOP ...): its place in `RedisState::blocking`
    /// (boxed: an idle connection pays a pointer for it).
    pub(super) blocked: Option<Box<blocking::Blocked>>,
    /// Keys this command (or transaction) wrote while clients wait: their waiters are
    /// served once it is done (see `blocking`).
    pub(super) ready_keys: Vec<Vec<u8>>,
    /// CLIENT TRACKING and CACHING (see `tracking`).
    pub(super) tracking: tracking::ClientTracking,
    /// READONLY and ASKING (see `cluster`).
    pub(super) cluster: cluster::ClientCluster,
    /// Its worker serves this batch outside the gate because a script is busy
    /// ([`crate::gate::Entered::Busy`]): every command but the script KILLs gets `-BUSY`.
    pub(super) busy: bool,
    /// Its script, past the busy limit, yielded to its loop ([`Session::resume_script`]).
    pub(super) script: Option<Box<script::Suspended>>,
    /// A loop drives this session (a connection's): a busy script it runs may yield to
    /// that loop. Off for sessions nothing resumes (harnesses, fuzzers).
    pub(super) script_may_suspend: bool,
    /// A replica's connection (REPLCONF, PSYNC): what it said, and its feed (`repl`).
    pub(super) replica: Option<Box<replication::ReplicaConn>>,
    /// The replication link's session: commands of the primary's stream (no ACL, no
    /// READONLY, not journaled again).
    pub(super) from_master: bool,
}

/// CLIENT REPLY's setting: whether replies are sent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) enum ReplyMode {
    #[default]
    On,
    Off,
    /// The next command's reply is dropped, then On again.
    SkipNext,
    /// Set by a command run under SkipNext: drop this reply, then On.
    Skipping,
}

impl Session {
    /// A session for a new connection, listed by `CLIENT LIST` until
    /// [`Session::disconnect`]. `addr` and `laddr` are the peer and local addresses as
    /// `ip:port`.
    pub fn connect(shared: &Shared, addr: &str, laddr: &str) -> Session {
        let client = ClientInfo {
            addr: addr.to_owned(),
            laddr: laddr.to_owned(),
            connected_ms: ttl::now_ms(shared),
            resp: 2,
            activity: std::sync::Arc::new(clients::Activity::connected_at(
                shared.core.clock_secs(),
            )),
            ..ClientInfo::default()
        };
        let activity = std::sync::Arc::clone(&client.activity);
        let client = shared.core.clients.register(client);
        let account = auth::starting_account(shared);
        let tracking = tracking::ClientTracking::of(client.lock().id);
        Session {
            client,
            account,
            activity,
            tracking,
            script_may_suspend: true,
            ..Session::default()
        }
    }

    /// RESP2 with subscriptions: only the pub/sub commands, PING, QUIT and RESET run.
    pub(super) fn resp2_subscribed(&self) -> bool {
        self.protocol == Protocol::Resp2 && self.pubsub.as_ref().is_some_and(|s| s.active())
    }

    /// Whether it has ever subscribed: its loop must then drain its mailbox
    /// ([`Session::drain_messages`]) when woken.
    pub fn is_subscriber(&self) -> bool {
        self.pubsub.is_some()
    }

    /// Moves the pub/sub messages waiting for it into `out`.
    pub fn drain_messages(&self, out: &mut Vec<u8>) -> pubsub::Drained {
        match &self.pubsub {
            Some(subs) => subs.subscriber.drain(out),
            None => pubsub::Drained::Open,
        }
    }

    /// Whether its mailbox went over the pub/sub output limit: close the connection.
    pub fn is_cut_off(&self) -> bool {
        self.pubsub.as_ref().is_some_and(|subs| subs.subscriber.is_cut_off())
    }

    /// Whether CLIENT PAUSE holds its next command ([`crate::Flow::Postpone`]).
    pub fn is_postponed(&self) -> bool {
        self.postponed
    }

    /// At each wake and tick of its loop, for a postponed session: true once the pause is
    /// over (its held input may run).
    pub fn pause_ended(&mut self, shared: &Shared) -> bool {
        if self.postponed && shared.redis.pause.over(ttl::now_ms(shared)) {
            self.postponed = false;
            shared.redis.pause.note_held(false);
        }
        !self.postponed
    }

    /// Marks the batch about to run as served outside the gate while a script is busy
    /// (`true`), or inside it as usual (`false`).
    pub fn set_busy(&mut self, busy: bool) {
        self.busy = busy;
    }

    /// The session of the replica link: runs its primary's stream.
    pub(crate) fn master_client(shared: &Shared) -> Session {
        let mut session = Session::connect(shared, "master:0", "");
        session.from_master = true;
        session.activity.set(clients::flag::MASTER, true);
        session.script_may_suspend = false;
        session
    }

    /// For a replica's connection: moves the stream waiting for it into `out`; false when
    /// the connection must close (its copy failed, or it fell behind the backlog).
    pub fn drain_replica(&self, shared: &Shared, out: &mut Vec<u8>) -> bool {
        match self.replica.as_ref().and_then(|r| r.feed.as_ref()) {
            Some(feed) => feed.drain(shared, out) == crate::repl::feed::Drained::Open,
            None => true,
        }
    }

    /// Whether this connection is a replica being fed.
    pub fn is_replica_feed(&self) -> bool {
        self.replica.as_ref().is_some_and(|r| r.feed.is_some())
    }

    /// Removes the connection from `CLIENT LIST`; call once, when it closes.
    pub fn disconnect(&mut self, shared: &Shared) {
        if let Some(feed) = self.replica.as_ref().and_then(|r| r.feed.as_ref()) {
            feed.close(shared);
        }
        self.orphan_script();
        self.leave_blocking(shared);
        if std::mem::take(&mut self.postponed) {
            shared.redis.pause.note_held(false);
        }
        monitor::stop(shared, self);
        tracking::disconnect(shared, self);
        if let Some(subs) = &mut self.pubsub {
            subs.leave(&shared.redis.pubsub);
            shared.redis.pubsub.forget_client(self.client.lock().id);
        }
        shared.core.clients.remove(self.client.lock().id);
    }
}
