//! The store: Spinel's storage engine, shared by every worker thread and both protocols.
//!
//! Goals: the most items in a fixed amount of memory, reads that never wait for writers,
//! writes that lock one of 1024 stripes briefly, a hard memory bound, a hit ratio above LRU's.
//! Non-goals: protocols, sockets, threads of its own (`maintain` is called by the server's
//! loops), persistence.
//!
//! ```text
//!   key --xxh3--> [sub 6 | pos 32 | stripe 11 | tag 14]
//!                   |        |
//!                   v        v
//!   index: 64 sub-tables, each buckets of 8 slots (64 B); two candidate buckets per key
//!          slot = [tag 14 | valid | freq 2 | - | segment 24 | offset 20]
//!                                                 |
//!                                                 v
//!   segments (256 KiB, one mmap):  [hdr key value][hdr key value]...   append-only
//!          queues: small FIFO (new items) -> main FIFO (items read again), S3-FIFO style
//!   large items (>= 1/4 segment): a mapping each
//! ```
//!
//! - Items are appended to per-thread active segments; the CAS unique is the segment's
//!   sequence number and the item's offset, so it costs no bytes (item.rs).
//! - Reads pin the epoch (crossbeam-epoch) and take no lock; memory is reused only after
//!   every reader that could see it has unpinned (store.rs, segment.rs). Item bytes are
//!   read and written only through bytes.rs, which holds the store's pointer arithmetic.
//! - Eviction takes whole segments in S3-FIFO order: from the small queue, items read since
//!   they were written move to main and the rest leave; from main, read items are copied
//!   forward once per read. Items the policy protects (`WhenFull::EvictVolatile`: those
//!   without an expiry; the `NeverEvict` predicate's) are kept as read ones are, and a write
//!   that finds only them is refused after one bounded pass (store/protect.rs). Expiry reclaims whole segments whose items all expired; items
//!   are grouped by TTL class so that this happens, and dead segments gather at the heads of
//!   their class's queue, where `maintain` and writes find them without a scan (store/reclaim.rs).
//!   Expired items among live ones are found by a sweep of the index, a slice per
//!   `maintain` call, which reads only items of segments whose earliest expiry has passed
//!   (store/sweep.rs).
//! - One budget covers segments, index tables and large items; see `segment.rs`. Memory an
//!   item refers to outside the store (an *owner*, `OWNER_FLAGS`: a large Redis collection
//!   kept by exec) is charged to it too (`charge_outside`), and given back when the release
//!   observer, told once when the owner's index entry goes for any reason, says how much.
//!   Owners are evicted one by one in write order, by queue entries of their own, and
//!   copied forward when their segment goes (`store/owners.rs`).
//! - Cores: a get writes no line that another worker's requests use (once an item was read
//!   three times: its frequency in the index slot is saturated), and a write takes one stripe
//!   lock and writes its index slot (plus the sub-table count for a new key or a removal);
//!   segment appends go to the thread's own active segment. The feature
//!   `count-shared-writes` counts these per thread and site, and tests/shared_writes.rs
//!   asserts them (`shared_writes.rs`).
//!
//! ```
//! use store::{Config, Expiry, Mode, Store};
//! let store = Store::new(Config::default()).unwrap();
//! let cas = store.store(b"greeting", b"hello", 0, Expiry::Never, Mode::Set).unwrap();
//! let reader = store.reader();
//! let item = reader.get(b"greeting").unwrap();
//! assert_eq!((item.value(), item.cas()), (&b"hello"[..], cas));
//! ```

mod bytes;
mod clock;
mod index;
mod item;
pub mod loans;
mod mem;
mod segment;
pub mod shared_writes;
mod store;
mod types;

pub use clock::{Clock, FrozenClock, ManualClock, SystemClock};
pub use store::{set_reads_touch, KeyHash, Miss, ReadPin, Reader, Store, Swept};
pub use types::{
    Change, Config, ConfigError, EvictObserver, ExpireObserver, Expiry, Item, MemoryBreakdown,
    MetaState, Mode, NeverEvict, OwnedItem, ReleaseObserver, Stats, StoreError, StoreOptions,
    Stored, ValueKind, WhenFull, KEY_LEN_MAX, MIB, OWNER_FLAGS,
};
