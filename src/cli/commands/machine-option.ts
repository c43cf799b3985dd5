/**
 * What the analysis commands (`paths`, `diagram`) share: loading the config and finding one of
 * its machines (registered, or a child one delegates to) by definition id.
 */
import { collectMachineDefinitions } from '../../generator/build-manifest.js';
import { checkProject } from '../../generator/generate.js';
import type { MachineDefinition } from '../../runtime/definition/machine-definition.js';
import { printIssues, type CliIo } from '../io.js';

/** The machine named `machineId` in the config, or `null` once the problem is printed. */
export async function loadMachine(
  io: CliIo,
  config: string | undefined,
  machineId: string,
): Promise<MachineDefinition | null> {
  const report = await checkProject({ config, cwd: io.cwd, exampleRuns: false });
  if (report.loaded === null || report.issues.length > 0) {
    printIssues(io, report.issues);
    return null;
  }
  const machines = collectMachineDefinitions(report.loaded.config.registrations);
  const machine = machines.get(machineId);
  if (machine === undefined) {
    io.stderr(
      `Unknown machine '${machineId}': the config has ${[...machines.keys()].sort().join(', ')}.`,
    );
    return null;
  }
  return machine;
}
