/**
 * A process SIGKILLed in the middle of a transition (holding the instance lock) leaves the
 * instance at its last committed state, with no partial rows; once the lock TTL has passed the
 * instance accepts events again.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MachineAlreadyRunningException } from '../../../src/runtime/errors.js';
import { MachineRuntime } from '../../../src/runtime/persistence/machine-runtime.js';
import { startFixture } from '../../support/child-process.js';
import { allBackends } from '../../support/stores.js';
import { HANG_SIGNAL, counterMachine } from './fixtures/machines.js';

const CRASHER = fileURLToPath(new URL('./fixtures/crasher.ts', import.meta.url));
const backends = (await allBackends('crash')).filter(
  (b) => b.name === 'sqlite file' || b.name === 'postgres',
);

describe.each(backends)('MachineRuntime after a crash ($name)', (backend) => {
  beforeAll(() => backend.setUp());
  afterAll(() => backend.tearDown());

  it('should restore the last committed state and accept events once the dead lock expires', async () => {
    const runtime = new MachineRuntime({ store: await backend.open(), lockTtl: 1 });
    try {
      const { snapshot: created } = await runtime.create(counterMachine);
      const id = created.id;
      await runtime.send(counterMachine, id, { type: 'INC' });
      const before = {
        snapshot: await runtime.restore(counterMachine, id),
        history: await runtime.store.history(id),
        states: await runtime.store.currentStates(id),
      };

      const crasher = startFixture(CRASHER, ['--url', backend.url(), '--id', id, '--ttl', '1']);
      await crasher.waitForLine((line) => line === HANG_SIGNAL, 30_000);
      crasher.child.kill('SIGKILL');
      expect(await crasher.exited).toBe('SIGKILL');

      // Nothing of the interrupted step reached the store.
      expect(await runtime.restore(counterMachine, id)).toEqual(before.snapshot);
      expect(await runtime.store.history(id)).toEqual(before.history);
      expect(await runtime.store.currentStates(id)).toEqual(before.states);

      // The dead process still holds the lock until it expires.
      const lock = await runtime.store.readLock(id);
      expect(lock).not.toBeNull();
      if (Date.parse(lock!.expiresAt) - Date.now() > 250) {
        const refused = await runtime
          .send(counterMachine, id, { type: 'INC' })
          .catch((error: unknown) => error);
        expect(refused).toBeInstanceOf(MachineAlreadyRunningException);
        expect((refused as MachineAlreadyRunningException).snapshot).toEqual(before.snapshot);
      }
      await sleep(Math.max(0, Date.parse(lock!.expiresAt) - Date.now()) + 100);

      const { snapshot } = await runtime.send(counterMachine, id, { type: 'INC' });
      expect(snapshot.value).toEqual(['counter.counting']);
      expect(snapshot.context.count).toBe(Number(before.snapshot.context.count) + 1);
      const history = await runtime.store.history(id);
      expect(history.slice(0, before.history.length)).toEqual(before.history);
      expect(history.map((record) => record.sequence)).toEqual(
        history.map((_, index) => index + 1),
      );
      expect(await runtime.store.readLock(id)).toBeNull();
    } finally {
      await runtime.close();
    }
  }, 60_000);
});
