/**
 * `initialize` without history (stateless sends): a start that runs no behavior is answered
 * from the definition without a macrostep. Its outcome must be the full step's, and nothing of
 * it shared between two starts.
 */
import { describe, expect, it } from 'vitest';
import {
  defineMachine,
  defineValidationGuard,
  initialize,
  startAndTransition,
  transition,
  type BehaviorArgs,
  type EventObject,
  type MachineDefinition,
  type MacrostepResult,
} from '../../../src/runtime/index.js';
import type { StateConfig } from '../../../src/runtime/definition/types.js';

type Counter = { count: number; nested: { list: number[] } };

const inert = defineMachine<Counter>({
  config: {
    id: 'inert',
    initial: 'shop',
    context: { count: 0, nested: { list: [1] } },
    states: {
      shop: {
        type: 'parallel',
        states: {
          cart: { initial: 'empty', states: { empty: { on: { ADD: 'full' } }, full: {} } },
          payment: { initial: 'none', states: { none: {} } },
        },
      },
      done: { type: 'final' },
    },
    on: {
      BUMP: {
        actions: ({ context }: BehaviorArgs) => {
          const counter = context as Counter;
          counter.count += 1;
          counter.nested.list.push(counter.count);
        },
      },
    },
  },
});

function withEntry(kind: 'entry' | 'always' | 'final'): MachineDefinition {
  let calls = 0;
  const states: Record<string, StateConfig> =
    kind === 'entry'
      ? { idle: { entry: 'stamp' } }
      : kind === 'always'
        ? { idle: { on: { '@always': { target: 'ready', actions: 'stamp' } } }, ready: {} }
        : { idle: { type: 'final' as const } };
  return defineMachine<{ calls: number }>({
    config: { id: `with-${kind}`, initial: 'idle', context: { calls: 0 }, states },
    behavior: {
      actions: {
        stamp: ({ context }) => {
          calls += 1;
          context.calls = calls;
        },
      },
    },
  });
}

describe('initialize without history', () => {
  it('should give the snapshot of the full step: value, sequence, status and context', () => {
    const full = initialize(inert);
    const light = initialize(inert, { history: false });
    expect(light.history).toEqual([]);
    expect(light.effects).toEqual([]);
    expect(light.validationFailure).toBeNull();
    expect({ ...light.snapshot, id: '' }).toEqual({ ...full.snapshot, id: '' });
    expect(light.snapshot.sequence).toBe(full.history.length);
    expect(light.snapshot.id).not.toBe(full.snapshot.id);
  });

  it('should never share a context or value between two starts', () => {
    const first = initialize(inert, { history: false });
    const next = transition(inert, first.snapshot, 'BUMP', { history: false, adoptContext: true });
    expect(next.snapshot.context).toEqual({ count: 1, nested: { list: [1, 1] } });
    next.snapshot.value.push('changed by the caller');
    const second = initialize(inert, { history: false });
    expect(second.snapshot.context).toEqual({ count: 0, nested: { list: [1] } });
    expect(second.snapshot.context).not.toBe(first.snapshot.context);
    expect(second.snapshot.value).toEqual(['inert.shop.cart.empty', 'inert.shop.payment.none']);
  });

  it.each(['entry', 'always', 'final'] as const)(
    'should still run the start of a machine with %s behavior on every call',
    (kind) => {
      const definition = withEntry(kind);
      const full = initialize(definition);
      const first = initialize(definition, { history: false });
      const second = initialize(definition, { history: false });
      expect(first.snapshot.value).toEqual(full.snapshot.value);
      expect(first.snapshot.status).toBe(full.snapshot.status);
      expect(first.snapshot.sequence).toBe(full.history.length);
      if (kind !== 'final') {
        // The action ran once per start: 1 for the full step, then 2, then 3.
        expect(first.snapshot.context).toEqual({ calls: 2 });
        expect(second.snapshot.context).toEqual({ calls: 3 });
      }
    },
  );
});

const payment = defineMachine({
  config: {
    id: 'payment',
    initial: 'open',
    context: { attempts: 0 },
    states: {
      open: {
        on: {
          PAY: {
            target: 'paid',
            guards: [
              'countAttempt',
              defineValidationGuard({
                name: 'isAmountValid',
                check: ({ event }) => Number(event.payload?.amount) >= 100,
                message: 'Too small',
              }),
            ],
          },
          CHECK: { target: 'paid', guards: 'never' },
        },
      },
      paid: { on: { '@always': 'archived' } },
      archived: {},
    },
  },
  behavior: {
    guards: {
      countAttempt: ({ context }) => ((context.attempts as number) += 1) > 0,
      never: () => false,
    },
  },
});

const LIGHT = { history: false } as const;

/** The two calls of a stateless send, as the runtime made them before `startAndTransition`. */
function twoSteps(definition: MachineDefinition, event: EventObject): MacrostepResult {
  const initial = initialize(definition, LIGHT);
  return transition(definition, initial.snapshot, event, { ...LIGHT, adoptContext: true });
}

function outcome(run: () => MacrostepResult | null): unknown {
  try {
    const result = run();
    if (result === null) return null;
    return { ...result, snapshot: { ...result.snapshot, id: typeof result.snapshot.id } };
  } catch (error) {
    return { thrown: (error as Error).constructor.name, message: (error as Error).message };
  }
}

describe('startAndTransition', () => {
  it.each([
    ['a targetless action', inert, { type: 'BUMP' }],
    ['a transition into a parallel region', inert, { type: 'ADD' }],
    ['a guarded transition and @always', payment, { type: 'PAY', payload: { amount: 150 } }],
    ['a failed validation guard', payment, { type: 'PAY', payload: { amount: 5 } }],
    ['a failed ordinary guard', payment, { type: 'CHECK' }],
    ['an unhandled event', payment, { type: 'NOPE' }],
  ] as const)('should give what initialize and transition give for %s', (_name, machine, event) => {
    const expected = outcome(() => twoSteps(machine, event));
    expect(outcome(() => startAndTransition(machine, event, LIGHT))).toEqual(expected);
  });

  it('should leave to initialize and transition what it does not cover', () => {
    expect(startAndTransition(inert, { type: '@always' }, LIGHT)).toBeNull();
    expect(startAndTransition(inert, { type: 'BUMP' }, {})).toBeNull();
    expect(startAndTransition(withEntry('entry'), { type: 'BUMP' }, LIGHT)).toBeNull();
  });

  it('should start every call from a fresh context', () => {
    const first = startAndTransition(inert, { type: 'BUMP' }, LIGHT);
    const second = startAndTransition(inert, { type: 'BUMP' }, LIGHT);
    expect(second?.snapshot.context).toEqual({ count: 1, nested: { list: [1, 1] } });
    expect(second?.snapshot.context).not.toBe(first?.snapshot.context);
  });
});
