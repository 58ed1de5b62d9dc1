//! Redis ACL users: who may log in with which password, and run which commands on which
//! keys (`ACL SETUSER` rules, see `user.rs`), checked before every command.
//!
//! Users are kept by name; a connection holds its user's [`Account`], so that `ACL SETUSER`
//! changes apply to connections already logged in as that user (as in Redis), and
//! `ACL DELUSER` (or an `ACL LOAD` that drops the user) closes them. The `default` user
//! is the one `requirepass` sets a password for; while it may run everything on every key
//! the check before each command is one atomic load.
//!
//! Key permissions are read for a read-only command's keys and write for a write
//! command's (Redis 7 asks per key from each command's key specs; for `~pattern`, the
//! rule caches use, the two agree).

mod absent;
pub(crate) mod catalog;
pub(crate) mod commands;
mod first_args;
pub mod log;
mod selector;

pub use commands::{read_acl_file, users_from_lines};
mod user;

use std::{
    collections::BTreeMap,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
};

use parking_lot::RwLock;
use proto_resp::Routed;

pub(crate) use catalog::catalog;
pub use user::User;

use super::glob::{matches, Case};

/// The user every connection starts as.
pub(crate) const DEFAULT_USER: &[u8] = b"default";

/// A user as connections see it.
#[derive(Debug)]
pub struct Account {
    pub(crate) name: Vec<u8>,
    pub(crate) user: RwLock<User>,
    /// Whether it may run everything on every key (kept with `user`).
    unrestricted: AtomicBool,
    /// Deleted (or dropped by ACL LOAD): its connections close.
    pub(crate) deleted: AtomicBool,
}

impl Account {
    fn new(name: &[u8], user: User) -> Arc<Account> {
        let unrestricted = AtomicBool::new(user.is_unrestricted());
        let user = RwLock::new(user);
        Arc::new(Account {
            name: name.to_vec(),
            user,
            unrestricted,
            deleted: AtomicBool::new(false),
        })
    }

    /// Whether it may run everything on every key: one atomic load, for the check before
    /// each command.
    pub(crate) fn is_unrestricted(&self) -> bool {
        self.unrestricted.load(Ordering::Acquire)
    }

    /// Replaces the user's rules (`ACL SETUSER`, `ACL LOAD`).
    fn set(&self, user: User) {
        let mut current = self.user.write();
        self.unrestricted.store(user.is_unrestricted(), Ordering::Release);
        *current = user;
    }
}

/// Every user, by name.
#[derive(Debug)]
pub struct Users {
    by_name: RwLock<BTreeMap<Vec<u8>, Arc<Account>>>,
}

impl Users {
    /// Only `default`: unrestricted, with `requirepass` as its password if given.
    pub fn new(requirepass: Option<&[u8]>) -> Users {
        let mut default = User::unrestricted();
        if let Some(password) = requirepass {
            default.apply(b"resetpass").expect("a valid rule");
            default.apply(&[b">", password].concat()).expect("a valid rule");
        }
        let by_name =
            BTreeMap::from([(DEFAULT_USER.to_vec(), Account::new(DEFAULT_USER, default))]);
        Users { by_name: RwLock::new(by_name) }
    }

    pub(crate) fn get(&self, name: &[u8]) -> Option<Arc<Account>> {
        self.by_name.read().get(name).cloned()
    }

    /// Whether logging in means anything: a user besides `default`, or a `default` that
    /// needs a password (memcached's port then answers SASL and text logins).
    pub(crate) fn logins_configured(&self) -> bool {
        let by_name = self.by_name.read();
        by_name.len() > 1
            || by_name.get(DEFAULT_USER).is_some_and(|d| {
                let user = d.user.read();
                !(user.enabled && user.nopass)
            })
    }

    /// The account of `name` if it is an enabled user with a password and `password` is one
    /// of them (memcached logins against these users: a `nopass` user is not let in, since
    /// memcached has no passwordless users; a passwordless `default` needs no login).
    pub(crate) fn password_login(&self, name: &[u8], password: &[u8]) -> Option<Arc<Account>> {
        self.get(name).filter(|account| {
            let user = account.user.read();
            user.enabled && !user.nopass && user.password_matches(password)
        })
    }

    pub(crate) fn default_account(&self) -> Arc<Account> {
        self.get(DEFAULT_USER).expect("default always exists")
    }

    /// Applies `rules` to `name` (made first if new), all or none.
    pub(crate) fn set_user(&self, name: &[u8], rules: &[&[u8]]) -> Result<(), user::RulesError> {
        let rules = user::merge_selectors(rules)?;
        let mut by_name = self.by_name.write();
        let mut user = by_name.get(name).map_or_else(User::new, |a| a.user.read().clone());
        for rule in &rules {
            user.apply(rule).map_err(|why| {
                user::RulesError::Rule(String::from_utf8_lossy(rule).into_owned(), why)
            })?;
        }
        match by_name.get(name) {
            Some(account) => account.set(user),
            None => {
                by_name.insert(name.to_vec(), Account::new(name, user));
            }
        }
        Ok(())
    }

    /// Deletes the named users (never `default`); returns how many there were.
    pub(crate) fn delete(&self, names: &[&[u8]]) -> usize {
        let mut by_name = self.by_name.write();
        let mut deleted = 0;
        for name in names {
            if let Some(account) = by_name.remove(*name) {
                account.deleted.store(true, Ordering::Release);
                deleted += 1;
            }
        }
        deleted
    }

    /// Every user, by name.
    pub(crate) fn all(&self) -> Vec<Arc<Account>> {
        self.by_name.read().values().cloned().collect()
    }

    /// Replaces every user with `users` (ACL LOAD, --aclfile), as Redis does: `default`
    /// is changed in place (its connections stay logged in), every other user is made anew
    /// and the connections of the old ones close.
    pub fn replace_all(&self, users: Vec<(Vec<u8>, User)>) {
        let mut by_name = self.by_name.write();
        let default = by_name.get(DEFAULT_USER).cloned().expect("default always exists");
        for (name, old) in by_name.iter() {
            if name != DEFAULT_USER {
                old.deleted.store(true, Ordering::Release);
            }
        }
        let mut next = BTreeMap::from([(DEFAULT_USER.to_vec(), Arc::clone(&default))]);
        for (name, user) in users {
            if name == DEFAULT_USER {
                default.set(user);
            } else {
                next.insert(name.clone(), Account::new(&name, user));
            }
        }
        *by_name = next;
    }

    /// `requirepass`: the default user's password, set (or, empty, removed: nopass).
    pub(crate) fn set_default_password(&self, password: &[u8]) {
        let add = [b">", password].concat();
        let rules: Vec<&[u8]> =
            if password.is_empty() { vec![b"nopass"] } else { vec![b"resetpass", &add] };
        self.set_user(DEFAULT_USER, &rules).expect("valid rules");
    }
}

/// Why a command was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Denied {
    /// The command (its full name, `config|get` for a subcommand).
    Command(&'static str),
    /// A key argument.
    Key(Vec<u8>),
    /// A channel (or a pattern, for PSUBSCRIBE).
    Channel(Vec<u8>),
}

impl Denied {
    /// The NOPERM error Redis 7.0 sends.
    pub(crate) fn message(&self) -> String {
        match self {
            Denied::Command(name) => {
                format!("NOPERM this user has no permissions to run the '{name}' command")
            }
            Denied::Key(_) => {
                "NOPERM this user has no permissions to access one of the keys used as arguments"
                    .into()
            }
            Denied::Channel(_) => "NOPERM this user has no permissions to access one of the \
                                   channels used as arguments"
                .into(),
        }
    }

    /// The NOPERM error of a command queued by MULTI that EXEC finds no longer allowed.
    pub(crate) fn exec_message(&self) -> String {
        let reason = match self {
            Denied::Command(_) => "no permission to execute the command or subcommand",
            Denied::Key(_) => "no permission to touch the specified keys",
            Denied::Channel(_) => "no permission to access one of the channels used as arguments",
        };
        format!(
            "NOPERM ACLs rules changed between the moment the transaction was accumulated and \
             the EXEC call. This command is no longer allowed for the following reason: {reason}"
        )
    }

    /// The error of a command a script runs with `redis.call` (Redis 7.0's words).
    pub(crate) fn script_message(&self) -> String {
        let what = match self {
            Denied::Command(_) => "run this command or subcommand",
            Denied::Key(_) => "access at least one of the keys mentioned in the command arguments",
            Denied::Channel(_) => "publish to the channel mentioned in the command",
        };
        format!("ERR The user executing the script can't {what}")
    }

    /// ACL DRYRUN's reply.
    pub(crate) fn dry_run_message(&self) -> String {
        match self {
            Denied::Command(name) => {
                format!("This user has no permissions to run the '{name}' command")
            }
            Denied::Key(key) => format!(
                "This user has no permissions to access the '{}' key",
                String::from_utf8_lossy(key)
            ),
            Denied::Channel(channel) => format!(
                "This user has no permissions to access the '{}' channel",
                String::from_utf8_lossy(channel)
            ),
        }
    }
}

/// Whether `account` may run `routed` with `args` (the whole command line): whether one
/// of its user's selectors allows all of it (`User::check`).
pub(crate) fn check(account: &Account, routed: &Routed, args: &[&[u8]]) -> Result<(), Denied> {
    if account.unrestricted.load(Ordering::Acquire) {
        return Ok(());
    }
    let entry = catalog().of(routed);
    account.user.read().check(entry, args)
}

/// Whether `account` may run the command named `command` (a catalog name: `get`,
/// `config|set`) on `keys`, each needing `access` (memcached's requests, which have no
/// Redis command line of their own; see `memcache::acl`). First-arg rules (`+get|k`) are
/// not consulted: a request is allowed only by its command, never more than on Redis's port.
pub(crate) fn check_as<'k>(
    account: &Account,
    command: &str,
    keys: impl IntoIterator<Item = &'k [u8]> + Clone,
    access: Access,
) -> Result<(), Denied> {
    if account.is_unrestricted() {
        return Ok(());
    }
    let catalog = catalog();
    let Some(entry) = catalog.find(command) else {
        debug_assert!(false, "{command} is in the catalog");
        return Err(Denied::Command("unknown"));
    };
    account.user.read().first_allowing(|selector| {
        if !selector.allows_command(entry) {
            let denied = Denied::Command(catalog.entries[entry].name);
            return Err(selector::Refusal { rank: 1, at: 0, denied });
        }
        for (at, key) in keys.clone().into_iter().enumerate() {
            if !selector.allows_key(key, access.read, access.write) {
                return Err(selector::Refusal {
                    rank: 2,
                    at: at + 1,
                    denied: Denied::Key(key.to_vec()),
                });
            }
        }
        Ok(())
    })
}

/// What a command does with its keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Access {
    pub(crate) read: bool,
    pub(crate) write: bool,
}

/// Redis's glob, as key patterns use it.
fn key_matches(pattern: &[u8], key: &[u8]) -> bool {
    matches(pattern, key, Case::Sensitive)
}
