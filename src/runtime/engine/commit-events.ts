/**
 * The post-commit notification: after every committed step, each instance it wrote is
 * announced with its sequence number and snapshot, so reads and streams can follow instances
 * without polling the store. Listeners run synchronously after the commit, in subscription
 * order; one that throws is reported and does not affect the writer or other listeners.
 */
import type { SendEffect } from '../interpreter/effects.js';
import type { HistoryRecord, MachineSnapshot } from '../interpreter/types.js';

/** One instance written by a committed step. */
export interface CommitEvent {
  /** Instance id (root event id). */
  instanceId: string;
  /** Definition id. */
  machineId: string;
  /** Sequence number of the last history record written (the snapshot's). */
  sequence: number;
  /** The committed snapshot. */
  snapshot: MachineSnapshot;
  /** The history records this commit wrote for the instance, in order. */
  history: readonly HistoryRecord[];
  /**
   * The events this instance's step sent to other instances (`sendTo`, `sendToParent`,
   * `dispatchTo`, `dispatchToParent`): the synchronous ones in the order made, then the
   * asynchronous ones; absent when it sent none.
   * Made by the step, not yet delivered: a send the target refuses is still listed.
   */
  sends?: readonly SendEffect[];
}

/** Receives commit events. */
export type CommitListener = (event: CommitEvent) => void;

/** The subscribers of one runtime. */
export class CommitListeners {
  readonly #listeners = new Set<CommitListener>();
  readonly #onError: (error: unknown, context: string) => void;

  constructor(onError: (error: unknown, context: string) => void) {
    this.#onError = onError;
  }

  /** Adds a listener; returns the function that removes it. */
  subscribe(listener: CommitListener): () => void {
    // A wrapper per subscription: the same function subscribed twice is called twice.
    const entry: CommitListener = (event) => listener(event);
    this.#listeners.add(entry);
    return () => {
      this.#listeners.delete(entry);
    };
  }

  /** True when someone listens (callers skip building events otherwise). */
  get active(): boolean {
    return this.#listeners.size > 0;
  }

  emit(event: CommitEvent): void {
    for (const listener of this.#listeners) {
      try {
        listener(event);
      } catch (error) {
        this.#onError(error, `commit listener (instance ${event.instanceId})`);
      }
    }
  }
}
