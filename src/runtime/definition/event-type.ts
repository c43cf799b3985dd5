/**
 * Event types and event definitions: `defineEvent`, the `MachineEvent` class form and the rules
 * that tell a user-sendable type from a reserved `@` name.
 */
import type { ZodType } from 'zod';
import { InvalidEventDefinitionException } from '../errors.js';
import { constantCase } from '../naming.js';
import type { EventClass, EventDefinition, EventReference } from './types.js';

/** SCREAMING_SNAKE_CASE: upper-case words of letters and digits joined by single underscores. */
const USER_EVENT_TYPE = /^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*$/;

/** `@done.<final>` names a final state of a child machine: a plain state key after the dot. */
const DONE_FOR_FINAL = /^@done\.[A-Za-z0-9_-]+$/;

/** Reserved names the interpreter itself sends. */
export const RESERVED_EVENT_TYPES = ['@always', '@done', '@fail', '@timeout'] as const;

/** True for a type users may send: SCREAMING_SNAKE_CASE, no leading `@`. */
export function isUserEventType(type: string): boolean {
  return USER_EVENT_TYPE.test(type);
}

/** True for `@always`, `@done`, `@done.<final>`, `@fail` and `@timeout`. */
export function isReservedEventType(type: string): boolean {
  return (RESERVED_EVENT_TYPES as readonly string[]).includes(type) || DONE_FOR_FINAL.test(type);
}

/**
 * `ConsentGrantedEvent` -> `CONSENT_GRANTED`: words split at case changes, upper-cased and joined
 * with `_`; a trailing `Event` word is dropped first (the spec's rule for classes without getType).
 */
export function deriveEventType(name: string): string {
  const base =
    name.endsWith('Event') && name.length > 'Event'.length ? name.slice(0, -'Event'.length) : name;
  return constantCase(base);
}

function assertUserEventType(type: string, origin: string): string {
  if (!isUserEventType(type)) {
    throw new InvalidEventDefinitionException(
      `Event type '${type}' of ${origin} is not a user event type: use SCREAMING_SNAKE_CASE ` +
        `(e.g. 'ORDER_SUBMITTED'); '@' names are reserved for the interpreter.`,
      { key: type },
    );
  }
  return type;
}

/** What `defineEvent` accepts. */
export interface EventInput<TType extends string, TPayload extends ZodType | undefined> {
  /** Explicit type; wins over the one derived from `name`. */
  type?: TType;
  /** A class-like name (`OrderSubmittedEvent`) the type is derived from when `type` is absent. */
  name?: string;
  /** zod schema of the event payload. */
  payload?: TPayload;
  /**
   * Largest payload in bytes (serialised JSON) an endpoint of this event accepts (413 above
   * it); default: the router's `payloadLimit` (64 KiB).
   */
  payloadLimit?: number;
}

/**
 * Defines an event: its type (explicit, or derived from `name`) and optionally a zod schema of its
 * payload. Throws InvalidEventDefinitionException for a missing, malformed or reserved type.
 *
 * @example defineEvent({ type: 'SUBMIT', payload: z.object({ amount: z.number() }) })
 */
export function defineEvent<
  TType extends string = string,
  TPayload extends ZodType | undefined = undefined,
>(input: EventInput<TType, TPayload>): EventDefinition<TType> & { readonly payload: TPayload } {
  const type = input.type ?? (input.name === undefined ? undefined : deriveEventType(input.name));
  if (type === undefined) {
    throw new InvalidEventDefinitionException(
      'defineEvent needs a `type` or a `name` to derive it from: try defineEvent({ type: "ORDER_SUBMITTED" }).',
    );
  }
  assertUserEventType(type, input.name === undefined ? 'defineEvent' : `event '${input.name}'`);
  assertPayloadLimit(input.payloadLimit, type);
  return Object.freeze({
    kind: 'event',
    type: type as TType,
    payload: input.payload as TPayload,
    ...(input.payloadLimit === undefined ? {} : { payloadLimit: input.payloadLimit }),
  });
}

/**
 * Base class of the class form of events. The type is `static type` when given, else derived from
 * the class name (`ConsentGrantedEvent` -> `CONSENT_GRANTED`).
 *
 * @example class ConsentGrantedEvent extends MachineEvent { static payload = z.object({ at: z.string() }) }
 */
export abstract class MachineEvent {
  /** Explicit event type; wins over the one derived from the class name. */
  static readonly type?: string;
  /** zod schema of the event payload. */
  static readonly payload?: ZodType;
  /** Largest payload in bytes an endpoint of this event accepts; see {@link EventInput}. */
  static readonly payloadLimit?: number;
}

function isEventClass(ref: unknown): ref is EventClass {
  return (
    typeof ref === 'function' && (ref as { prototype?: unknown }).prototype instanceof MachineEvent
  );
}

function isEventDefinition(ref: unknown): ref is EventDefinition {
  return typeof ref === 'object' && ref !== null && (ref as { kind?: unknown }).kind === 'event';
}

/** True for anything `eventTypeOf` accepts. */
export function isEventReference(ref: unknown): ref is EventReference {
  return typeof ref === 'string' || isEventDefinition(ref) || isEventClass(ref);
}

/**
 * The event type of a type string, an event definition or an event class. Strings are returned as
 * they are (reserved names included); definitions and classes must carry a user event type.
 */
export function eventTypeOf(ref: EventReference): string {
  if (typeof ref === 'string') return ref;
  if (isEventDefinition(ref)) return ref.type;
  if (isEventClass(ref))
    return assertUserEventType(ref.type ?? deriveEventType(ref.name), `class '${ref.name}'`);
  throw new InvalidEventDefinitionException(
    `Expected an event type, an event definition or a MachineEvent class, got ${describe(ref)}.`,
  );
}

/** The normalized definition of any event reference (a bare string gets no payload schema). */
export function toEventDefinition(ref: EventReference): EventDefinition {
  if (isEventDefinition(ref)) return ref;
  if (isEventClass(ref)) {
    const type = eventTypeOf(ref);
    assertPayloadLimit(ref.payloadLimit, type);
    return Object.freeze({
      kind: 'event',
      type,
      payload: ref.payload,
      ...(ref.payloadLimit === undefined ? {} : { payloadLimit: ref.payloadLimit }),
    });
  }
  return Object.freeze({ kind: 'event', type: eventTypeOf(ref), payload: undefined });
}

function assertPayloadLimit(limit: unknown, type: string): void {
  if (limit === undefined || (Number.isSafeInteger(limit) && (limit as number) > 0)) return;
  throw new InvalidEventDefinitionException(
    `Event '${type}': payloadLimit must be a positive whole number of bytes, got ${String(limit)}.`,
    { key: 'payloadLimit' },
  );
}

function describe(value: unknown): string {
  if (typeof value === 'function') return `function '${value.name || 'anonymous'}'`;
  return value === null ? 'null' : typeof value;
}
