/**
 * The `machine-routes` command line. `runCli` returns the exit code instead of exiting, so
 * tests run commands in-process.
 */
import { Command, CommanderError } from './commander.js';
import { isMachineRoutesError } from '../generator/issues.js';
import { packageVersion } from '../runtime/own-root.js';
import { registerCheck } from './commands/check.js';
import { registerCoverage } from './commands/coverage.js';
import { registerDiagram } from './commands/diagram.js';
import { registerGenerate } from './commands/generate.js';
import { registerInit } from './commands/init.js';
import { registerInstances } from './commands/instances.js';
import { registerInstancesMigrate } from './commands/instances-migrate.js';
import { registerMigrate } from './commands/migrate.js';
import { registerPaths } from './commands/paths.js';
import { registerRoutes } from './commands/routes.js';
import { registerTimers } from './commands/timers.js';
import { registerWorker } from './commands/worker.js';
import { processIo, type CliIo } from './io.js';

/** Runs one command line (`argv` without node and the script) and returns its exit code. */
export async function runCli(argv: readonly string[], io: CliIo = processIo): Promise<number> {
  let code = 0;
  const exit = (value: number): void => {
    code = value;
  };
  const program = new Command('machine-routes')
    .description('Expose TypeScript state machines as HTTP APIs')
    .version(packageVersion(), '-v, --version', 'print the version of machine-routes')
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.stdout(text.trimEnd()),
      writeErr: (text) => io.stderr(text.trimEnd()),
    });
  registerInit(program, io, exit);
  registerCheck(program, io, exit);
  registerGenerate(program, io, exit);
  registerRoutes(program, io, exit);
  registerMigrate(program, io, exit);
  registerWorker(program, io, exit);
  registerPaths(program, io, exit);
  registerDiagram(program, io, exit);
  registerCoverage(program, io, exit);
  registerTimers(program, io, exit);
  registerInstances(program, io, exit);
  registerInstancesMigrate(program, io, exit);
  try {
    await program.parseAsync([...argv], { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode;
    // A problem of the user's input that escaped a command (e.g. a migration failing) is one line.
    if (isMachineRoutesError(error)) {
      io.stderr(`${error.name} [${error.code}] ${error.message}`);
      return 1;
    }
    throw error;
  }
  return code;
}
