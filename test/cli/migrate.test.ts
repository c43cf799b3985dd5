/**
 * `machine-routes migrate`, `migrate status` and `migrate --dry-run` as a user runs them (the
 * built CLI in a process of its own, so `MACHINE_DATABASE_URL` is the process's): which store
 * each uses (`--database` over `MACHINE_DATABASE_URL` over the config's `store` over the default
 * SQLite file), said in the output, on a SQLite file and on PostgreSQL.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../../src/runtime/persistence/migrations.js';
import { ROOT } from '../generator/support.js';
import { createTestSchema, shouldRunPostgresTests, type TestSchema } from '../support/postgres.js';

const CLI = path.join(ROOT, 'bin/machine-routes.js');
const ALL = MIGRATIONS.length;

/** Runs the built CLI in `cwd` with `MACHINE_DATABASE_URL` set to `databaseUrl` or unset. */
async function cli(
  args: string[],
  cwd: string,
  databaseUrl?: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = { ...process.env };
  delete env['MACHINE_DATABASE_URL'];
  if (databaseUrl !== undefined) env['MACHINE_DATABASE_URL'] = databaseUrl;
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [CLI, ...args], {
      cwd,
      env,
    });
    return { code: 0, stdout: stdout.trim(), stderr: stderr.trim() };
  } catch (error) {
    const { code, stdout, stderr } = error as { code: number; stdout: string; stderr: string };
    return { code, stdout: stdout.trim(), stderr: stderr.trim() };
  }
}

/** What `migrate status` prints for a store with `applied` of every migration. */
function status(store: string, applied: number): string {
  const line = ({ version, name }: { version: number; name: string }) => `  ${version} ${name}`;
  return [
    `Store: ${store}`,
    `Applied: ${applied}`,
    ...MIGRATIONS.slice(0, applied).map(line),
    `Pending: ${ALL - applied}`,
    ...MIGRATIONS.slice(applied).map(line),
  ].join('\n');
}

let dir: string;

beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'machine-routes-migrate-'));
  mkdirSync(path.join(dir, 'project'));
  // A config whose store is a SQLite file of its own.
  writeFileSync(
    path.join(dir, 'project/machine-routes.config.ts'),
    [
      "import { defineConfig } from 'machine-routes/config';",
      "import { defineMachine } from 'machine-routes/runtime';",
      'const lamp = defineMachine({',
      "  config: { id: 'lamp', initial: 'off', states: { off: { on: { TOGGLE: 'on' } }, on: {} } },",
      "  endpoints: ['TOGGLE'],",
      '});',
      "export default defineConfig({ registrations: [{ machine: lamp }], store: 'sqlite:./config.db' });",
      '',
    ].join('\n'),
  );
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('machine-routes migrate on SQLite', () => {
  it('should take --database over MACHINE_DATABASE_URL over the config store, and say which', async () => {
    const project = path.join(dir, 'project');
    const flag = path.join(dir, 'flag.db');
    const fromEnv = path.join(dir, 'env.db');
    expect(
      await cli(['migrate', '--database', `sqlite:${flag}`], project, `sqlite:${fromEnv}`),
    ).toEqual({ code: 0, stdout: `Migrated sqlite:${flag} (from --database).`, stderr: '' });
    expect(existsSync(fromEnv)).toBe(false);

    expect(await cli(['migrate'], project, `sqlite:${fromEnv}`)).toEqual({
      code: 0,
      stdout: `Migrated sqlite:${fromEnv} (from MACHINE_DATABASE_URL).`,
      stderr: '',
    });
    expect(existsSync(path.join(project, 'config.db'))).toBe(false);

    expect(await cli(['migrate'], project)).toEqual({
      code: 0,
      stdout: "Migrated sqlite:./config.db (from the config's store).",
      stderr: '',
    });
    expect(existsSync(path.join(project, 'config.db'))).toBe(true);
  });

  it('should use the default SQLite file without a config, flag or variable', async () => {
    const empty = path.join(dir, 'empty');
    mkdirSync(empty);
    expect(await cli(['migrate', 'status'], empty)).toEqual({
      code: 0,
      stdout: status('sqlite:./data/machines.db (from the default)', 0),
      stderr: '',
    });
  });

  it('should list applied and pending migrations, and dry-run, without creating the file', async () => {
    const file = path.join(dir, 'fresh.db');
    const shown = `sqlite:${file} (from --database)`;
    const database = ['--database', `sqlite:${file}`];
    expect(await cli(['migrate', 'status', ...database], dir)).toEqual({
      code: 0,
      stdout: status(shown, 0),
      stderr: '',
    });
    const dryRun = await cli(['migrate', '--dry-run', ...database], dir);
    expect(dryRun.stdout.split('\n')).toEqual([
      `Would apply ${ALL} migration(s) to ${shown} (dry run, nothing applied):`,
      ...MIGRATIONS.map(({ version, name }) => `  ${version} ${name}`),
    ]);
    expect(existsSync(file)).toBe(false);

    expect((await cli(['migrate', ...database], dir)).code).toBe(0);
    expect((await cli(['migrate', 'status', ...database], dir)).stdout).toBe(status(shown, ALL));
    expect((await cli(['migrate', '--dry-run', ...database], dir)).stdout).toBe(
      `${shown} is up to date: nothing to migrate (dry run).`,
    );
  });

  it('should reject a bad store URL in one coded line, password hidden, whichever place it came from', async () => {
    const expected = {
      code: 1,
      stdout: '',
      stderr:
        "InvalidStoreUrlException [MR_INVALID_STORE_URL] Invalid store URL 'mysql://app:***@db/app': " +
        "expected 'sqlite:<file>', 'sqlite::memory:', 'memory:' or 'postgres://user@host:port/database'.",
    };
    expect(await cli(['migrate', '--database', 'mysql://app:s3cret@db/app'], dir)).toEqual(
      expected,
    );
    expect(await cli(['migrate', 'status'], dir, 'mysql://app:s3cret@db/app')).toEqual(expected);
  });
});

describe.runIf(await shouldRunPostgresTests('test/cli/migrate.test.ts'))(
  'machine-routes migrate on PostgreSQL',
  () => {
    let schema: TestSchema;

    beforeAll(async () => {
      schema = await createTestSchema('migrate_cli');
    });

    afterAll(() => schema.drop());

    it('should list, dry-run, then apply every migration of MACHINE_DATABASE_URL', async () => {
      const shown = `${schema.url} (from MACHINE_DATABASE_URL)`;
      expect(await cli(['migrate', 'status'], dir, schema.url)).toEqual({
        code: 0,
        stdout: status(shown, 0),
        stderr: '',
      });
      const dryRun = await cli(['migrate', '--dry-run'], dir, schema.url);
      expect(dryRun.stdout.split('\n')[0]).toBe(
        `Would apply ${ALL} migration(s) to ${shown} (dry run, nothing applied):`,
      );
      expect((await cli(['migrate', 'status'], dir, schema.url)).stdout).toBe(status(shown, 0));

      expect(await cli(['migrate'], dir, schema.url)).toEqual({
        code: 0,
        stdout: `Migrated ${shown}.`,
        stderr: '',
      });
      expect((await cli(['migrate', 'status'], dir, schema.url)).stdout).toBe(status(shown, ALL));
    });
  },
);
