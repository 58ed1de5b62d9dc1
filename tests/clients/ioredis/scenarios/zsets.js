// Sorted sets.
'use strict';

const {
  assert, eq, sorted, unique, rejects, pairs, drain, scanAll,
} = require('./helpers');

const scenarios = [];
const scenario = (name, fn) => scenarios.push({ name, fn });

scenario('zset: zadd options zincrby zscore zmscore zcard zrem', async ({ r, k }) => {
  const z = k('z');
  eq(await r.zadd(z, 1, 'a', 2, 'b', 3, 'c'), 3, 'zadd');
  eq(await r.zadd(z, 'NX', 10, 'a', 4, 'd'), 1, 'zadd NX');
  eq(await r.zscore(z, 'a'), '1', 'NX kept the score');
  eq(await r.zadd(z, 'XX', 5, 'a', 9, 'new'), 0, 'zadd XX');
  eq(await r.zscore(z, 'new'), null, 'XX added nothing');
  eq(await r.zscore(z, 'a'), '5', 'XX updated');
  eq(await r.zadd(z, 'XX', 'CH', 6, 'a', 2, 'b'), 1, 'zadd XX CH counts changes');
  eq(await r.zadd(z, 'GT', 'CH', 1, 'a', 7, 'c'), 1, 'zadd GT');
  eq(await r.zadd(z, 'LT', 'CH', 3, 'a', 8, 'd'), 1, 'zadd LT');
  eq(await r.zadd(z, 'INCR', 1.5, 'b'), '3.5', 'zadd INCR');
  eq(await r.zadd(z, 'NX', 'INCR', 1, 'b'), null, 'zadd NX INCR on existing');
  eq(await r.zincrby(z, 2, 'a'), '5', 'zincrby');
  eq(await r.zincrby(z, '-0.25', 'new'), '-0.25', 'zincrby creates');
  eq(await r.zadd(z, '+inf', 'top', '-inf', 'bottom'), 2, 'zadd infinities');
  eq(await r.zmscore(z, 'a', 'nope', 'top', 'bottom'), ['5', null, 'inf', '-inf'], 'zmscore');
  eq(await r.zcard(z), 7, 'zcard');
  eq(await r.zcard(k('nope')), 0, 'zcard missing');
  eq(await r.zrem(z, 'top', 'bottom', 'nope'), 2, 'zrem');
  eq(await r.zrange(z, 0, -1, 'WITHSCORES'),
    ['new', '-0.25', 'b', '3.5', 'd', '4', 'a', '5', 'c', '7'], 'final scores');
  eq(await r.type(z), 'zset', 'type');
  await rejects(r.zadd(z, 'NX', 'XX', 1, 'a'),
    'ERR XX and NX options at the same time are not compatible', 'zadd NX XX');
  await rejects(r.zadd(z, 'nan', 'a'), 'ERR value is not a valid float', 'zadd bad score');
  eq(await r.zrem(z, 'new', 'b', 'd', 'a', 'c'), 5, 'zrem all');
  eq(await r.exists(z), 0, 'empty zset is deleted');
});

scenario('zset: score formatting and ties', async ({ r, k }) => {
  const z = k('zf');
  await r.zadd(z, '0.1', 'tenth', '1e20', 'big', '-0', 'negzero', '3.0', 'three', '1.5e-7', 'tiny');
  eq(await r.zmscore(z, 'tenth', 'big', 'negzero', 'three', 'tiny'),
    ['0.10000000000000001', '1e+20', '0', '3', '1.4999999999999999e-07'],
    'scores as 7.0 prints them (%.17g; -0 comes back as 0)');
  eq(await r.zincrby(z, '0.2', 'tenth'), '0.30000000000000004', 'zincrby sum of binary fractions');
  await r.zadd(k('zt'), 1, 'b', 1, 'c', 1, 'a', 0, 'z', 2, 'A');
  eq(await r.zrange(k('zt'), 0, -1), ['z', 'a', 'b', 'c', 'A'], 'equal scores ordered by member');
  eq(await r.zrange(k('zt'), 0, -1, 'REV'), ['A', 'c', 'b', 'a', 'z'], 'REV reverses the ties');
  eq(await r.zrank(k('zt'), 'c'), 3, 'zrank within ties');
  await rejects(r.zincrby(z, '+inf', 'big').then(() => r.zincrby(z, '-inf', 'big')),
    'ERR resulting score is not a number (NaN)', 'inf plus -inf');
});

// The shared sorted set of the range scenarios: a1 b2 c3 d4 e5 f6.
async function sixMembers(r, key) {
  await r.zadd(key, 1, 'a', 2, 'b', 3, 'c', 4, 'd', 5, 'e', 6, 'f');
}

scenario('zset: zcount zrank zrevrank zrange forms', async ({ r, k }) => {
  const z = k('z2');
  await sixMembers(r, z);
  eq(await r.zcount(z, '-inf', '+inf'), 6, 'zcount all');
  eq(await r.zcount(z, '(1', 3), 2, 'zcount exclusive');
  eq(await r.zrank(z, 'c'), 2, 'zrank');
  eq(await r.zrevrank(z, 'c'), 3, 'zrevrank');
  eq(await r.zrank(z, 'nope'), null, 'zrank missing');
  eq(await r.zrange(z, 0, 2), ['a', 'b', 'c'], 'zrange by rank');
  eq(await r.zrange(z, -2, -1, 'WITHSCORES'), ['e', '5', 'f', '6'], 'zrange WITHSCORES');
  eq(await r.zrange(z, 0, 1, 'REV'), ['f', 'e'], 'zrange REV');
  eq(await r.zrange(z, '(2', 5, 'BYSCORE'), ['c', 'd', 'e'], 'zrange BYSCORE');
  eq(await r.zrange(z, '+inf', '-inf', 'BYSCORE', 'REV', 'LIMIT', 1, 2, 'WITHSCORES'),
    ['e', '5', 'd', '4'], 'zrange BYSCORE REV LIMIT WITHSCORES');
  eq(await r.zrange(z, 5, 1, 'BYSCORE'), [], 'zrange BYSCORE empty');
  eq(await r.zrangebyscore(z, 2, '(4'), ['b', 'c'], 'zrangebyscore');
  eq(await r.zrangebyscore(z, '-inf', '+inf', 'WITHSCORES', 'LIMIT', 4, 10),
    ['e', '5', 'f', '6'], 'zrangebyscore LIMIT');
  eq(await r.zrevrangebyscore(z, '+inf', '(4'), ['f', 'e'], 'zrevrangebyscore');
  eq(await r.zrevrange(z, 0, 0, 'WITHSCORES'), ['f', '6'], 'zrevrange');
  await rejects(r.zrange(z, 0, -1, 'LIMIT', 0, 1),
    /^ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX/,
    'zrange LIMIT by rank');
});

scenario('zset: lex ranges', async ({ r, k }) => {
  const z = k('z3');
  await r.zadd(z, 0, 'a', 0, 'b', 0, 'c', 0, 'd', 0, 'e');
  eq(await r.zrange(z, '[b', '(d', 'BYLEX'), ['b', 'c'], 'zrange BYLEX');
  eq(await r.zrange(z, '+', '-', 'BYLEX', 'REV', 'LIMIT', 1, 2), ['d', 'c'], 'BYLEX REV LIMIT');
  eq(await r.zrangebylex(z, '-', '[c'), ['a', 'b', 'c'], 'zrangebylex');
  eq(await r.zrevrangebylex(z, '(c', '-'), ['b', 'a'], 'zrevrangebylex');
  eq(await r.zlexcount(z, '[b', '[d'), 3, 'zlexcount');
  eq(await r.zlexcount(z, '-', '+'), 5, 'zlexcount all');
  await rejects(r.zrangebylex(z, 'b', 'd'), 'ERR min or max not valid string range item',
    'bad lex range');
  eq(await r.zremrangebylex(z, '[a', '(c'), 2, 'zremrangebylex');
  eq(await r.zrange(z, 0, -1), ['c', 'd', 'e'], 'after zremrangebylex');
});

scenario('zset: zrangestore zremrangebyrank zremrangebyscore', async ({ r, k }) => {
  const [z, dst] = [k('z4'), k('z5')];
  await sixMembers(r, z);
  eq(await r.zrangestore(dst, z, 1, 3), 3, 'zrangestore');
  eq(await r.zrange(dst, 0, -1, 'WITHSCORES'), ['b', '2', 'c', '3', 'd', '4'], 'stored');
  eq(await r.zrangestore(dst, z, 5, '(2', 'BYSCORE', 'REV', 'LIMIT', 0, 2), 2,
    'zrangestore BYSCORE REV LIMIT');
  eq(await r.zrange(dst, 0, -1), ['d', 'e'], 'stored in score order');
  eq(await r.zrangestore(dst, z, 10, 20), 0, 'empty zrangestore');
  eq(await r.exists(dst), 0, 'empty zrangestore deletes the destination');
  eq(await r.zremrangebyrank(z, 0, 1), 2, 'zremrangebyrank');
  eq(await r.zremrangebyscore(z, '(3', 5), 2, 'zremrangebyscore');
  eq(await r.zrange(z, 0, -1), ['c', 'f'], 'after removals');
});

scenario('zset: zpopmin zpopmax zmpop zrandmember', async ({ r, k }) => {
  const z = k('z6');
  await sixMembers(r, z);
  eq(await r.zpopmin(z), ['a', '1'], 'zpopmin');
  eq(await r.zpopmax(z, 2), ['f', '6', 'e', '5'], 'zpopmax count');
  eq(await r.zmpop(2, k('nope'), z, 'MIN'), [z, [['b', '2']]], 'zmpop MIN');
  eq(await r.zmpop(1, z, 'MAX', 'COUNT', 5), [z, [['d', '4'], ['c', '3']]], 'zmpop MAX COUNT');
  eq(await r.zmpop(1, z, 'MIN'), null, 'zmpop empty');
  eq(await r.zpopmin(z), [], 'zpopmin missing');
  await sixMembers(r, z);
  const scores = { a: '1', b: '2', c: '3', d: '4', e: '5', f: '6' };
  assert.ok(await r.zrandmember(z) in scores, 'zrandmember');
  const three = await r.zrandmember(z, 3);
  eq(new Set(three).size, 3, 'zrandmember 3 distinct');
  eq(sorted(await r.zrandmember(z, 10)), Object.keys(scores), 'zrandmember beyond size');
  eq((await r.zrandmember(z, -9)).length, 9, 'zrandmember negative count');
  for (const [member, score] of pairs(await r.zrandmember(z, 2, 'WITHSCORES'))) {
    eq(score, scores[member], `WITHSCORES ${member}`);
  }
  eq(await r.zrandmember(k('nope')), null, 'zrandmember missing');
});

scenario('zset: zunion zinter zdiff zintercard', async ({ r, k }) => {
  const [z1, z2] = [k('z7'), k('z8')];
  await r.zadd(z1, 1, 'a', 2, 'b', 3, 'c');
  await r.zadd(z2, 10, 'b', 20, 'c', 30, 'd');
  eq(await r.zunion(2, z1, z2, 'WITHSCORES'),
    ['a', '1', 'b', '12', 'c', '23', 'd', '30'], 'zunion');
  eq(await r.zunion(2, z1, z2, 'WEIGHTS', 2, 1, 'AGGREGATE', 'MAX', 'WITHSCORES'),
    ['a', '2', 'b', '10', 'c', '20', 'd', '30'], 'zunion WEIGHTS AGGREGATE MAX');
  eq(await r.zinter(2, z1, z2, 'AGGREGATE', 'MIN', 'WITHSCORES'),
    ['b', '2', 'c', '3'], 'zinter AGGREGATE MIN');
  eq(await r.zdiff(2, z1, z2, 'WITHSCORES'), ['a', '1'], 'zdiff');
  eq(await r.zintercard(2, z1, z2), 2, 'zintercard');
  eq(await r.zintercard(2, z1, z2, 'LIMIT', 1), 1, 'zintercard LIMIT');
  eq(await r.zinter(2, z1, k('nope')), [], 'zinter with missing');
});

// A plain set is an input of score 1 to every ZUNION/ZINTER/ZDIFF form.
scenario('zset: plain sets as inputs', async ({ r, k }) => {
  const [z, s, dst] = [k('z14'), k('z15'), k('z16')];
  await r.zadd(z, 10, 'b', 20, 'c', 30, 'd');
  await r.sadd(s, 'c', 'd', 'e');
  eq(await r.zinter(2, z, s, 'WITHSCORES'), ['c', '21', 'd', '31'], 'zinter with a plain set');
  eq(await r.zunion(2, z, s, 'WEIGHTS', 1, 5, 'WITHSCORES'),
    ['e', '5', 'b', '10', 'c', '25', 'd', '35'], 'zunion WEIGHTS with a plain set');
  eq(await r.zdiff(2, z, s), ['b'], 'zdiff minus a plain set');
  eq(await r.zunionstore(dst, 1, s), 3, 'zunionstore from a set alone');
  eq(await r.zrange(dst, 0, -1, 'WITHSCORES'), ['c', '1', 'd', '1', 'e', '1'], 'stored scores');
});

scenario('zset: zunionstore zinterstore zdiffstore', async ({ r, k }) => {
  const [z1, z2, dst] = [k('z10'), k('z11'), k('z12')];
  await r.zadd(z1, 1, 'a', 2, 'b', 3, 'c');
  await r.zadd(z2, 10, 'b', 20, 'c', 30, 'd');
  eq(await r.zunionstore(dst, 2, z1, z2, 'WEIGHTS', 2, 3), 4, 'zunionstore WEIGHTS');
  eq(await r.zrange(dst, 0, -1, 'WITHSCORES'),
    ['a', '2', 'b', '34', 'c', '66', 'd', '90'], 'zunionstore result');
  eq(await r.zinterstore(dst, 2, z1, z2, 'AGGREGATE', 'MAX'), 2, 'zinterstore MAX');
  eq(await r.zrange(dst, 0, -1, 'WITHSCORES'), ['b', '10', 'c', '20'], 'zinterstore result');
  eq(await r.zdiffstore(dst, 2, z2, z1), 1, 'zdiffstore');
  eq(await r.zrange(dst, 0, -1, 'WITHSCORES'), ['d', '30'], 'zdiffstore result');
  eq(await r.zinterstore(dst, 2, z1, k('nope')), 0, 'empty zinterstore');
  eq(await r.exists(dst), 0, 'empty result deletes the destination');
  await rejects(r.zunionstore(dst, 2, z1, z2, 'WEIGHTS', 1), /^ERR syntax error/,
    'too few weights');
});

scenario('zset: zscan', async ({ r, k }) => {
  const z = k('z13');
  const want = {};
  for (let i = 0; i < 300; i += 1) want[`m${i}`] = String(i / 4);
  await r.zadd(z, ...Object.entries(want).flatMap(([m, s]) => [s, m]));
  const flat = await scanAll((cursor) => r.zscan(z, cursor, 'COUNT', 11));
  eq(Object.fromEntries(pairs(flat)), want, 'zscan');
  const streamed = await drain(r.zscanStream(z, { match: 'm29*' }));
  eq(unique(pairs(streamed).map(([m]) => m)),
    sorted(Object.keys(want).filter((m) => m.startsWith('m29'))), 'zscanStream MATCH');
});

module.exports = { scenarios };
