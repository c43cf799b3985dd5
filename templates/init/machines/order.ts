// machines/order.ts
import { defineEvent, defineMachine } from 'machine-routes/runtime';
import { z } from 'zod';

export const SubmitEvent = defineEvent({
  type: 'SUBMIT', // optional: `class SubmitEvent extends MachineEvent {}` derives it from the name
  payload: z.object({ amount: z.number().int().min(1) }),
});

export const orderMachine = defineMachine({
  config: {
    id: 'order',
    initial: 'draft',
    context: { total: 0 }, // behaviors see `context.total` as a number
    states: {
      draft: { on: { SUBMIT: { target: 'submitted', actions: 'storeTotal' } } },
      submitted: {
        on: { APPROVE: { target: 'approved', guards: 'withinLimit' }, CANCEL: 'cancelled' },
      },
      approved: { type: 'final' },
      cancelled: { type: 'final' },
    },
  },
  behavior: {
    events: { SUBMIT: SubmitEvent },
    guards: {
      // A validation guard rejects the event with 422 instead of silently staying put.
      withinLimit: {
        check: ({ context }) => context.total <= 10_000,
        message: 'Orders over 10000 need a manual approval.',
        field: 'total',
      },
    },
    actions: {
      // Named only in SUBMIT's transition: `event.payload` is SUBMIT's, `{ amount: number }`.
      storeTotal: ({ context, event }) => {
        context.total = event.payload.amount;
      },
    },
  },
  // The four endpoint formats mix freely: a type or event definition, a URI, options.
  endpoints: [SubmitEvent, { APPROVE: { method: 'PATCH' } }, { CANCEL: '/cancel-order' }],
});
