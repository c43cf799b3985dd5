/**
 * What the generated server loads until it listens (issue 17: "the generated server imports only
 * the framework and store it uses"): the example server (Fastify, SQLite) is started as a process
 * with bench/startup/count-modules.mjs, stopped once listening, and its packages are checked.
 * Packages a Fastify + SQLite start never needs (the other framework, PostgreSQL, the generator's,
 * the parts loaded on first use) must stay unloaded; a regression shows up here, not only as a
 * slower benchmark.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const dir = mkdtempSync(path.join(tmpdir(), 'machine-routes-startup-modules-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The packages (name -> modules) the example server loads until listening. */
function loadedPackages(): Promise<Record<string, number>> {
  const child = spawn(
    process.execPath,
    [
      '--conditions=machine-routes-source',
      '--import',
      'tsx',
      '--import',
      './bench/startup/count-modules.mjs',
      'generated-example/server.gen.ts',
    ],
    {
      cwd: ROOT,
      env: {
        ...process.env,
        PORT: '0',
        MACHINE_DATABASE_URL: `sqlite:${path.join(dir, 'example.db')}`,
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the server exited (${code})`)));
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (line.includes('listening on')) child.kill('SIGTERM');
      if (line.startsWith('modules loaded: ')) {
        const counted = JSON.parse(line.slice('modules loaded: '.length)) as {
          groups: Record<string, number>;
        };
        resolve(counted.groups);
      }
    });
  });
}

describe('the generated server start', () => {
  it('should load its framework and store, and none of the parts a Fastify + SQLite start does not use', async () => {
    const packages = await loadedPackages();
    // The hooks saw the start: the framework and the store driver are there.
    expect(packages['fastify']).toBeGreaterThan(0);
    expect(packages['better-sqlite3']).toBeGreaterThan(0);
    const unused = [
      // The other framework, PostgreSQL, the generator and the CLI.
      'express',
      'pg',
      'pg-boss',
      'qs',
      'handlebars',
      'jiti',
      'prettier',
      'commander',
      // Loaded on first use: cron schedules (the example has none), "did you mean" suggestions.
      'croner',
      'fastest-levenshtein',
    ];
    expect(unused.filter((name) => packages[name] !== undefined)).toEqual([]);
  }, 60_000);
});
