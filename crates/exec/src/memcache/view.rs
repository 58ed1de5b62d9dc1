//! What memcached's handlers may touch: [`MemcacheView`], made from a reference to the
//! server's [`Shared`] at each entry point (`execute`, the binary and SASL entry points, the
//! login step, the refusals of too-large sets), so that a handler's signature says it
//! reaches the core, memcached's own state, and of Redis only [`RedisLinks`].
//!
//! ```text
//!   Shared --memcache_view()--> MemcacheView: core() -> &Core, memcache() -> &MemcacheState,
//!                                             redis() -> RedisLinks
//!   RedisLinks: ACL logins and key rules (users), ACL LOG and failed-login counts,
//!               client-side caching (a change of a key, a flush), INFO errorstats'
//!               reset by `stats reset` (as CONFIG RESETSTAT)
//! ```
//!
//! A memcached write tells what it did in its context ([`Changed`]); the entry point turns
//! that into Redis invalidations after the request, as Redis's `signalModifiedKey` runs
//! only on an actual change.

use std::sync::Arc;

use crate::{
    resp::acl::{log::Event, Account},
    Core, MemcacheState, RedisState, Shared,
};

/// The parts of [`Shared`] memcached's handlers use: [`MemcacheView::core`],
/// [`MemcacheView::memcache`] and [`MemcacheView::redis`], nothing else. One reference,
/// private to this file, behind accessors: passed as cheaply as the `&Shared` it replaces
/// (a view of three references, passed through every entry point and handler, cost a
/// memcached get about 4% more instructions under callgrind).
#[derive(Clone, Copy)]
pub struct MemcacheView<'a> {
    shared: &'a Shared,
}

/// Of Redis's state, only what memcached legitimately uses: its ACL users (logins on the
/// memcached port, and the rules they bring), ACL LOG and the failed-login count, the
/// client-side caching table (memcached writes invalidate tracked keys) and the error
/// counts `stats reset` clears. Nothing else of [`RedisState`] is reachable through it.
#[derive(Clone, Copy)]
pub struct RedisLinks<'a> {
    redis: &'a RedisState,
}

impl Shared {
    /// The memcached side's view of this state (see [`MemcacheView`]).
    #[inline(always)]
    pub fn memcache_view(&self) -> MemcacheView<'_> {
        MemcacheView { shared: self }
    }
}

impl<'a> MemcacheView<'a> {
    /// What both protocols share (the store, settings, clock, counters, clients).
    #[inline(always)]
    pub fn core(self) -> &'a Core {
        &self.shared.core
    }

    /// What memcached alone uses.
    #[inline(always)]
    pub fn memcache(self) -> &'a MemcacheState {
        &self.shared.memcache
    }

    /// The few Redis registries memcached has business with.
    #[inline(always)]
    pub fn redis(self) -> RedisLinks<'a> {
        RedisLinks { redis: &self.shared.redis }
    }

    /// A primary with replicas: the items at these stored keys go to them as they are now,
    /// with their flags and CAS (`crate::repl`).
    pub(crate) fn journal_items(self, stored: &[&[u8]]) {
        let keys = stored.iter().filter_map(|key| crate::keyspace::decode(key));
        crate::repl::journal_keys(self.shared, keys, true);
    }

    /// A save's picture under way: the item at `stored` is kept before a write changes it
    /// (`crate::snapshot::Picture::keep`).
    pub(crate) fn keep_for_picture(self, stored: &[u8]) {
        self.shared.core.picture.keep(self.shared, stored);
    }

    /// A primary with replicas: every item went (`flush_all`).
    pub(crate) fn journal_flush(self) {
        crate::repl::journal_verbatim(self.shared, None, &[b"FLUSHALL"]);
    }

    /// `stats reset` (and CONFIG RESETSTAT, [`Shared::reset_totals`]): the counters, Redis's
    /// error counts, and the per-prefix and watch counts as memcached clears them.
    pub fn reset_totals(self) {
        self.core().reset_counts();
        self.redis().redis.error_stats.clear();
        self.memcache().prefix_stats.clear();
        self.memcache().watchers.reset_counts();
    }
}

impl RedisLinks<'_> {
    /// The Redis user `user` if `pass` is one of its passwords (memcached's logins).
    pub(crate) fn password_login(&self, user: &[u8], pass: &[u8]) -> Option<Arc<Account>> {
        self.redis.users.password_login(user, pass)
    }

    /// The account a new connection starts as: `default` if it needs no password.
    pub(crate) fn starting_account(&self) -> Option<Arc<Account>> {
        crate::resp::auth::starting_account_of(&self.redis.users)
    }

    /// Whether logging in means something: some user needs a password.
    pub(crate) fn logins_configured(&self) -> bool {
        self.redis.users.logins_configured()
    }

    /// Counts a failed login, as Redis's AUTH does (`INFO stats`).
    pub(crate) fn note_failed_login(&self) {
        self.redis.failed_logins.note_failure();
    }

    /// Adds `event` to ACL LOG; `client` describes the connection, made only if needed.
    pub(crate) fn log_acl(&self, event: Event<'_>, client: impl FnOnce() -> String) {
        self.redis.acl_log.note(event, client);
    }

    /// Whether any Redis client tracks keys (one relaxed load).
    #[inline]
    pub(crate) fn tracking_any(&self) -> bool {
        self.redis.tracking.any()
    }

    /// The item under stored key `stored` (database 0's form) changed: the Redis clients
    /// that track it are told. `worker` is the caller's (whose wake-ups it may do itself).
    pub(crate) fn key_changed(&self, stored: &[u8], worker: usize) {
        if let Some((_, name)) = crate::keyspace::decode(stored) {
            self.redis.tracking.invalidate(&self.redis.pubsub, &[name], 0, worker);
        }
    }

    /// Every item went (`flush_all`): every tracking client is told to drop its cache.
    pub(crate) fn flushed(&self, worker: usize) {
        self.redis.tracking.flush(&self.redis.pubsub, worker);
    }
}

/// What a memcached request changed in the store, as its handler tells it (in its
/// context) when the change is made: what the Redis clients tracking its keys are told
/// after the request. A write that did not take (a refused `add`, a `cas` mismatch, a
/// missing key, a refusal) leaves it [`Changed::Nothing`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Changed {
    #[default]
    Nothing,
    /// The request's one key: stored, deleted, incremented (or created by it), retimed,
    /// marked stale or emptied.
    Key,
    /// Some keys of a `gat`/`gats`: the ones it touched, whose offsets in its key list are
    /// in the session (`Session::touched`).
    Keys,
    /// Every item: `flush_all`, binary Flush.
    All,
}

impl Changed {
    /// What a write of the store family changed: its key when it stored, or when its
    /// refusal dropped the old item (`dropped`, see `core::storage::OnRefusal`).
    #[inline(always)]
    pub(crate) fn of_store(outcome: &crate::core::storage::StoreOutcome, dropped: bool) -> Changed {
        let stored = matches!(outcome, crate::core::storage::StoreOutcome::Stored(_));
        if stored || dropped {
            Changed::Key
        } else {
            Changed::Nothing
        }
    }
}
