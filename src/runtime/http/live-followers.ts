/**
 * The state streams of one route, grouped by instance: the streams of an instance share one
 * commit-feed subscription (one watch lease on PostgreSQL), one read per commit notice and one
 * formatted message per state, so a subscriber costs its own `StateStream` and connection only
 * (bench/scale/subscribers.ts; it was a watch of its own: closures, a promise chain, a feed
 * listener, and a `JSON.stringify` of the envelope per subscriber and commit).
 *
 * A stream reads the instance itself when it starts (an unknown id throws before anything is
 * watched), then takes whichever is newer of that read and the group's latest state; the
 * group's later states follow. Commits landing between the group's first read and its
 * subscription are caught by one more read once the subscription is in effect.
 */
import type { MachineDefinitionBase } from '../definition/types.js';
import type { MachineInstances } from '../engine/machine-instances.js';
import type { InstanceRead } from '../persistence/types.js';
import { ATTR } from '../telemetry/attributes.js';
import { instruments } from '../telemetry/metrics.js';
import type { StateStream, StateStreamOwner } from './state-stream.js';
import { sharedRead } from './watch-instance.js';

/** The SSE message of a state (`id:`, `event:`, `data:`). */
export type FormatState = (read: InstanceRead) => string | Promise<string>;

/** A state and its message, formatted on first use and once only. */
class Formatted {
  readonly sequence: number;
  readonly final: boolean;
  #read: InstanceRead | null;
  #message: Promise<string> | null = null;

  constructor(read: InstanceRead) {
    this.sequence = read.snapshot.sequence;
    this.final = read.snapshot.status === 'done';
    this.#read = read;
  }

  message(format: FormatState): Promise<string> {
    if (this.#message === null) {
      const read = this.#read!;
      this.#read = null;
      try {
        this.#message = Promise.resolve(format(read));
      } catch (error) {
        this.#message = Promise.reject(error as Error);
      }
    }
    return this.#message;
  }
}

/** The streams of one route, by instance id. */
export class LiveFollowers<D extends MachineDefinitionBase> {
  readonly instances: MachineInstances<D>;
  readonly definition: D;
  readonly format: FormatState;
  readonly groups = new Map<string, InstanceFollowers<D>>();
  readonly attributes: Record<string, string>;

  constructor(instances: MachineInstances<D>, definition: D, format: FormatState) {
    this.instances = instances;
    this.definition = definition;
    this.format = format;
    this.attributes = { [ATTR.machine]: definition.id };
  }

  /**
   * Starts `stream` on instance `id`: its current state (unless `seen`, the client's
   * `Last-Event-ID`, names it already), then every later committed state. Throws
   * `MachineNotFoundException` for an unknown id, before anything is watched.
   */
  async follow(
    id: string,
    seen: number,
    stream: StateStream,
    onError: (error: unknown) => void,
  ): Promise<void> {
    const read = await this.instances.read(this.definition, id);
    const first = new Formatted(read);
    // A reconnecting client gets only what is newer than what it has; a Last-Event-ID newer
    // than the instance (not one of its states) skips only the current state.
    stream.skip(Math.min(seen, first.sequence));
    if (first.final) {
      // Nothing will follow: no watch.
      if (first.sequence > seen) this.#offer(stream, first, onError);
      else stream.finish();
      return;
    }
    let group = this.groups.get(id);
    if (group === undefined) {
      group = new InstanceFollowers(this, id, first, onError);
      this.groups.set(id, group);
    }
    group.add(stream);
    try {
      await group.ready;
    } catch (error) {
      stream.destroy();
      throw error;
    }
    const latest = group.latest.sequence >= first.sequence ? group.latest : first;
    if (latest.sequence > seen || latest.sequence > first.sequence)
      this.#offer(stream, latest, onError);
  }

  #offer(stream: StateStream, state: Formatted, onError: (error: unknown) => void): void {
    state
      .message(this.format)
      .then((message) => stream.offer(state.sequence, message, state.final), onError);
  }
}

/** The streams of one instance: one subscription, one read per notice, one message per state. */
class InstanceFollowers<D extends MachineDefinitionBase> implements StateStreamOwner {
  readonly #followers: LiveFollowers<D>;
  readonly #id: string;
  readonly #onError: (error: unknown) => void;
  readonly #streams = new Set<StateStream>();
  /** The newest state read (and delivered, once formatted). */
  latest: Formatted;
  /** Resolves once every later commit is sure to be delivered. */
  readonly ready: Promise<void>;
  #chain: Promise<void> = Promise.resolve();
  #unsubscribe: (() => void) | null = null;
  #closed = false;

  constructor(
    followers: LiveFollowers<D>,
    id: string,
    first: Formatted,
    onError: (error: unknown) => void,
  ) {
    this.#followers = followers;
    this.#id = id;
    this.#onError = onError;
    this.latest = first;
    this.ready = this.#subscribe();
    this.ready.catch(() => this.#close());
  }

  add(stream: StateStream): void {
    this.#streams.add(stream);
    instruments().liveSubscribers.add(1, this.#followers.attributes);
    stream.setOwner(this);
  }

  leave(stream: StateStream): void {
    if (!this.#streams.delete(stream)) return;
    instruments().liveSubscribers.add(-1, this.#followers.attributes);
    if (this.#streams.size === 0) this.#close();
  }

  async #subscribe(): Promise<void> {
    const { instances } = this.#followers;
    const unsubscribe = await instances.watch(this.#id, (notice) => {
      if (notice.sequence > this.latest.sequence) this.#refresh(notice.sequence);
    });
    if (this.#closed) {
      unsubscribe();
      return;
    }
    this.#unsubscribe = unsubscribe;
    this.#refresh(null);
  }

  /** `sequence`: the notice's, or null for the read once subscribed (shared with no one). */
  #refresh(sequence: number | null): void {
    this.#chain = this.#chain
      .then(async () => {
        if (this.#closed) return;
        const { instances, definition, format } = this.#followers;
        const read =
          sequence === null
            ? await instances.read(definition, this.#id)
            : await sharedRead(instances, definition, this.#id, sequence);
        if (this.#closed || read.snapshot.sequence <= this.latest.sequence) return;
        const state = new Formatted(read);
        this.latest = state;
        const message = await state.message(format);
        for (const stream of this.#streams) stream.offer(state.sequence, message, state.final);
      })
      .catch(this.#onError);
  }

  #close(): void {
    if (this.#closed) return;
    this.#closed = true;
    const groups = this.#followers.groups;
    if (groups.get(this.#id) === this) groups.delete(this.#id);
    this.#unsubscribe?.();
    this.#unsubscribe = null;
  }
}
