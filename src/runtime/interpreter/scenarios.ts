/**
 * Pure scenario rules: which plan applies to an event (and what stays on the instance after
 * it), the 404 / 422 decisions, and the `availableScenarios` / `activeScenario` response
 * fields. No I/O: the caller reads the stored scenario and writes the outcome with the step.
 *
 * | Request `scenario` | Overrides of this event | Kept on the instance after it |
 * |---|---|---|
 * | a slug | its `plan` | the slug when it has a continuation, else nothing |
 * | `null` | none (real behaviour) | nothing |
 * | omitted, one kept | its `plan` when the machine is in its source state and the event is its event, else its `continuation` | unchanged, except that a played scenario without continuation is cleared |
 * | omitted, none kept | none | nothing |
 */
import {
  MachineValidationException,
  ScenarioFailedException,
  ScenarioNotFoundException,
} from '../errors.js';
import type { MachineDefinition } from '../definition/machine-definition.js';
import type { ScenarioDefinition } from '../definition/scenarios.js';
import { isDescendantOrSelf } from '../definition/state-node.js';
import type { ActiveScenario, CarriedScenario, MachineSnapshot, StoredScenario } from './types.js';

/** What a request asks of scenarios. */
export type ScenarioRequest =
  /** No `scenario` key: a kept scenario (continuation) applies. */
  | { kind: 'omitted' }
  /** `scenario: null`: the kept scenario is deactivated, real behaviour runs. */
  | { kind: 'deactivate' }
  /** `scenario: '<slug>'` with the request's `scenarioParams`. */
  | { kind: 'play'; slug: string; params: unknown };

/** The outcome of {@link planScenarioStep}. */
export interface ScenarioStep {
  /** Overrides of this event; `null`: the real behaviour runs. */
  active: ActiveScenario | null;
  /** What the instance keeps after the event: `undefined` leaves it as it is, `null` clears it. */
  keep: StoredScenario | null | undefined;
}

/** Nothing to do: no scenario requested, none kept. */
export const NO_SCENARIO_STEP: ScenarioStep = Object.freeze({ active: null, keep: undefined });

/** An entry of `availableScenarios` and the `activeScenario` field. */
export interface ScenarioSummary {
  slug: string;
  description: string;
  hasContinuation: boolean;
}

/**
 * Decides the overrides of one event. Throws ScenarioNotFoundException (404) for an unknown
 * slug, ScenarioFailedException (422) when the machine is not in the scenario's source state
 * or the event is not its event, MachineValidationException (422) for invalid `scenarioParams`.
 * Called before anything is computed, so a rejected request writes nothing.
 */
export function planScenarioStep(
  definition: MachineDefinition,
  snapshot: MachineSnapshot,
  eventType: string,
  request: ScenarioRequest,
  kept: StoredScenario | null,
): ScenarioStep {
  if (request.kind === 'deactivate')
    return { active: null, keep: kept === null ? undefined : null };
  if (request.kind === 'play') {
    const scenario = findScenario(definition, request.slug);
    if (scenario.event !== eventType) {
      throw new ScenarioFailedException(
        `Expected event '${scenario.event}', received '${eventType}'`,
        { machine: definition.id, key: request.slug },
      );
    }
    if (!inSource(definition, snapshot, scenario)) {
      throw new ScenarioFailedException(
        `Expected source '${scenario.source}', machine is at '${snapshot.value.join(', ')}'`,
        { machine: definition.id, key: request.slug },
      );
    }
    const params = scenarioParams(definition, scenario, request.params);
    return {
      active: { slug: scenario.slug, plan: scenario.plan, params },
      keep:
        scenario.continuation !== null
          ? { slug: scenario.slug, params }
          : kept === null
            ? undefined
            : null,
    };
  }
  if (kept === null) return NO_SCENARIO_STEP;
  const scenario = definition.scenarios.get(kept.slug);
  // Kept by an older version of the machine that no longer defines it: dropped.
  if (scenario === undefined) return { active: null, keep: null };
  if (scenario.event === eventType && inSource(definition, snapshot, scenario)) {
    return {
      active: { slug: scenario.slug, plan: scenario.plan, params: kept.params },
      keep: scenario.continuation === null ? null : undefined,
    };
  }
  if (scenario.continuation === null) return { active: null, keep: undefined };
  return {
    active: { slug: scenario.slug, plan: scenario.continuation, params: kept.params },
    keep: undefined,
  };
}

/** The scenario of `slug`, or ScenarioNotFoundException (404). */
export function findScenario(definition: MachineDefinition, slug: string): ScenarioDefinition {
  const scenario = definition.scenarios.get(slug);
  if (scenario === undefined) {
    throw new ScenarioNotFoundException(`Scenario '${slug}' not found.`, {
      machine: definition.id,
      key: slug,
    });
  }
  return scenario;
}

/**
 * `availableScenarios`: the scenarios whose source state is active, grouped by event type
 * (`{}` when none). Keys and entries follow definition order.
 */
export function availableScenarios(
  definition: MachineDefinition,
  snapshot: MachineSnapshot,
): Record<string, ScenarioSummary[]> {
  const grouped: Record<string, ScenarioSummary[]> = {};
  for (const scenario of definition.scenarios.values()) {
    if (!inSource(definition, snapshot, scenario)) continue;
    (grouped[scenario.event] ??= []).push(summary(scenario));
  }
  return grouped;
}

/**
 * `activeScenario`: the continuation kept on the instance, `null` when none (a kept scenario
 * without continuation, waiting on a child for its event, is not a continuation).
 */
export function activeScenario(
  definition: MachineDefinition,
  kept: StoredScenario | null,
): ScenarioSummary | null {
  const scenario = kept === null ? undefined : definition.scenarios.get(kept.slug);
  return scenario === undefined || scenario.continuation === null ? null : summary(scenario);
}

/** What the instance keeps after a step: `step.keep` applied over what it kept before. */
export function keptAfter(kept: StoredScenario | null, step: ScenarioStep): StoredScenario | null {
  return step.keep === undefined ? kept : step.keep;
}

function summary(scenario: ScenarioDefinition): ScenarioSummary {
  return {
    slug: scenario.slug,
    description: scenario.description,
    hasContinuation: scenario.continuation !== null,
  };
}

function inSource(
  definition: MachineDefinition,
  snapshot: MachineSnapshot,
  scenario: ScenarioDefinition,
): boolean {
  const source = definition.idMap.get(scenario.source);
  if (source === undefined) return false;
  return snapshot.value.some((id) => {
    const leaf = definition.idMap.get(id);
    return leaf !== undefined && isDescendantOrSelf(leaf, source);
  });
}

/** `scenarioParams` validated with the scenario's schema (without one: any object, or nothing). */
function scenarioParams(
  definition: MachineDefinition,
  scenario: ScenarioDefinition,
  raw: unknown,
): Record<string, unknown> {
  const value = raw === undefined || raw === null ? {} : raw;
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new MachineValidationException('The scenarioParams must be an object.', {
      scenarioParams: ['The scenarioParams must be an object.'],
    });
  }
  if (scenario.params === undefined) return { ...(value as Record<string, unknown>) };
  const parsed = scenario.params.safeParse(value);
  if (parsed.success) return parsed.data as Record<string, unknown>;
  const errors: Record<string, string[]> = {};
  for (const issue of parsed.error.issues) {
    const field = ['scenarioParams', ...issue.path.map(String)].join('.');
    (errors[field] ??= []).push(issue.message);
  }
  const first = Object.entries(errors)[0];
  throw new MachineValidationException(
    `${first?.[0] ?? 'scenarioParams'}: ${first?.[1][0] ?? 'invalid'} (scenario '${scenario.slug}' of machine '${definition.id}').`,
    errors,
  );
}

/**
 * What work started by a step under `active` carries (scenario isolation): `undefined` without
 * a scenario, so payloads of steps without one stay as they were.
 */
export function carryScenario(
  definition: MachineDefinition,
  active: ActiveScenario | null,
): CarriedScenario | undefined {
  if (active === null) return undefined;
  const scenario = definition.scenarios.get(active.slug);
  if (scenario === undefined) return undefined;
  const part = active.plan === scenario.plan ? 'plan' : 'continuation';
  return { slug: active.slug, params: { ...active.params }, part };
}

/**
 * The scenario carried work plays again on `definition` (the machine that carried it, or a child
 * that defines the same slug): its plan, or its continuation when that was in force. `null`
 * when the machine has no such scenario (a deployment removed it, a child without it).
 */
export function resumeScenario(
  definition: MachineDefinition,
  carried: CarriedScenario | undefined,
): ActiveScenario | null {
  if (carried === undefined) return null;
  const scenario = definition.scenarios.get(carried.slug);
  const plan = carried.part === 'plan' ? scenario?.plan : scenario?.continuation;
  if (plan === undefined || plan === null) return null;
  return { slug: carried.slug, plan, params: { ...carried.params } };
}
