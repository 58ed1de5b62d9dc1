// Keyspace commands over every type.
'use strict';

const {
  eq, unique, drain, rejects,
} = require('./helpers');

// Long enough that PERSIST and HSET land before the expiry even on a loaded machine.
const TTL_MS = 1000;

const scenarios = [];
const scenario = (name, fn) => scenarios.push({ name, fn });

// One key of each type under `name`: prefix; returns the keys by type.
async function oneOfEach(r, k, name) {
  const keys = {
    string: k(`${name}:str`), hash: k(`${name}:hash`), list: k(`${name}:list`),
    set: k(`${name}:set`), zset: k(`${name}:zset`),
  };
  await r.set(keys.string, 'v');
  await r.hset(keys.hash, 'f', 'v');
  await r.rpush(keys.list, 'a', 'b');
  await r.sadd(keys.set, 'm');
  await r.zadd(keys.zset, 1, 'm');
  return keys;
}

scenario('keyspace: type scan rename copy of every type', async ({ r, k }) => {
  const keys = await oneOfEach(r, k, 'ks');
  for (const [type, key] of Object.entries(keys)) eq(await r.type(key), type, `type ${type}`);
  for (const type of Object.keys(keys)) {
    eq(unique(await drain(r.scanStream({ match: k('ks:*'), type, count: 100 }))), [keys[type]],
      `scan TYPE ${type}`);
  }
  eq(await r.rename(keys.hash, k('ks:hash2')), 'OK', 'rename a hash');
  eq(await r.hgetall(k('ks:hash2')), { f: 'v' }, 'renamed hash');
  eq(await r.renamenx(keys.list, keys.set), 0, 'renamenx onto an existing key');
  eq(await r.rename(keys.list, keys.string), 'OK', 'rename a list over a string');
  eq(await r.lrange(keys.string, 0, -1), ['a', 'b'], 'the list replaced the string');
  eq(await r.copy(keys.zset, k('ks:zcopy')), 1, 'copy a zset');
  eq(await r.zadd(k('ks:zcopy'), 2, 'n'), 1, 'the copy is independent');
  eq(await r.zcard(keys.zset), 1, 'the original is unchanged');
  eq(await r.copy(keys.set, k('ks:zcopy')), 0, 'copy onto an existing key');
  eq(await r.copy(keys.set, k('ks:zcopy'), 'REPLACE'), 1, 'copy REPLACE');
  eq(await r.type(k('ks:zcopy')), 'set', 'replaced by a set');
  eq(await r.del(keys.string, k('ks:hash2'), keys.set), 3, 'del of several types');
  eq(await r.unlink(keys.zset, k('ks:zcopy'), k('nope')), 2, 'unlink');
  eq(await r.exists(...Object.values(keys), k('ks:hash2'), k('ks:zcopy')), 0, 'all gone');
});

scenario('keyspace: expiry of every type', async ({ r, k }) => {
  const keys = await oneOfEach(r, k, 'ex');
  for (const [type, key] of Object.entries(keys)) {
    eq(await r.pexpire(key, TTL_MS), 1, `pexpire ${type}`);
  }
  eq(await r.persist(keys.set), 1, 'persist a set');
  eq(await r.ttl(keys.set), -1, 'ttl after persist');
  eq(await r.hset(keys.hash, 'g', 'w'), 1, 'writing a field keeps the TTL');
  await new Promise((resolve) => setTimeout(resolve, TTL_MS + 300));
  for (const type of ['string', 'hash', 'list', 'zset']) {
    eq(await r.type(keys[type]), 'none', `${type} expired`);
  }
  eq(await r.smembers(keys.set), ['m'], 'the persisted set stays');
  eq(await r.hgetall(keys.hash), {}, 'an expired hash reads as empty');
  eq(await r.rpush(keys.list, 'new'), 1, 'push onto an expired list starts a new one');
  eq(await r.ttl(keys.list), -1, 'the new list has no TTL');
});

scenario('keyspace: move and copy across databases', async ({ r, k }) => {
  const keys = await oneOfEach(r, k, 'db');
  eq(await r.move(keys.hash, 1), 1, 'move a hash to db 1');
  eq(await r.exists(keys.hash), 0, 'gone from db 0');
  eq(await r.copy(keys.zset, keys.zset, 'DB', 1), 1, 'copy a zset to db 1');
  eq(await r.select(1), 'OK', 'select 1');
  try {
    eq(await r.hgetall(keys.hash), { f: 'v' }, 'the moved hash');
    eq(await r.zrange(keys.zset, 0, -1, 'WITHSCORES'), ['m', '1'], 'the copied zset');
    eq(await r.move(keys.hash, 0), 1, 'move it back');
    eq(await r.del(keys.zset), 1, 'del the copy');
  } finally {
    await r.select(0);
  }
  eq(await r.hgetall(keys.hash), { f: 'v' }, 'the hash is back in db 0');
  await rejects(r.move(keys.set, 0), 'ERR source and destination objects are the same',
    'move to its own db');
});

module.exports = { scenarios };
