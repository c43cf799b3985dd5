/**
 * `check`'s warnings for what can never succeed in a valid project (analysis/never-succeeds.ts),
 * one fixture per case under fixtures/warnings, plus configs whose every event has a sender
 * other than its own routes (timers, schedules, forwards) and must not warn.
 */
import { describe, expect, it } from 'vitest';
import { checkProject, checkWarnings } from '../../src/generator/generate.js';
import { relativeIssue } from '../../src/cli/io.js';
import { formatIssue } from '../../src/generator/issues.js';
import { EXAMPLE_CONFIG, ROOT } from './support.js';

async function warningsOf(config: string): Promise<string[]> {
  const report = await checkProject({ config, cwd: ROOT });
  expect(report.issues).toEqual([]);
  return (await checkWarnings(report)).map((issue) => formatIssue(relativeIssue(issue, ROOT)));
}

describe('check warnings: what can never succeed', () => {
  it('should warn on stateless routes whose event the initial state refuses', async () => {
    expect(await warningsOf('fixtures/warnings/stateless-never-succeeds.config.ts')).toEqual([
      "fixtures/warnings/stateless-never-succeeds.config.ts:8:19 RouteNeverSucceedsException [MR_ROUTE_NEVER_SUCCEEDS] Route 'order.approve' (PATCH /orders/approve) of registration 'order' is stateless: each request starts a new 'order' instance, and its initial state 'order.draft' does not accept 'APPROVE', so the route can never succeed. Bind it to an instance: add 'APPROVE' to the registration's machineIdFor (or modelFor), or handle 'APPROVE' in the initial state.",
      "fixtures/warnings/stateless-never-succeeds.config.ts:8:19 RouteNeverSucceedsException [MR_ROUTE_NEVER_SUCCEEDS] Route 'order.cancel' (POST /orders/cancel-order) of registration 'order' is stateless: each request starts a new 'order' instance, and its initial state 'order.draft' does not accept 'CANCEL', so the route can never succeed. Bind it to an instance: add 'CANCEL' to the registration's machineIdFor (or modelFor), or handle 'CANCEL' in the initial state.",
    ]);
  });

  it('should warn on an event that no route, timer, schedule or forward sends', async () => {
    expect(await warningsOf('fixtures/warnings/event-never-sent.config.ts')).toEqual([
      "fixtures/warnings/order-machine.ts:18:15 EventNeverSentException [MR_EVENT_NEVER_SENT] Machine 'order': event 'APPROVE' is handled by 'order.submitted' but nothing sends it: no route of registration 'order', no timer, schedule or forward. List it in the machine's endpoints (and keep it out of the registration's except), or remove its transitions; ignore this if a behavior raises or sends it (raise, sendTo, sendToParent).",
    ]);
  });

  it('should warn on a state no path enters, once for its subtree', async () => {
    expect(await warningsOf('fixtures/warnings/unreachable-state.config.ts')).toEqual([
      "fixtures/warnings/unreachable-state.config.ts:11:7 UnreachableStateException [MR_UNREACHABLE_STATE] Machine 'ticket': state 'ticket.archived' is never entered: no path of transitions from the initial state leads to it. Add a transition that targets it, or remove it.",
    ]);
  });

  it('should count timers, then-events, schedules and forwards as senders', async () => {
    expect(await warningsOf('fixtures/warnings/internal-senders.config.ts')).toEqual([]);
  });

  it('should find nothing in the example application', async () => {
    expect(await warningsOf(EXAMPLE_CONFIG)).toEqual([]);
  });
});
