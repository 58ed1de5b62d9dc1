// memjs (a binary-protocol-only client) against one memcached-protocol server.
//
//   node check.js HOST:PORT KEY_PREFIX
//
// Runs every scenario in order, prints one line per check ("ok NAME" or "FAIL NAME: ..."),
// then "N passed, N failed", and exits 1 when any check failed. The expectations are what
// memcached 1.6 answers; tests/conformance/test_memjs.py runs this against both servers.
'use strict';

const assert = require('node:assert/strict');
const memjs = require('memjs');

const OP_VERSION = 0x0b;
const STATUS_OK = 0x00;
const STATUS_KEY_ENOENT = 0x01;
const STATUS_E2BIG = 0x03;
const STATUS_NOT_STORED = 0x05;
const STATUS_DELTA_BADVAL = 0x06;
const ITEM_MAX_BYTES = 1024 * 1024;
const NO_CREATE_EXPIRY = 0xffffffff; // incr/decr extras: fail on a missing key
// Some memjs calls (stats, flush) wait forever for a reply that never comes; a scenario that
// takes this long fails instead of hanging the run.
const SCENARIO_TIMEOUT_MS = 10000;

const [hostPort, prefix] = process.argv.slice(2);
if (!hostPort || !prefix) {
  console.error('usage: node check.js HOST:PORT KEY_PREFIX');
  process.exit(2);
}

// memjs logs every refusal through its logger; keep them for a failing check's message.
const logged = [];
const logger = { log: (...args) => logged.push(args.join(' ')) };

// A serializer that sets the item's 32-bit flags (memjs itself always sends 0), so the flags
// round trip through the server is checked too.
const FLAGS = 0xcafe0001;
const flagSerializer = {
  serialize(opcode, value, extras) {
    if (extras.length >= 4 && (opcode === 0x01 || opcode === 0x02 || opcode === 0x03)) {
      extras = Buffer.from(extras);
      extras.writeUInt32BE(FLAGS, 0);
    }
    return { value, extras };
  },
  deserialize(opcode, value, extras) {
    return { value, extras };
  },
};

const client = memjs.Client.create(hostPort, {
  retries: 1, timeout: 3, conntimeout: 3, logger, serializer: flagSerializer,
});
const key = (name) => `${prefix}_${name}`;

// One request through memjs's own framing and dispatch, for replies its helpers do not expose
// (version) or whose exact status and message matter.
function raw(opcode, k, extras, value) {
  client.incrSeq();
  const seq = client.seq;
  const request = memjs.Utils.makeRequestBuffer(opcode, k, extras, value, seq);
  return new Promise((resolve, reject) => {
    client.perform(k, request, seq, (err, response) => (err ? reject(err) : resolve(response)));
  });
}

function statusOf(response) {
  return { status: response.header.status, body: response.val.toString('latin1') };
}

const scenarios = [];
const scenario = (name, fn) => scenarios.push({ name, fn });

scenario('get missing', async () => {
  assert.deepEqual(await client.get(key('missing')), { value: null, flags: null });
});

scenario('set get with flags', async () => {
  assert.equal(await client.set(key('sg'), 'v1'), true);
  const got = await client.get(key('sg'));
  assert.equal(got.value.toString(), 'v1');
  assert.equal(got.flags.readUInt32BE(0), FLAGS);
  assert.equal(await client.set(key('sg'), Buffer.from('v2')), true);
  assert.equal((await client.get(key('sg'))).value.toString(), 'v2');
});

scenario('add replace', async () => {
  assert.equal(await client.replace(key('ar'), 'x'), false);
  assert.equal(await client.add(key('ar'), 'first'), true);
  assert.equal(await client.add(key('ar'), 'second'), false);
  assert.equal((await client.get(key('ar'))).value.toString(), 'first');
  assert.equal(await client.replace(key('ar'), 'third'), true);
  assert.equal((await client.get(key('ar'))).value.toString(), 'third');
});

scenario('delete', async () => {
  await client.set(key('del'), 'x');
  assert.equal(await client.delete(key('del')), true);
  assert.equal(await client.delete(key('del')), false);
  assert.equal((await client.get(key('del'))).value, null);
});

scenario('increment decrement with initial values', async () => {
  // A missing counter is created with the initial value (the delta is not applied).
  assert.deepEqual(await client.increment(key('n'), 5, { initial: 10 }), { success: true, value: 10 });
  assert.deepEqual(await client.increment(key('n'), 5, {}), { success: true, value: 15 });
  assert.deepEqual(await client.decrement(key('n'), 20, {}), { success: true, value: 0 });
  assert.deepEqual(await client.decrement(key('d'), 3, { initial: 7 }), { success: true, value: 7 });
  assert.deepEqual(await client.decrement(key('d'), 3, {}), { success: true, value: 4 });
  assert.equal((await client.get(key('d'))).value.toString(), '4');
  // A counter created by incr carries flags 0.
  assert.equal((await client.get(key('d'))).flags.readUInt32BE(0), 0);
});

scenario('increment refusals', async () => {
  const extras = Buffer.alloc(20);
  extras.writeUInt32BE(1, 4);
  extras.writeUInt32BE(NO_CREATE_EXPIRY, 16);
  assert.deepEqual(statusOf(await raw(0x05, key('nocreate'), extras, '')),
    { status: STATUS_KEY_ENOENT, body: 'Not found' });
  await client.set(key('text'), 'abc');
  await assert.rejects(client.increment(key('text'), 1, {}), /non-numeric/);
  assert.deepEqual(statusOf(await raw(0x05, key('text'), extras, '')),
    { status: STATUS_DELTA_BADVAL, body: 'Non-numeric server-side value for incr or decr' });
});

scenario('append prepend', async () => {
  // A missing key answers NOT_STORED (5), which memjs reports as an error, not as false.
  await assert.rejects(client.append(key('ap'), 'x'), /Item not stored/);
  assert.deepEqual(statusOf(await raw(0x0f, key('ap'), '', 'x')),
    { status: STATUS_NOT_STORED, body: 'Not stored.' });
  await client.set(key('ap'), 'mid');
  assert.equal(await client.append(key('ap'), '_end'), true);
  assert.equal((await client.get(key('ap'))).value.toString(), 'mid_end');
  // memjs 1.3.2's prepend sends the APPEND opcode (0x0e), so the value goes at the end.
  assert.equal(await client.prepend(key('ap'), '_more'), true);
  assert.equal((await client.get(key('ap'))).value.toString(), 'mid_end_more');
  // The real PREPEND (0x0f) through memjs's framing.
  assert.deepEqual(statusOf(await raw(0x0f, key('ap'), '', 'start_')), { status: STATUS_OK, body: '' });
  assert.equal((await client.get(key('ap'))).value.toString(), 'start_mid_end_more');
  // append keeps the item's flags.
  assert.equal((await client.get(key('ap'))).flags.readUInt32BE(0), FLAGS);
});

scenario('touch', async () => {
  assert.equal(await client.touch(key('touch'), 100), false);
  await client.set(key('touch'), 't');
  assert.equal(await client.touch(key('touch'), 100), true);
  assert.equal((await client.get(key('touch'))).value.toString(), 't');
});

scenario('binary and unicode values and keys', async () => {
  const blob = Buffer.concat([Buffer.from([...Array(256).keys()]), Buffer.from('\r\nEND\r\n')]);
  await client.set(key('blob'), blob);
  assert.deepEqual((await client.get(key('blob'))).value, blob);
  const text = 'héllo wörld ✓';
  await client.set(key('ключ ✓ with spaces'), text);
  assert.equal((await client.get(key('ключ ✓ with spaces'))).value.toString('utf8'), text);
  await client.set(key('empty'), '');
  assert.equal((await client.get(key('empty'))).value.length, 0);
});

scenario('large values', async () => {
  const big = Buffer.alloc(ITEM_MAX_BYTES - 1024, 'b');
  assert.equal(await client.set(key('big'), big), true);
  assert.deepEqual((await client.get(key('big'))).value, big);
  const huge = Buffer.alloc(ITEM_MAX_BYTES + 1, 'h');
  await assert.rejects(client.set(key('huge'), huge), /Value too large/);
  const extras = Buffer.alloc(8);
  assert.deepEqual(statusOf(await raw(0x01, key('huge'), extras, huge)),
    { status: STATUS_E2BIG, body: 'Too large.' });
  // The refused body was read past: the connection still frames replies.
  assert.equal((await client.get(key('huge'))).value, null);
  assert.deepEqual((await client.get(key('big'))).value, big);
});

scenario('versions', async () => {
  const response = await raw(OP_VERSION, '', '', '');
  assert.equal(response.header.status, STATUS_OK);
  assert.match(response.val.toString(), /^1\.6\.\d+/);
});

scenario('stats', async () => {
  const stats = await new Promise((resolve, reject) => {
    client.stats((err, server, result) => (err ? reject(err) : resolve({ server, result })));
  });
  assert.equal(stats.server, hostPort);
  assert.match(stats.result.version, /^1\.6\.\d+/);
  assert.ok(Number(stats.result.cmd_set) >= 1, `cmd_set ${stats.result.cmd_set}`);
  assert.ok(Number(stats.result.curr_items) >= 1, `curr_items ${stats.result.curr_items}`);
  assert.ok(Number(stats.result.pid) > 0);
});

scenario('expiry', async () => {
  await client.set(key('exp'), 'short', { expires: 1 });
  await client.set(key('keep'), 'long', { expires: 100 });
  await client.set(key('touched'), 't', { expires: 100 });
  assert.equal(await client.touch(key('touched'), 1), true);
  await new Promise((resolve) => setTimeout(resolve, 2200));
  assert.equal((await client.get(key('exp'))).value, null);
  assert.equal((await client.get(key('touched'))).value, null);
  assert.equal((await client.get(key('keep'))).value.toString(), 'long');
});

// Last: it empties the whole server.
scenario('flush', async () => {
  await client.set(key('fl'), 'x');
  assert.deepEqual(await client.flush(), { [hostPort]: true });
  assert.equal((await client.get(key('fl'))).value, null);
  assert.equal(await client.set(key('fl'), 'y'), true);
  assert.equal((await client.get(key('fl'))).value.toString(), 'y');
});

async function main() {
  let passed = 0;
  let failed = 0;
  for (const { name, fn } of scenarios) {
    logged.length = 0;
    let timer;
    const overdue = new Promise((resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer in ${SCENARIO_TIMEOUT_MS} ms`)),
        SCENARIO_TIMEOUT_MS);
    });
    try {
      await Promise.race([fn(), overdue]);
      passed += 1;
      console.log(`ok ${name}`);
    } catch (err) {
      failed += 1;
      const log = logged.length ? ` (memjs logged: ${logged.join(' | ')})` : '';
      console.log(`FAIL ${name}: ${err.message.replace(/\n/g, ' ')}${log}`);
    } finally {
      clearTimeout(timer);
    }
  }
  client.close();
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}

main();
