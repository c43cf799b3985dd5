/**
 * The operator's repairs (docs/operations.md "Repairing"). An event an operator sends goes
 * through the runtime's `send`, so through the engine's one locked step like any request: it
 * waits for a step in flight (never interleaves with it) and its history records name the
 * operator (`actor: operator:<who>`). Releasing a lock takes the lock row as any writer
 * would, which only succeeds when the row is expired or its holder is dead, then frees it.
 */
import { ulid } from '../../ids.js';
import { InvalidOperationQueryException, MachineAlreadyRunningException } from '../../errors.js';
import type { EventObject } from '../../definition/types.js';
import type { MachineDefinition } from '../../definition/machine-definition.js';
import type { MachineRuntime } from '../machine-runtime.js';
import type { InstanceResult } from '../../persistence/types.js';

/** Who acts, and how long an action waits for a step in flight. */
export interface OperatorOptions {
  /** The operator's name, recorded as `operator:<who>` in history and lock rows. */
  who: string;
  /** Milliseconds to wait for the instance's lock (default 5000). */
  waitMs?: number;
}

/** What `releaseLock` did. */
export interface ReleasedLock {
  /** The row that was freed, `null` when there was none. */
  released: { ownerId: string; context: string | null; expiresAt: string } | null;
}

/** The actor of an operator's records. */
export function operatorActor(who: string): string {
  if (who.trim() === '') {
    throw new InvalidOperationQueryException(
      "An operator action needs the operator's name (who): pass a non-empty name, e.g. your login.",
      { key: 'who' },
    );
  }
  return `operator:${who}`;
}

/** Sends `event` to instance `id` as the operator, waiting for a step in flight. */
export async function sendAsOperator(
  runtime: MachineRuntime,
  definition: MachineDefinition,
  id: string,
  event: EventObject,
  options: OperatorOptions,
): Promise<InstanceResult> {
  return runtime.send(
    definition,
    id,
    { ...event, actor: operatorActor(options.who) },
    { lockWaitMs: options.waitMs ?? 5000 },
  );
}

/**
 * Frees the lock of instance `id` when its row is expired or its holder is dead: taking it
 * over is the store's own test of both. A live holder's lock is refused with
 * `MachineAlreadyRunningException` naming it.
 */
export async function releaseLock(
  runtime: MachineRuntime,
  id: string,
  options: OperatorOptions,
): Promise<ReleasedLock> {
  const store = runtime.store;
  const context = operatorActor(options.who);
  const before = await store.readLock(id);
  if (before === null) return { released: null };
  const ownerId = ulid();
  if (!(await store.tryAcquireLock({ rootEventId: id, ownerId, ttlMs: 5000, context }))) {
    throw new MachineAlreadyRunningException(
      `The lock of machine '${id}' is held by ${before.ownerId} (${before.context ?? 'unknown'}) until ${before.expiresAt}, and its holder is alive: wait for it to finish or expire.`,
      await store.load(id),
      { key: id },
    );
  }
  await store.releaseLock(id, ownerId);
  return {
    released: { ownerId: before.ownerId, context: before.context, expiresAt: before.expiresAt },
  };
}

/** What `retry` did: the failed jobs it put back in the queue. */
export interface RetriedJobs {
  /** Each job retried (`retried: false`: it was no longer failed when put back). */
  jobs: { id: string; name: string; retried: boolean }[];
}

/** What `fire` did. */
export interface FiredTimer {
  /** The timer fired and the due time it was fired as. */
  timer: { key: string; eventType: string; dueAt: string };
  /** Fires delivered (the timer's, and any other timer of the instance due before it). */
  delivered: number;
}
