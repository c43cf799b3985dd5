/**
 * Two OS processes x 50 concurrent sends to one instance: every send either commits or is
 * refused with MachineAlreadyRunningException, and the history stays gap-free.
 */
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import { startFixture } from '../../support/child-process.js';
import { allBackends } from '../../support/stores.js';
import { counterMachine } from './fixtures/machines.js';

const SENDER = fileURLToPath(new URL('./fixtures/sender.ts', import.meta.url));
const backends = (await allBackends('concurrency')).filter(
  (b) => b.name === 'sqlite file' || b.name === 'postgres',
);

interface SenderResult {
  committed: number;
  alreadyRunning: number;
  errors: string[];
}

describe.each(backends)('MachineRuntime.send across processes ($name)', (backend) => {
  beforeAll(() => backend.setUp());
  afterAll(() => backend.tearDown());

  it('should commit or refuse each of 2 x 50 concurrent sends, with gap-free history', async () => {
    const runtime = new MachineRuntime({ store: await backend.open() });
    try {
      const created = await runtime.create(counterMachine);
      const id = created.snapshot.id;
      // Start times spread so that some sends overlap (refused) and some do not (committed).
      const jitter = backend.name === 'postgres' ? '150' : '15';
      const senders = [0, 1].map(() =>
        startFixture(SENDER, [
          '--url',
          backend.url(),
          '--id',
          id,
          '--count',
          '50',
          '--jitter',
          jitter,
        ]),
      );
      await Promise.all(
        senders.map((sender) => sender.waitForLine((line) => line === 'ready', 30_000)),
      );
      for (const sender of senders) sender.child.stdin.end('go\n');
      const results = await Promise.all(
        senders.map(
          async (sender) =>
            JSON.parse(
              await sender.waitForLine((line) => line.startsWith('{'), 60_000),
            ) as SenderResult,
        ),
      );
      await Promise.all(senders.map((sender) => sender.exited));

      for (const result of results) {
        expect(result.errors).toEqual([]);
        expect(result.committed + result.alreadyRunning).toBe(50);
      }
      const committed = results.reduce((sum, result) => sum + result.committed, 0);
      expect(committed).toBeGreaterThan(0);
      console.info(
        `${backend.name}: ${committed} committed, ${100 - committed} refused (lock held)`,
      );

      const history = await runtime.store.history(id);
      expect(history.map((record) => record.sequence)).toEqual(
        history.map((_, index) => index + 1),
      );
      expect(new Set(history.map((record) => record.id)).size).toBe(history.length);
      expect(history.filter((record) => record.source === 'external')).toHaveLength(committed);
      const snapshot = await runtime.restore(counterMachine, id);
      expect(snapshot.context.count).toBe(committed);
      expect(snapshot.sequence).toBe(history.length);
      expect(await runtime.store.readLock(id)).toBeNull();
    } finally {
      await runtime.close();
    }
  }, 90_000);
});
