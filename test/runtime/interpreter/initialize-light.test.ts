/**
 * `initialize` without history (stateless sends): a start that runs no behavior is answered
 * from the definition without a macrostep. Its outcome must be the full step's, and nothing of
 * it shared between two starts.
 */
import { describe, expect, it } from 'vitest';
import {
  defineMachine,
  initialize,
  transition,
  type BehaviorArgs,
  type MachineDefinition,
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
