//! A library's first line, `#!lua name=<library>`, read as Redis 7.0 reads it: split
//! into words as `sdssplitargs` splits them (quotes and their escapes), the engine named
//! by the first word less its `#!`, `name=` once.

/// Parses `#!lua name=<lib>`: the library's name and where its code starts (at the
/// shebang's newline, so line numbers hold).
pub(super) fn metadata(code: &[u8]) -> Result<(String, usize), String> {
    if !code.starts_with(b"#!") {
        return Err("ERR Missing library metadata".into());
    }
    let Some(end) = code.iter().position(|&b| b == b'\n') else {
        return Err("ERR Invalid library metadata".into());
    };
    let parts = match split_args(&code[..end]) {
        Some(parts) if !parts.is_empty() => parts,
        _ => return Err("ERR Invalid library metadata".into()),
    };
    // The engine is the first word less its `#!` (so `#! name=x` names engine '').
    let engine = String::from_utf8_lossy(&parts[0][2..]).into_owned();
    let mut name = None;
    for part in &parts[1..] {
        let text = String::from_utf8_lossy(part);
        if part.len() >= 5 && part[..5].eq_ignore_ascii_case(b"name=") {
            if name.is_some() {
                return Err(
                    "ERR Invalid metadata value, name argument was given multiple times".into()
                );
            }
            name = Some(text[5..].to_owned());
            continue;
        }
        return Err(format!("ERR Invalid metadata value given: {text}"));
    }
    let Some(name) = name else {
        return Err("ERR Library name was not given".into());
    };
    if !valid_name(&name) {
        return Err("ERR Library names can only contain letters, numbers, or underscores(_) and \
                    must be at least one character long"
            .into());
    }
    if !engine.eq_ignore_ascii_case("lua") {
        return Err(format!("ERR Engine '{engine}' not found"));
    }
    Ok((name, end))
}

/// Words of a line as Redis's `sdssplitargs` reads them: separated by blanks, with
/// double quotes (and their escapes `\n \r \t \b \a \\ \" \xHH`) and single quotes
/// (`\'`); a closing quote must end its word. `None` for unbalanced quotes.
fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut words = Vec::new();
    let mut at = 0;
    loop {
        while at < line.len() && line[at].is_ascii_whitespace() {
            at += 1;
        }
        if at == line.len() {
            return Some(words);
        }
        let mut word = Vec::new();
        loop {
            match line.get(at) {
                None => break,
                Some(b) if b.is_ascii_whitespace() => break,
                Some(b'"') => at = quoted(line, at + 1, b'"', &mut word)?,
                Some(b'\'') => at = quoted(line, at + 1, b'\'', &mut word)?,
                Some(&b) => {
                    word.push(b);
                    at += 1;
                }
            }
        }
        words.push(word);
    }
}

/// Reads a quoted part of a word from `at` (after the opening `quote`) into `word`;
/// returns where the word goes on, or `None` if the quote never closes or a non-blank
/// follows it.
fn quoted(line: &[u8], mut at: usize, quote: u8, word: &mut Vec<u8>) -> Option<usize> {
    loop {
        let b = *line.get(at)?;
        if b == quote {
            let next = line.get(at + 1);
            return next.is_none_or(u8::is_ascii_whitespace).then_some(at + 1);
        }
        if b == b'\\' && at + 1 < line.len() {
            let escaped = line[at + 1];
            if quote == b'\'' {
                word.push(if escaped == b'\'' { b'\'' } else { b'\\' });
                at += if escaped == b'\'' { 2 } else { 1 };
                continue;
            }
            let hex = line
                .get(at + 2..at + 4)
                .filter(|h| escaped == b'x' && h.iter().all(u8::is_ascii_hexdigit));
            if let Some(hex) = hex {
                word.push(u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?);
                at += 4;
                continue;
            }
            word.push(match escaped {
                b'n' => b'\n',
                b'r' => b'\r',
                b't' => b'\t',
                b'b' => 8,
                b'a' => 7,
                other => other,
            });
            at += 2;
            continue;
        }
        word.push(b);
        at += 1;
    }
}

pub(super) fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}
