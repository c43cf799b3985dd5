/**
 * A process SIGKILLed in the middle of a transition leaves the instance at its last committed
 * state, with no partial rows. The transition ran outside any transaction, holding the
 * instance's lock row (SQLite and PostgreSQL alike): the row names its holder, known dead at
 * once, so the next event takes it over without waiting for the TTL.
 */
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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

  it("should restore the last committed state and take the dead holder's lock over at once", async () => {
    // The default TTL: only the holder's death frees the lock within this test.
    const runtime = new MachineRuntime({ store: await backend.open(), lockTtl: 60 });
    try {
      const before = await crashMidTransition(runtime, backend, ['--ttl', '60']);
      const id = before.snapshot.id;

      // The dead process's row is still there, a minute from expiry, and nobody is processing.
      const lock = await runtime.store.readLock(id);
      expect(Date.parse(lock!.expiresAt) - Date.now()).toBeGreaterThan(50_000);
      expect((await runtime.read(counterMachine, id)).isProcessing).toBe(false);

      await expectAcceptsNext(runtime, before);
    } finally {
      await runtime.close();
    }
  }, 60_000);
});
