#!/usr/bin/env node
// Thin entry: the compiled CLI (`npm run build`, run by `npm ci` and `npm pack` through `prepare`).
import { runCli } from '../dist/cli/main.js';

process.exitCode = await runCli(process.argv.slice(2));
