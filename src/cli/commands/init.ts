/**
 * `machine-routes init`: starts a project. Writes the README's first machine and a config for
 * it (never over an existing file) and adds the `check`/`generate` scripts to package.json.
 */
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { OWN_ROOT } from '../../runtime/own-root.js';
import type { CliIo } from '../io.js';

// templates/ sits at the package root, beside src/ and dist/.
const STARTER = new URL('../templates/init/', OWN_ROOT);
const FILES = ['machine-routes.config.ts', 'machines/order.ts'];
const SCRIPTS: Record<string, string> = {
  'machines:check': 'machine-routes check',
  'machines:generate': 'machine-routes generate',
};

/** Adds the command; `exit` receives its exit code. */
export function registerInit(program: Command, io: CliIo, exit: (code: number) => void): void {
  program
    .command('init')
    .description('write a config, a first machine and package.json scripts into this project')
    .action(() => {
      const existing = FILES.filter((file) => existsSync(path.join(io.cwd, file)));
      if (existing.length > 0) {
        io.stderr(`Not overwriting ${existing.join(', ')}: init starts a new project.`);
        return exit(1);
      }
      for (const file of FILES) {
        mkdirSync(path.dirname(path.join(io.cwd, file)), { recursive: true });
        copyFileSync(new URL(file, STARTER), path.join(io.cwd, file));
        io.stdout(`created ${file}`);
      }
      const manifestFile = path.join(io.cwd, 'package.json');
      if (existsSync(manifestFile)) {
        const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as {
          scripts?: Record<string, string>;
        };
        manifest.scripts = { ...SCRIPTS, ...manifest.scripts };
        writeFileSync(manifestFile, `${JSON.stringify(manifest, null, 2)}\n`);
        io.stdout(`added scripts ${Object.keys(SCRIPTS).join(', ')} to package.json`);
      }
      io.stdout(
        'Next: npm install machine-routes zod@^4 fastify, then npx machine-routes generate.',
      );
      exit(0);
    });
}
