/**
 * `machine-routes check`: every definition-time and registration-time problem, located in the
 * user's source and sorted by file and line. Exit code 1 when there is any.
 *
 * `--database <url>` adds the safe-deploy check (engine/deploy-check.ts): the definitions
 * against the store's live instances. Blocking findings (states removed under active instances,
 * context keys of a changed type) are problems; the others (removed event types of histories,
 * states removed under done instances) are printed as warnings and keep the exit code 0.
 *
 * A project without problems is also analysed for what can never succeed (stateless routes the
 * initial state refuses, events nothing sends, states nothing enters): warnings too, which
 * fail the command only with `--strict`.
 */
import { Option, type Command } from '../commander.js';
import { checkProject, checkWarnings } from '../../generator/generate.js';
import { formatIssue, type Issue } from '../../generator/issues.js';
import type { LoadedConfig } from '../../generator/load-config.js';
import { missingPeers } from '../../generator/optional-peers.js';
import type { MachineDefinition } from '../../runtime/definition/machine-definition.js';
import { checkDeploy } from '../../runtime/engine/deploy-check.js';
import { readLiveInstances } from '../../runtime/persistence/live-instances.js';
import type { Store } from '../../runtime/persistence/store.js';
import { printIssues, printProblemCount, relativeIssue, type CliIo } from '../io.js';

interface CheckOptions {
  config?: string;
  database?: string;
  format: (typeof FORMATS)[number];
  strict?: boolean;
}

const FORMATS = ['text', 'json', 'github'] as const;

/** Adds the command; `exit` receives its exit code. */
export function registerCheck(program: Command, io: CliIo, exit: (code: number) => void): void {
  program
    .command('check')
    .description('validate every machine and registration of the config')
    .option('-c, --config <path>', 'config file (default: machine-routes.config.ts)')
    .option(
      '--database <url>',
      'also compare the definitions with the live instances of this store (safe deploys)',
    )
    .addOption(
      new Option('--format <format>', 'output: text, json, or github (workflow annotations)')
        .choices(FORMATS)
        .default('text'),
    )
    .option('--strict', 'fail on warnings too (routes, events and states that can never succeed)')
    .action(async (options: CheckOptions) => {
      const report = await checkProject({ config: options.config, cwd: io.cwd });
      const routes =
        report.manifest?.registrations.reduce(
          (count, registration) => count + registration.routes.length,
          0,
        ) ?? 0;
      const machines = report.manifest?.machines.length ?? 0;
      const deploy =
        options.database !== undefined && report.loaded !== null
          ? await deployIssues(report.loaded, options.database)
          : { problems: [], warnings: [] };
      const peers =
        report.loaded === null ? { problems: [], warnings: [] } : missingPeers(report.loaded);
      const problems = [...report.issues, ...deploy.problems, ...peers.problems];
      const analysis = await checkWarnings(report);
      const warnings = [...analysis, ...peers.warnings, ...deploy.warnings];
      const failed = problems.length > 0 || (options.strict === true && analysis.length > 0);
      if (options.format === 'json') {
        // `location` is the issue's one place: `details.location` (where the error was raised,
        // e.g. the defineMachine call) would be a second one, absolute, for the same problem.
        const issues = problems.map((issue) => {
          const { location: _raisedAt, ...details } = issue.details;
          return relativeIssue({ ...issue, details }, io.cwd);
        });
        io.stdout(
          JSON.stringify(
            {
              ok: !failed,
              machines,
              routes,
              issues,
              ...(options.database === undefined && warnings.length === 0
                ? {}
                : { warnings: warnings.map((issue) => relativeIssue(issue, io.cwd)) }),
            },
            null,
            2,
          ),
        );
      } else if (options.format === 'github') {
        for (const issue of problems) io.stdout(githubAnnotation(relativeIssue(issue, io.cwd)));
        for (const issue of warnings)
          io.stdout(
            githubAnnotation(relativeIssue(issue, io.cwd)).replace(/^::error /, '::warning '),
          );
        if (problems.length > 0) printProblemCount(io, problems.length);
      } else {
        for (const warning of analysis)
          io.stdout(`warning: ${formatIssue(relativeIssue(warning, io.cwd))}`);
        for (const warning of [...peers.warnings, ...deploy.warnings])
          io.stdout(`warning: ${formatWarning(warning)}`);
        if (problems.length > 0) {
          printIssues(io, problems);
        } else {
          const count = analysis.length;
          io.stdout(
            `No problems: ${machines} machine${machines === 1 ? '' : 's'}, ${routes} route${routes === 1 ? '' : 's'}` +
              (options.database === undefined ? '' : `, live instances compatible`) +
              (count === 0
                ? '.'
                : `; ${count} warning${count === 1 ? '' : 's'}` +
                  (options.strict === true
                    ? ' (--strict: failing).'
                    : ' (--strict fails on them).')),
          );
        }
      }
      exit(failed ? 1 : 0);
    });
}

/**
 * A GitHub Actions workflow command that annotates the issue's file and line in a pull request:
 * `::error file=f,line=l,col=c,title=Name [code]::message`. Data and property values are
 * escaped as the runner expects.
 */
export function githubAnnotation(issue: Issue): string {
  const data = (text: string) =>
    text.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
  const property = (text: string) => data(text).replace(/:/g, '%3A').replace(/,/g, '%2C');
  const place =
    issue.location === null
      ? []
      : [
          `file=${property(issue.location.file)}`,
          `line=${issue.location.line}`,
          `col=${issue.location.column}`,
        ];
  const properties = [...place, `title=${property(`${issue.name} [${issue.code}]`)}`];
  return `::error ${properties.join(',')}::${data(issue.message)}`;
}

/** The safe-deploy findings against the store at `url`, as blocking problems and warnings. */
async function deployIssues(
  loaded: LoadedConfig,
  url: string,
): Promise<{ problems: Issue[]; warnings: Issue[] }> {
  const machines = new Map<string, MachineDefinition>();
  for (const registration of loaded.config.registrations)
    machines.set(registration.machine.id, registration.machine as unknown as MachineDefinition);
  // The config's own runtime opens the store (its classes match the config's machines).
  const store = (await loaded.runtime.openStore(url)) as unknown as Store;
  try {
    const live = await readLiveInstances(store, [...machines.keys()]);
    const found = checkDeploy([...machines.values()], live);
    const toIssue = ({ error }: (typeof found)[number]): Issue => ({
      name: error.name,
      code: error.code,
      message: error.message,
      details: error.details,
      location: null,
    });
    return {
      problems: found.filter((issue) => issue.blocking).map(toIssue),
      warnings: found.filter((issue) => !issue.blocking).map(toIssue),
    };
  } finally {
    await store.close();
  }
}

function formatWarning(issue: Issue): string {
  return `${issue.name} [${issue.code}] ${issue.message}`;
}
