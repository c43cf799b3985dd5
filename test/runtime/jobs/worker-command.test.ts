/**
 * `machine-routes worker`, in-process: the refusals. Running workers (a crash and restart, two
 * workers beside two servers) are covered by test/runtime/delegation/worker-crash.test.ts and
 * multi-process.test.ts, which start the command as real processes.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { run } from '../../cli/run-cli.js';

describe('machine-routes worker', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'mr-worker-command-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('should refuse a concurrency that is not a positive integer', async () => {
    expect(
      await run(['worker', '--concurrency', 'lots', '--database', `sqlite:${dir}/x.db`]),
    ).toEqual({
      code: 1,
      stdout: '',
      stderr: "--concurrency must be an integer >= 1, got 'lots'.",
    });
  });

  it('should refuse to run the machines of a config with problems', async () => {
    const result = await run([
      'worker',
      '--config',
      'fixtures/invalid/undefined-target.config.ts',
      '--database',
      `sqlite:${dir}/x.db`,
    ]);
    expect(result.code).toBe(1);
    expect(result.stdout.split('\n')).toEqual([
      expect.stringMatching(
        /^fixtures\/invalid\/undefined-target\.config\.ts:11:29 UndefinedTargetStateException/,
      ),
    ]);
    expect(result.stderr).toBe('1 problem found.');
  });

  it('should list itself with its options in the help', async () => {
    const result = await run(['worker', '--help']);
    expect(result.stdout).toContain('Usage: machine-routes worker [options]');
    expect(result.stdout).toContain('--config <path>');
    expect(result.stdout).toContain('--database <url>');
    expect(result.stdout).toContain('--concurrency <n>');
  });
});
