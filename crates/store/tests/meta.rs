//! What the store offers memcached's meta protocol: per-item meta state (stale, win token
//! sent), CAS uniques chosen by the client, `store_with` options and `Change::Rewrite`. Each
//! test writes through the public API and reads the item back; time is a `ManualClock`.

mod common;

use std::sync::Arc;

use common::incr;
use store::*;

const T0: u64 = 1_700_000_000_000;
const STALE: MetaState = MetaState { stale: true, win_token_sent: false };
const WON: MetaState = MetaState { stale: false, win_token_sent: true };

fn store_at_t0() -> (Store, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(T0));
    let config = Config {
        memory_bytes: 4 * MIB,
        segment_size_bytes: 64 * 1024,
        clock: clock.clone(),
        ..Config::default()
    };
    (Store::new(config).expect("valid config"), clock)
}

fn meta_of(s: &Store, key: &[u8]) -> Option<MetaState> {
    s.reader().peek(key).map(|item| item.meta_state())
}

fn cas_of(s: &Store, key: &[u8]) -> u64 {
    s.reader().peek(key).expect("present").cas()
}

fn rewrite(
    s: &Store,
    key: &[u8],
    expiry: Expiry,
    meta: MetaState,
    cas: Option<u64>,
) -> Option<u64> {
    s.modify(key, |_| (Change::Rewrite { expiry, meta, cas }, ())).expect("rewrite").0
}

// A new item has no meta state; Rewrite sets it and keeps value, flags and the CAS given.
#[test]
fn rewrite_sets_meta_state_and_keeps_value() {
    let (s, _) = store_at_t0();
    let cas = s.store(b"k", b"value", 7, Expiry::Never, Mode::Set).expect("set");
    assert_eq!(meta_of(&s, b"k"), Some(MetaState::default()));
    assert_eq!(rewrite(&s, b"k", Expiry::AtMs(T0 + 5000), WON, Some(cas)), Some(cas));
    let item = s.get(b"k").expect("present");
    assert_eq!((item.value.as_slice(), item.flags, item.cas), (&b"value"[..], 7, cas));
    assert_eq!(item.expiry, Expiry::AtMs(T0 + 5000));
    assert_eq!(meta_of(&s, b"k"), Some(WON));
    // A fresh CAS when none is given.
    let fresh = rewrite(&s, b"k", Expiry::Never, STALE, None).expect("written");
    assert_ne!(fresh, cas);
    assert_eq!((cas_of(&s, b"k"), meta_of(&s, b"k")), (fresh, Some(STALE)));
    // Nothing to rewrite: nothing happens.
    assert_eq!(rewrite(&s, b"absent", Expiry::Never, STALE, None), None);
    assert_eq!(meta_of(&s, b"absent"), None);
}

// Touches keep meta state; a new value (set, append, incr) resets it.
#[test]
fn touch_keeps_and_new_values_reset_meta_state() {
    let (s, _) = store_at_t0();
    for mode in [Mode::Set, Mode::Append] {
        s.store(b"k", b"1", 0, Expiry::Never, Mode::Set).expect("set");
        rewrite(&s, b"k", Expiry::Never, STALE, None);
        s.touch(b"k", Expiry::AtMs(T0 + 1000)).expect("touch");
        assert_eq!(meta_of(&s, b"k"), Some(STALE));
        s.get_and_touch(b"k", Expiry::Never).expect("gat");
        assert_eq!(meta_of(&s, b"k"), Some(STALE));
        s.store(b"k", b"2", 0, Expiry::Never, mode).expect("new value");
        assert_eq!(meta_of(&s, b"k"), Some(MetaState::default()), "{mode:?}");
    }
    rewrite(&s, b"k", Expiry::Never, WON, None);
    incr(&s, b"k", 1).expect("incr");
    assert_eq!(meta_of(&s, b"k"), Some(MetaState::default()));
}

// A chosen CAS unique sticks, through store_with and WriteWith, and is what CAS compares see.
#[test]
fn chosen_cas_unique() {
    let (s, _) = store_at_t0();
    let options = StoreOptions { cas: Some(4242), ..StoreOptions::default() };
    let stored = s.store_with(b"k", b"v", 0, Expiry::Never, Mode::Set, options).expect("set");
    assert_eq!((stored.cas, stored.value_len), (4242, 1));
    assert_eq!(cas_of(&s, b"k"), 4242);
    assert_eq!(s.store(b"k", b"w", 0, Expiry::Never, Mode::Cas(4241)), Err(StoreError::Exists));
    let cas = s.store(b"k", b"w", 0, Expiry::Never, Mode::Cas(4242)).expect("cas matches");
    assert_ne!(cas, 4242);
    let change = Change::WriteWith {
        value: b"tomb".to_vec(),
        flags: 3,
        expiry: Expiry::Never,
        cas: Some(99),
        meta: STALE,
    };
    assert_eq!(s.modify(b"k", |_| (change.clone(), ())).expect("write").0, Some(99));
    let item =
        s.reader().peek(b"k").map(|i| (i.value().to_vec(), i.flags(), i.cas(), i.meta_state()));
    assert_eq!(item, Some((b"tomb".to_vec(), 3, 99, STALE)));
    // A chosen CAS on an item stored already expired is still reported.
    let expired = StoreOptions { cas: Some(7), ..StoreOptions::default() };
    let stored = s.store_with(b"gone", b"v", 0, Expiry::AtMs(0), Mode::Set, expired).unwrap();
    assert_eq!(stored.cas, 7);
    assert_eq!(meta_of(&s, b"gone"), None);
}

// ms I: an older CAS stores the value stale, with the item's expiry and win-token bit; a newer
// or equal CAS does not.
#[test]
fn allow_stale_stores_older_cas_as_stale() {
    let (s, _) = store_at_t0();
    let first = s.store(b"k", b"old", 0, Expiry::AtMs(T0 + 9000), Mode::Set).expect("set");
    let second = rewrite(&s, b"k", Expiry::AtMs(T0 + 9000), WON, None).expect("rewritten");
    assert!(first < second);
    let stale = StoreOptions { allow_stale: true, ..StoreOptions::default() };
    let too_new = s.store_with(b"k", b"x", 0, Expiry::Never, Mode::Cas(second + 1), stale);
    assert_eq!(too_new, Err(StoreError::Exists));
    let without = s.store_with(b"k", b"x", 0, Expiry::Never, Mode::Cas(first), Default::default());
    assert_eq!(without, Err(StoreError::Exists));
    let stored = s.store_with(b"k", b"new", 5, Expiry::Never, Mode::Cas(first), stale).unwrap();
    let both = MetaState { stale: true, win_token_sent: true };
    assert_eq!((stored.value_len, stored.meta), (3, both));
    let item = s.get(b"k").expect("present");
    assert_eq!((item.value.as_slice(), item.flags), (&b"new"[..], 5));
    assert_eq!(item.expiry, Expiry::AtMs(T0 + 9000));
    assert_eq!(meta_of(&s, b"k"), Some(both));
    // A matching CAS is an ordinary store: the stale mark goes.
    let cas = stored.cas;
    s.store_with(b"k", b"fresh", 0, Expiry::Never, Mode::Cas(cas), stale).expect("cas");
    assert_eq!(meta_of(&s, b"k"), Some(MetaState::default()));
}

// Append and prepend honour compare_cas; the result reports the whole new length.
#[test]
fn append_with_compare_cas() {
    let (s, _) = store_at_t0();
    let cas = s.store(b"k", b"mid", 0, Expiry::Never, Mode::Set).expect("set");
    let wrong = StoreOptions { compare_cas: Some(cas + 1), ..StoreOptions::default() };
    let result = s.store_with(b"k", b">", 0, Expiry::Never, Mode::Append, wrong);
    assert_eq!(result, Err(StoreError::Exists));
    let right = StoreOptions { compare_cas: Some(cas), ..StoreOptions::default() };
    let stored = s.store_with(b"k", b">", 0, Expiry::Never, Mode::Append, right).expect("append");
    assert_eq!(stored.value_len, 4);
    let right = StoreOptions { compare_cas: Some(stored.cas), ..StoreOptions::default() };
    s.store_with(b"k", b"<", 0, Expiry::Never, Mode::Prepend, right).expect("prepend");
    assert_eq!(s.get(b"k").expect("present").value, b"<mid>");
    let absent = s.store_with(b"x", b"v", 0, Expiry::Never, Mode::Append, right);
    assert_eq!(absent, Err(StoreError::NotStored));
    // Add ignores it.
    let add = s.store_with(b"y", b"v", 0, Expiry::Never, Mode::Add, wrong);
    assert!(add.is_ok());
}

// Items kept through eviction (read, so copied forward) keep their meta state and CAS.
#[test]
fn meta_state_survives_eviction_copies() {
    let (s, _) = store_at_t0();
    let cas = s.store(b"keep", b"v", 0, Expiry::Never, Mode::Set).expect("set");
    rewrite(&s, b"keep", Expiry::Never, STALE, Some(cas));
    let value = vec![1u8; 2000];
    for i in 0..20_000u32 {
        s.reader().get(b"keep");
        s.store(format!("fill{i}").as_bytes(), &value, 0, Expiry::Never, Mode::Set).expect("fill");
    }
    assert!(s.stats().evict_kept > 0, "{:?}", s.stats());
    let item = s.reader().peek(b"keep").map(|i| (i.cas(), i.meta_state()));
    assert_eq!(item, Some((cas, STALE)));
}
