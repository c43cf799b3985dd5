/**
 * The machines one runtime knows: those it was given, those passed to its calls, and every
 * child they delegate to by definition. Jobs name machines by id; the registry resolves them.
 *
 * Versions (docs/versioning.md): the registry holds one definition per machine id, the newest
 * the process runs, with the older versions it keeps loaded (`versioning: 'pin'`). Work that
 * reaches an existing instance outside a request (job outcomes, child completions, queued
 * listeners, region merges, timer fires) takes its definition from {@link MachineRegistry.forInstance},
 * the one lookup by machine id and the instance's stored version: a pinned instance runs on its
 * own version's definition, not on the newest.
 */
import type { MachineDefinition } from '../definition/machine-definition.js';
import type { MachineSnapshot } from '../interpreter/types.js';
import { planVersion } from '../interpreter/migrate-snapshot.js';

/** Definitions by id (the newest, with its pinned versions), with their children by definition. */
export class MachineRegistry {
  readonly #machines = new Map<string, MachineDefinition>();

  constructor(machines: readonly MachineDefinition[] = []) {
    for (const definition of machines) this.register(definition);
  }

  /**
   * The resolver handed to the interpreter (`MacrostepOptions.machines`): the newest definition
   * of a machine, the one new instances (children started by id) start on.
   */
  readonly resolve = (machineId: string): MachineDefinition | undefined =>
    this.#machines.get(machineId);

  /**
   * The definition an existing instance runs on: the older version it is pinned to when its
   * stored version is one the newest definition keeps loaded, else the newest (which migrates
   * or fences it in the locked step). `undefined` for a machine this runtime does not know.
   */
  forInstance(
    machineId: string,
    snapshot: Pick<MachineSnapshot, 'version'> | null,
  ): MachineDefinition | undefined {
    const newest = this.#machines.get(machineId);
    if (newest === undefined || snapshot === null || !hasPinned(newest)) return newest;
    const plan = planVersion(newest, snapshot);
    return plan.kind === 'pinned' ? plan.definition : newest;
  }

  /** Whether instances of `machineId` may run on another definition than {@link resolve}'s. */
  hasPinned(machineId: string): boolean {
    const newest = this.#machines.get(machineId);
    return newest !== undefined && hasPinned(newest);
  }

  /**
   * Knows `definition` and every child it (and each version it pins) delegates to by
   * definition. A version the registered definition of its id pins does not replace it (a call
   * made with the v1 definition of a pinned machine leaves v2 the newest).
   */
  register(definition: MachineDefinition): void {
    const known = this.#machines.get(definition.id);
    if (known === definition) return;
    if (known?.pinned?.get(definition.version) === definition) return;
    this.#machines.set(definition.id, definition);
    for (const version of [definition, ...(definition.pinned?.values() ?? [])]) {
      for (const node of version.idMap.values()) {
        const child = node.invocation?.machine;
        if (child !== undefined && typeof child !== 'string') this.register(child);
      }
    }
  }
}

function hasPinned(definition: MachineDefinition): boolean {
  return definition.pinned !== undefined && definition.pinned.size > 0;
}

/** The error of a job naming a machine this runtime was not given. */
export function unknownMachine(machineId: string): Error {
  return new Error(
    `machine-routes: machine '${machineId}' is not known to this runtime. Pass it in MachineRuntime's 'machines' option.`,
  );
}
