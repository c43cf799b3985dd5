/**
 * Creating instances: `create` (the initial step, committed) and `createAndSend` (a model
 * record's first event: the initial step and the event in one commit with the record's binding).
 */
import type { MachineDefinition } from '../definition/machine-definition.js';
import type { EventObject } from '../definition/types.js';
import { resolveForward } from '../interpreter/forwarding.js';
import { keptAfter, planScenarioStep } from '../interpreter/scenarios.js';
import type { MacrostepResult } from '../interpreter/types.js';
import { toValidationException } from '../interpreter/validation-failure.js';
import { RecordAlreadyBoundError, type TransactionHook } from '../persistence/transaction.js';
import { scenarioWrite } from '../persistence/kept-scenarios.js';
import type { CreateOptions, InstanceResult, SendOptions } from '../persistence/types.js';
import { commitStep } from './commit-step.js';
import type { EngineContext } from './context.js';
import { finish } from './instance-result.js';
import { send } from './send.js';
import { OMITTED } from './stateless.js';

/** A fresh instance in its initial state, persisted (even with `should_persist: false`). */
export async function create(
  ctx: EngineContext,
  definition: MachineDefinition,
  options: CreateOptions = {},
): Promise<InstanceResult> {
  ctx.registry.register(definition);
  const result = ctx.interpreter.initialize(definition, {
    ...ctx.macrostepOptions,
    ...(options.input === undefined ? {} : { context: options.input }),
    ...(options.actor === undefined ? {} : { actor: options.actor }),
  });
  await commitStep(ctx, { main: { result, from: null }, at: ctx.now() });
  return finish(result);
}

/**
 * A model record's first event (see `MachineInstances.createAndSend`): initial step and event
 * computed in memory, then committed as one step with `options.bind(id)` in its transaction.
 * A refused event writes nothing: no machine is created for a request answered 409 or 422.
 * An event forwarded to a child (which the fresh instance would have to start first) takes
 * the two-step path: the instance is created and bound, then sent the event.
 */
export async function createAndSend(
  ctx: EngineContext,
  definition: MachineDefinition,
  event: EventObject,
  options: SendOptions & { bind?: (id: string) => TransactionHook } = {},
): Promise<InstanceResult | null> {
  ctx.registry.register(definition);
  const initial = ctx.interpreter.initialize(definition, ctx.macrostepOptions);
  const bind = options.bind?.(initial.snapshot.id);
  const inTransaction = bind === undefined ? {} : { inTransaction: bind };
  if (
    definition.forwards.length > 0 &&
    resolveForward(definition, initial.snapshot, event.type) !== null
  ) {
    if (!(await committed(ctx, { result: initial, from: null }, inTransaction))) return null;
    return send(ctx, definition, initial.snapshot.id, event, options);
  }
  // A fresh instance keeps no scenario yet: the requested one plays, as on any first event.
  const scenario = ctx.settings.scenariosEnabled
    ? planScenarioStep(definition, initial.snapshot, event.type, options.scenario ?? OMITTED, null)
    : null;
  // Throws NoTransitionDefinitionFoundException: nothing written.
  const step = ctx.interpreter.transition(definition, initial.snapshot, event, {
    ...ctx.macrostepOptions,
    scenario: scenario?.active ?? null,
  });
  // A failed validation guard on a machine nobody has yet: refused, nothing kept.
  if (step.validationFailure) throw toValidationException(step.validationFailure, definition.id);
  const result: MacrostepResult = {
    ...step,
    history: [...initial.history, ...step.history],
    effects: [...initial.effects, ...step.effects],
  };
  // `should_persist: false`: the instance is persisted as created (as `create` does), the
  // event is computed from it and not written back (as `send` does).
  const persist = definition.options.shouldPersist;
  const main = {
    result: persist ? result : initial,
    from: null,
    ...(scenario === null || !persist ? {} : scenarioWrite(null, scenario)),
  };
  if (!(await committed(ctx, main, inTransaction))) return null;
  return finish(result, scenario === null ? undefined : persist ? keptAfter(null, scenario) : null);
}

// Commits a new instance; `false` when the binding found the record bound meanwhile.
async function committed(
  ctx: EngineContext,
  main: Parameters<typeof commitStep>[1]['main'],
  options: { inTransaction?: TransactionHook },
): Promise<boolean> {
  try {
    await commitStep(ctx, { main, at: ctx.now() }, options);
    return true;
  } catch (error) {
    if (error instanceof RecordAlreadyBoundError) return false;
    throw error;
  }
}
