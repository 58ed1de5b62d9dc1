// BullMQ (the Node job queue) end to end against one Redis-protocol server, as its README
// has a new user run it: a Queue, a Worker and QueueEvents, each making its own ioredis
// connections from { host, port }.
//
//   node check.js HOST:PORT KEY_PREFIX
//
// The steps run in order and share one queue (its keys start with KEY_PREFIX); each prints
// "ok NAME" or "FAIL NAME: ...", then "N passed, N failed", and the exit status is 1 when any
// failed. A failed step does not stop the run, so one run shows how far an application gets.
// tests/conformance/test_bullmq.py runs this against redis-server 7.0 and Spinel, both
// configured with maxmemory-policy noeviction (what BullMQ asks of its server).
//
// What BullMQ sends: every job change is a Lua script (EVALSHA, loaded with SCRIPT LOAD or
// EVAL) that also XADDs an event to the queue's `events` stream (trimmed with MAXLEN ~);
// QueueEvents reads that stream with XREAD BLOCK; the Worker waits for jobs with BZPOPMIN on
// the queue's marker key; the connection check reads INFO (redis_version, maxmemory_policy).
'use strict';

const { Queue, Worker, QueueEvents, Job } = require('bullmq');
const IORedis = require('ioredis');

// A step that gets no answer fails instead of hanging the run, and the whole run ends by
// RUN_DEADLINE_MS whatever the server does (it takes about 2 s against redis-server).
const STEP_TIMEOUT_MS = 8000;
const RUN_DEADLINE_MS = 30000;
// The delayed job's delay, and the repeatable job's period (BullMQ's job schedulers).
const DELAY_MS = 600;
const REPEAT_EVERY_MS = 300;
const REPEAT_FIRINGS = 2;
// What the flaky job's backoff waits between its failed first attempt and the retry.
const BACKOFF_MS = 200;
// With nothing to do, QueueEvents waits in one XREAD BLOCK (10 s) and the worker in one
// BZPOPMIN: a server that answers a blocking read at once would show as hundreds of calls.
// The worker may still be settling after the scheduler's removal (a wake-up for the removed
// tick, a re-block), so a poll loop is one that stays busy in every one of IDLE_WINDOWS.
const IDLE_MS = 500;
const IDLE_CALLS_MAX = 2;
const IDLE_WINDOWS = 4;

const [hostPort, prefix] = process.argv.slice(2);
if (!hostPort || !prefix || !hostPort.includes(':')) {
  console.error('usage: node check.js HOST:PORT KEY_PREFIX');
  process.exit(2);
}
const host = hostPort.slice(0, hostPort.lastIndexOf(':'));
const port = Number(hostPort.slice(hostPort.lastIndexOf(':') + 1));
const connection = { host, port };
const queueName = 'jobs';

const { warnings, stepper, expect, run } = require('./steps');

const step = stepper(STEP_TIMEOUT_MS);

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// Resolves once `done()` is true, re-checking whenever `emitter` emits one of `names`.
function until(emitter, names, done) {
  return new Promise((resolve) => {
    const check = () => {
      if (!done()) return;
      for (const n of names) emitter.off(n, check);
      resolve();
    };
    for (const n of names) emitter.on(n, check);
    check();
  });
}

// How many calls of each blocking command the server has counted (INFO commandstats).
async function blockingCalls(raw) {
  const stats = await raw.info('commandstats');
  const calls = {};
  for (const command of ['xread', 'bzpopmin']) {
    const m = stats.match(new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm'));
    calls[command] = m ? Number(m[1]) : 0;
  }
  return calls;
}

// Which blocking command, if any, was called more than IDLE_CALLS_MAX times in IDLE_MS.
async function busyCommand(raw) {
  const before = await blockingCalls(raw);
  await sleep(IDLE_MS);
  const after = await blockingCalls(raw);
  for (const command of Object.keys(after)) {
    const calls = after[command] - before[command];
    if (calls > IDLE_CALLS_MAX) return `${calls} ${command} calls`;
  }
  return '';
}

// What the worker does: `flaky` fails its first attempt, `doomed` every one, `tick` (the
// repeatable job) and the rest return a value derived from their data.
const processedNames = [];
async function processor(job) {
  processedNames.push(job.name);
  if (job.name === 'flaky' && job.attemptsMade === 0) throw new Error('first attempt fails');
  if (job.name === 'doomed') throw new Error('always fails');
  if (job.name === 'progress') await job.updateProgress(50);
  return { doubled: (job.data.n || 0) * 2 };
}

// Events QueueEvents delivered, by kind, as { jobId, ... } records.
const events = { completed: [], failed: [], progress: [], delayed: [] };

async function main() {
  const queue = new Queue(queueName, { connection, prefix });
  // From the stream's start, so no event is missed while its first XREAD BLOCK is on its way.
  const queueEvents = new QueueEvents(queueName, { connection, prefix, lastEventId: '0-0' });
  for (const kind of Object.keys(events)) {
    queueEvents.on(kind, (args) => events[kind].push(args));
  }
  const jobs = {};
  let worker;

  await step('connect: queue and events ready, no eviction-policy warning', async () => {
    await queue.waitUntilReady();
    await queueEvents.waitUntilReady();
    const policy = warnings.filter((w) => w.includes('Eviction policy'));
    expect('eviction warnings', policy, []);
  });

  await step('add: a plain job', async () => {
    jobs.plain = await queue.add('plain', { n: 1 });
    expect('state', await jobs.plain.getState(), 'waiting');
  });

  await step('add: a delayed job', async () => {
    jobs.delayed = await queue.add('delayed', { n: 2 }, { delay: DELAY_MS });
    expect('state', await jobs.delayed.getState(), 'delayed');
  });

  await step('add: prioritized jobs (low added first)', async () => {
    jobs.low = await queue.add('low', { n: 3 }, { priority: 10 });
    jobs.high = await queue.add('high', { n: 4 }, { priority: 1 });
    expect('state', await jobs.high.getState(), 'prioritized');
  });

  await step('add: a job that fails once and retries after a fixed backoff', async () => {
    jobs.flaky = await queue.add('flaky', { n: 5 },
      { attempts: 3, backoff: { type: 'fixed', delay: BACKOFF_MS } });
  });

  await step('add: a job that always fails, and one that reports progress', async () => {
    jobs.doomed = await queue.add('doomed', {}, { attempts: 1 });
    jobs.progress = await queue.add('progress', { n: 6 });
  });

  await step('counts before any worker', async () => {
    const counts = await queue.getJobCounts('waiting', 'prioritized', 'delayed', 'active');
    expect('counts', counts, { waiting: 4, prioritized: 2, delayed: 1, active: 0 });
  });

  // The jobs whose completion the run waits for: all but `doomed`.
  const finishing = ['plain', 'delayed', 'low', 'high', 'flaky', 'progress'];
  await step('worker: runs every job; events arrive through QueueEvents', async () => {
    worker = new Worker(queueName, processor, { connection, prefix, concurrency: 1 });
    worker.on('error', () => {});
    const ids = () => finishing.map((n) => jobs[n] && jobs[n].id);
    await until(queueEvents, ['completed', 'failed'], () => {
      const done = new Set(events.completed.map((e) => e.jobId));
      return ids().every((id) => done.has(id)) && events.failed.length >= 1;
    });
  });

  await step('events: completed carries the return value, failed the reason', async () => {
    const byId = Object.fromEntries(events.completed.map((e) => [e.jobId, e]));
    expect('plain returnvalue', byId[jobs.plain.id].returnvalue, { doubled: 2 });
    const lastFailure = events.failed.find((e) => e.jobId === jobs.doomed.id);
    expect('doomed failedReason', lastFailure && lastFailure.failedReason, 'always fails');
    expect('progress events', events.progress.map((e) => [e.jobId, e.data]),
      [[jobs.progress.id, 50]]);
    if (!events.delayed.some((e) => e.jobId === jobs.delayed.id)) {
      throw new Error('no delayed event for the delayed job');
    }
  });

  await step('order: the higher priority ran before the lower', async () => {
    const [high, low] = [processedNames.indexOf('high'), processedNames.indexOf('low')];
    if (!(high >= 0 && high < low)) throw new Error(`processed ${processedNames}`);
  });

  await step('results: read back by id', async () => {
    const plain = await Job.fromId(queue, jobs.plain.id);
    expect('returnvalue', plain.returnvalue, { doubled: 2 });
    expect('state', await plain.getState(), 'completed');
    const delayed = await Job.fromId(queue, jobs.delayed.id);
    if (delayed.processedOn - delayed.timestamp < DELAY_MS) {
      throw new Error(`delayed job ran after ${delayed.processedOn - delayed.timestamp} ms`);
    }
    const flaky = await Job.fromId(queue, jobs.flaky.id);
    expect('flaky', [flaky.attemptsMade, flaky.returnvalue, await flaky.getState()],
      [2, { doubled: 10 }, 'completed']);
    const doomed = await Job.fromId(queue, jobs.doomed.id);
    expect('doomed', [doomed.failedReason, await doomed.getState()],
      ['always fails', 'failed']);
    expect('doomed stacktrace lines', doomed.stacktrace.length, 1);
  });

  await step('counts by state', async () => {
    const counts = await queue.getJobCounts('completed', 'failed', 'waiting', 'delayed',
      'active', 'prioritized');
    expect('counts', counts,
      { completed: 6, failed: 1, waiting: 0, delayed: 0, active: 0, prioritized: 0 });
    expect('completed ids', (await queue.getCompleted()).map((j) => j.id).sort(),
      finishing.map((n) => jobs[n].id).sort());
  });

  await step('repeat: a job scheduler fires every period', async () => {
    const before = events.completed.length;
    await queue.upsertJobScheduler('ticker', { every: REPEAT_EVERY_MS },
      { name: 'tick', data: { n: 7 } });
    await until(queueEvents, ['completed'],
      () => events.completed.length - before >= REPEAT_FIRINGS);
    await queue.removeJobScheduler('ticker');
    expect('schedulers left', await queue.getJobSchedulersCount(), 0);
    const ticks = processedNames.filter((n) => n === 'tick').length;
    if (ticks < REPEAT_FIRINGS) throw new Error(`${ticks} ticks`);
  });

  await step('idle: events and worker wait in XREAD BLOCK and BZPOPMIN, not a poll loop',
    async () => {
      const raw = new IORedis({ host, port, lazyConnect: true });
      await raw.connect();
      try {
        let busiest = '';
        for (let window = 0; window < IDLE_WINDOWS; window += 1) {
          busiest = await busyCommand(raw);
          if (!busiest) return;
        }
        throw new Error(`${busiest} in each of ${IDLE_WINDOWS} windows of ${IDLE_MS} ms`);
      } finally {
        raw.disconnect();
      }
    });

  await step('close: worker and events stop', async () => {
    await worker.close();
    await queueEvents.close();
  });

  await step('obliterate: no key of the queue is left', async () => {
    await queue.obliterate({ force: true });
    const raw = new IORedis({ host, port, lazyConnect: true });
    await raw.connect();
    try {
      expect('keys left', await raw.keys(`${prefix}:${queueName}:*`), []);
    } finally {
      raw.disconnect();
    }
  });

  await step('eviction policy: BullMQ warns when it is not noeviction', async () => {
    const raw = new IORedis({ host, port, lazyConnect: true });
    await raw.connect();
    const [, was] = await raw.config('GET', 'maxmemory-policy');
    await raw.config('SET', 'maxmemory-policy', 'allkeys-lru');
    const probe = new Queue(`${queueName}-probe`, { connection, prefix });
    try {
      await probe.waitUntilReady();
      expect('warnings', warnings.filter((w) => w.includes('Eviction policy')),
        ['IMPORTANT! Eviction policy is allkeys-lru. It should be "noeviction"']);
    } finally {
      await raw.config('SET', 'maxmemory-policy', was);
      await probe.close();
      raw.disconnect();
    }
  });

  await queue.close();
}

run(main, RUN_DEADLINE_MS);
