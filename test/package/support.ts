/**
 * Helpers of the package tests: the README's blocks a new user copies, commands run in a fresh
 * project, and the tarballs `npm run package` makes (scripts/pack.js).
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from '../generator/support.js';

/** The text of the README's section `heading` (up to the next `## `). */
export function readmeSection(heading: string): string {
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf(`## ${heading}`));
  return section.slice(0, section.indexOf('\n## ', 1));
}

/** The TypeScript blocks of the README's "A first machine" that start with `// <path>`. */
export function readmeFiles(): Map<string, string> {
  const files = new Map<string, string>();
  for (const [, body = ''] of readmeSection('A first machine').matchAll(/```ts\n([\s\S]*?)```/g)) {
    const name = /^\/\/ (\S+\.ts)\n/.exec(body)?.[1];
    if (name !== undefined) files.set(name, body);
  }
  return files;
}

/** The TypeScript block of the README's section `heading` that contains `text`, verbatim. */
export function readmeBlock(heading: string, text: string): string {
  const blocks = [...readmeSection(heading).matchAll(/```ts\n([\s\S]*?)```/g)];
  const block = blocks.map(([, body = '']) => body).find((body) => body.includes(text));
  if (block === undefined) throw new Error(`README "${heading}" has no ts block with ${text}`);
  return block;
}

/**
 * The `npm install` lines of the README's "Install into your project" whose command (not its
 * comment) mentions `word`, as npm arguments.
 */
export function readmeInstallLines(word: string): string[][] {
  const block = /```sh\n([\s\S]*?)```/.exec(readmeSection('Install into your project'))?.[1] ?? '';
  return block
    .split('\n')
    .map((line) => line.replace(/#.*$/, '').trim())
    .filter((command) => command.startsWith('npm install ') && command.includes(word))
    .map((command) => command.split(/\s+/).slice(2));
}

/** The `tsconfig.json` the README's "Install into your project" shows, verbatim. */
export function readmeTsconfig(): string {
  const block = /```jsonc?\n([\s\S]*?)```/.exec(readmeSection('Install into your project'))?.[1];
  if (block === undefined)
    throw new Error('README "Install into your project" shows no tsconfig.json');
  return block;
}

/** Runs a command in `cwd` and returns its stdout; throws with its output when it fails. */
export function sh(cwd: string, command: string, args: string[]): string {
  try {
    return execFileSync(command, args, {
      cwd,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, npm_config_fund: 'false', npm_config_audit: 'false' },
    });
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    throw new Error(`${command} ${args.join(' ')} failed in ${cwd}:\n${stdout}\n${stderr}`);
  }
}

/** Runs a command expected to fail; returns its exit status and output. */
export function shFailing(
  cwd: string,
  command: string,
  args: string[],
): { status: number | null; output: string } {
  try {
    execFileSync(command, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (error) {
    const { status, stdout, stderr } = error as {
      status: number | null;
      stdout?: string;
      stderr?: string;
    };
    return { status, output: `${stdout ?? ''}${stderr ?? ''}` };
  }
  throw new Error(`${command} ${args.join(' ')} succeeded in ${cwd}; it should have failed`);
}

/** What only the generator loads: a server must not install them. */
export const GENERATOR_ONLY = ['handlebars', 'jiti', 'prettier', 'ts-morph'];

/** The two published packages' tarballs (scripts/pack.js) of the dist/ the global setup built. */
export interface Tarballs {
  'machine-routes': string;
  'machine-routes-generator': string;
}

/** Packs both packages into `destination`. */
export function packTarballs(destination: string): Tarballs {
  const packed = sh(ROOT, process.execPath, ['scripts/pack.js', '--destination', destination]);
  return JSON.parse(packed) as Tarballs;
}

/** The version of an installed package. */
export function versionIn(modules: string, name: string): string {
  const manifest = readFileSync(path.join(modules, name, 'package.json'), 'utf8');
  return (JSON.parse(manifest) as { version: string }).version;
}

/**
 * Bytes `dir` takes on disk: the blocks allocated to its files and folders, what `du -s` counts
 * (the figure of docs/generator.md's install table).
 */
export function diskBytesUnder(dir: string): number {
  return readdirSync(dir, { withFileTypes: true }).reduce(
    (total, entry) => {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) return total + diskBytesUnder(full);
      return entry.isFile() ? total + statSync(full).blocks * 512 : total;
    },
    statSync(dir).blocks * 512,
  );
}

/** The packages npm installed in a project (its hidden lockfile's entries). */
export function installedPackages(modules: string): string[] {
  const lock = JSON.parse(readFileSync(path.join(modules, '.package-lock.json'), 'utf8')) as {
    packages: Record<string, unknown>;
  };
  return Object.keys(lock.packages).map((key) => key.slice(key.lastIndexOf('node_modules/') + 13));
}

/** The entries of a tarball and its package.json. */
export function unpacked(tarball: string): {
  tops: string[];
  listed: string[];
  manifest: Manifest;
} {
  const listed = sh(ROOT, 'tar', ['-tzf', tarball]).trim().split('\n');
  const tops = [...new Set(listed.map((entry) => entry.split('/')[1] ?? ''))].sort();
  const manifest = JSON.parse(sh(ROOT, 'tar', ['-xzOf', tarball, 'package/package.json']));
  return { tops, listed, manifest: manifest as Manifest };
}

/** The fields of a packed package.json the tests read. */
export interface Manifest {
  scripts?: Record<string, string>;
  dependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  devDependencies?: Record<string, string>;
  exports?: Record<string, string | { types?: string; default?: string }>;
}

/** Bytes of the files under `dir` (their length, not the blocks they take on disk). */
export function bytesUnder(dir: string): number {
  return readdirSync(dir, { withFileTypes: true }).reduce((total, entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return total + bytesUnder(full);
    return entry.isFile() ? total + statSync(full).size : total;
  }, 0);
}
