/**
 * Typed contracts at run time on the real runtime (a SQLite file and PostgreSQL): a child's
 * typed input parsed at its start (a failure routes `@fail` with MR_MACHINE_INPUT_VALIDATION,
 * or answers 422 with nothing committed when nothing handles `@fail`), a missing parent key, a
 * typed output carried by `@done` (or `@fail` with MR_MACHINE_OUTPUT_RESOLUTION when the context
 * cannot build it), and a typed failure carried by `@fail`.
 */
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  MachineInputValidationException,
  MachineRuntime,
  defineMachine,
  type EventObject,
} from '../../../src/runtime/index.js';
import { durableBackends } from '../../support/durable-backends.js';

const backends = await durableBackends('delegation/typed-contracts');

class Declined extends Error {
  readonly reason = 'card_expired';
}

const payment = defineMachine({
  config: {
    id: 'payment',
    initial: 'charging',
    input: z.object({ orderId: z.string(), amount: z.number().positive() }),
    failure: z.object({ message: z.string(), reason: z.string(), orderId: z.string() }),
    context: { orderId: '', amount: 0, paymentId: null as string | null },
    states: {
      charging: { entry: 'charge', on: { '@always': 'paid' } },
      paid: { type: 'final', output: z.object({ paymentId: z.string(), amount: z.number() }) },
    },
  },
  behavior: {
    actions: {
      charge: ({ context }) => {
        if (context.orderId === 'declined') throw new Declined('Card declined.');
        // An order id 'no-id' leaves paymentId null: the typed output cannot be built.
        if (context.orderId !== 'no-id') context.paymentId = `pay-${String(context.orderId)}`;
      },
    },
  },
});

const seen: EventObject[] = [];

const order = defineMachine({
  config: {
    id: 'order',
    initial: 'idle',
    context: { orderId: '', amount: 0, paymentId: null as string | null },
    states: {
      idle: {
        on: {
          PAY: { target: 'paying', actions: 'take' },
          PAY_UNHANDLED: { target: 'payingUnhandled', actions: 'take' },
        },
      },
      paying: {
        machine: payment,
        input: ['orderId', 'amount'],
        on: {
          '@done': { target: 'paid', actions: 'remember' },
          '@fail': { target: 'failed', actions: 'remember' },
        },
      },
      payingUnhandled: { machine: payment, input: ['orderId', 'amount'], on: { '@done': 'paid' } },
      paid: {},
      failed: {},
    },
  },
  behavior: {
    actions: {
      take: ({ context, event }) => {
        context.orderId = event.payload?.orderId as string;
        context.amount = event.payload?.amount as number;
      },
      remember: ({ event }) => void seen.push(event),
    },
  },
});

// The parent names a key its context only has at run time (no declared context).
const loose = defineMachine({
  config: {
    id: 'loose',
    initial: 'paying',
    states: {
      paying: {
        machine: payment,
        input: ['orderId', 'amount'],
        on: { '@done': 'failed', '@fail': 'failed' },
      },
      failed: {},
    },
  },
});

describe.each(backends)('typed contracts on $name', (backend) => {
  let runtime: MachineRuntime;

  beforeAll(async () => {
    const url = await backend.setUp();
    runtime = await MachineRuntime.open({ databaseUrl: url, machines: [order, payment, loose] });
  });
  afterAll(async () => {
    await runtime?.close();
    await backend.tearDown();
  });

  const pay = async (payload: Record<string, unknown>) => {
    seen.length = 0;
    const id = (await runtime.create(order)).snapshot.id;
    const { snapshot } = await runtime.send(order, id, { type: 'PAY', payload });
    return { id, snapshot, event: seen[0] };
  };

  it('should start the child with its parsed input and route @done with the typed output', async () => {
    const { snapshot, event } = await pay({ orderId: 'o-1', amount: 40 });
    expect(snapshot.value).toEqual(['order.paid']);
    expect(event?.payload).toMatchObject({ output: { paymentId: 'pay-o-1', amount: 40 } });
  });

  it('should route @fail with MR_MACHINE_INPUT_VALIDATION when the input fails the child schema', async () => {
    const { snapshot, event } = await pay({ orderId: 'o-2', amount: -5 });
    expect(snapshot.value).toEqual(['order.failed']);
    expect(event?.payload).toMatchObject({
      childMachineId: 'payment',
      error: {
        name: 'MachineInputValidationException',
        code: 'MR_MACHINE_INPUT_VALIDATION',
        message: expect.stringMatching(/^Child machine 'payment' cannot start: .*amount/),
      },
    });
  });

  it('should refuse the event (422) and commit nothing when nothing handles @fail', async () => {
    const id = (await runtime.create(order)).snapshot.id;
    const before = await runtime.history(order, id);
    const sent = runtime.send(order, id, {
      type: 'PAY_UNHANDLED',
      payload: { orderId: 'o-3', amount: 'forty' },
    });
    await expect(sent).rejects.toBeInstanceOf(MachineInputValidationException);
    await expect(sent).rejects.toMatchObject({ statusCode: 422 });
    expect(await runtime.history(order, id)).toEqual(before);
    expect((await runtime.restore(order, id)).value).toEqual(['order.idle']);
  });

  it('should raise MR_MACHINE_INPUT_VALIDATION for a parent key missing at run time', async () => {
    const { snapshot } = await runtime.create(loose);
    expect(snapshot.value).toEqual(['loose.failed']);
    const records = await runtime.history(loose, snapshot.id);
    const fail = records.find((record) => record.type === 'loose.child.payment.fail');
    expect(fail?.payload).toMatchObject({
      error: {
        code: 'MR_MACHINE_INPUT_VALIDATION',
        message: expect.stringContaining("context has no 'orderId'"),
      },
    });
  });

  it('should route @fail with MR_MACHINE_OUTPUT_RESOLUTION when the typed output cannot be built', async () => {
    const { snapshot, event } = await pay({ orderId: 'no-id', amount: 10 });
    expect(snapshot.value).toEqual(['order.failed']);
    expect(event?.payload).toMatchObject({
      error: {
        code: 'MR_MACHINE_OUTPUT_RESOLUTION',
        message: expect.stringContaining('paymentId'),
      },
    });
  });

  it('should carry the typed failure built from the error and the input on @fail', async () => {
    const { snapshot, event } = await pay({ orderId: 'declined', amount: 10 });
    expect(snapshot.value).toEqual(['order.failed']);
    expect(event?.payload).toMatchObject({
      error: { message: 'Card declined.' },
      failure: { message: 'Card declined.', reason: 'card_expired', orderId: 'declined' },
    });
  });
});
