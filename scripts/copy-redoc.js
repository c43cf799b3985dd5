// Build step: the API reference page's one script, Redoc's standalone bundle, ships inside the
// package (dist/api-reference/), with its licence notice: an app serving its reference needs no
// package of its own for the page (src/runtime/http/api-reference.ts).
import { copyFileSync, mkdirSync } from 'node:fs';

mkdirSync(new URL('../dist/api-reference/', import.meta.url), { recursive: true });
for (const [from, to] of [
  ['bundles/redoc.standalone.js', 'redoc.standalone.js'],
  ['bundles/redoc.standalone.js.LICENSE.txt', 'redoc.standalone.js.LICENSE.txt'],
  ['LICENSE', 'redoc.LICENSE'],
]) {
  copyFileSync(
    new URL(`../node_modules/redoc/${from}`, import.meta.url),
    new URL(`../dist/api-reference/${to}`, import.meta.url),
  );
}
