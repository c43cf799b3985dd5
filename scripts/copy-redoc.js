// Build step: the API reference page's one script, Redoc's standalone bundle, ships inside the
// package (dist/api-reference/), compressed with Brotli at its best (1.1 MB -> 0.27 MB of every
// install; gzip's best was 0.33 MB; the server decompresses it once, on the first request for it,
// in about 10 ms), with its licence notice: an app serving its reference
// needs no package of its own for the page (src/runtime/http/api-reference.ts).
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { brotliCompressSync, constants } from 'node:zlib';

const redoc = (file) => new URL(`../node_modules/redoc/${file}`, import.meta.url);
const dist = (file) => new URL(`../dist/api-reference/${file}`, import.meta.url);

mkdirSync(dist(''), { recursive: true });
const bundle = readFileSync(redoc('bundles/redoc.standalone.js'));
writeFileSync(
  dist('redoc.standalone.js.br'),
  brotliCompressSync(bundle, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: constants.BROTLI_MAX_QUALITY,
      [constants.BROTLI_PARAM_LGWIN]: constants.BROTLI_MAX_WINDOW_BITS,
      [constants.BROTLI_PARAM_SIZE_HINT]: bundle.length,
    },
  }),
);
// The copies earlier builds wrote (uncompressed, then gzipped).
rmSync(dist('redoc.standalone.js'), { force: true });
rmSync(dist('redoc.standalone.js.gz'), { force: true });
for (const [from, to] of [
  ['bundles/redoc.standalone.js.LICENSE.txt', 'redoc.standalone.js.LICENSE.txt'],
  ['LICENSE', 'redoc.LICENSE'],
]) {
  copyFileSync(redoc(from), dist(to));
}
