/**
 * An operator's cancel from the CLI racing an application's send, as two real OS processes on
 * one store (SQLite file, PostgreSQL): the application process's `WORK` holds its step (and the
 * instance lock) in a slow action, and `machine-routes instances cancel` runs meanwhile in its
 * own process.
 * - waiting (`--wait`): the cancel applies after the send, never in its middle: both land, in
 *   that order;
 * - not waiting (`--wait 0`): the cancel is refused (MR_MACHINE_ALREADY_RUNNING) and writes
 *   nothing; the send lands.
 * Either way one step wins at a time, nothing is lost, and the history is gap-free.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import { postgresBackend, sqliteFileBackend, type StoreBackend } from '../../support/stores.js';
import { startFixture, type FixtureProcess } from '../../support/child-process.js';
import { raceMachine } from './race/machines.js';

const HERE = 'test/runtime/operations/race';
const backends: StoreBackend[] = [sqliteFileBackend()];
const postgres = await postgresBackend('operations-cancel-race');
if (postgres !== null) backends.push(postgres);

async function until(test: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!test()) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}.`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe.each(backends)('cancel racing a send, two processes ($name)', (backend) => {
  let dir: string;
  let sender: FixtureProcess;

  beforeAll(async () => {
    await backend.setUp();
    // Migrated once, before two processes open it.
    await (
      await MachineRuntime.open({ databaseUrl: backend.url(), worker: false, migrate: true })
    ).close();
  }, 60_000);
  afterAll(() => backend.tearDown());
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mr-race-'));
    sender = startFixture(`${HERE}/sender.ts`, [backend.url()], { MR_RACE_DIR: dir });
    await sender.waitForLine((line) => line === 'READY', 60_000);
  }, 90_000);
  afterEach(async () => {
    sender.child.kill('SIGTERM');
    await sender.exited;
    rmSync(dir, { recursive: true, force: true });
  });

  async function created(): Promise<string> {
    const runtime = await MachineRuntime.open({ databaseUrl: backend.url(), worker: false });
    try {
      return (await runtime.create(raceMachine)).snapshot.id;
    } finally {
      await runtime.close();
    }
  }

  async function history(id: string) {
    const runtime = await MachineRuntime.open({ databaseUrl: backend.url(), worker: false });
    try {
      return await runtime.store.history(id);
    } finally {
      await runtime.close();
    }
  }

  function cancel(id: string, wait: string): FixtureProcess {
    return startFixture(
      `${HERE}/cli.ts`,
      [
        'instances',
        'cancel',
        'race',
        id,
        '--event',
        'CANCEL',
        '--who',
        'ops-race',
        '--wait',
        wait,
        '--config',
        `${HERE}/machine-routes.config.ts`,
        '--database',
        backend.url(),
      ],
      { MR_RACE_DIR: dir },
    );
  }

  it('should apply a waiting cancel after the send in flight: both land, in order', async () => {
    const id = await created();
    sender.child.stdin.write(`SEND ${id}\n`);
    await until(() => existsSync(join(dir, 'in-action')), 30_000, 'the send to hold its step');
    const cli = cancel(id, '60000');
    await until(() => existsSync(join(dir, 'cli-loaded')), 60_000, 'the CLI to load its config');
    // The CLI opens its runtime and asks for the lock the send holds.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    writeFileSync(join(dir, 'gate'), 'open');
    const sent = await sender.waitForLine((line) => /^(SENT|REFUSED) /.test(line), 30_000);
    expect(sent).toMatch(/^SENT \d+$/);
    const done = await cli.waitForLine((line) => line.startsWith('Machine '), 60_000);
    expect(done).toBe(`Machine '${id}' is now in race.cancelled (done).`);
    expect(await cli.exited).toBe(0);

    const records = await history(id);
    expect(records.map((record) => record.sequence)).toEqual(records.map((_r, i) => i + 1));
    const external = records.filter((record) => record.source === 'external');
    expect(external.map((record) => [record.type, record.actor])).toEqual([
      ['WORK', null],
      ['CANCEL', 'operator:ops-race'],
    ]);
    expect(records.at(-1)!.context).toEqual({ steps: 1 });
  }, 120_000);

  it('should refuse a cancel that does not wait, writing nothing; the send lands', async () => {
    const id = await created();
    sender.child.stdin.write(`SEND ${id}\n`);
    await until(() => existsSync(join(dir, 'in-action')), 30_000, 'the send to hold its step');
    const cli = cancel(id, '0');
    expect(await cli.exited).toBe(1);
    expect(cli.stderr()).toMatch(/MachineAlreadyRunningException \[MR_MACHINE_ALREADY_RUNNING\]/);
    writeFileSync(join(dir, 'gate'), 'open');
    const sent = await sender.waitForLine((line) => /^(SENT|REFUSED) /.test(line), 30_000);
    expect(sent).toMatch(/^SENT \d+$/);

    const records = await history(id);
    expect(records.map((record) => record.sequence)).toEqual(records.map((_r, i) => i + 1));
    expect(
      records.filter((record) => record.source === 'external').map((record) => record.type),
    ).toEqual(['WORK']);
    expect(records.at(-1)!.value).toEqual(['race.active.working']);
  }, 120_000);
});
