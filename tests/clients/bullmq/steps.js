// What the BullMQ checks share: BullMQ's console warnings, captured (it reports a server it
// does not like, such as its eviction policy, with console.warn), and steps that print
// "ok NAME" or "FAIL NAME: ..." each under a time limit, counted in `tally`.
'use strict';

const warnings = [];
const consoleWarn = console.warn;
console.warn = (...args) => {
  warnings.push(args.join(' '));
  consoleWarn(...args);
};

const tally = { passed: 0, failed: 0 };

// A step runner whose steps fail when they take longer than `timeoutMs`.
function stepper(timeoutMs) {
  return async function step(name, fn) {
    let timer;
    const overdue = new Promise((resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer in ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      await Promise.race([fn(), overdue]);
      console.log(`ok ${name}`);
      tally.passed += 1;
    } catch (err) {
      console.log(`FAIL ${name}: ${String(err && err.message).replace(/\n/g, ' ')}`);
      tally.failed += 1;
    } finally {
      clearTimeout(timer);
    }
  };
}

function expect(what, got, want) {
  const [g, w] = [JSON.stringify(got), JSON.stringify(want)];
  if (g !== w) throw new Error(`${what}: got ${g}, want ${w}`);
}

// Runs `main`, then prints the tally and exits, 1 when any step failed (connections a failed
// step left open must not keep the process alive); a run past `deadlineMs` fails whole.
function run(main, deadlineMs) {
  setTimeout(() => {
    console.log(`FAIL run: not finished in ${deadlineMs} ms`);
    console.log(`${tally.passed} passed, ${tally.failed + 1} failed`);
    process.exit(1);
  }, deadlineMs).unref();
  main()
    .catch((err) => {
      console.log(`FAIL run: ${err && err.stack}`);
      tally.failed += 1;
    })
    .finally(() => {
      console.log(`${tally.passed} passed, ${tally.failed} failed`);
      process.exit(tally.failed ? 1 : 0);
    });
}

module.exports = { warnings, tally, stepper, expect, run };
