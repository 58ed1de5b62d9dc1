//! COMMAND DOCS's interface data: each command's argument tree (as Redis 7 shows it under
//! `arguments`), a subcommand's `since`, and the doc flags of deprecated and system
//! commands. The per-command data (`docs_data.rs`) is generated from the reference server
//! by `scripts/gen_command_docs.py` in a compact notation of our own, read here when a
//! client asks (COMMAND DOCS is rare; the notation keeps the binary small: one string per
//! command instead of a static tree of structs and their relocations).
//!
//! The notation: arguments separated by spaces; each is `name:T`, T its type (`s` string,
//! `i` integer, `d` double, `k` key, `p` pattern, `t` unix-time, `T` pure-token, `o` oneof,
//! `b` block), then `#N` (key_spec_index), `?` `*` `+` (optional, multiple,
//! multiple_token), `@V` (since), `!V` (deprecated_since), and last the token: `^` for
//! the name in capitals, `=TOKEN` for any other (up to the next space or parenthesis). A
//! oneof's or block's own arguments follow it in parentheses. A name may hold `:` (the
//! type follows the last one), a token anything but spaces and parentheses.

use super::docs_data::DOCS;
use crate::Reply;

/// `doc_flags`: the command is deprecated.
pub(super) const DEPRECATED: u8 = 1 << 0;
/// `doc_flags`: a system command, not meant for applications.
pub(super) const SYSCMD: u8 = 1 << 1;

/// One command's (or subcommand's) COMMAND DOCS data beyond the command table.
#[derive(Debug, PartialEq, Eq)]
pub struct Docs {
    pub name: &'static str,
    /// A subcommand's version (a command's is in its [`super::CommandSpec`]); else empty.
    pub since: &'static str,
    /// [`DEPRECATED`], [`SYSCMD`].
    pub flags: u8,
    /// Empty unless deprecated.
    pub deprecated_since: &'static str,
    /// The argument tree in the notation above; empty for none.
    pub args: &'static str,
}

/// The data of a command or subcommand by its full lowercase name (`config|get`).
pub fn command_docs(name: &str) -> Option<&'static Docs> {
    DOCS.binary_search_by(|docs| docs.name.cmp(name)).ok().map(|at| &DOCS[at])
}

impl Docs {
    /// How many of the optional fields (`doc_flags`, `deprecated_since`, `arguments`)
    /// [`Docs::write_fields`] writes.
    pub fn field_count(&self) -> usize {
        usize::from(self.flags != 0)
            + usize::from(!self.deprecated_since.is_empty())
            + usize::from(!self.args.is_empty())
    }

    /// `doc_flags`, `deprecated_since` and `arguments`, each only when it has something,
    /// in Redis's order (after `complexity`, before `subcommands`).
    pub fn write_fields(&self, reply: &mut Reply<'_>) {
        if self.flags != 0 {
            reply.bulk(b"doc_flags");
            let names = [(DEPRECATED, "deprecated"), (SYSCMD, "syscmd")];
            let set: Vec<&str> =
                names.iter().filter(|(bit, _)| self.flags & bit != 0).map(|(_, n)| *n).collect();
            reply.set(set.len());
            set.iter().for_each(|name| reply.simple(name.as_bytes()));
        }
        if !self.deprecated_since.is_empty() {
            reply.bulk(b"deprecated_since");
            reply.bulk(self.deprecated_since.as_bytes());
        }
        if !self.args.is_empty() {
            reply.bulk(b"arguments");
            write_args(reply, self.args);
        }
    }
}

/// The arguments of one level of a tree: an array of maps.
fn write_args(reply: &mut Reply<'_>, level: &str) {
    reply.array(Level(level).count());
    for (head, children) in Level(level) {
        write_arg(reply, &Head::parse(head), children);
    }
}

/// One argument: `name`, `type`, then the fields it has, in Redis's order.
fn write_arg(reply: &mut Reply<'_>, head: &Head<'_>, children: &str) {
    let nested = matches!(head.kind, "oneof" | "block");
    let fields = 2
        + usize::from(head.key_spec_index.is_some())
        + usize::from(head.token.is_some())
        + usize::from(!head.since.is_empty())
        + usize::from(!head.deprecated_since.is_empty())
        + usize::from(!head.flags.is_empty())
        + usize::from(nested);
    reply.map(fields);
    reply.bulk(b"name");
    reply.bulk(head.name.as_bytes());
    reply.bulk(b"type");
    reply.bulk(head.kind.as_bytes());
    if let Some(index) = head.key_spec_index {
        reply.bulk(b"key_spec_index");
        reply.integer(index);
    }
    if let Some(token) = &head.token {
        reply.bulk(b"token");
        reply.bulk(token);
    }
    for (field, value) in [("since", head.since), ("deprecated_since", head.deprecated_since)] {
        if !value.is_empty() {
            reply.bulk(field.as_bytes());
            reply.bulk(value.as_bytes());
        }
    }
    if !head.flags.is_empty() {
        reply.bulk(b"flags");
        reply.set(head.flags.len());
        head.flags.iter().for_each(|flag| reply.simple(flag.as_bytes()));
    }
    if nested {
        reply.bulk(b"arguments");
        write_args(reply, children);
    }
}

/// The arguments of one level: each its head (`name:T...`) and the text of its own
/// arguments (inside its parentheses; empty for none).
struct Level<'a>(&'a str);

impl<'a> Iterator for Level<'a> {
    type Item = (&'a str, &'a str);

    fn next(&mut self) -> Option<Self::Item> {
        let text = self.0.trim_start_matches(' ');
        if text.is_empty() {
            return None;
        }
        let head_end = text.find([' ', '(']).unwrap_or(text.len());
        let (head, rest) = text.split_at(head_end);
        let Some(inner) = rest.strip_prefix('(') else {
            self.0 = rest;
            return Some((head, ""));
        };
        // The matching parenthesis; an unmatched one (never in the generated data) ends
        // the level with the rest as children.
        let mut depth = 1usize;
        let close = inner.char_indices().find_map(|(at, c)| {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                _ => {}
            }
            (depth == 0).then_some(at)
        });
        let close = close.unwrap_or(inner.len());
        self.0 = inner.get(close + 1..).unwrap_or("");
        Some((head, &inner[..close]))
    }
}

/// One argument's own fields, read from its head.
#[derive(Debug, PartialEq)]
struct Head<'a> {
    name: &'a str,
    kind: &'static str,
    key_spec_index: Option<i64>,
    flags: Vec<&'static str>,
    since: &'a str,
    deprecated_since: &'a str,
    token: Option<Vec<u8>>,
}

impl<'a> Head<'a> {
    fn parse(head: &'a str) -> Self {
        // The token comes last and may hold any mark; names and versions hold neither.
        let token_at = head.find(['^', '=']).unwrap_or(head.len());
        let (before, token) = head.split_at(token_at);
        let (name, attrs) = before.rsplit_once(':').unwrap_or((before, ""));
        let token = match token.as_bytes().split_first() {
            Some((b'^', _)) => Some(name.to_ascii_uppercase().into_bytes()),
            Some((_, token)) => Some(token.to_vec()),
            None => None,
        };
        let mut parsed = Head {
            name,
            kind: kind_name(attrs.bytes().next()),
            key_spec_index: None,
            flags: Vec::new(),
            since: "",
            deprecated_since: "",
            token,
        };
        let mut rest = attrs.get(1..).unwrap_or("");
        while let Some((mark, after)) = rest.split_at_checked(1) {
            let value_end = after.find(['#', '?', '*', '+', '@', '!']).unwrap_or(after.len());
            let (value, next) = after.split_at(value_end);
            match mark {
                "#" => parsed.key_spec_index = value.parse().ok(),
                "?" => parsed.flags.push("optional"),
                "*" => parsed.flags.push("multiple"),
                "+" => parsed.flags.push("multiple_token"),
                "@" => parsed.since = value,
                "!" => parsed.deprecated_since = value,
                _ => {}
            }
            rest = next;
        }
        parsed
    }
}

/// Redis's name of a type letter.
fn kind_name(letter: Option<u8>) -> &'static str {
    match letter {
        Some(b's') => "string",
        Some(b'i') => "integer",
        Some(b'd') => "double",
        Some(b'k') => "key",
        Some(b'p') => "pattern",
        Some(b't') => "unix-time",
        Some(b'T') => "pure-token",
        Some(b'o') => "oneof",
        Some(b'b') => "block",
        _ => "string",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Goal: every generated tree reads back whole: known types, balanced parentheses,
    /// nested arguments exactly under a oneof or block, key-spec indexes and versions
    /// where marked.
    #[test]
    fn every_tree_reads_back() {
        fn check(level: &str, name: &str) {
            for (head, children) in Level(level) {
                let parsed = Head::parse(head);
                assert!(!parsed.name.is_empty(), "{name}: {head}");
                let letter = head.rsplit_once(':').map(|(_, a)| a.as_bytes()[0]);
                assert!("sidkptTob".as_bytes().contains(&letter.unwrap()), "{name}: {head}");
                let nested = matches!(parsed.kind, "oneof" | "block");
                assert_eq!(nested, !children.is_empty(), "{name}: {head}");
                assert_eq!(head.contains('#'), parsed.key_spec_index.is_some(), "{name}");
                for version in [parsed.since, parsed.deprecated_since] {
                    assert!(version.bytes().all(|b| b.is_ascii_digit() || b == b'.'), "{name}");
                }
                check(children, name);
            }
        }
        assert!(DOCS.windows(2).all(|pair| pair[0].name < pair[1].name), "sorted");
        for docs in DOCS {
            assert_eq!(docs.args.matches('(').count(), docs.args.matches(')').count());
            check(docs.args, docs.name);
        }
    }

    /// Goal: every command and subcommand has its generated entry (a new command without
    /// one fails here until `scripts/gen_command_docs.py` is run).
    #[test]
    fn every_command_has_docs() {
        for spec in super::super::all_commands() {
            assert!(command_docs(spec.name).is_some(), "{}", spec.name);
            if let super::super::Run::Subcommands { table, .. } = &spec.run {
                for sub in table.iter() {
                    assert!(command_docs(sub.name).is_some_and(|d| !d.since.is_empty()));
                }
            }
        }
        assert!(command_docs("nosuch").is_none());
    }

    #[test]
    fn heads() {
        let head = Head::parse("ip:port:s?@6.2.0=LADDR");
        assert_eq!((head.name, head.kind, head.since), ("ip:port", "string", "6.2.0"));
        assert_eq!((head.flags, head.token), (vec!["optional"], Some(b"LADDR".to_vec())));
        let head = Head::parse("auto_id:T=*");
        assert_eq!((head.kind, head.token), ("pure-token", Some(b"*".to_vec())));
        let head = Head::parse("empty_string:T=");
        assert_eq!(head.token, Some(Vec::new()));
        let head = Head::parse("pattern:p#1?*+^");
        assert_eq!(head.key_spec_index, Some(1));
        assert_eq!(head.flags, ["optional", "multiple", "multiple_token"]);
        assert_eq!(head.token, Some(b"PATTERN".to_vec()));
        let levels: Vec<_> = Level("a:o(b:T^ c:b(d:s)) e:s").collect();
        assert_eq!(levels, [("a:o", "b:T^ c:b(d:s)"), ("e:s", "")]);
    }
}
