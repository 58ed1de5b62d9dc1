// BullMQ in a never-evict database of a Spinel that is a cache everywhere else:
//
//   node noevict_db.js HOST:PORT KEY_PREFIX DB
//
// The server runs with maxmemory-policy allkeys-lru and database DB marked never-evict
// (--noevict-dbs). BullMQ's connection check reads INFO's maxmemory_policy on its own
// connection, which selected DB, and warns unless it is noeviction: in DB it must not warn,
// and a queue runs a job there; in database 0, a cache, it must warn. Prints "ok NAME" or
// "FAIL NAME: ..." per step, then "N passed, N failed"; exits 1 when any failed.
'use strict';

const { Queue, Worker } = require('bullmq');

const STEP_TIMEOUT_MS = 8000;
const RUN_DEADLINE_MS = 30000;

const [hostPort, prefix, dbText] = process.argv.slice(2);
if (!hostPort || !prefix || !hostPort.includes(':') || !/^\d+$/.test(dbText || '')) {
  console.error('usage: node noevict_db.js HOST:PORT KEY_PREFIX DB');
  process.exit(2);
}
const host = hostPort.slice(0, hostPort.lastIndexOf(':'));
const port = Number(hostPort.slice(hostPort.lastIndexOf(':') + 1));
const db = Number(dbText);

const { warnings, stepper, expect, run } = require('./steps');

const policyWarnings = () => warnings.filter((w) => w.includes('Eviction policy'));
const step = stepper(STEP_TIMEOUT_MS);

async function main() {
  const connection = { host, port, db };
  const queue = new Queue('jobs', { connection, prefix });
  let worker;

  await step(`never-evict db ${db}: no eviction-policy warning`, async () => {
    await queue.waitUntilReady();
    expect('eviction warnings', policyWarnings(), []);
  });

  await step(`never-evict db ${db}: a job runs`, async () => {
    const done = new Promise((resolve) => {
      worker = new Worker('jobs', async (job) => job.data.n * 2, { connection, prefix });
      worker.on('completed', (job, result) => resolve(result));
    });
    await queue.add('double', { n: 21 });
    expect('result', await done, 42);
    expect('eviction warnings', policyWarnings(), []);
  });

  await step('database 0, a cache: BullMQ warns', async () => {
    const cached = new Queue('jobs', { connection: { host, port, db: 0 }, prefix });
    try {
      await cached.waitUntilReady();
      expect('eviction warnings', policyWarnings(),
        ['IMPORTANT! Eviction policy is allkeys-lru. It should be "noeviction"']);
    } finally {
      await cached.close();
    }
  });

  if (worker) await worker.close();
  await queue.obliterate({ force: true });
  await queue.close();
}

run(main, RUN_DEADLINE_MS);
