/**
 * What became of a child machine or a job actor, in the serializable forms the history, the job
 * payloads and the outcome events carry, and the helpers that make them.
 */
import type { MachineDefinition } from '../definition/machine-definition.js';
import { isMachineDefinition, type MachineInvocation } from '../definition/invocation.js';
import { MachineNotFoundException, MachineRoutesError } from '../errors.js';

/** A serializable description of a child's failure. */
export interface ChildError {
  name: string;
  /** Catalogue code (`MR_...`), `null` for other errors. */
  code: string | null;
  message: string;
  /** The thrown error's own JSON fields (a typed failure is built from them). */
  fields?: Record<string, unknown>;
}

/** What became of a child machine. */
export type ChildOutcome =
  | { outcome: 'done'; childId: string | null; finalState: string; output: unknown }
  | { outcome: 'fail'; childId: string | null; error: ChildError }
  | { outcome: 'timeout'; childId: string | null; after: number | null };

/** What became of a job actor's run (`output`: already validated by the job's schema). */
export type JobOutcome =
  | { outcome: 'done'; jobId: string; output: unknown }
  | { outcome: 'fail'; jobId: string; error: ChildError }
  | { outcome: 'timeout'; jobId: string; after: number | null };

/** The child definition of an invocation; ids go through the `machines` resolver. */
export function resolveChildMachine(
  invocation: MachineInvocation,
  machines: ((machineId: string) => MachineDefinition | undefined) | undefined,
  parentMachineId: string,
): MachineDefinition {
  if (typeof invocation.machine !== 'string') return invocation.machine;
  const resolved = machines?.(invocation.machine);
  if (!isMachineDefinition(resolved)) {
    throw new MachineNotFoundException(
      `Machine '${parentMachineId}' delegates to machine '${invocation.machine}', which is not known here. ` +
        `Pass its definition as 'machine', or register it with the runtime (MacrostepOptions.machines).`,
      { machine: parentMachineId, key: invocation.machine },
    );
  }
  return resolved;
}

/** `child.approved` -> `approved`. */
export function finalStateKey(childMachineId: string, stateId: string): string {
  return stateId.startsWith(`${childMachineId}.`)
    ? stateId.slice(childMachineId.length + 1)
    : stateId;
}

/** The serializable form of a thrown value. */
export function describeError(error: unknown): ChildError {
  if (error instanceof MachineRoutesError)
    return { name: error.name, code: error.code, message: error.message };
  if (error instanceof Error) {
    const described: ChildError = { name: error.name, code: null, message: error.message };
    const fields = ownFields(error);
    if (fields !== null) described.fields = fields;
    return described;
  }
  return { name: 'Error', code: null, message: String(error) };
}

/** An error's own enumerable fields as JSON (`null` without any, or when they are not JSON). */
function ownFields(error: Error): Record<string, unknown> | null {
  const own = Object.fromEntries(Object.entries(error).filter(([key]) => key !== 'stack'));
  if (Object.keys(own).length === 0) return null;
  try {
    return JSON.parse(JSON.stringify(own)) as Record<string, unknown>;
  } catch {
    return null;
  }
}
