//! Redis's glob patterns (`stringmatchlen`): `*`, `?`, `[abc]`, `[^a]`, `[a-z]`, `\x`.
//!
//! Redis matches `*` by recursion; we keep one backtrack point (the last `*`), which
//! accepts the same strings in O(pattern × text) time for any pattern, where the
//! recursive form can take exponential time on patterns like `a*a*a*a*b`. Redis's one
//! limit is kept: a match that would pass through more than [`MAX_STARS`] `*`s (each a
//! level of its recursion) fails.

/// Whether letters match regardless of ASCII case (CONFIG GET does, KEYS does not).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Case {
    Sensitive,
    Insensitive,
}

/// Redis's protection against abusive patterns: the `*`s (runs of them count once) a
/// match may go through while text is left, beyond which it fails.
const MAX_STARS: usize = 1000;

/// Whether `text` matches `pattern` as a whole.
pub(super) fn matches(pattern: &[u8], text: &[u8], case: Case) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut stars = 0;
    // After a `*`: where the pattern resumes and the next text position to try.
    let mut retry: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() {
            if pattern[p] == b'*' {
                while p < pattern.len() && pattern[p] == b'*' {
                    p += 1;
                }
                if p == pattern.len() {
                    return true;
                }
                stars += 1;
                if stars > MAX_STARS {
                    return false;
                }
                retry = Some((p, t));
                continue;
            }
            if let Some(next) = match_one(pattern, p, text[t], case) {
                p = next;
                t += 1;
                continue;
            }
        }
        let Some((resume, tried)) = retry else {
            return false;
        };
        retry = Some((resume, tried + 1));
        p = resume;
        t = tried + 1;
    }
    pattern[p..].iter().all(|&b| b == b'*')
}

/// Matches the pattern element at `p` (not `*`) against one byte; returns where the next
/// element starts, or `None` on a mismatch.
fn match_one(pattern: &[u8], p: usize, byte: u8, case: Case) -> Option<usize> {
    match pattern[p] {
        b'?' => Some(p + 1),
        b'[' => {
            let (matched, next) = match_class(pattern, p + 1, byte, case);
            matched.then_some(next)
        }
        b'\\' if p + 1 < pattern.len() => same(pattern[p + 1], byte, case).then_some(p + 2),
        literal => same(literal, byte, case).then_some(p + 1),
    }
}

/// A `[...]` class whose body starts at `p`; returns whether `byte` is in it and where the
/// pattern continues. An unterminated class runs to the end of the pattern, as in Redis.
fn match_class(pattern: &[u8], mut p: usize, byte: u8, case: Case) -> (bool, usize) {
    let negated = pattern.get(p) == Some(&b'^');
    if negated {
        p += 1;
    }
    let mut matched = false;
    loop {
        let rest = &pattern[p.min(pattern.len())..];
        match rest {
            [] => return (matched != negated, pattern.len()),
            [b'\\', escaped, ..] => {
                matched |= *escaped == byte;
                p += 2;
            }
            [b']', ..] => return (matched != negated, p + 1),
            [start, b'-', end, ..] => {
                let (mut lo, mut hi) = ((*start).min(*end), (*start).max(*end));
                let mut c = byte;
                if case == Case::Insensitive {
                    (lo, hi, c) =
                        (lo.to_ascii_lowercase(), hi.to_ascii_lowercase(), c.to_ascii_lowercase());
                }
                matched |= (lo..=hi).contains(&c);
                p += 3;
            }
            [single, ..] => {
                matched |= same(*single, byte, case);
                p += 1;
            }
        }
    }
}

fn same(a: u8, b: u8, case: Case) -> bool {
    match case {
        Case::Sensitive => a == b,
        Case::Insensitive => a.eq_ignore_ascii_case(&b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Goal: Redis's documented KEYS examples and the edge cases of `stringmatchlen`.
    #[test]
    fn glob_table() {
        let table: &[(&str, &str, bool)] = &[
            ("h?llo", "hello", true),
            ("h?llo", "hllo", false),
            ("h*llo", "hllo", true),
            ("h*llo", "heeeello", true),
            ("h[ae]llo", "hallo", true),
            ("h[ae]llo", "hillo", false),
            ("h[^e]llo", "hallo", true),
            ("h[^e]llo", "hello", false),
            ("h[a-b]llo", "hbllo", true),
            ("h[b-a]llo", "hallo", true),
            ("h[a-b]llo", "hcllo", false),
            ("h\\*llo", "h*llo", true),
            ("h\\*llo", "hello", false),
            ("*", "", true),
            ("", "", true),
            ("", "a", false),
            ("a*", "a", true),
            ("*a", "ba", true),
            ("*a", "ab", false),
            ("a*b*c", "axxbyyc", true),
            ("a*b*c", "axxbyy", false),
            ("[abc", "b", true),
            ("[abc", "d", false),
            ("[\\]]", "]", true),
            ("x\\", "x\\", true),
            ("a*a*a*a*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false),
        ];
        for &(pattern, text, want) in table {
            let got = matches(pattern.as_bytes(), text.as_bytes(), Case::Sensitive);
            assert_eq!(got, want, "{pattern:?} vs {text:?}");
        }
        assert!(matches(b"MAX*", b"maxmemory", Case::Insensitive));
        assert!(matches(b"[A-C]x", b"bx", Case::Insensitive));
        assert!(!matches(b"MAX*", b"maxmemory", Case::Sensitive));
    }

    /// Goal: Redis's limit of 1000 `*`s passed through, at its edge; trailing stars and
    /// stars reached once the text is used up do not count.
    #[test]
    fn star_limit() {
        let text = vec![b'a'; 1001];
        for (stars, want) in [(1000, true), (1001, false)] {
            let pattern = b"*a".repeat(stars);
            assert_eq!(matches(&pattern, &text[..stars], Case::Sensitive), want, "{stars}");
        }
        assert!(!matches(&b"*?".repeat(50_000), &vec![b'a'; 50_000], Case::Sensitive));
        assert!(matches(&b"a*".repeat(1001), &text, Case::Sensitive));
        assert!(matches(&[b"a".as_slice(), &b"*".repeat(5000)].concat(), b"a", Case::Sensitive));
    }
}
