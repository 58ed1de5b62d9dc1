//! A small scanner that finds every function in a Rust source file and how many lines it
//! spans, for the function-length ratchet. It is not a parser: it blanks out comments, string
//! and character literals, splits the rest into identifiers and punctuation, and matches
//! braces. That is enough for the code in this workspace; a function it cannot see (one made
//! by a macro, say) is not measured.
//!
//! Test code is exempt: anything under `#[cfg(test)]` (an inline module, a function, an impl)
//! and every file reached only through a `#[cfg(test)] mod name;` declaration (with the files
//! that file declares in turn), because tests read best as one scenario per function.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

/// One measured function.
pub struct Function {
    /// `Type::name` for a method or an associated function, `name` for a free function.
    pub name: String,
    /// From the line with `fn name` to the line with its closing brace, both included.
    pub lines: usize,
}

/// Every non-test function in the crates whose roots (`lib.rs`, `main.rs`) are given, keyed
/// by file. Files under `src` that no root reaches are measured as ordinary code.
pub fn measure(roots: &[PathBuf], all_files: &[PathBuf]) -> BTreeMap<PathBuf, Vec<Function>> {
    let mut test_only: BTreeMap<PathBuf, bool> = BTreeMap::new();
    let mut queue: VecDeque<PathBuf> = roots.iter().cloned().collect();
    for root in roots {
        test_only.insert(root.clone(), false);
    }
    let mut measured = BTreeMap::new();
    while let Some(file) = queue.pop_front() {
        let in_test = test_only[&file];
        let scan = scan_file(&file, in_test);
        for (child, child_test) in scan.children {
            if !test_only.contains_key(&child) && child.exists() {
                test_only.insert(child.clone(), in_test || child_test);
                queue.push_back(child);
            }
        }
        measured.insert(file, scan.functions);
    }
    let reached: BTreeSet<PathBuf> = measured.keys().cloned().collect();
    for file in all_files.iter().filter(|f| !reached.contains(*f)) {
        measured.insert(file.clone(), scan_file(file, false).functions);
    }
    measured
}

/// What one file holds: its non-test functions and the module files it declares.
struct FileScan {
    functions: Vec<Function>,
    /// Each `mod name;` as the file it names, with whether it is under `#[cfg(test)]`.
    children: Vec<(PathBuf, bool)>,
}

fn scan_file(path: &Path, in_test: bool) -> FileScan {
    let source = std::fs::read_to_string(path).unwrap();
    let tokens = tokenize(&source);
    let mut scanner = Scanner::new(path, &tokens, in_test);
    while scanner.at < tokens.len() {
        scanner.step();
    }
    FileScan { functions: scanner.functions, children: scanner.children }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Ident,
    Punct,
    /// A string literal; its text is the literal's content (used for `#[path = "..."]`).
    Str,
}

struct Token<'a> {
    kind: Kind,
    text: &'a str,
    line: usize,
}

/// Splits source into tokens, dropping comments, lifetimes and the content of character
/// literals; string literals become one `Str` token each.
fn tokenize(source: &str) -> Vec<Token<'_>> {
    let bytes = source.as_bytes();
    let mut tokens = Vec::new();
    let (mut at, mut line) = (0, 1);
    while at < bytes.len() {
        let start_line = line;
        let (next, kind) = lex_one(source, at, &mut line);
        if let Some((kind, from, to)) = kind {
            tokens.push(Token { kind, text: &source[from..to], line: start_line });
        }
        at = next;
    }
    tokens
}

type Lexed = Option<(Kind, usize, usize)>;

/// Lexes the token starting at byte `at`: returns where the next one starts and, unless it
/// was whitespace, a comment or a lifetime, its kind and byte range.
fn lex_one(source: &str, at: usize, line: &mut usize) -> (usize, Lexed) {
    let bytes = source.as_bytes();
    let rest = &source[at..];
    let c = bytes[at];
    if c == b'\n' {
        *line += 1;
        return (at + 1, None);
    }
    if c.is_ascii_whitespace() {
        return (at + 1, None);
    }
    if rest.starts_with("//") {
        let end = rest.find('\n').map_or(source.len(), |i| at + i);
        return (end, None);
    }
    if rest.starts_with("/*") {
        return (block_comment_end(source, at, line), None);
    }
    if let Some((content_from, content_to, end)) = string_literal(source, at) {
        *line += source[at..end].matches('\n').count();
        return (end, Some((Kind::Str, content_from, content_to)));
    }
    if c == b'\'' {
        return (char_or_lifetime_end(source, at), None);
    }
    if c == b'_' || c.is_ascii_alphanumeric() || !c.is_ascii() {
        let len = rest
            .find(|ch: char| !(ch == '_' || ch.is_alphanumeric()))
            .unwrap_or(rest.len())
            .max(rest.chars().next().unwrap().len_utf8());
        return (at + len, Some((Kind::Ident, at, at + len)));
    }
    let len = if ["->", "=>", "::"].iter().any(|p| rest.starts_with(p)) { 2 } else { 1 };
    (at + len, Some((Kind::Punct, at, at + len)))
}

/// The end of the (possibly nested) block comment starting at `at`.
fn block_comment_end(source: &str, at: usize, line: &mut usize) -> usize {
    let bytes = source.as_bytes();
    let (mut depth, mut i) = (0, at);
    while i < bytes.len() {
        if bytes[i..].starts_with(b"/*") {
            depth += 1;
            i += 2;
        } else if bytes[i..].starts_with(b"*/") {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            *line += usize::from(bytes[i] == b'\n');
            i += 1;
        }
    }
    i
}

/// A string literal (`"…"`, `b"…"`, `c"…"`, `r#"…"#`, `br"…"`) starting at `at`, as the
/// byte range of its content and where it ends; None when `at` does not start one.
fn string_literal(source: &str, at: usize) -> Option<(usize, usize, usize)> {
    let bytes = source.as_bytes();
    let preceded_by_ident =
        at > 0 && (bytes[at - 1] == b'_' || bytes[at - 1].is_ascii_alphanumeric());
    if preceded_by_ident && bytes[at] != b'"' {
        return None;
    }
    let mut i = at;
    if matches!(bytes[i], b'b' | b'c') {
        i += 1;
    }
    if bytes.get(i) == Some(&b'r') {
        let hashes = bytes[i + 1..].iter().take_while(|&&b| b == b'#').count();
        if bytes.get(i + 1 + hashes) != Some(&b'"') {
            return None;
        }
        let from = i + 2 + hashes;
        let closing = format!("\"{}", "#".repeat(hashes));
        let to = from + source[from..].find(&closing)?;
        return Some((from, to, to + closing.len()));
    }
    if bytes.get(i) != Some(&b'"') {
        return None;
    }
    let from = i + 1;
    let mut j = from;
    while j < bytes.len() && bytes[j] != b'"' {
        j += if bytes[j] == b'\\' { 2 } else { 1 };
    }
    Some((from, j, j + 1))
}

/// Past a character literal (`'x'`, `'\n'`, `'\u{1F600}'`) or a lifetime (`'a`) at `at`.
fn char_or_lifetime_end(source: &str, at: usize) -> usize {
    let bytes = source.as_bytes();
    if bytes.get(at + 1) == Some(&b'\\') {
        let close = source[at + 3..].find('\'').map_or(source.len(), |i| at + 3 + i);
        return close + 1;
    }
    let Some(ch) = source[at + 1..].chars().next() else { return at + 1 };
    let after = at + 1 + ch.len_utf8();
    if bytes.get(after) == Some(&b'\'') {
        return after + 1;
    }
    // A lifetime or a label: skip its name.
    let name = source[at + 1..].find(|c: char| !(c == '_' || c.is_alphanumeric()));
    at + 1 + name.unwrap_or(source.len() - at - 1)
}

/// What an open brace belongs to.
#[derive(Clone)]
enum Frame {
    /// An `impl` or `trait` block, named by its type (or trait).
    Owner(String),
    /// A function body: where it started and its name.
    Function {
        name: String,
        first_line: usize,
    },
    Other,
}

/// An item whose body is the next `{`: the frame it opens and whether it is test code.
struct Pending {
    frame: Frame,
    test: bool,
    /// The depth of parentheses and brackets when it was seen: its body's brace is at this
    /// depth (a brace inside parentheses is a pattern or an expression, not the body).
    nesting: usize,
    /// How many braces were open: a pending item cannot outlive the block it is in.
    depth: usize,
}

struct Scanner<'a, 't> {
    path: &'a Path,
    tokens: &'t [Token<'t>],
    at: usize,
    /// Open braces, each with its frame and whether it is test code.
    stack: Vec<(Frame, bool)>,
    file_is_test: bool,
    nesting: usize,
    attributes: Vec<String>,
    pending: Option<Pending>,
    functions: Vec<Function>,
    children: Vec<(PathBuf, bool)>,
}

impl<'a, 't> Scanner<'a, 't> {
    fn new(path: &'a Path, tokens: &'t [Token<'t>], file_is_test: bool) -> Self {
        Scanner {
            path,
            tokens,
            at: 0,
            stack: Vec::new(),
            file_is_test,
            nesting: 0,
            attributes: Vec::new(),
            pending: None,
            functions: Vec::new(),
            children: Vec::new(),
        }
    }

    fn text(&self, i: usize) -> &'t str {
        self.tokens.get(i).map_or("", |t| t.text)
    }

    fn is_ident(&self, i: usize) -> bool {
        self.tokens.get(i).is_some_and(|t| t.kind == Kind::Ident)
    }

    fn in_test(&self) -> bool {
        self.file_is_test || self.stack.last().is_some_and(|(_, test)| *test)
    }

    fn attributes_say_test(&self) -> bool {
        self.attributes.iter().any(|a| a == "cfg(test)" || a.starts_with("cfg(all(test,"))
    }

    /// Handles the token at `self.at` and moves past it.
    fn step(&mut self) {
        let token = &self.tokens[self.at];
        match (token.kind, token.text) {
            (Kind::Punct, "#") => return self.attribute(),
            (Kind::Punct, "(" | "[") => self.nesting += 1,
            (Kind::Punct, ")" | "]") => self.close_nesting(),
            (Kind::Punct, "{") => self.open_brace(),
            (Kind::Punct, "}") => self.close_brace(token.line),
            (Kind::Punct, ";") => self.semicolon(),
            (Kind::Ident, "fn") if self.is_ident(self.at + 1) => {
                let name = self.text(self.at + 1).to_owned();
                self.expect_body(Frame::Function { name, first_line: token.line });
            }
            (Kind::Ident, "impl") if self.starts_item() => {
                let owner = self.impl_owner();
                self.expect_body(Frame::Owner(owner));
            }
            (Kind::Ident, "trait") if self.is_ident(self.at + 1) => {
                self.expect_body(Frame::Owner(self.text(self.at + 1).to_owned()));
            }
            (Kind::Ident, "mod") if self.is_ident(self.at + 1) => self.expect_body(Frame::Other),
            _ => {}
        }
        self.at += 1;
    }

    /// Whether the token at `self.at` begins an item (so `impl` there opens an impl block,
    /// not an `impl Trait` type).
    fn starts_item(&self) -> bool {
        self.at == 0 || matches!(self.text(self.at - 1), "{" | "}" | ";" | "]" | "unsafe")
    }

    fn expect_body(&mut self, frame: Frame) {
        if self.pending.is_none() {
            let test = self.attributes_say_test();
            let depth = self.stack.len();
            self.pending = Some(Pending { frame, test, nesting: self.nesting, depth });
        }
    }

    /// `#[...]` or `#![...]`: records an outer attribute's text, without spaces.
    fn attribute(&mut self) {
        let mut i = self.at + 1;
        let inner = self.text(i) == "!";
        i += usize::from(inner);
        if self.text(i) != "[" {
            self.at += 1;
            return;
        }
        let (mut depth, mut text) = (0, String::new());
        while i < self.tokens.len() {
            match self.text(i) {
                "[" => depth += 1,
                "]" => depth -= 1,
                _ => {}
            }
            if depth == 0 {
                break;
            }
            if i > self.at + 1 + usize::from(inner) {
                let token = &self.tokens[i];
                match token.kind {
                    Kind::Str => text.push_str(&format!("{:?}", token.text)),
                    _ => text.push_str(token.text),
                }
            }
            i += 1;
        }
        if !inner {
            self.attributes.push(text);
        }
        self.at = i + 1;
    }

    fn close_nesting(&mut self) {
        self.nesting = self.nesting.saturating_sub(1);
        if self.pending.as_ref().is_some_and(|p| p.nesting > self.nesting) {
            self.pending = None;
        }
    }

    fn open_brace(&mut self) {
        let opens_pending = self.pending.as_ref().is_some_and(|p| p.nesting == self.nesting);
        let (frame, test) = match self.pending.take() {
            Some(p) if opens_pending => (p.frame, self.in_test() || p.test),
            other => {
                self.pending = other;
                (Frame::Other, self.in_test())
            }
        };
        self.attributes.clear();
        self.stack.push((frame, test));
    }

    fn close_brace(&mut self, line: usize) {
        self.attributes.clear();
        let Some((frame, test)) = self.stack.pop() else { return };
        if self.pending.as_ref().is_some_and(|p| p.depth > self.stack.len()) {
            self.pending = None;
        }
        if let (Frame::Function { name, first_line }, false) = (frame, test) {
            let owner = self.stack.iter().rev().find_map(|(f, _)| match f {
                Frame::Owner(owner) => Some(owner.clone()),
                _ => None,
            });
            let name = owner.map_or(name.clone(), |o| format!("{o}::{name}"));
            self.functions.push(Function { name, lines: line - first_line + 1 });
        }
    }

    /// `;` ends an item without a body: a trait method's declaration, or `mod name;`.
    fn semicolon(&mut self) {
        if self.pending.as_ref().is_some_and(|p| p.nesting == self.nesting) {
            let pending = self.pending.take().unwrap();
            if matches!(pending.frame, Frame::Other) {
                self.declare_module(self.in_test() || pending.test);
            }
        }
        self.attributes.clear();
    }

    /// `mod name;` just before `self.at`: the file it names, from `#[path]` or the name.
    fn declare_module(&mut self, test: bool) {
        let name = self.text(self.at - 1);
        let dir = self.path.parent().unwrap();
        let stem = self.path.file_stem().unwrap().to_string_lossy();
        let path_attribute =
            self.attributes.iter().find_map(|a| a.strip_prefix("path=\"")?.strip_suffix('"'));
        let file = if let Some(relative) = path_attribute {
            dir.join(relative)
        } else {
            let module_dir = if ["mod", "lib", "main"].contains(&stem.as_ref()) {
                dir
            } else {
                &dir.join(&*stem)
            };
            let flat = module_dir.join(format!("{name}.rs"));
            if flat.exists() {
                flat
            } else {
                module_dir.join(name).join("mod.rs")
            }
        };
        self.children.push((file, test));
    }

    /// The type an `impl` block at `self.at` is for: the last path segment before any
    /// generic arguments, after `for` when it implements a trait.
    fn impl_owner(&self) -> String {
        let mut angle = 0usize;
        let mut segments: Vec<&str> = Vec::new();
        for i in self.at + 1..self.tokens.len() {
            let text = self.text(i);
            match text {
                "<" => angle += 1,
                ">" => angle = angle.saturating_sub(1),
                "{" | "where" if angle == 0 => break,
                "for" if angle == 0 => segments.clear(),
                _ if angle == 0 && self.is_ident(i) && !["dyn", "mut"].contains(&text) => {
                    segments.push(text)
                }
                _ => {}
            }
        }
        segments.last().copied().unwrap_or("?").to_owned()
    }
}
