/**
 * Every command that opens a store reads its URL in one order, `--database` over
 * `MACHINE_DATABASE_URL` over the config's `store` (resolveStoreUrl, runtime/store-url.ts), and
 * says which it used. Run as a user runs them: the built CLI in a process of its own (so
 * `MACHINE_DATABASE_URL` is the process's), on SQLite files whose existence shows which store was
 * opened. `migrate` has its own test (migrate.test.ts); this one covers `worker`, `timers` and
 * `instances`, which took the config's store over the variable before.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ROOT } from '../generator/support.js';
import { startNode } from '../support/child-process.js';

const CLI = path.join(ROOT, 'bin/machine-routes.js');

let dir: string;
let project: string;

/** The environment of a run: `MACHINE_DATABASE_URL` set to `databaseUrl`, or unset. */
function envWith(databaseUrl: string | undefined): NodeJS.ProcessEnv {
  // Undefined (not deleted): child processes leave an undefined variable out, also where the
  // helper spreads it over process.env.
  return { ...process.env, MACHINE_DATABASE_URL: databaseUrl };
}

/** Runs the built CLI to its end in the project. */
async function cli(
  args: string[],
  databaseUrl?: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [CLI, ...args], {
      cwd: project,
      env: envWith(databaseUrl),
    });
    return { code: 0, stdout: stdout.trim(), stderr: stderr.trim() };
  } catch (error) {
    const { code, stdout, stderr } = error as { code: number; stdout: string; stderr: string };
    return { code, stdout: stdout.trim(), stderr: stderr.trim() };
  }
}

/** Starts `worker`, returns its "Worker running" line, stops it with SIGTERM. */
async function workerLine(args: string[], databaseUrl?: string): Promise<string> {
  const worker = startNode([CLI, 'worker', ...args], {
    cwd: project,
    env: envWith(databaseUrl),
    name: 'machine-routes worker',
  });
  try {
    return await worker.waitForLine((line) => line.startsWith('Worker running'), 30_000);
  } finally {
    worker.child.kill('SIGTERM');
    await worker.exited;
  }
}

/** The three stores a run may open, as absolute files, and which of them exist. */
const FILES = { flag: 'flag.db', env: 'env.db', config: 'config.db' } as const;
function file(which: keyof typeof FILES): string {
  return path.join(project, FILES[which]);
}
function opened(): string[] {
  return (Object.keys(FILES) as (keyof typeof FILES)[]).filter((which) => existsSync(file(which)));
}

beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'machine-routes-store-order-'));
  project = path.join(dir, 'project');
  mkdirSync(project);
  // A config whose store is a SQLite file of its own, with a timed machine for `timers`.
  writeFileSync(
    path.join(project, 'machine-routes.config.ts'),
    [
      "import { defineConfig } from 'machine-routes/config';",
      "import { defineMachine } from 'machine-routes/runtime';",
      'const lamp = defineMachine({',
      '  config: {',
      "    id: 'lamp',",
      "    initial: 'off',",
      "    states: { off: { on: { TOGGLE: 'on' } }, on: { on: { EXPIRE: { target: 'off', after: { minutes: 15 } } } } },",
      '  },',
      "  endpoints: ['TOGGLE'],",
      '});',
      'export default defineConfig({',
      "  registrations: [{ machine: lamp, prefix: 'lamps' }],",
      '  timers: [{ machine: lamp }],',
      "  store: 'sqlite:./config.db',",
      '});',
      '',
    ].join('\n'),
  );
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

beforeEach(() => {
  for (const which of Object.keys(FILES) as (keyof typeof FILES)[]) {
    rmSync(file(which), { force: true });
  }
});

const flag = (): string[] => ['--database', `sqlite:${file('flag')}`];
const env = (): string => `sqlite:${file('env')}`;

describe('machine-routes instances list', () => {
  const list = ['instances', 'list', 'lamp', '--json'];

  it('should take --database over MACHINE_DATABASE_URL, and say so on stderr', async () => {
    const result = await cli([...list, ...flag()], env());
    expect(result.code).toBe(0);
    expect(result.stderr).toBe(`Store: sqlite:${file('flag')} (from --database)`);
    // stdout stays the JSON a script parses.
    expect(JSON.parse(result.stdout)).toMatchObject({ items: [] });
    expect(opened()).toEqual(['flag']);
  });

  it("should take MACHINE_DATABASE_URL over the config's store", async () => {
    const result = await cli(list, env());
    expect(result.stderr).toBe(`Store: sqlite:${file('env')} (from MACHINE_DATABASE_URL)`);
    expect(opened()).toEqual(['env']);
  });

  it("should take the config's store without either", async () => {
    const result = await cli(list);
    expect(result.stderr).toBe("Store: sqlite:./config.db (from the config's store)");
    expect(opened()).toEqual(['config']);
  });
});

describe('machine-routes timers --once', () => {
  it('should take --database over MACHINE_DATABASE_URL, and say so', async () => {
    const result = await cli(['timers', '--once', ...flag()], env());
    expect(result.code).toBe(0);
    expect(result.stdout.split('\n')[0]).toBe(`Store: sqlite:${file('flag')} (from --database)`);
    expect(opened()).toEqual(['flag']);
  });

  it("should take MACHINE_DATABASE_URL over the config's store", async () => {
    const result = await cli(['timers', '--once'], env());
    expect(result.code).toBe(0);
    expect(result.stdout.split('\n')[0]).toBe(
      `Store: sqlite:${file('env')} (from MACHINE_DATABASE_URL)`,
    );
    expect(opened()).toEqual(['env']);
  });

  it("should take the config's store without either", async () => {
    const result = await cli(['timers', '--once']);
    expect(result.stdout.split('\n')[0]).toBe(
      "Store: sqlite:./config.db (from the config's store)",
    );
    expect(opened()).toEqual(['config']);
  });
});

describe('machine-routes worker', () => {
  it('should take --database over MACHINE_DATABASE_URL, and say so', async () => {
    expect(await workerLine(flag(), env())).toContain(
      `jobs of sqlite:${file('flag')} (from --database)`,
    );
    expect(opened()).toEqual(['flag']);
  });

  it("should take MACHINE_DATABASE_URL over the config's store", async () => {
    expect(await workerLine([], env())).toContain(
      `jobs of sqlite:${file('env')} (from MACHINE_DATABASE_URL)`,
    );
    expect(opened()).toEqual(['env']);
  });

  it("should take the config's store without either", async () => {
    expect(await workerLine([])).toContain("jobs of sqlite:./config.db (from the config's store)");
    expect(opened()).toEqual(['config']);
  });
});

describe('a bad URL', () => {
  it('should be refused with one line naming it, from whichever place it came', async () => {
    const result = await cli(['timers', '--once'], 'mysql://app:s3cret@db/app');
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('[MR_INVALID_STORE_URL]');
    expect(result.stderr).toContain("'mysql://app:***@db/app'");
    expect(result.stderr).not.toContain('s3cret');
  });
});
