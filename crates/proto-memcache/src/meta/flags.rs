//! Meta command flags: one letter each, some with a token glued on (`T30`, `Oabc`).
//!
//! memcached checks every flag of every meta command with one table (`_meta_flag_preparse`):
//! a flag that means nothing to a command is accepted and ignored there, so it is here.
//! Each flag is documented on its [`Flag`] variant.

use crate::{
    base64,
    error::{BAD_BASE64_KEY, BAD_DELTA_TOKEN, BAD_FORMAT, BAD_INITIAL, BAD_MODE_LEN, BAD_TOKEN},
    error::{DUPLICATE_FLAG, INVALID_FLAG},
    line::{parse_i64, parse_u32, parse_u64, push_i64, push_u64, tokens},
};

/// An `O` token may be this long, its letter included (memcached's
/// `MFLAG_MAX_OPAQUE_LENGTH`).
pub const OPAQUE_TOKEN_LEN_MAX: usize = 32;
/// A meta line may hold this many tokens, command and key included (memcached's
/// `MFLAG_MAX_OPT_LENGTH` counts one more, its end marker).
pub const META_TOKENS_MAX: usize = 19;

/// One meta flag as sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Flag<'a> {
    /// `b`: the key is base64; decode it before use, return it encoded (with `b`).
    Base64Key,
    /// `c`: return the item's CAS value.
    ReturnCas,
    /// `f`: return the client flags.
    ReturnFlags,
    /// `h`: return whether the item was fetched before (`h0`/`h1`).
    ReturnHit,
    /// `k`: return the key.
    ReturnKey,
    /// `l`: return seconds since the item was last accessed.
    ReturnLastAccess,
    /// `O<token>`: opaque, echoed back unchanged (at most 31 bytes after the `O`).
    Opaque(&'a [u8]),
    /// `q`: quiet; suppress the nominal reply (see [`crate::meta::quiet_suppresses`]).
    Quiet,
    /// `s`: return the value's size.
    ReturnSize,
    /// `t`: return the remaining TTL in seconds (`-1` for none).
    ReturnTtl,
    /// `u`: do not bump the item in the LRU.
    NoBump,
    /// `v`: return the value (`VA` instead of `HD`).
    ReturnValue,
    /// `I`: invalidate: `md` marks the item stale instead of removing it; `ms` with a CAS
    /// older than the item's stores it stale.
    Invalidate,
    /// `x`: `md` removes the value but leaves the item.
    RemoveValue,
    /// `N<ttl>`: vivify on miss: create an empty item with this TTL (`mg`), or on `ms`
    /// append/prepend, or `ma`, create the item if missing.
    Vivify { ttl_secs: i64 },
    /// `R<ttl>`: if the remaining TTL is below this, this client wins the recache.
    Recache { ttl_secs: i64 },
    /// `T<ttl>`: set the item's TTL (`mg` touches, `ms` sets, `md` with `I`, `ma`).
    UpdateTtl { ttl_secs: i64 },
    /// `E<cas>`: use this as the item's new CAS value.
    NewCas(u64),
    /// `C<cas>`: act only if the item's CAS equals this.
    CompareCas(u64),
    /// `F<flags>`: `ms` sets these client flags.
    SetFlags(u32),
    /// `M<mode>`: mode switch; `ms`: E add, A append, P prepend, R replace, S set;
    /// `ma`: I or + incr, D or - decr.
    Mode(u8),
    /// `D<delta>`: `ma` adds or subtracts this (default 1).
    Delta(u64),
    /// `J<initial>`: `ma` with `N` creates a missing item with this value (default 0).
    Initial(u64),
    /// `P<token>` or `L<token>`: reserved for memcached's proxy; accepted and ignored.
    Reserved { letter: u8, token: &'a [u8] },
}

/// Why a flag token was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FlagError {
    /// A letter memcached does not know: stop at once.
    Unknown,
    /// A known letter with a bad token; memcached notes `reason` (if any) and goes on, so
    /// that a later error may replace it.
    BadToken(Option<&'static str>),
}

impl<'a> Flag<'a> {
    /// Parses one non-empty token.
    pub(crate) fn parse(token: &'a [u8]) -> Result<Flag<'a>, FlagError> {
        let letter = token.first().copied().ok_or(FlagError::Unknown)?;
        let value = &token[1..];
        let ttl = |make: fn(i64) -> Flag<'a>| {
            parse_i64(value).map(make).ok_or(FlagError::BadToken(Some(BAD_TOKEN)))
        };
        let cas = |make: fn(u64) -> Flag<'a>| {
            parse_u64(value).map(make).ok_or(FlagError::BadToken(Some(BAD_TOKEN)))
        };
        Ok(match letter {
            b'b' => Flag::Base64Key,
            b'c' => Flag::ReturnCas,
            b'f' => Flag::ReturnFlags,
            b'h' => Flag::ReturnHit,
            b'k' => Flag::ReturnKey,
            b'l' => Flag::ReturnLastAccess,
            b'O' => Flag::Opaque(value),
            b'q' => Flag::Quiet,
            b's' => Flag::ReturnSize,
            b't' => Flag::ReturnTtl,
            b'u' => Flag::NoBump,
            b'v' => Flag::ReturnValue,
            b'I' => Flag::Invalidate,
            b'x' => Flag::RemoveValue,
            b'N' => ttl(|ttl_secs| Flag::Vivify { ttl_secs })?,
            b'R' => ttl(|ttl_secs| Flag::Recache { ttl_secs })?,
            b'T' => ttl(|ttl_secs| Flag::UpdateTtl { ttl_secs })?,
            b'E' => cas(Flag::NewCas)?,
            b'C' => cas(Flag::CompareCas)?,
            // memcached forgets to name this error, so the default reason stands.
            b'F' => parse_u32(value).map(Flag::SetFlags).ok_or(FlagError::BadToken(None))?,
            b'M' => match value {
                [mode] => Flag::Mode(*mode),
                _ => return Err(FlagError::BadToken(Some(BAD_MODE_LEN))),
            },
            b'D' => parse_u64(value)
                .map(Flag::Delta)
                .ok_or(FlagError::BadToken(Some(BAD_DELTA_TOKEN)))?,
            b'J' => {
                parse_u64(value).map(Flag::Initial).ok_or(FlagError::BadToken(Some(BAD_INITIAL)))?
            }
            b'P' | b'L' => Flag::Reserved { letter, token: value },
            _ => return Err(FlagError::Unknown),
        })
    }

    /// The flag's letter.
    pub fn letter(&self) -> u8 {
        match self {
            Flag::Base64Key => b'b',
            Flag::ReturnCas => b'c',
            Flag::ReturnFlags => b'f',
            Flag::ReturnHit => b'h',
            Flag::ReturnKey => b'k',
            Flag::ReturnLastAccess => b'l',
            Flag::Opaque(_) => b'O',
            Flag::Quiet => b'q',
            Flag::ReturnSize => b's',
            Flag::ReturnTtl => b't',
            Flag::NoBump => b'u',
            Flag::ReturnValue => b'v',
            Flag::Invalidate => b'I',
            Flag::RemoveValue => b'x',
            Flag::Vivify { .. } => b'N',
            Flag::Recache { .. } => b'R',
            Flag::UpdateTtl { .. } => b'T',
            Flag::NewCas(_) => b'E',
            Flag::CompareCas(_) => b'C',
            Flag::SetFlags(_) => b'F',
            Flag::Mode(_) => b'M',
            Flag::Delta(_) => b'D',
            Flag::Initial(_) => b'J',
            Flag::Reserved { letter, .. } => *letter,
        }
    }

    /// Appends the flag as sent: its letter and token, no separator.
    pub fn compose(&self, buf: &mut Vec<u8>) {
        buf.push(self.letter());
        match *self {
            Flag::Opaque(token) | Flag::Reserved { token, .. } => buf.extend_from_slice(token),
            Flag::Vivify { ttl_secs }
            | Flag::Recache { ttl_secs }
            | Flag::UpdateTtl { ttl_secs } => push_i64(buf, ttl_secs),
            Flag::NewCas(value)
            | Flag::CompareCas(value)
            | Flag::Delta(value)
            | Flag::Initial(value) => push_u64(buf, value),
            Flag::SetFlags(flags) => push_u64(buf, u64::from(flags)),
            Flag::Mode(mode) => buf.push(mode),
            _ => {}
        }
    }
}

/// The flags of one meta request: what each asks for, and the order they came in (replies
/// return flags in request order). Fields are public to read; only the parser builds one.
#[derive(Clone, Copy, Debug, Default)]
pub struct MetaFlags<'a> {
    /// The flag tokens as sent, already checked.
    raw: &'a [u8],
    pub base64_key: bool,
    pub return_cas: bool,
    pub return_flags: bool,
    pub return_hit: bool,
    pub return_key: bool,
    pub return_last_access: bool,
    pub opaque: Option<&'a [u8]>,
    pub quiet: bool,
    pub return_size: bool,
    pub return_ttl: bool,
    pub no_bump: bool,
    pub return_value: bool,
    pub invalidate: bool,
    pub remove_value: bool,
    pub vivify_ttl_secs: Option<i64>,
    pub recache_ttl_secs: Option<i64>,
    pub update_ttl_secs: Option<i64>,
    pub new_cas: Option<u64>,
    pub compare_cas: Option<u64>,
    pub set_flags: Option<u32>,
    pub mode: Option<u8>,
    pub delta: Option<u64>,
    pub initial: Option<u64>,
}

impl<'a> MetaFlags<'a> {
    /// Checks the flag tokens in `raw` the way memcached does, `key` being the key as sent
    /// (checked for base64 if `b` is among them). Returns the error reason on failure.
    pub(crate) fn parse(raw: &'a [u8], key: &[u8]) -> Result<MetaFlags<'a>, &'static str> {
        let mut flags = MetaFlags { raw, ..MetaFlags::default() };
        // One bit per ASCII letter: cheaper to clear and test than a byte table.
        let mut seen: u128 = 0;
        // memcached keeps going after a bad token, and the last reason noted wins.
        let mut failed = false;
        let mut reason = BAD_FORMAT;
        for token in tokens(raw) {
            let letter = u32::from(token[0]);
            if letter >= 127 || seen & (1 << letter) != 0 {
                return Err(DUPLICATE_FLAG);
            }
            seen |= 1 << letter;
            if token.len() == 1 && flags.note_bare(token[0]) {
                continue;
            }
            match Flag::parse(token) {
                Ok(flag) => {
                    if flag == Flag::Base64Key && !base64_decodes(key) {
                        failed = true;
                        reason = BAD_BASE64_KEY;
                    }
                    flags.note(flag);
                }
                Err(FlagError::Unknown) => return Err(INVALID_FLAG),
                Err(FlagError::BadToken(noted)) => {
                    failed = true;
                    reason = noted.unwrap_or(reason);
                }
            }
        }
        if failed {
            return Err(reason);
        }
        Ok(flags)
    }

    /// Notes a one-letter flag that takes no token and needs no check (most flags of a
    /// get: `v`, `q`, `k`, ...) without going through [`Flag::parse`]; false for any other
    /// letter. Each letter sets what [`MetaFlags::note`] sets for its [`Flag`].
    fn note_bare(&mut self, letter: u8) -> bool {
        let field = match letter {
            b'c' => &mut self.return_cas,
            b'f' => &mut self.return_flags,
            b'h' => &mut self.return_hit,
            b'k' => &mut self.return_key,
            b'l' => &mut self.return_last_access,
            b'q' => &mut self.quiet,
            b's' => &mut self.return_size,
            b't' => &mut self.return_ttl,
            b'u' => &mut self.no_bump,
            b'v' => &mut self.return_value,
            b'I' => &mut self.invalidate,
            b'x' => &mut self.remove_value,
            _ => return false,
        };
        *field = true;
        true
    }

    fn note(&mut self, flag: Flag<'a>) {
        match flag {
            Flag::Base64Key => self.base64_key = true,
            Flag::ReturnCas => self.return_cas = true,
            Flag::ReturnFlags => self.return_flags = true,
            Flag::ReturnHit => self.return_hit = true,
            Flag::ReturnKey => self.return_key = true,
            Flag::ReturnLastAccess => self.return_last_access = true,
            Flag::Opaque(token) => self.opaque = Some(token),
            Flag::Quiet => self.quiet = true,
            Flag::ReturnSize => self.return_size = true,
            Flag::ReturnTtl => self.return_ttl = true,
            Flag::NoBump => self.no_bump = true,
            Flag::ReturnValue => self.return_value = true,
            Flag::Invalidate => self.invalidate = true,
            Flag::RemoveValue => self.remove_value = true,
            Flag::Vivify { ttl_secs } => self.vivify_ttl_secs = Some(ttl_secs),
            Flag::Recache { ttl_secs } => self.recache_ttl_secs = Some(ttl_secs),
            Flag::UpdateTtl { ttl_secs } => self.update_ttl_secs = Some(ttl_secs),
            Flag::NewCas(cas) => self.new_cas = Some(cas),
            Flag::CompareCas(cas) => self.compare_cas = Some(cas),
            Flag::SetFlags(client_flags) => self.set_flags = Some(client_flags),
            Flag::Mode(mode) => self.mode = Some(mode),
            Flag::Delta(delta) => self.delta = Some(delta),
            Flag::Initial(initial) => self.initial = Some(initial),
            Flag::Reserved { .. } => {}
        }
    }

    /// Whether a reply echoes any flag: `O`, `k`, or one reporting on the item (`c`, `f`,
    /// `h`, `l`, `s`, `t`). Without one, a reply need not walk the flags again.
    pub fn echoes_any(&self) -> bool {
        self.opaque.is_some()
            || self.return_key
            || self.return_cas
            || self.return_flags
            || self.return_hit
            || self.return_last_access
            || self.return_size
            || self.return_ttl
    }

    /// Whether a reply needs the clock: `l` and `t` count from now.
    pub fn needs_clock(&self) -> bool {
        self.return_last_access || self.return_ttl
    }

    /// The flags in the order they were sent.
    pub fn iter(&self) -> impl Iterator<Item = Flag<'a>> + Clone {
        // Every token was checked by `parse`, so none is dropped here.
        tokens(self.raw).filter_map(|token| Flag::parse(token).ok())
    }

    /// How many flags were sent.
    pub fn len(&self) -> usize {
        tokens(self.raw).count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends the flags, each preceded by a space.
    pub fn compose(&self, buf: &mut Vec<u8>) {
        compose_flags(self.iter(), buf);
    }
}

/// Equal when the same flags came in the same order, however they were spaced.
impl PartialEq for MetaFlags<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for MetaFlags<'_> {}

/// Appends `flags`, each preceded by a space (a client building a request).
pub fn compose_flags<'f>(flags: impl IntoIterator<Item = Flag<'f>>, buf: &mut Vec<u8>) {
    for flag in flags {
        buf.push(b' ');
        flag.compose(buf);
    }
}

/// memcached refuses a `b` key that decodes to nothing as well as one that does not decode.
fn base64_decodes(key: &[u8]) -> bool {
    matches!(base64::decoded_len(key), Some(len) if len > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Goal: every flag parses to its variant and composes back to the same token.
    // Goal: every one-letter flag sets exactly the fields its parsed Flag sets, whether or
    // not the shortcut for bare letters takes it.
    #[test]
    fn bare_letters_match_parsed_flags() {
        for letter in (b'a'..=b'z').chain(b'A'..=b'Z') {
            let raw = [letter];
            let Ok(flags) = MetaFlags::parse(&raw, b"a2V5") else { continue };
            let mut want = MetaFlags { raw: &raw, ..MetaFlags::default() };
            want.note(Flag::parse(&raw).expect("parse accepted it"));
            assert_eq!(format!("{flags:?}"), format!("{want:?}"), "{}", letter as char);
        }
    }

    #[test]
    fn every_flag_round_trips() {
        let table: [(&[u8], Flag); 25] = [
            (b"b", Flag::Base64Key),
            (b"c", Flag::ReturnCas),
            (b"f", Flag::ReturnFlags),
            (b"h", Flag::ReturnHit),
            (b"k", Flag::ReturnKey),
            (b"l", Flag::ReturnLastAccess),
            (b"Oab12", Flag::Opaque(b"ab12")),
            (b"q", Flag::Quiet),
            (b"s", Flag::ReturnSize),
            (b"t", Flag::ReturnTtl),
            (b"u", Flag::NoBump),
            (b"v", Flag::ReturnValue),
            (b"I", Flag::Invalidate),
            (b"x", Flag::RemoveValue),
            (b"N30", Flag::Vivify { ttl_secs: 30 }),
            (b"R-5", Flag::Recache { ttl_secs: -5 }),
            (b"T0", Flag::UpdateTtl { ttl_secs: 0 }),
            (b"E99", Flag::NewCas(99)),
            (b"C18446744073709551615", Flag::CompareCas(u64::MAX)),
            (b"F4294967295", Flag::SetFlags(u32::MAX)),
            (b"ME", Flag::Mode(b'E')),
            (b"D7", Flag::Delta(7)),
            (b"J1", Flag::Initial(1)),
            (b"Pabc", Flag::Reserved { letter: b'P', token: b"abc" }),
            (b"L", Flag::Reserved { letter: b'L', token: b"" }),
        ];
        for (wire, flag) in table {
            assert_eq!(Flag::parse(wire), Ok(flag), "{}", String::from_utf8_lossy(wire));
            let mut buf = Vec::new();
            flag.compose(&mut buf);
            assert_eq!(buf, wire);
        }
    }

    // Goal: bad tokens give memcached's reasons, including which one wins.
    #[test]
    fn errors_as_memcached() {
        let key = b"foo";
        let table: [(&[u8], &str); 12] = [
            (b"v v", DUPLICATE_FLAG),
            (b"v Q", INVALID_FLAG),
            (b"Nx", BAD_TOKEN),
            (b"T", BAD_TOKEN),
            (b"C-1", BAD_TOKEN),
            (b"Fx", BAD_FORMAT),
            (b"Nx Fx", BAD_TOKEN),
            (b"Jx", BAD_INITIAL),
            (b"Dx", BAD_DELTA_TOKEN),
            (b"MEE", BAD_MODE_LEN),
            (b"Nx Z", INVALID_FLAG),
            (b"b", BAD_BASE64_KEY),
        ];
        for (raw, reason) in table {
            assert_eq!(MetaFlags::parse(raw, key).err(), Some(reason), "{:?}", raw);
        }
        assert_eq!(MetaFlags::parse(b"\xff", key).err(), Some(DUPLICATE_FLAG));
        assert!(MetaFlags::parse(b"b", b"Zm9v").is_ok());
    }

    // Goal: parsed flags expose their values and keep their order.
    #[test]
    fn fields_and_order() {
        let flags = MetaFlags::parse(b"v  T30 O123 k", b"k").expect("valid");
        assert!(flags.return_value && flags.return_key);
        assert_eq!(flags.update_ttl_secs, Some(30));
        assert_eq!(flags.opaque, Some(&b"123"[..]));
        let letters: Vec<u8> = flags.iter().map(|flag| flag.letter()).collect();
        assert_eq!(letters, b"vTOk");
        let mut buf = Vec::new();
        flags.compose(&mut buf);
        assert_eq!(buf, b" v T30 O123 k");
    }
}
