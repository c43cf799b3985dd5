/**
 * `startWorker` starts its runtime through the composition root: with `machines` it runs the
 * engine's jobs of those machines with the settings every other start-up path resolves (options
 * over `env` over `process.env`); without, only the handlers it is given, leaving the engine's
 * jobs to other processes. A server runtime (no worker) and the worker share one SQLite file.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import { startWorker, type RunningWorker } from '../../../src/runtime/engine/worker.js';
import type { SqliteStore } from '../../../src/runtime/persistence/sqlite-store.js';
import { loanMachine } from '../delegation/fixtures/machines.js';

let dir: string;
let server: MachineRuntime;
let worker: RunningWorker | null = null;
const url = () => `sqlite:${join(dir, 'worker.db')}`;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mr-start-worker-'));
  server = await MachineRuntime.open({ databaseUrl: url(), worker: false, env: {} });
});
afterEach(async () => {
  vi.unstubAllEnvs();
  await worker?.stop();
  worker = null;
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Every job ever stored (a done job's row is deleted): a trigger keeps a copy. */
function recordJobs(): void {
  (server.store as SqliteStore).database.exec(`
    CREATE TABLE seen_jobs (name TEXT, max_attempts INTEGER);
    CREATE TRIGGER seen_jobs_insert AFTER INSERT ON machine_jobs
    BEGIN INSERT INTO seen_jobs VALUES (NEW.name, NEW.max_attempts); END;`);
}

function seenJobs(): { name: string; max_attempts: number }[] {
  return (server.store as SqliteStore).database
    .prepare('SELECT name, max_attempts FROM seen_jobs ORDER BY rowid')
    .all() as never;
}

function waitingJobs(): { name: string; status: string }[] {
  return (server.store as SqliteStore).database
    .prepare('SELECT name, status FROM machine_jobs ORDER BY rowid')
    .all() as never;
}

describe('startWorker', () => {
  it("should run the engine's jobs of its machines, with env layered over process.env", async () => {
    // The worker's own setting, from process.env while `env` names another.
    vi.stubEnv('MACHINE_JOB_TRIES', '6');
    recordJobs();
    const { snapshot } = await server.create(loanMachine);
    // The child fails to start (exploding machine): the worker routes @fail in the parent.
    await server.send(loanMachine, snapshot.id, { type: 'SCORE' });
    worker = await startWorker({
      databaseUrl: url(),
      machines: [loanMachine],
      env: { MACHINE_JOB_CONCURRENCY: '2' },
      pollIntervalMs: 20,
      handleSignals: false,
    });
    await vi.waitFor(
      async () =>
        expect((await server.restore(loanMachine, snapshot.id)).value).toEqual(['loan.failed']),
      { timeout: 10_000, interval: 20 },
    );
    // The completion job was enqueued by the worker's runtime, with the worker's settings;
    // the start job by the server, with its own (the default 3).
    expect(seenJobs()).toEqual([
      { name: 'machine-routes.child.start', max_attempts: 3 },
      { name: 'machine-routes.child.complete', max_attempts: 6 },
    ]);
  });

  it("should leave the engine's jobs alone without machines, and run its own handlers", async () => {
    const { snapshot } = await server.create(loanMachine);
    await server.send(loanMachine, snapshot.id, { type: 'SCORE' });
    const ran: unknown[] = [];
    worker = await startWorker({
      databaseUrl: url(),
      pollIntervalMs: 20,
      handleSignals: false,
      handlers: { 'plain.job': (payload) => void ran.push(payload) },
    });
    await worker.queue.enqueue({ name: 'plain.job', payload: 1 });
    await worker.queue.drain({ names: ['plain.job'], timeoutMs: 10_000 });
    expect(ran).toEqual([1]);
    // The child's start job waits for a worker that knows the machine.
    expect(waitingJobs()).toEqual([{ name: 'machine-routes.child.start', status: 'queued' }]);
    expect((await server.restore(loanMachine, snapshot.id)).value).toEqual(['loan.scoring']);
  });
});
