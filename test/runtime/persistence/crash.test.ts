/**
 * A process SIGKILLed in the middle of a transition leaves the instance at its last committed
 * state, with no partial rows. The transition ran outside any transaction, holding the
 * instance's lock row (SQLite and PostgreSQL alike): until the lock TTL has passed the instance
 * refuses events with its last committed state, then accepts them again.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MachineAlreadyRunningException } from '../../../src/runtime/errors.js';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import type { HistoryRecord, MachineSnapshot } from '../../../src/runtime/interpreter/types.js';
import type { CurrentStateRow } from '../../../src/runtime/persistence/store.js';
import { startFixture } from '../../support/child-process.js';
import { allBackends, type StoreBackend } from '../../support/stores.js';
import { HANG_SIGNAL, counterMachine } from './fixtures/machines.js';

const CRASHER = fileURLToPath(new URL('./fixtures/crasher.ts', import.meta.url));
const backends = (await allBackends('crash')).filter(
  (b) => b.name === 'sqlite file' || b.name === 'postgres',
);

interface Committed {
  snapshot: MachineSnapshot;
  history: HistoryRecord[];
  states: CurrentStateRow[];
}

// Creates an instance with one committed event, starts a crasher sending HANG to it and
// SIGKILLs it inside the transition; checks nothing of the interrupted step reached the store.
async function crashMidTransition(
  runtime: MachineRuntime,
  backend: StoreBackend,
  crasherArgs: string[],
): Promise<Committed> {
  const { snapshot: created } = await runtime.create(counterMachine);
  const id = created.id;
  await runtime.send(counterMachine, id, { type: 'INC' });
  const before = {
    snapshot: await runtime.restore(counterMachine, id),
    history: await runtime.store.history(id),
    states: await runtime.store.currentStates(id),
  };

  const crasher = startFixture(CRASHER, ['--url', backend.url(), '--id', id, ...crasherArgs]);
  await crasher.waitForLine((line) => line === HANG_SIGNAL, 30_000);
  crasher.child.kill('SIGKILL');
  expect(await crasher.exited).toBe('SIGKILL');

  // Nothing of the interrupted step reached the store.
  expect(await runtime.restore(counterMachine, id)).toEqual(before.snapshot);
  expect(await runtime.store.history(id)).toEqual(before.history);
  expect(await runtime.store.currentStates(id)).toEqual(before.states);
  return before;
}

// The instance accepts the next event, continuing the committed history gap-free.
async function expectAcceptsNext(runtime: MachineRuntime, before: Committed): Promise<void> {
  const id = before.snapshot.id;
  const { snapshot } = await runtime.send(counterMachine, id, { type: 'INC' });
  expect(snapshot.value).toEqual(['counter.counting']);
  expect(snapshot.context.count).toBe(Number(before.snapshot.context.count) + 1);
  const history = await runtime.store.history(id);
  expect(history.slice(0, before.history.length)).toEqual(before.history);
  expect(history.map((record) => record.sequence)).toEqual(history.map((_, index) => index + 1));
  expect(await runtime.store.readLock(id)).toBeNull();
}

describe.each(backends)('MachineRuntime after a crash ($name)', (backend) => {
  beforeAll(() => backend.setUp());
  afterAll(() => backend.tearDown());

  it('should restore the last committed state and accept events once the dead lock expires', async () => {
    const runtime = new MachineRuntime({ store: await backend.open(), lockTtl: 1 });
    try {
      const before = await crashMidTransition(runtime, backend, ['--ttl', '1']);
      const id = before.snapshot.id;

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

      await expectAcceptsNext(runtime, before);
    } finally {
      await runtime.close();
    }
  }, 60_000);
});
