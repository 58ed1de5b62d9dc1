//! The store's observers: what eviction, expiry and the release of a large collection
//! tell the rest of the server.

use std::sync::Arc;

use store::Store;

use crate::{
    resp::keyevents::{class, KeyspaceEvents},
    watch::Watchers,
};

/// What the store's eviction and expiry observers report to (beside tracking).
pub(crate) struct Observed<'a> {
    pub watchers: &'a Arc<Watchers>,
    pub keyspace_events: &'a Arc<KeyspaceEvents>,
    /// Expired and evicted keys a primary sends its replicas.
    pub dirty: &'a Arc<crate::repl::Dirty>,
    /// A picture under way keeps evicted items it still needs.
    pub picture: &'a Arc<crate::snapshot::Picture>,
}

/// The store's observers: an evicted item is logged for memcached `watch`, and an evicted
/// or expired one raises Redis keyspace events and tracking invalidations; an expired one
/// is noted for its blocked clients; a released owner item frees its large collection.
pub(crate) fn observe_store(
    store: &mut Store,
    Observed { watchers, keyspace_events, dirty, picture }: Observed<'_>,
    tracking: &Arc<crate::resp::tracking::Tracking>,
    pubsub: &Arc<crate::resp::pubsub::Registry>,
    owned: &Arc<crate::owned::Registry>,
    blocking: &Arc<crate::resp::blocking::Waiters>,
) {
    let clock = Arc::clone(&store.config().clock);
    let watch_evictions = crate::memcache::watch::eviction_observer(watchers, clock);
    let events = Arc::clone(keyspace_events);
    let (tracked, subs) = (Arc::clone(tracking), Arc::clone(pubsub));
    let evicted = Arc::clone(dirty);
    let picture = Arc::clone(picture);
    store.set_eviction_observer(Arc::new(move |item: &store::Item<'_>| {
        picture.keep_evicted(item);
        watch_evictions(item);
        evicted.note(item.key());
        events.emit_stored(class::EVICTED, b"evicted", item.key());
        if tracked.any() {
            invalidate_stored(&tracked, &subs, item.key());
        }
    }));
    let events = Arc::clone(keyspace_events);
    let (tracked, subs) = (Arc::clone(tracking), Arc::clone(pubsub));
    let waiters = Arc::clone(blocking);
    let expired = Arc::clone(dirty);
    store.set_expiry_observer(Arc::new(move |stored: &[u8]| {
        expired.note(stored);
        events.emit_stored(class::EXPIRED, b"expired", stored);
        waiters.note_expired(stored);
        if tracked.any() {
            invalidate_stored(&tracked, &subs, stored);
        }
    }));
    let registry = Arc::clone(owned);
    store.set_release_observer(Arc::new(move |handle: &[u8]| registry.release(handle)));
}

/// An expired or evicted item's key, as the store names it: invalidated for the clients
/// that track it (not on a worker's command path: every loop it reaches is woken).
fn invalidate_stored(
    tracking: &crate::resp::tracking::Tracking,
    pubsub: &crate::resp::pubsub::Registry,
    stored: &[u8],
) {
    if let Some((_, name)) = crate::keyspace::decode(stored) {
        tracking.invalidate(pubsub, &[name], 0, usize::MAX);
    }
}
