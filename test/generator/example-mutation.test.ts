/**
 * The example's own kit tests (example-machines.test.ts) catch a broken behavior: a copy of the
 * order machine with its approval guard mutated (`total <= 10_000` -> `total < 10_000`, an order
 * of exactly 10 000 refused) replaces the real one through a resolve alias, and vitest runs the
 * example's tests in a child process against it. The table's test must fail on its row 2, with
 * the guard's history, and every other test must still pass.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from './support.js';

interface VitestJson {
  numFailedTests: number;
  numPassedTests: number;
  testResults: {
    assertionResults: { title: string; status: string; failureMessages: string[] }[];
  }[];
}

// Inside the repository (test-artifacts/ is ignored): the mutated copy imports
// `machine-routes/runtime` and zod, resolved from the repository's package.json and node_modules.
const WORK = path.join(ROOT, 'test-artifacts', `mutation-${process.pid}`);

describe("the example's kit tests under a mutation", () => {
  afterAll(() => rmSync(WORK, { recursive: true, force: true }));

  it('should fail the approval table on its row 2 when the limit guard refuses 10 000', () => {
    mkdirSync(WORK, { recursive: true });
    const source = readFileSync(path.join(ROOT, 'fixtures/example/machines/order.ts'), 'utf8');
    const mutated = source.replace('context.total <= 10_000', 'context.total < 10_000');
    expect(mutated).not.toBe(source);
    const order = path.join(WORK, 'order.ts');
    writeFileSync(order, mutated);
    const config = path.join(WORK, 'vitest.config.ts');
    writeFileSync(
      config,
      `import { defaultServerConditions } from 'vite';
import { defineConfig } from 'vitest/config';
const conditions = ['machine-routes-source', ...defaultServerConditions];
export default defineConfig({
  root: ${JSON.stringify(ROOT)},
  resolve: {
    conditions,
    // Every import of the example's order machine (the test's and the example config's).
    alias: [{ find: /^(?:\\.\\.?\\/)+(?:fixtures\\/example\\/)?machines\\/order\\.js$/, replacement: ${JSON.stringify(order)} }],
  },
  ssr: { resolve: { conditions, externalConditions: ['machine-routes-source'] } },
  test: { include: ['test/generator/example-machines.test.ts'], pool: 'forks', maxWorkers: 1, testTimeout: 20_000 },
});
`,
    );
    const output = path.join(WORK, 'result.json');
    try {
      execFileSync(
        process.execPath,
        [
          path.join(ROOT, 'node_modules/vitest/vitest.mjs'),
          'run',
          '--config',
          config,
          '--reporter=json',
          `--outputFile=${output}`,
        ],
        { cwd: ROOT, stdio: 'pipe', timeout: 120_000 },
      );
    } catch {
      // Exit 1 is the expected outcome: the result file says which tests failed.
    }
    const result = JSON.parse(readFileSync(output, 'utf8')) as VitestJson;
    const tests = result.testResults.flatMap((file) => file.assertionResults);
    const failed = tests.filter((test) => test.status === 'failed');
    expect(failed.map((test) => test.title)).toEqual([
      'should approve up to the limit and refuse above it',
    ]);
    const message = failed[0]!.failureMessages.join('\n');
    expect(message).toContain('row 2: submitted --APPROVE-->');
    expect(message).toContain('Orders over 10000 need a manual approval.');
    expect(message).toContain('order.guard.withinLimit.fail');
    expect(result.numPassedTests).toBe(tests.length - 1);
    expect(result.numPassedTests).toBeGreaterThan(5);
  }, 150_000);
});
