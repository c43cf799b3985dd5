import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  activeScenario,
  availableScenarios,
  defineMachine,
  defineScenario,
  initialize,
  InvalidScenarioDefinitionException,
  MachineValidationException,
  planScenarioStep,
  ScenarioFailedException,
  ScenarioNotFoundException,
  transition,
  validateMachine,
  type MachineSnapshot,
  type PersistChildEffect,
} from '../../../src/runtime/index.js';
import { fixedClock, typesOf } from './helpers.js';

const reviewChild = defineMachine({
  config: {
    id: 'review',
    initial: 'waiting',
    states: { waiting: { on: { DECIDE: 'approved' } }, approved: { type: 'final' } },
  },
  scenarios: [
    defineScenario({
      slug: 'quick-approve',
      description: 'Approves without looking',
      source: 'waiting',
      event: 'DECIDE',
    }),
  ],
});

const declined = defineScenario({
  slug: 'declined',
  description: 'The card is refused',
  source: 'paying',
  event: 'PAY',
  params: z.object({ reason: z.string().default('insufficient funds') }),
  plan: {
    guards: { cardAccepted: false },
    actions: {
      charge: ({ context, scenarioParams }) => void (context.note = scenarioParams.reason),
    },
  },
});

const vip = defineScenario({
  slug: 'vip',
  description: 'Always accepted, no charge, review fails',
  source: 'paying',
  event: 'PAY',
  plan: { actions: { charge: null }, children: { reviewing: '@fail' } },
  continuation: { guards: { cardAccepted: true } },
});

const order = defineMachine({
  config: {
    id: 'order',
    initial: 'paying',
    context: { charged: 0, note: '' },
    states: {
      paying: {
        on: {
          PAY: [
            { target: 'reviewing', guards: 'cardAccepted', actions: 'charge' },
            { actions: 'charge' },
          ],
        },
      },
      reviewing: { machine: reviewChild, on: { '@done': 'done', '@fail': 'rejected' } },
      rejected: { on: { RETRY: { target: 'paying', guards: 'cardAccepted' } } },
      done: { type: 'final' },
    },
  },
  behavior: {
    guards: { cardAccepted: () => true },
    actions: { charge: ({ context }) => void (context.charged = (context.charged as number) + 1) },
  },
  scenarios: [declined, vip],
});

const start = (): MachineSnapshot => initialize(order, fixedClock).snapshot;

describe('scenario plans in transition()', () => {
  it('should run the real behaviour without a scenario', () => {
    const { snapshot } = transition(order, start(), 'PAY', fixedClock);
    expect(snapshot.value).toEqual(['order.reviewing']);
    expect(snapshot.context).toEqual({ charged: 1, note: '' });
  });

  it('should replace a guard and an action, the action reading scenarioParams', () => {
    const step = planScenarioStep(
      order,
      start(),
      'PAY',
      { kind: 'play', slug: 'declined', params: {} },
      null,
    );
    const { snapshot, history } = transition(order, start(), 'PAY', {
      ...fixedClock,
      scenario: step.active,
    });
    expect(snapshot.value).toEqual(['order.paying']);
    expect(snapshot.context).toEqual({ charged: 0, note: 'insufficient funds' });
    expect(typesOf(history)).toContain('order.guard.cardAccepted.fail');
  });

  it('should skip a null action and force a delegated child outcome to @fail without starting it', () => {
    const step = planScenarioStep(
      order,
      start(),
      'PAY',
      { kind: 'play', slug: 'vip', params: undefined },
      null,
    );
    const result = transition(order, start(), 'PAY', { ...fixedClock, scenario: step.active });
    expect(result.snapshot.value).toEqual(['order.rejected']);
    expect(result.snapshot.context.charged).toBe(0);
    expect(result.effects.filter((effect) => effect.kind === 'persistChild')).toEqual([]);
    const fail = result.history.find((record) => record.type === 'order.child.review.fail');
    expect(fail?.payload).toMatchObject({
      error: {
        name: 'ScenarioOutcome',
        message: expect.stringContaining("Scenario 'vip' forced the outcome '@fail'"),
      },
    });
  });

  it('should start a child with its own scenario kept on it', () => {
    const parent = defineMachine({
      config: {
        id: 'parent',
        initial: 'idle',
        states: {
          idle: { on: { GO: 'reviewing' } },
          reviewing: { machine: reviewChild, on: { '@done': 'done' } },
          done: { type: 'final' },
        },
      },
      scenarios: [
        defineScenario({
          slug: 'child-approves',
          description: 'The review child approves at once',
          source: 'idle',
          event: 'GO',
          plan: { children: { reviewing: { scenario: 'quick-approve' } } },
        }),
      ],
    });
    const initial = initialize(parent, fixedClock).snapshot;
    const step = planScenarioStep(
      parent,
      initial,
      'GO',
      { kind: 'play', slug: 'child-approves', params: {} },
      null,
    );
    const result = transition(parent, initial, 'GO', { ...fixedClock, scenario: step.active });
    const persisted = result.effects.find(
      (effect) => effect.kind === 'persistChild',
    ) as PersistChildEffect;
    expect(persisted.scenario).toEqual({ slug: 'quick-approve', params: {} });
    expect(step.keep).toBeUndefined();
  });
});

describe('planScenarioStep', () => {
  it('should answer an unknown slug with ScenarioNotFoundException (404)', () => {
    const decide = () =>
      planScenarioStep(order, start(), 'PAY', { kind: 'play', slug: 'nope', params: {} }, null);
    expect(decide).toThrow(ScenarioNotFoundException);
    expect(decide).toThrow("Scenario 'nope' not found.");
  });

  it('should answer another event or another state with ScenarioFailedException (422), naming both', () => {
    expect(() =>
      planScenarioStep(
        order,
        start(),
        'RETRY',
        { kind: 'play', slug: 'declined', params: {} },
        null,
      ),
    ).toThrow(ScenarioFailedException);
    expect(() =>
      planScenarioStep(
        order,
        start(),
        'RETRY',
        { kind: 'play', slug: 'declined', params: {} },
        null,
      ),
    ).toThrow("Expected event 'PAY', received 'RETRY'");
    const rejected: MachineSnapshot = { ...start(), value: ['order.rejected'] };
    expect(() =>
      planScenarioStep(
        order,
        rejected,
        'PAY',
        { kind: 'play', slug: 'declined', params: {} },
        null,
      ),
    ).toThrow("Expected source 'order.paying', machine is at 'order.rejected'");
  });

  it('should validate scenarioParams with the scenario schema', () => {
    expect(() =>
      planScenarioStep(
        order,
        start(),
        'PAY',
        { kind: 'play', slug: 'declined', params: { reason: 5 } },
        null,
      ),
    ).toThrow(MachineValidationException);
  });

  it('should keep a continuation, restore it when omitted, and clear it on null', () => {
    const played = planScenarioStep(
      order,
      start(),
      'PAY',
      { kind: 'play', slug: 'vip', params: {} },
      null,
    );
    expect(played.keep).toEqual({ slug: 'vip', params: {} });
    const rejected: MachineSnapshot = { ...start(), value: ['order.rejected'] };
    const restored = planScenarioStep(order, rejected, 'RETRY', { kind: 'omitted' }, played.keep!);
    expect(restored.active?.plan).toBe(order.scenarios.get('vip')!.continuation);
    expect(restored.keep).toBeUndefined();
    expect(
      planScenarioStep(order, rejected, 'RETRY', { kind: 'deactivate' }, played.keep!),
    ).toEqual({
      active: null,
      keep: null,
    });
  });

  it('should clear a kept scenario without continuation once it played', () => {
    const step = planScenarioStep(
      order,
      start(),
      'PAY',
      { kind: 'omitted' },
      { slug: 'declined', params: { reason: 'x' } },
    );
    expect(step.active?.params).toEqual({ reason: 'x' });
    expect(step.keep).toBeNull();
    // Another scenario replaces a kept continuation; one without continuation clears it.
    expect(
      planScenarioStep(
        order,
        start(),
        'PAY',
        { kind: 'play', slug: 'declined', params: {} },
        { slug: 'vip', params: {} },
      ).keep,
    ).toBeNull();
  });
});

describe('availableScenarios / activeScenario', () => {
  it('should group the scenarios of the active state by event', () => {
    expect(availableScenarios(order, start())).toEqual({
      PAY: [
        { slug: 'declined', description: 'The card is refused', hasContinuation: false },
        {
          slug: 'vip',
          description: 'Always accepted, no charge, review fails',
          hasContinuation: true,
        },
      ],
    });
    expect(availableScenarios(order, { ...start(), value: ['order.rejected'] })).toEqual({});
  });

  it('should describe only a continuation as active', () => {
    expect(activeScenario(order, { slug: 'vip', params: {} })).toEqual({
      slug: 'vip',
      description: 'Always accepted, no charge, review fails',
      hasContinuation: true,
    });
    expect(activeScenario(order, { slug: 'declined', params: {} })).toBeNull();
    expect(activeScenario(order, null)).toBeNull();
  });
});

describe('scenario definitions', () => {
  const base = {
    config: {
      id: 'm',
      initial: 'a',
      states: { a: { on: { GO: 'b' } }, b: { machine: reviewChild, on: { '@done': 'a' } } },
    },
  };

  it('should report a children entry on a state that does not delegate, a bad outcome and an unknown child scenario', () => {
    const issues = validateMachine({
      ...base,
      scenarios: [
        defineScenario({
          slug: 's1',
          description: '',
          source: 'a',
          event: 'GO',
          plan: { children: { a: '@done' } },
        }),
        defineScenario({
          slug: 's2',
          description: '',
          source: 'a',
          event: 'GO',
          plan: { children: { b: '@finished' as never } },
        }),
        defineScenario({
          slug: 's3',
          description: '',
          source: 'a',
          event: 'GO',
          plan: { children: { b: { scenario: 'nope' } } },
        }),
      ],
    });
    expect(issues.every((issue) => issue instanceof InvalidScenarioDefinitionException)).toBe(true);
    expect(issues.map((issue) => issue.message)).toEqual([
      "Machine 'm', scenario 's1': plan.children names 'a', which is not a delegating state (one with 'machine').",
      "Machine 'm', scenario 's2': plan.children.b must be '@done', '@done.<final state>', '@fail' or '@timeout' (got '@finished').",
      "Machine 'm', scenario 's3': plan.children.b starts child machine 'review' with scenario 'nope', which it does not define.",
    ]);
  });

  it('should report a source state that does not handle the event and a duplicate slug', () => {
    const issues = validateMachine({
      ...base,
      scenarios: [
        { slug: 'x', description: 'd', source: 'b', event: 'GO' },
        { slug: 'x', description: 'd', source: 'a', event: 'GO' },
      ],
    });
    expect(issues.map((issue) => issue.message)).toEqual([
      "Machine 'm', scenario 'x': source state 'b' (and its ancestors) does not handle event 'GO'.",
      "Machine 'm', scenario 'x': the slug is used by another scenario of this machine.",
    ]);
  });
});
