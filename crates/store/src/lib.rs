//! The store: Spinel's storage engine, shared by every worker thread and both protocols.
//! (Design notes are filled in with the engine.)

mod clock;
mod index;
mod item;
mod mem;
mod segment;
mod store;
mod types;

pub use clock::{Clock, ManualClock, SystemClock};
pub use store::{Reader, Store};
pub use types::{
    Change, Config, ConfigError, EvictObserver, Expiry, Item, Mode, OwnedItem, Stats, StoreError,
    WhenFull, KEY_LEN_MAX, MIB,
};
