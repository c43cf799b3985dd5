/**
 * Definition-time normalization of `endpoints` and of delegating states' `forward` entries
 * (spec "Endpoint definition formats", "Forwarding", "Filtering and validation" rule 6 and 7).
 *
 * Pure: takes what defineMachine found, returns normalized definitions plus every problem
 * found (never throws), so `check` can report all of a machine's problems at once.
 */
import type { MachineRoutesError } from '../errors.js';
import { ENDPOINT_KEYS, normalizeCommonOptions } from './endpoint-options.js';
import {
  bareEvent,
  endpointIssue,
  isPlainObject,
  resolveEventReference,
} from './endpoint-references.js';
import { normalizeForwards, type ForwardNormalizationInput } from './forwards.js';
import type { EndpointDefinition, EventReference, ForwardDefinition } from './types.js';
import type { EndpointConfig, EndpointOptions } from './endpoint-config.js';

export type { DelegatingStateInput } from './forwards.js';
export { eventTypeOfReference } from './endpoint-references.js';

export interface EndpointNormalizationInput extends ForwardNormalizationInput {
  endpoints: readonly EndpointConfig[] | undefined;
  /** User-sendable event types handled somewhere in the state tree (keys of `on`). */
  eventTypes: ReadonlySet<string>;
}

export interface EndpointNormalizationResult {
  endpoints: EndpointDefinition[];
  forwards: ForwardDefinition[];
  issues: MachineRoutesError[];
}

/**
 * Normalizes `endpoints` (the four mixable formats) and every delegating state's `forward`
 * entries, resolving each option to its default (POST, generated URI, status 200,
 * available_events true).
 */
export function normalizeEndpoints(input: EndpointNormalizationInput): EndpointNormalizationResult {
  const issues: MachineRoutesError[] = [];
  const endpoints = normalizeEndpointList(input, issues);
  const forwards = normalizeForwards(input, endpoints, issues);
  return { endpoints, forwards, issues };
}

// ---------------------------------------------------------------------------------------------
// endpoints

interface EndpointEntry {
  ref: EventReference;
  options: string | EndpointOptions | undefined;
  /** Config path for messages: `endpoints[2]`, `endpoints[1].APPROVE`. */
  path: string;
}

function normalizeEndpointList(
  input: EndpointNormalizationInput,
  issues: MachineRoutesError[],
): EndpointDefinition[] {
  const { machineId } = input;
  const result: EndpointDefinition[] = [];
  const seen = new Set<string>();
  for (const entry of flattenEndpointEntries(input.endpoints ?? [], machineId, issues)) {
    const resolved = resolveEventReference(entry.ref);
    if (resolved === null) {
      issues.push(
        endpointIssue(
          `Endpoint entry at ${entry.path} of machine '${machineId}' is not an event type, an event definition or an event class.`,
          machineId,
          entry.path,
        ),
      );
      continue;
    }
    const { type } = resolved;
    if (!input.eventTypes.has(type)) {
      issues.push(
        endpointIssue(
          `Endpoint references undefined event type \`${type}\` in machine '${machineId}'. ` +
            `Ensure a state handles it under 'on' (and list its payload under the behavior 'events').`,
          machineId,
          entry.path,
          type,
        ),
      );
      continue;
    }
    if (seen.has(type)) {
      issues.push(
        endpointIssue(
          `Endpoint \`${type}\` is declared more than once in machine '${machineId}'. Keep one entry per event type.`,
          machineId,
          entry.path,
          type,
        ),
      );
      continue;
    }
    seen.add(type);
    const options: EndpointOptions =
      typeof entry.options === 'string' ? { uri: entry.options } : (entry.options ?? {});
    const common = normalizeCommonOptions(options, ENDPOINT_KEYS, {
      machineId,
      eventType: type,
      path: entry.path,
      behavior: input.behavior,
      issues,
      unknownKeyIssue: (keys) =>
        endpointIssue(
          `Endpoint \`${type}\` of machine '${machineId}' has unknown keys: ${keys.join(', ')}. Allowed: ${ENDPOINT_KEYS.join(', ')}.`,
          machineId,
          entry.path,
          type,
        ),
    });
    if (common === null) continue;
    result.push({
      eventType: type,
      event: input.events.get(type) ?? resolved.definition ?? bareEvent(type),
      ...common,
      availableEvents: options.available_events ?? true,
    });
  }
  return result;
}

/** Expands the four formats into one `{ ref, options }` entry per event. */
function flattenEndpointEntries(
  configs: readonly EndpointConfig[],
  machineId: string,
  issues: MachineRoutesError[],
): EndpointEntry[] {
  const entries: EndpointEntry[] = [];
  if (!Array.isArray(configs as unknown)) {
    issues.push(
      endpointIssue(
        `'endpoints' of machine '${machineId}' must be a list, e.g. ['SUBMIT', { APPROVE: '/approve' }].`,
        machineId,
        'endpoints',
      ),
    );
    return entries;
  }
  configs.forEach((config, index) => {
    const path = `endpoints[${index}]`;
    if (Array.isArray(config)) {
      // Event-definition key: [EventRef, uri | options].
      const [ref, options] = config as readonly [EventReference, string | EndpointOptions];
      if (config.length !== 2 || !(typeof options === 'string' || isPlainObject(options))) {
        issues.push(
          endpointIssue(
            `Endpoint entry at ${path} of machine '${machineId}' must be a pair [event, uri | options].`,
            machineId,
            path,
          ),
        );
        return;
      }
      entries.push({ ref, options, path });
    } else if (isPlainObject(config) && config.kind !== 'event') {
      // String map or options map, keyed by event type.
      for (const [type, options] of Object.entries(config)) {
        entries.push({
          ref: type,
          options: options as string | EndpointOptions,
          path: `${path}.${type}`,
        });
      }
    } else {
      entries.push({ ref: config as EventReference, options: undefined, path });
    }
  });
  return entries;
}
