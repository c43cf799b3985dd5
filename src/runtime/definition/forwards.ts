/**
 * Definition-time normalization of delegating states' `forward` entries (spec "Forwarding",
 * "Filtering and validation" rule 6 and 7). Pure: every problem is reported as an issue.
 */
import { InvalidStateConfigException, type MachineRoutesError } from '../errors.js';
import { ENDPOINT_KEYS, normalizeCommonOptions } from './endpoint-options.js';
import {
  bareEvent,
  endpointIssue,
  isPlainObject,
  resolveEventReference,
} from './endpoint-references.js';
import type {
  EndpointDefinition,
  EventDefinition,
  EventReference,
  ForwardDefinition,
} from './types.js';
import type { BehaviorConfig } from './behavior-types.js';
import type { ForwardConfig, ForwardOptions } from './endpoint-config.js';

/** A delegating state as defineMachine found it. */
export interface DelegatingStateInput {
  /** Full state id (`parent.processing`). */
  stateId: string;
  /** Dotted state path without the machine id (`processing`). */
  path: string;
  forward: ForwardConfig | undefined;
  /** The child machine's normalized events and definition id. */
  child: {
    id: string;
    events: ReadonlyMap<string, EventDefinition>;
    eventTypes: ReadonlySet<string>;
  } | null;
}

/** What forward normalization reads of the machine. */
export interface ForwardNormalizationInput {
  machineId: string;
  behavior: BehaviorConfig;
  /** Event definitions by type from `behavior.events`. */
  events: ReadonlyMap<string, EventDefinition>;
  delegatingStates: readonly DelegatingStateInput[];
}

const FORWARD_KEYS = [...ENDPOINT_KEYS, 'child_event'];

// forwards

/** Normalizes every delegating state's `forward` entries against the parent's endpoints. */
export function normalizeForwards(
  input: ForwardNormalizationInput,
  endpoints: readonly EndpointDefinition[],
  issues: MachineRoutesError[],
): ForwardDefinition[] {
  const { machineId } = input;
  const endpointTypes = new Set(endpoints.map((endpoint) => endpoint.eventType));
  const declaredBy = new Map<string, string>();
  const result: ForwardDefinition[] = [];

  for (const state of input.delegatingStates) {
    if (state.forward === undefined) continue;
    // Without a resolvable child there is nothing to validate against; defineMachine reports
    // the delegation problem itself.
    if (state.child === null) continue;
    const child = state.child;
    for (const entry of flattenForwardEntries(state, machineId, issues)) {
      const { parentType, options, path } = entry;
      const childRef = options.child_event ?? parentType;
      const childResolved = resolveEventReference(childRef);
      if (childResolved === null) {
        issues.push(
          endpointIssue(
            `State '${state.stateId}' forward entry '${parentType}' has an invalid child_event. Use an event type or event definition of '${child.id}'.`,
            machineId,
            path,
            parentType,
          ),
        );
        continue;
      }
      const childType = childResolved.type;
      const conflict = forwardConflict(
        state.stateId,
        parentType,
        endpointTypes,
        input.events,
        declaredBy,
      );
      if (conflict !== null) {
        issues.push(endpointIssue(conflict, machineId, path, parentType));
        continue;
      }
      declaredBy.set(parentType, state.stateId);
      if (!child.eventTypes.has(childType)) {
        issues.push(
          endpointIssue(
            `State '${state.stateId}' forwards '${parentType}' as undefined child event type \`${childType}\`: ` +
              `no state of child machine '${child.id}' handles it. Fix 'child_event' or handle '${childType}' in '${child.id}'.`,
            machineId,
            path,
            parentType,
          ),
        );
        continue;
      }
      if (
        options.uri !== undefined &&
        (typeof options.uri !== 'string' || !options.uri.startsWith('/'))
      ) {
        issues.push(
          new InvalidStateConfigException(
            `State '${state.path}' forward entry '${parentType}' uri must start with '/'.`,
            { machine: machineId, path, key: 'uri' },
          ),
        );
        continue;
      }
      const common = normalizeCommonOptions(options, FORWARD_KEYS, {
        machineId,
        eventType: parentType,
        path,
        behavior: input.behavior,
        issues,
        unknownKeyIssue: (keys) =>
          new InvalidStateConfigException(
            `State '${state.path}' forward entry '${parentType}' has unknown keys: ${keys.join(', ')}. Allowed: ${FORWARD_KEYS.join(', ')}.`,
            { machine: machineId, path, key: keys[0] },
          ),
      });
      if (common === null) continue;
      result.push({
        parentEventType: parentType,
        childEventType: childType,
        childEvent: child.events.get(childType) ?? childResolved.definition ?? bareEvent(childType),
        stateId: state.stateId,
        childMachineId: child.id,
        ...common,
        // The spec's default is null ("include"): the flag is honoured, unlike the original (§4.6).
        availableEvents: options.available_events ?? true,
      });
    }
  }
  return result;
}

interface ForwardEntry {
  parentType: string;
  options: ForwardOptions;
  path: string;
}

/** Expands the three forward formats (list, rename map, options map). */
function flattenForwardEntries(
  state: DelegatingStateInput,
  machineId: string,
  issues: MachineRoutesError[],
): ForwardEntry[] {
  const entries: ForwardEntry[] = [];
  (state.forward ?? []).forEach((item, index) => {
    const path = `${state.path}.forward[${index}]`;
    if (isPlainObject(item) && item.kind !== 'event') {
      for (const [parentType, value] of Object.entries(item)) {
        const itemPath = `${path}.${parentType}`;
        if (isPlainObject(value) && value.kind !== 'event') {
          entries.push({ parentType, options: value as ForwardOptions, path: itemPath });
        } else {
          // Rename: the parent receives `parentType`, the child gets `value`.
          entries.push({
            parentType,
            options: { child_event: value as EventReference },
            path: itemPath,
          });
        }
      }
      return;
    }
    const resolved = resolveEventReference(item as EventReference);
    if (resolved === null) {
      issues.push(
        endpointIssue(
          `State '${state.stateId}' has an invalid forward entry at ${path}: use an event type, an event definition or a { PARENT: CHILD | options } map.`,
          machineId,
          path,
        ),
      );
      return;
    }
    entries.push({
      parentType: resolved.type,
      options: { child_event: item as EventReference },
      path,
    });
  });
  return entries;
}

/** Rule 6/7: a forwarded type may be declared once, and nowhere else in the parent. */
function forwardConflict(
  stateId: string,
  type: string,
  endpointTypes: ReadonlySet<string>,
  parentEvents: ReadonlyMap<string, EventDefinition>,
  declaredBy: ReadonlyMap<string, string>,
): string | null {
  if (endpointTypes.has(type)) {
    return (
      `State '${stateId}' forwards '${type}' which is also declared in parent's endpoints. ` +
      `Remove '${type}' from endpoints — forward is the single source of truth for child events.`
    );
  }
  if (parentEvents.has(type)) {
    return (
      `State '${stateId}' forwards '${type}' which is also declared in parent's behavior.events. ` +
      `Remove '${type}' from behavior.events — forward auto-discovers child events.`
    );
  }
  if (declaredBy.has(type)) {
    const other = declaredBy.get(type);
    return (
      `Forward event '${type}' is declared in multiple delegating states ('${other}' and '${stateId}'). ` +
      `Use rename syntax to disambiguate (e.g., { CANCEL_PAYMENT: 'CANCEL' }).`
    );
  }
  return null;
}
