//! HRANDFIELD and HSCAN.

use proto_resp::{
    args::{is_option, parse_i64},
    error, Protocol, Reply,
};

use super::{encoding::Field, large, read, Ctx};
use crate::resp::glob::{self, Case};
use crate::resp::pick::{distinct, random_below};
use crate::resp::scan;

/// Redis 7.0's text for a count outside `-LONG_MAX..=LONG_MAX` (its typo included).
const COUNT_RANGE: &str =
    "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807";
const OUT_OF_RANGE: &str = "ERR value is out of range";
/// The most fields a negative count may ask for. Redis would stream them until the
/// client's output limit closes the connection; we refuse up front instead.
const REPEATS_MAX: u64 = 1 << 20;

/// HRANDFIELD key [count [WITHVALUES]], checked in Redis's order: count, options, key.
pub(super) fn hrandfield(ctx: &mut Ctx<'_>) {
    if ctx.argc() == 2 {
        if let Some(picked) = large::random_fields(ctx, None) {
            return ctx.bulk_or_null(picked.first().map(|(name, _)| name.as_slice()));
        }
        return read(ctx, |fields, reply| match fields {
            Some(fields) => reply.bulk(&fields.list[random_below(fields.len())].name),
            None => reply.null(),
        });
    }
    let count = match parse_i64(ctx.arg(2)) {
        Err(e) => return ctx.error(e.message()),
        Ok(i64::MIN) => return ctx.error(COUNT_RANGE),
        Ok(count) => count,
    };
    let with_values = ctx.argc() == 4;
    if ctx.argc() > 4 || (with_values && !is_option(ctx.arg(3), "WITHVALUES")) {
        return ctx.error(error::SYNTAX);
    }
    if (with_values && count.unsigned_abs() > (i64::MAX / 2) as u64)
        || (count < 0 && count.unsigned_abs() > REPEATS_MAX)
    {
        return ctx.error(OUT_OF_RANGE);
    }
    let protocol = ctx.session.protocol;
    if count != 0 {
        if let Some(picked) = large::random_fields(ctx, Some(count)) {
            let pairs = picked.iter().map(|(name, value)| (&name[..], &value[..]));
            return reply_fields(&mut ctx.reply(), protocol, pairs, with_values);
        }
    }
    read(ctx, |fields, reply| {
        let Some(fields) = fields.filter(|_| count != 0) else {
            return reply.array(0);
        };
        let picked = pick(&fields.list, count);
        let pairs = picked.iter().map(|field| (&field.name[..], &field.value[..]));
        reply_fields(reply, protocol, pairs, with_values);
    });
}

/// `count` fields: distinct ones (all of them, in order, if `count` covers the hash) when
/// positive, `-count` independent draws when negative.
fn pick<'f, 'a>(list: &'f [Field<'a>], count: i64) -> Vec<&'f Field<'a>> {
    let wanted = count.unsigned_abs() as usize;
    if count < 0 {
        return (0..wanted).map(|_| &list[random_below(list.len())]).collect();
    }
    if wanted >= list.len() {
        return list.iter().collect();
    }
    distinct(list.len(), wanted).into_iter().map(|at| &list[at]).collect()
}

/// Fields, or field/value pairs: flat in RESP2, one two-element array per pair in RESP3.
fn reply_fields<'p>(
    reply: &mut Reply<'_>,
    protocol: Protocol,
    picked: impl ExactSizeIterator<Item = (&'p [u8], &'p [u8])>,
    values: bool,
) {
    let nested = protocol == Protocol::Resp3;
    reply.array(if values && !nested { picked.len() * 2 } else { picked.len() });
    for (name, value) in picked {
        if values && nested {
            reply.array(2);
        }
        reply.bulk(name);
        if values {
            reply.bulk(value);
        }
    }
}

/// A hash Redis keeps as a listpack (at most 128 fields of at most 64 bytes) is scanned
/// in one call, cursor 0, as Redis does; a bigger one page by page.
const ONE_PAGE_FIELDS_MAX: usize = 128;
const ONE_PAGE_BYTES_MAX: usize = 64;

/// HSCAN key cursor [MATCH pattern] [COUNT count] [NOVALUES]: the cursor is checked
/// before the key, the options after it (a missing key answers an empty page whatever
/// they are), as in Redis.
pub(super) fn hscan(ctx: &mut Ctx<'_>) {
    let cursor = std::str::from_utf8(ctx.arg(2)).ok().and_then(|text| text.parse::<u64>().ok());
    let Some(cursor) = cursor else {
        return ctx.error("ERR invalid cursor");
    };
    let options = scan::parse_options(ctx, 3, scan::Extra::NoValues);
    if let Ok(options) = &options {
        if let Some((next, page)) = large::scan(ctx, cursor, options.count) {
            let wanted = |(name, _): &&large::FieldCopy| {
                options.pattern.is_none_or(|p| glob::matches(p, name, Case::Sensitive))
            };
            let page: Vec<&large::FieldCopy> = page.iter().filter(wanted).collect();
            let pairs = page.iter().map(|(name, value)| (&name[..], &value[..]));
            return reply_page(&mut ctx.reply(), next, pairs, options.no_values);
        }
    }
    read(ctx, |fields, reply| {
        let Some(fields) = fields else {
            reply.array(2);
            reply.bulk(b"0");
            return reply.array(0);
        };
        let options = match options {
            Ok(options) => options,
            Err(message) => return reply.error(message),
        };
        let (next, page) = scan_page(&fields.list, cursor, options.count);
        let wanted = |field: &&Field<'_>| {
            options.pattern.is_none_or(|p| glob::matches(p, &field.name, Case::Sensitive))
        };
        let page: Vec<&Field<'_>> = page.into_iter().filter(wanted).collect();
        let pairs = page.iter().map(|field| (&field.name[..], &field.value[..]));
        reply_page(reply, next, pairs, options.no_values);
    });
}

/// HSCAN's reply: the next cursor and the page's fields (with their values unless
/// NOVALUES).
fn reply_page<'p>(
    reply: &mut Reply<'_>,
    next: u64,
    page: impl ExactSizeIterator<Item = (&'p [u8], &'p [u8])>,
    no_values: bool,
) {
    reply.array(2);
    reply.bulk(next.to_string().as_bytes());
    reply.array(if no_values { page.len() } else { page.len() * 2 });
    for (name, value) in page {
        reply.bulk(name);
        if !no_values {
            reply.bulk(value);
        }
    }
}

/// One page of a scan and the cursor that follows it (0 at the end). Small hashes come
/// whole; others in pages of `scan::page`.
/// Whether HSCAN returns a hash of `len` fields whole, in one page, as Redis does a
/// listpack's.
pub(super) fn one_page<'f>(
    len: usize,
    mut fields: impl Iterator<Item = (&'f [u8], &'f [u8])>,
) -> bool {
    len <= ONE_PAGE_FIELDS_MAX
        && fields.all(|(name, value)| name.len().max(value.len()) <= ONE_PAGE_BYTES_MAX)
}

fn scan_page<'f, 'a>(
    list: &'f [Field<'a>],
    cursor: u64,
    count: usize,
) -> (u64, Vec<&'f Field<'a>>) {
    if one_page(list.len(), list.iter().map(|f| (&f.name[..], &f.value[..]))) {
        return (0, list.iter().collect());
    }
    let rest: Vec<(u64, &Field<'a>)> = list
        .iter()
        .map(|field| (scan::member_hash(&field.name), field))
        .filter(|(hash, _)| *hash >= cursor)
        .collect();
    scan::page(rest, count, list.len())
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;
    use values::scan::PAGES_MAX;

    /// Goal: a paged scan returns every field that stays, once, even when fields are
    /// added and removed between pages.
    #[test]
    fn paged_scan_survives_changes() {
        let names: Vec<Vec<u8>> = (0..1000).map(|i| format!("field:{i}").into_bytes()).collect();
        let mut list: Vec<Field<'_>> = names.iter().map(|n| Field::new(n, b"v")).collect();
        let (mut cursor, mut seen, mut pages) = (0, HashSet::new(), 0);
        let extra: Vec<Vec<u8>> = (0..100).map(|i| format!("new:{i}").into_bytes()).collect();
        loop {
            let (next, page) = scan_page(&list, cursor, 10);
            seen.extend(page.iter().map(|f| f.name.to_vec()));
            pages += 1;
            if next == 0 {
                break;
            }
            cursor = next;
            // Churn: drop one of the extra fields, add another.
            list.retain(|f| !f.name.starts_with(b"new:") || f.name.len() % 2 == 0);
            list.push(Field::new(&extra[pages % 100], b"v"));
        }
        assert!(names.iter().all(|n| seen.contains(n)));
        assert!((PAGES_MAX..PAGES_MAX * 2).contains(&pages), "{pages} pages");
    }

    /// Goal: a small hash is one page with cursor 0; distinct picks are distinct.
    #[test]
    fn small_scan_and_picks() {
        let names: Vec<Vec<u8>> = (0..20).map(|i| vec![b'a' + i]).collect();
        let list: Vec<Field<'_>> = names.iter().map(|n| Field::new(n, b"v")).collect();
        let (next, page) = scan_page(&list, 0, 1);
        assert_eq!((next, page.len()), (0, 20));
        for count in [1, 5, 19, 20, 25] {
            let picked = pick(&list, count);
            let distinct: HashSet<&[u8]> = picked.iter().map(|f| &*f.name).collect();
            assert_eq!(distinct.len(), picked.len());
            assert_eq!(picked.len(), (count as usize).min(20));
        }
        assert_eq!(pick(&list, -50).len(), 50);
    }
}
