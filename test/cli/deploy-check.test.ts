/**
 * Safe deploys: `machine-routes check --database <url>` against live instances written by the
 * previous version of a machine, on a SQLite file and PostgreSQL; and the run-time answer of an
 * instance in a state its definition no longer has (409 naming the state, not 404), over HTTP.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerMachine } from '../../fixtures/http/ledger-machine.js';
import { defineMachine } from '../../src/runtime/definition/define-machine.js';
import { MachineRuntime } from '../../src/runtime/engine/machine-runtime.js';
import { MachineRouter } from '../../src/runtime/http/machine-router.js';
import { postgresBackend, sqliteFileBackend, type StoreBackend } from '../support/stores.js';
import { send, startServer, type TestServer } from '../runtime/http/support/servers.js';
import { run } from './run-cli.js';

const V2 = 'fixtures/deploy/ledger-v2.config.ts';

/** The v2 machine of the config, defined on this module instance for the HTTP test. */
const ledgerV2 = defineMachine({
  config: {
    id: 'ledger',
    initial: 'open',
    context: { notes: '', seen: [] as number[], total: 0 },
    states: {
      open: { on: { NOTE: {}, CLOSE: 'closed', SHELVE: 'shelved' } },
      shelved: { on: { REOPEN: 'open' } },
      closed: { type: 'final' },
    },
  },
  endpoints: ['NOTE', 'CLOSE', 'SHELVE', 'REOPEN'],
});

const backends: StoreBackend[] = [sqliteFileBackend()];
const postgres = await postgresBackend('deploy-check');
if (postgres) backends.push(postgres);

describe.each(backends)('safe deploys on $name', (backend) => {
  let runtime: MachineRuntime;
  let archived: string;

  beforeAll(async () => {
    await backend.setUp();
    runtime = await MachineRuntime.open({
      databaseUrl: backend.url(),
      migrate: true,
      worker: false,
    });
    const empty = await run(['check', '--config', V2, '--database', backend.url()]);
    expect(empty.code).toBe(0);
    expect(empty.stdout).toContain('live instances compatible');
    // Version 1 wrote these: one active instance in `archived` (renamed `shelved` in v2), one
    // done in `closed`, histories with ADD and ARCHIVE, numeric `notes`.
    archived = (await runtime.create(ledgerMachine)).snapshot.id;
    await runtime.send(ledgerMachine, archived, { type: 'NOTE', payload: { n: 1 } });
    await runtime.send(ledgerMachine, archived, { type: 'ADD', payload: { amount: 5 } });
    await runtime.send(ledgerMachine, archived, { type: 'ARCHIVE' });
    const closed = (await runtime.create(ledgerMachine)).snapshot.id;
    await runtime.send(ledgerMachine, closed, { type: 'NOTE', payload: { n: 2 } });
    await runtime.send(ledgerMachine, closed, { type: 'CLOSE' });
  }, 60_000);
  afterAll(async () => {
    await runtime?.close();
    await backend.tearDown();
  });

  it('should report states removed under active instances and changed context types, exit 1', async () => {
    const result = await run(['check', '--config', V2, '--database', backend.url()]);
    expect(result.code).toBe(1);
    const lines = result.stdout.split('\n');
    expect(lines).toContain(
      "warning: RemovedHistoryEventException [MR_REMOVED_HISTORY_EVENT] Event 'ADD' of machine 'ledger' is in 1 persisted history record but no longer in the definition. Histories stay readable (restore never replays them); tools reading them must know the old type.",
    );
    expect(result.stdout).toContain(
      "Event 'ARCHIVE' of machine 'ledger' is in 1 persisted history record",
    );
    expect(lines).toContain(
      "RemovedStateInUseException [MR_REMOVED_STATE_IN_USE] State 'ledger.archived' of machine 'ledger' was removed or renamed, but 1 active instance sits in it. Its next request would answer 409: keep the state, or move it to one of ledger.open, ledger.shelved, ledger.closed before deploying.",
    );
    expect(lines).toContain(
      "ContextTypeChangedException [MR_CONTEXT_TYPE_CHANGED] Context key 'notes' of machine 'ledger' changed type: the definition says expected string, 2 stored instances hold number. Migrate the stored contexts or keep the old type (a schema can accept both).",
    );
    expect(result.stderr).toBe('2 problems found.');
  });

  it('should report the same in json and github formats', async () => {
    const json = await run([
      'check',
      '--config',
      V2,
      '--database',
      backend.url(),
      '--format',
      'json',
    ]);
    expect(json.code).toBe(1);
    const report = JSON.parse(json.stdout) as {
      ok: boolean;
      issues: { code: string; details: { key: string } }[];
      warnings: { code: string; details: { key: string } }[];
    };
    expect(report.ok).toBe(false);
    expect(report.issues.map((issue) => [issue.code, issue.details.key])).toEqual([
      ['MR_REMOVED_STATE_IN_USE', 'ledger.archived'],
      ['MR_CONTEXT_TYPE_CHANGED', 'notes'],
    ]);
    expect(report.warnings.map((issue) => [issue.code, issue.details.key])).toEqual([
      ['MR_REMOVED_HISTORY_EVENT', 'ADD'],
      ['MR_REMOVED_HISTORY_EVENT', 'ARCHIVE'],
    ]);
    const github = await run([
      'check',
      '--config',
      V2,
      '--database',
      backend.url(),
      '--format',
      'github',
    ]);
    expect(github.code).toBe(1);
    expect(github.stdout).toMatch(
      /^::error title=RemovedStateInUseException \[MR_REMOVED_STATE_IN_USE\]::/m,
    );
    expect(github.stdout).toMatch(/^::warning title=RemovedHistoryEventException/m);
  });

  it('should answer 409 naming the removed state at run time, not 404', async () => {
    const router = new MachineRouter({ runtime });
    router.register(ledgerV2, {
      prefix: 'ledgers',
      machineIdFor: ['NOTE', 'CLOSE', 'SHELVE', 'REOPEN'],
      reads: true,
    });
    const server: TestServer = await startServer('fastify', [router], { error: () => {} });
    try {
      const expected = {
        message: `Machine '${archived}' of 'ledger' is in state 'ledger.archived', which the current definition no longer has (removed or renamed). Restore the state or migrate the instance; 'machine-routes check --database <url>' lists such instances before a deploy.`,
      };
      const reopen = await send(server.url, 'POST', `/ledgers/${archived}/reopen`);
      expect(reopen).toMatchObject({ status: 409, body: expected });
      const read = await send(server.url, 'GET', `/ledgers/${archived}/status`);
      expect(read).toMatchObject({ status: 409, body: expected });
      // An unknown id stays a 404.
      expect(
        (await send(server.url, 'POST', '/ledgers/01ARZ3NDEKTSV4RRFFQ69G5FAV/reopen')).status,
      ).toBe(404);
    } finally {
      await server.close();
    }
  });
});
