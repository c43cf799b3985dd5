/**
 * Small pure helpers shared by the endpoint and forward normalizers: event references, the
 * issue they report, and value descriptions for messages.
 */
import { InvalidEndpointDefinitionException } from '../errors.js';
import { eventTypeOf, isEventReference, toEventDefinition } from './event-type.js';
import type { EventDefinition } from './types.js';

/**
 * The event type of a reference (type string, event definition or event class), or `null`
 * when it is none of those. Shared with the router's list options (`only`, `machineIdFor`...).
 */
export function eventTypeOfReference(ref: unknown): string | null {
  return resolveEventReference(ref)?.type ?? null;
}

/** The event type of a reference and, for definitions and classes, its definition. */
export function resolveEventReference(
  ref: unknown,
): { type: string; definition: EventDefinition | null } | null {
  if (ref === '' || !isEventReference(ref)) return null;
  try {
    return {
      type: eventTypeOf(ref),
      definition: typeof ref === 'string' ? null : toEventDefinition(ref),
    };
  } catch {
    // A class whose derived type is not SCREAMING_SNAKE: reported as an invalid entry.
    return null;
  }
}

export function bareEvent(type: string): EventDefinition {
  return { kind: 'event', type, payload: undefined };
}

export function endpointIssue(
  message: string,
  machine: string,
  path: string,
  key?: string,
): InvalidEndpointDefinitionException {
  return new InvalidEndpointDefinitionException(message, {
    machine,
    path,
    ...(key === undefined ? {} : { key }),
  });
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function describeValue(value: unknown): string {
  if (typeof value === 'function') return value.name || 'anonymous function';
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
