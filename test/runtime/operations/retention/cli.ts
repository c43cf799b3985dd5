// `machine-routes` as a fixture process (`node --import tsx cli.ts worker ...`), as bin/ runs it.
import { runCli } from '../../../../src/cli/main.js';

process.exitCode = await runCli(process.argv.slice(2));
