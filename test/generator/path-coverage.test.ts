/**
 * Path coverage, the original's use of path analysis: a suite's requests (here a small one,
 * over HTTP against the generated example server) leave history; the transitions it shows are
 * matched against `machine-routes paths`, and the report says which paths were exercised and
 * which steps of the others were never taken. The report is kept in test-artifacts/.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  enumeratePaths,
  formatPath,
  pathCoverage,
  transitionsOfHistory,
  type VisitedTransition,
} from '../../src/generator/analysis/paths.js';
import { buildStateGraph } from '../../src/generator/analysis/state-graph.js';
import { fulfillmentMachine } from '../../fixtures/example/machines/fulfillment.js';
import { orderMachine } from '../../fixtures/example/machines/order.js';
import { buildApp, type App } from '../../generated-example/app.gen.js';
import { createClient, type Client } from '../../generated-example/client.gen.js';
import { ROOT } from './support.js';

let app: App;
let client: Client;
const instances: string[] = [];

beforeAll(async () => {
  app = await buildApp({ databaseUrl: 'sqlite::memory:' });
  client = createClient({ baseUrl: await app.listen(0) });
});

afterAll(async () => {
  await app.close();
});

/** The suite under measure: what a frontend's happy-path tests would send. */
async function runSuite(): Promise<void> {
  const order = await client.order.create();
  if (order.status !== 201) throw new Error(`create answered ${order.status}`);
  const machineId = order.body.data.id;
  instances.push(machineId);
  await client.order.quote({ machineId, payload: { quantity: 2 } });
  await client.order.submit({ machineId, payload: { amount: 500 } });
  expect((await client.order.approve({ machineId })).status).toBe(200);

  const fulfillment = await client.fulfillment.create();
  if (fulfillment.status !== 201) throw new Error(`create answered ${fulfillment.status}`);
  instances.push(fulfillment.body.data.id);
  await client.fulfillment.capture({ machineId: fulfillment.body.data.id });
  await client.fulfillment.pack({ machineId: fulfillment.body.data.id });
}

async function visited(): Promise<VisitedTransition[]> {
  const all: VisitedTransition[] = [];
  for (const id of instances)
    all.push(...transitionsOfHistory(await app.runtime.store.history(id)));
  return all;
}

describe('path coverage of a test suite', () => {
  it('should report which paths the suite covered and what the others miss', async () => {
    await runSuite();
    const transitions = await visited();
    const lines: string[] = [];
    const results = [orderMachine, fulfillmentMachine].map((machine) => {
      const coverage = pathCoverage(enumeratePaths(buildStateGraph(machine)), transitions);
      lines.push(
        `${machine.id}: ${coverage.covered.length} of ${coverage.covered.length + coverage.uncovered.length} paths covered`,
      );
      for (const path of coverage.covered) lines.push(`  covered:   ${formatPath(path)}`);
      for (const { path, missing } of coverage.uncovered)
        lines.push(
          `  uncovered: ${formatPath(path)}`,
          ...missing.map((step) => `    never sent: ${step.event} in ${step.from.join(' + ')}`),
        );
      return coverage;
    });
    const report = `${lines.join('\n')}\n`;
    mkdirSync(path.join(ROOT, 'test-artifacts'), { recursive: true });
    writeFileSync(path.join(ROOT, 'test-artifacts/path-coverage.txt'), report);

    const [order, fulfillment] = results;
    expect(order!.covered.map((p) => p.events)).toEqual([['SUBMIT', 'APPROVE']]);
    expect(order!.uncovered.map((u) => u.missing)).toEqual([
      [{ from: ['order.submitted'], event: 'CANCEL', to: ['order.cancelled'] }],
      [{ from: ['order.submitted'], event: 'EXPIRE', to: ['order.expired'] }],
    ]);
    // CAPTURE then PACK was sent; the other interleaving was not.
    expect(fulfillment!.covered.map((p) => p.events)).toEqual([['CAPTURE', 'PACK']]);
    expect(fulfillment!.uncovered).toHaveLength(1);
    expect(report).toContain('order: 1 of 3 paths covered');
    // The targetless QUOTE was seen, and is no step of any path.
    expect(transitions).toContainEqual({
      from: ['order.draft'],
      event: 'QUOTE',
      to: ['order.draft'],
    });
  });
});
