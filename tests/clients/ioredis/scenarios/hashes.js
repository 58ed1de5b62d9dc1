// Hashes.
'use strict';

const {
  assert, eq, sorted, unique, rejects, pairs, drain, scanAll,
} = require('./helpers');

const scenarios = [];
const scenario = (name, fn) => scenarios.push({ name, fn });

scenario('hash: hset hget hmget hgetall hdel', async ({ r, k }) => {
  const h = k('h');
  eq(await r.hset(h, 'f1', 'v1', 'f2', 'v2'), 2, 'hset pairs');
  eq(await r.hset(h, { f2: 'v2b', f3: 'v3' }), 1, 'hset object (one new field)');
  eq(await r.hget(h, 'f2'), 'v2b', 'hget');
  eq(await r.hget(h, 'nope'), null, 'hget missing field');
  eq(await r.hget(k('nope'), 'f1'), null, 'hget missing key');
  eq(await r.hmget(h, 'f1', 'nope', 'f3'), ['v1', null, 'v3'], 'hmget');
  eq(await r.hmset(h, 'f4', 'v4'), 'OK', 'hmset');
  eq(await r.hgetall(h), { f1: 'v1', f2: 'v2b', f3: 'v3', f4: 'v4' }, 'hgetall');
  eq(await r.hgetall(k('nope')), {}, 'hgetall missing');
  eq(await r.type(h), 'hash', 'type');
  eq(await r.hdel(h, 'f4', 'nope', 'f3'), 2, 'hdel');
  eq(await r.hdel(h, 'f1', 'f2'), 2, 'hdel the rest');
  eq(await r.exists(h), 0, 'empty hash is deleted');
});

scenario('hash: hexists hlen hkeys hvals hstrlen hsetnx', async ({ r, k }) => {
  const h = k('h2');
  await r.hset(h, 'a', '1', 'b', '22', 'c', '333');
  eq(await r.hexists(h, 'a'), 1, 'hexists');
  eq(await r.hexists(h, 'z'), 0, 'hexists missing');
  eq(await r.hlen(h), 3, 'hlen');
  eq(await r.hlen(k('nope')), 0, 'hlen missing');
  eq(sorted(await r.hkeys(h)), ['a', 'b', 'c'], 'hkeys');
  eq(sorted(await r.hvals(h)), ['1', '22', '333'], 'hvals');
  eq(await r.hkeys(k('nope')), [], 'hkeys missing');
  eq(await r.hstrlen(h, 'c'), 3, 'hstrlen');
  eq(await r.hstrlen(h, 'z'), 0, 'hstrlen missing');
  eq(await r.hsetnx(h, 'a', 'x'), 0, 'hsetnx existing');
  eq(await r.hsetnx(h, 'd', '4'), 1, 'hsetnx new');
  eq(await r.hget(h, 'a'), '1', 'hsetnx kept the value');
});

scenario('hash: hincrby hincrbyfloat', async ({ r, k }) => {
  const h = k('h3');
  eq(await r.hincrby(h, 'n', 5), 5, 'hincrby creates');
  eq(await r.hincrby(h, 'n', -7), -2, 'hincrby negative');
  eq(await r.hincrbyfloat(h, 'f', '10.5'), '10.5', 'hincrbyfloat creates');
  eq(await r.hincrbyfloat(h, 'f', '0.1'), '10.6', 'hincrbyfloat');
  eq(await r.hincrbyfloat(h, 'n', '1.5'), '-0.5', 'hincrbyfloat on an integer');
  await r.hset(h, 't', 'text');
  await rejects(r.hincrby(h, 't', 1), 'ERR hash value is not an integer', 'hincrby on text');
  await rejects(r.hincrby(h, 'n', 1), 'ERR hash value is not an integer', 'hincrby on a float');
  await rejects(r.hincrbyfloat(h, 't', 1), 'ERR hash value is not a float',
    'hincrbyfloat on text');
});

scenario('hash: hrandfield', async ({ r, k }) => {
  const h = k('h4');
  const all = { a: '1', b: '2', c: '3' };
  await r.hset(h, all);
  assert.ok(Object.keys(all).includes(await r.hrandfield(h)), 'hrandfield one');
  const two = await r.hrandfield(h, 2);
  eq(two.length, 2, 'hrandfield 2 length');
  eq(new Set(two).size, 2, 'hrandfield 2 distinct');
  eq(sorted(await r.hrandfield(h, 10)), ['a', 'b', 'c'], 'hrandfield beyond size');
  const repeated = await r.hrandfield(h, -7);
  eq(repeated.length, 7, 'hrandfield negative count length');
  assert.ok(repeated.every((f) => f in all), `hrandfield -7: ${repeated}`);
  for (const [field, value] of pairs(await r.hrandfield(h, 2, 'WITHVALUES'))) {
    eq(value, all[field], `WITHVALUES ${field}`);
  }
  eq(await r.hrandfield(k('nope')), null, 'hrandfield missing');
  eq(await r.hrandfield(k('nope'), 3), [], 'hrandfield missing with count');
});

scenario('hash: hscan', async ({ r, k }) => {
  const h = k('h5');
  const want = {};
  for (let i = 0; i < 300; i += 1) want[`field${i}`] = `v${i}`;
  await r.hset(h, want);
  const flat = await scanAll((cursor) => r.hscan(h, cursor, 'COUNT', 17));
  eq(Object.fromEntries(pairs(flat)), want, 'hscan');
  const matched = await scanAll((cursor) => r.hscan(h, cursor, 'MATCH', 'field1?', 'COUNT', 50));
  eq(unique(pairs(matched).map(([f]) => f)),
    sorted([...Array(10).keys()].map((i) => `field1${i}`)), 'hscan MATCH');
  const streamed = await drain(r.hscanStream(h, { match: 'field2*', count: 20 }));
  eq(unique(pairs(streamed).map(([f]) => f)),
    sorted(Object.keys(want).filter((f) => f.startsWith('field2'))), 'hscanStream');
  eq(await r.hscan(k('nope'), 0), ['0', []], 'hscan missing');
});

module.exports = { scenarios };
