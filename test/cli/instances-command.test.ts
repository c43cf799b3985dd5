/**
 * `machine-routes instances list|show|history` in-process against the example config, on a
 * SQLite file and on PostgreSQL: JSON output, the human tables, paging with the printed cursor,
 * and a refused query as one line with exit code 1.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/runtime/clock.js';
import { MachineRuntime } from '../../src/runtime/engine/machine-runtime.js';
import { orderMachine } from '../../fixtures/example/machines/order.js';
import { postgresBackend, sqliteFileBackend, type StoreBackend } from '../support/stores.js';
import { runCli } from '../../src/cli/main.js';
import { redactStoreUrl } from '../../src/runtime/store-url.js';

const CONFIG = 'fixtures/example/machine-routes.config.ts';
const backends: StoreBackend[] = [sqliteFileBackend()];
const postgres = await postgresBackend('instances-command');
if (postgres !== null) backends.push(postgres);

async function run(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const code = await runCli(argv, {
    cwd: process.cwd(),
    stdout: (text) => stdout.push(text),
    stderr: (text) => stderr.push(text),
  });
  return { code, stdout: stdout.join('\n'), stderr: stderr.join('\n') };
}

describe.each(backends)('machine-routes instances ($name)', (backend) => {
  /** Submitted 3 and 2 minutes ago, then one cancelled. */
  let submitted: string[];
  let cancelled: string;
  const store = () => ['--config', CONFIG, '--database', backend.url()];
  /** What every run says on stderr first: the store it opened. */
  const storeLine = () => `Store: ${redactStoreUrl(backend.url())} (from --database)`;

  beforeAll(async () => {
    await backend.setUp();
    submitted = [];
    for (const minutesAgo of [3, 2, 1]) {
      const clock = new ManualClock(Date.now() - minutesAgo * 60_000);
      const runtime = await MachineRuntime.open({
        databaseUrl: backend.url(),
        worker: false,
        clock,
        migrate: true,
      });
      const { snapshot } = await runtime.create(orderMachine);
      await runtime.send(orderMachine, snapshot.id, { type: 'SUBMIT', payload: { amount: 5 } });
      if (minutesAgo === 1) {
        await runtime.send(orderMachine, snapshot.id, { type: 'CANCEL' });
        cancelled = snapshot.id;
      } else submitted.push(snapshot.id);
      await runtime.close();
    }
  });
  afterAll(() => backend.tearDown());

  it('should list the instances in a state as JSON, longest stay first, with a cursor', async () => {
    const first = await run([
      'instances',
      'list',
      'order',
      '--state',
      'submitted',
      '--limit',
      '1',
      '--json',
      ...store(),
    ]);
    expect(first.stderr).toBe(storeLine());
    expect(first.code).toBe(0);
    const page = JSON.parse(first.stdout) as { items: { id: string }[]; nextCursor: string };
    expect(page.items.map((item) => item.id)).toEqual([submitted[0]]);
    const second = await run([
      'instances',
      'list',
      'order',
      '--state',
      'submitted',
      '--limit',
      '1',
      '--json',
      '--cursor',
      page.nextCursor,
      ...store(),
    ]);
    expect(JSON.parse(second.stdout)).toMatchObject({
      items: [{ id: submitted[1] }],
      nextCursor: null,
    });
  });

  it('should print a table of the newest instances and the command for the next page', async () => {
    const result = await run(['instances', 'list', 'order', '--limit', '2', ...store()]);
    expect(result.code).toBe(0);
    const lines = result.stdout.split('\n');
    expect(lines[0]).toMatch(/^ID +STATE +SINCE +STATUS +KEY +CREATED +UPDATED$/);
    expect(lines[2]).toContain(`${cancelled}  order.cancelled`);
    expect(lines[2]).toContain(' done ');
    expect(lines[3]).toContain(`${submitted[1]}  order.submitted`);
    expect(lines[5]).toMatch(/^More: --cursor \S+$/);
  });

  it('should show one instance with its pending timer and no lock', async () => {
    const json = await run(['instances', 'show', 'order', submitted[0]!, '--json', ...store()]);
    const record = JSON.parse(json.stdout) as {
      states: { id: string; enteredAt: string }[];
      timers: { eventType: string; dueAt: string; registered: boolean }[];
      lock: null;
    };
    expect(record.lock).toBeNull();
    expect(record.timers).toMatchObject([{ eventType: 'EXPIRE', registered: true }]);
    expect(Date.parse(record.timers[0]!.dueAt) - Date.parse(record.states[0]!.enteredAt)).toBe(
      15 * 60_000,
    );
    const human = await run(['instances', 'show', 'order', submitted[0]!, ...store()]);
    expect(human.stdout).toContain('Lock: none');
    expect(human.stdout).toMatch(
      new RegExp(`order\\.submitted:EXPIRE:900 +EXPIRE +${record.timers[0]!.dueAt} +0 +yes`),
    );
  });

  it('should print the external history of an instance as a timeline', async () => {
    const result = await run([
      'instances',
      'history',
      'order',
      cancelled,
      '--source',
      'external',
      ...store(),
    ]);
    expect(result.code).toBe(0);
    const rows = result.stdout.split('\n').slice(2);
    expect(rows.map((row) => row.split(/ {2,}/)[3])).toEqual(['SUBMIT', 'CANCEL']);
  });

  it('should refuse an unknown state and an unknown instance with one line and exit code 1', async () => {
    const state = await run(['instances', 'list', 'order', '--state', 'shipped', ...store()]);
    expect(state).toEqual({
      code: 1,
      stdout: '',
      stderr: expect.stringMatching(
        /^Store: [^\n]*\nInvalidOperationQueryException \[MR_INVALID_OPERATION_QUERY\] Machine 'order' has no state 'shipped': filter by one of draft, submitted, /,
      ),
    });
    const missing = await run([
      'instances',
      'show',
      'order',
      '01ARZ3NDEKTSV4RRFFQ69G5FAV',
      ...store(),
    ]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(
      /^Store: [^\n]*\nMachineNotFoundException \[MR_MACHINE_NOT_FOUND\]/,
    );
    const source = await run([
      'instances',
      'history',
      'order',
      cancelled,
      '--source',
      'mine',
      ...store(),
    ]);
    expect(source).toMatchObject({
      code: 1,
      stderr: `${storeLine()}\n--source must be one of external, internal, got 'mine'.`,
    });
  });

  it('should cancel, send an operator event and release a lock, recorded as the operator', async () => {
    const runtime = await MachineRuntime.open({ databaseUrl: backend.url(), worker: false });
    let id: string;
    try {
      id = (await runtime.create(orderMachine)).snapshot.id;
      await runtime.send(orderMachine, id, { type: 'SUBMIT', payload: { amount: 5 } });
    } finally {
      await runtime.close();
    }
    const operator = ['--who', 'ops-1', ...store()];
    const quote = await run([
      'instances',
      'send',
      'order',
      id,
      'QUOTE',
      '--payload',
      '{"quantity":2}',
      ...operator,
    ]);
    expect(quote).toEqual({
      code: 0,
      stdout: `Machine '${id}' is now in order.submitted (active).`,
      stderr: storeLine(),
    });
    const cancel = await run([
      'instances',
      'cancel',
      'order',
      id,
      '--event',
      'CANCEL',
      ...operator,
    ]);
    expect(cancel).toEqual({
      code: 0,
      stdout: `Machine '${id}' is now in order.cancelled (done).`,
      stderr: storeLine(),
    });
    const history = await run([
      'instances',
      'history',
      'order',
      id,
      '--source',
      'external',
      '--json',
      ...store(),
    ]);
    const records = (
      JSON.parse(history.stdout) as { items: { type: string; actor: string | null }[] }
    ).items;
    expect(records.map((record) => [record.type, record.actor])).toEqual([
      ['SUBMIT', null],
      ['QUOTE', 'operator:ops-1'],
      ['CANCEL', 'operator:ops-1'],
    ]);
    const release = await run(['instances', 'release', 'order', id, ...operator]);
    expect(release).toEqual({
      code: 0,
      stdout: `Machine '${id}' holds no lock.`,
      stderr: storeLine(),
    });
  });

  it('should pause, refuse an event while paused, resume and fire the timer now, as the operator', async () => {
    const runtime = await MachineRuntime.open({ databaseUrl: backend.url(), worker: false });
    let id: string;
    try {
      id = (await runtime.create(orderMachine)).snapshot.id;
      await runtime.send(orderMachine, id, { type: 'SUBMIT', payload: { amount: 5 } });
    } finally {
      await runtime.close();
    }
    const operator = ['--who', 'ops-2', ...store()];
    const pause = await run(['instances', 'pause', 'order', id, '--json', ...operator]);
    expect(pause.code).toBe(0);
    expect(JSON.parse(pause.stdout)).toMatchObject({
      snapshot: { pausedAt: expect.any(String) },
      record: { type: '@operator.pause', actor: 'operator:ops-2' },
    });
    const refused = await run(['instances', 'send', 'order', id, 'CANCEL', ...operator]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^InstancePausedException \[MR_INSTANCE_PAUSED\] /m);
    const firePaused = await run(['instances', 'fire', 'order', id, ...operator]);
    expect(firePaused.stderr).toContain('MR_INSTANCE_PAUSED');
    const listed = await run(['instances', 'show', 'order', id, '--json', ...store()]);
    expect(JSON.parse(listed.stdout).instance.pausedAt).toEqual(expect.any(String));

    const resume = await run(['instances', 'resume', 'order', id, ...operator]);
    expect(resume.stdout).toMatch(
      new RegExp(`^Machine '${id}' resumed \\(history record \\d+\\)\\.$`),
    );
    const fire = await run(['instances', 'fire', 'order', id, '--json', ...operator]);
    expect(fire.code).toBe(0);
    expect(JSON.parse(fire.stdout)).toMatchObject({
      timer: { key: 'order.submitted:EXPIRE:900', eventType: 'EXPIRE' },
      delivered: 1,
    });
    const history = await run([
      'instances',
      'history',
      'order',
      id,
      '--json',
      '--limit',
      '500',
      ...store(),
    ]);
    const records = (
      JSON.parse(history.stdout) as {
        items: { type: string; actor: string | null; sequence: number }[];
      }
    ).items;
    expect(
      records
        .filter((record) => record.type.startsWith('@operator.') || record.type === 'EXPIRE')
        .map((record) => [record.type, record.actor]),
    ).toEqual([
      ['@operator.pause', 'operator:ops-2'],
      ['@operator.resume', 'operator:ops-2'],
      ['@operator.fire', 'operator:ops-2'],
      ['EXPIRE', null],
    ]);
    expect(records.map((record) => record.sequence)).toEqual(records.map((_r, i) => i + 1));
    const retry = await run(['instances', 'retry', 'order', id, ...operator]);
    expect(retry).toMatchObject({
      code: 1,
      stderr: expect.stringContaining('has no failed jobs to retry'),
    });
  });
});
