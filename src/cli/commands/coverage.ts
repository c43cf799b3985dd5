/**
 * `machine-routes coverage`: per machine of the config, the transitions and states that test
 * runs never exercised, read from the files `machine-routes/testing` writes when
 * `MACHINE_ROUTES_COVERAGE` names a directory, against each machine's state graph (the graph
 * `paths` enumerates). `--min <percent>` fails (exit 1) when the transitions covered, over all
 * machines, are fewer.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { InvalidArgumentError, type Command } from '../commander.js';
import {
  machineCoverage,
  mergeRecorded,
  type MachineCoverage,
  type RecordedCoverage,
} from '../../generator/analysis/coverage.js';
import { collectMachineDefinitions } from '../../generator/build-manifest.js';
import { checkProject } from '../../generator/generate.js';
import { printIssues, type CliIo } from '../io.js';

interface CoverageOptions {
  config?: string;
  dir?: string;
  min?: number;
  format: string;
}

/** Where runs write and the command reads when neither `--dir` nor the variable says. */
export const DEFAULT_COVERAGE_DIR = '.machine-routes/coverage';

function percent(value: string): number {
  const parsed = Number(value);
  if (!Number.isFinite(parsed) || parsed < 0 || parsed > 100)
    throw new InvalidArgumentError(`must be a percentage from 0 to 100, got '${value}'.`);
  return parsed;
}

/** Adds the command; `exit` receives its exit code. */
export function registerCoverage(program: Command, io: CliIo, exit: (code: number) => void): void {
  program
    .command('coverage')
    .description('list the transitions and states test runs never exercised, per machine')
    .option('-c, --config <path>', 'config file (default: machine-routes.config.ts)')
    .option(
      '--dir <path>',
      `directory of the recorded runs (default: $MACHINE_ROUTES_COVERAGE, else ${DEFAULT_COVERAGE_DIR})`,
    )
    .option('--min <percent>', 'fail when fewer transitions than this were exercised', percent)
    .option('--format <format>', 'output format: text or json', 'text')
    .action(async (options: CoverageOptions) => {
      if (options.format !== 'text' && options.format !== 'json') {
        io.stderr(`Unknown --format '${options.format}': use text or json.`);
        return exit(1);
      }
      const report = await checkProject({ config: options.config, cwd: io.cwd });
      if (report.loaded === null || report.issues.length > 0) {
        printIssues(io, report.issues);
        return exit(1);
      }
      const dir = path.resolve(
        io.cwd,
        options.dir ?? (process.env['MACHINE_ROUTES_COVERAGE'] || DEFAULT_COVERAGE_DIR),
      );
      const runs = readRuns(dir);
      if (runs === null) {
        io.stderr(
          `No recorded runs in ${dir}: run the tests with MACHINE_ROUTES_COVERAGE=${path.relative(io.cwd, dir) || '.'} (machine-routes/testing writes one file per test runtime on close).`,
        );
        return exit(1);
      }
      const recorded = mergeRecorded(runs);
      const machines = [...collectMachineDefinitions(report.loaded.config.registrations).values()]
        .sort((a, b) => a.id.localeCompare(b.id))
        .map((machine) => machineCoverage(machine, recorded.get(machine.id)));
      const total = machines.reduce(
        (sum, machine) => ({
          covered: sum.covered + machine.transitions.covered,
          total: sum.total + machine.transitions.total,
        }),
        { covered: 0, total: 0 },
      );
      const share = total.total === 0 ? 100 : (100 * total.covered) / total.total;
      if (options.format === 'json')
        io.stdout(JSON.stringify({ machines, total, percent: share }, null, 2));
      else printText(io, machines, runs.length, total, share);
      if (options.min !== undefined && share < options.min) {
        io.stderr(
          `Transition coverage ${share.toFixed(1)}% is below --min ${options.min}%: exercise the transitions listed as never taken.`,
        );
        return exit(1);
      }
      exit(0);
    });
}

/** The recorded runs of `dir`, or `null` when it holds none. */
function readRuns(dir: string): Record<string, RecordedCoverage>[] | null {
  let files: string[];
  try {
    files = readdirSync(dir)
      .filter((name) => name.endsWith('.json'))
      .sort();
  } catch {
    return null;
  }
  if (files.length === 0) return null;
  return files.map(
    (name) =>
      (
        JSON.parse(readFileSync(path.join(dir, name), 'utf8')) as {
          machines: Record<string, RecordedCoverage>;
        }
      ).machines,
  );
}

function printText(
  io: CliIo,
  machines: readonly MachineCoverage[],
  runs: number,
  total: { covered: number; total: number },
  share: number,
): void {
  const ratio = (covered: number, all: number): string =>
    `${covered}/${all} (${all === 0 ? '100.0' : ((100 * covered) / all).toFixed(1)}%)`;
  for (const machine of machines) {
    io.stdout(
      `${machine.machineId}: transitions ${ratio(machine.transitions.covered, machine.transitions.total)}, states ${ratio(machine.states.covered, machine.states.total)}${machine.truncated ? ' (graph truncated: totals are lower bounds)' : ''}`,
    );
    for (const missing of machine.transitions.missing)
      io.stdout(
        `  never taken:   ${missing.from.join(' + ')} -${missing.event}-> ${missing.to.join(' + ')}`,
      );
    for (const state of machine.states.missing) io.stdout(`  never entered: ${state}`);
  }
  io.stdout(
    `total: transitions ${total.covered}/${total.total} (${share.toFixed(1)}%) over ${machines.length} machines, from ${runs} recorded run${runs === 1 ? '' : 's'}`,
  );
}
