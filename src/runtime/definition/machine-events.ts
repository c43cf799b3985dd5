/**
 * The events of a machine: the user event types its states handle and `behavior.events`
 * normalized into definitions, one per handled type.
 */
import { InvalidEventDefinitionException } from '../errors.js';
import type { StateTree } from './build-state-tree.js';
import { eventTypeOf, isEventReference, isUserEventType, toEventDefinition } from './event-type.js';
import type { IssueCollector } from './issues.js';
import type { EventDefinition } from './types.js';
import type { BehaviorConfig } from './behavior-types.js';
import { isPlainObject } from './validate-config.js';

/**
 * The user event types the states declare under `on`, read from the config as written: a
 * transition that failed to normalize (an unresolvable target, say) is reported once, where it
 * is, and its event still counts as handled, so endpoints and route filters naming it do not
 * report the same mistake again.
 */
export function collectEventTypes(tree: StateTree): Set<string> {
  const types = new Set<string>();
  for (const node of tree.nodes) {
    const on = isPlainObject(node.config.on) ? Object.keys(node.config.on) : [];
    for (const type of [...node.on.keys(), ...on]) if (isUserEventType(type)) types.add(type);
  }
  return types;
}

/** `behavior.events` by type, plus a payload-less definition for every handled type without one. */
export function normalizeEvents(
  behavior: BehaviorConfig,
  eventTypes: ReadonlySet<string>,
  issues: IssueCollector,
): Map<string, EventDefinition> {
  const events = new Map<string, EventDefinition>();
  for (const [key, reference] of Object.entries(behavior.events ?? {})) {
    const where = { path: '', key: `events.${key}` };
    if (!isEventReference(reference)) {
      issues.add(
        InvalidEventDefinitionException,
        where,
        `behavior.events.${key} is not an event definition.`,
        `Use defineEvent({ type: '${key}', payload }) or a MachineEvent class.`,
      );
      continue;
    }
    let type: string;
    try {
      type = eventTypeOf(reference);
    } catch (error) {
      issues.add(InvalidEventDefinitionException, where, (error as Error).message);
      continue;
    }
    if (!isUserEventType(key) || type !== key) {
      issues.add(
        InvalidEventDefinitionException,
        where,
        `behavior.events key '${key}' holds an event of type '${type}'.`,
        `Key it by its type: events: { ${type}: ... }.`,
      );
      continue;
    }
    events.set(type, toEventDefinition(reference));
  }
  for (const type of eventTypes) if (!events.has(type)) events.set(type, toEventDefinition(type));
  return events;
}
