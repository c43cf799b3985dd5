import { describe, expect, it } from 'vitest';
import {
  InvalidStateConfigException,
  defineMachine,
  initialize,
  transition,
  type BehaviorArgs,
  type EventObject,
} from '../../../src/runtime/index.js';
import { typesOf } from './helpers.js';

/** A logging action: appends `label` to `context.log`. */
const log =
  (label: string) =>
  ({ context }: BehaviorArgs) => {
    (context.log as string[]).push(label);
  };

describe('transition (ordering rules)', () => {
  it('rule 1: should run exit, then transition, then entry actions', () => {
    const machine = defineMachine({
      config: {
        id: 'm',
        initial: 'a',
        context: { log: [] },
        states: {
          a: { exit: 'exitA', on: { GO: { target: 'b', actions: 'during' } } },
          b: { entry: 'enterB' },
        },
      },
      behavior: {
        actions: { exitA: log('exit a'), during: log('transition'), enterB: log('entry b') },
      },
    });

    const { snapshot, history } = transition(machine, initialize(machine).snapshot, 'GO');

    expect(snapshot.context.log).toEqual(['exit a', 'transition', 'entry b']);
    expect(typesOf(history)).toEqual([
      'GO',
      'm.transition.a.GO.start',
      'm.state.a.exit.start',
      'm.action.exitA.start',
      'm.action.exitA.finish',
      'm.state.a.exit.finish',
      'm.state.a.exit',
      'm.action.during.start',
      'm.action.during.finish',
      'm.transition.a.GO.finish',
      'm.state.b.enter',
      'm.state.b.entry.start',
      'm.action.enterB.start',
      'm.action.enterB.finish',
      'm.state.b.entry.finish',
    ]);
  });

  it('rule 2: should run no exit or entry actions on a targetless transition', () => {
    const machine = defineMachine({
      config: {
        id: 'm',
        initial: 'a',
        context: { log: [] },
        states: {
          a: { entry: 'enterA', exit: 'exitA', on: { NOTE: { target: null, actions: 'note' } } },
        },
      },
      behavior: { actions: { enterA: log('entry a'), exitA: log('exit a'), note: log('note') } },
    });

    const { snapshot } = transition(machine, initialize(machine).snapshot, 'NOTE');

    expect(snapshot.context.log).toEqual(['entry a', 'note']);
  });

  it('rule 3: should hand @always behaviors the original triggering event', () => {
    const seen: EventObject[] = [];
    const machine = defineMachine({
      config: {
        id: 'm',
        initial: 'idle',
        states: {
          idle: { on: { SUBMIT: 'checking' } },
          checking: { on: { '@always': { target: 'done', guards: 'record', actions: 'record' } } },
          done: {},
        },
      },
      behavior: {
        guards: { record: ({ event }) => (seen.push(event), true) },
        actions: { record: ({ event }) => void seen.push(event) },
      },
    });
    const submit = { type: 'SUBMIT', payload: { amount: 42 }, actor: 'alice' };

    transition(machine, initialize(machine).snapshot, submit);

    expect(seen).toEqual([submit, submit]);
  });

  it('rule 3: should hand an @always reached through a raised event the raised event', () => {
    const seen: string[] = [];
    const machine = defineMachine({
      config: {
        id: 'm',
        initial: 'idle',
        states: {
          idle: { on: { SUBMIT: { actions: 'raiseCheck' }, CHECK: 'checking' } },
          checking: { on: { '@always': { target: 'done', guards: 'record', actions: 'record' } } },
          done: {},
        },
      },
      behavior: {
        guards: { record: ({ event }) => (seen.push(event.type), true) },
        actions: {
          raiseCheck: ({ raise }) => raise({ type: 'CHECK', payload: { by: 'raise' } }),
          record: ({ event }) => void seen.push(event.type),
        },
      },
    });

    const { snapshot } = transition(machine, initialize(machine).snapshot, 'SUBMIT');

    expect(snapshot.value).toEqual(['m.done']);
    expect(seen).toEqual(['CHECK', 'CHECK']);
  });

  describe('rule 4: raised events and @always run after', () => {
    it('should complete a compound state (@done) before processing a raised event', () => {
      const machine = defineMachine({
        config: {
          id: 'm',
          initial: 'idle',
          states: {
            idle: { on: { PACK: { target: 'packing', actions: 'raiseArchive' } } },
            packing: {
              onDone: 'shipped',
              initial: 'sealed',
              states: { sealed: { type: 'final' } },
            },
            shipped: { on: { ARCHIVE: 'archived' } },
            archived: {},
          },
        },
        behavior: { actions: { raiseArchive: ({ raise }) => raise('ARCHIVE') } },
      });

      const { snapshot, history } = transition(machine, initialize(machine).snapshot, 'PACK');
      const types = typesOf(history);

      expect(snapshot.value).toEqual(['m.archived']);
      expect(types.indexOf('m.transition.packing.@done.start')).toBeLessThan(
        types.indexOf('ARCHIVE'),
      );
    });

    it('should complete a parallel state (@done) before processing a raised event', () => {
      const machine = defineMachine({
        config: {
          id: 'm',
          initial: 'work',
          states: {
            work: {
              type: 'parallel',
              onDone: 'complete',
              states: {
                a: {
                  initial: 'x',
                  states: {
                    x: { on: { FINISH: { target: 'y', actions: 'raiseNext' } } },
                    y: { type: 'final' },
                  },
                },
                b: { initial: 'z', states: { z: { type: 'final' } } },
              },
            },
            complete: { on: { NEXT: 'closed' } },
            closed: {},
          },
        },
        behavior: { actions: { raiseNext: ({ raise }) => raise('NEXT') } },
      });

      const { snapshot, history } = transition(machine, initialize(machine).snapshot, 'FINISH');
      const types = typesOf(history);

      expect(snapshot.value).toEqual(['m.closed']);
      expect(types.indexOf('m.parallel.work.done')).toBeLessThan(
        types.indexOf('m.transition.work.@done.start'),
      );
      expect(types.indexOf('m.transition.work.@done.finish')).toBeLessThan(types.indexOf('NEXT'));
    });

    it('should finish the entry of a (delegating) state before a raised event or @always', () => {
      const child = defineMachine({ config: { id: 'child', initial: 'a', states: { a: {} } } });
      const machine = defineMachine({
        config: {
          id: 'm',
          initial: 'idle',
          context: { log: [] },
          states: {
            idle: { on: { START: { target: 'delegating', actions: 'raiseHurry' } } },
            delegating: {
              machine: child,
              entry: ['enter1', 'enter2'],
              on: { HURRY: 'checking', '@done': 'idle' },
            },
            checking: { entry: 'enter3', on: { '@always': 'done' } },
            done: { entry: 'enter4' },
          },
        },
        behavior: {
          actions: {
            raiseHurry: ({ raise }) => raise('HURRY'),
            enter1: log('entry 1'),
            enter2: log('entry 2'),
            enter3: log('entry of checking'),
            enter4: log('entry of done'),
          },
        },
      });

      const { snapshot, history } = transition(machine, initialize(machine).snapshot, 'START');
      const types = typesOf(history);

      expect(snapshot.context.log).toEqual([
        'entry 1',
        'entry 2',
        'entry of checking',
        'entry of done',
      ]);
      expect(types.indexOf('m.state.delegating.entry.finish')).toBeLessThan(types.indexOf('HURRY'));
    });
  });

  it('should process raised events one at a time, each after the previous entry', () => {
    const machine = defineMachine({
      config: {
        id: 'm',
        initial: 'a',
        context: { log: [] },
        states: {
          a: { on: { GO: { target: 'b', actions: 'raiseTwo' } } },
          b: { entry: 'enterB', on: { FIRST: 'c' } },
          c: { entry: 'enterC', on: { SECOND: 'd' } },
          d: { entry: 'enterD' },
        },
      },
      behavior: {
        actions: {
          raiseTwo: ({ raise }) => {
            raise('FIRST');
            raise('SECOND');
          },
          enterB: log('entry b'),
          enterC: log('entry c'),
          enterD: log('entry d'),
        },
      },
    });

    const { snapshot } = transition(machine, initialize(machine).snapshot, 'GO');

    expect([snapshot.value, snapshot.context.log]).toEqual([
      ['m.d'],
      ['entry b', 'entry c', 'entry d'],
    ]);
  });

  it('rule 5: should let raised events inherit the actor unless they set one', () => {
    const machine = defineMachine({
      config: {
        id: 'm',
        initial: 'a',
        states: {
          a: { on: { GO: { target: 'b', actions: 'fanOut' } } },
          b: { on: { INHERITED: 'c' } },
          c: { on: { EXPLICIT: 'd' } },
          d: {},
        },
      },
      behavior: {
        actions: {
          fanOut: ({ raise }) => {
            raise('INHERITED');
            raise({ type: 'EXPLICIT', actor: 'system' });
          },
        },
      },
    });

    const { history } = transition(machine, initialize(machine).snapshot, {
      type: 'GO',
      actor: 'alice',
    });

    expect(
      history
        .filter((record) => ['GO', 'INHERITED', 'EXPLICIT'].includes(record.type))
        .map((record) => [record.type, record.source, record.actor]),
    ).toEqual([
      ['GO', 'external', 'alice'],
      ['INHERITED', 'internal', 'alice'],
      ['EXPLICIT', 'internal', 'system'],
    ]);
  });

  it("rule 6: should roll back a failed guard's context changes", () => {
    const seenByNextGuard: unknown[] = [];
    const machine = defineMachine({
      config: {
        id: 'm',
        initial: 'a',
        context: { attempts: 0, nested: { flag: false } },
        states: {
          a: {
            on: {
              GO: [
                { target: 'b', guards: 'mutateAndFail' },
                { target: 'c', guards: 'inspect' },
              ],
            },
          },
          b: {},
          c: {},
        },
      },
      behavior: {
        guards: {
          mutateAndFail: ({ context }) => {
            context.attempts = 99;
            (context.nested as { flag: boolean }).flag = true;
            return false;
          },
          inspect: ({ context }) => (seenByNextGuard.push(structuredClone(context)), true),
        },
      },
    });

    const { snapshot } = transition(machine, initialize(machine).snapshot, 'GO');

    expect(seenByNextGuard).toEqual([{ attempts: 0, nested: { flag: false } }]);
    expect([snapshot.value, snapshot.context]).toEqual([
      ['m.c'],
      { attempts: 0, nested: { flag: false } },
    ]);
  });

  it('rule 7: should reject a transition crossing parallel regions at definition time', () => {
    expect(() =>
      defineMachine({
        config: {
          id: 'm',
          initial: 'p',
          states: {
            p: {
              type: 'parallel',
              states: {
                left: { initial: 'l1', states: { l1: { on: { JUMP: 'right.r2' } } } },
                right: { initial: 'r1', states: { r1: {}, r2: {} } },
              },
            },
          },
        },
      }),
    ).toThrow(InvalidStateConfigException);
  });
});
