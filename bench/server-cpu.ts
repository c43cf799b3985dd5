/**
 * CPU time of a benchmark's server process, read from outside (Linux): the run time the
 * scheduler accounted to each of its threads (/proc/<pid>/task/<tid>/schedstat, nanoseconds:
 * the main thread, GC helpers, libuv workers, a SQLite checkpoint thread), finer than the 10 ms
 * ticks of /proc/<pid>/stat. What `process.cpuUsage()` inside the server would say, without a
 * request to ask it.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** Microseconds of CPU the process `pid` has used so far, every thread counted. */
export function serverCpuMicros(pid: number): number {
  let total = 0;
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      total += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return total / 1000;
}

/** Median and quartiles of `a[i] / b[i]` over paired rounds, as `0.93x (quartiles 0.90-0.95)`. */
export function pairedRatio(a: readonly number[], b: readonly number[]): string {
  const { median, low, high } = pairedRatioOf(a, b);
  return `${median.toFixed(2)}x (quartiles ${low.toFixed(2)}-${high.toFixed(2)})`;
}

/** The median and quartiles of `a[i] / b[i]`. */
export function pairedRatioOf(
  a: readonly number[],
  b: readonly number[],
): { median: number; low: number; high: number } {
  const ratios = a.map((value, index) => value / b[index]!).sort((x, y) => x - y);
  const at = (q: number) => ratios[Math.round((ratios.length - 1) * q)]!;
  return { median: at(0.5), low: at(0.25), high: at(0.75) };
}
