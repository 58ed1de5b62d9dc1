// Transactions, pipelines and type errors.
'use strict';

const { assert, eq, rejects, WRONGTYPE } = require('./helpers');

const scenarios = [];
const scenario = (name, fn) => scenarios.push({ name, fn });

// ioredis reports each reply of a pipeline or EXEC as [error, result].
function expectReplyError(entry, pattern, what) {
  const [err] = entry;
  assert.ok(err instanceof Error, `${what}: no error in ${JSON.stringify(entry)}`);
  assert.equal(err.name, 'ReplyError', `${what}: ${err.name}`);
  assert.ok(pattern.test(err.message),
    `${what}: got ${JSON.stringify(err.message)}, want ${pattern}`);
}

scenario('tx: multi exec', async ({ r, k }) => {
  const key = k('tx');
  eq(await r.multi().set(key, '1').incr(key).incrby(key, 5).get(key).exec(),
    [[null, 'OK'], [null, 2], [null, 7], [null, '7']], 'exec replies');
  const replies = await r.multi().set(key, 'text').incr(key).get(key).exec();
  eq(replies[0], [null, 'OK'], 'first');
  expectReplyError(replies[1], /^ERR value is not an integer or out of range/,
    'a failing command inside EXEC');
  eq(replies[2], [null, 'text'], 'the rest still ran');
});

scenario('tx: execabort on a queueing error', async ({ r, k }) => {
  const key = k('txabort');
  await r.set(key, 'before');
  // SET with one argument is refused while queueing, so EXEC discards the whole transaction.
  await rejects(r.multi().set(key, 'after').set(key).exec(),
    /^EXECABORT Transaction discarded because of previous errors/, 'exec');
  eq(await r.get(key), 'before', 'nothing ran');
});

scenario('tx: watch aborted by another connection', async ({ r, other, k }) => {
  const key = k('watched');
  await r.set(key, 'start');
  eq(await r.watch(key), 'OK', 'watch');
  eq(await other.set(key, 'theirs'), 'OK', 'write from the other connection');
  eq(await r.multi().set(key, 'mine').exec(), null, 'exec after a watched write');
  eq(await r.get(key), 'theirs', 'the transaction did not run');
  eq(await r.watch(key), 'OK', 'watch again');
  eq(await r.multi().set(key, 'mine').exec(), [[null, 'OK']], 'exec without interference');
  eq(await r.get(key), 'mine', 'the transaction ran');
  eq(await r.watch(key), 'OK', 'watch a third time');
  eq(await r.unwatch(), 'OK', 'unwatch');
  await other.set(key, 'theirs again');
  eq(await r.multi().get(key).exec(), [[null, 'theirs again']], 'exec after unwatch');
});

scenario('tx: discard', async ({ r, k }) => {
  const key = k('discarded');
  await r.set(key, 'kept');
  eq(await r.multi({ pipeline: false }), 'OK', 'multi');
  eq(await r.set(key, 'dropped'), 'QUEUED', 'queued');
  eq(await r.discard(), 'OK', 'discard');
  eq(await r.get(key), 'kept', 'nothing ran');
  await rejects(r.discard(), 'ERR DISCARD without MULTI', 'discard outside multi');
  await rejects(r.exec(), 'ERR EXEC without MULTI', 'exec outside multi');
});

scenario('pipeline: strings in bulk', async ({ r, k }) => {
  const count = 200;
  const writes = r.pipeline();
  for (let i = 0; i < count; i += 1) writes.set(k(`p${i}`), `v${i}`);
  const written = await writes.exec();
  eq(written.length, count, 'replies');
  assert.ok(written.every(([err, res]) => err === null && res === 'OK'), 'all sets OK');
  const reads = r.pipeline();
  for (let i = 0; i < count; i += 1) reads.get(k(`p${i}`)).incr(k('pcounter'));
  const results = await reads.exec();
  for (let i = 0; i < count; i += 1) {
    eq(results[2 * i], [null, `v${i}`], `get ${i}`);
    eq(results[2 * i + 1], [null, i + 1], `incr ${i}`);
  }
});

scenario('pipeline: mixed types', async ({ r, k }) => {
  const [s, l, h, set, z] = [k('ms'), k('ml'), k('mh'), k('mset'), k('mz')];
  const replies = await r.pipeline()
    .set(s, 'v').rpush(l, 'a', 'b').hset(h, 'f', '1').sadd(set, 'x').zadd(z, 2, 'm')
    .lpush(s, 'oops')
    .get(s).lrange(l, 0, -1).hgetall(h).smembers(set).zrange(z, 0, -1, 'WITHSCORES')
    .type(s).type(l).type(h).type(set).type(z)
    .exec();
  eq(replies.slice(0, 5), [[null, 'OK'], [null, 2], [null, 1], [null, 1], [null, 1]], 'writes');
  expectReplyError(replies[5], /^WRONGTYPE /, 'lpush on a string inside the pipeline');
  eq(replies.slice(6).map(([err, res]) => [err, res]), [
    [null, 'v'], [null, ['a', 'b']], [null, { f: '1' }], [null, ['x']], [null, ['m', '2']],
    [null, 'string'], [null, 'list'], [null, 'hash'], [null, 'set'], [null, 'zset'],
  ], 'reads after the error');
});

scenario('errors: WRONGTYPE surfaces as ReplyError', async ({ r, k }) => {
  const [s, l, h] = [k('ws'), k('wl'), k('wh')];
  await r.set(s, 'text');
  await rejects(r.hget(s, 'f'), WRONGTYPE, 'hget on a string');
  await rejects(r.lpush(s, 'x'), WRONGTYPE, 'lpush on a string');
  await rejects(r.sadd(s, 'x'), WRONGTYPE, 'sadd on a string');
  await rejects(r.zadd(s, 1, 'x'), WRONGTYPE, 'zadd on a string');
  await r.rpush(l, 'a');
  await rejects(r.get(l), WRONGTYPE, 'get on a list');
  await rejects(r.incr(l), WRONGTYPE, 'incr on a list');
  await rejects(r.append(l, 'x'), WRONGTYPE, 'append on a list');
  await rejects(r.hset(l, 'f', 'v'), WRONGTYPE, 'hset on a list');
  await rejects(r.smembers(l), WRONGTYPE, 'smembers on a list');
  await rejects(r.zscore(l, 'a'), WRONGTYPE, 'zscore on a list');
  await rejects(r.setbit(l, 0, 1), WRONGTYPE, 'setbit on a list');
  await r.hset(h, 'f', 'v');
  await rejects(r.lrange(h, 0, -1), WRONGTYPE, 'lrange on a hash');
  await rejects(r.sunionstore(k('wd'), h), WRONGTYPE, 'sunionstore from a hash');
  await rejects(r.zunionstore(k('wd'), 1, h), WRONGTYPE, 'zunionstore from a hash');
  eq(await r.set(l, 'overwritten'), 'OK', 'set replaces any type');
  eq(await r.get(l), 'overwritten', 'after set');
});

module.exports = { scenarios };
