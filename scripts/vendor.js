// Build step: the small runtime dependencies that ship inside the package instead of being
// installed beside it (issue 33, production install weight). Each installed package brings its
// README, its type declarations and, for croner, the same code in four builds (CommonJS, ES
// module, UMD, minified): 0.29 MB on disk for commander and croner, 0.06 MB for change-case,
// where the code the package runs takes about 0.13 MB.
//
// - VENDORED: CommonJS packages loaded with `require` (commander by the CLI; croner on a
//   schedule's first use, so a definition stays synchronous and a server without schedules never
//   loads it), bundled by esbuild into dist/vendor/<name>.cjs and loaded by
//   `requireVendored` (src/runtime/own-root.ts); run from the sources, the devDependency itself.
// - change-case, an ES module, is bundled into dist/ by scripts/build.js itself (BUNDLED there).
//
// Their licences (MIT) are written to dist/vendor/LICENSES.txt. Their versions are the
// devDependencies of package.json, so an update is a lockfile change and a rebuild, as before.
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const VENDOR = path.join(ROOT, 'dist/vendor');
const require = createRequire(path.join(ROOT, 'package.json'));

/** The CommonJS dependencies shipped as dist/vendor/<name>.cjs. */
const VENDORED = ['commander', 'croner'];

/** Every package shipped inside dist/ rather than as a dependency, and its licence file. */
const LICENSED = {
  commander: 'LICENSE',
  croner: 'LICENSE',
  // change-case ships no licence file: its package.json says MIT, its author Blake Embrey.
  'change-case': null,
};

function manifestOf(name) {
  const file = path.join(ROOT, 'node_modules', name, 'package.json');
  return { dir: path.dirname(file), manifest: JSON.parse(readFileSync(file, 'utf8')) };
}

function writeAtomically(file, contents) {
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, contents);
  renameSync(temporary, file);
}

mkdirSync(VENDOR, { recursive: true });
for (const name of VENDORED) {
  const { outputFiles } = await build({
    absWorkingDir: ROOT,
    // The file `require(name)` loads (croner's CommonJS build, commander's index.js).
    entryPoints: [require.resolve(name)],
    outfile: path.join(VENDOR, `${name}.cjs`),
    bundle: true,
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    // Minified, names kept (commander's error classes): nobody debugs these copies, and
    // commander's JSDoc would otherwise take 126 KB.
    minify: true,
    keepNames: true,
    logLevel: 'warning',
    write: false,
  });
  const { manifest } = manifestOf(name);
  const banner = `/* ${name} ${manifest.version} (${manifest.license}), bundled into machine-routes: see LICENSES.txt */\n`;
  writeAtomically(outputFiles[0].path, `${banner}${outputFiles[0].text}`);
}

const notices = Object.entries(LICENSED).map(([name, file]) => {
  const { dir, manifest } = manifestOf(name);
  const text =
    file === null
      ? `The MIT License (MIT)\n\nCopyright (c) ${manifest.author.name} <${manifest.author.email}>\n\n${mitPermission()}`
      : readFileSync(path.join(dir, file), 'utf8').trim();
  return `${name} ${manifest.version}\n${'-'.repeat(name.length + manifest.version.length + 1)}\n\n${text}\n`;
});
writeAtomically(
  path.join(VENDOR, 'LICENSES.txt'),
  `machine-routes ships copies of these packages in dist/ (scripts/vendor.js):\n\n${notices.join('\n')}`,
);

/** The MIT licence's text after its copyright line (commander's own copy of it). */
function mitPermission() {
  const commander = readFileSync(path.join(manifestOf('commander').dir, 'LICENSE'), 'utf8');
  return commander.slice(commander.indexOf('Permission is hereby granted')).trim();
}
