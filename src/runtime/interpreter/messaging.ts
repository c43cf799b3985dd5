/**
 * Messaging between machines (spec "Events" rule 4): `sendTo`, `dispatchTo`, `sendToParent`
 * and `dispatchToParent` as handed to behaviors. Behaviors are synchronous and pure, so each
 * call only records a `send` effect; the shell delivers it after the macrostep commits.
 */
import type { EventObject } from '../definition/types.js';
import type { MachineTarget } from '../definition/behavior-types.js';
import { NoParentMachineException } from '../errors.js';
import type { MacrostepEffect, SendEffect } from './effects.js';

/** The messaging functions of `BehaviorArgs`. */
export interface MessagingFunctions {
  sendTo(target: MachineTarget, event: EventObject | string): void;
  dispatchTo(target: MachineTarget, event: EventObject | string): void;
  sendToParent(event: EventObject | string): void;
  dispatchToParent(event: EventObject | string): void;
}

/** The sending instance, as the messaging functions need it. */
export interface MessagingSource {
  readonly machineId: string;
  readonly id: string;
  /** The parent instance, when this one is a child (from its snapshot). */
  readonly parent: MachineTarget | null;
  /** Where `send` effects go (the macrostep's effect list). */
  readonly effects: MacrostepEffect[];
  /** Actor of the triggering event: messages inherit it unless they set their own. */
  readonly actor: string | null;
}

/**
 * Builds the four functions for one macrostep. Calls validate their arguments right away, so a
 * mistake fails the behavior that made it rather than a job later.
 *
 * The functions are module-level and bound to `source`: a macrostep makes them once, and
 * binding is several times cheaper than making closures (which the dev loader also wraps to keep
 * their names); this runs on the hot path of every event that runs a behavior.
 */
export function createMessaging(source: MessagingSource): MessagingFunctions {
  return {
    sendTo: sendToImpl.bind(source),
    dispatchTo: dispatchToImpl.bind(source),
    sendToParent: sendToParentImpl.bind(source),
    dispatchToParent: dispatchToParentImpl.bind(source),
  };
}

function sendToImpl(
  this: MessagingSource,
  target: MachineTarget,
  event: EventObject | string,
): void {
  pushSend(this, target, event, 'sync');
}

function dispatchToImpl(
  this: MessagingSource,
  target: MachineTarget,
  event: EventObject | string,
): void {
  pushSend(this, target, event, 'async');
}

function sendToParentImpl(this: MessagingSource, event: EventObject | string): void {
  pushSend(this, parentOf(this, 'sendToParent'), event, 'sync');
}

function dispatchToParentImpl(this: MessagingSource, event: EventObject | string): void {
  pushSend(this, parentOf(this, 'dispatchToParent'), event, 'async');
}

function pushSend(
  source: MessagingSource,
  target: MachineTarget,
  event: EventObject | string,
  mode: 'sync' | 'async',
): void {
  if (
    typeof target !== 'object' ||
    target === null ||
    typeof target.machineId !== 'string' ||
    typeof target.id !== 'string' ||
    target.id === ''
  ) {
    throw new TypeError(
      `Machine '${source.machineId}': ${mode === 'sync' ? 'sendTo' : 'dispatchTo'} needs a target { machineId, id }, got ${JSON.stringify(target)}.`,
    );
  }
  const effect: SendEffect = {
    kind: 'send',
    target: { machineId: target.machineId, id: target.id },
    event: toEvent(event, source.actor),
    mode,
    source: { machineId: source.machineId, id: source.id },
  };
  source.effects.push(effect);
}

function parentOf(source: MessagingSource, name: string): MachineTarget {
  if (source.parent === null) {
    throw new NoParentMachineException(
      `Machine '${source.machineId}' (instance '${source.id}') called ${name} but has no parent machine. ` +
        `Only a machine started by a delegating state ('machine' key) has a parent; use sendTo for others.`,
      { machine: source.machineId, key: name },
    );
  }
  return source.parent;
}

function toEvent(event: EventObject | string, actor: string | null): EventObject {
  const result: EventObject = typeof event === 'string' ? { type: event } : { ...event };
  if (typeof result.type !== 'string' || result.type === '' || result.type.startsWith('@')) {
    throw new TypeError(
      `A sent event needs a user event type, got ${JSON.stringify(result.type)}.`,
    );
  }
  if (result.actor === undefined) result.actor = actor;
  // Effects are plain data (stored in job payloads): no shared references to live context.
  if (result.payload !== undefined) result.payload = structuredClone(result.payload);
  return result;
}

/** Messaging for places that may not send (output behaviors): every call throws. */
export const NO_MESSAGING: MessagingFunctions = Object.freeze({
  sendTo: refuse,
  dispatchTo: refuse,
  sendToParent: refuse,
  dispatchToParent: refuse,
});

function refuse(): never {
  throw new TypeError(
    'Output behaviors describe a state and cannot send events; send from an action instead.',
  );
}
