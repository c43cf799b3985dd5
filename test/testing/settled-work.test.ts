/**
 * What the test runtime settles and advances beyond timers and job actors: schedule ticks
 * (cron) on `advance`, a queued listener and parallel region jobs settled before `send` /
 * `create` return, a `@timeout` completion step that plays the scenario its job started under,
 * and `startAt`'s context checked by the machine's context schema.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob, defineMachine, defineScenario } from '../../src/runtime/index.js';
import {
  createTestRuntime,
  hang,
  InvalidTestContextException,
  type TestRuntime,
} from '../../src/testing/index.js';

let t: TestRuntime | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

/** Reminded at 09:00 on weekdays while open (a schedule, not a timer of the state). */
const reminded = defineMachine<{ reminders: number }>({
  config: {
    id: 'kitReminded',
    initial: 'open',
    context: { reminders: 0 },
    states: {
      open: { on: { REMIND: { target: null, actions: 'count' }, CLOSE: 'closed' } },
      closed: { type: 'final' },
    },
  },
  behavior: {
    actions: {
      count: ({ context }) => {
        context.reminders += 1;
      },
    },
  },
});

describe('schedules on advance', () => {
  it('should deliver each weekday 09:00 tick of a week at its own time', async () => {
    t = await createTestRuntime({
      timers: [
        {
          machine: reminded,
          schedules: [{ cron: '0 9 * * 1-5', event: 'REMIND', states: ['open'] }],
        },
      ],
    });
    const open = await t.create(reminded);
    const closed = await t.create(reminded);
    await closed.send('CLOSE');
    // 2026-01-01 is a Thursday: Thu 1, Fri 2, Mon 5, Tue 6, Wed 7.
    const { fires } = await t.advance('7d');
    expect(fires).toBe(5);
    expect(await open.context()).toEqual({ reminders: 5 });
    expect(await closed.context()).toEqual({ reminders: 0 });
    const ticks = (await open.history()).filter((r) => r.type === 'REMIND').map((r) => r.createdAt);
    expect(ticks).toEqual(
      ['01', '02', '05', '06', '07'].map((day) => `2026-01-${day}T09:00:00.000Z`),
    );
  });
});

describe('queued listeners and region jobs settle before the call returns', () => {
  it("should run a queued listener's step (and what it raises) before send returns", async () => {
    const heard: string[] = [];
    const listened = defineMachine({
      config: {
        id: 'kitListened',
        initial: 'draft',
        listen: { entry: [['check', { '@queue': true }]] },
        states: {
          draft: { on: { SUBMIT: 'submitted' } },
          submitted: { on: { CHECKED: 'checked' } },
          checked: { type: 'final' },
        },
      },
      behavior: {
        listeners: {
          check: ({ state, raise }) => {
            heard.push(state.value.join(','));
            if (state.value.includes('kitListened.submitted')) raise('CHECKED');
          },
        },
      },
    });
    t = await createTestRuntime({ machines: [listened] });
    const instance = await t.create(listened);
    await instance.send('SUBMIT');
    expect(await instance.state()).toEqual(['kitListened.checked']);
    expect(heard).toContain('kitListened.submitted');
  });

  it('should run and merge the region jobs of a parallel state with parallel dispatch on', async () => {
    const packing = defineMachine<{ picked: boolean; labelled: boolean }>({
      config: {
        id: 'kitPacking',
        initial: 'idle',
        context: { picked: false, labelled: false },
        states: {
          idle: { on: { START: 'working' } },
          working: {
            type: 'parallel',
            onDone: 'packed',
            states: {
              pick: {
                initial: 'picking',
                states: {
                  picking: { entry: 'pick', on: { PICKED: 'done' } },
                  done: { type: 'final' },
                },
              },
              label: {
                initial: 'labelling',
                states: {
                  labelling: { entry: 'label', on: { LABELLED: 'done' } },
                  done: { type: 'final' },
                },
              },
            },
          },
          packed: { type: 'final' },
        },
      },
      behavior: {
        actions: {
          pick: ({ context, raise }) => {
            context.picked = true;
            raise('PICKED');
          },
          label: ({ context, raise }) => {
            context.labelled = true;
            raise('LABELLED');
          },
        },
      },
    });
    t = await createTestRuntime({ machines: [packing], parallelDispatch: true });
    const box = await t.create(packing);
    await box.send('START');
    // Each region's entry ran as a region job and merged (its raised event with it); both
    // regions are done, so the parallel state's onDone has run too.
    expect(await box.state()).toEqual(['kitPacking.packed']);
    expect(await box.context()).toEqual({ picked: true, labelled: true });
    const types = (await box.history()).map((r) => r.type);
    expect(types.filter((type) => type.endsWith('.region.merged'))).toHaveLength(2);
  });
});

describe('a @timeout under a scenario', () => {
  const shipped: string[] = [];
  const parcel = defineMachine({
    config: {
      id: 'kitSlowParcel',
      initial: 'idle',
      states: {
        idle: { on: { BUY: 'charging' } },
        charging: {
          job: defineJob({ name: 'slowCharge', run: async () => ({}) }),
          on: { '@done': 'declined', '@timeout': { target: 'shipping', after: { minutes: 2 } } },
        },
        shipping: {
          job: defineJob({
            name: 'slowShip',
            run: async () => {
              shipped.push('shipped a parcel');
              return {};
            },
          }),
          on: { '@done': 'shipped', '@fail': 'held' },
        },
        shipped: { type: 'final' },
        held: { type: 'final' },
        declined: { type: 'final' },
      },
    },
    scenarios: [
      defineScenario({
        slug: 'qa',
        description: 'Nothing is shipped for QA',
        source: 'idle',
        event: 'BUY',
        plan: {},
        continuation: { children: { shipping: '@fail' } },
      }),
    ],
  });

  it('should play the scenario again in the @timeout step, so the next job takes its outcome', async () => {
    t = await createTestRuntime({ machines: [parcel], scenarios: true });
    t.fakes.job('slowCharge', hang());
    const qa = await t.create(parcel);
    await qa.send('BUY', undefined, { scenario: { kind: 'play', slug: 'qa', params: {} } });
    const real = await t.create(parcel);
    await real.send('BUY');
    await t.advance('2m');
    expect(await qa.state()).toEqual(['kitSlowParcel.held']);
    expect(await real.state()).toEqual(['kitSlowParcel.shipped']);
    expect(shipped).toEqual(['shipped a parcel']);
  });
});

describe('startAt context', () => {
  it("should refuse a context the machine's context schema refuses, naming the key", async () => {
    const loan = defineMachine({
      config: {
        id: 'kitLoan',
        initial: 'applied',
        context: z.object({ amount: z.number().int().positive().default(1) }),
        states: { applied: { on: { APPROVE: 'approved' } }, approved: { type: 'final' } },
      },
    });
    t = await createTestRuntime({ machines: [loan] });
    const attempt = t.startAt(loan, 'applied', { context: { amount: -5 } });
    await expect(attempt).rejects.toThrow(InvalidTestContextException);
    await expect(attempt).rejects.toThrow(
      "The context given for a 'kitLoan' instance does not match its context schema: amount:",
    );
    const fine = await t.startAt(loan, 'applied', { context: { amount: 500 } });
    expect(await fine.context()).toEqual({ amount: 500 });
  });
});
