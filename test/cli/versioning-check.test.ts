/**
 * `check --database` learns migrations (docs/versioning.md), and `instances migrate` runs from
 * the CLI, on a SQLite file and PostgreSQL: live v1 instances; a v2 deploy with a migration
 * covering every live state and context passes; without it, it fails naming the uncovered
 * states; a migration that forgets a live state fails naming it and an instance in it; a dry run
 * of a throwing context function fails naming an instance, and `instances migrate --dry-run`
 * lists every instance that would fail in its table and writes nothing; a rollback is refused
 * unless a down migration exists.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { MachineRuntime } from '../../src/runtime/engine/machine-runtime.js';
import { postgresBackend, sqliteFileBackend, type StoreBackend } from '../support/stores.js';
import { loanV1 } from '../runtime/versioning/fixtures/loans.js';
import { run } from './run-cli.js';

const CONFIG = 'fixtures/versioning/loan-v2.config.ts';

const backends: StoreBackend[] = [sqliteFileBackend()];
const postgres = await postgresBackend('versioning-check');
if (postgres) backends.push(postgres);

async function check(url: string, variant: string) {
  process.env.LOAN_DEPLOY = variant;
  try {
    return await run(['check', '--config', CONFIG, '--database', url]);
  } finally {
    delete process.env.LOAN_DEPLOY;
  }
}

describe.each(backends)('check --database with migrations on $name', (backend) => {
  let runtime: MachineRuntime;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    await backend.setUp();
    runtime = await MachineRuntime.open({
      databaseUrl: backend.url(),
      migrate: true,
      worker: false,
    });
    for (const [state, events] of [
      ['applied', []],
      ['reviewing', ['REVIEW']],
      ['approved', ['APPROVE']],
    ] as const) {
      const { snapshot } = await runtime.create(loanV1, { input: { amount: '3' } });
      for (const type of events) await runtime.send(loanV1, snapshot.id, { type });
      ids[state] = snapshot.id;
    }
  }, 60_000);
  afterAll(async () => {
    await runtime?.close();
    await backend.tearDown();
  });
  afterEach(() => void delete process.env.LOAN_DEPLOY);

  it('passes a deploy whose migration covers every live state and context', async () => {
    const result = await check(backend.url(), 'migrated');
    // REVIEW left the machine: a warning, not a blocking finding.
    expect(result.stdout).toContain("Event 'REVIEW' of machine 'loan'");
    expect(result.stdout).not.toMatch(
      /MR_REMOVED_STATE_IN_USE|MR_CONTEXT_TYPE_CHANGED|MR_VERSION_NOT_COVERED|MR_MIGRATION_DRY_RUN_FAILED/,
    );
    expect(result.code).toBe(0);
  });

  it('fails the same deploy without the migration, naming the uncovered states', async () => {
    const result = await check(backend.url(), 'unmigrated');
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(
      "State 'loan.approved' of machine 'loan' was removed or renamed",
    );
    expect(result.stdout).toContain(
      "State 'loan.reviewing' of machine 'loan' was removed or renamed",
    );
    expect(result.stdout).toMatch(/MR_VERSION_NOT_COVERED.*last written by version 'v1'/);
  });

  it('fails a migration that leaves a live state uncovered, naming the state and an instance', async () => {
    const result = await check(backend.url(), 'partial');
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(
      `State 'loan.reviewing' of machine 'loan' (version 'v1') is not covered by the migration to 'v2': 1 active and 0 done instance sits in it (e.g. instance '${ids.reviewing}').`,
    );
    expect(result.stdout).not.toContain("State 'loan.approved'");
  });

  it("reports the dry run's throws over stored contexts", async () => {
    const result = await check(backend.url(), 'throwing');
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(
      /MR_MIGRATION_DRY_RUN_FAILED.*failed on 3 of 3 sampled stored contexts, e\.g\. instance '[0-9A-Z]{26}': .*odd amount 3/,
    );
  });

  it('lists, in a dry run of `instances migrate`, every instance that would fail, and writes nothing', async () => {
    process.env.LOAN_DEPLOY = 'throwing';
    const before = await Promise.all(Object.values(ids).map((id) => runtime.store.load(id)));
    const dry = await run([
      'instances',
      'migrate',
      '--machine',
      'loan',
      '--dry-run',
      '--config',
      CONFIG,
      '--database',
      backend.url(),
    ]);
    expect(dry.code).toBe(1);
    expect(dry.stdout).toContain('0 would migrate, 3 failed');
    const table = dry.stdout.slice(dry.stdout.indexOf('Would fail:'));
    expect(table.split('\n')[1]).toMatch(/^ID\s+FROM\s+STATES\s+CODE\s+WHY/);
    for (const id of Object.values(ids))
      expect(table).toMatch(new RegExp(`${id}  v1 .*odd amount 3`));
    const after = await Promise.all(Object.values(ids).map((id) => runtime.store.load(id)));
    expect(after).toEqual(before);
  });

  it('migrates from the CLI (dry run first), then refuses a rollback unless a down migration exists', async () => {
    process.env.LOAN_DEPLOY = 'migrated';
    const dry = await run([
      'instances',
      'migrate',
      '--machine',
      'loan',
      '--dry-run',
      '--config',
      CONFIG,
      '--database',
      backend.url(),
    ]);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain('3 would migrate, 0 failed');
    expect(dry.stdout).toContain(`${ids.approved}  v1`);
    const applied = await run([
      'instances',
      'migrate',
      '--machine',
      'loan',
      '--batch',
      '2',
      '--config',
      CONFIG,
      '--database',
      backend.url(),
    ]);
    expect(applied.code).toBe(0);
    expect(applied.stdout).toContain('3 migrated, 0 failed');
    const again = await run([
      'instances',
      'migrate',
      '--machine',
      'loan',
      '--config',
      CONFIG,
      '--database',
      backend.url(),
    ]);
    expect(again.stdout).toContain('3 already at the version');
    const rollback = await check(backend.url(), 'rollback');
    expect(rollback.code).toBe(1);
    expect(rollback.stdout).toMatch(
      /MR_VERSION_NOT_COVERED.*last written by version 'v2'.*down migration/,
    );
    const down = await check(backend.url(), 'rollback-down');
    expect(down.stdout).not.toContain('MR_VERSION_NOT_COVERED');
    expect(down.code).toBe(0);
  }, 60_000);
});
