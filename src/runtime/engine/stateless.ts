/**
 * Stateless sends: a fresh instance per call, the event applied, nothing persisted, no I/O (the
 * HTTP layer's stateless routes answer synchronously from `sendStatelessSync`).
 */
import type { MachineDefinition } from '../definition/machine-definition.js';
import type { EventObject } from '../definition/types.js';
import {
  planScenarioStep,
  type ScenarioRequest,
  type ScenarioStep,
} from '../interpreter/scenarios.js';
import type { MachineSnapshot } from '../interpreter/types.js';
import type { InstanceResult, SendOptions } from '../persistence/types.js';
import type { EngineContext } from './context.js';
import { finish } from './instance-result.js';

/** A request that asks nothing of scenarios. */
export const OMITTED: ScenarioRequest = Object.freeze({ kind: 'omitted' });

/** A fresh instance, the event applied, nothing persisted; throws what the step throws. */
export function sendStatelessSync(
  ctx: EngineContext,
  definition: MachineDefinition,
  event: EventObject,
  options: SendOptions = {},
): InstanceResult {
  const light = options.keepHistory === false;
  const steps = ctx.statelessSteps;
  const stepOptions = light ? steps.light : steps.kept;
  const engine = ctx.interpreter;
  // The interpreter's own steps, without a scenario to plan from the initial snapshot: the
  // start and the event in one macrostep when the start runs no behavior.
  if (light && !ctx.settings.scenariosEnabled && engine.startAndTransition !== null) {
    const result = engine.startAndTransition(definition, event, stepOptions);
    if (result !== null) return finish(result);
  }
  const initial = engine.initialize(definition, stepOptions);
  const step = unkeptScenarioStep(ctx, definition, initial.snapshot, event.type, options);
  // Without history the initial snapshot is this call's alone (no record carries its
  // context), so the event's step may change that context instead of copying it first.
  const eventOptions = light ? steps.lightEvent : stepOptions;
  const result = engine.transition(
    definition,
    initial.snapshot,
    event,
    step === null ? eventOptions : { ...eventOptions, scenario: step.active },
  );
  // The two steps as one result; the lists are joined only when both have entries.
  result.history = joined(initial.history, result.history);
  result.effects = joined(initial.effects, result.effects);
  return finish(result, step === null ? undefined : null);
}

/** The scenario step of an instance that keeps nothing (stateless, `should_persist: false`). */
export function unkeptScenarioStep(
  ctx: EngineContext,
  definition: MachineDefinition,
  snapshot: MachineSnapshot,
  eventType: string,
  options: SendOptions,
): ScenarioStep | null {
  if (!ctx.settings.scenariosEnabled) return null;
  return planScenarioStep(definition, snapshot, eventType, options.scenario ?? OMITTED, null);
}

function joined<T>(first: T[], second: T[]): T[] {
  if (first.length === 0) return second;
  return second.length === 0 ? first : [...first, ...second];
}
