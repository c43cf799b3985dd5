/**
 * The machine of the operations tests: a ticket with a compound `open` state (two leaves), a
 * timed escalation, and a final `closed` state.
 */
import { defineMachine } from '../../../src/runtime/definition/index.js';

export const ticketMachine = defineMachine({
  config: {
    id: 'ticket',
    initial: 'open',
    context: { notes: 0 },
    states: {
      open: {
        initial: 'fresh',
        on: { CLOSE: 'closed', NOTE: { actions: 'note' } },
        states: {
          fresh: { on: { TRIAGE: 'triaged' } },
          triaged: { on: { ESCALATE: { target: 'escalated', after: 3600 } } },
          escalated: {},
        },
      },
      closed: { type: 'final' },
    },
  },
  behavior: {
    actions: {
      note: ({ context }) => {
        context.notes = Number(context.notes) + 1;
      },
    },
  },
});
