/**
 * `machine-routes paths` and `machine-routes diagram` on the example config, in-process.
 */
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { run } from './run-cli.js';
import type { PathReport } from '../../src/generator/analysis/paths.js';
import { EXAMPLE_CONFIG, ROOT } from '../generator/support.js';

describe('machine-routes paths', () => {
  it('should print every path from the initial state to a final state', async () => {
    expect(await run(['paths', 'order', '--config', EXAMPLE_CONFIG])).toEqual({
      code: 0,
      stdout: [
        'order: 3 paths to 3 final states',
        '1. order.draft -SUBMIT-> order.submitted -APPROVE [withinLimit]-> order.approved',
        '2. order.draft -SUBMIT-> order.submitted -CANCEL-> order.cancelled',
        '3. order.draft -SUBMIT-> order.submitted -EXPIRE-> order.expired',
      ].join('\n'),
      stderr: '',
    });
  });

  it('should print JSON with events, guards and states', async () => {
    const result = await run([
      'paths',
      'fulfillment',
      '--config',
      EXAMPLE_CONFIG,
      '--format',
      'json',
    ]);
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout) as PathReport;
    expect(report).toMatchObject({ machineId: 'fulfillment', maxPaths: 1000, truncated: false });
    expect(report.paths.map((entry) => entry.events)).toEqual([
      ['CAPTURE', 'PACK'],
      ['PACK', 'CAPTURE'],
    ]);
    expect(report.paths[0]!.steps[2]).toEqual({
      event: '@done',
      guards: [],
      from: ['fulfillment.processing.payment.captured', 'fulfillment.processing.packing.packed'],
      to: ['fulfillment.shipped'],
    });
  });

  it('should warn when --max-paths is reached', async () => {
    const result = await run(['paths', 'order', '--config', EXAMPLE_CONFIG, '--max-paths', '1']);
    expect(result.code).toBe(0);
    expect(result.stdout.split('\n')).toHaveLength(2);
    expect(result.stderr).toBe(
      'Warning: stopped at --max-paths 1; the machine has more paths. Raise --max-paths to see them.',
    );
  });

  it('should reject a bad --max-paths and an unknown machine', async () => {
    const bad = await run(['paths', 'order', '--config', EXAMPLE_CONFIG, '--max-paths', '0']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain("must be an integer >= 1, got '0'.");
    const unknown = await run(['paths', 'shipment', '--config', EXAMPLE_CONFIG]);
    expect(unknown).toEqual({
      code: 1,
      stdout: '',
      stderr:
        "Unknown machine 'shipment': the config has calculator, checkout, fulfillment, invoice, order, payment, ticket.",
    });
  });
});

describe('machine-routes diagram', () => {
  it('should print the Mermaid source generate writes', async () => {
    const result = await run(['diagram', 'order', '--config', EXAMPLE_CONFIG]);
    expect(result.code).toBe(0);
    expect(`${result.stdout}\n`).toBe(
      readFileSync(path.join(ROOT, 'generated-example/diagrams/order.gen.mmd'), 'utf8'),
    );
  });

  it('should reject an unknown format', async () => {
    expect(await run(['diagram', 'order', '--config', EXAMPLE_CONFIG, '--format', 'png'])).toEqual({
      code: 1,
      stdout: '',
      stderr: "Unknown --format 'png': use mermaid or svg.",
    });
  });
});
