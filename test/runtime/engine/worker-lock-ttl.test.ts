/**
 * `machine-routes worker` runs with the settings of the environment, as the server does: with
 * `MACHINE_LOCK_TTL=3`, a worker SIGKILLed while it delivers a timer fire leaves lock rows that
 * expire 3 s after they were taken (not the 60 s default), and another worker fires the
 * instances' timers a few seconds later. Real processes on a SQLite file.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import { startFixture, type FixtureProcess } from '../../support/child-process.js';
import { hangingMachine } from './fixtures/lock-ttl-machines.js';

const CLI = fileURLToPath(new URL('../delegation/fixtures/cli.ts', import.meta.url));
const CONFIG = fileURLToPath(new URL('./fixtures/lock-ttl.config.ts', import.meta.url));

describe('machine-routes worker with MACHINE_LOCK_TTL', () => {
  let dir: string;
  let url: string;
  let runtime: MachineRuntime;
  const processes: FixtureProcess[] = [];
  const worker = (env: Record<string, string>): FixtureProcess => {
    const started = startFixture(CLI, ['worker', '--config', CONFIG, '--database', url], {
      MACHINE_LOCK_TTL: '3',
      ...env,
    });
    processes.push(started);
    return started;
  };

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mr-worker-lock-ttl-'));
    url = `sqlite:${dir}/app.db`;
    runtime = await MachineRuntime.open({ databaseUrl: url, worker: false });
  });
  afterEach(async () => {
    for (const started of processes.splice(0)) {
      started.child.kill('SIGKILL');
      await started.exited;
    }
    await runtime.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('should leave locks living 3 s when SIGKILLed mid-sweep, and fire the timers soon after', async () => {
    const ids: string[] = [];
    for (let index = 0; index < 3; index += 1)
      ids.push((await runtime.create(hangingMachine)).snapshot.id);
    await sleep(1_100);
    // Blocks inside the first fire's transition, holding that instance's lock.
    const doomed = worker({ HANG_MS: '120000' });
    await doomed.waitForLine((line) => line === 'HANGING', 60_000);
    doomed.child.kill('SIGKILL');
    expect(await doomed.exited).toBe('SIGKILL');
    const locks = (await Promise.all(ids.map((id) => runtime.store.readLock(id)))).filter(
      (lock) => lock !== null,
    );
    expect(locks.length).toBeGreaterThan(0);
    for (const lock of locks) {
      expect(lock.context).toBe('timer');
      expect(Date.parse(lock.expiresAt) - Date.parse(lock.acquiredAt)).toBe(3_000);
    }

    const survivor = worker({});
    await survivor.waitForLine((line) => line.startsWith('Worker running'), 60_000);
    const runningAt = Date.now();
    await vi.waitFor(
      async () => {
        for (const id of ids)
          expect((await runtime.restore(hangingMachine, id)).status).toBe('done');
      },
      { timeout: 20_000, interval: 100 },
    );
    // The dead worker's locks have expired: the survivor's first sweeps deliver every fire.
    expect(Date.now() - runningAt).toBeLessThan(5_000);
    for (const id of ids)
      expect((await runtime.restore(hangingMachine, id)).context).toEqual({ fired: 1 });
  }, 180_000);
});
