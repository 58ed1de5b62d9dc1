// ioredis (Node.js, RESP2) against one Redis-protocol server.
//
//   node check.js HOST:PORT KEY_PREFIX
//
// Runs every scenario in order, prints one line per scenario ("ok NAME" or "FAIL NAME: ..."),
// then "N passed, N failed", and exits 1 when any scenario failed. A failing scenario does not
// stop the run, so one run shows which command families work. Scenario names start with their
// family ("hash: ..."). The expectations are what redis-server 7.0 answers;
// tests/conformance/test_ioredis.py runs this against both servers. Everything goes through
// ioredis's own command methods, pipelines and transactions (their reply transforms included:
// hgetall as an object, exec as [err, result] pairs).
'use strict';

const Redis = require('ioredis');
const { ReplyError } = require('ioredis');
const { families } = require('./scenarios');

// A server that stops answering fails the scenario instead of hanging the run.
const SCENARIO_TIMEOUT_MS = 10000;
const CONNECT_TIMEOUT_MS = 3000;
// How much of a failed command a FAIL line shows.
const COMMAND_SHOWN_CHARS = 80;

const [hostPort, prefix] = process.argv.slice(2);
if (!hostPort || !prefix || !hostPort.includes(':')) {
  console.error('usage: node check.js HOST:PORT KEY_PREFIX');
  process.exit(2);
}
const [host, port] = [hostPort.slice(0, hostPort.lastIndexOf(':')),
  Number(hostPort.slice(hostPort.lastIndexOf(':') + 1))];

// One attempt per command and no reconnect loop: a refused or dropped connection surfaces as
// the scenario's failure. The ready check (INFO) stays on, as every ioredis user has it.
function connect() {
  return new Redis({
    host,
    port,
    lazyConnect: true,
    connectTimeout: CONNECT_TIMEOUT_MS,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
}

function clip(text) {
  return text.length > COMMAND_SHOWN_CHARS ? `${text.slice(0, COMMAND_SHOWN_CHARS)}...` : text;
}

async function runScenario(ctx, { name, fn }) {
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
    // An unexpected server error names the command that got it (ioredis keeps it on the error).
    const kind = err instanceof ReplyError ? 'ReplyError: ' : '';
    const { command } = err;
    const from = command ? ` (from ${clip(`${command.name} ${command.args.join(' ')}`)})` : '';
    console.log(`FAIL ${name}: ${kind}${String(err.message).replace(/\n/g, ' ')}${from}`);
    return false;
  } finally {
    clearTimeout(timer);
  }
}

async function main() {
  const r = connect();
  const other = connect();
  let passed = 0;
  let failed = 0;
  try {
    await r.connect();
    await other.connect();
  } catch (err) {
    console.log(`FAIL connect: ${err.message}`);
    console.log('0 passed, 1 failed');
    process.exit(1);
  }
  const k = (name) => `${prefix}:${name}`;
  const ctx = { r, other, k, ReplyError };
  for (const scenario of families()) {
    if (await runScenario(ctx, scenario)) passed += 1; else failed += 1;
  }
  r.disconnect();
  other.disconnect();
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}

main();
