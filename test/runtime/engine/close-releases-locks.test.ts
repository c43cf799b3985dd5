/**
 * A runtime closing while steps still hold their instances' locks (requests a shutdown cut at
 * its bound, jobs it abandoned) deletes those lock rows before its store closes, instead of
 * leaving them to the next writer's dead-holder check or their TTL. On a SQLite file and on
 * PostgreSQL; the rows are read through a store of their own after the close.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineMachine } from '../../../src/runtime/definition/define-machine.js';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import type { Store } from '../../../src/runtime/persistence/store.js';
import { deferred } from '../jobs/support/backends.js';
import { postgresBackend, sqliteFileBackend, type StoreBackend } from '../../support/stores.js';

const counter = defineMachine({
  config: { id: 'close_lock', initial: 'idle', states: { idle: { on: { GO: 'done' } }, done: {} } },
  endpoints: ['GO'],
});

const backends: StoreBackend[] = [sqliteFileBackend()];
const postgres = await postgresBackend('engine/close-locks');
if (postgres) backends.push(postgres);

describe.each(backends)('runtime close with steps still holding locks on $name', (backend) => {
  let reader: Store;

  beforeAll(async () => {
    await backend.setUp();
  });
  afterAll(async () => {
    await reader?.close();
    await backend.tearDown();
  });

  it('should delete the lock rows of steps still running, and no others', async () => {
    // A long lock TTL: only the close can have removed the rows the test reads.
    const runtime = await MachineRuntime.open({
      databaseUrl: backend.url(),
      migrate: true,
      machines: [counter],
      env: { MACHINE_LOCK_TTL: '3600' },
    });
    const held = [(await runtime.create(counter)).snapshot.id];
    held.push((await runtime.create(counter)).snapshot.id);
    const free = (await runtime.create(counter)).snapshot.id;
    await runtime.send(counter, free, { type: 'GO' });
    // Two steps that never finish: each holds its instance's lock row.
    const entered = held.map(() => deferred());
    held.forEach((id, index) => {
      void runtime
        .withLock(id, () => {
          entered[index]!.resolve();
          return new Promise<never>(() => {});
        })
        .catch(() => {});
    });
    await Promise.all(entered.map((step) => step.promise));
    reader = await backend.open();
    for (const id of held) expect(await reader.readLock(id)).not.toBeNull();

    await runtime.close({ jobTimeoutMs: 0 });

    for (const id of [...held, free]) expect(await reader.readLock(id)).toBeNull();
  });
});
