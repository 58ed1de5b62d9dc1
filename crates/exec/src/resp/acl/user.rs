//! One ACL user: its flags, passwords, commands, key patterns and channels, changed by
//! `ACL SETUSER` rules and described back as `ACL LIST` prints them.
//!
//! Commands are a bitmap over the catalog's entries, kept together with the rules that
//! made it, as Redis 7.0 keeps them: `+@all` or `-@all`, then each later rule once (a rule
//! naming the same command or category again replaces the earlier one) and only if it
//! changed something, so `+get +get +set -get` reads back as `-@all +set`.

use sha2::{Digest, Sha256};

use super::{
    catalog::{catalog, category},
    first_args::{self, FirstArgs},
};

/// A key pattern and what it allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KeyPattern {
    pub(crate) pattern: Vec<u8>,
    pub(crate) read: bool,
    pub(crate) write: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    pub(crate) enabled: bool,
    pub(crate) nopass: bool,
    /// SHA-256 of each password.
    pub(crate) passwords: Vec<[u8; 32]>,
    /// `sanitize-payload` (true) or `skip-sanitize-payload` (false) if set.
    pub(crate) sanitize: Option<bool>,
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

/// A rule that allows or forbids commands.
#[derive(Debug, Clone, PartialEq, Eq)]
struct CommandRule {
    /// As given, lowercase: `+get`, `-@write`, `+config|get`.
    text: String,
    /// The catalog entries it names, as a bitmap.
    mask: Vec<u64>,
}

/// Why a rule was refused: the text after `Error in ACL SETUSER modifier '...': `.
pub(crate) type RuleError = &'static str;

pub(super) const SYNTAX: RuleError = "Syntax error";
pub(super) const UNKNOWN_COMMAND: RuleError = "Unknown command or category name in ACL";
const BAD_HASH: RuleError =
    "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters";
const NO_SUCH_PASSWORD: RuleError =
    "The password you are trying to remove from the user does not exist";
const AFTER_ALLKEYS: RuleError = "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns";
const AFTER_ALLCHANNELS: RuleError = "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels";
const SELECTORS: RuleError = "Selectors are not supported";

impl User {
    /// A user as `ACL SETUSER name` with no rules makes it: off, no password, no commands,
    /// no keys, no channels.
    pub(crate) fn new() -> User {
        User {
            enabled: false,
            nopass: false,
            passwords: Vec::new(),
            sanitize: None,
            all_commands: false,
            command_rules: Vec::new(),
            allowed: vec![0; catalog().entries.len().div_ceil(64)],
            first_args: FirstArgs::default(),
            keys: Vec::new(),
            channels: Vec::new(),
        }
    }

    /// The `default` user as Redis starts it: on, nopass, every key, channel and command.
    pub(crate) fn unrestricted() -> User {
        let mut user = User::new();
        for rule in ["on", "nopass", "~*", "&*", "+@all"] {
            user.apply(rule.as_bytes()).expect("a valid rule");
        }
        user
    }

    /// Whether it may run everything on every key (checks can be skipped).
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

    pub(crate) fn password_matches(&self, password: &[u8]) -> bool {
        if self.nopass {
            return true;
        }
        let hash = sha256(password);
        // Compare every stored hash in full: the time does not say which one matched.
        self.passwords
            .iter()
            .fold(false, |found, stored| found | crate::auth::equal_in_constant_time(stored, &hash))
    }

    /// Applies one `ACL SETUSER` rule.
    pub(crate) fn apply(&mut self, rule: &[u8]) -> Result<(), RuleError> {
        let text = std::str::from_utf8(rule).map_err(|_| SYNTAX)?;
        let lower = text.to_ascii_lowercase();
        match lower.as_str() {
            "on" => self.enabled = true,
            "off" => self.enabled = false,
            "nopass" => {
                self.nopass = true;
                self.passwords.clear();
            }
            "resetpass" => {
                self.nopass = false;
                self.passwords.clear();
            }
            "allkeys" => self.set_all_keys(),
            "resetkeys" => self.keys.clear(),
            "allchannels" => self.channels = vec![b"*".to_vec()],
            "resetchannels" => self.channels.clear(),
            "allcommands" => self.set_commands_base(true),
            "nocommands" => self.set_commands_base(false),
            "sanitize-payload" => self.sanitize = Some(true),
            "skip-sanitize-payload" => self.sanitize = Some(false),
            "reset" => *self = User { sanitize: Some(true), ..User::new() },
            "clearselectors" => {}
            _ => return self.apply_prefixed(text, &lower),
        }
        Ok(())
    }

    fn apply_prefixed(&mut self, text: &str, lower: &str) -> Result<(), RuleError> {
        let (head, rest) = text.split_at(1);
        match head {
            ">" => self.add_password(sha256(rest.as_bytes())),
            "<" => self.remove_password(sha256(rest.as_bytes()))?,
            "#" => self.add_password(parse_hash(rest)?),
            "!" => self.remove_password(parse_hash(rest)?)?,
            "~" => self.add_key(rest.as_bytes(), true, true)?,
            "%" => self.add_key_with_permissions(rest)?,
            "&" => self.add_channel(rest.as_bytes())?,
            "+" | "-" => self.apply_command_rule(text, lower)?,
            "(" => return Err(SELECTORS),
            _ => return Err(SYNTAX),
        }
        Ok(())
    }

    fn add_password(&mut self, hash: [u8; 32]) {
        self.nopass = false;
        if !self.passwords.contains(&hash) {
            self.passwords.push(hash);
        }
    }

    fn remove_password(&mut self, hash: [u8; 32]) -> Result<(), RuleError> {
        let before = self.passwords.len();
        self.passwords.retain(|stored| *stored != hash);
        self.nopass = false;
        if self.passwords.len() == before {
            return Err(NO_SUCH_PASSWORD);
        }
        Ok(())
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

    /// `ACL LIST`'s line after `user <name> `.
    pub(crate) fn describe(&self) -> String {
        let mut parts: Vec<String> = vec![if self.enabled { "on" } else { "off" }.into()];
        if self.nopass {
            parts.push("nopass".into());
        }
        if let Some(sanitize) = self.sanitize {
            parts.push(if sanitize { "sanitize-payload" } else { "skip-sanitize-payload" }.into());
        }
        parts.extend(self.passwords.iter().map(|hash| format!("#{}", hex(hash))));
        if !self.keys.is_empty() {
            parts.push(self.describe_keys());
        }
        parts.push(self.describe_channels());
        parts.push(self.describe_commands());
        parts.join(" ")
    }

    pub(crate) fn flags(&self) -> Vec<&'static str> {
        let mut flags = vec![if self.enabled { "on" } else { "off" }];
        if self.nopass {
            flags.push("nopass");
        }
        match self.sanitize {
            Some(true) => flags.push("sanitize-payload"),
            Some(false) => flags.push("skip-sanitize-payload"),
            None => {}
        }
        flags
    }

    pub(crate) fn password_hashes(&self) -> impl Iterator<Item = String> + '_ {
        self.passwords.iter().map(|hash| hex(hash))
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

pub(crate) fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

fn parse_hash(text: &str) -> Result<[u8; 32], RuleError> {
    let valid = text.len() == 64 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if !valid {
        return Err(BAD_HASH);
    }
    let mut hash = [0; 32];
    for (at, byte) in hash.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * at..2 * at + 2], 16).map_err(|_| BAD_HASH)?;
    }
    Ok(hash)
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(rules: &str) -> User {
        let mut user = User::new();
        for rule in rules.split(' ') {
            user.apply(rule.as_bytes()).unwrap();
        }
        user
    }

    /// Goal: the rules read back as Redis 7.0 prints them (transcripts of redis-server
    /// 7.0.15), but for the order of command rules, which it sometimes changes (it prints
    /// alice's as `-@all +@read -keys +set`): the conformance tests compare those as sets.
    #[test]
    fn rules_read_back_as_redis_prints_them() {
        let alice = user("on >p1 ~cache:* +@read +set -keys");
        assert_eq!(
            alice.describe(),
            "on #f64551fcd6f07823cb87971cfb91446425da18286b3ab1ef935e0cbd7a69f68a ~cache:* \
             resetchannels -@all +@read +set -keys"
        );
        assert_eq!(user("+get +get +set -get").describe_commands(), "-@all +set");
        assert_eq!(user("+@read -@read +@write").describe_commands(), "-@all +@write");
        assert_eq!(
            user("+config -config|get +config|set").describe_commands(),
            "-@all +config -config|get"
        );
        assert_eq!(
            user("on nopass +@all -@dangerous ~* &*").describe(),
            "on nopass ~* &* +@all -@dangerous"
        );
        assert_eq!(user("~a resetkeys ~b %RW~c %R~d").describe_keys(), "~b ~c %R~d");
        assert_eq!(user("%R~k %W~k %W~j").describe_keys(), "~k %W~j");
        assert_eq!(User::unrestricted().describe(), "on nopass ~* &* +@all");
    }

    /// Goal: permissions follow the rules: commands by name, category and subcommand;
    /// keys by pattern and access.
    #[test]
    fn permissions_follow_the_rules() {
        let catalog = catalog();
        let at = |name| catalog.find(name).unwrap();
        let u = user("on -@all +@read -keys +set +config|get %R~r:* %W~w:* ~rw:*");
        assert!(u.allows_command(at("get")) && u.allows_command(at("set")));
        assert!(!u.allows_command(at("keys")) && !u.allows_command(at("del")));
        assert!(u.allows_command(at("config|get")) && !u.allows_command(at("config|set")));
        assert!(u.allows_key(b"r:1", true, false) && !u.allows_key(b"r:1", false, true));
        assert!(u.allows_key(b"w:1", false, true) && !u.allows_key(b"w:1", true, false));
        assert!(u.allows_key(b"rw:1", true, true) && !u.allows_key(b"other", true, false));
        assert!(!u.is_unrestricted() && User::unrestricted().is_unrestricted());
    }

    /// Goal: channels as Redis 7.0 checks them: glob for channels, literal for PSUBSCRIBE
    /// patterns, `allchannels` for both, none for a new user; and a user without every
    /// channel is never `unrestricted` (its checks are not skipped).
    #[test]
    fn channels_glob_and_literal_patterns() {
        let u = user("on +@all ~* &chan:* &lit");
        assert!(u.allows_channel(b"chan:1", false) && u.allows_channel(b"lit", false));
        assert!(!u.allows_channel(b"other", false) && !u.allows_channel(b"li*", false));
        assert!(u.allows_channel(b"chan:*", true) && !u.allows_channel(b"chan:1", true));
        assert!(!u.allows_channel(b"*", true) && !u.is_unrestricted());
        assert!(user("allchannels").allows_channel(b"*", true));
        assert!(!User::new().allows_channel(b"a", false));
        assert!(!user("on +@all ~*").is_unrestricted());
    }

    /// Goal: a first-arg rule allows its command with that first argument only (ignoring
    /// case, whole argument), and a later rule naming the command drops it.
    #[test]
    fn first_arg_rules_allow_one_first_arg() {
        let select = catalog().find("select").unwrap();
        let u = user("-@all +select|0 +SELECT|Ab");
        assert!(!u.allows_command(select));
        assert!(u.allows_first_arg(select, b"0") && u.allows_first_arg(select, b"aB"));
        assert!(!u.allows_first_arg(select, b"1") && !u.allows_first_arg(select, b"0\0"));
        assert!(!u.allows_first_arg(catalog().find("get").unwrap(), b"0"));
        assert_eq!(u.describe_commands(), "-@all +select|0 +select|Ab");
        assert!(!user("-@all +select|0 -select").allows_first_arg(select, b"0"));
        assert!(!user("-@all +select|0 +@all -select").allows_first_arg(select, b"0"));
        let mut u = User::new();
        assert_eq!(u.apply(b"+config|get|x"), Err(super::first_args::OF_A_SUBCOMMAND));
        assert_eq!(u.apply(b"+select|"), Err(SYNTAX));
        assert_eq!(u.apply(b"-select|0"), Err(UNKNOWN_COMMAND));
        assert_eq!(u.apply(b"+get|a|b"), Err(UNKNOWN_COMMAND));
    }

    #[test]
    fn bad_rules_are_refused() {
        let mut u = User::new();
        assert_eq!(u.apply(b"badrule"), Err(SYNTAX));
        assert_eq!(u.apply(b"+nosuchcmd"), Err(UNKNOWN_COMMAND));
        assert_eq!(u.apply(b"+@nosuchcat"), Err(UNKNOWN_COMMAND));
        assert_eq!(u.apply(b"#abc"), Err(BAD_HASH));
        assert_eq!(u.apply(b"<nothere"), Err(NO_SUCH_PASSWORD));
        u.apply(b"allkeys").unwrap();
        assert_eq!(u.apply(b"~c"), Err(AFTER_ALLKEYS));
        assert!(u.apply(b">secret").is_ok() && u.password_matches(b"secret"));
        assert!(!u.password_matches(b"other"));
    }
}
