import { describe, expect, it } from 'vitest';
import {
  defineMachine,
  initialize,
  transition,
  type BehaviorArgs,
} from '../../../src/runtime/index.js';
import { planCommit } from '../../../src/runtime/interpreter/plan-commit.js';
import { typesOf } from './helpers.js';

const heard: string[] = [];
const listener =
  (label: string) =>
  ({ state }: BehaviorArgs) =>
    void heard.push(`${label} ${state.value.join(',')}`);

const machine = defineMachine({
  config: {
    id: 'l',
    initial: 'a',
    listen: {
      entry: 'onEntry',
      exit: 'onExit',
      transition: ['onTransition', ['broadcast', { '@queue': true, channel: 'orders' }]],
    },
    states: {
      a: { on: { GO: 'check', NOTE: null } },
      check: { on: { '@always': 'b' } },
      b: {},
    },
  },
  behavior: {
    listeners: {
      onEntry: listener('entry'),
      onExit: listener('exit'),
      onTransition: listener('transition'),
      broadcast: () => undefined,
    },
  },
});

describe('transition (listeners)', () => {
  it('should run entry, exit and transition listeners, skipping transient states, and defer queued ones', () => {
    const initial = initialize(machine).snapshot;
    heard.length = 0;

    const { history, effects } = transition(machine, initial, 'GO');

    // Leaving the transient `check` runs no exit listener, as entering it ran no entry one.
    expect(heard).toEqual(['exit l.a', 'entry l.b', 'transition l.b']);
    expect(effects).toEqual([
      {
        kind: 'listener',
        machineId: 'l',
        id: initial.id,
        phase: 'transition',
        index: 1,
        listener: 'broadcast',
        params: { channel: 'orders' },
        event: { type: 'GO' },
      },
    ]);
    expect(typesOf(history).filter((type) => type.startsWith('l.listen.'))).toEqual([
      'l.listen.exit.start',
      'l.listen.exit.finish',
      'l.listen.entry.start',
      'l.listen.entry.finish',
      'l.listen.transition.start',
      'l.listen.queue.broadcast.dispatched',
      'l.listen.transition.finish',
    ]);
  });

  it('should plan a queued listener as a listener.run job of the commit, parameters left to the definition', () => {
    const initial = initialize(machine).snapshot;
    const result = transition(machine, initial, 'GO');

    const plan = planCommit({ main: { result, from: initial }, at: new Date() });

    expect(plan.jobs).toEqual([
      {
        kind: 'listener.run',
        payload: {
          machineId: 'l',
          id: initial.id,
          phase: 'transition',
          index: 1,
          listener: 'broadcast',
          event: { type: 'GO' },
        },
      },
    ]);
  });

  it('should run only transition listeners on a targetless transition', () => {
    const initial = initialize(machine).snapshot;
    heard.length = 0;

    transition(machine, initial, 'NOTE');

    expect(heard).toEqual(['transition l.a']);
  });
});
