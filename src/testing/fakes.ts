/**
 * Fakes of job actors and asynchronous child machines, chosen per test: `resolve(output)`,
 * `reject(error)` or `hang()`, or a function of the call picking one. A faked job's function is
 * never called and a faked child is never started; the outcome goes the way a real one would
 * (the job's output schema, the parent's `@done` / `@done.<final>` / `@fail`, `@timeout` for a
 * hang). Every job run and child start, faked or real, is recorded, and every event one
 * instance sent another (`sendTo`, `sendToParent`, `dispatchTo`, `dispatchToParent`).
 */
import type { Context, EventObject } from '../runtime/definition/types.js';
import type { CommitEvent } from '../runtime/engine/index.js';

/** What a fake does when its job runs or its child starts. */
export type FakeOutcome =
  | { readonly kind: 'resolve'; readonly output: unknown; readonly final?: string }
  | { readonly kind: 'reject'; readonly error: Error }
  | { readonly kind: 'hang' };

/** A fake: one outcome for every call, or one per call. */
export type Fake = FakeOutcome | ((call: FakeCall) => FakeOutcome);

/**
 * The job (or child) finishes with `output`. For a child machine, `final` names the final
 * state it ends in (default: its first top-level final state), so `@done.<final>` routes; the
 * output is the child's context there, read through that state's `output`.
 */
export function resolve(output: unknown, options: { final?: string } = {}): FakeOutcome {
  return options.final === undefined
    ? { kind: 'resolve', output }
    : { kind: 'resolve', output, final: options.final };
}

/** The job (or child) fails with `error`: the parent routes `@fail` (a job is not retried). */
export function reject(error: Error | string): FakeOutcome {
  return { kind: 'reject', error: typeof error === 'string' ? new Error(error) : error };
}

/** The job (or child) never answers: the parent stays in its state until `@timeout` or an event. */
export function hang(): FakeOutcome {
  return { kind: 'hang' };
}

/** One job run or child start, as the test kit recorded it. */
export interface FakeCall {
  /** `job`: a job actor ran; `child`: an asynchronous child machine was started. */
  kind: 'job' | 'child';
  /** The job's name, or the child's machine id. */
  name: string;
  /** The mapped input it got. */
  input: Context;
  /** The instance whose state started it. */
  parent: { machineId: string; id: string; state: string };
  /** Virtual time of the call. */
  at: Date;
  /** Whether a fake answered it (else the real function ran, or the real child started). */
  faked: boolean;
}

/** An instance, by machine id and instance id. */
export interface InstanceRef {
  machineId: string;
  id: string;
}

/** One event an instance sent another, as the test kit recorded it from the sender's step. */
export interface SentEvent {
  /** `sync`: `sendTo` / `sendToParent`; `async`: `dispatchTo` / `dispatchToParent` (a job). */
  mode: 'sync' | 'async';
  from: InstanceRef;
  to: InstanceRef;
  /**
   * `parent`: sent to the sender's parent; `child`: sent to a child the sender started;
   * `other`: any other instance.
   */
  relation: 'parent' | 'child' | 'other';
  /** The event as sent (type, payload, actor). */
  event: EventObject;
  /** Virtual time of the sender's step. */
  at: Date;
}

/** The fakes of one test runtime, by job name and by child machine id. */
export class Fakes {
  readonly #jobs = new Map<string, Fake>();
  readonly #children = new Map<string, Fake>();
  /** Every job run and child start so far, oldest first. */
  readonly calls: FakeCall[] = [];
  /** Every event an instance sent another so far, oldest first (whether the target took it or not). */
  readonly sent: SentEvent[] = [];
  // Child instance id -> its parent's instance id, from the snapshots committed so far.
  readonly #parents = new Map<string, string>();

  /** Fakes the job actor named `name` (its `defineJob` name, its function's name, else the state's key). */
  job(name: string, fake: Fake): void {
    this.#jobs.set(name, fake);
  }

  /** Fakes the asynchronous child machine `machineId` (`queue` on the delegating state). */
  child(machineId: string, fake: Fake): void {
    this.#children.set(machineId, fake);
  }

  /** Removes every fake (the recorded calls stay). */
  clear(): void {
    this.#jobs.clear();
    this.#children.clear();
  }

  /** Calls of one job or child, by name. */
  callsOf(name: string): FakeCall[] {
    return this.calls.filter((call) => call.name === name);
  }

  /** Events sent to instances of `machineId` (a child machine's id, or the parent's). */
  sentTo(machineId: string): SentEvent[] {
    return this.sent.filter((sent) => sent.to.machineId === machineId);
  }

  /** @internal Records the sends of one committed step (the test runtime's commit listener). */
  recordCommit(commit: CommitEvent, at: Date): void {
    const { snapshot } = commit;
    if (snapshot.parent !== undefined) this.#parents.set(snapshot.id, snapshot.parent.id);
    for (const send of commit.sends ?? []) {
      const to = { machineId: send.target.machineId, id: send.target.id };
      const relation =
        snapshot.parent?.id === to.id
          ? 'parent'
          : this.#parents.get(to.id) === snapshot.id
            ? 'child'
            : 'other';
      this.sent.push({
        mode: send.mode,
        from: { machineId: send.source.machineId, id: send.source.id },
        to,
        relation,
        event: send.event,
        at,
      });
    }
  }

  /** Records a call and returns the outcome its fake chose, or `null` to run the real one. */
  answer(call: Omit<FakeCall, 'faked'>): FakeOutcome | null {
    const fake = (call.kind === 'job' ? this.#jobs : this.#children).get(call.name);
    const recorded: FakeCall = { ...call, faked: fake !== undefined };
    this.calls.push(recorded);
    if (fake === undefined) return null;
    return typeof fake === 'function' ? fake(recorded) : fake;
  }
}
