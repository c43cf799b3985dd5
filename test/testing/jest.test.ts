/**
 * The kit under jest: a fresh project in a temp dir outside the repository installs the packed
 * tarball (scripts/pack.js), zod and jest 30 from the npm registry, and runs
 * test/testing/jest/kit.jest.mjs (virtual time advanced 30 days, an instance started at a state
 * with a context on a SQLite file and a fake job's rejection, a transition table) with jest's
 * native ES module support. All three must pass. Skipped, saying so, only when the npm registry
 * cannot be reached (`npm ping` fails): the install needs it.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from '../generator/support.js';
import { packTarballs, sh, versionIn } from '../package/support.js';

const KIT_TEST = fileURLToPath(new URL('./jest/kit.jest.mjs', import.meta.url));

/** Why the registry cannot be used, or null when `npm ping` answers. */
function registryUnreachable(): string | null {
  try {
    execFileSync('npm', ['ping'], { stdio: 'pipe', timeout: 30_000 });
    return null;
  } catch (error) {
    const { stderr } = error as { stderr?: Buffer };
    const reason = stderr?.toString().trim().split('\n').pop() ?? (error as Error).message;
    return `the npm registry is unreachable (npm ping: ${reason})`;
  }
}

const unreachable = registryUnreachable();
if (unreachable !== null) console.warn(`jest test skipped: ${unreachable}`);

interface JestResult {
  success: boolean;
  numPassedTests: number;
  numFailedTests: number;
  testResults: { assertionResults: { title: string; status: string }[] }[];
}

describe.skipIf(unreachable !== null)('machine-routes/testing under jest', () => {
  const work = mkdtempSync(path.join(tmpdir(), 'machine-routes-jest-'));
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it('should pass its three jest tests in a fresh project installing the packed tarball', () => {
    const tarballs = packTarballs(work);
    const project = path.join(work, 'project');
    mkdirSync(project);
    sh(project, 'npm', ['init', '-y']);
    sh(project, 'npm', ['pkg', 'set', 'type=module']);
    sh(project, 'npm', [
      'install',
      '--prefer-offline',
      '--ignore-scripts',
      tarballs['machine-routes'],
      'zod@^4',
      'jest@^30',
    ]);
    // Install scripts are skipped: better-sqlite3's binary comes from this repository's install
    // (same version, same Node), as its prebuilt download would bring it.
    const modules = path.join(project, 'node_modules');
    expect(versionIn(modules, 'better-sqlite3')).toBe(
      versionIn(path.join(ROOT, 'node_modules'), 'better-sqlite3'),
    );
    mkdirSync(path.join(modules, 'better-sqlite3/build/Release'), { recursive: true });
    copyFileSync(
      path.join(ROOT, 'node_modules/better-sqlite3/build/Release/better_sqlite3.node'),
      path.join(modules, 'better-sqlite3/build/Release/better_sqlite3.node'),
    );
    writeFileSync(
      path.join(project, 'jest.config.json'),
      JSON.stringify({ testEnvironment: 'node', testMatch: ['**/*.test.mjs'], transform: {} }),
    );
    copyFileSync(KIT_TEST, path.join(project, 'kit.test.mjs'));

    sh(project, process.execPath, [
      '--experimental-vm-modules',
      'node_modules/jest/bin/jest.js',
      '--ci',
      '--json',
      '--outputFile=result.json',
    ]);
    const result = JSON.parse(
      readFileSync(path.join(project, 'result.json'), 'utf8'),
    ) as JestResult;
    const tests = result.testResults.flatMap((file) => file.assertionResults);
    expect(tests.map((test) => [test.title, test.status])).toEqual([
      ['a daily every-timer fires 30 times in one advance of 30 days', 'passed'],
      [
        'an instance started at a state with a context, on a SQLite file, routes @fail from a fake job',
        'passed',
      ],
      ['a transition table', 'passed'],
    ]);
    expect(result.success).toBe(true);
  }, 240_000);
});
