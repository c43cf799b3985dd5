/**
 * `machine-routes paths <machine>`: every path from the initial state to each final state
 * (events, guards taken, states), the spec's path analysis. `--max-paths` (1000 by default)
 * bounds the enumeration and warns when reached.
 */
import { InvalidArgumentError, type Command } from '../commander.js';
import { DEFAULT_MAX_PATHS, enumeratePaths, formatPath } from '../../generator/analysis/paths.js';
import { buildStateGraph } from '../../generator/analysis/state-graph.js';
import type { CliIo } from '../io.js';
import { loadMachine } from './machine-option.js';

interface PathsOptions {
  config?: string;
  format: string;
  maxPaths: number;
}

function positiveInteger(value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1)
    throw new InvalidArgumentError(`must be an integer >= 1, got '${value}'.`);
  return parsed;
}

/** Adds the command; `exit` receives its exit code. */
export function registerPaths(program: Command, io: CliIo, exit: (code: number) => void): void {
  program
    .command('paths')
    .description('list the paths from the initial state to each final state of a machine')
    .argument('<machine>', 'machine definition id')
    .option('-c, --config <path>', 'config file (default: machine-routes.config.ts)')
    .option('--format <format>', 'output format: text or json', 'text')
    .option('--max-paths <n>', 'stop after this many paths', positiveInteger, DEFAULT_MAX_PATHS)
    .action(async (machineId: string, options: PathsOptions) => {
      if (options.format !== 'text' && options.format !== 'json') {
        io.stderr(`Unknown --format '${options.format}': use text or json.`);
        return exit(1);
      }
      const machine = await loadMachine(io, options.config, machineId);
      if (machine === null) return exit(1);
      const report = enumeratePaths(buildStateGraph(machine), options.maxPaths);
      if (options.format === 'json') {
        io.stdout(JSON.stringify(report, null, 2));
      } else {
        const finals = new Set(report.paths.map((path) => path.final.join(',')));
        io.stdout(
          `${machineId}: ${report.paths.length} path${report.paths.length === 1 ? '' : 's'} to ${finals.size} final state${finals.size === 1 ? '' : 's'}`,
        );
        report.paths.forEach((path, index) => io.stdout(`${index + 1}. ${formatPath(path)}`));
        for (const final of report.unreachableFinals)
          io.stdout(`unreachable final state: ${final}`);
      }
      if (report.truncated)
        io.stderr(
          `Warning: stopped at --max-paths ${report.maxPaths}; the machine has more paths. Raise --max-paths to see them.`,
        );
      exit(0);
    });
}
