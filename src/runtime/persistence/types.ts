/**
 * What a call on an instance takes and returns (`InstanceResult`, `SendOptions`, ...). The
 * contract itself, `MachineInstances`, is the engine's (engine/machine-instances.ts).
 */
import type { Context } from '../definition/types.js';
import type { HistoryRecord, MachineSnapshot, StoredScenario } from '../interpreter/types.js';
import type { MacrostepEffect } from '../interpreter/effects.js';
import type { ScenarioRequest } from '../interpreter/scenarios.js';
import type { MachineValidationException } from '../errors.js';
import type { StoredResponse } from './idempotency.js';

/** Result of creating an instance or sending it an event. */
export interface InstanceResult {
  snapshot: MachineSnapshot;
  /** Records written by this call, in order. */
  history: HistoryRecord[];
  /**
   * Deferred effects of the macrostep (child machines, messages, listeners), for the job layer
   * to apply after the commit. `MachineRuntime` returns them; it does not apply them yet.
   */
  effects?: MacrostepEffect[];
  /**
   * The scenario the instance keeps after the call (a continuation), `null` when none. Only
   * set when scenarios are enabled.
   */
  scenario?: StoredScenario | null;
  /**
   * A forwarded event: the child it reached, after its step (the same commit), so responses
   * need not read it again.
   */
  forwardedChild?: MachineSnapshot;
}

/** Options of `send` / `sendStateless`. */
export interface SendOptions {
  /** What the request asks of scenarios (only read when scenarios are enabled; default omitted). */
  scenario?: ScenarioRequest;
  /**
   * An Idempotency-Key the caller claimed for this send: the response it builds from the
   * step's outcome is stored in the event's own commit. Ignored where nothing is committed
   * (stateless, `should_persist: false`) and by forwarded sends; `stored` tells the caller.
   */
  idempotency?: IdempotentSend;
  /**
   * How long to wait for the instance's lock when another request holds it, in ms (the
   * endpoint's `contention: { wait }`); default 0: refuse at once. Requests of one process
   * get the lock in order of arrival; past the wait, `MachineAlreadyRunningException` with
   * the last committed state, as without waiting.
   */
  lockWaitMs?: number;
  /**
   * `sendStateless` only: `false` leaves `history` empty instead of building records nobody
   * reads (the HTTP layer's stateless routes: their answer shows none). Default true.
   */
  keepHistory?: boolean;
  /**
   * A condition on the instance's last committed snapshot, checked where the send reads it
   * under the lock (HTTP `If-Match`): `false` refuses the send with
   * `PreconditionFailedException` (412) and nothing is written. A concurrent commit between
   * the check and the send's own commit fences the send out (contention), so a send never
   * lands on a version its precondition did not see.
   */
  precondition?: ((snapshot: MachineSnapshot) => boolean) | undefined;
}

/**
 * A send answering a claimed Idempotency-Key record (see `IdempotencyKeyStore`): the runtime
 * builds the response before committing and completes the record in the same transaction.
 */
export interface IdempotentSend {
  scope: string;
  key: string;
  ownerId: string;
  /**
   * The response the request will answer, from the step's outcome: its result, or the
   * `MachineValidationException` of a validation guard (whose history commits too). Called
   * once, under the instance lock, before the commit. `null` leaves the claim out of the
   * commit, still pending: the caller frees it (a callback URL refused by a validation guard
   * stays usable, docs/callbacks.md).
   */
  respond(outcome: InstanceResult | MachineValidationException): Promise<StoredResponse | null>;
  /** Set by the runtime once the response was committed with the event. */
  stored?: boolean;
}

/** What a read sees of an instance. */
export interface InstanceRead {
  snapshot: MachineSnapshot;
  /**
   * A live lock row is held (a send in any process, a job, `withLock`): an event is being
   * processed and the snapshot is the last committed state before it.
   */
  isProcessing: boolean;
}

/** Options of `MachineInstances.availableEvents`. */
export interface AvailableEventsReadOptions {
  /**
   * Explain each entry (`ExplainedAvailableEvent`: `enabled`, `reason`), forwarded ones against
   * the running child's snapshot.
   */
  explain?: boolean;
}

/** Options of `create`. */
export interface CreateOptions {
  /** Merged over the definition's initial context. */
  input?: Context;
  actor?: string | null;
}
