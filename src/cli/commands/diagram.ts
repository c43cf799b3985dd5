/**
 * `machine-routes diagram <machine> [--format mermaid|svg]`: the machine's state diagram, the
 * same Mermaid source `generate` writes to `diagrams/<machine>.gen.mmd` and embeds in the OpenAPI
 * document; `svg` renders it (see ../../generator/mermaid-svg.ts).
 */
import type { Command } from '../commander.js';
import { machineDiagram } from '../../generator/analysis/mermaid.js';
import type { CliIo } from '../io.js';
import { renderMermaidSvg } from '../../generator/mermaid-svg.js';
import { loadMachine } from './machine-option.js';

interface DiagramOptions {
  config?: string;
  format: string;
}

/** Adds the command; `exit` receives its exit code. */
export function registerDiagram(program: Command, io: CliIo, exit: (code: number) => void): void {
  program
    .command('diagram')
    .description('print the state diagram of a machine (Mermaid source, or SVG)')
    .argument('<machine>', 'machine definition id')
    .option('-c, --config <path>', 'config file (default: machine-routes.config.ts)')
    .option('--format <format>', 'output format: mermaid or svg', 'mermaid')
    .action(async (machineId: string, options: DiagramOptions) => {
      if (options.format !== 'mermaid' && options.format !== 'svg') {
        io.stderr(`Unknown --format '${options.format}': use mermaid or svg.`);
        return exit(1);
      }
      const machine = await loadMachine(io, options.config, machineId);
      if (machine === null) return exit(1);
      const source = machineDiagram(machine);
      if (options.format === 'mermaid') {
        io.stdout(source.trimEnd());
        return exit(0);
      }
      try {
        io.stdout(await renderMermaidSvg(source));
      } catch (error) {
        io.stderr(error instanceof Error ? error.message : String(error));
        return exit(1);
      }
      exit(0);
    });
}
