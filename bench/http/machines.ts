/**
 * The machine every benchmark target runs: one counter whose INCREMENT event adds `by` to the
 * context (a targetless transition, so an instance accepts it forever). Written once for
 * machine-routes and once for XState v5, with the same zod payload schema.
 */
import { assign, setup } from 'xstate';
import { z } from 'zod';
import { defineMachine } from '../../src/runtime/definition/define-machine.js';
import { defineEvent } from '../../src/runtime/definition/event-type.js';

export const IncrementPayload = z.object({ by: z.number().int().min(1) });

export const counterMachine = defineMachine<{ count: number }>({
  config: {
    id: 'counter',
    initial: 'active',
    context: { count: 0 },
    states: { active: { on: { INCREMENT: { actions: 'increment' } } } },
  },
  behavior: {
    events: { INCREMENT: defineEvent({ type: 'INCREMENT', payload: IncrementPayload }) },
    actions: {
      increment: ({ context, event }) => {
        context.count += Number(event.payload?.by);
      },
    },
  },
  endpoints: ['INCREMENT'],
});

export const xstateCounter = setup({
  types: {} as { context: { count: number }; events: { type: 'INCREMENT'; by: number } },
}).createMachine({
  id: 'counter',
  initial: 'active',
  context: { count: 0 },
  states: {
    active: {
      on: {
        INCREMENT: { actions: assign({ count: ({ context, event }) => context.count + event.by }) },
      },
    },
  },
});

/** The body every target answers for one INCREMENT (same shape, same size). */
export function envelope(id: string, count: number) {
  return {
    data: {
      id,
      state: ['counter.active'],
      availableEvents: [{ type: 'INCREMENT', source: 'parent' }],
      output: { count },
      isProcessing: false,
    },
  };
}
