/**
 * The application process of the race test: `node --import tsx sender.ts <store url>`. Opens a
 * runtime on the store (no worker), prints `READY`, then for each `SEND <id>` line on stdin
 * sends `WORK` to that instance and prints `SENT <sequence>` or `REFUSED <code>`.
 */
import { createInterface } from 'node:readline';
import { MachineRuntime } from '../../../../src/runtime/index.js';
import { raceMachine } from './machines.js';

const runtime = await MachineRuntime.open({
  databaseUrl: process.argv[2]!,
  worker: false,
  machines: [raceMachine],
});
process.stdout.write('READY\n');
createInterface({ input: process.stdin }).on('line', (line) => {
  const id = line.replace(/^SEND /, '');
  runtime.send(raceMachine, id, { type: 'WORK' }).then(
    (result) => process.stdout.write(`SENT ${result.snapshot.sequence}\n`),
    (error: { code?: string }) => process.stdout.write(`REFUSED ${error.code ?? String(error)}\n`),
  );
});
process.once('SIGTERM', () => void runtime.close().then(() => process.exit(0)));
