//! One ACL user: its flags, passwords and selectors (see `selector.rs`), changed by
//! `ACL SETUSER` rules and described back as `ACL LIST` prints them.

use sha2::{Digest, Sha256};

use super::{
    selector::{Refusal, Selector},
    Denied,
};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    pub(crate) enabled: bool,
    pub(crate) nopass: bool,
    /// SHA-256 of each password.
    pub(crate) passwords: Vec<[u8; 32]>,
    /// `sanitize-payload` (true) or `skip-sanitize-payload` (false) if set.
    pub(crate) sanitize: Option<bool>,
    /// The rules given outside parentheses.
    pub(crate) root: Selector,
    /// The `(...)` selectors, in the order added.
    pub(crate) selectors: Vec<Selector>,
}

/// Why a rule was refused: the text after `Error in ACL SETUSER modifier '...': `.
pub(crate) type RuleError = &'static str;

pub(super) const SYNTAX: RuleError = "Syntax error";
pub(super) const UNKNOWN_COMMAND: RuleError = "Unknown command or category name in ACL";
const BAD_HASH: RuleError =
    "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters";
const NO_SUCH_PASSWORD: RuleError =
    "The password you are trying to remove from the user does not exist";

/// Why `ACL SETUSER`'s (or an ACL file line's) rules were refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RulesError {
    /// A `(` rule with no rule ending in `)` after it: the rule that opened it.
    Unmatched(String),
    /// A rule (a selector: its parts joined by spaces) and why.
    Rule(String, RuleError),
}

/// The rules with a selector given over several arguments (`(+get` `~k*)`) joined into
/// one, as Redis 7.0 joins them: from a rule that starts with `(` and does not end with
/// `)` to the next that ends with `)`.
pub(crate) fn merge_selectors<'a>(
    rules: &[&'a [u8]],
) -> Result<Vec<std::borrow::Cow<'a, [u8]>>, RulesError> {
    use std::borrow::Cow;
    let mut merged = Vec::with_capacity(rules.len());
    let mut open: Option<(Vec<u8>, &[u8])> = None;
    for &rule in rules {
        if let Some((mut joined, first)) = open.take() {
            joined.push(b' ');
            joined.extend_from_slice(rule);
            if rule.ends_with(b")") {
                merged.push(Cow::Owned(joined));
            } else {
                open = Some((joined, first));
            }
        } else if rule.starts_with(b"(") && !rule.ends_with(b")") {
            open = Some((rule.to_vec(), rule));
        } else {
            merged.push(Cow::Borrowed(rule));
        }
    }
    match open {
        Some((_, first)) => Err(RulesError::Unmatched(String::from_utf8_lossy(first).into_owned())),
        None => Ok(merged),
    }
}

impl User {
    /// A user as `ACL SETUSER name` with no rules makes it: off, no password, no commands,
    /// no keys, no channels.
    pub(crate) fn new() -> User {
        User {
            enabled: false,
            nopass: false,
            passwords: Vec::new(),
            sanitize: None,
            root: Selector::new(),
            selectors: Vec::new(),
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
        self.root.is_unrestricted()
    }

    fn all_selectors(&self) -> impl Iterator<Item = &Selector> {
        std::iter::once(&self.root).chain(&self.selectors)
    }

    /// Whether a selector that allows the command of catalog `entry` may read every key
    /// (a `~*` or `%R~*` pattern): SORT's BY and GET patterns, which name keys no check
    /// saw, need it (Redis's unrestricted key access).
    pub(crate) fn reads_every_key(&self, entry: usize) -> bool {
        self.all_selectors().any(|s| s.allows_command(entry) && s.reads_every_key())
    }

    /// Whether a selector allows channel `name` (`literal`: a PSUBSCRIBE pattern).
    pub(crate) fn allows_channel(&self, name: &[u8], literal: bool) -> bool {
        self.all_selectors().any(|s| s.allows_channel(name, literal))
    }

    /// Whether one selector allows the whole command (catalog `entry`, command line
    /// `args`); if none does, the most telling refusal, as Redis 7.0 picks it: a channel
    /// over a key over the command, then the latest argument.
    pub(crate) fn check(&self, entry: usize, args: &[&[u8]]) -> Result<(), Denied> {
        self.first_allowing(|selector| selector.check(entry, args))
    }

    /// [`User::check`] with each selector judged by `verdict`.
    pub(crate) fn first_allowing(
        &self,
        verdict: impl Fn(&Selector) -> Result<(), Refusal>,
    ) -> Result<(), Denied> {
        let mut telling: Option<Refusal> = None;
        for selector in self.all_selectors() {
            match verdict(selector) {
                Ok(()) => return Ok(()),
                Err(refusal) => {
                    let more = telling
                        .as_ref()
                        .is_none_or(|t| (refusal.rank, refusal.at) > (t.rank, t.at));
                    if more {
                        telling = Some(refusal);
                    }
                }
            }
        }
        Err(telling.expect("the root selector always judges").denied)
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

    /// Applies one `ACL SETUSER` rule (a selector already joined, see [`merge_selectors`]).
    pub(crate) fn apply(&mut self, rule: &[u8]) -> Result<(), RuleError> {
        let text = std::str::from_utf8(rule).map_err(|_| SYNTAX)?;
        match text.to_ascii_lowercase().as_str() {
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
            "sanitize-payload" => self.sanitize = Some(true),
            "skip-sanitize-payload" => self.sanitize = Some(false),
            "reset" => *self = User { sanitize: Some(true), ..User::new() },
            "clearselectors" => self.selectors.clear(),
            _ => return self.apply_prefixed(text),
        }
        Ok(())
    }

    fn apply_prefixed(&mut self, text: &str) -> Result<(), RuleError> {
        let Some((head, rest)) = text.split_at_checked(1) else { return Err(SYNTAX) };
        match head {
            ">" => self.add_password(sha256(rest.as_bytes())),
            "<" => self.remove_password(sha256(rest.as_bytes()))?,
            "#" => self.add_password(parse_hash(rest)?),
            "!" => self.remove_password(parse_hash(rest)?)?,
            "(" => self.selectors.push(Selector::from_parenthesised(text.as_bytes())?),
            _ => self.root.apply(text.as_bytes())?,
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

    /// `ACL LIST`'s line after `user <name> `: flags, passwords, the root selector, then
    /// each other selector in parentheses.
    pub(crate) fn describe(&self) -> String {
        let mut parts: Vec<String> = vec![if self.enabled { "on" } else { "off" }.into()];
        if self.nopass {
            parts.push("nopass".into());
        }
        if let Some(sanitize) = self.sanitize {
            parts.push(if sanitize { "sanitize-payload" } else { "skip-sanitize-payload" }.into());
        }
        parts.extend(self.passwords.iter().map(|hash| format!("#{}", hex(hash))));
        parts.push(self.root.describe());
        parts.extend(self.selectors.iter().map(|s| format!("({})", s.describe())));
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
    use super::super::{catalog::catalog, first_args, selector::AFTER_ALLKEYS, Denied};
    use super::*;

    /// A user from rules separated by spaces (a selector's joined as SETUSER joins them).
    fn user(rules: &str) -> User {
        let mut user = User::new();
        let rules: Vec<&[u8]> = rules.split(' ').map(str::as_bytes).collect();
        for rule in merge_selectors(&rules).unwrap() {
            user.apply(&rule).unwrap();
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
        assert_eq!(user("+get +get +set -get").root.describe_commands(), "-@all +set");
        assert_eq!(user("+@read -@read +@write").root.describe_commands(), "-@all +@write");
        assert_eq!(
            user("+config -config|get +config|set").root.describe_commands(),
            "-@all +config -config|get"
        );
        assert_eq!(
            user("on nopass +@all -@dangerous ~* &*").describe(),
            "on nopass ~* &* +@all -@dangerous"
        );
        assert_eq!(user("~a resetkeys ~b %RW~c %R~d").root.describe_keys(), "~b ~c %R~d");
        assert_eq!(user("%R~k %W~k %W~j").root.describe_keys(), "~k %W~j");
        assert_eq!(User::unrestricted().describe(), "on nopass ~* &* +@all");
    }

    /// Goal: permissions follow the rules: commands by name, category and subcommand;
    /// keys by pattern and access.
    #[test]
    fn permissions_follow_the_rules() {
        let catalog = catalog();
        let at = |name| catalog.find(name).unwrap();
        let u = user("on -@all +@read -keys +set +config|get %R~r:* %W~w:* ~rw:*");
        assert!(u.root.allows_command(at("get")) && u.root.allows_command(at("set")));
        assert!(!u.root.allows_command(at("keys")) && !u.root.allows_command(at("del")));
        assert!(
            u.root.allows_command(at("config|get")) && !u.root.allows_command(at("config|set"))
        );
        assert!(u.root.allows_key(b"r:1", true, false) && !u.root.allows_key(b"r:1", false, true));
        assert!(u.root.allows_key(b"w:1", false, true) && !u.root.allows_key(b"w:1", true, false));
        assert!(
            u.root.allows_key(b"rw:1", true, true) && !u.root.allows_key(b"other", true, false)
        );
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
        assert!(!u.root.allows_command(select));
        assert!(u.root.allows_first_arg(select, b"0") && u.root.allows_first_arg(select, b"aB"));
        assert!(!u.root.allows_first_arg(select, b"1") && !u.root.allows_first_arg(select, b"0\0"));
        assert!(!u.root.allows_first_arg(catalog().find("get").unwrap(), b"0"));
        assert_eq!(u.root.describe_commands(), "-@all +select|0 +select|Ab");
        assert!(!user("-@all +select|0 -select").root.allows_first_arg(select, b"0"));
        assert!(!user("-@all +select|0 +@all -select").root.allows_first_arg(select, b"0"));
        let mut u = User::new();
        assert_eq!(u.apply(b"+config|get|x"), Err(first_args::OF_A_SUBCOMMAND));
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

    /// Goal: a selector given over several arguments is joined as Redis 7.0 joins it, and
    /// one left open is refused naming the argument that opened it.
    #[test]
    fn selectors_over_several_arguments_are_joined() {
        let joined = |rules: &[&str]| {
            let rules: Vec<&[u8]> = rules.iter().map(|r| r.as_bytes()).collect();
            merge_selectors(&rules).map(|m| {
                m.iter().map(|r| String::from_utf8_lossy(r).into_owned()).collect::<Vec<_>>()
            })
        };
        assert_eq!(
            joined(&["on", "(+get", "~k*)", "(", ")"]).unwrap(),
            ["on", "(+get ~k*)", "( )"]
        );
        assert_eq!(joined(&["(+get)", "x"]).unwrap(), ["(+get)", "x"]);
        assert_eq!(joined(&["(+get", "x"]), Err(RulesError::Unmatched("(+get".into())));
        assert_eq!(joined(&["(a)b"]), Err(RulesError::Unmatched("(a)b".into())));
    }

    /// Goal: a command runs when one selector allows all of it; otherwise the refusal told
    /// is the most telling (channel over key over command, then the later argument).
    #[test]
    fn one_selector_must_allow_the_whole_command() {
        let catalog = catalog();
        let mget = catalog.find("mget").unwrap();
        let u = user("on (+mget ~a*) (+mget ~b*) (+get ~*)");
        assert_eq!(u.check(mget, &[b"mget", b"a1", b"a2"]), Ok(()));
        assert_eq!(u.check(mget, &[b"mget", b"a1", b"b1"]), Err(Denied::Key(b"b1".to_vec())));
        assert_eq!(u.check(mget, &[b"mget", b"c", b"b1"]), Err(Denied::Key(b"c".to_vec())));
        let del = catalog.find("del").unwrap();
        assert_eq!(u.check(del, &[b"del", b"a1"]), Err(Denied::Command("del")));
        assert!(u.reads_every_key(catalog.find("get").unwrap()) && !u.reads_every_key(mget));
        assert!(!u.allows_channel(b"c", false) && user("(&c)").allows_channel(b"c", false));
        let mut u = u;
        u.apply(b"clearselectors").unwrap();
        assert_eq!(u.check(mget, &[b"mget", b"a1"]), Err(Denied::Command("mget")));
    }
}
