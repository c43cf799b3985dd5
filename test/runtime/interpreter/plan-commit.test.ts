/**
 * `planCommit`: the write rules of a step as data (rows, instances, jobs, sends), pure.
 */
import { describe, expect, it } from 'vitest';
import { defineMachine } from '../../../src/runtime/definition/index.js';
import {
  initialize,
  planCommit,
  transition,
  type MacrostepResult,
} from '../../../src/runtime/interpreter/index.js';
import { approvalMachine, claimMachine } from '../delegation/fixtures/machines.js';

const at = new Date('2026-01-02T03:04:05.000Z');
const now = () => at;

describe('planCommit', () => {
  it('should plan a pending child row and its start job for an asynchronous child', () => {
    const result = initialize(claimMachine, { now });
    const [start] = result.effects;

    const plan = planCommit({ main: { result, from: null }, at });

    expect(start?.kind).toBe('startChild');
    const childId = start?.kind === 'startChild' ? start.childId : '';
    expect(plan.write).toMatchObject({
      snapshot: result.snapshot,
      history: result.history,
      expectedSequence: null,
      previousValue: [],
      now: at,
      children: [
        {
          kind: 'insert',
          row: {
            id: childId,
            status: 'pending',
            parentStateId: 'claim.reviewing',
            createdAt: at.toISOString(),
          },
        },
      ],
    });
    expect(plan.jobs).toEqual([{ kind: 'child.start', payload: start, key: `start:${childId}` }]);
    expect(plan.sends).toEqual([]);
  });

  it('should fence on the snapshot the step started from', () => {
    const created = initialize(approvalMachine, { now });
    const result = transition(approvalMachine, created.snapshot, 'APPROVE', { now });

    const plan = planCommit({ main: { result, from: created.snapshot }, at });

    expect(plan.write.expectedSequence).toBe(created.snapshot.sequence);
    expect(plan.write.previousValue).toEqual(created.snapshot.value);
    expect(plan.write.children).toBeUndefined();
  });

  it('should complete the row of a child that finished through its own event and plan the parent completion', () => {
    const child = initialize(approvalMachine, {
      now,
      parent: { machineId: 'claim', id: '01J0000000000000000000PARE' },
    });
    const result = transition(approvalMachine, child.snapshot, 'APPROVE', { now });

    const plan = planCommit({ main: { result, from: child.snapshot }, at });

    expect(plan.write.children).toEqual([
      {
        kind: 'setStatus',
        childId: child.snapshot.id,
        from: ['pending', 'running'],
        status: 'completed',
        at: at.toISOString(),
      },
    ]);
    expect(plan.jobs).toEqual([
      {
        kind: 'child.complete',
        payload: { childId: child.snapshot.id },
        key: `complete:${child.snapshot.id}`,
      },
    ]);
  });

  it('should turn dispatchTo into a send job and sendTo into a send after the commit', () => {
    const target = { machineId: 'approval', id: '01J0000000000000000000TARG' };
    const messenger = defineMachine({
      config: {
        id: 'messenger',
        initial: 'idle',
        states: { idle: { on: { GO: { actions: ['tell', 'post'] } } } },
      },
      behavior: {
        actions: {
          tell: ({ sendTo }) => sendTo(target, 'APPROVE'),
          post: ({ dispatchTo }) => dispatchTo(target, 'REJECT'),
        },
      },
    });
    const created = initialize(messenger, { now });
    const result: MacrostepResult = transition(messenger, created.snapshot, 'GO', { now });

    const plan = planCommit({ main: { result, from: created.snapshot }, at });

    expect(plan.sends.map((send) => [send.mode, send.event.type])).toEqual([['sync', 'APPROVE']]);
    expect(plan.jobs.map((job) => job.kind)).toEqual(['send']);
    expect(plan.jobs[0]?.payload).toMatchObject({
      effect: { mode: 'async', target, event: { type: 'REJECT' } },
      attempt: 1,
      exceptions: 0,
    });
  });
});
