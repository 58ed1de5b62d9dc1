//! Stream ID arguments, as Redis's `streamGenericParseIDOrReply` reads them: `ms[-seq]`
//! (a missing seq is the caller's), `-` and `+` (unless strict), and XADD's `ms-*`.

use values::stream::StreamId;

pub(super) const INVALID_ID: &str = "ERR Invalid stream ID specified as stream command argument";

/// The ID `arg` names, or `None` for Redis's invalid-ID error. `seq_given` reports
/// whether the sequence was given (false only for XADD's `ms-*`, allowed when `auto_seq`).
fn generic(arg: &[u8], missing_seq: u64, strict: bool, auto_seq: bool) -> Option<(StreamId, bool)> {
    if arg.len() > 127 {
        return None;
    }
    // Redis copies the argument into a C string: it ends at the first NUL.
    let text = &arg[..arg.iter().position(|&b| b == 0).unwrap_or(arg.len())];
    match text {
        b"-" | b"+" if strict => return None,
        b"-" => return Some((StreamId::MIN, true)),
        b"+" => return Some((StreamId::MAX, true)),
        _ => {}
    }
    if let Some(dash) = text.iter().position(|&b| b == b'-') {
        if auto_seq && &text[dash + 1..] == b"*" {
            let (ms, _) = StreamId::parse(&text[..dash], 0)?;
            return Some((StreamId::new(ms.ms, 0), false));
        }
    }
    StreamId::parse(text, missing_seq).map(|(id, _)| (id, true))
}

/// An ID where `-` and `+` mean the first and last possible.
pub(super) fn parse(arg: &[u8], missing_seq: u64) -> Option<StreamId> {
    generic(arg, missing_seq, false, false).map(|(id, _)| id)
}

/// An ID where `-` and `+` are invalid.
pub(super) fn parse_strict(arg: &[u8], missing_seq: u64) -> Option<StreamId> {
    generic(arg, missing_seq, true, false).map(|(id, _)| id)
}

/// XADD's explicit ID: strict, `ms-*` allowed; whether the sequence was given.
pub(super) fn parse_for_add(arg: &[u8]) -> Option<(StreamId, bool)> {
    generic(arg, 0, true, true)
}

/// One end of an XRANGE interval: `(` before it makes it exclusive (then strict).
pub(super) fn parse_interval(arg: &[u8], missing_seq: u64) -> Option<(StreamId, bool)> {
    match arg.split_first() {
        Some((b'(', rest)) if !rest.is_empty() => Some((parse_strict(rest, missing_seq)?, true)),
        _ => Some((parse(arg, missing_seq)?, false)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms() {
        assert_eq!(parse(b"-", 0), Some(StreamId::MIN));
        assert_eq!(parse(b"+", 0), Some(StreamId::MAX));
        assert_eq!(parse_strict(b"+", 0), None);
        assert_eq!(parse(b"7", u64::MAX), Some(StreamId::new(7, u64::MAX)));
        assert_eq!(parse(b"7-1\0junk", 0), Some(StreamId::new(7, 1)));
        assert_eq!(parse_for_add(b"7-*"), Some((StreamId::new(7, 0), false)));
        assert_eq!(parse_for_add(b"7"), Some((StreamId::new(7, 0), true)));
        assert_eq!(parse(b"7-*", 0), None);
        assert_eq!(parse_interval(b"(5", 0), Some((StreamId::new(5, 0), true)));
        assert_eq!(parse_interval(b"(", 0), None);
        assert_eq!(parse_interval(b"(-", 0), None);
        assert_eq!(parse(&[b'1'; 128], 0), None);
    }
}
