/**
 * `HttpServices`: what route handlers need from the rest of the runtime. `MachineRouter` fills
 * it from the engine; tests may pass doubles.
 */
import type { FlowControlStore } from '../persistence/flow-control.js';
import type { IdempotencyKeyStore } from '../persistence/idempotency.js';
import type {
  EventObject,
  ForwardDefinition,
  MachineDefinitionBase,
  OutputDefinition,
} from '../definition/types.js';
import type { AvailableEvent, MachineSnapshot } from '../interpreter/types.js';
import type { MachineInstances } from '../engine/machine-instances.js';
import type { MiddlewareRegistry } from './middleware-registry.js';
import type { ScenarioServices } from './scenario-fields.js';
import type { PathMethods } from './instance-surface.js';
import type { HttpLogger, ModelBinder } from './types.js';

/** What handlers need from the rest of the runtime (see the module comment). */
export interface HttpServices<D extends MachineDefinitionBase> {
  instances: MachineInstances<D>;
  /**
   * May read children (forwarded events), hence possibly async. `explain` (the route's
   * `explainAvailableEvents`): each entry also says whether its guards pass now.
   */
  availableEvents(
    definition: D,
    snapshot: MachineSnapshot,
    explain?: boolean,
  ): AvailableEvent[] | Promise<AvailableEvent[]>;
  /** `event` is the event just sent, shown to output behaviors. */
  resolveOutput(
    definition: D,
    snapshot: MachineSnapshot,
    output: OutputDefinition | null,
    event?: EventObject,
  ): unknown;
  /** The initial snapshot of a fresh, unpersisted instance (stateless `before()` hooks). */
  initialSnapshot(definition: D): MachineSnapshot;
  /** The running child a forwarded event reached, for `data.child` of forwarded responses. */
  forwardedChild(
    definition: D,
    parent: MachineSnapshot,
    forward: ForwardDefinition,
  ): Promise<MachineSnapshot | null>;
  /**
   * A forward's output: its output behavior run with the parent and the child (`args.child`,
   * see defineChildOutput), and `data.child` (state, context filtered by a key-list output).
   * Optional: without it the behavior runs with the parent only and `data.child.output` is the
   * child's context.
   */
  forwardedOutput?(
    definition: D,
    parent: MachineSnapshot,
    forward: ForwardDefinition,
    child: MachineSnapshot | null,
    event: EventObject,
  ): { output: unknown; child: { state: readonly string[]; output: unknown } | null };
  middleware: MiddlewareRegistry;
  models: Readonly<Record<string, ModelBinder>>;
  /** The router's own logger; absent, the request's framework logger is used (see `guarded`). */
  logger: HttpLogger | undefined;
  /** Largest event payload in bytes (serialised JSON) when the event sets no `payloadLimit`. */
  payloadLimit: number;
  /**
   * Present when scenarios are enabled: event routes (not create, not forwards) read
   * `scenario` / `scenarioParams` and answer `availableScenarios` / `activeScenario`. Absent,
   * requests are handled exactly as without scenarios (their fields are ignored).
   */
  scenarios?: ScenarioServices<D>;
  /** Idempotency-Key records (routes with `idempotency`, see idempotency.ts). */
  idempotencyKeys: IdempotencyKeyStore;
  /** Flow-control counters (routes with `flow`, flow-control.ts); absent: kept in the process. */
  flowControl?: FlowControlStore;
  /**
   * The methods mounted at each path (the router's), for the `Allow` header of OPTIONS answers
   * and of 409 refusals. Absent (handlers built by hand): 409 answers carry no `Allow`.
   */
  paths?: PathMethods;
}
