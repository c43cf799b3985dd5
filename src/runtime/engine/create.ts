/**
 * Creating instances: `create` (the initial step, committed), `createAndSend` (a model record's
 * first event: the initial step and the event in one commit with the record's binding) and
 * `createOrSend` (an event to the instance bound to a business key, created with it first when
 * there is none).
 */
import type { MachineDefinition } from '../definition/machine-definition.js';
import type { EventObject } from '../definition/types.js';
import { resolveForward } from '../interpreter/forwarding.js';
import { keptAfter, planScenarioStep } from '../interpreter/scenarios.js';
import type { MacrostepResult } from '../interpreter/types.js';
import { toValidationException } from '../interpreter/validation-failure.js';
import { PreconditionFailedException } from '../errors.js';
import { BusinessKeyTakenError } from '../persistence/store.js';
import { RecordAlreadyBoundError, type TransactionHook } from '../persistence/transaction.js';
import { scenarioWrite } from '../persistence/kept-scenarios.js';
import type { CreateOptions, InstanceResult, SendOptions } from '../persistence/types.js';
import { commitStep } from './commit-step.js';
import type { CommitOptions, EngineContext } from './context.js';
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
  options: CreateAndSendOptions = {},
): Promise<InstanceResult | null> {
  ctx.registry.register(definition);
  const initial = ctx.interpreter.initialize(definition, ctx.macrostepOptions);
  const bind = options.bind?.(initial.snapshot.id);
  const inTransaction: CommitOptions = bind === undefined ? {} : { inTransaction: bind };
  if (options.businessKey !== undefined) inTransaction.businessKey = options.businessKey;
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

/** Options of {@link createAndSend}. */
export type CreateAndSendOptions = SendOptions & {
  /** The model record's binding, run in the creating commit's transaction. */
  bind?: (id: string) => TransactionHook;
  /** The business key the instance is bound to in the creating commit (unique per machine). */
  businessKey?: string;
};

/** What {@link createOrSend} did: the step's result, and whether it created the instance. */
export type CreateOrSendResult = InstanceResult & { created: boolean };

// A lost race leaves the key held: the second look finds it. A third only when the holder was
// deleted in between (an operator's delete), which cannot repeat forever.
const CREATE_OR_SEND_ATTEMPTS = 3;

/**
 * Create-or-send (see `MachineInstances.createOrSend`): `event` to the instance of `definition`
 * bound to `businessKey`, through the locked step (`send`, with its contention answers); when
 * none is, a new instance with the event applied and the key bound, in one commit
 * (`createAndSend`). The store's unique key makes one of concurrent first requests create it;
 * the others' commits write nothing (`BusinessKeyTakenError`) and they send to the winner's.
 */
export async function createOrSend(
  ctx: EngineContext,
  definition: MachineDefinition,
  businessKey: string,
  event: EventObject,
  options: SendOptions = {},
): Promise<CreateOrSendResult> {
  for (let attempt = 0; attempt < CREATE_OR_SEND_ATTEMPTS; attempt += 1) {
    const id = await ctx.store.queries.instanceByBusinessKey(definition.id, businessKey);
    if (id !== null)
      return { ...(await send(ctx, definition, id, event, options)), created: false };
    // No instance, so no version an If-Match could name (RFC 9110 §13.1.1): nothing is created.
    if (options.precondition !== undefined) {
      throw new PreconditionFailedException(
        `No instance of '${definition.id}' has the business key '${businessKey}' yet, so If-Match cannot match.`,
        null,
        { machine: definition.id },
      );
    }
    const created = await createAndSend(ctx, definition, event, { ...options, businessKey });
    if (created !== null) return { ...created, created: true };
  }
  throw new Error(
    `createOrSend: the instance of '${definition.id}' with business key '${businessKey}' was deleted while requests raced to create it.`,
  );
}

// Commits a new instance; `false` when the binding found the record (or the key) bound meanwhile.
async function committed(
  ctx: EngineContext,
  main: Parameters<typeof commitStep>[1]['main'],
  options: CommitOptions,
): Promise<boolean> {
  try {
    await commitStep(ctx, { main, at: ctx.now() }, options);
    return true;
  } catch (error) {
    if (error instanceof RecordAlreadyBoundError || error instanceof BusinessKeyTakenError)
      return false;
    throw error;
  }
}
