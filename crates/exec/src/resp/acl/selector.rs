//! One ACL selector: the commands, key patterns and channels a set of rules allows.
//! A user has its root selector (the rules given outside parentheses) and any number of
//! further selectors (`(+get ~cache:*)`, Redis 7.0): a command runs if one selector allows
//! all of it: the command, every key and every channel (see [`User::check`]).
//!
//! Commands are a bitmap over the catalog's entries, kept together with the rules that
//! made it, as Redis 7.0 keeps them: `+@all` or `-@all`, then each later rule once (a rule
//! naming the same command or category again replaces the earlier one) and only if it
//! changed something, so `+get +get +set -get` reads back as `-@all +set`.
//!
//! [`User::check`]: super::User::check

use proto_resp::commands::KeyFlags;

use super::{
    catalog::{catalog, category},
    first_args::{self, FirstArgs},
    user::{RuleError, SYNTAX, UNKNOWN_COMMAND},
    Denied,
};

/// A key pattern and what it allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KeyPattern {
    pub(crate) pattern: Vec<u8>,
    pub(crate) read: bool,
    pub(crate) write: bool,
}

/// A rule that allows or forbids commands.
#[derive(Debug, Clone, PartialEq, Eq)]
struct CommandRule {
    /// As given, lowercase: `+get`, `-@write`, `+config|get`.
    text: String,
    /// The catalog entries it names, as a bitmap.
    mask: Vec<u64>,
}

pub(super) const AFTER_ALLKEYS: RuleError = "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns";
const AFTER_ALLCHANNELS: RuleError = "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels";

/// Why one selector refused a command, ranked as Redis 7.0 ranks the reasons when no
/// selector allows it: the highest rank wins, then the latest argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    /// 1 the command, 2 a key, 4 a channel (Redis's `ACL_DENIED_*`).
    pub(crate) rank: u8,
    /// The argument refused (0 for the command).
    pub(crate) at: usize,
    pub(crate) denied: Denied,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Selector {
    /// Whether the rules start from `+@all` (commands added later are allowed too).
    all_commands: bool,
    /// The rules after `+@all` / `-@all` that still matter, in order.
    command_rules: Vec<CommandRule>,
    allowed: Vec<u64>,
    /// First args of commands not otherwise allowed (`+select|0`).
    first_args: FirstArgs,
    pub(crate) keys: Vec<KeyPattern>,
    /// Channel patterns (`*`: every channel).
    pub(crate) channels: Vec<Vec<u8>>,
}

impl Selector {
    /// No commands, no keys, no channels.
    pub(crate) fn new() -> Selector {
        Selector {
            all_commands: false,
            command_rules: Vec::new(),
            allowed: vec![0; catalog().entries.len().div_ceil(64)],
            first_args: FirstArgs::default(),
            keys: Vec::new(),
            channels: Vec::new(),
        }
    }

    /// A selector from `(rules...)` as one modifier: the rules between the parentheses,
    /// split at spaces (empty ones skipped, as Redis splits them).
    pub(crate) fn from_parenthesised(text: &[u8]) -> Result<Selector, RuleError> {
        let inner = text.strip_prefix(b"(").and_then(|t| t.strip_suffix(b")")).ok_or(SYNTAX)?;
        let mut selector = Selector::new();
        for rule in inner.split(|&b| b == b' ').filter(|rule| !rule.is_empty()) {
            selector.apply(rule)?;
        }
        Ok(selector)
    }

    /// Applies one rule about commands, keys or channels; anything else is a syntax error.
    pub(crate) fn apply(&mut self, rule: &[u8]) -> Result<(), RuleError> {
        let text = std::str::from_utf8(rule).map_err(|_| SYNTAX)?;
        let lower = text.to_ascii_lowercase();
        match lower.as_str() {
            "allkeys" => self.set_all_keys(),
            "resetkeys" => self.keys.clear(),
            "allchannels" => self.channels = vec![b"*".to_vec()],
            "resetchannels" => self.channels.clear(),
            "allcommands" => self.set_commands_base(true),
            "nocommands" => self.set_commands_base(false),
            _ => match text.split_at_checked(1).ok_or(SYNTAX)? {
                ("~", rest) => self.add_key(rest.as_bytes(), true, true)?,
                ("%", rest) => self.add_key_with_permissions(rest)?,
                ("&", rest) => self.add_channel(rest.as_bytes())?,
                ("+" | "-", _) => self.apply_command_rule(text, &lower)?,
                _ => return Err(SYNTAX),
            },
        }
        Ok(())
    }

    /// Whether this selector allows the whole command: `entry` (its catalog entry) with
    /// `args` (the command line), each key as its key specs ask, each channel.
    pub(crate) fn check(&self, entry: usize, args: &[&[u8]]) -> Result<(), Refusal> {
        let first_arg_allowed = || args.get(1).is_some_and(|arg| self.allows_first_arg(entry, arg));
        let catalog = catalog();
        if !self.allows_command(entry) && !first_arg_allowed() {
            let denied = Denied::Command(catalog.entries[entry].name);
            return Err(Refusal { rank: 1, at: 0, denied });
        }
        let Some(meta) = catalog.entries[entry].meta else {
            return Ok(());
        };
        for key in meta.keys(args) {
            let read = key.flags & KeyFlags::ACCESS != 0;
            let write = key.flags & (KeyFlags::INSERT | KeyFlags::DELETE | KeyFlags::UPDATE) != 0;
            if !self.allows_key(args[key.at], read, write) {
                let denied = Denied::Key(args[key.at].to_vec());
                return Err(Refusal { rank: 2, at: key.at, denied });
            }
        }
        self.check_channels(catalog.entries[entry].name, args)
    }

    /// The channels a pub/sub command names, checked as Redis 7.0 checks them: a channel
    /// against each allowed pattern by glob, a PSUBSCRIBE pattern only literally
    /// (`&news.*` allows `PSUBSCRIBE news.*`, not `PSUBSCRIBE news.x` nor `PSUBSCRIBE *`).
    fn check_channels(&self, command: &str, args: &[&[u8]]) -> Result<(), Refusal> {
        let (last, literal) = match command {
            "subscribe" | "ssubscribe" => (args.len(), false),
            "psubscribe" => (args.len(), true),
            "publish" | "spublish" => (args.len().min(2), false),
            _ => return Ok(()),
        };
        match (1..last).find(|&at| !self.allows_channel(args[at], literal)) {
            Some(at) => Err(Refusal { rank: 4, at, denied: Denied::Channel(args[at].to_vec()) }),
            None => Ok(()),
        }
    }

    /// Whether it allows everything on every key and channel.
    pub(crate) fn is_unrestricted(&self) -> bool {
        self.all_commands
            && self.command_rules.is_empty()
            && self.keys.iter().any(|k| k.pattern == b"*" && k.read && k.write)
            && self.channels.iter().any(|c| c == b"*")
    }

    /// Whether it may read any key at all (a `~*` or `%R~*` pattern): SORT's BY and GET
    /// patterns, which name keys no check saw, need it (Redis's unrestricted key access).
    pub(crate) fn reads_every_key(&self) -> bool {
        self.keys.iter().any(|k| k.pattern == b"*" && k.read)
    }

    /// Whether `name` is allowed: a channel matching one of the patterns (`literal`: a
    /// PSUBSCRIBE pattern, which must be one of them as written).
    pub(crate) fn allows_channel(&self, name: &[u8], literal: bool) -> bool {
        self.channels.iter().any(|allowed| {
            allowed == b"*" || allowed == name || (!literal && super::key_matches(allowed, name))
        })
    }

    pub(crate) fn allows_command(&self, entry: usize) -> bool {
        self.allowed[entry / 64] & (1 << (entry % 64)) != 0
    }

    /// Whether the command of `entry` is allowed with `first_arg` by a first-arg rule.
    pub(crate) fn allows_first_arg(&self, entry: usize, first_arg: &[u8]) -> bool {
        self.first_args.allows(entry, first_arg)
    }

    /// Whether `key` is allowed for reading and, if `write`, for writing.
    /// Whether one of the user's patterns matches `key` and grants every permission asked
    /// (as Redis checks a key: `%R~a* %W~a*` does not let a command read and write `a1`).
    pub(crate) fn allows_key(&self, key: &[u8], read: bool, write: bool) -> bool {
        self.keys.iter().any(|k| {
            (k.read || !read) && (k.write || !write) && super::key_matches(&k.pattern, key)
        })
    }

    fn set_all_keys(&mut self) {
        self.keys = vec![KeyPattern { pattern: b"*".to_vec(), read: true, write: true }];
    }

    /// `%R~p`, `%W~p`, `%RW~p`.
    fn add_key_with_permissions(&mut self, rest: &str) -> Result<(), RuleError> {
        let (permissions, pattern) = rest.split_once('~').ok_or(SYNTAX)?;
        let (mut read, mut write) = (false, false);
        for letter in permissions.chars() {
            match letter.to_ascii_uppercase() {
                'R' => read = true,
                'W' => write = true,
                _ => return Err(SYNTAX),
            }
        }
        if !read && !write {
            return Err(SYNTAX);
        }
        self.add_key(pattern.as_bytes(), read, write)
    }

    fn add_key(&mut self, pattern: &[u8], read: bool, write: bool) -> Result<(), RuleError> {
        if self.keys.iter().any(|k| k.pattern == b"*" && k.read && k.write) {
            return Err(AFTER_ALLKEYS);
        }
        if pattern == b"*" && read && write {
            self.set_all_keys();
            return Ok(());
        }
        // A pattern given again gains the new permissions (`%R~k %W~k` is `~k`), as in Redis.
        match self.keys.iter_mut().find(|k| k.pattern == pattern) {
            Some(known) => {
                known.read |= read;
                known.write |= write;
            }
            None => self.keys.push(KeyPattern { pattern: pattern.to_vec(), read, write }),
        }
        Ok(())
    }

    fn add_channel(&mut self, pattern: &[u8]) -> Result<(), RuleError> {
        if self.channels.iter().any(|c| c == b"*") {
            return Err(AFTER_ALLCHANNELS);
        }
        if pattern == b"*" {
            self.channels = vec![b"*".to_vec()];
        } else if !self.channels.iter().any(|c| c == pattern) {
            self.channels.push(pattern.to_vec());
        }
        Ok(())
    }

    fn set_commands_base(&mut self, all: bool) {
        self.all_commands = all;
        self.command_rules.clear();
        self.first_args.clear();
        self.allowed = Self::bits_of(all, &[]);
    }

    /// `+name`, `-name`, `+@category`, `-@category`, `+container|sub`, `+name|first-arg`
    /// (`text` as given, `rule` lowercase).
    fn apply_command_rule(&mut self, text: &str, rule: &str) -> Result<(), RuleError> {
        if let "+@all" | "-@all" = rule {
            self.set_commands_base(rule == "+@all");
            return Ok(());
        }
        let Some(entries) = entries_of(&rule[1..]) else {
            if !rule.starts_with('+') {
                return Err(UNKNOWN_COMMAND);
            }
            let (entry, arg) = first_args::parse(&text[1..])?;
            return if self.allows_command(entry) {
                Ok(())
            } else {
                self.first_args.add(entry, arg)
            };
        };
        let mask = mask_of(&entries);
        // Rules this one overrides entirely are dropped (`+memory|doctor +memory` reads
        // back as `+memory`), and so are the first args of the commands it names.
        self.command_rules.retain(|earlier| !is_subset(&earlier.mask, &mask));
        self.first_args.forget(&mask);
        let before = Self::bits_of(self.all_commands, &self.command_rules);
        self.command_rules.push(CommandRule { text: rule.to_owned(), mask });
        let after = Self::bits_of(self.all_commands, &self.command_rules);
        if after == before {
            self.command_rules.pop(); // changes nothing: not kept
        }
        self.allowed = after;
        Ok(())
    }

    /// The bitmap that `+@all` or `-@all` then `rules` make.
    fn bits_of(all: bool, rules: &[CommandRule]) -> Vec<u64> {
        let count = catalog().entries.len();
        let mut bits = vec![if all { u64::MAX } else { 0 }; count.div_ceil(64)];
        for rule in rules {
            let allow = rule.text.starts_with('+');
            for (word, mask) in bits.iter_mut().zip(&rule.mask) {
                if allow {
                    *word |= mask;
                } else {
                    *word &= !mask;
                }
            }
        }
        bits
    }

    /// `ACL LIST`'s words for this selector: its keys, channels and commands.
    pub(crate) fn describe(&self) -> String {
        let mut parts = Vec::new();
        if !self.keys.is_empty() {
            parts.push(self.describe_keys());
        }
        parts.push(self.describe_channels());
        parts.push(self.describe_commands());
        parts.join(" ")
    }

    pub(crate) fn describe_keys(&self) -> String {
        let pattern = |k: &KeyPattern| {
            let prefix = match (k.read, k.write) {
                (true, true) => "~",
                (true, false) => "%R~",
                _ => "%W~",
            };
            format!("{prefix}{}", String::from_utf8_lossy(&k.pattern))
        };
        self.keys.iter().map(pattern).collect::<Vec<_>>().join(" ")
    }

    /// `&*`, or `resetchannels` and the patterns (ACL LIST); GETUSER lists only patterns.
    fn describe_channels(&self) -> String {
        if self.channels.iter().any(|c| c == b"*") {
            return "&*".into();
        }
        let mut parts = vec!["resetchannels".to_owned()];
        parts.extend(self.channels.iter().map(|c| format!("&{}", String::from_utf8_lossy(c))));
        parts.join(" ")
    }

    pub(crate) fn channel_patterns(&self) -> String {
        let each = self.channels.iter().map(|c| format!("&{}", String::from_utf8_lossy(c)));
        each.collect::<Vec<_>>().join(" ")
    }

    pub(crate) fn describe_commands(&self) -> String {
        let mut parts = vec![if self.all_commands { "+@all" } else { "-@all" }.to_owned()];
        let mut listed = Vec::new();
        for rule in &self.command_rules {
            parts.push(rule.text.clone());
            // A command's first args follow the rule that names it, as Redis lists them.
            if let Some(entry) = catalog().find(&rule.text[1..]) {
                parts.extend(self.first_args.rules_of(entry));
                listed.push(entry);
            }
        }
        for entry in self.first_args.commands().filter(|entry| !listed.contains(entry)) {
            parts.extend(self.first_args.rules_of(entry));
        }
        parts.join(" ")
    }
}

/// The catalog entries a rule's name covers: a category's commands, a command (a
/// container with its subcommands), or one subcommand.
fn entries_of(name: &str) -> Option<Vec<usize>> {
    let catalog = catalog();
    if let Some(category_name) = name.strip_prefix('@') {
        let bit = category(category_name)?;
        return Some(catalog.in_category(bit).collect());
    }
    let at = catalog.find(name)?;
    let mut entries = vec![at];
    entries.extend(catalog.entries[at].subcommands.clone());
    Some(entries)
}

/// A bitmap over the catalog with `entries` set.
fn mask_of(entries: &[usize]) -> Vec<u64> {
    let mut mask = vec![0u64; catalog().entries.len().div_ceil(64)];
    for entry in entries {
        mask[entry / 64] |= 1 << (entry % 64);
    }
    mask
}

/// Whether every bit of `part` is in `whole`.
fn is_subset(part: &[u64], whole: &[u64]) -> bool {
    part.iter().zip(whole).all(|(part, whole)| part & !whole == 0)
}
