// ioredis's Sentinel support across a failover.
//
//   node sentinel.js SENTINEL_PORT[,SENTINEL_PORT...] MASTER_NAME KEY_PREFIX TIMEOUT_MS
//
// Connects through the sentinels (ioredis asks them for MASTER_NAME's address), writes once,
// prints "ready PORT" (the primary it reached) and keeps writing a counter every few
// milliseconds. tests/conformance/test_sentinel.py kills that primary; once a write succeeds
// on another port (ioredis reconnected through the sentinels to the promoted replica) this
// prints "ok failover" and "1 passed, 0 failed" and exits 0; after TIMEOUT_MS with no such
// write it prints "FAIL failover: ..." and exits 1.
'use strict';

const Redis = require('ioredis');

const [portsArg, name, prefix, timeoutArg] = process.argv.slice(2);
if (!portsArg || !name || !prefix || !timeoutArg) {
  console.error('usage: node sentinel.js SENTINEL_PORTS MASTER_NAME KEY_PREFIX TIMEOUT_MS');
  process.exit(2);
}
const WRITE_GAP_MS = 20;
const sentinels = portsArg.split(',').map((port) => ({ host: '127.0.0.1', port: Number(port) }));

function finish(failure) {
  if (failure) {
    console.log(`FAIL failover: ${failure}`);
    console.log('0 passed, 1 failed');
  } else {
    console.log('ok failover');
    console.log('1 passed, 0 failed');
  }
  process.exit(failure ? 1 : 0);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function main() {
  const redis = new Redis({
    sentinels,
    name,
    connectTimeout: 500,
    commandTimeout: 500,
    maxRetriesPerRequest: 0,
    // Ask the sentinels again at once after a lost connection.
    sentinelRetryStrategy: () => 50,
    retryStrategy: () => 50,
  });
  redis.on('error', () => {});
  await redis.set(`${prefix}:before`, '1');
  const first = redis.stream.remotePort;
  console.log(`ready ${first}`);
  const deadline = Date.now() + Number(timeoutArg);
  let last = 'no write failed';
  for (let n = 1; Date.now() < deadline; n += 1) {
    try {
      await redis.set(`${prefix}:counter`, String(n));
      const port = redis.stream.remotePort;
      if (port !== first) {
        const seen = await redis.get(`${prefix}:counter`);
        if (seen !== String(n)) finish(`read ${seen} after writing ${n} on port ${port}`);
        console.log(`written on ${port}`);
        redis.disconnect();
        finish(null);
      }
    } catch (err) {
      last = String(err && err.message);
    }
    await sleep(WRITE_GAP_MS);
  }
  finish(`no write reached a new primary in ${timeoutArg} ms (last error: ${last})`);
}

main().catch((err) => finish(`unexpected: ${err && err.stack}`));
