// node-redis's client-side cache (RESP3 `clientSideCache`: CLIENT TRACKING on its connection)
// against one Redis-protocol server.
//
//   node cache.js HOST:PORT KEY_PREFIX
//
// A GET is served from node-redis's local cache until another client's write (here a second
// client, which may be on another worker) invalidates it, then read again from the server; a
// FLUSHALL empties the cache. Prints "ok NAME" or "FAIL NAME: ..." per scenario, then
// "N passed, N failed"; exits 1 when any failed. Run by tests/conformance/test_redis_tracking.py.
'use strict';

const assert = require('node:assert/strict');
const { createClient } = require('redis');

const [hostPort, prefix] = process.argv.slice(2);
if (!hostPort || !prefix) {
  console.error('usage: node cache.js HOST:PORT KEY_PREFIX');
  process.exit(2);
}
const [host, port] = hostPort.split(':');
const socket = { host, port: Number(port), connectTimeout: 3000 };
const DEADLINE_MS = 5000;

async function until(what, check) {
  const end = Date.now() + DEADLINE_MS;
  for (;;) {
    if (await check()) return;
    if (Date.now() > end) throw new Error(`${what}: not within ${DEADLINE_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function scenario(name, body) {
  const cached = createClient({ socket, RESP: 3, clientSideCache: { maxEntries: 1000 } });
  const writer = createClient({ socket });
  try {
    await cached.connect();
    await writer.connect();
    await body(cached, writer, cached.clientSideCache);
    console.log(`ok ${name}`);
    return true;
  } catch (err) {
    console.log(`FAIL ${name}: ${err && err.stack ? err.stack : err}`);
    return false;
  } finally {
    await cached.quit().catch(() => {});
    await writer.quit().catch(() => {});
  }
}

async function main() {
  const key = `${prefix}:csc`;
  const results = [];
  results.push(await scenario('a read is cached, then invalidated by another client', async (cached, writer, cache) => {
    await writer.set(key, 'v1');
    assert.equal(await cached.get(key), 'v1');
    assert.equal(await cached.get(key), 'v1');
    assert.equal(cache.stats().hitCount, 1, 'second GET served locally');
    assert.equal(cache.size(), 1);
    await writer.set(key, 'v2');
    await until('invalidation', () => cache.size() === 0);
    assert.equal(await cached.get(key), 'v2');
    assert.equal(cache.stats().missCount, 2);
  }));
  results.push(await scenario('FLUSHALL empties the cache', async (cached, writer, cache) => {
    await writer.set(`${key}:a`, '1');
    await writer.set(`${key}:b`, '2');
    assert.deepEqual(await cached.mGet([`${key}:a`, `${key}:b`]), ['1', '2']);
    assert.equal(await cached.get(`${key}:a`), '1');
    assert.ok(cache.size() >= 2, `size ${cache.size()}`);
    await writer.flushAll();
    await until('flush invalidation', () => cache.size() === 0);
    assert.equal(await cached.get(`${key}:a`), null);
  }));
  const passed = results.filter(Boolean).length;
  console.log(`${passed} passed, ${results.length - passed} failed`);
  process.exit(passed === results.length ? 0 : 1);
}

main();
