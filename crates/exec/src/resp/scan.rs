//! The scans' arguments: SCAN, HSCAN, SSCAN and ZSCAN read their options after the cursor
//! with one parser ([`parse_options`]); the cursors and pages of a collection scan are
//! `values::scan`'s.

use proto_resp::{
    args::{is_option, parse_i64},
    error,
};

use super::Ctx;

pub(super) use values::scan::{member_hash, page, parse_cursor};

/// What a scan's options asked for.
pub(super) struct ScanOptions<'a> {
    /// MATCH's pattern; `None` for none, and for `*` (which matches everything).
    pub(super) pattern: Option<&'a [u8]>,
    /// COUNT: at least 1 (10 unless given).
    pub(super) count: usize,
    /// SCAN's TYPE.
    pub(super) type_name: Option<&'a [u8]>,
    /// HSCAN's NOVALUES.
    pub(super) no_values: bool,
}

/// The option a scan takes besides MATCH and COUNT.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Extra {
    None,
    /// SCAN's `TYPE type`.
    Type,
    /// HSCAN's `NOVALUES` (a word with no value).
    NoValues,
}

/// `scanGenericCommand`'s option loop over the arguments from `first` on: the last MATCH
/// and COUNT win; an option without its value, an unknown one, or a COUNT below 1 is a
/// syntax error; a COUNT that is not an integer answers as Redis does.
pub(super) fn parse_options<'a>(
    ctx: &Ctx<'a>,
    first: usize,
    extra: Extra,
) -> Result<ScanOptions<'a>, &'static str> {
    let mut options = ScanOptions { pattern: None, count: 10, type_name: None, no_values: false };
    let mut index = first;
    while index < ctx.argc() {
        let option = ctx.arg(index);
        if extra == Extra::NoValues && is_option(option, "NOVALUES") {
            options.no_values = true;
            index += 1;
            continue;
        }
        if index + 1 >= ctx.argc() {
            return Err(error::SYNTAX);
        }
        let value = ctx.arg(index + 1);
        if is_option(option, "COUNT") {
            let count = parse_i64(value).map_err(|e| e.message())?;
            options.count = usize::try_from(count).ok().filter(|&c| c >= 1).ok_or(error::SYNTAX)?;
        } else if is_option(option, "MATCH") {
            options.pattern = Some(value).filter(|p| *p != b"*");
        } else if extra == Extra::Type && is_option(option, "TYPE") {
            options.type_name = Some(value);
        } else {
            return Err(error::SYNTAX);
        }
        index += 2;
    }
    Ok(options)
}
