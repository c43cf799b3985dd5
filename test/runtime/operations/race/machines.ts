/**
 * The machine of the two-process race test: `WORK` runs an action that holds its step (and so
 * the instance lock) until the test opens a gate file, `CANCEL` ends it from any active state.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { defineMachine } from '../../../../src/runtime/definition/index.js';

const pause = new Int32Array(new SharedArrayBuffer(4));

export const raceMachine = defineMachine({
  config: {
    id: 'race',
    initial: 'active',
    context: { steps: 0 },
    states: {
      active: {
        initial: 'idle',
        on: { CANCEL: 'cancelled' },
        states: {
          idle: { on: { WORK: { target: 'working', actions: 'slow' } } },
          working: { on: { WORK: { target: 'working', actions: 'slow' } } },
        },
      },
      cancelled: { type: 'final' },
    },
  },
  behavior: {
    actions: {
      // Behaviors are synchronous: the step blocks its process, as a slow action does.
      slow: ({ context }) => {
        const dir = process.env['MR_RACE_DIR'];
        if (dir !== undefined) {
          writeFileSync(join(dir, 'in-action'), String(process.pid));
          const deadline = Date.now() + 30_000;
          while (!existsSync(join(dir, 'gate')) && Date.now() < deadline)
            Atomics.wait(pause, 0, 0, 20);
        }
        context.steps = Number(context.steps) + 1;
      },
    },
  },
});
