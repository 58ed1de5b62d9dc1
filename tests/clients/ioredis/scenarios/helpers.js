// Assertions shared by the scenario files.
'use strict';

const assert = require('node:assert/strict');
const { isDeepStrictEqual } = require('node:util');
const { ReplyError } = require('ioredis');

const WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value';

// Deep strict equality, failing with one line: what was checked, what came, what was wanted.
function eq(actual, expected, what) {
  if (!isDeepStrictEqual(actual, expected)) {
    throw new assert.AssertionError({
      message: `${what}: got ${show(actual)}, want ${show(expected)}`,
    });
  }
}

// JSON, with errors (inside pipeline replies) and buffers written legibly.
function show(value) {
  if (Buffer.isBuffer(value)) return `<Buffer ${value.toString('hex')}>`;
  return JSON.stringify(value, (key, v) => (v instanceof Error ? `${v.name}: ${v.message}` : v));
}

// For replies whose order Redis leaves unspecified (sets, hash fields, scans).
function sorted(values) {
  return [...values].sort();
}

// A scan may return an element more than once; this is the sorted distinct elements.
function unique(values) {
  return sorted(new Set(values));
}

// The promise must reject with an ioredis ReplyError whose message matches `pattern` (a string
// means the whole message).
async function rejects(promise, pattern, what) {
  let err = null;
  try {
    await promise;
  } catch (caught) {
    err = caught;
  }
  assert.ok(err !== null, `${what}: no error`);
  assert.ok(err instanceof ReplyError, `${what}: ${err && err.name} is not a ReplyError: ${err}`);
  if (typeof pattern === 'string') {
    eq(err.message, pattern, what);
  } else if (!pattern.test(err.message)) {
    const message = `${what}: got ${show(err.message)}, want ${pattern}`;
    throw new assert.AssertionError({ message });
  }
}

// A Redis pair list [a, b, c, d] as [[a, b], [c, d]].
function pairs(flat) {
  const out = [];
  for (let i = 0; i < flat.length; i += 2) out.push([flat[i], flat[i + 1]]);
  return out;
}

// Drives one of ioredis's scan streams to its end and returns every element it gave.
function drain(stream) {
  return new Promise((resolve, reject) => {
    const all = [];
    stream.on('data', (batch) => all.push(...batch));
    stream.on('end', () => resolve(all));
    stream.on('error', reject);
  });
}

// Loops a SCAN-family method by hand until the cursor comes back "0", checking each reply's
// shape; returns every element seen.
async function scanAll(call) {
  const all = [];
  let cursor = '0';
  let rounds = 0;
  do {
    const reply = await call(cursor);
    assert.ok(Array.isArray(reply) && reply.length === 2, `scan reply ${JSON.stringify(reply)}`);
    [cursor] = reply;
    assert.equal(typeof cursor, 'string');
    all.push(...reply[1]);
    rounds += 1;
    assert.ok(rounds < 10000, 'scan cursor never returned to 0');
  } while (cursor !== '0');
  return all;
}

module.exports = {
  assert, eq, sorted, unique, rejects, pairs, drain, scanAll, WRONGTYPE,
};
