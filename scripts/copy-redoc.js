// Build step: the API reference page's one script, Redoc's standalone bundle, ships inside the
// package (dist/api-reference/), gzipped (1.1 MB -> 0.3 MB of every install; the server unzips it
// once, on the first request for it), with its licence notice: an app serving its reference
// needs no package of its own for the page (src/runtime/http/api-reference.ts).
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { constants, gzipSync } from 'node:zlib';

const redoc = (file) => new URL(`../node_modules/redoc/${file}`, import.meta.url);
const dist = (file) => new URL(`../dist/api-reference/${file}`, import.meta.url);

mkdirSync(dist(''), { recursive: true });
writeFileSync(
  dist('redoc.standalone.js.gz'),
  gzipSync(readFileSync(redoc('bundles/redoc.standalone.js')), {
    level: constants.Z_BEST_COMPRESSION,
  }),
);
// The uncompressed copy earlier builds wrote.
rmSync(dist('redoc.standalone.js'), { force: true });
for (const [from, to] of [
  ['bundles/redoc.standalone.js.LICENSE.txt', 'redoc.standalone.js.LICENSE.txt'],
  ['LICENSE', 'redoc.LICENSE'],
]) {
  copyFileSync(redoc(from), dist(to));
}
