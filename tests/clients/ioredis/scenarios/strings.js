// Strings, counters and key expiry.
'use strict';

const { assert, eq, rejects } = require('./helpers');

const NOT_INTEGER = 'ERR value is not an integer or out of range';

const scenarios = [];
const scenario = (name, fn) => scenarios.push({ name, fn });

scenario('connection: ping echo', async ({ r }) => {
  eq(await r.ping(), 'PONG', 'ping');
  eq(await r.ping('hello'), 'hello', 'ping with message');
  eq(await r.echo('a b\r\nc'), 'a b\r\nc', 'echo');
});

scenario('string: set get with NX XX GET', async ({ r, k }) => {
  const key = k('s');
  eq(await r.get(key), null, 'get missing');
  eq(await r.set(key, 'v1'), 'OK', 'set');
  eq(await r.get(key), 'v1', 'get');
  eq(await r.set(key, 'v2', 'NX'), null, 'set NX on existing');
  eq(await r.get(key), 'v1', 'after refused NX');
  eq(await r.set(k('s-absent'), 'v', 'XX'), null, 'set XX on missing');
  eq(await r.exists(k('s-absent')), 0, 'exists after refused XX');
  eq(await r.set(key, 'v2', 'XX'), 'OK', 'set XX on existing');
  eq(await r.set(key, 'v3', 'GET'), 'v2', 'set GET');
  eq(await r.setnx(key, 'x'), 0, 'setnx on existing');
  eq(await r.getset(key, 'v4'), 'v3', 'getset');
  eq(await r.append(key, '+tail'), 7, 'append');
  eq(await r.strlen(key), 7, 'strlen');
  eq(await r.getrange(key, 0, 1), 'v4', 'getrange');
  eq(await r.setrange(key, 1, 'X'), 7, 'setrange');
  eq(await r.get(key), 'vX+tail', 'after setrange');
  eq(await r.type(key), 'string', 'type');
  eq(await r.type(k('nope')), 'none', 'type of missing');
});

scenario('string: binary values', async ({ r, k }) => {
  const blob = Buffer.concat([Buffer.from([...Array(256).keys()]), Buffer.from('\r\n$-1\r\n')]);
  eq(await r.set(k('blob'), blob), 'OK', 'set buffer');
  eq(await r.getBuffer(k('blob')), blob, 'getBuffer');
  eq(await r.strlen(k('blob')), blob.length, 'strlen');
  eq(await r.set(k('empty'), ''), 'OK', 'set empty');
  eq(await r.get(k('empty')), '', 'get empty');
  const text = 'héllo ✓';
  await r.set(k('ключ ✓'), text);
  eq(await r.get(k('ключ ✓')), text, 'unicode key and value');
});

scenario('string: counters', async ({ r, k }) => {
  const n = k('n');
  eq(await r.incr(n), 1, 'incr creates');
  eq(await r.incrby(n, 10), 11, 'incrby');
  eq(await r.decr(n), 10, 'decr');
  eq(await r.decrby(n, 13), -3, 'decrby below zero');
  eq(await r.incrbyfloat(n, '0.5'), '-2.5', 'incrbyfloat');
  await rejects(r.incr(n), NOT_INTEGER, 'incr on a float');
  await r.set(n, '9223372036854775807');
  await rejects(r.incr(n), 'ERR increment or decrement would overflow', 'incr overflow');
  await r.set(n, 'abc');
  await rejects(r.incrby(n, 1), NOT_INTEGER, 'incrby on text');
  await rejects(r.incrbyfloat(n, 1), 'ERR value is not a valid float', 'incrbyfloat on text');
});

scenario('string: mset mget msetnx', async ({ r, k }) => {
  eq(await r.mset(k('a'), '1', k('b'), '2'), 'OK', 'mset pairs');
  eq(await r.mset({ [k('c')]: '3' }), 'OK', 'mset object');
  eq(await r.mget(k('a'), k('b'), k('nope'), k('c')), ['1', '2', null, '3'], 'mget');
  eq(await r.mget([k('c'), k('a')]), ['3', '1'], 'mget array');
  eq(await r.msetnx(k('d'), '4', k('a'), 'x'), 0, 'msetnx with one existing');
  eq(await r.exists(k('d')), 0, 'msetnx wrote nothing');
  eq(await r.msetnx(k('d'), '4', k('e'), '5'), 1, 'msetnx all new');
  eq(await r.exists(k('a'), k('d'), k('e'), k('nope'), k('a')), 4, 'exists counts repeats');
  eq(await r.del(k('a'), k('b'), k('nope')), 2, 'del');
  eq(await r.mget(k('a'), k('b')), [null, null], 'mget after del');
});

scenario('string: expire ttl persist', async ({ r, k }) => {
  const key = k('ttl');
  eq(await r.ttl(k('nope')), -2, 'ttl missing');
  eq(await r.expire(k('nope'), 100), 0, 'expire missing');
  await r.set(key, 'v');
  eq(await r.ttl(key), -1, 'ttl without expiry');
  eq(await r.expire(key, 100), 1, 'expire');
  const ttl = await r.ttl(key);
  assert.ok(ttl >= 99 && ttl <= 100, `ttl ${ttl}`);
  const pttl = await r.pttl(key);
  assert.ok(pttl > 98000 && pttl <= 100000, `pttl ${pttl}`);
  eq(await r.persist(key), 1, 'persist');
  eq(await r.persist(key), 0, 'persist without expiry');
  eq(await r.ttl(key), -1, 'ttl after persist');
  eq(await r.set(key, 'v', 'EX', 50), 'OK', 'set EX');
  const exTtl = await r.ttl(key);
  assert.ok(exTtl >= 49 && exTtl <= 50, `ttl after set EX ${exTtl}`);
  eq(await r.set(key, 'w', 'KEEPTTL'), 'OK', 'set KEEPTTL');
  assert.ok((await r.ttl(key)) > 0, 'KEEPTTL kept the expiry');
  eq(await r.set(key, 'x'), 'OK', 'plain set');
  eq(await r.ttl(key), -1, 'plain set clears the expiry');
  eq(await r.pexpire(key, 150), 1, 'pexpire');
  await new Promise((resolve) => setTimeout(resolve, 400));
  eq(await r.get(key), null, 'expired');
  eq(await r.ttl(key), -2, 'ttl after expiry');
});

module.exports = { scenarios };
