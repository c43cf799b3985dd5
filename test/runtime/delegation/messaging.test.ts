import { describe, expect, it } from 'vitest';
import {
  NoParentMachineException,
  defineMachine,
  initialize,
  transition,
  type PersistChildEffect,
  type SendEffect,
} from '../../../src/runtime/index.js';

const notifier = defineMachine({
  config: {
    id: 'notifier',
    initial: 'idle',
    states: {
      idle: {
        on: {
          NOTIFY: { actions: 'notify' },
          TELL_PARENT: { actions: 'tellParent' },
          QUEUE_PARENT: { actions: 'queueParent' },
          GUARDED: [{ target: 'idle', guards: 'sendsThenFails' }, { target: null }],
        },
      },
    },
  },
  behavior: {
    actions: {
      notify: ({ sendTo, dispatchTo, event }) => {
        sendTo(
          { machineId: 'order', id: 'ORDER1' },
          { type: 'NOTIFIED', payload: { at: event.payload?.at } },
        );
        dispatchTo({ machineId: 'audit', id: 'AUDIT1' }, 'LOGGED');
      },
      tellParent: ({ sendToParent }) => sendToParent({ type: 'CHILD_SAYS', payload: { n: 1 } }),
      queueParent: ({ dispatchToParent }) => dispatchToParent('CHILD_QUEUED'),
    },
    guards: {
      sendsThenFails: ({ sendTo }) => {
        sendTo({ machineId: 'order', id: 'ORDER1' }, 'NEVER');
        return false;
      },
    },
  },
});

describe('messaging between machines', () => {
  it('should turn sendTo and dispatchTo into send effects (sync and async)', () => {
    const initial = initialize(notifier, { id: 'NOTIFIER1' }).snapshot;

    const { effects } = transition(notifier, initial, {
      type: 'NOTIFY',
      payload: { at: 3 },
      actor: 'u1',
    });

    expect(effects).toEqual([
      {
        kind: 'send',
        target: { machineId: 'order', id: 'ORDER1' },
        event: { type: 'NOTIFIED', payload: { at: 3 }, actor: 'u1' },
        mode: 'sync',
        source: { machineId: 'notifier', id: 'NOTIFIER1' },
      },
      {
        kind: 'send',
        target: { machineId: 'audit', id: 'AUDIT1' },
        event: { type: 'LOGGED', actor: 'u1' },
        mode: 'async',
        source: { machineId: 'notifier', id: 'NOTIFIER1' },
      },
    ] satisfies SendEffect[]);
  });

  it('should throw NoParentMachineException from sendToParent and dispatchToParent without a parent', () => {
    const initial = initialize(notifier).snapshot;

    expect(() => transition(notifier, initial, 'TELL_PARENT')).toThrow(NoParentMachineException);
    expect(() => transition(notifier, initial, 'QUEUE_PARENT')).toThrow(
      expect.objectContaining({ code: 'MR_NO_PARENT_MACHINE' }),
    );
  });

  it('should address the parent kept in a child snapshot', () => {
    const parent = defineMachine({
      config: {
        id: 'boss',
        initial: 'delegating',
        states: {
          delegating: { machine: notifier, on: { '@done': 'delegating', CHILD_SAYS: null } },
        },
      },
    });
    const started = initialize(parent, { id: 'BOSS1' });
    const child = (started.effects[0] as PersistChildEffect).snapshot;
    expect(child.parent).toEqual({ machineId: 'boss', id: 'BOSS1' });

    const tell = transition(notifier, child, 'TELL_PARENT');
    const queue = transition(notifier, tell.snapshot, 'QUEUE_PARENT');

    expect([...tell.effects, ...queue.effects]).toEqual([
      expect.objectContaining({
        target: { machineId: 'boss', id: 'BOSS1' },
        event: { type: 'CHILD_SAYS', payload: { n: 1 }, actor: null },
        mode: 'sync',
      }),
      expect.objectContaining({
        target: { machineId: 'boss', id: 'BOSS1' },
        event: { type: 'CHILD_QUEUED', actor: null },
        mode: 'async',
      }),
    ]);
    expect(queue.snapshot.parent).toEqual({ machineId: 'boss', id: 'BOSS1' });
  });

  it('should drop messages sent by a failing guard, like its context changes', () => {
    const initial = initialize(notifier).snapshot;

    expect(transition(notifier, initial, 'GUARDED').effects).toEqual([]);
  });

  it('should reject a target that names no instance', () => {
    const bad = defineMachine({
      config: { id: 'bad', initial: 'a', states: { a: { on: { GO: { actions: 'send' } } } } },
      behavior: { actions: { send: ({ sendTo }) => sendTo({ machineId: 'x' } as never, 'E') } },
    });

    expect(() => transition(bad, initialize(bad).snapshot, 'GO')).toThrow(
      /needs a target \{ machineId, id \}/,
    );
  });
});
