/**
 * `machine-routes init`: starts a project. Writes the README's first machine and a config for
 * it (never over an existing file), with `framework: 'express'` in an Express project (express
 * and not fastify in package.json), the README's tsconfig.json when there is none, and adds the
 * `check`/`generate` scripts to package.json.
 */
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Command } from '../commander.js';
import { generatorTemplates } from '../../generator/dependencies.js';
import type { CliIo } from '../io.js';

const CONFIG = 'machine-routes.config.ts';
const FILES = [CONFIG, 'machines/order.ts'];
/** The README's tsconfig.json: compiles the machines, the config and src/ into build/. */
const TSCONFIG = 'tsconfig.json';
const SCRIPTS: Record<string, string> = {
  'machines:check': 'machine-routes check',
  'machines:generate': 'machine-routes generate',
};

/** Adds the command; `exit` receives its exit code. */
export function registerInit(program: Command, io: CliIo, exit: (code: number) => void): void {
  program
    .command('init')
    .description('write a config, a first machine and package.json scripts into this project')
    .action(async () => {
      // The starter files ship with the generator's templates (machine-routes-generator).
      const starter = new URL('init/', await generatorTemplates('machine-routes init'));
      const existing = FILES.filter((file) => existsSync(path.join(io.cwd, file)));
      if (existing.length > 0) {
        io.stderr(`Not overwriting ${existing.join(', ')}: init starts a new project.`);
        return exit(1);
      }
      const manifestFile = path.join(io.cwd, 'package.json');
      const manifest = existsSync(manifestFile)
        ? (JSON.parse(readFileSync(manifestFile, 'utf8')) as {
            scripts?: Record<string, string>;
            dependencies?: Record<string, string>;
            devDependencies?: Record<string, string>;
          })
        : null;
      const installed = { ...manifest?.dependencies, ...manifest?.devDependencies };
      const express = isExpressProject(installed);
      for (const file of FILES) {
        mkdirSync(path.dirname(path.join(io.cwd, file)), { recursive: true });
        const text = readFileSync(new URL(file, starter), 'utf8');
        writeFileSync(
          path.join(io.cwd, file),
          express ? text.replace("framework: 'fastify'", "framework: 'express'") : text,
        );
        io.stdout(`created ${file}${express && file === CONFIG ? " (framework: 'express')" : ''}`);
      }
      if (existsSync(path.join(io.cwd, TSCONFIG))) {
        io.stdout(`kept your ${TSCONFIG}: it must compile ${FILES.join(', ')} and src/`);
      } else {
        copyFileSync(new URL(TSCONFIG, starter), path.join(io.cwd, TSCONFIG));
        io.stdout(`created ${TSCONFIG}`);
      }
      if (manifest !== null) {
        manifest.scripts = { ...SCRIPTS, ...manifest.scripts };
        writeFileSync(manifestFile, `${JSON.stringify(manifest, null, 2)}\n`);
        io.stdout(`added scripts ${Object.keys(SCRIPTS).join(', ')} to package.json`);
      }
      io.stdout(`Next: ${nextSteps(installed, express)}`);
      exit(0);
    });
}

/** An Express project: it has express and not fastify. */
function isExpressProject(installed: Readonly<Record<string, string>>): boolean {
  return Object.hasOwn(installed, 'express') && !Object.hasOwn(installed, 'fastify');
}

/**
 * What is left to do after init, given the project's dependencies: the README's install lines
 * for the packages it lacks (Express's types in an Express project), then `generate`.
 */
function nextSteps(installed: Readonly<Record<string, string>>, express: boolean): string {
  const lacks = (name: string) => !Object.hasOwn(installed, name);
  const runtime = [
    ...(lacks('machine-routes') ? ['machine-routes'] : []),
    ...(lacks('zod') ? ['zod@^4'] : []),
    ...(express ? [] : lacks('fastify') ? ['fastify'] : []),
  ];
  const dev = [
    'machine-routes-generator',
    'typescript',
    '@types/node',
    ...(express ? ['@types/express'] : []),
  ].filter(lacks);
  const installs = [
    ...(runtime.length > 0 ? [`npm install ${runtime.join(' ')}`] : []),
    ...(dev.length > 0 ? [`npm install -D ${dev.join(' ')}`] : []),
  ];
  const generate = 'npx machine-routes generate.';
  return installs.length > 0 ? `${installs.join(' && ')}, then ${generate}` : generate;
}
