// Every scenario, in run order, as { name, fn(ctx) } where ctx is
// { r, other, k, ReplyError }: the main connection, a second connection (for WATCH), the key
// namer and ioredis's error class. Each file's keys live under its own name, so scenarios of
// different files never meet on a key (and a type clash is always deliberate).
'use strict';

const MODULES = ['strings', 'hashes', 'lists', 'sets', 'zsets', 'bits', 'keyspace', 'tx'];

function families() {
  return MODULES.flatMap((file) => require(`./${file}`).scenarios.map(({ name, fn }) => ({
    name,
    fn: (ctx) => fn({ ...ctx, k: (key) => ctx.k(`${file}:${key}`) }),
  })));
}

module.exports = { families };
