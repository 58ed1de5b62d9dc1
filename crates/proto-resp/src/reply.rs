//! Reply composition that hides the protocol version (Valkey's `addReply*` idea).
//!
//! | call            | RESP3             | RESP2                 |
//! |-----------------|-------------------|-----------------------|
//! | `null`          | `_`               | `$-1`                 |
//! | `null_array`    | `_`               | `*-1`                 |
//! | `map(n)`        | `%n`              | `*2n` (flat pairs)    |
//! | `set(n)`        | `~n`              | `*n`                  |
//! | `push(n)`       | `>n`              | `*n`                  |
//! | `double(d)`     | `,d`              | `$len` bulk of `d`    |
//! | `boolean(b)`    | `#t` / `#f`       | `:1` / `:0`           |
//! | `big_number(s)` | `(s`              | bulk of `s`           |
//! | `verbatim`      | `=len` `fmt:text` | bulk of `text`        |
//!
//! Attributes (`|`) are not offered: Redis only sends them in RESP3 and has no RESP2 form.

use crate::{error::map_newlines, Protocol};

/// Appends replies to a byte buffer in the client's protocol version.
///
/// ```
/// use proto_resp::{Protocol, Reply};
/// let mut out = Vec::new();
/// let mut reply = Reply::new(&mut out, Protocol::Resp2);
/// reply.map(1);
/// reply.bulk(b"k");
/// reply.double(1.5);
/// assert_eq!(out, b"*2\r\n$1\r\nk\r\n$3\r\n1.5\r\n");
/// ```
#[derive(Debug)]
pub struct Reply<'b> {
    out: &'b mut Vec<u8>,
    protocol: Protocol,
}

/// An aggregate header whose length is written later ([`Reply::deferred`]).
#[derive(Debug)]
#[must_use = "a deferred header must be completed with Reply::set_deferred"]
pub struct Deferred {
    pos: usize,
    kind: Aggregate,
}

/// The aggregate kinds whose length may be deferred.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aggregate {
    Array,
    Map,
    Set,
}

impl<'b> Reply<'b> {
    pub fn new(out: &'b mut Vec<u8>, protocol: Protocol) -> Self {
        Reply { out, protocol }
    }

    pub fn protocol(&self) -> Protocol {
        self.protocol
    }

    /// `+text`. CR and LF in `text` become spaces so the stream stays framed.
    pub fn simple(&mut self, text: &[u8]) {
        self.line(b'+', text);
    }

    /// `-message`, where `message` carries its code (`ERR syntax error`). A trailing CRLF
    /// is trimmed and inner CR/LF become spaces, as Redis's `addReplyErrorFormat` does.
    /// Takes the texts of [`crate::error`] as they are: `reply.error(error::SYNTAX)`.
    pub fn error(&mut self, message: impl AsRef<[u8]>) {
        let message = message.as_ref();
        let mut end = message.len();
        while end > 0 && matches!(message[end - 1], b'\r' | b'\n') {
            end -= 1;
        }
        self.line(b'-', &message[..end]);
    }

    /// `+OK`.
    pub fn ok(&mut self) {
        self.out.extend_from_slice(b"+OK\r\n");
    }

    /// `:n`.
    pub fn integer(&mut self, n: i64) {
        self.header(b':', n);
    }

    /// `$len` and the bytes.
    pub fn bulk(&mut self, data: &[u8]) {
        self.header(b'$', data.len() as i64);
        self.out.extend_from_slice(data);
        self.out.extend_from_slice(b"\r\n");
    }

    /// [`Reply::bulk`], unless `lend` takes the bytes: it gets the offset in the output
    /// where they belong and returns true if it lent them (the caller places them there
    /// before the output is sent); the closing CRLF is written either way.
    #[inline(always)]
    pub fn bulk_or_lend(&mut self, data: &[u8], lend: impl FnOnce(usize) -> bool) {
        self.header(b'$', data.len() as i64);
        if !lend(self.out.len()) {
            self.out.extend_from_slice(data);
        }
        self.out.extend_from_slice(b"\r\n");
    }

    /// A missing value: RESP2 `$-1`, RESP3 `_`.
    pub fn null(&mut self) {
        match self.protocol {
            Protocol::Resp2 => self.out.extend_from_slice(b"$-1\r\n"),
            Protocol::Resp3 => self.out.extend_from_slice(b"_\r\n"),
        }
    }

    /// A missing aggregate: RESP2 `*-1`, RESP3 `_` (RESP3 has a single null).
    pub fn null_array(&mut self) {
        match self.protocol {
            Protocol::Resp2 => self.out.extend_from_slice(b"*-1\r\n"),
            Protocol::Resp3 => self.out.extend_from_slice(b"_\r\n"),
        }
    }

    /// `*n`; `n` elements follow.
    pub fn array(&mut self, n: usize) {
        self.header(b'*', len_i64(n));
    }

    /// `%n` (RESP3) or `*2n` (RESP2); `n` key/value pairs follow.
    pub fn map(&mut self, n: usize) {
        match self.protocol {
            Protocol::Resp2 => self.header(b'*', len_i64(n.checked_mul(2).expect("map length"))),
            Protocol::Resp3 => self.header(b'%', len_i64(n)),
        }
    }

    /// `~n` (RESP3) or `*n` (RESP2).
    pub fn set(&mut self, n: usize) {
        let prefix = if self.protocol == Protocol::Resp3 { b'~' } else { b'*' };
        self.header(prefix, len_i64(n));
    }

    /// `>n` (RESP3) or `*n` (RESP2, as Redis sends pub/sub messages).
    pub fn push(&mut self, n: usize) {
        let prefix = if self.protocol == Protocol::Resp3 { b'>' } else { b'*' };
        self.header(prefix, len_i64(n));
    }

    /// `,d` (RESP3) or a bulk string of the same text (RESP2), formatted as Redis's
    /// `d2string`: see [`format_double`].
    pub fn double(&mut self, d: f64) {
        let mut text = Vec::with_capacity(24);
        format_double(d, &mut text);
        match self.protocol {
            Protocol::Resp2 => self.bulk(&text),
            Protocol::Resp3 => self.line(b',', &text),
        }
    }

    /// `#t`/`#f` (RESP3) or `:1`/`:0` (RESP2).
    pub fn boolean(&mut self, b: bool) {
        match (self.protocol, b) {
            (Protocol::Resp3, true) => self.out.extend_from_slice(b"#t\r\n"),
            (Protocol::Resp3, false) => self.out.extend_from_slice(b"#f\r\n"),
            (Protocol::Resp2, b) => self.integer(i64::from(b)),
        }
    }

    /// `(digits` (RESP3) or a bulk string (RESP2). The caller supplies valid digits.
    pub fn big_number(&mut self, digits: &[u8]) {
        match self.protocol {
            Protocol::Resp2 => self.bulk(digits),
            Protocol::Resp3 => self.line(b'(', digits),
        }
    }

    /// `=len\r\nfmt:text` (RESP3) or a bulk string of `text` (RESP2). `format` is a
    /// three-byte type such as `txt` or `mkd`.
    pub fn verbatim(&mut self, format: &[u8; 3], text: &[u8]) {
        match self.protocol {
            Protocol::Resp2 => self.bulk(text),
            Protocol::Resp3 => {
                self.header(b'=', len_i64(text.len() + 4));
                self.out.extend_from_slice(format);
                self.out.push(b':');
                self.out.extend_from_slice(text);
                self.out.extend_from_slice(b"\r\n");
            }
        }
    }

    /// Starts an aggregate whose length is not known yet (Redis's `addReplyDeferredLen`).
    /// Write the elements, then call [`Reply::set_deferred`].
    pub fn deferred(&mut self, kind: Aggregate) -> Deferred {
        Deferred { pos: self.out.len(), kind }
    }

    /// Completes a deferred header with `n` elements (pairs, for a map). The header is
    /// inserted in front of the elements, which moves them once: fine for the small
    /// replies this is meant for (KEYS, SCAN pages, COMMAND DOCS).
    pub fn set_deferred(&mut self, deferred: Deferred, n: usize) {
        assert!(deferred.pos <= self.out.len(), "deferred header beyond the buffer");
        let mut header = Vec::with_capacity(24);
        let mut inner = Reply::new(&mut header, self.protocol);
        match deferred.kind {
            Aggregate::Array => inner.array(n),
            Aggregate::Map => inner.map(n),
            Aggregate::Set => inner.set(n),
        }
        self.out.splice(deferred.pos..deferred.pos, header);
    }

    fn line(&mut self, prefix: u8, text: &[u8]) {
        self.out.push(prefix);
        let start = self.out.len();
        self.out.extend_from_slice(text);
        map_newlines(&mut self.out[start..]);
        self.out.extend_from_slice(b"\r\n");
    }

    fn header(&mut self, prefix: u8, n: i64) {
        // Short lengths (most values and arrays) as one fixed-size append.
        match u8::try_from(n) {
            Ok(n @ 0..=9) => self.out.extend_from_slice(&[prefix, b'0' + n, b'\r', b'\n']),
            Ok(n @ 10..=99) => {
                self.out.extend_from_slice(&[prefix, b'0' + n / 10, b'0' + n % 10, b'\r', b'\n'])
            }
            _ => {
                self.out.push(prefix);
                write_i64(n, self.out);
                self.out.extend_from_slice(b"\r\n");
            }
        }
    }
}

fn len_i64(n: usize) -> i64 {
    i64::try_from(n).expect("a length beyond i64 cannot be in memory")
}

/// Appends the decimal text of `n`.
pub(crate) fn write_i64(n: i64, out: &mut Vec<u8>) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = n.unsigned_abs();
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    if n < 0 {
        out.push(b'-');
    }
    out.extend_from_slice(&digits[at..]);
}

/// Formats a double as Redis's `d2string` does: `nan`, `inf`, `-inf`, `0`, `-0`; integral
/// values within ±2^62 as integers; everything else as the shortest round-trip digits laid
/// out the way `fpconv_dtoa` lays them out (plain up to 21 integer digits, plain decimals
/// down to 1e-6, otherwise `d.ddde+XX` with no zero padding of the exponent).
///
/// Unverified: grisu2 (behind `fpconv_dtoa`) is not guaranteed shortest for every input;
/// Rust's formatter is. Where they differ, both texts parse back to the same double.
pub fn format_double(d: f64, out: &mut Vec<u8>) {
    if d.is_nan() {
        out.extend_from_slice(b"nan");
    } else if d.is_infinite() {
        out.extend_from_slice(if d < 0.0 { b"-inf" } else { b"inf" });
    } else if d == 0.0 {
        out.extend_from_slice(if d.is_sign_negative() { b"-0" } else { b"0" });
    } else if d.fract() == 0.0 && d.abs() <= (i64::MAX / 2) as f64 {
        // `double2ll`: integral and safely inside the i64 range.
        write_i64(d as i64, out);
    } else {
        format_shortest(d, out);
    }
}

/// `fpconv_dtoa`'s layout of the shortest digits.
fn format_shortest(d: f64, out: &mut Vec<u8>) {
    // `{:e}` gives the shortest round-trip digits: "-1.2345e-7".
    let sci = format!("{:e}", d.abs());
    let (mantissa, exponent) = sci.split_once('e').expect("{:e} always has an exponent");
    let exponent: i32 = exponent.parse().expect("{:e} exponent is an integer");
    let digits: Vec<u8> = mantissa.bytes().filter(u8::is_ascii_digit).collect();
    let ndigits = digits.len() as i32;
    // fpconv's K: the value is digits * 10^k.
    let k = exponent - (ndigits - 1);
    let exp_abs = (k + ndigits - 1).abs();
    if d < 0.0 {
        out.push(b'-');
    }
    if k >= 0 && exp_abs < ndigits + 7 {
        out.extend_from_slice(&digits);
        out.resize(out.len() + k as usize, b'0');
    } else if k < 0 && (k > -7 || exp_abs < 4) {
        let offset = ndigits + k;
        if offset <= 0 {
            out.extend_from_slice(b"0.");
            out.resize(out.len() + (-offset) as usize, b'0');
            out.extend_from_slice(&digits);
        } else {
            out.extend_from_slice(&digits[..offset as usize]);
            out.push(b'.');
            out.extend_from_slice(&digits[offset as usize..]);
        }
    } else {
        out.push(digits[0]);
        if digits.len() > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits[1..]);
        }
        out.push(b'e');
        out.push(if exponent < 0 { b'-' } else { b'+' });
        write_i64(i64::from(exp_abs), out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn both(f: impl Fn(&mut Reply)) -> (Vec<u8>, Vec<u8>) {
        let mut two = Vec::new();
        f(&mut Reply::new(&mut two, Protocol::Resp2));
        let mut three = Vec::new();
        f(&mut Reply::new(&mut three, Protocol::Resp3));
        (two, three)
    }

    /// Goal: headers read the same on both sides of the short-length shortcut.
    #[test]
    fn a_lent_bulk_leaves_its_place_between_header_and_crlf() {
        let mut out = Vec::new();
        let mut reply = Reply::new(&mut out, Protocol::Resp3);
        let mut lent_at = None;
        reply.bulk_or_lend(&[b'x'; 5000], |at| {
            lent_at = Some(at);
            true
        });
        reply.bulk_or_lend(b"ab", |_| false);
        assert_eq!(lent_at, Some(7));
        assert_eq!(out, b"$5000\r\n\r\n$2\r\nab\r\n");
    }

    #[test]
    fn header_lengths_around_the_shortcut() {
        for n in [0usize, 1, 9, 10, 42, 99, 100, 101, 255, 256, 1000, 123_456_789] {
            let mut out = Vec::new();
            let mut reply = Reply::new(&mut out, Protocol::Resp2);
            reply.array(n);
            reply.bulk(&vec![b'x'; n.min(300)]);
            let mut want = format!("*{n}\r\n${}\r\n", n.min(300)).into_bytes();
            want.extend(std::iter::repeat_n(b'x', n.min(300)));
            want.extend_from_slice(b"\r\n");
            assert_eq!(out, want, "n = {n}");
        }
    }

    /// Goal: every reply type in both versions. Method: (call, RESP2 bytes, RESP3 bytes).
    #[test]
    fn every_type_in_both_versions() {
        type Case = (&'static str, fn(&mut Reply), &'static [u8], &'static [u8]);
        let table: &[Case] = &[
            ("simple", |r| r.simple(b"PONG"), b"+PONG\r\n", b"+PONG\r\n"),
            ("simple crlf", |r| r.simple(b"a\r\nb"), b"+a  b\r\n", b"+a  b\r\n"),
            ("ok", |r| r.ok(), b"+OK\r\n", b"+OK\r\n"),
            (
                "error",
                |r| r.error(b"ERR syntax error"),
                b"-ERR syntax error\r\n",
                b"-ERR syntax error\r\n",
            ),
            ("error trim", |r| r.error(b"ERR x\ny\r\n"), b"-ERR x y\r\n", b"-ERR x y\r\n"),
            ("integer", |r| r.integer(-42), b":-42\r\n", b":-42\r\n"),
            (
                "int min",
                |r| r.integer(i64::MIN),
                b":-9223372036854775808\r\n",
                b":-9223372036854775808\r\n",
            ),
            ("bulk", |r| r.bulk(b"a\r\nb"), b"$4\r\na\r\nb\r\n", b"$4\r\na\r\nb\r\n"),
            ("empty bulk", |r| r.bulk(b""), b"$0\r\n\r\n", b"$0\r\n\r\n"),
            ("null", |r| r.null(), b"$-1\r\n", b"_\r\n"),
            ("null array", |r| r.null_array(), b"*-1\r\n", b"_\r\n"),
            ("array", |r| r.array(3), b"*3\r\n", b"*3\r\n"),
            ("map", |r| r.map(2), b"*4\r\n", b"%2\r\n"),
            ("set", |r| r.set(2), b"*2\r\n", b"~2\r\n"),
            ("push", |r| r.push(3), b"*3\r\n", b">3\r\n"),
            ("double", |r| r.double(1.5), b"$3\r\n1.5\r\n", b",1.5\r\n"),
            ("double int", |r| r.double(10.0), b"$2\r\n10\r\n", b",10\r\n"),
            ("double inf", |r| r.double(f64::NEG_INFINITY), b"$4\r\n-inf\r\n", b",-inf\r\n"),
            ("true", |r| r.boolean(true), b":1\r\n", b"#t\r\n"),
            ("false", |r| r.boolean(false), b":0\r\n", b"#f\r\n"),
            (
                "big",
                |r| r.big_number(b"123456789012345678901234567890"),
                b"$30\r\n123456789012345678901234567890\r\n",
                b"(123456789012345678901234567890\r\n",
            ),
            ("verbatim", |r| r.verbatim(b"txt", b"hi"), b"$2\r\nhi\r\n", b"=6\r\ntxt:hi\r\n"),
        ];
        for (name, call, resp2, resp3) in table {
            let (two, three) = both(call);
            assert_eq!(two, *resp2, "{name} RESP2: {:?}", String::from_utf8_lossy(&two));
            assert_eq!(three, *resp3, "{name} RESP3: {:?}", String::from_utf8_lossy(&three));
        }
    }

    #[test]
    fn deferred_headers() {
        let (two, three) = both(|r| {
            let d = r.deferred(Aggregate::Map);
            r.bulk(b"a");
            r.integer(1);
            r.set_deferred(d, 1);
        });
        assert_eq!(two, b"*2\r\n$1\r\na\r\n:1\r\n");
        assert_eq!(three, b"%1\r\n$1\r\na\r\n:1\r\n");
        let (two, _) = both(|r| {
            r.integer(7);
            let d = r.deferred(Aggregate::Array);
            r.set_deferred(d, 0);
        });
        assert_eq!(two, b":7\r\n*0\r\n");
    }

    /// Goal: `d2string`/`fpconv_dtoa` layout. Expected texts worked out from fpconv's rules.
    #[test]
    fn double_text() {
        let table: &[(f64, &str)] = &[
            (f64::NAN, "nan"),
            (f64::INFINITY, "inf"),
            (0.0, "0"),
            (-0.0, "-0"),
            (3.0, "3"),
            (-3.0, "-3"),
            (1.5, "1.5"),
            (-0.25, "-0.25"),
            (0.1, "0.1"),
            (3.0625, "3.0625"),
            (1e-6, "0.000001"),
            (1.5e-6, "1.5e-6"),
            (1e-7, "1e-7"),
            (1.25e-10, "1.25e-10"),
            (1e19, "1e+19"),
            (1.5e20, "1.5e+20"),
            (6917529027641081856.0, "6917529027641082000"),
            (1e23, "1e+23"),
            (1.5e300, "1.5e+300"),
            (-2.5e-300, "-2.5e-300"),
            (4611686018427387904.0, "4611686018427387904"),
            (123456.789, "123456.789"),
            (1.0000000000000002, "1.0000000000000002"),
        ];
        for &(d, want) in table {
            let mut out = Vec::new();
            format_double(d, &mut out);
            assert_eq!(String::from_utf8(out).unwrap(), want, "{d:e}");
        }
    }
}
