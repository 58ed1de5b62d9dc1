// Lists.
'use strict';

const { eq, rejects } = require('./helpers');

const scenarios = [];
const scenario = (name, fn) => scenarios.push({ name, fn });

scenario('list: push pushx llen lrange lindex', async ({ r, k }) => {
  const l = k('l');
  eq(await r.rpush(l, 'a', 'b', 'c'), 3, 'rpush');
  eq(await r.lpush(l, 'y', 'z'), 5, 'lpush (each to the head in turn)');
  eq(await r.lpushx(k('nope'), 'x'), 0, 'lpushx missing');
  eq(await r.rpushx(k('nope'), 'x'), 0, 'rpushx missing');
  eq(await r.exists(k('nope')), 0, 'pushx created nothing');
  eq(await r.rpushx(l, 'd'), 6, 'rpushx');
  eq(await r.lpushx(l, 'w'), 7, 'lpushx');
  eq(await r.llen(l), 7, 'llen');
  eq(await r.llen(k('nope')), 0, 'llen missing');
  eq(await r.lrange(l, 0, -1), ['w', 'z', 'y', 'a', 'b', 'c', 'd'], 'lrange all');
  eq(await r.lrange(l, -2, 100), ['c', 'd'], 'lrange clamped');
  eq(await r.lrange(l, 5, 2), [], 'lrange empty');
  eq(await r.lindex(l, 0), 'w', 'lindex');
  eq(await r.lindex(l, -1), 'd', 'lindex negative');
  eq(await r.lindex(l, 99), null, 'lindex out of range');
  eq(await r.type(l), 'list', 'type');
});

scenario('list: lset linsert lrem ltrim', async ({ r, k }) => {
  const l = k('l2');
  await r.rpush(l, 'x', 'a', 'x', 'b', 'x', 'c');
  eq(await r.lset(l, 1, 'A'), 'OK', 'lset');
  eq(await r.lset(l, -1, 'C'), 'OK', 'lset negative');
  await rejects(r.lset(l, 99, 'v'), 'ERR index out of range', 'lset out of range');
  await rejects(r.lset(k('nope'), 0, 'v'), 'ERR no such key', 'lset missing');
  eq(await r.linsert(l, 'BEFORE', 'b', 'pre'), 7, 'linsert BEFORE');
  eq(await r.linsert(l, 'AFTER', 'b', 'post'), 8, 'linsert AFTER');
  eq(await r.linsert(l, 'AFTER', 'nope', 'v'), -1, 'linsert pivot missing');
  eq(await r.linsert(k('nope'), 'AFTER', 'a', 'v'), 0, 'linsert key missing');
  eq(await r.lrange(l, 0, -1), ['x', 'A', 'x', 'pre', 'b', 'post', 'x', 'C'], 'after linsert');
  eq(await r.lrem(l, -1, 'x'), 1, 'lrem from the tail');
  eq(await r.lrem(l, 1, 'x'), 1, 'lrem from the head');
  eq(await r.lrange(l, 0, -1), ['A', 'x', 'pre', 'b', 'post', 'C'], 'after lrem');
  eq(await r.lrem(l, 0, 'x'), 1, 'lrem all');
  eq(await r.lrem(l, 0, 'nope'), 0, 'lrem none');
  eq(await r.ltrim(l, 1, -2), 'OK', 'ltrim');
  eq(await r.lrange(l, 0, -1), ['pre', 'b', 'post'], 'after ltrim');
  eq(await r.ltrim(l, 5, 10), 'OK', 'ltrim to nothing');
  eq(await r.exists(l), 0, 'empty list is deleted');
});

scenario('list: lpos', async ({ r, k }) => {
  const l = k('l3');
  await r.rpush(l, 'a', 'b', 'c', 'a', 'b', 'c', 'b');
  eq(await r.lpos(l, 'b'), 1, 'lpos');
  eq(await r.lpos(l, 'b', 'RANK', 2), 4, 'lpos RANK');
  eq(await r.lpos(l, 'b', 'RANK', -1), 6, 'lpos RANK negative');
  eq(await r.lpos(l, 'b', 'COUNT', 0), [1, 4, 6], 'lpos COUNT 0');
  eq(await r.lpos(l, 'b', 'COUNT', 2, 'RANK', -1), [6, 4], 'lpos COUNT RANK');
  eq(await r.lpos(l, 'c', 'MAXLEN', 2), null, 'lpos MAXLEN');
  eq(await r.lpos(l, 'nope'), null, 'lpos missing element');
  eq(await r.lpos(l, 'nope', 'COUNT', 0), [], 'lpos missing with COUNT');
  await rejects(r.lpos(l, 'a', 'RANK', 0), /^ERR RANK can't be zero/, 'lpos RANK 0');
});

scenario('list: lpop rpop with count', async ({ r, k }) => {
  const l = k('l4');
  await r.rpush(l, '1', '2', '3', '4', '5', '6');
  eq(await r.lpop(l), '1', 'lpop');
  eq(await r.rpop(l), '6', 'rpop');
  eq(await r.lpop(l, 2), ['2', '3'], 'lpop count');
  eq(await r.rpop(l, 1), ['5'], 'rpop count 1');
  eq(await r.rpop(l, 10), ['4'], 'rpop count beyond length');
  eq(await r.exists(l), 0, 'popped empty list is deleted');
  eq(await r.lpop(l), null, 'lpop missing');
  eq(await r.lpop(l, 2), null, 'lpop missing with count');
});

scenario('list: lmove rpoplpush lmpop', async ({ r, k }) => {
  const [src, dst] = [k('l5'), k('l6')];
  await r.rpush(src, 'a', 'b', 'c', 'd');
  eq(await r.lmove(src, dst, 'LEFT', 'RIGHT'), 'a', 'lmove LEFT RIGHT');
  eq(await r.lmove(src, dst, 'RIGHT', 'LEFT'), 'd', 'lmove RIGHT LEFT');
  eq(await r.rpoplpush(src, dst), 'c', 'rpoplpush');
  eq(await r.lrange(dst, 0, -1), ['c', 'd', 'a'], 'destination');
  eq(await r.lmove(src, src, 'LEFT', 'RIGHT'), 'b', 'lmove onto itself');
  eq(await r.lmove(k('nope'), dst, 'LEFT', 'LEFT'), null, 'lmove missing');
  eq(await r.rpoplpush(k('nope'), dst), null, 'rpoplpush missing');
  eq(await r.lmpop(2, k('nope'), dst, 'LEFT'), [dst, ['c']], 'lmpop one');
  eq(await r.lmpop(2, k('nope'), dst, 'RIGHT', 'COUNT', 5), [dst, ['a', 'd']], 'lmpop COUNT');
  eq(await r.lmpop(2, k('nope'), dst, 'LEFT'), null, 'lmpop all empty');
  await rejects(r.lmpop(1, src, 'UP'), /^ERR syntax error/, 'lmpop bad direction');
});

scenario('list: long list', async ({ r, k }) => {
  const l = k('long');
  const count = 1000;
  const items = [...Array(count).keys()].map((i) => `item-${i}-${'x'.repeat(i % 70)}`);
  eq(await r.rpush(l, items), count, 'rpush 1000');
  eq(await r.lindex(l, 500), items[500], 'lindex middle');
  eq(await r.lrange(l, 498, 502), items.slice(498, 503), 'lrange middle');
  eq(await r.lrange(l, -3, -1), items.slice(-3), 'lrange tail');
  eq(await r.linsert(l, 'AFTER', items[700], 'inserted'), count + 1, 'linsert in the middle');
  eq(await r.lindex(l, 701), 'inserted', 'inserted position');
  eq(await r.lset(l, 900, 'replaced'), 'OK', 'lset in the middle');
  eq(await r.lrem(l, 0, 'inserted'), 1, 'lrem in the middle');
  eq(await r.ltrim(l, 100, 899), 'OK', 'ltrim');
  eq(await r.llen(l), 800, 'llen after ltrim');
  // lset (index 900 of 1001) replaced items[899], the last element ltrim keeps.
  eq(await r.lrange(l, 0, -1), [...items.slice(100, 899), 'replaced'], 'contents after ltrim');
  eq(await r.lpos(l, items[250]), 150, 'lpos after ltrim');
  eq(await r.rpop(l, 2), ['replaced', items[898]], 'rpop count');
});

module.exports = { scenarios };
