/**
 * Events sent between instances, recorded by the test kit (`t.fakes.sent`): a child's
 * `sendToParent`, the parent's `sendTo` its child, a `dispatchTo` another machine, with the
 * sender, the target, how they relate, the mode and the virtual time. On the real runtime, on
 * the in-memory store and on a SQLite file.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { defineMachine } from '../../src/runtime/index.js';
import { createTestRuntime, type TestRuntime } from '../../src/testing/index.js';

/** The child: tells its parent it started (with its own id), finishes on FINISH. */
const worker = defineMachine<{ step: number }>({
  config: {
    id: 'kitWorker',
    initial: 'working',
    context: { step: 0 },
    states: {
      working: { entry: 'hello', on: { FINISH: 'finished' } },
      finished: { type: 'final' },
    },
  },
  behavior: {
    actions: {
      hello: ({ sendToParent, id }) => sendToParent({ type: 'STARTED', payload: { worker: id } }),
    },
  },
});

/** Counts what it is told. */
const audit = defineMachine<{ logged: number }>({
  config: {
    id: 'kitAudit',
    initial: 'open',
    context: { logged: 0 },
    states: { open: { on: { LOGGED: { target: null, actions: 'count' } } } },
  },
  behavior: {
    actions: {
      count: ({ context }) => {
        context.logged += 1;
      },
    },
  },
});

/** The parent: starts the worker, logs its start to the audit, tells the worker to finish. */
const boss = defineMachine<{ auditId: string }>({
  config: {
    id: 'kitBoss',
    initial: 'delegating',
    context: { auditId: '' },
    states: {
      delegating: {
        machine: worker,
        queue: true,
        on: { STARTED: { target: null, actions: 'relay' }, '@done': 'done' },
      },
      done: { type: 'final' },
    },
  },
  behavior: {
    actions: {
      relay: ({ context, event, sendTo, dispatchTo }) => {
        dispatchTo({ machineId: 'kitAudit', id: context.auditId }, 'LOGGED');
        sendTo({ machineId: 'kitWorker', id: String(event.payload?.['worker']) }, 'FINISH');
      },
    },
  },
});

let t: TestRuntime | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

describe.each(['memory', 'sqlite'] as const)('events sent between instances (%s)', (store) => {
  it('should record which events were sent to which parent, child and other instance', async () => {
    t = await createTestRuntime({
      machines: [boss, audit],
      store,
      startTime: '2026-03-01T09:00:00Z',
    });
    const log = await t.create(audit);
    const parent = await t.create(boss, { input: { auditId: log.id } });

    expect(await parent.state()).toEqual(['kitBoss.done']);
    expect(await log.context()).toEqual({ logged: 1 });
    const [child] = t.fakes.callsOf('kitWorker');
    const childId = (await t.runtime.children(parent.id))[0]!.childRootEventId;
    expect(child?.kind).toBe('child');
    const at = new Date('2026-03-01T09:00:00Z');
    expect(t.fakes.sent).toEqual([
      {
        mode: 'sync',
        from: { machineId: 'kitWorker', id: childId },
        to: { machineId: 'kitBoss', id: parent.id },
        relation: 'parent',
        event: { type: 'STARTED', payload: { worker: childId }, actor: null },
        at,
      },
      {
        mode: 'sync',
        from: { machineId: 'kitBoss', id: parent.id },
        to: { machineId: 'kitWorker', id: childId },
        relation: 'child',
        event: { type: 'FINISH', actor: null },
        at,
      },
      {
        mode: 'async',
        from: { machineId: 'kitBoss', id: parent.id },
        to: { machineId: 'kitAudit', id: log.id },
        relation: 'other',
        event: { type: 'LOGGED', actor: null },
        at,
      },
    ]);
    expect(t.fakes.sentTo('kitAudit').map((sent) => sent.event.type)).toEqual(['LOGGED']);
  });
});
