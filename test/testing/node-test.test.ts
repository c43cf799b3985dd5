/**
 * The kit under node:test: `node --test` runs test/testing/node-test/kit.node-test.mjs, plain
 * JavaScript importing the built `machine-routes/testing` (no loader, no vitest), in a child
 * process. Its four tests (the 30-day timer, a fake job's rejection routing `@fail`, a table, an
 * impossible start) must all pass there too.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { startNode } from '../support/child-process.js';

const FILE = fileURLToPath(new URL('./node-test/kit.node-test.mjs', import.meta.url));

describe('machine-routes/testing under node:test', () => {
  it('should pass all four node:test tests against the built package', async () => {
    const run = startNode(['--test', '--test-reporter=tap', FILE]);
    const output: string[] = [];
    run.child.stdout.on('data', (chunk: Buffer) => output.push(chunk.toString()));
    const code = await run.exited;
    const tap = output.join('');
    expect({ code, stderr: run.stderr() }).toEqual({ code: 0, stderr: '' });
    expect(tap).toMatch(/^# tests 4$/m);
    expect(tap).toMatch(/^# pass 4$/m);
    expect(tap).toContain('ok 1 - fires a daily every-timer 30 times in one advance of 30 days');
  }, 60_000);
});
