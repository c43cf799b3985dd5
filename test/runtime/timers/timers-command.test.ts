/**
 * `machine-routes timers --once` in-process on a SQLite file: one sweep of the config's timers
 * with the system clock, then exit.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../../../src/cli/main.js';
import { ManualClock } from '../../../src/runtime/clock.js';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import { orderMachine } from '../../../fixtures/example/machines/order.js';

const CONFIG = 'fixtures/example/machine-routes.config.ts';

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

describe('machine-routes timers', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'mr-timers-command-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('should fire the due timers once and report the sweep', async () => {
    const url = `sqlite:${dir}/app.db`;
    // Orders submitted 16 and 1 minutes ago: only the first is past its 15 minutes.
    const ids: string[] = [];
    for (const minutesAgo of [16, 1]) {
      const clock = new ManualClock(Date.now() - minutesAgo * 60_000);
      const runtime = await MachineRuntime.open({ databaseUrl: url, worker: false, clock });
      const { snapshot } = await runtime.create(orderMachine);
      await runtime.send(orderMachine, snapshot.id, { type: 'SUBMIT', payload: { amount: 5 } });
      ids.push(snapshot.id);
      await runtime.close();
    }

    const result = await run(['timers', '--once', '--config', CONFIG, '--database', url]);
    expect(result).toEqual({
      code: 0,
      stdout:
        `Store: ${url} (from --database)\n` +
        'Timer sweep: 1 fire delivered, 0 instances locked (retried next sweep), 0 delivered elsewhere first, 0 failed; 1 candidate read in 1 query.',
      stderr: '',
    });
    const runtime = await MachineRuntime.open({ databaseUrl: url, worker: false });
    try {
      expect((await runtime.restore(orderMachine, ids[0]!)).value).toEqual(['order.expired']);
      expect((await runtime.restore(orderMachine, ids[1]!)).value).toEqual(['order.submitted']);
    } finally {
      await runtime.close();
    }
    expect((await run(['timers', '--once', '--config', CONFIG, '--database', url])).stdout).toMatch(
      /^Store: .*\nTimer sweep: 0 fires delivered/,
    );
  });

  it('should refuse an interval that is not a positive integer', async () => {
    expect(await run(['timers', '--interval', 'soon'])).toEqual({
      code: 1,
      stdout: '',
      stderr: "--interval must be an integer >= 1 (ms), got 'soon'.",
    });
  });
});
