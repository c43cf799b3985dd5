/**
 * Which sends may skip the lock row (docs/persistence.md "Locks", "Lock-free sends"): on a store
 * with `lockFreeSends` (SQLite, PostgreSQL), an event whose transition is known to be quick runs under this
 * process's in-process slot only, and its commit checks that nobody took the lock meanwhile
 * (`CommitRequest.lockFree`). One write transaction per event instead of two.
 *
 * "Known to be quick" is learned per machine and event type, in this process: the last
 * transition of that type took at most {@link LOCK_FREE_MAX_MS}. The first event of a type, and
 * the next one after a slow transition, take the lock row, so a long transition is announced to
 * other processes (their sends answer 423 at once, reads say `isProcessing`) as before.
 */
import type { MachineDefinition } from '../definition/machine-definition.js';

/**
 * The longest transition, in ms, after which the next event of its type may still run
 * lock-free: a few scheduler slices, so a quick transition preempted on a busy machine stays
 * quick. For that long another process's send is not refused at arrival but wins at commit
 * (this one answers 423); a transition worth announcing with a lock row takes far longer.
 */
export const LOCK_FREE_MAX_MS = 10;

/** Per machine and event type: whether its last transition in this process was quick. */
export class TransitionSpeeds {
  readonly #quick = new WeakMap<MachineDefinition, Map<string, boolean>>();

  /** True when the last transition of `eventType` on `definition` took at most the limit. */
  isQuick(definition: MachineDefinition, eventType: string): boolean {
    return this.#quick.get(definition)?.get(eventType) === true;
  }

  /** Records how long a transition of `eventType` took (ms). */
  record(definition: MachineDefinition, eventType: string, ms: number): void {
    let types = this.#quick.get(definition);
    if (types === undefined) {
      types = new Map();
      this.#quick.set(definition, types);
    }
    types.set(eventType, ms <= LOCK_FREE_MAX_MS);
  }
}
