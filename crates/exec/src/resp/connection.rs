//! Connection commands: PING ECHO QUIT HELLO SELECT RESET CLIENT (AUTH is in `auth`).

use std::sync::atomic::Ordering;

use proto_resp::{args::parse_i64, error, Protocol};

use super::{auth, ttl, Ctx};
use crate::{keyspace::DATABASES, Flow, Shared, REDIS_VERSION};

/// PING [message]; the table allows at most one message.
/// PING; a RESP2 connection in subscribed mode gets pub/sub's form of the reply.
pub(super) fn ping(ctx: &mut Ctx<'_>) {
    if ctx.session.resp2_subscribed() {
        return super::pubsub::subscribed_ping(ctx);
    }
    let cmd = ctx.cmd;
    match cmd.arg(1) {
        None => ctx.reply().simple(b"PONG"),
        Some(message) => ctx.reply().bulk(message),
    }
}

pub(super) fn echo(ctx: &mut Ctx<'_>) {
    let message = ctx.arg(1);
    ctx.reply().bulk(message);
}

pub(super) fn quit(ctx: &mut Ctx<'_>) -> Flow {
    ctx.reply().ok();
    Flow::Close
}

/// A database index argument (SELECT, COPY ... DB, MOVE), or Redis's error for it.
pub(super) fn parse_db(arg: &[u8]) -> Result<u8, &'static str> {
    let db = parse_i64(arg).map_err(|e| e.message())?;
    u8::try_from(db).ok().filter(|&db| db < DATABASES).ok_or(error::DB_INDEX_OUT_OF_RANGE)
}

/// Keys may live in `db` from now on: once any can live outside database 0, DBSIZE and
/// FLUSHDB must scan. Called before the first key goes there.
pub(super) fn note_database(shared: &Shared, db: u8) {
    if db != 0 {
        shared.redis.nonzero_db_selected.store(true, Ordering::SeqCst);
    }
}

pub(super) fn select(ctx: &mut Ctx<'_>) {
    if ctx.shared.redis.cluster.get().is_some() {
        match parse_i64(ctx.arg(1)) {
            Err(why) => return ctx.error(why.message()),
            Ok(db) if db != 0 => return ctx.error("ERR SELECT is not allowed in cluster mode"),
            Ok(_) => {}
        }
    }
    let db = match parse_db(ctx.arg(1)) {
        Ok(db) => db,
        Err(message) => return ctx.error(message),
    };
    note_database(ctx.shared, db);
    ctx.session.db = db;
    sync_client(ctx);
    ctx.reply().ok();
}

/// Copies the session's database and protocol into its `CLIENT LIST` entry.
fn sync_client(ctx: &mut Ctx<'_>) {
    let session = &mut *ctx.session;
    let mut client = session.client.lock();
    client.db = session.db;
    client.resp = protocol_number(session.protocol) as u8;
}

fn protocol_number(protocol: Protocol) -> i64 {
    match protocol {
        Protocol::Resp2 => 2,
        Protocol::Resp3 => 3,
    }
}

/// HELLO's arguments after the version (`helloCommand`).
struct HelloOptions<'a> {
    /// AUTH's user and password.
    login: Option<(&'a [u8], &'a [u8])>,
    name: Option<&'a [u8]>,
}

fn parse_hello<'a>(ctx: &Ctx<'a>) -> Result<HelloOptions<'a>, String> {
    let mut opts = HelloOptions { login: None, name: None };
    let mut index = 2;
    while index < ctx.argc() {
        let more = ctx.argc() - 1 - index;
        let option = ctx.arg(index);
        if option.eq_ignore_ascii_case(b"AUTH") && more >= 2 {
            opts.login = Some((ctx.arg(index + 1), ctx.arg(index + 2)));
            index += 3;
        } else if option.eq_ignore_ascii_case(b"SETNAME") && more >= 1 {
            opts.name = Some(ctx.arg(index + 1));
            index += 2;
        } else {
            let shown = String::from_utf8_lossy(option);
            return Err(format!("ERR Syntax error in HELLO option '{shown}'"));
        }
    }
    Ok(opts)
}

pub(super) fn hello(ctx: &mut Ctx<'_>) {
    let protocol = if ctx.argc() >= 2 {
        let Ok(version) = parse_i64(ctx.arg(1)) else {
            return ctx.error("ERR Protocol version is not an integer or out of range");
        };
        match Protocol::from_version(version) {
            Some(protocol) => protocol,
            None => return ctx.error(error::NOPROTO),
        }
    } else {
        ctx.session.protocol
    };
    let opts = match parse_hello(ctx) {
        Ok(opts) => opts,
        Err(message) => return ctx.error(message),
    };
    if let Some((user, password)) = opts.login {
        if let Err(message) = auth::login(ctx.shared, ctx.session, Some(user), password) {
            return ctx.error(message);
        }
    }
    if !auth::hello_allowed(ctx.shared, ctx.session) {
        return ctx.error(HELLO_NOAUTH);
    }
    if let Some(name) = opts.name {
        if let Err(message) = set_name(ctx, name) {
            return ctx.error(message);
        }
    }
    ctx.session.protocol = protocol;
    super::tracking::hello(ctx);
    sync_client(ctx);
    write_hello(ctx);
}

const HELLO_NOAUTH: &str = "NOAUTH HELLO must be called with the client already \
                            authenticated, otherwise the HELLO AUTH <user> <pass> option can \
                            be used to authenticate the client and select the RESP protocol \
                            version at the same time";

/// RESET: the connection as it was when it opened: no transaction or watched keys,
/// database 0, RESP2, no name, and authenticated only if no password is set.
pub(super) fn reset(ctx: &mut Ctx<'_>) {
    let account = auth::starting_account(ctx.shared);
    let session = &mut *ctx.session;
    if let Some(subs) = &mut session.pubsub {
        subs.leave(&ctx.shared.redis.pubsub);
    }
    super::pubsub::show_counts(session);
    super::monitor::stop(ctx.shared, session);
    session.activity.multi.store(-1, std::sync::atomic::Ordering::Relaxed);
    session.tx = None;
    session.watched.clear();
    session.db = 0;
    session.protocol = Protocol::Resp2;
    super::tracking::disable(ctx.shared, session);
    super::tracking::protocol_changed(session);
    session.account = account;
    session.client.lock().name.clear();
    session.client.lock().user.clear();
    sync_client(ctx);
    ctx.reply().simple(b"RESET");
}

/// The HELLO map, in the protocol just chosen.
fn write_hello(ctx: &mut Ctx<'_>) {
    let id = ctx.session.client.lock().id as i64;
    let proto = protocol_number(ctx.session.protocol);
    let mode = if ctx.shared.redis.cluster.get().is_some() { "cluster" } else { "standalone" };
    let mut reply = ctx.reply();
    reply.map(7);
    for (field, value) in [("server", "redis"), ("version", REDIS_VERSION)] {
        reply.bulk(field.as_bytes());
        reply.bulk(value.as_bytes());
    }
    reply.bulk(b"proto");
    reply.integer(proto);
    reply.bulk(b"id");
    reply.integer(id);
    for (field, value) in [("mode", mode), ("role", "master")] {
        reply.bulk(field.as_bytes());
        reply.bulk(value.as_bytes());
    }
    reply.bulk(b"modules");
    reply.array(0);
}

/// Redis's `validateClientAttr`: printable ASCII without spaces.
fn valid_attr(value: &[u8]) -> bool {
    value.iter().all(|b| (b'!'..=b'~').contains(b))
}

/// CLIENT SETNAME's rules; an empty name clears it.
fn set_name(ctx: &mut Ctx<'_>, name: &[u8]) -> Result<(), &'static str> {
    if !valid_attr(name) {
        return Err("ERR Client names cannot contain spaces, newlines or special characters.");
    }
    ctx.session.client.lock().name = name.to_vec();
    Ok(())
}

pub(super) fn client_id(ctx: &mut Ctx<'_>) {
    let id = ctx.session.client.lock().id as i64;
    ctx.reply().integer(id);
}

pub(super) fn client_getname(ctx: &mut Ctx<'_>) {
    let name = ctx.session.client.lock().name.clone();
    ctx.bulk_or_null(Some(name.as_slice()).filter(|n| !n.is_empty()));
}

pub(super) fn client_setname(ctx: &mut Ctx<'_>) {
    let name = ctx.arg(2);
    match set_name(ctx, name) {
        Ok(()) => ctx.reply().ok(),
        Err(message) => ctx.error(message),
    }
}

pub(super) fn client_info(ctx: &mut Ctx<'_>) {
    let mut line = Vec::new();
    let now = ttl::now_ms(ctx.shared);
    let now_secs = ctx.shared.core.clock_secs();
    let qbuf = super::clients::query_bytes(ctx.cmd);
    ctx.session.client.lock().write_line(now, now_secs, qbuf, &mut line);
    ctx.reply().verbatim(b"txt", &line);
}

pub(super) fn client_setinfo(ctx: &mut Ctx<'_>) {
    let (attribute, value) = (ctx.arg(2), ctx.arg(3));
    let shown = String::from_utf8_lossy(attribute);
    let client = std::sync::Arc::clone(&ctx.session.client);
    let mut client = client.lock();
    let field = if attribute.eq_ignore_ascii_case(b"LIB-NAME") {
        &mut client.lib_name
    } else if attribute.eq_ignore_ascii_case(b"LIB-VER") {
        &mut client.lib_ver
    } else {
        return ctx.error(format!("ERR Unrecognized option '{shown}'"));
    };
    if !valid_attr(value) {
        return ctx
            .error(format!("ERR {shown} cannot contain spaces, newlines or special characters."));
    }
    *field = value.to_vec();
    drop(client);
    ctx.reply().ok();
}

/// CLIENT LIST [TYPE normal|master|replica|pubsub] [ID id ...].
pub(super) fn client_list(ctx: &mut Ctx<'_>) {
    let mut ids: Option<Vec<u64>> = None;
    let mut kind = ClientType::Any;
    let mut index = 2;
    while index < ctx.argc() {
        let option = ctx.arg(index);
        if option.eq_ignore_ascii_case(b"TYPE") && index + 1 < ctx.argc() {
            let kind_name = ctx.arg(index + 1).to_ascii_lowercase();
            if !matches!(
                kind_name.as_slice(),
                b"normal" | b"master" | b"replica" | b"slave" | b"pubsub"
            ) {
                let shown = String::from_utf8_lossy(ctx.arg(index + 1));
                return ctx.error(format!("ERR Unknown client type '{shown}'"));
            }
            kind = ClientType::of(&kind_name);
            index += 2;
        } else if option.eq_ignore_ascii_case(b"ID") && index + 1 < ctx.argc() {
            let mut wanted = Vec::new();
            for arg in (index + 1..ctx.argc()).map(|i| ctx.arg(i)) {
                match parse_i64(arg) {
                    Ok(id) if id > 0 => wanted.push(id as u64),
                    _ => return ctx.error("ERR Invalid client ID"),
                }
            }
            ids = Some(wanted);
            index = ctx.argc();
        } else {
            return ctx.error(error::SYNTAX);
        }
    }
    let text = list_text(ctx, kind, ids.as_deref());
    ctx.reply().verbatim(b"txt", &text);
}

/// CLIENT LIST's and CLIENT KILL's TYPE: Spinel has no replicas or masters, so those
/// match nothing; `pubsub` is a client with a subscription, `normal` any other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ClientType {
    Any,
    Normal,
    Pubsub,
    Master,
    Replica,
}

impl ClientType {
    /// From a lowercased, already checked name.
    pub(super) fn of(name: &[u8]) -> ClientType {
        match name {
            b"normal" => ClientType::Normal,
            b"pubsub" => ClientType::Pubsub,
            b"master" => ClientType::Master,
            _ => ClientType::Replica,
        }
    }

    pub(super) fn matches(self, client: &super::ClientInfo) -> bool {
        let subscribed = client
            .activity
            .subscriptions
            .iter()
            .any(|n| n.load(std::sync::atomic::Ordering::Relaxed) > 0);
        use super::clients::flag;
        let (master, replica) =
            (client.activity.has(flag::MASTER), client.activity.has(flag::REPLICA));
        match self {
            ClientType::Any => true,
            ClientType::Normal => !subscribed && !master && !replica,
            ClientType::Pubsub => subscribed && !replica,
            ClientType::Master => master,
            ClientType::Replica => replica,
        }
    }
}

fn list_text(ctx: &Ctx<'_>, kind: ClientType, ids: Option<&[u64]>) -> Vec<u8> {
    let now = ttl::now_ms(ctx.shared);
    let now_secs = ctx.shared.core.clock_secs();
    let me = ctx.session.client.lock().clone();
    let mut clients = ctx.shared.core.clients.snapshot();
    // A session made without `connect` (tests, embedders) still lists itself.
    if !clients.iter().any(|c| c.id == me.id) {
        clients.insert(0, me.clone());
    }
    let mut text = Vec::new();
    let wanted =
        |c: &&super::ClientInfo| kind.matches(c) && ids.is_none_or(|ids| ids.contains(&c.id));
    let my_qbuf = super::clients::query_bytes(ctx.cmd);
    for client in clients.iter().filter(wanted) {
        let qbuf = if client.id == me.id { my_qbuf } else { 0 };
        client.write_line(now, now_secs, qbuf, &mut text);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::super::{testkit::Harness, Session};
    use crate::REDIS_VERSION;

    #[test]
    fn ping_echo_quit() {
        let mut h = Harness::new();
        h.check(&[
            ("PING", "+PONG\r\n"),
            ("PING hi", "$2\r\nhi\r\n"),
            ("PING a b", "-ERR wrong number of arguments for 'ping' command\r\n"),
            ("ECHO \"a b\"", "$3\r\na b\r\n"),
            ("ECHO", "-ERR wrong number of arguments for 'echo' command\r\n"),
        ]);
        h.check3(&[("PING", "+PONG\r\n")]);
        assert_eq!(h.last_flow, crate::Flow::Continue);
        h.check(&[("QUIT", "+OK\r\n")]);
        assert_eq!(h.last_flow, crate::Flow::Close);
    }

    /// Goal: the lines a browser sends (POST, Host:) close the connection without a reply.
    #[test]
    fn http_probe_closes() {
        let mut h = Harness::new();
        h.check(&[("GET / HTTP/1.1", "-ERR wrong number of arguments for 'get' command\r\n")]);
        assert_eq!(h.last_flow, crate::Flow::Continue);
        h.check(&[("Host: example.com", "")]);
        assert_eq!(h.last_flow, crate::Flow::Close);
        h.check(&[("POST / HTTP/1.1", "")]);
        assert_eq!(h.last_flow, crate::Flow::Close);
    }

    /// Goal: HELLO switches the protocol and answers in the new one; errors in Redis's words.
    #[test]
    fn hello() {
        let mut h = Harness::new();
        h.session = Session::connect(&h.shared, "127.0.0.1:5000", "127.0.0.1:6379");
        let v = REDIS_VERSION;
        let map3 = format!(
            "%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n${}\r\n{v}\r\n\
             $5\r\nproto\r\n:3\r\n$2\r\nid\r\n:1\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n\
             $4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n",
            v.len()
        );
        h.check(&[
            ("HELLO 4", "-NOPROTO unsupported protocol version\r\n"),
            ("HELLO x", "-ERR Protocol version is not an integer or out of range\r\n"),
            ("HELLO 3 FOO", "-ERR Syntax error in HELLO option 'FOO'\r\n"),
            ("HELLO 3 AUTH default", "-ERR Syntax error in HELLO option 'AUTH'\r\n"),
            (
                "HELLO 3 AUTH bob pw",
                "-WRONGPASS invalid username-password pair or user is disabled.\r\n",
            ),
            (
                "HELLO 3 SETNAME \"a b\"",
                "-ERR Client names cannot contain spaces, newlines or special characters.\r\n",
            ),
        ]);
        assert_eq!(h.session.protocol, proto_resp::Protocol::Resp2);
        h.check(&[("HELLO 3 AUTH default secret SETNAME app", &map3)]);
        assert_eq!(h.session.protocol, proto_resp::Protocol::Resp3);
        h.check(&[("HELLO", &map3), ("CLIENT GETNAME", "$3\r\napp\r\n"), ("GET none", "_\r\n")]);
        let reply2 = h.run("HELLO 2");
        assert!(reply2.starts_with("*14\r\n$6\r\nserver\r\n"), "{reply2}");
        assert!(reply2.contains("$5\r\nproto\r\n:2\r\n"));
        h.check(&[("GET none", "$-1\r\n")]);
    }

    #[test]
    fn select_and_auth() {
        let mut h = Harness::new();
        h.check(&[
            ("SELECT 16", "-ERR DB index is out of range\r\n"),
            ("SELECT -1", "-ERR DB index is out of range\r\n"),
            ("SELECT x", "-ERR value is not an integer or out of range\r\n"),
            ("SELECT 15", "+OK\r\n"),
            ("SELECT 0", "+OK\r\n"),
            (
                "AUTH pw",
                "-ERR AUTH <password> called without any password configured for the default \
                 user. Are you sure your configuration is correct?\r\n",
            ),
            ("AUTH default pw", "+OK\r\n"),
            ("AUTH bob pw", "-WRONGPASS invalid username-password pair or user is disabled.\r\n"),
            ("AUTH a b c", "-ERR syntax error\r\n"),
        ]);
        assert!(h.shared.redis.nonzero_db_selected.load(std::sync::atomic::Ordering::SeqCst));
    }

    /// Goal: the CLIENT subcommands a client library uses at connect time, and CLIENT LIST
    /// over two registered connections.
    #[test]
    fn client_subcommands() {
        let mut h = Harness::new();
        let mut other = Session::connect(&h.shared, "10.0.0.2:40000", "10.0.0.1:6379");
        h.session = Session::connect(&h.shared, "10.0.0.3:40001", "10.0.0.1:6379");
        h.check(&[
            ("CLIENT ID", ":2\r\n"),
            ("CLIENT GETNAME", "$-1\r\n"),
            ("CLIENT SETNAME conn-1", "+OK\r\n"),
            ("CLIENT GETNAME", "$6\r\nconn-1\r\n"),
            (
                "CLIENT SETNAME \"a b\"",
                "-ERR Client names cannot contain spaces, newlines or special characters.\r\n",
            ),
            ("CLIENT SETINFO LIB-NAME redis-py", "+OK\r\n"),
            ("CLIENT SETINFO lib-ver 5.0.1", "+OK\r\n"),
            (
                "CLIENT SETINFO LIB-NAME \"a b\"",
                "-ERR LIB-NAME cannot contain spaces, newlines or special characters.\r\n",
            ),
            ("CLIENT SETINFO foo bar", "-ERR Unrecognized option 'foo'\r\n"),
            ("CLIENT SETINFO foo \"a b\"", "-ERR Unrecognized option 'foo'\r\n"),
            (
                "CLIENT SETINFO LIB-NAME",
                "-ERR wrong number of arguments for 'client|setinfo' command\r\n",
            ),
            ("CLIENT ID x", "-ERR wrong number of arguments for 'client|id' command\r\n"),
            ("CLIENT FOO", "-ERR unknown subcommand 'FOO'. Try CLIENT HELP.\r\n"),
            ("CLIENT", "-ERR wrong number of arguments for 'client' command\r\n"),
            ("SELECT 3", "+OK\r\n"),
        ]);
        let list = h.run("CLIENT LIST");
        let lines: Vec<&str> = list.split('\n').collect();
        assert!(lines[0].starts_with("$"), "{list}");
        assert!(lines[1].starts_with("id=1 addr=10.0.0.2:40000 laddr=10.0.0.1:6379 fd=-1 name= "));
        assert!(lines[1].contains(" db=0 ") && lines[1].contains(" cmd=NULL "));
        assert!(
            lines[2].starts_with("id=2 addr=10.0.0.3:40001 laddr=10.0.0.1:6379 fd=-1 name=conn-1 ")
        );
        assert!(lines[2].contains(" db=3 ") && lines[2].contains(" cmd=client|list "));
        assert!(lines[2].ends_with("resp=2 lib-name=redis-py lib-ver=5.0.1"), "{}", lines[2]);
        let only_me = h.run("CLIENT LIST ID 2 99");
        assert_eq!(only_me.matches("id=").count(), 1);
        assert_eq!(h.run("CLIENT LIST TYPE pubsub"), "$0\r\n\r\n");
        h.check(&[
            ("CLIENT LIST TYPE foo", "-ERR Unknown client type 'foo'\r\n"),
            ("CLIENT LIST ID x", "-ERR Invalid client ID\r\n"),
            ("CLIENT LIST FOO", "-ERR syntax error\r\n"),
        ]);
        let info = h.run("CLIENT INFO");
        assert!(info.contains("id=2 ") && info.contains("cmd=client|info"));
        h.session.protocol = proto_resp::Protocol::Resp3;
        assert!(h.run("CLIENT INFO").starts_with("="));
        other.disconnect(&h.shared);
        assert_eq!(h.shared.core.clients.len(), 1);
    }
}
