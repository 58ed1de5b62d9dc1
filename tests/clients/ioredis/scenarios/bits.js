// Bitmaps and HyperLogLog.
'use strict';

const { assert, eq, rejects } = require('./helpers');

const scenarios = [];
const scenario = (name, fn) => scenarios.push({ name, fn });

scenario('bitmap: setbit getbit bitcount bitpos', async ({ r, k }) => {
  const b = k('b');
  eq(await r.setbit(b, 7, 1), 0, 'setbit');
  eq(await r.setbit(b, 7, 1), 1, 'setbit again returns the old bit');
  eq(await r.getbit(b, 7), 1, 'getbit');
  eq(await r.getbit(b, 6), 0, 'getbit clear');
  eq(await r.getbit(b, 1000), 0, 'getbit past the end');
  eq(await r.getBuffer(b), Buffer.from([0x01]), 'bits are big-endian within a byte');
  eq(await r.setbit(b, 17, 1), 0, 'setbit grows the string');
  eq(await r.strlen(b), 3, 'grown length');
  await rejects(r.setbit(b, 0, 2), 'ERR bit is not an integer or out of range', 'setbit 2');
  const s = k('foobar');
  await r.set(s, 'foobar');
  eq(await r.bitcount(s), 26, 'bitcount');
  eq(await r.bitcount(s, 1, 1), 6, 'bitcount byte range');
  eq(await r.bitcount(s, 5, 30, 'BIT'), 17, 'bitcount BIT range');
  eq(await r.bitcount(k('nope')), 0, 'bitcount missing');
  await r.set(k('bp'), Buffer.from([0xff, 0xf0, 0x00]));
  eq(await r.bitpos(k('bp'), 0), 12, 'bitpos 0');
  eq(await r.bitpos(k('bp'), 1, 2), -1, 'bitpos 1 from byte 2');
  eq(await r.bitpos(k('bp'), 0, 0, 0), -1, 'bitpos 0 within an all-ones range');
  eq(await r.bitpos(k('bp'), 1, 7, 15, 'BIT'), 7, 'bitpos BIT range');
  eq(await r.bitpos(k('nope'), 0), 0, 'bitpos 0 on missing');
});

scenario('bitmap: bitop bitfield', async ({ r, k }) => {
  const [x, y, dst] = [k('bx'), k('by'), k('bd')];
  await r.set(x, Buffer.from([0b1100, 0xff]));
  await r.set(y, Buffer.from([0b1010]));
  eq(await r.bitop('AND', dst, x, y), 2, 'bitop AND length');
  eq(await r.getBuffer(dst), Buffer.from([0b1000, 0x00]), 'AND pads with zeros');
  eq(await r.bitop('OR', dst, x, y), 2, 'bitop OR');
  eq(await r.getBuffer(dst), Buffer.from([0b1110, 0xff]), 'OR');
  eq(await r.bitop('XOR', dst, x, y), 2, 'bitop XOR');
  eq(await r.getBuffer(dst), Buffer.from([0b0110, 0xff]), 'XOR');
  eq(await r.bitop('NOT', dst, y), 1, 'bitop NOT');
  eq(await r.getBuffer(dst), Buffer.from([0xf5]), 'NOT');
  await rejects(r.bitop('NOT', dst, x, y), 'ERR BITOP NOT must be called with a single source key.',
    'bitop NOT with two sources');
  const f = k('bf');
  eq(await r.bitfield(f, 'SET', 'u8', 0, 255, 'GET', 'u8', 0, 'INCRBY', 'u8', 0, 10,
    'OVERFLOW', 'SAT', 'INCRBY', 'u8', 0, 300, 'OVERFLOW', 'FAIL', 'INCRBY', 'u8', 0, 1),
  [0, 255, 9, 255, null], 'bitfield u8 with overflows');
  eq(await r.bitfield(f, 'SET', 'i5', '#1', -3, 'GET', 'i5', '#1', 'GET', 'u4', 0),
    [-4, -3, 15], 'bitfield signed with # offsets (old bits 11100)');
  eq(await r.bitfield_ro(f, 'GET', 'u8', 0), [255], 'bitfield_ro');
});

scenario('hyperloglog: pfadd pfcount pfmerge', async ({ r, k }) => {
  const [h1, h2, dst] = [k('hll1'), k('hll2'), k('hll3')];
  eq(await r.pfadd(h1, 'a', 'b', 'c'), 1, 'pfadd');
  eq(await r.pfadd(h1, 'a', 'b'), 0, 'pfadd nothing new');
  eq(await r.pfadd(k('hll-empty')), 1, 'pfadd with no elements creates');
  eq(await r.pfcount(k('hll-empty')), 0, 'pfcount empty');
  eq(await r.pfcount(h1), 3, 'pfcount');
  eq(await r.pfadd(h2, 'c', 'd'), 1, 'pfadd second');
  eq(await r.pfcount(h1, h2), 4, 'pfcount union');
  eq(await r.pfmerge(dst, h1, h2), 'OK', 'pfmerge');
  eq(await r.pfcount(dst), 4, 'pfcount merged');
  eq(await r.pfcount(k('nope')), 0, 'pfcount missing');
  const many = [...Array(5000).keys()].map((i) => `e${i}`);
  await r.pfadd(k('hll-big'), many);
  const estimate = await r.pfcount(k('hll-big'));
  assert.ok(Math.abs(estimate - 5000) < 5000 * 0.03, `pfcount 5000 elements: ${estimate}`);
  eq(await r.type(h1), 'string', 'an HLL is a string');
  await r.set(k('notHll'), 'plain');
  await rejects(r.pfadd(k('notHll'), 'x'), /^WRONGTYPE Key is not a valid HyperLogLog string value/,
    'pfadd on a plain string');
});

module.exports = { scenarios };
