/**
 * The `createOrSend` registration option, checked and resolved for planning (docs/http.md
 * "Create-or-send"): which endpoints send to the instance bound to a business key read from
 * their payload, creating it first when there is none. Pure, like the rest of planning.
 */
import { eventTypeOfReference } from '../definition/endpoints.js';
import { contractKeys } from '../definition/typed-contracts.js';
import { isZodSchema } from '../definition/validate-config.js';
import type { EndpointDefinition } from '../definition/types.js';
import { InvalidCreateOrSendException, type MachineRoutesError } from '../errors.js';
import { describeUnknownKey, findUnknownKeys, KNOWN_KEYS, type ExactKeys } from '../known-keys.js';
import type { CreateOrSendOptions } from './types.js';

// The keys `createOrSend` knows are exactly those of its type.
true satisfies ExactKeys<CreateOrSendOptions, typeof KNOWN_KEYS.createOrSend>;

/** The checked option: the key field and the event types it binds. */
export interface PlannedCreateOrSend {
  key: string;
  events: string[];
}

/** What checking the option reads of the registration. */
export interface CreateOrSendContext {
  machineId: string;
  registration: string;
  endpoints: readonly Pick<EndpointDefinition, 'eventType' | 'event' | 'method'>[];
  /** Event types of the endpoints the registration keeps (`only` / `except`). */
  kept: readonly string[];
  /** Parent-facing types of the machine's forwarded endpoints. */
  forwarded: readonly string[];
  /** Event types the registration binds otherwise. */
  machineIdFor: readonly string[];
  modelFor: readonly string[];
}

/**
 * Checks `createOrSend` (absent or `null`: `null`, nothing to plan). Every problem is pushed on
 * `issues` as an `InvalidCreateOrSendException`; the events that pass are planned.
 */
export function planCreateOrSend(
  value: CreateOrSendOptions | null | undefined,
  issues: MachineRoutesError[],
  context: CreateOrSendContext,
): PlannedCreateOrSend | null {
  if (value === undefined || value === null) return null;
  const where = `(machine '${context.machineId}', registration '${context.registration}')`;
  const fail = (message: string, event?: string): void => {
    issues.push(
      new InvalidCreateOrSendException(`MachineRouter: 'createOrSend' ${message} ${where}`, {
        machine: context.machineId,
        registration: context.registration,
        key: 'createOrSend',
        ...(event === undefined ? {} : { event }),
      }),
    );
  };
  const example = `e.g. createOrSend: { key: 'orderNumber', events: ['PAY'] }`;
  if (typeof value !== 'object' || Array.isArray(value)) {
    fail(`must be an object, ${example}.`);
    return null;
  }
  for (const unknown of findUnknownKeys(value, KNOWN_KEYS.createOrSend)) {
    fail(`has ${describeUnknownKey(unknown)}. Known keys: ${KNOWN_KEYS.createOrSend.join(', ')}.`);
  }
  const key = value.key;
  if (typeof key !== 'string' || !/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key)) {
    fail(`needs 'key', the name of a top-level payload field, ${example}.`);
    return null;
  }
  if (!Array.isArray(value.events) || value.events.length === 0) {
    fail(`needs 'events', a non-empty list of event types, ${example}.`);
    return null;
  }
  const events: string[] = [];
  for (const ref of value.events as readonly unknown[]) {
    const type = eventTypeOfReference(ref);
    if (type === null) {
      fail(`has an entry in 'events' that is not an event type or event definition.`);
      continue;
    }
    const problem = eventProblem(type, key, context);
    if (problem === null) events.push(type);
    else fail(problem, type);
  }
  return { key, events };
}

// Why `type` cannot be routed by key, or null.
function eventProblem(type: string, key: string, context: CreateOrSendContext): string | null {
  if (context.forwarded.includes(type))
    return `cannot list forwarded endpoint '${type}': it is sent to its parent's instance. Remove it from 'events'.`;
  const endpoint = context.endpoints.find((candidate) => candidate.eventType === type);
  if (endpoint === undefined || !context.kept.includes(type)) {
    return `lists '${type}', which is not a registered endpoint of the machine. Available: ${context.kept.join(', ') || '(none)'}.`;
  }
  for (const list of ['machineIdFor', 'modelFor'] as const) {
    if (context[list].includes(type))
      return `lists '${type}', which is also in '${list}'. Keep each event in one list.`;
  }
  if (endpoint.method === 'GET')
    return `lists '${type}', a GET endpoint: a create-or-send may create an instance, which a GET must not. Give the endpoint method POST (or PUT, PATCH).`;
  return keyProblem(type, key, endpoint.event.payload);
}

// The key must be a required field whose value can only be a string or a number: it names the
// instance, so a request without it cannot name one.
function keyProblem(type: string, key: string, payload: unknown): string | null {
  const keys = contractKeys(payload);
  if (keys === null || !keys.all.includes(key)) {
    return `key '${key}' is not a field of the payload schema of '${type}'. Add it: payload: z.object({ ${key}: z.string(), ... }).`;
  }
  if (!keys.required.includes(key))
    return `key '${key}' is optional in the payload schema of '${type}': make it required (no .optional(), .nullish() or .default()).`;
  const field = (payload as { shape: Record<string, unknown> }).shape[key];
  const accepts = (sample: unknown): boolean =>
    isZodSchema(field) &&
    (field as { safeParse(value: unknown): { success: boolean } }).safeParse(sample).success;
  if ([null, true, {}, []].some(accepts))
    return `key '${key}' of '${type}' must be a string or a number field (z.string(), z.number(), an enum), not one that accepts null, booleans, objects or arrays.`;
  return null;
}
