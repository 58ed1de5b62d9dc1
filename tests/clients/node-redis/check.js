// node-redis (the `redis` package) against one Redis-protocol server, in RESP2 and in RESP3.
//
//   node check.js HOST:PORT KEY_PREFIX
//
// Runs every scenario once per protocol (node-redis sends HELLO 3 for RESP3), prints one line
// per scenario ("ok NAME" or "FAIL NAME: ..."), then "N passed, N failed", and exits 1 when any
// scenario failed. A failure does not stop the run. The typed scenarios go through node-redis's
// own methods, whose reply transforms give the same values in both protocols; the "raw reply
// types" scenarios send commands unchanged and check the RESP3 types themselves (map, set,
// double, null) as node-redis's parser decodes them. Expectations are redis-server 7.0's
// answers; tests/conformance/test_node_redis.py runs this against both servers.
'use strict';

const assert = require('node:assert/strict');
const { isDeepStrictEqual } = require('node:util');
const {
  createClient, RESP_TYPES, ErrorReply, WatchError,
} = require('redis');

const SCENARIO_TIMEOUT_MS = 10000;
const CONNECT_TIMEOUT_MS = 3000;
const WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value';
// Replies decoded with their RESP3 aggregate type kept (node-redis's default maps both maps and
// sets to plain objects and arrays).
const RAW = { typeMapping: { [RESP_TYPES.MAP]: Map, [RESP_TYPES.SET]: Set } };

const [hostPort, prefix] = process.argv.slice(2);
if (!hostPort || !prefix) {
  console.error('usage: node check.js HOST:PORT KEY_PREFIX');
  process.exit(2);
}

function show(value) {
  return JSON.stringify(value, (key, v) => {
    if (v instanceof Map) return { Map: [...v.entries()] };
    if (v instanceof Set) return { Set: [...v] };
    if (v instanceof Error) return `${v.constructor.name}: ${v.message}`;
    return v;
  });
}

function eq(actual, expected, what) {
  if (!isDeepStrictEqual(actual, expected)) {
    const message = `${what}: got ${show(actual)}, want ${show(expected)}`;
    throw new assert.AssertionError({ message });
  }
}

const sorted = (values) => [...values].sort();
// node-redis builds hash replies on null-prototype objects; compare their entries.
const plain = (object) => ({ ...object });

async function rejects(promise, message, what) {
  const err = await promise.then(() => null, (e) => e);
  assert.ok(err !== null, `${what}: no error`);
  assert.ok(err instanceof ErrorReply, `${what}: ${show(err)} is not an ErrorReply`);
  eq(err.message, message, what);
}

const scenarios = [];
const scenario = (name, fn) => scenarios.push({ name, fn });

scenario('strings and expiry', async ({ c, k }) => {
  eq(await c.set(k('s'), 'v1'), 'OK', 'set');
  eq(await c.get(k('s')), 'v1', 'get');
  eq(await c.get(k('nope')), null, 'get missing');
  eq(await c.set(k('s'), 'v2', { condition: 'NX' }), null, 'set NX on existing');
  eq(await c.incr(k('n')), 1, 'incr');
  eq(await c.incrByFloat(k('n'), 1.5), '2.5', 'incrByFloat');
  eq(await c.mSet([k('a'), '1', k('b'), '2']), 'OK', 'mSet');
  eq(await c.mGet([k('a'), k('nope'), k('b')]), ['1', null, '2'], 'mGet');
  eq(await c.expire(k('a'), 100), 1, 'expire');
  const ttl = await c.ttl(k('a'));
  assert.ok(ttl >= 99 && ttl <= 100, `ttl ${ttl}`);
  eq(await c.exists([k('a'), k('b'), k('nope')]), 2, 'exists');
});

scenario('hashes', async ({ c, k }) => {
  const h = k('h');
  eq(await c.hSet(h, { a: '1', b: '2' }), 2, 'hSet object');
  eq(plain(await c.hGetAll(h)), { a: '1', b: '2' }, 'hGetAll');
  eq(plain(await c.hGetAll(k('nope'))), {}, 'hGetAll missing');
  eq(await c.hmGet(h, ['a', 'nope']), ['1', null], 'hmGet');
  eq(await c.hIncrByFloat(h, 'f', 10.5), '10.5', 'hIncrByFloat');
  eq(await c.hExists(h, 'a'), 1, 'hExists');
  eq(sorted(await c.hKeys(h)), ['a', 'b', 'f'], 'hKeys');
  const pairs = await c.hRandFieldCountWithValues(h, 2);
  eq(pairs.length, 2, 'hRandFieldCountWithValues length');
  const all = await c.hGetAll(h);
  for (const { field, value } of pairs) eq(value, all[field], `random field ${field}`);
});

scenario('lists', async ({ c, k }) => {
  const l = k('l');
  eq(await c.rPush(l, ['a', 'b', 'c', 'd']), 4, 'rPush');
  eq(await c.lRange(l, 0, -1), ['a', 'b', 'c', 'd'], 'lRange');
  eq(await c.lPopCount(l, 2), ['a', 'b'], 'lPopCount');
  eq(await c.lmPop([k('nope'), l], 'RIGHT', { COUNT: 5 }), [l, ['d', 'c']], 'lmPop');
  eq(await c.lPop(l), null, 'lPop missing');
});

scenario('sets', async ({ c, k }) => {
  const [s1, s2] = [k('s1'), k('s2')];
  eq(await c.sAdd(s1, ['a', 'b', 'c']), 3, 'sAdd');
  await c.sAdd(s2, ['b', 'c', 'd']);
  eq(sorted(await c.sMembers(s1)), ['a', 'b', 'c'], 'sMembers');
  eq(sorted(await c.sInter([s1, s2])), ['b', 'c'], 'sInter');
  eq(sorted(await c.sUnion([s1, s2])), ['a', 'b', 'c', 'd'], 'sUnion');
  eq(await c.smIsMember(s1, ['a', 'z']), [1, 0], 'smIsMember');
  eq(await c.sInterCard([s1, s2]), 2, 'sInterCard');
  eq(sorted(await c.sPopCount(s1, 5)), ['a', 'b', 'c'], 'sPopCount');
  eq(await c.exists(s1), 0, 'popped set is deleted');
});

scenario('sorted sets', async ({ c, k }) => {
  const z = k('z');
  eq(await c.zAdd(z, [{ score: 1.5, value: 'a' }, { score: 2, value: 'b' },
    { score: 3, value: 'c' }]), 3, 'zAdd');
  eq(await c.zScore(z, 'a'), 1.5, 'zScore');
  eq(await c.zScore(z, 'nope'), null, 'zScore missing');
  eq(await c.zmScore(z, ['b', 'nope']), [2, null], 'zmScore');
  eq(await c.zIncrBy(z, 1, 'b'), 3, 'zIncrBy');
  eq(await c.zRangeWithScores(z, 0, -1),
    [{ value: 'a', score: 1.5 }, { value: 'b', score: 3 }, { value: 'c', score: 3 }],
    'zRangeWithScores');
  eq(await c.zRange(z, 2, 3, { BY: 'SCORE' }), ['b', 'c'], 'zRange BY SCORE');
  eq(await c.zUnionWithScores([z, z]), [{ value: 'a', score: 3 }, { value: 'b', score: 6 },
    { value: 'c', score: 6 }], 'zUnionWithScores');
  eq(await c.zPopMin(z), { value: 'a', score: 1.5 }, 'zPopMin');
  eq(await c.zmPop([k('nope'), z], 'MAX'), { key: z, members: [{ value: 'c', score: 3 }] },
    'zmPop');
});

scenario('transactions and pipelines', async ({ c, other, k }) => {
  const key = k('tx');
  eq(await c.multi().set(key, '1').incr(key).get(key).exec(), ['OK', 2, '2'], 'multi exec');
  eq(await c.multi().set(key, '5').incr(key).execAsPipeline(), ['OK', 6], 'execAsPipeline');
  const together = await Promise.all([c.set(k('p1'), 'a'), c.get(k('p1')), c.incr(k('p2'))]);
  eq(together, ['OK', 'a', 1], 'commands pipelined by Promise.all');
  // WATCH binds a connection, so it gets one of its own.
  const watcher = c.duplicate();
  await watcher.connect();
  try {
    await watcher.watch(key);
    await other.set(key, 'theirs');
    const err = await watcher.multi().set(key, 'mine').exec().then(() => null, (e) => e);
    assert.ok(err instanceof WatchError, `exec after a watched write: ${show(err)}`);
    eq(await c.get(key), 'theirs', 'the transaction did not run');
  } finally {
    watcher.destroy();
  }
});

scenario('WRONGTYPE errors', async ({ c, k }) => {
  await c.set(k('w'), 'text');
  await rejects(c.hGet(k('w'), 'f'), WRONGTYPE, 'hGet on a string');
  await rejects(c.lPush(k('w'), 'x'), WRONGTYPE, 'lPush on a string');
  await c.rPush(k('wl'), 'a');
  await rejects(c.get(k('wl')), WRONGTYPE, 'get on a list');
  const replies = await c.multi().set(k('w'), 'x').sAdd(k('w'), 'm').get(k('w'))
    .execAsPipeline().then(() => null, (e) => e);
  assert.ok(replies instanceof Error && /WRONGTYPE/.test(show(replies)),
    `an error inside a pipeline surfaces: ${show(replies)}`);
});

// Commands sent unchanged, per family: { setup, replies: [[command, RESP2 reply, RESP3 reply]] },
// where "@name" in a command is a key of the scenario's own.
const RAW_FAMILIES = {
  hash: {
    setup: [['HSET', '@h', 'a', '1']],
    replies: [
      [['HGETALL', '@h'], ['a', '1'], new Map([['a', '1']])],
      [['HGETALL', '@nope'], [], new Map()],
      [['HRANDFIELD', '@h', '1', 'WITHVALUES'], ['a', '1'], [['a', '1']]],
      [['HGET', '@h', 'nope'], null, null],
    ],
  },
  set: {
    setup: [['SADD', '@s', 'x']],
    replies: [
      [['SMEMBERS', '@s'], ['x'], new Set(['x'])],
      [['SINTER', '@s', '@nope'], [], new Set()],
      [['SUNION', '@s'], ['x'], new Set(['x'])],
      [['SDIFF', '@s', '@nope'], ['x'], new Set(['x'])],
      [['SMISMEMBER', '@s', 'x', 'nope'], [1, 0], [1, 0]],
    ],
  },
  'sorted set': {
    setup: [['ZADD', '@z', '1.5', 'm', '2', 'n'], ['ZADD', '@one', '7', 'only']],
    replies: [
      [['ZSCORE', '@z', 'm'], '1.5', 1.5],
      [['ZSCORE', '@z', 'nope'], null, null],
      [['ZMSCORE', '@z', 'm', 'nope'], ['1.5', null], [1.5, null]],
      [['ZRANGE', '@z', '0', '-1', 'WITHSCORES'], ['m', '1.5', 'n', '2'], [['m', 1.5], ['n', 2]]],
      [['ZINCRBY', '@z', '0', 'n'], '2', 2],
      [['ZADD', '@z', 'INCR', '0', 'n'], '2', 2],
      [['ZUNION', '1', '@z', 'WITHSCORES'], ['m', '1.5', 'n', '2'], [['m', 1.5], ['n', 2]]],
      [['ZRANDMEMBER', '@one', '1', 'WITHSCORES'], ['only', '7'], [['only', 7]]],
      [['ZPOPMIN', '@one'], ['only', '7'], ['only', 7]],
      [['ZADD', '@inf', '+inf', 'top'], 1, 1],
      [['ZSCORE', '@inf', 'top'], 'inf', Infinity],
    ],
  },
  'nested in EXEC': {
    setup: [['HSET', '@h', 'a', '1'], ['SADD', '@s', 'x'], ['ZADD', '@z', '1.5', 'm']],
    replies: [
      [['MULTI'], 'OK', 'OK'],
      [['HGETALL', '@h'], 'QUEUED', 'QUEUED'],
      [['ZSCORE', '@z', 'm'], 'QUEUED', 'QUEUED'],
      [['SMEMBERS', '@s'], 'QUEUED', 'QUEUED'],
      [['GET', '@nope'], 'QUEUED', 'QUEUED'],
      [['EXEC'], [['a', '1'], '1.5', ['x'], null],
        [new Map([['a', '1']]), 1.5, new Set(['x']), null]],
    ],
  },
};

for (const [family, { setup, replies }] of Object.entries(RAW_FAMILIES)) {
  scenario(`raw reply types: ${family}`, async ({ c, k, resp }) => {
    const slug = family.replace(/ /g, '-');
    const keyed = (args) => args.map((a) => (a.startsWith('@') ? k(`raw:${slug}:${a.slice(1)}`)
      : a));
    for (const args of setup) await c.sendCommand(keyed(args));
    for (const [args, resp2, resp3] of replies) {
      const sent = keyed(args);
      eq(await c.sendCommand(sent, RAW), resp === 3 ? resp3 : resp2, sent.join(' '));
    }
  });
}

scenario('HELLO', async ({ c, resp }) => {
  const hello = await c.sendCommand(['HELLO'], RAW);
  assert.ok(resp === 2 || hello instanceof Map, `HELLO in RESP3 is a map: ${show(hello)}`);
  const fields = resp === 3 ? hello : new Map(
    Array.from({ length: hello.length / 2 }, (_, i) => [hello[2 * i], hello[2 * i + 1]]),
  );
  eq(fields.get('proto'), resp, 'HELLO proto');
  assert.match(String(fields.get('version')), /^\d+\.\d+\.\d+/, 'HELLO version');
});

async function runScenario(ctx, name, fn) {
  let timer;
  const overdue = new Promise((resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer in ${SCENARIO_TIMEOUT_MS} ms`)),
      SCENARIO_TIMEOUT_MS);
  });
  try {
    await Promise.race([fn(ctx), overdue]);
    console.log(`ok ${name}`);
    return true;
  } catch (err) {
    const message = String(err.message).replace(/\n/g, ' ');
    console.log(`FAIL ${name}: ${err.constructor.name}: ${message}`);
    return false;
  } finally {
    clearTimeout(timer);
  }
}

function client(resp) {
  const c = createClient({
    url: `redis://${hostPort}`,
    RESP: resp,
    socket: { connectTimeout: CONNECT_TIMEOUT_MS, reconnectStrategy: false },
  });
  c.on('error', () => {}); // a dropped connection fails the scenario through its command
  return c;
}

async function main() {
  let passed = 0;
  let failed = 0;
  for (const resp of [2, 3]) {
    const c = client(resp);
    const other = client(resp);
    try {
      await c.connect();
      await other.connect();
    } catch (err) {
      console.log(`FAIL resp${resp}: connect: ${err.message}`);
      failed += 1;
      continue;
    }
    const k = (name) => `${prefix}:resp${resp}:${name}`;
    for (const { name, fn } of scenarios) {
      if (await runScenario({ c, other, k, resp }, `resp${resp}: ${name}`, fn)) passed += 1;
      else failed += 1;
    }
    c.destroy();
    other.destroy();
  }
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}

main();
