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
      let installed: Record<string, string> = {};
      if (existsSync(manifestFile)) {
        const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as {
          scripts?: Record<string, string>;
          dependencies?: Record<string, string>;
          devDependencies?: Record<string, string>;
        };
        installed = { ...manifest.dependencies, ...manifest.devDependencies };
        manifest.scripts = { ...SCRIPTS, ...manifest.scripts };
        writeFileSync(manifestFile, `${JSON.stringify(manifest, null, 2)}\n`);
        io.stdout(`added scripts ${Object.keys(SCRIPTS).join(', ')} to package.json`);
      }
      io.stdout(`Next: ${nextSteps(installed)}`);
      exit(0);
    });
}

/**
 * What is left to do after init, given the project's dependencies: the README's install lines
 * for the packages it lacks, then `generate`. An Express project (express, no fastify) needs
 * its types and `framework: 'express'` in the config init wrote for Fastify.
 */
function nextSteps(installed: Readonly<Record<string, string>>): string {
  const lacks = (name: string) => !Object.hasOwn(installed, name);
  const express = !lacks('express') && lacks('fastify');
  const runtime = [
    ...(lacks('machine-routes') ? ['machine-routes'] : []),
    ...(lacks('zod') ? ['zod@^4'] : []),
    ...(express ? [] : lacks('fastify') ? ['fastify'] : []),
  ];
  const dev = ['typescript', '@types/node', ...(express ? ['@types/express'] : [])].filter(lacks);
  const installs = [
    ...(runtime.length > 0 ? [`npm install ${runtime.join(' ')}`] : []),
    ...(dev.length > 0 ? [`npm install -D ${dev.join(' ')}`] : []),
  ];
  const generate = express
    ? "set framework: 'express' in machine-routes.config.ts and npx machine-routes generate."
    : 'npx machine-routes generate.';
  return installs.length > 0 ? `${installs.join(' && ')}, then ${generate}` : generate;
}
