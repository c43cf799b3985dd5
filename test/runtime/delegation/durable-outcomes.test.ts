/**
 * Every delegation outcome with the DURABLE queue really running: `MachineRuntime.open` on a
 * SQLite file (embedded `machine_jobs` queue, in-process worker) and on PostgreSQL (pg-boss),
 * asynchronous children (`loan`) and synchronous ones (`desk`).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { MachineRuntime, type MachineDefinition } from '../../../src/runtime/index.js';
import { queueBackends } from '../../support/queue-backends.js';
import { deskMachine, loanMachine } from './fixtures/machines.js';

const backends = await queueBackends('delegation/durable-outcomes');

// Generous: a loaded 2-core machine, pg-boss's whole-second timers.
const DEADLINE = { timeout: 20_000, interval: 25 };

describe.each(backends)('delegation outcomes with the durable worker on $name', (backend) => {
  let runtime: MachineRuntime;

  beforeAll(async () => {
    const url = await backend.setUp();
    runtime = await MachineRuntime.open({
      databaseUrl: url,
      machines: [loanMachine, deskMachine],
      jobQueue: { pollIntervalMs: 20, backoffMs: 50, timeoutMs: 10_000 },
    });
  });
  afterAll(async () => {
    await runtime?.close();
    await backend.tearDown();
  });

  /** Waits until the instance's state is `state`, then returns its history's types. */
  const reaches = async (definition: MachineDefinition, id: string, state: string) => {
    await vi.waitFor(async () => {
      expect((await runtime.restore(definition, id)).value).toEqual([`${definition.id}.${state}`]);
    }, DEADLINE);
    return (await runtime.history(definition, id)).map((record) => record.type);
  };
  const create = async (definition: MachineDefinition, amount = 100) =>
    (await runtime.create(definition, { input: { amount } })).snapshot.id;
  /** The single child row of a parent, once it is `status`. */
  const childOf = async (parentId: string, status: string) => {
    await vi.waitFor(async () => {
      expect((await runtime.children(parentId)).map((row) => row.status)).toEqual([status]);
    }, DEADLINE);
    return (await runtime.children(parentId))[0]!;
  };
  const outcomes = (types: string[], parent: string, child: string) =>
    types.filter((type) => type.startsWith(`${parent}.child.${child}.`));

  describe('asynchronous children', () => {
    it('should route @done.<final> when the child ends in that final state (forwarded event)', async () => {
      const id = await create(loanMachine);
      await runtime.send(loanMachine, id, { type: 'APPLY' });
      await childOf(id, 'running');

      await runtime.send(loanMachine, id, { type: 'APPROVE' });

      const types = await reaches(loanMachine, id, 'approved');
      expect(outcomes(types, 'loan', 'approval')).toEqual([
        'loan.child.approval.start',
        'loan.child.approval.done',
      ]);
      expect(types).toContain('loan.transition.reviewing.@done.approved.start');
      expect((await runtime.children(id)).map((row) => row.status)).toEqual(['completed']);
    });

    it('should route @done when no @done.<final> matches', async () => {
      const id = await create(loanMachine);
      await runtime.send(loanMachine, id, { type: 'APPLY' });
      await childOf(id, 'running');

      await runtime.send(loanMachine, id, { type: 'REJECT' });

      const types = await reaches(loanMachine, id, 'rejected');
      expect(outcomes(types, 'loan', 'approval')).toEqual([
        'loan.child.approval.start',
        'loan.child.approval.done',
      ]);
    });

    it.each([
      [5000, 'large'],
      [10, 'small'],
    ])('should pick the guarded @done branch (amount %i -> %s)', async (amount, target) => {
      const id = await create(loanMachine, amount);
      await runtime.send(loanMachine, id, { type: 'RATE' });
      const row = await childOf(id, 'running');

      await runtime.send(
        loanMachine.idMap.get('loan.rating')!.invocation!.machine as MachineDefinition,
        row.id,
        {
          type: 'APPROVE',
        },
      );

      await reaches(loanMachine, id, target);
    });

    it('should route @fail when the child fails to start', async () => {
      const id = await create(loanMachine);
      await runtime.send(loanMachine, id, { type: 'SCORE' });

      const types = await reaches(loanMachine, id, 'failed');
      expect(outcomes(types, 'loan', 'exploding')).toEqual([
        'loan.child.exploding.start',
        'loan.child.exploding.fail',
      ]);
      const fail = (await runtime.history(loanMachine, id)).find(
        (record) => record.type === 'loan.child.exploding.fail',
      );
      expect(fail?.payload).toMatchObject({
        error: { name: 'Error', message: 'scoring service down' },
      });
      expect((await runtime.children(id)).map((row) => row.status)).toEqual(['failed']);
    });

    it('should route @timeout when the child does not finish in time', async () => {
      const id = await create(loanMachine);
      await runtime.send(loanMachine, id, { type: 'WAIT' });

      const types = await reaches(loanMachine, id, 'expired');
      expect(outcomes(types, 'loan', 'approval')).toEqual([
        'loan.child.approval.start',
        'loan.child.approval.timeout',
      ]);
      expect((await runtime.children(id)).map((row) => row.status)).toEqual(['timed_out']);
    });

    it('should cancel the child when the delegating state is left, and ignore its late completion', async () => {
      const id = await create(loanMachine);
      await runtime.send(loanMachine, id, { type: 'APPLY' });
      const row = await childOf(id, 'running');

      await runtime.send(loanMachine, id, { type: 'CANCEL' });
      expect((await runtime.children(id)).map((child) => child.status)).toEqual(['cancelled']);
      const approval = loanMachine.idMap.get('loan.reviewing')!.invocation!
        .machine as MachineDefinition;
      await runtime.send(approval, row.id, { type: 'APPROVE' });
      // The child's completion job runs and finds the row cancelled: nothing changes.
      await vi.waitFor(async () => {
        expect((await runtime.restore(approval, row.id)).status).toBe('done');
      }, DEADLINE);

      const types = await reaches(loanMachine, id, 'cancelled');
      expect(outcomes(types, 'loan', 'approval')).toEqual(['loan.child.approval.start']);
    });
  });

  describe('synchronous children', () => {
    it.each([
      [100, 'approved'],
      [9000, 'rejected'],
    ])(
      'should route @done.<final>, else @done, in the same step (amount %i -> %s)',
      async (amount, target) => {
        const id = await create(deskMachine, amount);

        const { snapshot } = await runtime.send(deskMachine, id, { type: 'AUTO' });

        expect(snapshot.value).toEqual([`desk.${target}`]);
        const types = (await runtime.history(deskMachine, id)).map((record) => record.type);
        expect(outcomes(types, 'desk', 'instant')).toEqual([
          'desk.child.instant.start',
          'desk.child.instant.done',
        ]);
        expect((await runtime.children(id)).map((row) => row.status)).toEqual(['completed']);
      },
    );

    it.each([
      [3000, 'large'],
      [10, 'small'],
    ])('should pick the guarded @done branch (amount %i -> %s)', async (amount, target) => {
      const id = await create(deskMachine, amount);
      const { snapshot } = await runtime.send(deskMachine, id, { type: 'GRADE' });
      expect(snapshot.value).toEqual([`desk.${target}`]);
    });

    it('should route @fail when the child throws', async () => {
      const id = await create(deskMachine);
      const { snapshot } = await runtime.send(deskMachine, id, { type: 'EXPLODE' });
      expect(snapshot.value).toEqual(['desk.failed']);
      const types = (await runtime.history(deskMachine, id)).map((record) => record.type);
      expect(outcomes(types, 'desk', 'exploding')).toEqual([
        'desk.child.exploding.start',
        'desk.child.exploding.fail',
      ]);
    });

    it('should complete through the durable queue a child that waited for its own events', async () => {
      const id = await create(deskMachine);
      await runtime.send(deskMachine, id, { type: 'MANUAL' });
      const row = await childOf(id, 'running');

      await runtime.send(
        deskMachine.idMap.get('desk.manual')!.invocation!.machine as MachineDefinition,
        row.id,
        {
          type: 'APPROVE',
        },
      );

      const types = await reaches(deskMachine, id, 'approved');
      expect(outcomes(types, 'desk', 'approval')).toEqual([
        'desk.child.approval.start',
        'desk.child.approval.done',
      ]);
    });

    it('should cancel a waiting synchronous child when the state is left', async () => {
      const id = await create(deskMachine);
      await runtime.send(deskMachine, id, { type: 'MANUAL' });

      const { snapshot } = await runtime.send(deskMachine, id, { type: 'CANCEL' });

      expect(snapshot.value).toEqual(['desk.cancelled']);
      expect((await runtime.children(id)).map((row) => row.status)).toEqual(['cancelled']);
    });
  });
});
