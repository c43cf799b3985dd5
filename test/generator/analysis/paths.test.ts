import { describe, expect, it } from 'vitest';
import { enumeratePaths, formatPath } from '../../../src/generator/analysis/paths.js';
import { buildStateGraph } from '../../../src/generator/analysis/state-graph.js';
import { fulfillmentMachine } from '../../../fixtures/example/machines/fulfillment.js';
import { reviewMachine, retryMachine, wideMachine } from './machines.js';

const lines = (machine: Parameters<typeof buildStateGraph>[0], max?: number): string[] =>
  enumeratePaths(buildStateGraph(machine), max).paths.map(formatPath);

describe('enumeratePaths', () => {
  it('should list each way through a loop once, with the guards taken', () => {
    expect(lines(retryMachine)).toEqual([
      'retry.idle -START-> retry.working -FINISH [isValid]-> retry.done',
      'retry.idle -START-> retry.working -FINISH-> retry.rejected',
    ]);
    // The loop back to `idle` and the targetless PING are edges of the graph, never unrolled.
    const graph = buildStateGraph(retryMachine);
    expect(graph.edges.map((edge) => `${edge.from} ${edge.event} ${edge.to}`)).toContain(
      'retry.working FAIL retry.idle',
    );
    expect(graph.edges.map((edge) => `${edge.from} ${edge.event} ${edge.to}`)).toContain(
      'retry.working PING retry.working',
    );
  });

  it('should interleave the regions of a parallel state and take its @done', () => {
    const report = enumeratePaths(buildStateGraph(fulfillmentMachine));
    expect(report.paths.map((path) => path.events)).toEqual([
      ['CAPTURE', 'PACK'],
      ['PACK', 'CAPTURE'],
    ]);
    expect(report.paths[0]!.steps.map((step) => step.event)).toEqual(['CAPTURE', 'PACK', '@done']);
    expect(report.paths[0]!.states).toEqual([
      ['fulfillment.processing.payment.pending', 'fulfillment.processing.packing.waiting'],
      ['fulfillment.processing.payment.captured', 'fulfillment.processing.packing.waiting'],
      ['fulfillment.shipped'],
    ]);
    expect(report.paths.every((path) => path.final[0] === 'fulfillment.shipped')).toBe(true);
  });

  it('should follow a guarded @always to each of its targets', () => {
    expect(lines(reviewMachine)).toEqual([
      'review.draft -SEND-> review.checking -@always [looksFine]-> review.accepted',
    ]);
    const graph = buildStateGraph(reviewMachine);
    // The fallback goes back to draft: a loop, not a path to a final state.
    expect(graph.edges.map((edge) => `${edge.from} ${edge.event} ${edge.to}`)).toEqual([
      'review.draft SEND review.accepted',
      'review.draft SEND review.draft',
    ]);
  });

  it('should stop at maxPaths and say so', () => {
    // 1024 paths: the spec's default limit of 1000 is reached.
    const byDefault = enumeratePaths(buildStateGraph(wideMachine));
    expect(byDefault.maxPaths).toBe(1000);
    expect(byDefault.paths).toHaveLength(1000);
    expect(byDefault.truncated).toBe(true);
    expect(enumeratePaths(buildStateGraph(wideMachine), 2000).paths).toHaveLength(1024);
    const limited = enumeratePaths(buildStateGraph(wideMachine), 5);
    expect(limited.paths).toHaveLength(5);
    expect(limited.truncated).toBe(true);
    // Exactly at the limit is not truncated.
    expect(enumeratePaths(buildStateGraph(wideMachine), 1024).truncated).toBe(false);
  });
});
