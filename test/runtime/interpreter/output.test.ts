import { describe, expect, it } from 'vitest';
import {
  BehaviorNotFoundException,
  defineMachine,
  initialize,
  resolveOutput,
  responseContext,
  transition,
  type BehaviorArgs,
} from '../../../src/runtime/index.js';

class Summary {
  run({ context, params, state }: BehaviorArgs) {
    return { total: context.total, currency: params.currency, inReview: state.matches('review') };
  }
}

const order = defineMachine({
  config: {
    id: 'order',
    initial: 'draft',
    context: { total: 10, secret: 'x' },
    output: ['total'],
    states: {
      draft: { on: { REVIEW: 'review', SHIP: 'shipping', START: 'work' } },
      review: {
        output: [Summary, { currency: 'EUR' }],
        initial: 'pending',
        states: { pending: { on: { NEXT: 'detail' } }, detail: { output: 'detailed' } },
      },
      shipping: { output: ['total', 'doubled', 'missing'] },
      work: {
        type: 'parallel',
        output: ({ context }: BehaviorArgs) => ({ parallelTotal: context.total }),
        states: { a: { initial: 'x', states: { x: {} } }, b: { initial: 'y', states: { y: {} } } },
      },
    },
  },
  behavior: {
    outputs: { detailed: ({ context }) => `detail of ${String(context.total)}` },
    computed: { doubled: ({ context }) => (context.total as number) * 2 },
  },
});

const after = (...events: string[]) =>
  events.reduce(
    (snapshot, event) => transition(order, snapshot, event).snapshot,
    initialize(order).snapshot,
  );

describe('responseContext', () => {
  it('should add computed values to the context without persisting them', () => {
    const snapshot = initialize(order).snapshot;

    expect(responseContext(order, snapshot)).toEqual({ total: 10, secret: 'x', doubled: 20 });
    expect(snapshot.context).toEqual({ total: 10, secret: 'x' });
  });
});

describe('resolveOutput', () => {
  it.each([
    ['an ancestor (root) key filter', [], { total: 10 }],
    [
      'a compound ancestor output behavior with params',
      ['REVIEW'],
      { total: 10, currency: 'EUR', inReview: true },
    ],
    ['the atomic state output by inline key', ['REVIEW', 'NEXT'], 'detail of 10'],
    [
      'a key filter over context and computed values, dropping missing keys',
      ['SHIP'],
      { total: 10, doubled: 20 },
    ],
    ['the parallel state own output', ['START'], { parallelTotal: 10 }],
  ])('should resolve %s', (_label, events, expected) => {
    expect(resolveOutput(order, after(...events))).toEqual(expected);
  });

  it('should prefer an endpoint output over the state output', () => {
    expect(resolveOutput(order, after('SHIP'), { kind: 'keys', keys: ['secret'] })).toEqual({
      secret: 'x',
    });
  });

  it('should fall back to context and computed values when no state defines an output', () => {
    const plain = defineMachine({
      config: { id: 'p', initial: 'a', context: { n: 1 }, states: { a: {} } },
      behavior: { computed: { next: ({ context }) => (context.n as number) + 1 } },
    });

    expect(resolveOutput(plain, initialize(plain).snapshot)).toEqual({ n: 1, next: 2 });
  });

  it('should reject an unknown output key at definition time', () => {
    expect(() =>
      defineMachine({ config: { id: 'p', initial: 'a', states: { a: { output: 'nope' } } } }),
    ).toThrow(BehaviorNotFoundException);
  });
});
