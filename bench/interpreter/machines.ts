/**
 * One machine shape on both interpreters, same semantics: 6 states including a parallel state
 * with two regions, guarded branches, context updates, an escape transition from the parallel
 * state. `CYCLE` drives it from `idle` back to `idle`.
 */
import { assign, setup } from 'xstate';
import { defineMachine } from '../../src/runtime/index.js';

type BenchContext = { count: number; total: number; marks: number };

/** One full cycle of events, back to `idle`. */
export const CYCLE = ['START', 'PROCESS', 'PROCESS', 'MARK', 'MARK', 'STOP', 'RESET'] as const;

export const machineRoutesMachine = defineMachine({
  config: {
    id: 'bench',
    initial: 'idle',
    context: { count: 0, total: 0, marks: 0 },
    states: {
      idle: { on: { START: { target: 'active', actions: 'increment' } } },
      active: {
        type: 'parallel',
        on: { STOP: 'stopped' },
        states: {
          work: {
            initial: 'pending',
            states: {
              pending: {
                on: {
                  PROCESS: [
                    { target: 'processing', guards: 'belowLimit', actions: 'addTotal' },
                    { target: 'pending' },
                  ],
                },
              },
              processing: { on: { PROCESS: { target: 'pending', actions: 'increment' } } },
            },
          },
          audit: {
            initial: 'clean',
            states: {
              clean: { on: { MARK: { target: 'dirty', actions: 'mark' } } },
              dirty: { on: { MARK: 'clean' } },
            },
          },
        },
      },
      stopped: { on: { RESET: { target: 'idle', guards: 'hasCount' } } },
    },
  },
  behavior: {
    guards: {
      belowLimit: ({ context }) => (context as BenchContext).total < Number.MAX_SAFE_INTEGER,
      hasCount: ({ context }) => (context as BenchContext).count > 0,
    },
    actions: {
      increment: ({ context }) => {
        (context as BenchContext).count += 1;
      },
      addTotal: ({ context }) => {
        (context as BenchContext).total += 2;
      },
      mark: ({ context }) => {
        (context as BenchContext).marks += 1;
      },
    },
  },
});

export const xstateMachine = setup({
  types: { context: {} as BenchContext },
  guards: {
    belowLimit: ({ context }) => context.total < Number.MAX_SAFE_INTEGER,
    hasCount: ({ context }) => context.count > 0,
  },
  actions: {
    increment: assign({ count: ({ context }) => context.count + 1 }),
    addTotal: assign({ total: ({ context }) => context.total + 2 }),
    mark: assign({ marks: ({ context }) => context.marks + 1 }),
  },
}).createMachine({
  id: 'bench',
  initial: 'idle',
  context: { count: 0, total: 0, marks: 0 },
  states: {
    idle: { on: { START: { target: 'active', actions: 'increment' } } },
    active: {
      type: 'parallel',
      on: { STOP: 'stopped' },
      states: {
        work: {
          initial: 'pending',
          states: {
            pending: {
              on: {
                PROCESS: [
                  { target: 'processing', guard: 'belowLimit', actions: 'addTotal' },
                  { target: 'pending', reenter: true },
                ],
              },
            },
            processing: { on: { PROCESS: { target: 'pending', actions: 'increment' } } },
          },
        },
        audit: {
          initial: 'clean',
          states: {
            clean: { on: { MARK: { target: 'dirty', actions: 'mark' } } },
            dirty: { on: { MARK: 'clean' } },
          },
        },
      },
    },
    stopped: { on: { RESET: { target: 'idle', guard: 'hasCount' } } },
  },
});
