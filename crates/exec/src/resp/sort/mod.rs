//! SORT and SORT_RO, as Redis 7.0 runs them (`sort.c`).
//!
//! `SORT key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC] [ALPHA]
//! [STORE destination]` over a list, set or sorted set (a missing key is an empty list).
//! The order of what is checked decides which error a client sees, so it is Redis's: the
//! options first (a bad LIMIT number, BY or GET refused in cluster mode or to a user who
//! may not read every key, anything unknown), then the key's type, then the numbers.
//!
//! Steps: the elements are read from one copy of the source's encoding; unless the BY
//! pattern is a constant (no `*`: "don't sort"), each gets its weight (the element or
//! its BY value, as a number or, with ALPHA, as bytes) and the whole is sorted; then the
//! LIMIT window is answered or stored, each element replaced by its GET values. A
//! constant BY keeps a list's or sorted set's own order (reversed by DESC, windowed by
//! LIMIT before anything is read), and a set's, except where Redis needs a repeatable
//! answer: stored, or called from a script, a set is sorted ALPHA.
//!
//! Bounds: LIMIT is clamped to the source's size before anything is sized by it, so a
//! huge count allocates nothing; every vector is at most the source's size, times the
//! GET count for the output. SORT (a write naming a second key) runs under the gate, as
//! every multi-key write does (`writes_several_keys`); SORT_RO reads as MGET does.

use std::{borrow::Cow, cmp::Ordering};

use proto_resp::{args::parse_i64, commands::SortId, error};
use store::{Change, Expiry, ValueKind};

use super::{keyevents::class, typed, Ctx};

mod pattern;

use pattern::Lookups;

const BY_IN_CLUSTER: &str = "ERR BY option of SORT denied in Cluster mode.";
const GET_IN_CLUSTER: &str = "ERR GET option of SORT denied in Cluster mode.";
const BY_WITHOUT_ACCESS: &str = "ERR BY option of SORT denied due to insufficient ACL permissions.";
const GET_WITHOUT_ACCESS: &str =
    "ERR GET option of SORT denied due to insufficient ACL permissions.";
const NOT_A_DOUBLE: &str = "ERR One or more scores can't be converted into double";

pub(super) fn dispatch(ctx: &mut Ctx<'_>, id: SortId) {
    match id {
        SortId::Sort => sort(ctx, Store::Allowed),
        SortId::SortRo => sort(ctx, Store::Refused),
    }
}

/// Whether STORE is an option (SORT) or a syntax error (SORT_RO).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Store {
    Allowed,
    Refused,
}

/// The parsed options.
struct Options<'a> {
    desc: bool,
    alpha: bool,
    limit_start: i64,
    /// Negative: to the end.
    limit_count: i64,
    /// The destination's argument index.
    store: Option<usize>,
    by: Option<&'a [u8]>,
    /// BY a constant: keep the source's order.
    dont_sort: bool,
    gets: Vec<&'a [u8]>,
}

/// Reads the options from argument 2 on, in Redis's order; the error to reply otherwise.
fn parse<'a>(ctx: &Ctx<'a>, store: Store) -> Result<Options<'a>, &'static str> {
    let mut options = Options {
        desc: false,
        alpha: false,
        limit_start: 0,
        limit_count: -1,
        store: None,
        by: None,
        dont_sort: false,
        gets: Vec::new(),
    };
    let cluster = ctx.shared.redis.cluster.get().is_some();
    let full_access = reads_every_key(ctx);
    let argc = ctx.argc();
    let mut at = 2;
    while at < argc {
        let word = ctx.arg(at);
        let left = argc - at - 1;
        let is = |name: &str| word.eq_ignore_ascii_case(name.as_bytes());
        if is("asc") {
            options.desc = false;
        } else if is("desc") {
            options.desc = true;
        } else if is("alpha") {
            options.alpha = true;
        } else if is("limit") && left >= 2 {
            options.limit_start = parse_i64(ctx.arg(at + 1)).map_err(|_| error::NOT_INTEGER)?;
            options.limit_count = parse_i64(ctx.arg(at + 2)).map_err(|_| error::NOT_INTEGER)?;
            at += 2;
        } else if store == Store::Allowed && is("store") && left >= 1 {
            options.store = Some(at + 1);
            at += 1;
        } else if is("by") && left >= 1 {
            let by = ctx.arg(at + 1);
            options.by = Some(by);
            if pattern::is_constant(by) {
                options.dont_sort = true;
            } else if cluster {
                return Err(BY_IN_CLUSTER);
            } else if !full_access {
                return Err(BY_WITHOUT_ACCESS);
            }
            at += 1;
        } else if is("get") && left >= 1 {
            if cluster {
                return Err(GET_IN_CLUSTER);
            } else if !full_access {
                return Err(GET_WITHOUT_ACCESS);
            }
            options.gets.push(ctx.arg(at + 1));
            at += 1;
        } else {
            return Err(error::SYNTAX);
        }
        at += 1;
    }
    Ok(options)
}

/// Whether a selector of the user that allows this command may read every key (a `~*` or
/// `%R~*` pattern): BY and GET patterns name keys no ACL check saw, so Redis allows them
/// only then.
fn reads_every_key(ctx: &Ctx<'_>) -> bool {
    let Some(account) = &ctx.session.account else { return true };
    if account.is_unrestricted() {
        return true;
    }
    let catalog = crate::resp::acl::catalog();
    let entry = catalog.find(ctx.spec.name);
    entry.is_some_and(|entry| account.user.read().reads_every_key(entry))
}

/// What the source holds, for the choices that depend on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    /// A list, or no key (an empty list).
    List,
    Set,
    ZSet,
}

/// One element with its weight.
struct Weighed<'e> {
    element: Cow<'e, [u8]>,
    score: f64,
    /// ALPHA BY: the BY value, if the pattern found one.
    by: Option<Cow<'e, [u8]>>,
}

/// How elements compare, as Redis's `sortCompare` sets it up.
#[derive(Clone, Copy)]
struct Order {
    desc: bool,
    alpha: bool,
    by_pattern: bool,
    /// Stored results compare bytes; replies compare as C's `strcoll` (here: the
    /// C.UTF-8 locale's, byte order up to a zero byte).
    store: bool,
}

fn sort(ctx: &mut Ctx<'_>, store: Store) {
    let mut options = match parse(ctx, store) {
        Ok(options) => options,
        Err(message) => return ctx.error(message),
    };
    let shared = ctx.shared;
    let reader = shared.core.store.reader();
    let mut scratch = Vec::new();
    let key = crate::keyspace::encode(ctx.session.db, ctx.arg(1), &mut scratch);
    let item = reader.get(key);
    super::count_read(ctx.counters, item.is_some());
    let source = match item.as_ref().map(|item| item.value_kind()) {
        None | Some(ValueKind::List) => Source::List,
        Some(ValueKind::Set) => Source::Set,
        Some(ValueKind::ZSet) => Source::ZSet,
        Some(_) => return ctx.error(error::WRONGTYPE),
    };
    // A set has no order of its own: stored, or answered to a script, it is sorted so that
    // replicas and replays agree (Redis 7.0 does this for scripts and STORE only).
    let repeatable = options.store.is_some() || ctx.session.in_script;
    if options.dont_sort && source == Source::Set && repeatable {
        options.dont_sort = false;
        options.alpha = true;
        options.by = None;
    }
    let encoded = item.as_ref().and_then(|item| typed::encoding(shared, item));
    let mut elements = elements_of(source, encoded.as_deref());
    let window = window(options.limit_start, options.limit_count, elements.len());
    let mut lookups = Lookups {
        shared,
        counters: ctx.counters,
        reader: &reader,
        db: ctx.session.db,
        scratch: Vec::new(),
        name: Vec::new(),
    };
    if options.dont_sort {
        // A list or sorted set in its own order, from the other end for DESC.
        if options.desc && source != Source::Set {
            elements.reverse();
        }
    } else {
        let Some(sorted) = sorted(&mut lookups, elements, &options) else {
            return ctx.error(NOT_A_DOUBLE);
        };
        elements = sorted;
    }
    elements.truncate(window.end);
    let picked = elements.drain(window.start..);
    match options.store {
        None => reply_sorted(ctx, &mut lookups, picked.as_slice(), &options.gets),
        Some(destination) => {
            let values = stored_values(&mut lookups, picked.as_slice(), &options.gets);
            let count = values.len();
            let list = super::list::encode_elements(values.iter().map(|value| value.as_ref()));
            // The write may make room, which waits for memory to come back: no read pin of
            // this thread may hold that back.
            drop(values);
            drop(picked);
            drop(elements);
            drop(lookups);
            drop(encoded);
            drop(reader);
            store_sorted(ctx, destination, count, list);
        }
    }
}

/// The elements in the order the options ask for; None when a weight is not a number.
fn sorted<'e>(
    lookups: &mut Lookups<'_>,
    elements: Vec<Cow<'e, [u8]>>,
    options: &Options<'_>,
) -> Option<Vec<Cow<'e, [u8]>>> {
    let order = Order {
        desc: options.desc,
        alpha: options.alpha,
        by_pattern: options.by.is_some(),
        store: options.store.is_some(),
    };
    let mut weighed = weigh(lookups, elements, options)?;
    weighed.sort_by(|a, b| order.compare(a, b));
    Some(weighed.into_iter().map(|w| w.element).collect())
}

/// The elements of the source, in its order (a missing key: none).
fn elements_of(source: Source, encoded: Option<&[u8]>) -> Vec<Cow<'_, [u8]>> {
    let Some(encoded) = encoded else { return Vec::new() };
    match source {
        Source::List => super::list::elements_of(encoded).into_iter().map(Cow::Borrowed).collect(),
        Source::Set => super::set::members_text(encoded).into_iter().map(Cow::Owned).collect(),
        Source::ZSet => super::zset::members_of(encoded).into_iter().map(Cow::Borrowed).collect(),
    }
}

/// The positions LIMIT selects among `len` elements, clamped as Redis clamps them (to the
/// size first, so no count, however large, sizes anything).
fn window(limit_start: i64, limit_count: i64, len: usize) -> std::ops::Range<usize> {
    let len = i64::try_from(len).unwrap_or(i64::MAX);
    let mut start = limit_start.clamp(0, len);
    let count = limit_count.clamp(-1, len);
    let mut end = if count < 0 { len - 1 } else { start + count - 1 };
    if start >= len {
        start = len - 1;
        end = len - 2;
    }
    end = end.min(len - 1);
    if end < start {
        return 0..0;
    }
    start as usize..end as usize + 1
}

/// Each element with what it sorts by; `None` when a number was wanted and some weight
/// is none. Every weight is looked up, as Redis does, before the error is known.
fn weigh<'e>(
    lookups: &mut Lookups<'_>,
    elements: Vec<Cow<'e, [u8]>>,
    options: &Options<'_>,
) -> Option<Vec<Weighed<'e>>> {
    let mut all_numbers = true;
    let mut weighed = Vec::with_capacity(elements.len());
    for element in elements {
        let mut entry = Weighed { element, score: 0.0, by: None };
        let value = match options.by {
            Some(by) => lookups.value(by, &entry.element).map(|v| Cow::Owned(v.into_owned())),
            None => None,
        };
        if options.alpha {
            entry.by = value;
        } else {
            let text = match (&value, options.by) {
                (Some(value), _) => Some(value.as_ref()),
                // BY a key that is not there: weight 0.
                (None, Some(_)) => None,
                (None, None) => Some(entry.element.as_ref()),
            };
            if let Some(text) = text {
                match pattern::score(text) {
                    Some(score) => entry.score = score,
                    None => all_numbers = false,
                }
            }
        }
        weighed.push(entry);
    }
    all_numbers.then_some(weighed)
}

impl Order {
    /// Redis's `sortCompare`: numbers, equal ones by their elements' bytes; or ALPHA, by
    /// the BY values (none first) or the elements.
    fn compare(&self, a: &Weighed<'_>, b: &Weighed<'_>) -> Ordering {
        let order = if !self.alpha {
            a.score
                .partial_cmp(&b.score)
                .unwrap_or(Ordering::Equal)
                .then_with(|| a.element.as_ref().cmp(b.element.as_ref()))
        } else if self.by_pattern {
            match (&a.by, &b.by) {
                (Some(x), Some(y)) => self.text_order(x, y),
                (x, y) => x.is_some().cmp(&y.is_some()),
            }
        } else {
            self.text_order(&a.element, &b.element)
        };
        if self.desc {
            order.reverse()
        } else {
            order
        }
    }

    fn text_order(&self, a: &[u8], b: &[u8]) -> Ordering {
        if self.store {
            a.cmp(b)
        } else {
            pattern::c_string(a).cmp(pattern::c_string(b))
        }
    }
}

/// The reply: each element, or each of its GET values (null where there is none).
fn reply_sorted(
    ctx: &mut Ctx<'_>,
    lookups: &mut Lookups<'_>,
    picked: &[Cow<'_, [u8]>],
    gets: &[&[u8]],
) {
    let mut reply = ctx.reply();
    reply.array(picked.len() * gets.len().max(1));
    for element in picked {
        if gets.is_empty() {
            reply.bulk(element);
        }
        for get in gets {
            match lookups.value(get, element) {
                Some(value) => reply.bulk(&value),
                None => reply.null(),
            }
        }
    }
}

/// What STORE writes: each element, or each of its GET values (empty where none).
fn stored_values<'e>(
    lookups: &mut Lookups<'_>,
    picked: &[Cow<'e, [u8]>],
    gets: &[&[u8]],
) -> Vec<Cow<'e, [u8]>> {
    if gets.is_empty() {
        return picked.to_vec();
    }
    let mut values = Vec::with_capacity(picked.len() * gets.len());
    for element in picked {
        for get in gets {
            let value = lookups.value(get, element).map(|v| v.into_owned());
            values.push(Cow::Owned(value.unwrap_or_default()));
        }
    }
    values
}

/// Writes `values` as a list under argument `destination` (replacing any value and its TTL), or
/// deletes it when there are none; replies how many. As Redis: `sortstore` or `del`
/// (only if there was a key) for keyspace events, and a waiting BLPOP is served.
fn store_sorted(ctx: &mut Ctx<'_>, destination: usize, count: usize, encoded: Option<Vec<u8>>) {
    let shared = ctx.shared;
    let mut scratch = Vec::new();
    let key = crate::keyspace::encode(ctx.session.db, ctx.arg(destination), &mut scratch);
    let mut owning = typed::Owning::new(shared);
    let result = shared.core.store.modify_within(key, super::PROTO_MAX_BULK_LEN, |current| {
        owning.start_run();
        let change = match (&encoded, current) {
            (Some(value), _) => owning.write(ValueKind::List, value.clone(), Expiry::Never),
            (None, Some(_)) => Ok(Change::Delete),
            (None, None) => Ok(Change::Keep),
        };
        match change {
            Ok(change) => (change, Ok(current.is_some())),
            Err(failure) => (Change::Keep, Err(failure)),
        }
    });
    let existed = match owning.finish(result.map(|(_, out)| out)) {
        Ok(existed) => existed,
        Err(failure) => return ctx.failure(failure),
    };
    if encoded.is_some() {
        ctx.wrote(class::LIST, "sortstore", destination);
        if shared.redis.blocking.any() && shared.redis.blocking.may_wait_on(key) {
            ctx.session.ready_keys.push(key.to_vec());
        }
    } else if existed {
        ctx.wrote(class::GENERIC, "del", destination);
    }
    ctx.reply().integer(count as i64);
}
