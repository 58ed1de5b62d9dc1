// Sets.
'use strict';

const {
  assert, eq, sorted, unique, drain, scanAll,
} = require('./helpers');

const scenarios = [];
const scenario = (name, fn) => scenarios.push({ name, fn });

scenario('set: sadd srem smembers sismember smismember scard', async ({ r, k }) => {
  const s = k('set');
  eq(await r.sadd(s, 'a', 'b', 'c'), 3, 'sadd');
  eq(await r.sadd(s, 'a', 'd', 'd'), 1, 'sadd existing and repeated');
  eq(await r.sadd(s, ['e']), 1, 'sadd array');
  eq(await r.srem(s, 'e', 'd', 'nope'), 2, 'srem');
  eq(sorted(await r.smembers(s)), ['a', 'b', 'c'], 'smembers');
  eq(await r.smembers(k('nope')), [], 'smembers missing');
  eq(await r.sismember(s, 'a'), 1, 'sismember');
  eq(await r.sismember(s, 'z'), 0, 'sismember missing');
  eq(await r.smismember(s, 'a', 'z', 'c'), [1, 0, 1], 'smismember');
  eq(await r.scard(s), 3, 'scard');
  eq(await r.scard(k('nope')), 0, 'scard missing');
  eq(await r.type(s), 'set', 'type');
  eq(await r.sadd(k('ints'), '3', '1', '2'), 3, 'sadd integers');
  eq(sorted(await r.smembers(k('ints'))), ['1', '2', '3'], 'integer members');
  eq(await r.srem(s, 'a', 'b', 'c'), 3, 'srem all');
  eq(await r.exists(s), 0, 'empty set is deleted');
});

scenario('set: spop srandmember', async ({ r, k }) => {
  const s = k('s2');
  const all = ['m1', 'm2', 'm3', 'm4', 'm5'];
  await r.sadd(s, all);
  const one = await r.spop(s);
  assert.ok(all.includes(one), `spop ${one}`);
  const two = await r.spop(s, 2);
  eq(two.length, 2, 'spop count length');
  const rest = await r.smembers(s);
  eq(sorted([one, ...two, ...rest]), all, 'spop took members out');
  assert.ok(rest.includes(await r.srandmember(s)), 'srandmember');
  eq(await r.scard(s), 2, 'srandmember removed nothing');
  eq(sorted(await r.srandmember(s, 5)), sorted(rest), 'srandmember beyond size');
  const repeated = await r.srandmember(s, -6);
  eq(repeated.length, 6, 'srandmember negative count length');
  assert.ok(repeated.every((m) => rest.includes(m)), `srandmember -6: ${repeated}`);
  eq(sorted(await r.spop(s, 10)), sorted(rest), 'spop beyond size');
  eq(await r.exists(s), 0, 'spopped empty set is deleted');
  eq(await r.spop(s), null, 'spop missing');
  eq(await r.srandmember(s), null, 'srandmember missing');
  eq(await r.srandmember(s, 3), [], 'srandmember missing with count');
});

scenario('set: smove sinter sintercard sunion sdiff', async ({ r, k }) => {
  const [s1, s2, s3] = [k('s3'), k('s4'), k('s5')];
  await r.sadd(s1, 'a', 'b', 'c', 'd');
  await r.sadd(s2, 'c', 'd', 'e');
  await r.sadd(s3, 'd', 'f');
  eq(sorted(await r.sinter(s1, s2)), ['c', 'd'], 'sinter');
  eq(await r.sinter(s1, s2, s3), ['d'], 'sinter three');
  eq(await r.sinter(s1, k('nope')), [], 'sinter with missing');
  eq(await r.sintercard(2, s1, s2), 2, 'sintercard');
  eq(await r.sintercard(2, s1, s2, 'LIMIT', 1), 1, 'sintercard LIMIT');
  eq(sorted(await r.sunion(s1, s2, s3)), ['a', 'b', 'c', 'd', 'e', 'f'], 'sunion');
  eq(sorted(await r.sdiff(s1, s2)), ['a', 'b'], 'sdiff');
  eq(await r.sdiff(s1, s2, s3, k('nope')).then(sorted), ['a', 'b'], 'sdiff with missing');
  eq(await r.smove(s1, s2, 'a'), 1, 'smove');
  eq(await r.smove(s1, s2, 'nope'), 0, 'smove missing member');
  eq(await r.smove(s1, s2, 'c'), 1, 'smove member already in destination');
  eq(sorted(await r.smembers(s1)), ['b', 'd'], 'source after smove');
  eq(sorted(await r.smembers(s2)), ['a', 'c', 'd', 'e'], 'destination after smove');
});

scenario('set: sinterstore sunionstore sdiffstore', async ({ r, k }) => {
  const [s1, s2, dst] = [k('s6'), k('s7'), k('s8')];
  await r.sadd(s1, 'a', 'b', 'c');
  await r.sadd(s2, 'b', 'c', 'd');
  eq(await r.sinterstore(dst, s1, s2), 2, 'sinterstore');
  eq(sorted(await r.smembers(dst)), ['b', 'c'], 'sinterstore result');
  eq(await r.sunionstore(dst, s1, s2), 4, 'sunionstore overwrites');
  eq(sorted(await r.smembers(dst)), ['a', 'b', 'c', 'd'], 'sunionstore result');
  eq(await r.sdiffstore(dst, s1, s2), 1, 'sdiffstore');
  eq(await r.smembers(dst), ['a'], 'sdiffstore result');
  await r.set(k('str'), 'v');
  eq(await r.sunionstore(k('str'), s1), 3, 'store over a string key');
  eq(await r.type(k('str')), 'set', 'destination became a set');
  eq(await r.sinterstore(dst, s1, k('nope')), 0, 'empty sinterstore');
  eq(await r.exists(dst), 0, 'empty result deletes the destination');
});

scenario('set: sscan', async ({ r, k }) => {
  const s = k('s9');
  const all = [...Array(300).keys()].map((i) => `member${i}`);
  await r.sadd(s, all);
  eq(unique(await scanAll((cursor) => r.sscan(s, cursor, 'COUNT', 13))), sorted(all), 'sscan');
  eq(unique(await scanAll((cursor) => r.sscan(s, cursor, 'MATCH', '*7', 'COUNT', 40))),
    sorted(all.filter((m) => m.endsWith('7'))), 'sscan MATCH');
  eq(unique(await drain(r.sscanStream(s, { match: 'member1*' }))),
    sorted(all.filter((m) => m.startsWith('member1'))), 'sscanStream');
  await r.sadd(k('ints9'), '1', '2', '3');
  eq(unique(await scanAll((cursor) => r.sscan(k('ints9'), cursor))), ['1', '2', '3'],
    'sscan small integer set');
});

module.exports = { scenarios };
