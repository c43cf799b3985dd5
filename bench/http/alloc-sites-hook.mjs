/**
 * Preloaded by bench/http/alloc-sites.ts into a server (`node --import`): V8's sampling heap
 * profiler, counting objects already collected too, started on SIGUSR2 and written to
 * BENCH_HEAP_PROFILE on SIGHUP (then `heap profile written` on stderr).
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';

const session = new Session();
session.connect();
session.post('HeapProfiler.enable');
process.on('SIGUSR2', () =>
  session.post('HeapProfiler.startSampling', {
    samplingInterval: Number(process.env.BENCH_HEAP_INTERVAL ?? 128),
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  }),
);
process.on('SIGHUP', () =>
  session.post('HeapProfiler.stopSampling', (error, result) => {
    if (error) throw error;
    writeFileSync(process.env.BENCH_HEAP_PROFILE, JSON.stringify(result.profile));
    process.stderr.write('heap profile written\n');
  }),
);
