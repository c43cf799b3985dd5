/**
 * Diagram snapshots: the Mermaid source of the test machines and of every example machine
 * (the example's are also the committed generated-example/diagrams/*.gen.mmd).
 */
import { describe, expect, it } from 'vitest';
import { machineDiagram } from '../../../src/generator/analysis/mermaid.js';
import { collectMachineDefinitions } from '../../../src/generator/build-manifest.js';
import exampleConfig from '../../../fixtures/example/machine-routes.config.js';
import { reviewMachine, retryMachine } from './machines.js';

describe('machineDiagram', () => {
  it.each([
    ['retry', retryMachine],
    ['review', reviewMachine],
  ] as const)('should draw the %s machine', async (id, machine) => {
    await expect(machineDiagram(machine)).toMatchFileSnapshot(
      `../__snapshots__/diagrams/${id}.mmd`,
    );
  });

  it('should draw every machine of the example', async () => {
    const machines = collectMachineDefinitions(exampleConfig.registrations);
    expect([...machines.keys()].sort()).toEqual([
      'calculator',
      'checkout',
      'fulfillment',
      'invoice',
      'order',
      'payment',
      'ticket',
    ]);
    for (const [id, machine] of machines)
      await expect(machineDiagram(machine)).toMatchFileSnapshot(
        `../__snapshots__/diagrams/${id}.mmd`,
      );
  });
});
