/**
 * The machines one runtime knows: those it was given, those passed to its calls, and every
 * child they delegate to by definition. Jobs name machines by id; the registry resolves them.
 */
import type { MachineDefinition } from '../definition/machine-definition.js';

/** Definitions by id, with their children by definition. */
export class MachineRegistry {
  readonly #machines = new Map<string, MachineDefinition>();

  constructor(machines: readonly MachineDefinition[] = []) {
    for (const definition of machines) this.register(definition);
  }

  /** The resolver handed to the interpreter (`MacrostepOptions.machines`). */
  readonly resolve = (machineId: string): MachineDefinition | undefined =>
    this.#machines.get(machineId);

  /** Knows `definition` and every child it delegates to by definition. */
  register(definition: MachineDefinition): void {
    if (this.#machines.get(definition.id) === definition) return;
    this.#machines.set(definition.id, definition);
    for (const node of definition.idMap.values()) {
      const child = node.invocation?.machine;
      if (child !== undefined && typeof child !== 'string') this.register(child);
    }
  }
}

/** The error of a job naming a machine this runtime was not given. */
export function unknownMachine(machineId: string): Error {
  return new Error(
    `machine-routes: machine '${machineId}' is not known to this runtime. Pass it in MachineRuntime's 'machines' option.`,
  );
}
