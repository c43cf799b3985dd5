// Preloaded by bench/http/promises.ts into a bench server (`node --import`): counts the promises
// the process makes (an async_hooks init hook) and, on SIGUSR2, writes `PROMISES <count>` to
// stderr and starts counting again.
import { createHook } from 'node:async_hooks';
import { writeSync } from 'node:fs';

let count = 0;
createHook({
  init(_id, type) {
    if (type === 'PROMISE') count += 1;
  },
}).enable();
process.on('SIGUSR2', () => {
  writeSync(2, `PROMISES ${count}\n`);
  count = 0;
});
