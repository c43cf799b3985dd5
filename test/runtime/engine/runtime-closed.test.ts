/**
 * A runtime whose `close()` has begun refuses every entry point with `RuntimeClosedException`
 * (`MR_RUNTIME_CLOSED`), not the closed database's error; over HTTP that is the documented 503
 * with `Retry-After`, not a 500. Real listening servers (Fastify and Express) on a SQLite file.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ledgerMachine } from '../../../fixtures/http/ledger-machine.js';
import { defineMachine } from '../../../src/runtime/definition/define-machine.js';
import { RuntimeClosedException } from '../../../src/runtime/errors.js';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import { MachineRouter } from '../../../src/runtime/http/machine-router.js';
import { send, startServer, type TestServer } from '../http/support/servers.js';

const counter = defineMachine({
  config: { id: 'closing', initial: 'idle', states: { idle: { on: { GO: 'done' } }, done: {} } },
});

let dir: string;
let runtime: MachineRuntime;
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mr-runtime-closed-'));
  runtime = await MachineRuntime.open({ databaseUrl: `sqlite:${join(dir, 'machines.db')}` });
});
afterEach(async () => {
  await runtime.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('a closed runtime', () => {
  it('should refuse every entry point with RuntimeClosedException from the moment close() begins', async () => {
    const { snapshot } = await runtime.create(counter);
    // Not awaited: the refusals hold while the close is still in flight.
    const closing = runtime.close();
    const refused = [
      runtime.create(counter),
      runtime.createAndSend(counter, { type: 'GO' }),
      runtime.send(counter, snapshot.id, { type: 'GO' }),
      runtime.sendStateless(counter, { type: 'GO' }),
      runtime.restore(counter, snapshot.id),
      runtime.read(counter, snapshot.id),
      runtime.history(counter, snapshot.id),
      runtime.availableEvents(counter, snapshot),
      runtime.keptScenario(snapshot.id),
      runtime.children(snapshot.id),
      runtime.findInstancesInState(counter, 'idle', { limit: 10 }),
      runtime.watch(snapshot.id, () => {}),
      runtime.withLock(snapshot.id, async () => 1),
      runtime.tryWithLock(snapshot.id, async () => 1),
      runtime.bindBusinessKey(snapshot.id, 'k'),
    ];
    for (const answer of await Promise.allSettled(refused)) {
      expect(answer.status).toBe('rejected');
      const reason = (answer as PromiseRejectedResult).reason as RuntimeClosedException;
      expect(reason).toBeInstanceOf(RuntimeClosedException);
      expect(reason.code).toBe('MR_RUNTIME_CLOSED');
    }
    expect(() => runtime.sendStatelessSync(counter, { type: 'GO' })).toThrow(
      RuntimeClosedException,
    );
    await closing;
    // And after it ended.
    await expect(runtime.send(counter, snapshot.id, { type: 'GO' })).rejects.toBeInstanceOf(
      RuntimeClosedException,
    );
  });

  it.each(['fastify', 'express'] as const)(
    'should answer requests over %s with 503 and Retry-After once the runtime is closed',
    async (adapter) => {
      const router = new MachineRouter({ runtime });
      router.register(ledgerMachine, {
        prefix: 'ledgers',
        create: true,
        machineIdFor: ['NOTE'],
        reads: true,
      });
      const server: TestServer = await startServer(adapter, [router], { error: () => {} });
      try {
        const created = await send(server.url, 'POST', '/ledgers/create');
        expect(created.status).toBe(201);
        const id = (created.body as { data: { id: string } }).data.id;
        await runtime.close();
        for (const [method, path, body] of [
          ['POST', `/ledgers/${id}/note`, { payload: { n: 1 } }],
          ['GET', `/ledgers/${id}/status`, undefined],
          ['POST', '/ledgers/create', undefined],
        ] as const) {
          const answer = await send(server.url, method, path, body === undefined ? {} : { body });
          expect({ path, status: answer.status }).toEqual({ path, status: 503 });
          expect(answer.headers.get('retry-after')).toBe('1');
          expect((answer.body as { message: string }).message).toContain('runtime is closed');
        }
      } finally {
        await server.close();
      }
    },
  );
});
