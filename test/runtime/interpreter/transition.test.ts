import { describe, expect, it } from 'vitest';
import {
  MachineNotFoundException,
  MaxTransitionDepthExceededException,
  NoTransitionDefinitionFoundException,
  defineMachine,
  initialize,
  transition,
  type BehaviorArgs,
  type Context,
} from '../../../src/runtime/index.js';
import { fixedClock, typesOf } from './helpers.js';

type Counter = { count: number; log: string[] };
const counter = (args: BehaviorArgs) => args.context as Counter;

const light = defineMachine({
  config: {
    id: 'light',
    initial: 'green',
    context: { count: 0, log: [] },
    on: { POWER_OFF: 'off' },
    states: {
      green: {
        on: {
          TIMER: 'yellow',
          TICK: { target: null, actions: 'increment' },
          CHECK: [
            { target: 'yellow', guards: 'isBig' },
            { target: 'red', guards: 'isSmall' },
            { target: 'off' },
          ],
        },
      },
      yellow: { on: { TIMER: { target: 'red', actions: 'increment', description: 'slow down' } } },
      red: {
        initial: 'walk',
        on: { TIMER: 'green' },
        states: { walk: { on: { COUNTDOWN: 'wait' } }, wait: {} },
      },
      off: { type: 'final' },
    },
  },
  behavior: {
    guards: {
      isBig: (args) => counter(args).count > 10,
      isSmall: (args) => counter(args).count < 5,
    },
    actions: { increment: (args) => void (counter(args).count += 1) },
  },
});

describe('initialize', () => {
  it('should enter the initial state with the initial context', () => {
    const { snapshot, history, validationFailure, effects } = initialize(light, fixedClock);

    expect(snapshot).toEqual({
      machineId: 'light',
      id: history[0]?.id,
      value: ['light.green'],
      context: { count: 0, log: [] },
      status: 'active',
      sequence: 2,
      version: light.version,
    });
    expect(typesOf(history)).toEqual(['light.start', 'light.state.green.enter']);
    expect(validationFailure).toBeNull();
    expect(effects).toEqual([]);
  });

  it('should use a ULID instance id, the root event id of every record', () => {
    const { snapshot, history } = initialize(light);

    expect(snapshot.id).toMatch(/^[0-7][0-9A-HJKMNP-TV-Z]{25}$/);
    expect(history.map((record) => record.rootEventId)).toEqual(history.map(() => snapshot.id));
  });

  it('should take an instance id and context overrides', () => {
    const { snapshot } = initialize(light, { id: 'order-1', context: { count: 3 } });

    expect([snapshot.id, snapshot.context]).toEqual(['order-1', { count: 3, log: [] }]);
  });

  it('should enter the initial descendants of a compound initial state', () => {
    const nested = defineMachine({
      config: {
        id: 'n',
        initial: 'a',
        states: { a: { initial: 'b', states: { b: { initial: 'c', states: { c: {} } } } } },
      },
    });

    const { snapshot, history } = initialize(nested);

    expect(snapshot.value).toEqual(['n.a.b.c']);
    expect(typesOf(history)).toEqual([
      'n.start',
      'n.state.a.enter',
      'n.state.a.b.enter',
      'n.state.a.b.c.enter',
    ]);
  });

  it('should finish at once when the initial state is final', () => {
    const done = defineMachine({
      config: {
        id: 'mac',
        initial: 'yellow',
        entry: 'boot',
        exit: 'shutdown',
        states: { yellow: { type: 'final' } },
      },
      behavior: { actions: { boot: () => undefined, shutdown: () => undefined } },
    });

    const { snapshot, history } = initialize(done);

    expect(snapshot.status).toBe('done');
    expect(typesOf(history)).toEqual([
      'mac.start',
      'mac.entry.start',
      'mac.action.boot.start',
      'mac.action.boot.finish',
      'mac.entry.finish',
      'mac.state.yellow.enter',
      'mac.exit.start',
      'mac.action.shutdown.start',
      'mac.action.shutdown.finish',
      'mac.exit.finish',
      'mac.finish',
    ]);
  });
});

describe('transition', () => {
  const start = () => initialize(light, fixedClock).snapshot;

  it('should move to a target given as a string', () => {
    const { snapshot } = transition(light, start(), { type: 'TIMER' });

    expect(snapshot.value).toEqual(['light.yellow']);
  });

  it('should accept a bare type string as the event', () => {
    expect(transition(light, start(), 'TIMER').snapshot.value).toEqual(['light.yellow']);
  });

  it('should run a targetless transition without leaving the state', () => {
    const { snapshot, history } = transition(light, start(), { type: 'TICK' });

    expect([snapshot.value, snapshot.context]).toEqual([['light.green'], { count: 1, log: [] }]);
    expect(typesOf(history)).toEqual([
      'TICK',
      'light.transition.green.TICK.start',
      'light.action.increment.start',
      'light.action.increment.finish',
      'light.transition.green.TICK.finish',
    ]);
  });

  it.each([
    ['the first passing branch', 20, 'light.yellow'],
    ['a later passing branch', 1, 'light.red.walk'],
    ['the unguarded fallback', 7, 'light.off'],
  ])('should choose %s', (_label, count, expected) => {
    const snapshot = { ...start(), context: { count, log: [] } };

    expect(transition(light, snapshot, { type: 'CHECK' }).snapshot.value).toEqual([expected]);
  });

  it('should let an unhandled event bubble to an ancestor', () => {
    const inRed = transition(light, transition(light, start(), 'TIMER').snapshot, 'TIMER').snapshot;

    const { snapshot, history } = transition(light, inRed, { type: 'POWER_OFF' });

    expect(snapshot.value).toEqual(['light.off']);
    expect(typesOf(history).slice(0, 2)).toEqual([
      'POWER_OFF',
      'light.transition.red.walk.POWER_OFF.start',
    ]);
  });

  // The message reaches HTTP clients (409): the state and what it accepts now, no advice on
  // changing the definition (that is docs/errors.md's).
  it('should throw NoTransitionDefinitionFoundException naming machine, event, state and the events accepted', () => {
    expect(() => transition(light, start(), { type: 'COUNTDOWN' })).toThrow(
      expect.objectContaining({
        constructor: NoTransitionDefinitionFoundException,
        code: 'MR_NO_TRANSITION',
        message:
          `Machine 'light' cannot accept event 'COUNTDOWN' in its current state ('light.green'). ` +
          `Events it accepts now: TIMER, TICK, CHECK, POWER_OFF (its availableEvents).`,
        details: { machine: 'light', path: 'light.green', key: 'COUNTDOWN' },
      }),
    );
  });

  it('should not touch the input snapshot', () => {
    const before = start();
    const copy = structuredClone(before);

    transition(light, before, { type: 'TICK' });

    expect(before).toEqual(copy);
  });

  it('should record a TRANSITION_FAIL and keep the state when no guard passes', () => {
    const guarded = defineMachine({
      config: {
        id: 'g',
        initial: 'a',
        states: { a: { on: { GO: { target: 'b', guards: 'never' } } }, b: {} },
      },
      behavior: { guards: { never: () => false } },
    });
    const initial = initialize(guarded).snapshot;

    const result = transition(guarded, initial, { type: 'GO' });

    expect(result.snapshot).toEqual({ ...initial, sequence: initial.sequence + 4 });
    expect(result.validationFailure).toBeNull();
    expect(typesOf(result.history)).toEqual([
      'GO',
      'g.transition.a.GO.start',
      'g.guard.never.fail',
      'g.transition.a.GO.fail',
    ]);
  });

  it('should refuse a snapshot of another machine', () => {
    expect(() => transition(light, { ...start(), machineId: 'other' }, 'TIMER')).toThrow(
      expect.objectContaining({
        constructor: MachineNotFoundException,
        details: { machine: 'light', key: 'other' },
      }),
    );
  });

  it('should refuse events once the machine is done', () => {
    const done = transition(light, start(), 'POWER_OFF').snapshot;

    expect(done.status).toBe('done');
    expect(() => transition(light, done, 'TIMER')).toThrow(NoTransitionDefinitionFoundException);
  });
});

describe('transition (calculators)', () => {
  const pricing = defineMachine({
    config: {
      id: 'price',
      initial: 'cart',
      context: { subtotal: 100, total: 0 },
      states: {
        cart: {
          on: {
            CHECKOUT: { target: 'paid', calculators: 'computeTotal', guards: 'totalAboveZero' },
            BROKEN: { target: 'paid', calculators: 'explode' },
          },
        },
        paid: {},
      },
    },
    behavior: {
      calculators: {
        computeTotal: ({ context }) => void (context.total = (context.subtotal as number) * 1.2),
        explode: () => {
          throw new Error('tax service down');
        },
      },
      guards: { totalAboveZero: ({ context }) => (context.total as number) > 0 },
    },
  });

  it('should run calculators before guards and keep their context changes', () => {
    const { snapshot, history } = transition(pricing, initialize(pricing).snapshot, 'CHECKOUT');

    expect([snapshot.value, snapshot.context]).toEqual([
      ['price.paid'],
      { subtotal: 100, total: 120 },
    ]);
    expect(typesOf(history).slice(1, 4)).toEqual([
      'price.transition.cart.CHECKOUT.start',
      'price.calculator.computeTotal.pass',
      'price.guard.totalAboveZero.pass',
    ]);
  });

  it('should fail the transition with a calculator fail record when a calculator throws', () => {
    const initial = initialize(pricing).snapshot;

    const { snapshot, history } = transition(pricing, initial, 'BROKEN');

    expect(snapshot.value).toEqual(['price.cart']);
    expect(history.slice(1).map((record) => [record.type, record.payload])).toEqual([
      ['price.transition.cart.BROKEN.start', null],
      ['price.calculator.explode.fail', { error: 'Calculator failed: tax service down' }],
      ['price.transition.cart.BROKEN.fail', null],
    ]);
  });
});

describe('transition (@always and @done)', () => {
  it('should pass through a transient state to the first passing branch or the fallback', () => {
    const router = defineMachine({
      config: {
        id: 'r',
        initial: 'idle',
        context: { amount: 0 },
        states: {
          idle: { on: { ROUTE: 'routing' } },
          routing: {
            on: { '@always': [{ target: 'large', guards: 'isLarge' }, { target: 'small' }] },
          },
          large: {},
          small: {},
        },
      },
      behavior: { guards: { isLarge: ({ event }) => Number(event.payload?.amount) > 100 } },
    });
    const initial = initialize(router).snapshot;

    expect(
      transition(router, initial, { type: 'ROUTE', payload: { amount: 500 } }).snapshot.value,
    ).toEqual(['r.large']);
    expect(
      transition(router, initial, { type: 'ROUTE', payload: { amount: 5 } }).snapshot.value,
    ).toEqual(['r.small']);
  });

  it.each([
    ['onDone', { onDone: 'shipped' }],
    ["on['@done']", { on: { '@done': 'shipped' } }],
  ])('should take a compound state %s when a final child is entered', (_label, done) => {
    const order = defineMachine({
      config: {
        id: 'o',
        initial: 'packing',
        states: {
          packing: {
            ...done,
            initial: 'boxing',
            states: { boxing: { on: { SEAL: 'sealed' } }, sealed: { type: 'final' } },
          },
          shipped: {},
        },
      },
    });

    const { snapshot, history } = transition(order, initialize(order).snapshot, 'SEAL');

    expect(snapshot.value).toEqual(['o.shipped']);
    expect(typesOf(history)).toContain('o.transition.packing.@done.start');
  });

  it('should complete only the direct parent of the final state', () => {
    const nested = defineMachine({
      config: {
        id: 'n',
        initial: 'outer',
        states: {
          outer: {
            onDone: 'outerDone',
            initial: 'inner',
            states: {
              inner: {
                initial: 'work',
                states: { work: { on: { FINISH: 'finished' } }, finished: { type: 'final' } },
              },
            },
          },
          outerDone: {},
        },
      },
    });

    expect(transition(nested, initialize(nested).snapshot, 'FINISH').snapshot.value).toEqual([
      'n.outer.inner.finished',
    ]);
  });
});

describe('transition (max_transition_depth)', () => {
  const loop = (config: Context = {}) =>
    defineMachine({
      config: {
        id: 'loop',
        initial: 'idle',
        ...config,
        states: {
          idle: { on: { GO: 'ping' } },
          ping: { on: { '@always': 'pong' } },
          pong: { on: { '@always': 'ping' } },
        },
      },
    });

  it('should stop an @always loop with MaxTransitionDepthExceededException naming state and event', () => {
    const machine = loop();

    expect(() => transition(machine, initialize(machine).snapshot, 'GO')).toThrow(
      expect.objectContaining({
        constructor: MaxTransitionDepthExceededException,
        message:
          `Machine 'loop': maximum transition depth of 100 exceeded at 'loop.ping' while processing '@always' (triggered by 'GO'). ` +
          `Check for an @always or raise() loop, or raise max_transition_depth.`,
        details: { machine: 'loop', path: 'loop.ping', key: '@always' },
      }),
    );
  });

  it('should stop a raise loop', () => {
    const machine = defineMachine({
      config: {
        id: 'echo',
        initial: 'a',
        states: { a: { on: { PING: { target: null, actions: 'echo' } } } },
      },
      behavior: { actions: { echo: ({ raise }) => raise('PING') } },
    });

    expect(() => transition(machine, initialize(machine).snapshot, 'PING')).toThrow(
      MaxTransitionDepthExceededException,
    );
  });

  it.each([
    ['the machine setting', { max_transition_depth: 3 }, 100, 3],
    ['the runtime setting', {}, 5, 5],
  ])('should honour %s', (_label, config, runtimeDepth, expected) => {
    const machine = loop(config);
    const options = { maxTransitionDepth: runtimeDepth };

    expect(() => transition(machine, initialize(machine).snapshot, 'GO', options)).toThrow(
      `maximum transition depth of ${expected} exceeded`,
    );
  });
});

describe('transition (context copies)', () => {
  it('should share the context with the input snapshot when no behavior ran', () => {
    const initial = initialize(light).snapshot;

    expect(transition(light, initial, 'TIMER').snapshot.context).toBe(initial.context);
  });

  it('should work on a private copy as soon as an action runs', () => {
    const initial = initialize(light).snapshot;

    const { snapshot } = transition(light, initial, 'TICK');

    expect([
      snapshot.context === initial.context,
      initial.context.count,
      snapshot.context.count,
    ]).toEqual([false, 0, 1]);
  });
});
