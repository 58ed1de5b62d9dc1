//! Pub/sub: SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE and their UNSUBSCRIBEs, PUBLISH, SPUBLISH,
//! PUBSUB CHANNELS / NUMSUB / NUMPAT / SHARDCHANNELS / SHARDNUMSUB / HELP.
//!
//! A connection's subscriptions live in its session ([`Subscriptions`]) and in the shared
//! [`Registry`]; messages reach it through its [`Subscriber`]'s mailbox, which its worker's
//! loop drains (`Session::drain_messages`) when woken. In RESP2 a subscribed connection may
//! only run the (un)subscribe commands, PING, QUIT and RESET (`allowed_when_subscribed`);
//! in RESP3 messages are push frames and every command stays available.

mod registry;

use std::sync::Arc;

use proto_resp::Protocol;
pub(crate) use registry::Kind;
pub(crate) use registry::Woken;
pub use registry::{Drained, Notify, Registry, Subscriber, MAILBOX_LIMIT_BYTES};

use super::Ctx;

/// One connection's subscriptions, in the order they were made.
#[derive(Debug)]
pub(crate) struct Subscriptions {
    pub(crate) subscriber: Arc<Subscriber>,
    channels: Vec<Vec<u8>>,
    patterns: Vec<Vec<u8>>,
    shard: Vec<Vec<u8>>,
}

impl Subscriptions {
    fn list(&mut self, kind: Kind) -> &mut Vec<Vec<u8>> {
        match kind {
            Kind::Channel => &mut self.channels,
            Kind::Pattern => &mut self.patterns,
            Kind::Shard => &mut self.shard,
        }
    }

    /// The count a (un)subscribe reply carries: channels and patterns together, or the
    /// shard channels (Redis counts them apart).
    fn count(&self, kind: Kind) -> usize {
        match kind {
            Kind::Shard => self.shard.len(),
            _ => self.channels.len() + self.patterns.len(),
        }
    }

    /// Any subscription at all (RESP2's subscribed mode).
    pub(crate) fn active(&self) -> bool {
        !(self.channels.is_empty() && self.patterns.is_empty() && self.shard.is_empty())
    }

    /// Drops every subscription from the registry (the connection closed, or RESET).
    pub(crate) fn leave(&mut self, registry: &Registry) {
        for kind in [Kind::Channel, Kind::Pattern, Kind::Shard] {
            for name in std::mem::take(self.list(kind)) {
                registry.remove(kind, &name, &self.subscriber);
            }
        }
    }
}

/// After `account`'s rules changed (`deleted`: it is gone): closes its connections whose
/// subscriptions it no longer allows, as Redis 7.0 does.
pub(crate) fn drop_revoked(shared: &crate::Shared, account: &Arc<super::acl::Account>) {
    let deleted = account.deleted.load(std::sync::atomic::Ordering::Acquire);
    let user = account.user.read().clone();
    shared.redis.pubsub.cut_off_revoked(account, |kind, name| {
        !deleted && user.allows_channel(name, kind == Kind::Pattern)
    });
}

/// Commands a RESP2 connection may run while it has subscriptions.
pub(crate) fn allowed_when_subscribed(name: &str) -> bool {
    matches!(
        name,
        "subscribe"
            | "ssubscribe"
            | "psubscribe"
            | "unsubscribe"
            | "sunsubscribe"
            | "punsubscribe"
            | "ping"
            | "quit"
            | "reset"
    )
}

/// Redis's error for any other command in RESP2's subscribed mode.
pub(crate) fn not_allowed_message(name: &str) -> String {
    format!(
        "ERR Can't execute '{name}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / \
         RESET are allowed in this context"
    )
}

pub(super) fn dispatch(ctx: &mut Ctx<'_>, id: proto_resp::commands::PubsubId) {
    use proto_resp::commands::PubsubId as P;
    dispatch_command(ctx, id);
    if !matches!(id, P::Publish | P::Spublish) {
        show_counts(ctx.session);
    }
}

/// Copies the subscription counts where CLIENT LIST reads them.
pub(crate) fn show_counts(session: &super::Session) {
    use std::sync::atomic::Ordering::Relaxed;
    let counts = session
        .pubsub
        .as_ref()
        .map_or([0; 3], |subs| [subs.channels.len(), subs.patterns.len(), subs.shard.len()]);
    for (shown, count) in session.activity.subscriptions.iter().zip(counts) {
        shown.store(count as u32, Relaxed);
    }
    if let Some(subs) = &session.pubsub {
        subs.subscriber.set_subscribed(subs.active());
    }
}

fn dispatch_command(ctx: &mut Ctx<'_>, id: proto_resp::commands::PubsubId) {
    use proto_resp::commands::PubsubId as P;
    match id {
        P::Subscribe => subscribe(ctx, Kind::Channel),
        P::Psubscribe => subscribe(ctx, Kind::Pattern),
        P::Ssubscribe => subscribe(ctx, Kind::Shard),
        P::Unsubscribe => unsubscribe(ctx, Kind::Channel),
        P::Punsubscribe => unsubscribe(ctx, Kind::Pattern),
        P::Sunsubscribe => unsubscribe(ctx, Kind::Shard),
        P::Publish => publish(ctx, false),
        P::Spublish => publish(ctx, true),
    }
}

fn verbs(kind: Kind) -> (&'static [u8], &'static [u8]) {
    match kind {
        Kind::Channel => (b"subscribe", b"unsubscribe"),
        Kind::Pattern => (b"psubscribe", b"punsubscribe"),
        Kind::Shard => (b"ssubscribe", b"sunsubscribe"),
    }
}

/// The session's subscriptions, made with its subscriber on first use (also by CLIENT
/// TRACKING, whose invalidations come through the same mailbox).
pub(in crate::resp) fn subscriptions<'a>(ctx: &'a mut Ctx<'_>) -> &'a mut Subscriptions {
    let worker = ctx.shared.core.worker_of(ctx.counters);
    let resp3 = ctx.session.protocol == Protocol::Resp3;
    let registry = &ctx.shared.redis.pubsub;
    let id = ctx.session.client.lock().id;
    let subs = ctx.session.pubsub.get_or_insert_with(|| {
        let subscriber = Arc::new(Subscriber::new(worker, resp3));
        registry.register_client(id, &subscriber);
        Box::new(Subscriptions {
            subscriber,
            channels: Vec::new(),
            patterns: Vec::new(),
            shard: Vec::new(),
        })
    });
    subs.subscriber.set_resp3(resp3);
    subs
}

/// One `[verb, name, count]` push per name.
fn confirm(ctx: &mut Ctx<'_>, verb: &[u8], name: Option<&[u8]>, count: usize) {
    ctx.session.pushed = true;
    let mut reply = ctx.reply();
    reply.push(3);
    reply.bulk(verb);
    match name {
        Some(name) => reply.bulk(name),
        None => reply.null(),
    }
    reply.integer(count as i64);
}

fn subscribe(ctx: &mut Ctx<'_>, kind: Kind) {
    let names: Vec<Vec<u8>> = (1..ctx.argc()).map(|i| ctx.arg(i).to_vec()).collect();
    let account = ctx.session.account.clone();
    subscriptions(ctx).subscriber.set_account(account);
    for name in names {
        let registry = &ctx.shared.redis.pubsub;
        let subs = subscriptions(ctx);
        if !subs.list(kind).contains(&name) {
            registry.add(kind, &name, &subs.subscriber);
            subs.list(kind).push(name.clone());
        }
        let count = subs.count(kind);
        confirm(ctx, verbs(kind).0, Some(&name), count);
    }
}

fn unsubscribe(ctx: &mut Ctx<'_>, kind: Kind) {
    let verb = verbs(kind).1;
    let mut names: Vec<Vec<u8>> = (1..ctx.argc()).map(|i| ctx.arg(i).to_vec()).collect();
    if names.is_empty() {
        names = ctx.session.pubsub.as_mut().map(|s| s.list(kind).clone()).unwrap_or_default();
        if names.is_empty() {
            let count = ctx.session.pubsub.as_ref().map_or(0, |s| s.count(kind));
            return confirm(ctx, verb, None, count);
        }
    }
    for name in names {
        let registry = &ctx.shared.redis.pubsub;
        let count = match ctx.session.pubsub.as_mut() {
            Some(subs) => {
                let list = subs.list(kind);
                if let Some(at) = list.iter().position(|n| *n == name) {
                    list.remove(at);
                    registry.remove(kind, &name, &subs.subscriber);
                }
                subs.count(kind)
            }
            None => 0,
        };
        confirm(ctx, verb, Some(&name), count);
    }
}

fn publish(ctx: &mut Ctx<'_>, shard: bool) {
    let worker = ctx.shared.core.worker_of(ctx.counters);
    let receivers = ctx.shared.redis.pubsub.publish(ctx.arg(1), ctx.arg(2), shard, worker);
    ctx.reply().integer(receivers as i64);
}

/// PUBSUB CHANNELS / SHARDCHANNELS [pattern].
pub(super) fn channels(ctx: &mut Ctx<'_>, shard: bool) {
    let kind = if shard { Kind::Shard } else { Kind::Channel };
    let pattern = (ctx.argc() > 2).then(|| ctx.arg(2));
    let names = ctx.shared.redis.pubsub.names(kind, pattern);
    let mut reply = ctx.reply();
    reply.array(names.len());
    for name in &names {
        reply.bulk(name);
    }
}

/// PUBSUB NUMSUB / SHARDNUMSUB [channel ...]: name and count pairs, a flat array in both
/// protocols (as Redis 7.0 answers).
pub(super) fn numsub(ctx: &mut Ctx<'_>, shard: bool) {
    let kind = if shard { Kind::Shard } else { Kind::Channel };
    let counts: Vec<(Vec<u8>, usize)> = (2..ctx.argc())
        .map(|i| (ctx.arg(i).to_vec(), ctx.shared.redis.pubsub.count(kind, ctx.arg(i))))
        .collect();
    let mut reply = ctx.reply();
    reply.array(counts.len() * 2);
    for (name, count) in &counts {
        reply.bulk(name);
        reply.integer(*count as i64);
    }
}

/// PUBSUB NUMPAT: distinct patterns subscribed to.
pub(super) fn numpat(ctx: &mut Ctx<'_>) {
    let patterns = ctx.shared.redis.pubsub.len(Kind::Pattern);
    ctx.reply().integer(patterns as i64);
}

const HELP: &[&str] = &[
    "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CHANNELS [<pattern>]",
    "    Return the currently active channels matching a <pattern> (default: '*').",
    "NUMPAT",
    "    Return number of subscriptions to patterns.",
    "NUMSUB [<channel> ...]",
    "    Return the number of subscribers for the specified channels, excluding",
    "    pattern subscriptions(default: no channels).",
    "SHARDCHANNELS [<pattern>]",
    "    Return the currently active shard level channels matching a <pattern> (default: '*').",
    "SHARDNUMSUB [<shardchannel> ...]",
    "    Return the number of subscribers for the specified shard level channel(s)",
    "HELP",
    "    Prints this help.",
];

pub(super) fn help(ctx: &mut Ctx<'_>) {
    let mut reply = ctx.reply();
    reply.array(HELP.len());
    for line in HELP {
        reply.simple(line.as_bytes());
    }
}

/// PING in RESP2's subscribed mode: `pong` and the message (empty without one), as an array.
pub(super) fn subscribed_ping(ctx: &mut Ctx<'_>) {
    let message = ctx.cmd.arg(1).unwrap_or_default().to_vec();
    let mut reply = ctx.reply();
    reply.array(2);
    reply.bulk(b"pong");
    reply.bulk(&message);
}
