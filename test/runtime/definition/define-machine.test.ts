import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  AggregateMachineRoutesError,
  BehaviorNotFoundException,
  InvalidStateConfigException,
  UndefinedTargetStateException,
  MachineEvent,
  defineEvent,
  defineMachine,
  type BehaviorArgs,
} from '../../../src/runtime/index.js';

const SubmitEvent = defineEvent({ type: 'SUBMIT', payload: z.object({ amount: z.number() }) });

function orderMachine() {
  return defineMachine({
    config: {
      id: 'order',
      initial: 'idle',
      context: { total: 0 },
      states: {
        idle: { on: { SUBMIT: { target: 'submitted', guards: 'isOpen' } } },
        submitted: {
          initial: 'review',
          on: { CANCEL: 'cancelled' },
          states: {
            review: {
              on: { APPROVE: 'approved', '@always': [{ target: 'approved', guards: 'isSmall' }] },
            },
            approved: {},
          },
        },
        cancelled: { type: 'final' },
      },
    },
    behavior: {
      events: { SUBMIT: SubmitEvent },
      guards: { isOpen: () => true, isSmall: () => false },
    },
  });
}

describe('defineMachine', () => {
  it('should index every state by its full id, prefixed with the machine id', () => {
    const definition = orderMachine();

    expect([...definition.idMap.keys()]).toEqual([
      'order',
      'order.idle',
      'order.submitted',
      'order.submitted.review',
      'order.submitted.approved',
      'order.cancelled',
    ]);
  });

  it('should default the initial child of a compound state to its first child', () => {
    const definition = defineMachine({
      config: { id: 'm', states: { first: {}, second: {} } },
    });

    expect(definition.root.initial?.id).toBe('m.first');
  });

  it('should list user-sendable event types of the whole tree, without @ names', () => {
    expect([...orderMachine().eventTypes]).toEqual(['SUBMIT', 'CANCEL', 'APPROVE']);
  });

  it('should keep behavior.events and add a payload-less definition for every other handled type', () => {
    const events = orderMachine().events;

    expect([...events.entries()]).toEqual([
      ['SUBMIT', SubmitEvent],
      ['CANCEL', { kind: 'event', type: 'CANCEL', payload: undefined }],
      ['APPROVE', { kind: 'event', type: 'APPROVE', payload: undefined }],
    ]);
  });

  it('should accept event classes and definitions in behavior.events', () => {
    class ConsentGrantedEvent extends MachineEvent {
      static override readonly payload = z.object({ at: z.string() });
    }
    const definition = defineMachine({
      config: {
        id: 'm',
        initial: 'a',
        states: { a: { on: { CONSENT_GRANTED: 'b', SUBMIT: 'b' } }, b: {} },
      },
      behavior: { events: { CONSENT_GRANTED: ConsentGrantedEvent, SUBMIT: SubmitEvent } },
    });

    expect([...definition.events.entries()]).toEqual([
      [
        'CONSENT_GRANTED',
        { kind: 'event', type: 'CONSENT_GRANTED', payload: ConsentGrantedEvent.payload },
      ],
      ['SUBMIT', SubmitEvent],
    ]);
  });

  it('should record where it was called from', () => {
    const lineOf = (error: Error) =>
      Number(error.stack?.split('\n')[1]?.match(/:(\d+):\d+\)?$/)?.[1]);
    const minimal = { config: { id: 'm', states: { a: {} } } };
    const [definition, line] = [defineMachine(minimal), lineOf(new Error())];

    expect(definition.source).toEqual({
      file: fileURLToPath(import.meta.url),
      line,
      column: expect.any(Number),
    });
  });

  it('should build the initial context from a zod schema with defaults', () => {
    const definition = defineMachine({
      config: {
        id: 'm',
        initial: 'a',
        context: z.object({ count: z.number().default(0), tags: z.array(z.string()).default([]) }),
        states: { a: {} },
      },
    });

    expect(definition.createContext()).toEqual({ count: 0, tags: [] });
  });

  it('should give every instance its own copy of an object context', () => {
    const definition = defineMachine({
      config: { id: 'm', initial: 'a', context: { items: [1] }, states: { a: {} } },
    });
    const first = definition.createContext();
    (first.items as number[]).push(2);

    expect(definition.createContext()).toEqual({ items: [1] });
  });

  it('should leave max_transition_depth to the runtime (null) and default should_persist to true', () => {
    expect(orderMachine().options).toEqual({ maxTransitionDepth: null, shouldPersist: true });
  });

  it('should prefer a machine own max_transition_depth and should_persist', () => {
    const definition = defineMachine({
      config: {
        id: 'm',
        initial: 'a',
        max_transition_depth: 3,
        should_persist: false,
        states: { a: {} },
      },
    });
    expect(definition.options).toEqual({ maxTransitionDepth: 3, shouldPersist: false });
  });

  it('should instantiate a class behavior once and pass tuple parameters without @ keys', () => {
    let instances = 0;
    const seen: Record<string, unknown>[] = [];
    class Track {
      constructor() {
        instances += 1;
      }
      run({ params }: BehaviorArgs): void {
        seen.push(params);
      }
    }
    const definition = defineMachine({
      config: {
        id: 'm',
        initial: 'a',
        states: { a: { entry: [[Track, { label: 'x', '@queue': false }], Track] } },
      },
    });

    expect(instances).toBe(1);
    expect(definition.root.initial?.entry.map((action) => [action.name, action.params])).toEqual([
      ['Track', { label: 'x' }],
      ['Track', {}],
    ]);
  });

  it('should name key, kind and machine when a behavior is not found', () => {
    expect(() =>
      defineMachine({
        config: { id: 'order', initial: 'a', states: { a: { entry: 'notify' } } },
        behavior: { actions: { log: () => undefined } },
      }),
    ).toThrow(
      expect.objectContaining({
        constructor: BehaviorNotFoundException,
        message: `Machine 'order', state 'a': action 'notify' (in entry) is not defined. Add it under behavior.actions (known: log).`,
        details: expect.objectContaining({ machine: 'order', path: 'a', key: 'notify' }),
      }),
    );
  });

  it('should collect every problem before throwing once', () => {
    let error: unknown;
    try {
      defineMachine({
        config: {
          id: 'order',
          initial: 'idle',
          states: {
            idle: { on: { GO: 'nowhere' } },
            done: { type: 'final', on: { BACK: 'idle' } },
          },
        },
      });
    } catch (caught) {
      error = caught;
    }

    expect(error).toBeInstanceOf(AggregateMachineRoutesError);
    const issues = (error as AggregateMachineRoutesError).issues;
    expect(
      issues.map((issue) => [issue.constructor, issue.details.path, issue.details.key]),
    ).toEqual([
      [InvalidStateConfigException, 'done', 'on'],
      [UndefinedTargetStateException, 'idle', 'nowhere'],
    ]);
  });

  it('should keep delegation keys for the delegation work without executing them', () => {
    const child = defineMachine({
      config: { id: 'child', initial: 'a', states: { a: { on: { PING: 'a' } } } },
    });
    const definition = defineMachine({
      config: {
        id: 'parent',
        initial: 'working',
        states: {
          working: {
            machine: child,
            queue: true,
            forward: ['PING'],
            on: { '@done': 'finished', '@fail': 'failed' },
          },
          finished: { type: 'final' },
          failed: { type: 'final' },
        },
      },
    });

    expect(definition.idMap.get('parent.working')?.delegation).toEqual({
      machine: child,
      input: undefined,
      queue: true,
      forward: ['PING'],
    });
  });

  it('should normalize timers of transitions', () => {
    const definition = defineMachine({
      config: {
        id: 'm',
        initial: 'waiting',
        states: {
          waiting: {
            on: {
              EXPIRE: { target: 'expired', after: { minutes: 5 } },
              POLL: { target: null, every: 30, max: 3, then: 'GIVE_UP' },
              GIVE_UP: 'expired',
            },
          },
          expired: {},
        },
      },
    });
    const on = definition.idMap.get('m.waiting')?.on;

    expect(on?.get('EXPIRE')?.branches[0]?.timer).toEqual({
      kind: 'after',
      seconds: 300,
      max: undefined,
      then: undefined,
    });
    expect(on?.get('POLL')?.branches[0]?.timer).toEqual({
      kind: 'every',
      seconds: 30,
      max: 3,
      then: 'GIVE_UP',
    });
  });

  it.each([
    ['a sibling', 'a.x', 'y', 'm.a.y'],
    ["an ancestor's sibling", 'a.x', 'b', 'm.b'],
    ['a dotted path from the root', 'a.x', 'b.inner', 'm.b.inner'],
    ['a full id', 'a.x', 'm.b.inner', 'm.b.inner'],
  ])('should resolve a target that is %s', (_label, source, target, expected) => {
    const definition = defineMachine({
      config: {
        id: 'm',
        initial: 'a',
        states: {
          a: { initial: 'x', states: { x: { on: { GO: target } }, y: {} } },
          b: { initial: 'inner', states: { inner: {} } },
        },
      },
    });

    expect(definition.idMap.get(`m.${source}`)?.on.get('GO')?.branches[0]?.target?.id).toBe(
      expected,
    );
  });

  it('should prefer the nearest scope when a name exists at several levels', () => {
    const definition = defineMachine({
      config: {
        id: 'm',
        initial: 'a',
        states: { a: { initial: 'x', states: { x: { on: { GO: 'done' } }, done: {} } }, done: {} },
      },
    });

    expect(definition.idMap.get('m.a.x')?.on.get('GO')?.branches[0]?.target?.id).toBe('m.a.done');
  });
});
