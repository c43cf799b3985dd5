/**
 * The deploy check's messages agree with their counts: one instance "sits" and "holds", several
 * "sit" and "hold", and a count of zero is not spelled out. Pure: `checkDeploy` over hand-made
 * live data (test/cli/deploy-check.test.ts reads the same data from both stores).
 */
import { describe, expect, it } from 'vitest';
import { defineMachine } from '../../src/runtime/definition/define-machine.js';
import { checkDeploy } from '../../src/runtime/engine/deploy-check.js';
import type { LiveInstances } from '../../src/runtime/persistence/live-instances.js';

const shelf = defineMachine({
  config: {
    id: 'shelf',
    initial: 'open',
    context: { notes: '' },
    states: { open: { on: { CLOSE: 'closed' } }, closed: { type: 'final' } },
  },
});

function messages(live: Partial<LiveInstances>): string[] {
  return checkDeploy([shelf], { states: [], events: [], contexts: [], ...live }).map(
    (issue) => issue.error.message,
  );
}

const removed = (active: number, done: number) =>
  messages({ states: [{ machineId: 'shelf', stateId: 'shelf.gone', active, done }] })[0];

describe('deploy check messages', () => {
  it.each([
    [
      1,
      0,
      'but 1 active instance sits in it. Its next request would answer 409: keep the state, or move it to one of shelf.open, shelf.closed before deploying.',
    ],
    [
      2,
      0,
      'but 2 active instances sit in it. Their next requests would answer 409: keep the state, or move them to one of shelf.open, shelf.closed before deploying.',
    ],
    [
      1,
      2,
      "but 1 active and 2 done instances sit in it. The active one's next request would answer 409: keep the state, or move it to one of shelf.open, shelf.closed before deploying.",
    ],
    [
      0,
      1,
      'but 1 done instance sits in it. It is done; reads of it answer 409 until it is archived.',
    ],
    [
      0,
      3,
      'but 3 done instances sit in it. They are done; reads of them answer 409 until they are archived.',
    ],
  ])('should make the verbs agree with %i active and %i done instances', (active, done, text) => {
    expect(removed(active, done)).toBe(
      `State 'shelf.gone' of machine 'shelf' was removed or renamed, ${text}`,
    );
  });

  it.each([
    [1, '1 stored instance holds number'],
    [2, '2 stored instances hold number'],
  ])('should make the verb agree with %i stored instances', (count, text) => {
    const contexts = Array.from({ length: count }, () => ({ notes: 7 }));
    expect(messages({ contexts: [{ machineId: 'shelf', contexts }] })[0]).toContain(
      `the definition says expected string, ${text}.`,
    );
  });
});
