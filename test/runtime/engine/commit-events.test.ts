/**
 * `MachineRuntime.onCommit`: an event after every committed step, per instance written, on a
 * real SQLite file.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MachineRuntime, type CommitEvent } from '../../../src/runtime/index.js';
import { sqliteFileBackend } from '../../support/stores.js';
import { counterMachine } from '../persistence/fixtures/machines.js';

const backend = sqliteFileBackend();
let runtime: MachineRuntime;

beforeAll(async () => {
  await backend.setUp();
  runtime = new MachineRuntime({ store: await backend.open(), onDeferredError: () => {} });
});
afterAll(async () => {
  await runtime.close();
  await backend.tearDown();
});

describe('MachineRuntime.onCommit', () => {
  it('should announce each committed step with its instance, sequence and snapshot', async () => {
    const events: CommitEvent[] = [];
    const unsubscribe = runtime.onCommit((event) => events.push(event));

    const created = await runtime.create(counterMachine);
    const sent = await runtime.send(counterMachine, created.snapshot.id, { type: 'INC' });
    unsubscribe();
    await runtime.send(counterMachine, created.snapshot.id, { type: 'INC' });

    expect(events).toEqual([
      {
        instanceId: created.snapshot.id,
        machineId: 'counter',
        sequence: created.snapshot.sequence,
        snapshot: created.snapshot,
        history: created.history,
      },
      {
        instanceId: created.snapshot.id,
        machineId: 'counter',
        sequence: sent.snapshot.sequence,
        snapshot: sent.snapshot,
        history: sent.history,
      },
    ]);
  });

  it('should announce nothing for a step that was not committed', async () => {
    const events: CommitEvent[] = [];
    const unsubscribe = runtime.onCommit((event) => events.push(event));
    const created = await runtime.create(counterMachine);

    await expect(
      runtime.send(counterMachine, created.snapshot.id, { type: 'UNKNOWN' }),
    ).rejects.toThrow();
    unsubscribe();

    expect(events.map((event) => event.sequence)).toEqual([created.snapshot.sequence]);
  });

  it('should keep the writer unaffected by a listener that throws', async () => {
    const failures: unknown[] = [];
    const quiet = new MachineRuntime({
      store: await backend.open(),
      onDeferredError: (error) => failures.push(error),
    });
    try {
      quiet.onCommit(() => {
        throw new Error('listener broke');
      });
      const created = await quiet.create(counterMachine);
      const sent = await quiet.send(counterMachine, created.snapshot.id, { type: 'INC' });

      expect(sent.snapshot.context).toEqual({ count: 1 });
      expect(failures.map((error) => (error as Error).message)).toEqual([
        'listener broke',
        'listener broke',
      ]);
    } finally {
      await quiet.close();
    }
  });
});
