/**
 * Writes generated files, and compares them with what is on disk for `generate --check`.
 * Generated files are recognised by their `*.gen.ts` / `*.gen.mmd` / `*.gen.svg` / `openapi.json` names: anything else in
 * the output directory is the user's and is never touched.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import type { GeneratedFile } from './manifest.js';
import { compareCodeUnits } from './naming.js';

/** Names `generate` owns in its output directory. */
export function isGeneratedFileName(name: string): boolean {
  return /\.gen\.(?:ts|mmd|svg)$/.test(name) || name === 'openapi.json';
}

function generatedFilesOnDisk(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .map((entry) => entry.split(path.sep).join('/'))
    .filter((entry) => isGeneratedFileName(path.posix.basename(entry)))
    .sort(compareCodeUnits);
}

/** How the files on disk differ from the rendered ones. */
export interface OutputDiff {
  missing: string[];
  extra: string[];
  stale: string[];
}

/** Compares rendered files with the output directory, byte for byte. */
export function diffOutput(dir: string, files: readonly GeneratedFile[]): OutputDiff {
  const onDisk = new Set(generatedFilesOnDisk(dir));
  const rendered = new Set(files.map((file) => file.path));
  const diff: OutputDiff = { missing: [], extra: [], stale: [] };
  for (const file of files) {
    if (!onDisk.has(file.path)) diff.missing.push(file.path);
    else if (readFileSync(path.join(dir, file.path), 'utf8') !== file.contents)
      diff.stale.push(file.path);
  }
  diff.extra = [...onDisk].filter((name) => !rendered.has(name));
  return diff;
}

/**
 * Writes the new and changed files and deletes generated files that are no longer produced.
 * Unchanged files are left alone, so their modification times do not wake watchers and builds.
 */
export function writeOutput(dir: string, files: readonly GeneratedFile[]): OutputDiff {
  const diff = diffOutput(dir, files);
  const changed = new Set([...diff.missing, ...diff.stale]);
  for (const file of files) {
    if (!changed.has(file.path)) continue;
    const target = path.join(dir, file.path);
    mkdirSync(path.dirname(target), { recursive: true });
    writeFileSync(target, file.contents);
  }
  for (const name of diff.extra) rmSync(path.join(dir, name));
  return diff;
}
