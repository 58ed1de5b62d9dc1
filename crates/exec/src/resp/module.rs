//! MODULE: Spinel loads no Redis module (they are C libraries written against Redis's own
//! internals). MODULE LIST answers the empty list, as a Redis with no module does (clients
//! ask it to find RedisJSON, RediSearch ...); LOAD and LOADEX fail, UNLOAD finds no module.
//! LOAD, LOADEX and UNLOAD are refused first unless `enable-module-command` allows them, as
//! in Redis 7.0.

use super::{debug::protected_allowed, Ctx};

const NOT_ALLOWED: &str = "ERR MODULE command not allowed. If the enable-module-command option \
is set to \"local\", you can run it from a local connection, otherwise you need to set this \
option in the configuration file, and then restart the server.";

pub(super) fn list(ctx: &mut Ctx<'_>) {
    ctx.reply().array(0);
}

/// MODULE LOAD and LOADEX.
pub(super) fn load(ctx: &mut Ctx<'_>) {
    if !protected_allowed(ctx, "enable-module-command") {
        return ctx.error(NOT_ALLOWED);
    }
    ctx.error("ERR Error loading the extension: Spinel does not load Redis modules.");
}

pub(super) fn unload(ctx: &mut Ctx<'_>) {
    if !protected_allowed(ctx, "enable-module-command") {
        return ctx.error(NOT_ALLOWED);
    }
    ctx.error("ERR Error unloading module: no such module with that name");
}
