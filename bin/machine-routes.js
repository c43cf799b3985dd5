#!/usr/bin/env node
// Thin entry: the compiled CLI (`npm run build`; `npm ci` in this repository runs it through `prepare`).
import { runCli } from '../dist/cli/main.js';

process.exitCode = await runCli(process.argv.slice(2));
