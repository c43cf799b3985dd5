/**
 * Job actors, pure side: what entering and leaving a `job` state yields (typed effects), and how
 * a job's outcome is routed by `completeJob` / `completeChild` (no I/O here; the durable side is
 * job-actors-durable.test.ts).
 */
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import {
  completeChild,
  completeJob,
  defineJob,
  defineMachine,
  defineScenario,
  validateMachine,
  planScenarioStep,
  initialize,
  resolveJobOutcome,
  transition,
  type CancelJobEffect,
  type EventObject,
  type JobInvocation,
  type MachineSnapshot,
  type StartJobEffect,
} from '../../../src/runtime/index.js';
import { fixedClock, typesOf } from '../interpreter/helpers.js';

const charge = defineJob({
  name: 'charge',
  input: z.object({ orderId: z.string(), amount: z.number() }),
  output: z.object({ paymentId: z.string() }),
  run: async ({ amount }) => ({ paymentId: `pay-${amount}` }),
});

const seen: EventObject[] = [];

const checkout = defineMachine({
  config: {
    id: 'checkout',
    initial: 'cart',
    context: { orderId: 'ORD-1', total: 40, paymentId: null as string | null },
    states: {
      cart: { on: { PAY: 'charging', NOTIFY: 'notifying' } },
      charging: {
        job: charge,
        input: { orderId: 'orderId', amount: 'total' },
        on: {
          '@done': [
            { target: 'review', guards: 'isLarge', actions: 'remember' },
            { target: 'paid', actions: ['remember', 'storePayment'] },
          ],
          '@fail': { target: 'failed', actions: 'remember' },
          '@timeout': { target: 'expired', after: { minutes: 2 }, actions: 'remember' },
          CANCEL: 'cart',
        },
      },
      notifying: {
        job: async function sendReceipt(input: { orderId?: string }) {
          return { sent: input.orderId };
        },
        input: ['orderId'],
        target: 'paid',
      },
      review: {},
      paid: {},
      failed: {},
      expired: {},
    },
  },
  behavior: {
    guards: {
      isLarge: ({ event }) => (event.payload?.output as { large?: boolean }).large === true,
    },
    actions: {
      remember: ({ event }) => void seen.push(event),
      storePayment: ({ context, event }) => {
        context.paymentId = (event.payload?.output as { paymentId: string }).paymentId;
      },
    },
  },
});

const invocation = checkout.idMap.get('checkout.charging')!.invocation as JobInvocation;

function charging(): { snapshot: MachineSnapshot; start: StartJobEffect } {
  const created = initialize(checkout, fixedClock);
  const entered = transition(
    checkout,
    created.snapshot,
    { type: 'PAY', actor: 'user-7' },
    fixedClock,
  );
  return { snapshot: entered.snapshot, start: entered.effects[0] as StartJobEffect };
}

describe('job actors (pure)', () => {
  it('should normalize a job state: name, schemas, @timeout delay, not fire-and-forget', () => {
    expect(invocation).toMatchObject({
      kind: 'job',
      async: true,
      name: 'charge',
      fireAndForget: false,
      timeoutSeconds: 120,
    });
    expect(checkout.idMap.get('checkout.notifying')!.invocation).toMatchObject({
      kind: 'job',
      name: 'sendReceipt',
      fireAndForget: true,
    });
  });

  it('should yield a typed startJob effect with the mapped input when the state is entered', () => {
    const { snapshot, start } = charging();

    expect(snapshot.value).toEqual(['checkout.charging']);
    expect(start).toEqual({
      kind: 'startJob',
      parentMachineId: 'checkout',
      parentId: snapshot.id,
      parentStateId: 'checkout.charging',
      job: 'charge',
      jobId: expect.any(String),
      input: { orderId: 'ORD-1', amount: 40 },
      actor: 'user-7',
      fireAndForget: false,
      timeoutSeconds: 120,
    });
  });

  it('should record the start with the job id', () => {
    const created = initialize(checkout, fixedClock);
    const entered = transition(checkout, created.snapshot, 'PAY', fixedClock);
    const start = entered.effects[0] as StartJobEffect;
    const record = entered.history.find((item) => item.type === 'checkout.child.charge.start');
    expect(record?.payload).toEqual({ jobId: start.jobId });
  });

  it('should yield a cancelJob effect when the state is left before the job finished', () => {
    const { snapshot } = charging();
    const left = transition(checkout, snapshot, 'CANCEL', fixedClock);

    expect(left.snapshot.value).toEqual(['checkout.cart']);
    expect(left.effects).toEqual([
      {
        kind: 'cancelJob',
        parentMachineId: 'checkout',
        parentId: snapshot.id,
        parentStateId: 'checkout.charging',
        job: 'charge',
      } satisfies CancelJobEffect,
    ]);
  });

  it('should route @done with the validated output, through the guarded branches', () => {
    const { snapshot, start } = charging();
    seen.length = 0;
    const outcome = resolveJobOutcome(invocation, {
      outcome: 'done',
      jobId: start.jobId,
      output: { paymentId: 'pay-40', extra: 'dropped by the schema' },
    });
    const result = completeJob(checkout, snapshot, 'checkout.charging', outcome, fixedClock)!;

    expect(result.snapshot.value).toEqual(['checkout.paid']);
    expect(result.snapshot.context.paymentId).toBe('pay-40');
    expect(seen).toEqual([
      {
        type: '@done',
        payload: { jobId: start.jobId, job: 'charge', output: { paymentId: 'pay-40' } },
        actor: null,
      },
    ]);
    expect(typesOf(result.history)).toContain('checkout.child.charge.done');
    // Left through its own outcome: nothing to cancel.
    expect(result.effects).toEqual([]);
  });

  it('should route @fail when the output does not match the schema', () => {
    const { snapshot, start } = charging();
    const outcome = resolveJobOutcome(invocation, {
      outcome: 'done',
      jobId: start.jobId,
      output: { id: 42 },
    });

    expect(outcome).toMatchObject({
      outcome: 'fail',
      error: { name: 'MachineValidationException', code: 'MR_VALIDATION_FAILED' },
    });
    expect(outcome.outcome === 'fail' && outcome.error.message).toMatch(
      /Job 'charge' returned an output that does not match its output schema: paymentId/,
    );
    const result = completeJob(checkout, snapshot, 'checkout.charging', outcome, fixedClock)!;
    expect(result.snapshot.value).toEqual(['checkout.failed']);
  });

  it('should route @fail with a serializable error', () => {
    const { snapshot, start } = charging();
    seen.length = 0;
    const outcome = resolveJobOutcome(invocation, {
      outcome: 'fail',
      jobId: start.jobId,
      error: new TypeError('card declined'),
    });
    const result = completeJob(checkout, snapshot, 'checkout.charging', outcome, fixedClock)!;

    expect(result.snapshot.value).toEqual(['checkout.failed']);
    expect(seen[0]?.payload).toEqual({
      jobId: start.jobId,
      job: 'charge',
      error: { name: 'TypeError', code: null, message: 'card declined' },
    });
  });

  it('should route @timeout (the shell timeout job goes through completeChild)', () => {
    const { snapshot, start } = charging();
    seen.length = 0;
    const result = completeChild(
      checkout,
      snapshot,
      { parentStateId: 'checkout.charging', outcome: 'timeout', childId: start.jobId },
      fixedClock,
    )!;

    expect(result.snapshot.value).toEqual(['checkout.expired']);
    expect(seen[0]?.payload).toEqual({ jobId: start.jobId, job: 'charge', after: 120 });
  });

  it('should be a no-op (null) when the instance has moved on', () => {
    const { snapshot, start } = charging();
    const moved = transition(checkout, snapshot, 'CANCEL', fixedClock).snapshot;
    const outcome = resolveJobOutcome(invocation, {
      outcome: 'done',
      jobId: start.jobId,
      output: { paymentId: 'late' },
    });

    expect(completeJob(checkout, moved, 'checkout.charging', outcome, fixedClock)).toBeNull();
  });

  it('should start a fire-and-forget job and move on to its target in the same step', () => {
    const created = initialize(checkout, fixedClock);
    const result = transition(checkout, created.snapshot, 'NOTIFY', fixedClock);

    expect(result.snapshot.value).toEqual(['checkout.paid']);
    expect(result.effects).toEqual([
      expect.objectContaining({
        kind: 'startJob',
        job: 'sendReceipt',
        parentStateId: 'checkout.notifying',
        input: { orderId: 'ORD-1' },
        fireAndForget: true,
        timeoutSeconds: null,
      }),
    ]);
    // Leaving a fire-and-forget job's state does not cancel it.
    expect(result.effects.some((effect) => effect.kind === 'cancelJob')).toBe(false);
  });

  it('should let a scenario force a job outcome: no job starts, the outcome is routed at once', () => {
    const machine = defineMachine({
      config: {
        id: 'm',
        initial: 'a',
        states: {
          a: { on: { GO: 'charging' } },
          charging: { job: async () => ({}), on: { '@done': 'paid', '@fail': 'a' } },
          paid: { type: 'final' },
        },
      },
      scenarios: [
        defineScenario({
          slug: 'declined',
          description: 'The charge fails',
          source: 'a',
          event: 'GO',
          plan: { children: { charging: '@fail' } },
        }),
      ],
    });
    const initial = initialize(machine, fixedClock).snapshot;
    const step = planScenarioStep(
      machine,
      initial,
      'GO',
      { kind: 'play', slug: 'declined', params: {} },
      null,
    );
    const result = transition(machine, initial, 'GO', { ...fixedClock, scenario: step.active });
    expect(result.snapshot.value).toEqual(['m.a']);
    expect(result.effects).toEqual([]);
    const fail = result.history.find(
      (record) => record.type.endsWith('.fail') && record.payload?.['error'],
    );
    expect(fail?.payload).toMatchObject({
      error: {
        name: 'ScenarioOutcome',
        message: "Scenario 'declined' forced the outcome '@fail' of job 'charging'.",
      },
    });
  });

  it('should refuse a job override that is not an outcome (a child scenario, a final state)', () => {
    const issues = validateMachine({
      config: {
        id: 'm',
        initial: 'a',
        states: {
          a: { on: { GO: 'charging' } },
          charging: { job: async () => ({}), on: { '@done': 'a' } },
        },
      },
      scenarios: [
        defineScenario({
          slug: 's1',
          description: '',
          source: 'a',
          event: 'GO',
          plan: { children: { charging: '@done.paid' } },
        }),
      ],
    });
    expect(issues.map((issue) => issue.message)).toEqual([
      "Machine 'm', scenario 's1': plan.children names 'charging', a job actor: force its outcome with '@done', '@fail', '@timeout' or a function returning one.",
    ]);
  });
});
