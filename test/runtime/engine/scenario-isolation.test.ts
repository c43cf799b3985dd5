/**
 * Scenario isolation (issue 32): work a step starts under a scenario keeps the scenario, so a
 * QA run reaches no real side effect through it. With the durable queue really running on a
 * SQLite file (and PostgreSQL when reachable), each instance plays scenario `qa` on one event:
 * - a job actor started then takes the outcome `qa` gives its state; its function never runs;
 * - an asynchronous child started then starts under its own `qa` (its guard override decides);
 * - a queued listener queued then runs its step under `qa` (its guard override decides);
 * - a synchronous child started in that step starts under its own `qa` (and the parent's `@done`
 *   follows in the same step);
 * - the parent's completion step of a job started then plays `qa` again, so the next job it
 *   starts carries it (its continuation's `@fail`; the parcel is never shipped).
 * Each would take the real path on the code before (the job ran, the child waited, the guard
 * refused, the synchronous child waited, the second job ran).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  MachineRuntime,
  defineMachine,
  defineScenario,
  type MachineDefinition,
} from '../../../src/runtime/index.js';
import { durableBackends } from '../../support/durable-backends.js';

const backends = await durableBackends('engine/scenario-isolation');
const DEADLINE = { timeout: 30_000, interval: 25 };
const PLAY = { scenario: { kind: 'play', slug: 'qa', params: {} } } as const;

/** Real side effects: what each real behaviour did. */
const real: string[] = [];

const shop = defineMachine({
  config: {
    id: 'shop',
    initial: 'idle',
    context: { note: '' },
    states: {
      idle: { on: { BUY: { target: 'charging', actions: 'note' } } },
      charging: {
        job: async () => {
          real.push('charged a card');
          return {};
        },
        on: { '@done': 'paid', '@fail': 'declined' },
      },
      paid: { type: 'final' },
      declined: { type: 'final' },
    },
  },
  behavior: { actions: { note: ({ context }) => void (context.note = 'real') } },
  scenarios: [
    defineScenario({
      slug: 'qa',
      description: 'A QA purchase: the card is never charged',
      source: 'idle',
      event: 'BUY',
      plan: { actions: { note: ({ context }) => void (context.note = 'qa') } },
      continuation: { children: { charging: '@fail' } },
    }),
  ],
});

const check = defineMachine({
  config: {
    id: 'check',
    initial: 'deciding',
    states: {
      deciding: {
        on: { '@always': [{ target: 'approved', guards: 'autoApprove' }, { target: 'manual' }] },
      },
      manual: { on: { DECIDE: 'approved' } },
      approved: { type: 'final' },
    },
  },
  behavior: { guards: { autoApprove: () => false } },
  scenarios: [
    defineScenario({
      slug: 'qa',
      description: 'QA checks approve themselves',
      source: 'manual',
      event: 'DECIDE',
      plan: { guards: { autoApprove: true } },
    }),
  ],
});

const review = defineMachine({
  config: {
    id: 'review',
    initial: 'idle',
    context: { note: '' },
    states: {
      idle: { on: { SUBMIT: { target: 'reviewing', actions: 'note' } } },
      reviewing: { machine: check, queue: true, on: { '@done': 'approved' } },
      approved: { type: 'final' },
    },
  },
  behavior: { actions: { note: ({ context }) => void (context.note = 'real') } },
  scenarios: [
    defineScenario({
      slug: 'qa',
      description: 'A QA review',
      source: 'idle',
      event: 'SUBMIT',
      plan: { actions: { note: ({ context }) => void (context.note = 'qa') } },
    }),
  ],
});

const notified = defineMachine({
  config: {
    id: 'notified',
    initial: 'draft',
    listen: { entry: [['ping', { '@queue': true }]] },
    states: {
      draft: { on: { SUBMIT: 'submitted' } },
      submitted: { on: { CHECK: { target: 'cleared', guards: 'bankApproves' } } },
      cleared: { type: 'final' },
    },
  },
  behavior: {
    guards: { bankApproves: () => false },
    listeners: {
      ping: ({ state, raise }) => {
        if (state.value.includes('notified.submitted')) raise('CHECK');
      },
    },
  },
  scenarios: [
    defineScenario({
      slug: 'qa',
      description: 'The bank approves QA submissions',
      source: 'draft',
      event: 'SUBMIT',
      plan: { guards: { bankApproves: true } },
    }),
  ],
});

const reviewNow = defineMachine({
  config: {
    id: 'reviewNow',
    initial: 'idle',
    context: { note: '' },
    states: {
      idle: { on: { SUBMIT: { target: 'reviewing', actions: 'note' } } },
      reviewing: { machine: check, on: { '@done': 'approved' } },
      approved: { type: 'final' },
    },
  },
  behavior: { actions: { note: ({ context }) => void (context.note = 'real') } },
  scenarios: [
    defineScenario({
      slug: 'qa',
      description: 'A QA review, its check run inline',
      source: 'idle',
      event: 'SUBMIT',
      plan: { actions: { note: ({ context }) => void (context.note = 'qa') } },
    }),
  ],
});

const parcel = defineMachine({
  config: {
    id: 'parcel',
    initial: 'idle',
    context: { note: '' },
    states: {
      idle: { on: { BUY: { target: 'charging', actions: 'note' } } },
      charging: {
        job: async () => {
          real.push('charged a card');
          return {};
        },
        on: { '@done': 'shipping', '@fail': 'declined' },
      },
      shipping: {
        job: async () => {
          real.push('shipped a parcel');
          return {};
        },
        on: { '@done': 'shipped', '@fail': 'held' },
      },
      shipped: { type: 'final' },
      held: { type: 'final' },
      declined: { type: 'final' },
    },
  },
  behavior: { actions: { note: ({ context }) => void (context.note = 'real') } },
  scenarios: [
    defineScenario({
      slug: 'qa',
      description: 'A QA order: charged and shipped by nobody',
      source: 'idle',
      event: 'BUY',
      plan: { actions: { note: ({ context }) => void (context.note = 'qa') } },
      continuation: { children: { charging: '@done', shipping: '@fail' } },
    }),
  ],
});

/** A queued child's completion enters a job state: the completion step must play `qa` again. */
const dispatch = defineMachine({
  config: {
    id: 'dispatch',
    initial: 'idle',
    states: {
      idle: { on: { BUY: 'checking' } },
      checking: { machine: check, queue: true, on: { '@done': 'shipping' } },
      shipping: {
        job: async () => {
          real.push('shipped a parcel');
          return {};
        },
        on: { '@done': 'shipped', '@fail': 'held' },
      },
      shipped: { type: 'final' },
      held: { type: 'final' },
    },
  },
  scenarios: [
    defineScenario({
      slug: 'qa',
      description: 'A QA dispatch: checked by the QA check, shipped by nobody',
      source: 'idle',
      event: 'BUY',
      plan: {},
      continuation: { children: { shipping: '@fail' } },
    }),
  ],
});

describe.each(backends)('scenario isolation on $name', (backend) => {
  let runtime: MachineRuntime;
  beforeAll(async () => {
    runtime = await MachineRuntime.open({
      databaseUrl: await backend.setUp(),
      migrate: true,
      scenariosEnabled: true,
      machines: [shop, check, review, notified, reviewNow, parcel, dispatch],
      jobQueue: { pollIntervalMs: 20, backoffMs: 0 },
    });
  }, 60_000);
  afterAll(async () => {
    await runtime?.close();
    await backend.tearDown();
  });

  const settlesIn = async (definition: MachineDefinition, id: string, value: string[]) =>
    vi.waitFor(async () => {
      const read = await runtime.read(definition, id);
      expect(read.snapshot.value).toEqual(value);
    }, DEADLINE);

  it("should give a job actor started under a scenario that scenario's outcome, never running it", async () => {
    real.length = 0;
    const { snapshot } = await runtime.create(shop);
    const bought = await runtime.send(shop, snapshot.id, { type: 'BUY' }, PLAY);
    expect(bought.snapshot.context['note']).toBe('qa');
    expect(bought.snapshot.value).toEqual(['shop.charging']);
    await settlesIn(shop, snapshot.id, ['shop.declined']);
    expect(real).not.toContain('charged a card');
    const failed = (await runtime.history(shop, snapshot.id)).find((record) =>
      record.type.endsWith('.fail'),
    );
    expect(failed?.payload).toMatchObject({
      error: { name: 'ScenarioOutcome', message: expect.stringContaining("Scenario 'qa'") },
    });
  });

  it('should start a child started under a scenario under its own scenario of that slug', async () => {
    const { snapshot } = await runtime.create(review);
    await runtime.send(review, snapshot.id, { type: 'SUBMIT' }, PLAY);
    // The child's guard override approves it at once, so the parent's @done follows.
    await settlesIn(review, snapshot.id, ['review.approved']);
    const [child] = await runtime.children(snapshot.id);
    expect((await runtime.restore(check, child!.id)).value).toEqual(['check.approved']);
  });

  it('should run a queued listener queued under a scenario with that scenario', async () => {
    const { snapshot } = await runtime.create(notified);
    await runtime.send(notified, snapshot.id, { type: 'SUBMIT' }, PLAY);
    await settlesIn(notified, snapshot.id, ['notified.cleared']);
  });

  it('should start a synchronous child under its own scenario of the slug its parent plays', async () => {
    const { snapshot } = await runtime.create(reviewNow);
    const submitted = await runtime.send(reviewNow, snapshot.id, { type: 'SUBMIT' }, PLAY);
    // Inline: the child's own `qa` approves it in the parent's step, whose @done follows.
    expect(submitted.snapshot.value).toEqual(['reviewNow.approved']);
    const [child] = await runtime.children(snapshot.id);
    expect((await runtime.restore(check, child!.id)).value).toEqual(['check.approved']);
  });

  it("should play the scenario again in the parent's completion step of a job started under it", async () => {
    real.length = 0;
    const { snapshot } = await runtime.create(parcel);
    await runtime.send(parcel, snapshot.id, { type: 'BUY' }, PLAY);
    // charging: the continuation's @done when its job runs; the completion step enters shipping
    // under `qa`, so shipping's job carries it and takes the continuation's @fail.
    await settlesIn(parcel, snapshot.id, ['parcel.held']);
    expect(real).toEqual([]);
  });

  it("should play the scenario again in the parent's completion step of a child (child.complete)", async () => {
    real.length = 0;
    const { snapshot } = await runtime.create(dispatch);
    await runtime.send(dispatch, snapshot.id, { type: 'BUY' }, PLAY);
    // The child's own `qa` approves it; child.complete enters shipping under the parent's `qa`
    // (kept on the child row), so shipping's job takes the continuation's @fail, never running.
    await settlesIn(dispatch, snapshot.id, ['dispatch.held']);
    expect(real).toEqual([]);
    const [row] = await runtime.children(snapshot.id);
    expect(row?.parentScenario?.slug).toBe('qa');
  });

  it('should leave the same work real without a scenario', async () => {
    const shopped = (await runtime.create(shop)).snapshot.id;
    await runtime.send(shop, shopped, { type: 'BUY' });
    await settlesIn(shop, shopped, ['shop.paid']);
    expect(real).toContain('charged a card');
    const reviewed = (await runtime.create(review)).snapshot.id;
    await runtime.send(review, reviewed, { type: 'SUBMIT' });
    const [child] = await vi.waitFor(async () => {
      const rows = await runtime.children(reviewed);
      expect(rows[0]?.status).toBe('running');
      return rows;
    }, DEADLINE);
    expect((await runtime.restore(check, child!.id)).value).toEqual(['check.manual']);
    const listened = (await runtime.create(notified)).snapshot.id;
    await runtime.send(notified, listened, { type: 'SUBMIT' });
    // The listener ran (its step recorded) and the real guard refused.
    await vi.waitFor(async () => {
      const history = await runtime.history(notified, listened);
      expect(history.filter((record) => record.type.endsWith('.completed')).length).toBe(2);
    }, DEADLINE);
    expect((await runtime.read(notified, listened)).snapshot.value).toEqual(['notified.submitted']);
    const inline = (await runtime.create(reviewNow)).snapshot.id;
    expect((await runtime.send(reviewNow, inline, { type: 'SUBMIT' })).snapshot.value).toEqual([
      'reviewNow.reviewing',
    ]);
    real.length = 0;
    const bought = (await runtime.create(parcel)).snapshot.id;
    await runtime.send(parcel, bought, { type: 'BUY' });
    await settlesIn(parcel, bought, ['parcel.shipped']);
    expect(real).toEqual(['charged a card', 'shipped a parcel']);
  });
});
