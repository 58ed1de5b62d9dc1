//! Adding and removing a few members by editing the stored bytes, without decoding the set.
//!
//! Decoding a set into a [`Work`] costs about 100 ns a member (a hash insert each), so a
//! SADD of one member to a set of 20,000 took 3 ms that way. Here the set is scanned (a
//! binary search for integers, a byte comparison per entry otherwise) and the new value
//! is the old one with slices spliced in or out, one copy. A batch of more members, and
//! the few edits that change the encoding (an integer set gaining a non-integer or a wider
//! integer; a strings set losing its last non-integer), go through [`Work`].

use values::{
    entries::{put_entry, Entries},
    varint::put_usize as put_varint,
};

use super::{
    edit_of,
    encoding::{int_width, IntText, Member, SetView, Slot, Work, TAG_STRINGS},
    typed::Edit,
};
use proto_resp::args::parse_i64;

/// Up to this many members an edit is spliced; more are decoded, changed and encoded once.
const SPLICE_MEMBERS_MAX: usize = 8;

/// Adds `members` (repeats allowed) to the set `current`; returns the edit and how many
/// were new.
pub(super) fn add(current: Option<&[u8]>, members: &[Member<'_>]) -> (Edit, usize) {
    if let Some(encoded) = current.filter(|_| members.len() <= SPLICE_MEMBERS_MAX) {
        let view = SetView::new(encoded);
        let mut fresh: Vec<Member<'_>> = Vec::with_capacity(members.len());
        for &member in members {
            if !fresh.contains(&member) && !view.contains(member) {
                fresh.push(member);
            }
        }
        if fresh.is_empty() {
            return (Edit::Keep, 0);
        }
        if let Some(value) = inserted(view, &fresh) {
            return (Edit::Write(value), fresh.len());
        }
    }
    let mut work = Work::decode(current);
    let added = work.add_all(members.iter().copied());
    (if added > 0 { edit_of(&work) } else { Edit::Keep }, added)
}

/// `view` with `fresh` (distinct, none in it) added; `None` when the encoding must change.
fn inserted(view: SetView<'_>, fresh: &[Member<'_>]) -> Option<Vec<u8>> {
    match view {
        SetView::Ints { width, body } => {
            let mut ints = fresh
                .iter()
                .map(|member| match *member {
                    Member::Int(n) if int_width(n) <= width => Some(n),
                    _ => None,
                })
                .collect::<Option<Vec<i64>>>()?;
            ints.sort_unstable();
            let mut out = Vec::with_capacity(1 + body.len() + width * ints.len());
            out.push(width as u8);
            let mut copied = 0;
            for n in ints {
                let at = SetView::lower_bound(width, body, n) * width;
                out.extend_from_slice(&body[copied..at]);
                out.extend_from_slice(&n.to_le_bytes()[..width]);
                copied = at;
            }
            out.extend_from_slice(&body[copied..]);
            Some(out)
        }
        SetView::Strings { count, entries } => {
            let mut out = Vec::with_capacity(entries.len() + 16 * (fresh.len() + 1));
            out.push(TAG_STRINGS);
            put_varint(&mut out, count + fresh.len());
            out.extend_from_slice(entries);
            for member in fresh {
                put_entry(&mut out, member.text(&mut IntText::default()));
            }
            Some(out)
        }
    }
}

/// Removes `members` (repeats allowed) from the set `current`; returns the edit and how
/// many were there.
pub(super) fn remove(current: Option<&[u8]>, members: &[Member<'_>]) -> (Edit, usize) {
    let Some(encoded) = current else {
        return (Edit::Keep, 0);
    };
    if members.len() <= SPLICE_MEMBERS_MAX {
        if let Some(done) = removed(SetView::new(encoded), members) {
            return done;
        }
    }
    let mut work = Work::decode(current);
    let removed = work.remove_all(members.iter().copied());
    (if removed > 0 { edit_of(&work) } else { Edit::Keep }, removed)
}

/// The splice for [`remove`]; `None` when the set must be rebuilt instead.
fn removed(view: SetView<'_>, members: &[Member<'_>]) -> Option<(Edit, usize)> {
    let mut slots: Vec<Slot> = members.iter().filter_map(|&m| view.locate(m)).collect();
    slots.sort_by_key(|slot| match slot {
        Slot::Int(index) => *index,
        Slot::Entry(range) => range.start,
    });
    slots.dedup();
    let gone = slots.len();
    if gone == 0 {
        return Some((Edit::Keep, 0));
    }
    if gone >= view.len() {
        return Some((Edit::Delete, gone));
    }
    let value = match view {
        SetView::Ints { width, body } => {
            let mut out = Vec::with_capacity(body.len() + 1 - gone * width);
            out.push(width as u8);
            let ranges = slots.iter().map(|slot| match slot {
                Slot::Int(index) => index * width..(index + 1) * width,
                Slot::Entry(range) => range.clone(),
            });
            copy_except(&mut out, body, ranges);
            out
        }
        SetView::Strings { count, entries } => {
            let ranges: Vec<_> = slots
                .iter()
                .filter_map(|slot| match slot {
                    Slot::Entry(range) => Some(range.clone()),
                    Slot::Int(_) => None,
                })
                .collect();
            let mut rest = Vec::with_capacity(entries.len());
            copy_except(&mut rest, entries, ranges.iter().cloned());
            let lost_text = members.iter().any(|m| matches!(m, Member::Bytes(_)));
            if lost_text && only_integers(&rest) {
                // The last non-integer went: the set becomes an integer set again.
                return None;
            }
            let mut out = Vec::with_capacity(rest.len() + 4);
            out.push(TAG_STRINGS);
            put_varint(&mut out, count - gone);
            out.extend_from_slice(&rest);
            out
        }
    };
    Some((Edit::Write(value), gone))
}

/// Appends `bytes` without `ranges` (ascending, disjoint).
fn copy_except(
    out: &mut Vec<u8>,
    bytes: &[u8],
    ranges: impl IntoIterator<Item = std::ops::Range<usize>>,
) {
    let mut copied = 0;
    for range in ranges {
        out.extend_from_slice(&bytes[copied..range.start]);
        copied = range.end;
    }
    out.extend_from_slice(&bytes[copied..]);
}

/// Whether every entry reads as an integer (stops at the first that does not).
fn only_integers(entries: &[u8]) -> bool {
    Entries::new(entries).all(|entry| parse_i64(entry).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members<'a>(texts: &[&'a [u8]]) -> Vec<Member<'a>> {
        texts.iter().map(|t| Member::of(t)).collect()
    }

    /// What the slow path makes of the same change: the reference for the splices.
    fn rebuilt(current: &[u8], add: &[Member<'_>], remove: &[Member<'_>]) -> Vec<Vec<u8>> {
        let mut work = Work::decode(Some(current));
        work.add_all(add.iter().copied());
        work.remove_all(remove.iter().copied());
        let mut all: Vec<Vec<u8>> = work.iter().map(Member::to_vec).collect();
        all.sort();
        all
    }

    fn sorted_members(edit: &Edit, before: &[u8]) -> Vec<Vec<u8>> {
        let value = match edit {
            Edit::Write(value) => value.as_slice(),
            Edit::Keep => before,
            Edit::Delete => return Vec::new(),
        };
        let mut all: Vec<Vec<u8>> = SetView::new(value).iter().map(Member::to_vec).collect();
        all.sort();
        all
    }

    /// Goal: every splice gives the members the full rebuild gives, on integer and strings
    /// sets, with repeats, absent members, width changes and the last non-integer leaving.
    #[test]
    fn splices_match_rebuild() {
        let sets: &[&[&[u8]]] = &[
            &[b"1", b"5", b"-7"],
            &[b"1", b"40000"],
            &[b"a", b"1", b"b"],
            &[b"a", b"2"],
            &[b"x"],
            &[b"3"],
        ];
        let edits: &[&[&[u8]]] = &[
            &[b"1"],
            &[b"2", b"2", b"0"],
            &[b"a"],
            &[b"70000"],
            &[b"9223372036854775807", b"-1"],
            &[b"a", b"b", b"x", b"zz"],
            &[b"5", b"-7", b"1", b"40000", b"3"],
        ];
        for set in sets {
            let mut work = Work::decode(None);
            work.add_all(members(set));
            let encoded = work.encode().unwrap();
            for edit in edits {
                let change = members(edit);
                let (grown, added) = add(Some(&encoded), &change);
                assert_eq!(sorted_members(&grown, &encoded), rebuilt(&encoded, &change, &[]));
                let before = SetView::new(&encoded).len();
                assert_eq!(
                    sorted_members(&grown, &encoded).len(),
                    before + added,
                    "{set:?} {edit:?}"
                );
                let (cut, gone) = remove(Some(&encoded), &change);
                assert_eq!(sorted_members(&cut, &encoded), rebuilt(&encoded, &[], &change));
                assert_eq!(sorted_members(&cut, &encoded).len(), before - gone, "{set:?} {edit:?}");
                if let Edit::Write(value) = &cut {
                    let all_ints = SetView::new(value).iter().all(|m| matches!(m, Member::Int(_)));
                    assert_eq!(value[0] != TAG_STRINGS, all_ints, "{set:?} - {edit:?}");
                }
            }
        }
    }
}
