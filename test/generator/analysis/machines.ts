/**
 * Machines of the path and diagram tests: a loop, a guard with a fallback, a guarded `@always`,
 * and one with many paths for the `--max-paths` limit.
 */
import { defineMachine } from '../../../src/runtime/index.js';

/** `working` can fail back to `idle` (a loop); FINISH is guarded with an unguarded fallback. */
export const retryMachine = defineMachine({
  config: {
    id: 'retry',
    description: 'A job that is retried until it finishes.',
    initial: 'idle',
    context: { attempts: 0 },
    states: {
      idle: { description: 'Not started.', on: { START: 'working' } },
      working: {
        on: {
          FAIL: 'idle',
          FINISH: [{ target: 'done', guards: 'isValid' }, { target: 'rejected' }],
          PING: { actions: 'count' },
        },
      },
      done: { type: 'final' },
      rejected: { type: 'final' },
    },
  },
  behavior: {
    guards: { isValid: ({ context }) => context['attempts'] !== 0 },
    actions: { count: () => undefined },
  },
});

/** Entering `checking` decides at once with a guarded `@always`. */
export const reviewMachine = defineMachine({
  config: {
    id: 'review',
    initial: 'draft',
    states: {
      draft: { on: { SEND: 'checking' } },
      checking: {
        on: { '@always': [{ target: 'accepted', guards: 'looksFine' }, { target: 'draft' }] },
      },
      accepted: { type: 'final' },
    },
  },
  behavior: { guards: { looksFine: () => true } },
});

/** Ten stages, each left by A or B: 2^10 paths to the end. */
export const wideMachine = defineMachine({
  config: {
    id: 'wide',
    initial: 's0',
    states: Object.fromEntries([
      ...Array.from({ length: 10 }, (_, index) => [
        `s${index}`,
        { on: { A: `s${index + 1}`, B: `s${index + 1}` } },
      ]),
      ['s10', { type: 'final' }],
    ]),
  },
});
