import { describe, expect, it } from 'vitest';
import { defineMachine, initialize, transition } from '../../../src/runtime/index.js';
import { nextRecordId } from '../../../src/runtime/interpreter/history.js';
import { fixedClock, typesOf } from './helpers.js';

const dummy = defineMachine({
  config: {
    id: 'dummy',
    initial: 'yellow',
    context: { count: 1 },
    states: {
      yellow: {
        on: {
          EVENT: { target: 'red', actions: 'bump' },
          SHOUT: { target: null, actions: 'shout' },
        },
      },
      red: { type: 'final' },
    },
  },
  behavior: {
    actions: {
      bump: ({ context }) => void ((context.count as number) += 1),
      shout: ({ raise }) => raise({ type: 'EVENT', payload: { loud: true } }),
    },
  },
});

describe('history', () => {
  it('should write the original naming scheme for a transition into a final state', () => {
    const { snapshot } = initialize(dummy);

    const { history } = transition(dummy, snapshot, { type: 'EVENT' });

    expect(typesOf(history)).toEqual([
      'EVENT',
      'dummy.transition.yellow.EVENT.start',
      'dummy.state.yellow.exit',
      'dummy.action.bump.start',
      'dummy.action.bump.finish',
      'dummy.transition.yellow.EVENT.finish',
      'dummy.state.red.enter',
      'dummy.finish',
    ]);
  });

  it('should number records without gaps, continuing the snapshot sequence', () => {
    const started = initialize(dummy);

    const { history, snapshot } = transition(dummy, started.snapshot, { type: 'EVENT' });

    expect(started.history.map((record) => record.sequence)).toEqual([1, 2]);
    expect(history.map((record) => record.sequence)).toEqual([3, 4, 5, 6, 7, 8, 9, 10]);
    expect(snapshot.sequence).toBe(10);
  });

  it('should put the full context on the last record only', () => {
    const { history, snapshot } = transition(dummy, initialize(dummy).snapshot, { type: 'EVENT' });

    expect(history.map((record) => record.context)).toEqual([
      ...history.slice(1).map(() => null),
      snapshot.context,
    ]);
    expect(snapshot.context).toEqual({ count: 2 });
  });

  it('should record the external event with its payload, version and actor', () => {
    const { snapshot } = initialize(dummy, fixedClock);

    const [external] = transition(
      dummy,
      snapshot,
      { type: 'EVENT', payload: { reason: 'test' }, version: 2, actor: 'bob' },
      fixedClock,
    ).history;

    expect(external).toEqual({
      id: expect.stringMatching(/^[0-7][0-9A-HJKMNP-TV-Z]{25}$/),
      sequence: 3,
      createdAt: '2026-01-02T03:04:05.678Z',
      machineId: 'dummy',
      rootEventId: snapshot.id,
      source: 'external',
      type: 'EVENT',
      payload: { reason: 'test' },
      value: ['dummy.yellow'],
      context: null,
      version: 2,
      actor: 'bob',
    });
  });

  it('should record raising and then processing a raised event', () => {
    const { history } = transition(dummy, initialize(dummy).snapshot, { type: 'SHOUT' });

    expect(history.map((record) => [record.type, record.source, record.payload])).toEqual([
      ['SHOUT', 'external', null],
      ['dummy.transition.yellow.SHOUT.start', 'internal', null],
      ['dummy.action.shout.start', 'internal', null],
      ['dummy.event.EVENT.raised', 'internal', null],
      ['dummy.action.shout.finish', 'internal', null],
      ['dummy.transition.yellow.SHOUT.finish', 'internal', null],
      ['EVENT', 'internal', { loud: true }],
      ['dummy.transition.yellow.EVENT.start', 'internal', null],
      ['dummy.state.yellow.exit', 'internal', null],
      ['dummy.action.bump.start', 'internal', null],
      ['dummy.action.bump.finish', 'internal', null],
      ['dummy.transition.yellow.EVENT.finish', 'internal', null],
      ['dummy.state.red.enter', 'internal', null],
      ['dummy.finish', 'internal', null],
    ]);
  });

  it('should carry the value active when each record was made', () => {
    const { history } = transition(dummy, initialize(dummy).snapshot, { type: 'EVENT' });

    expect(history.map((record) => record.value[0])).toEqual([
      'dummy.yellow',
      'dummy.yellow',
      'dummy.yellow',
      'dummy.yellow',
      'dummy.yellow',
      'dummy.yellow',
      'dummy.red',
      'dummy.red',
    ]);
  });

  it('should give every record a unique, increasing id', () => {
    const started = initialize(dummy, fixedClock);
    const { history } = transition(dummy, started.snapshot, { type: 'SHOUT' }, fixedClock);
    const ids = [...started.history, ...history].map((record) => record.id);

    expect(ids[0]).toBe(started.snapshot.id);
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });
});

describe('nextRecordId', () => {
  it('should stay unique and ordered across many ids in one millisecond', () => {
    const time = Date.parse('2030-01-01T00:00:00Z');
    const ids = Array.from({ length: 2000 }, () => nextRecordId(time));

    expect(new Set(ids).size).toBe(2000);
    expect([...ids].sort()).toEqual(ids);
    expect(ids.every((id) => /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/.test(id))).toBe(true);
  });
});
