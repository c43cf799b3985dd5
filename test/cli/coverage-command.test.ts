/**
 * `machine-routes coverage` on the example config: runs recorded by test runtimes (one file
 * each) against the machines' state graphs, per machine, with `--min` failing below it.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { calculatorMachine } from '../../fixtures/example/machines/calculator.js';
import { orderMachine } from '../../fixtures/example/machines/order.js';
import { createTestRuntime } from '../../src/testing/index.js';
import { EXAMPLE_CONFIG } from '../generator/support.js';
import { run } from './run-cli.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'mr-coverage-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** Two runs: one submits and approves an order, one lets a submitted order expire. */
async function record(): Promise<void> {
  const first = await createTestRuntime({ machines: [orderMachine], coverageDir: dir });
  const order = await first.create(orderMachine);
  await order.send('SUBMIT', { amount: 5 });
  await order.send('APPROVE');
  const calculator = await first.startAt(calculatorMachine, 'ready');
  await calculator.send('ADD', { a: 1, b: 2 });
  await calculator.send('ADD', { a: 2, b: 2 });
  await first.close();
  const second = await createTestRuntime({ timers: [{ machine: orderMachine }], coverageDir: dir });
  await second.startAt(orderMachine, 'submitted');
  await second.advance('15m');
  await second.close();
}

describe('machine-routes coverage', () => {
  it('should print per machine the transitions and states never exercised, with real counts', async () => {
    await record();
    expect(readdirSync(dir)).toHaveLength(2);
    const result = await run(['coverage', '--config', EXAMPLE_CONFIG, '--dir', dir]);
    expect(result.code).toBe(0);
    const lines = result.stdout.split('\n');
    expect(lines).toContain('order: transitions 3/6 (50.0%), states 4/5 (80.0%)');
    expect(lines).toContain('  never taken:   order.draft -QUOTE-> order.draft');
    expect(lines).toContain('  never taken:   order.submitted -CANCEL-> order.cancelled');
    expect(lines).toContain('  never entered: order.cancelled');
    expect(lines).toContain('calculator: transitions 1/2 (50.0%), states 1/1 (100.0%)');
    expect(lines).toContain('  never taken:   calculator.ready -MULTIPLY-> calculator.ready');
    expect(lines).toContain('ticket: transitions 0/4 (0.0%), states 0/3 (0.0%)');
    expect(lines.at(-1)).toBe(
      'total: transitions 4/28 (14.3%) over 7 machines, from 2 recorded runs',
    );
  });

  it('should fail below --min and pass at or above it', async () => {
    await record();
    const below = await run(['coverage', '--config', EXAMPLE_CONFIG, '--dir', dir, '--min', '15']);
    expect(below.code).toBe(1);
    expect(below.stderr).toContain('Transition coverage 14.3% is below --min 15%');
    const above = await run(['coverage', '--config', EXAMPLE_CONFIG, '--dir', dir, '--min', '14']);
    expect(above.code).toBe(0);
  });

  it('should say how to record runs when the directory holds none', async () => {
    const empty = await run(['coverage', '--config', EXAMPLE_CONFIG, '--dir', dir]);
    expect(empty.code).toBe(1);
    expect(empty.stderr).toContain('No recorded runs in');
    expect(empty.stderr).toContain('MACHINE_ROUTES_COVERAGE=');
  });
});
