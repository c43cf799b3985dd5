/**
 * WAL checkpoints of a SQLite store off the request thread (docs/persistence.md "Checkpoints").
 *
 * SQLite checkpoints automatically on the connection that commits, once the WAL passes 1,000
 * pages: that commit then copies the WAL's pages into the database file and syncs both files
 * (two fsyncs, even under `synchronous = NORMAL`), blocking the event loop for milliseconds to
 * tens of milliseconds. Here a worker thread with its own connection runs `PASSIVE` checkpoints
 * instead, which neither wait for nor block writers, whenever commits happened since its last
 * one (polled every `intervalMs`). The store's connection keeps an automatic checkpoint only as
 * the bound: at `fallbackPages` the committing thread checkpoints itself, as SQLite does by
 * default. That is what restarts the WAL under continuous writes (a checkpoint running beside
 * writers never catches up with the last frame, so the file would otherwise only grow) and what
 * caps it if the worker stalls or dies.
 *
 * Durability is unchanged: the worker's connection uses the store's `synchronous` setting, so its
 * checkpoints sync exactly as the automatic ones did.
 */
import { createRequire } from 'node:module';
import type { Worker } from 'node:worker_threads';
import type Database from 'better-sqlite3';

// node:worker_threads when the first checkpoint thread starts (after the store's first 100
// commits), not when the runtime is imported: loading it cost each start 1-2 ms.
let workerThreads: typeof import('node:worker_threads') | undefined;

/** Options of {@link CheckpointWorker}. */
export interface CheckpointWorkerOptions {
  /** The store's connection (its automatic checkpoint is raised to `fallbackPages` while the worker runs). */
  database: Database.Database;
  filename: string;
  synchronous: 'NORMAL' | 'FULL';
  /** Pause between two looks at the commit counter, in ms (default 50). */
  intervalMs?: number;
  /** WAL pages at which the store's own connection checkpoints anyway (default 8,000: 32 MB). */
  fallbackPages?: number;
}

/** SQLite's own automatic checkpoint threshold, restored when the worker goes away. */
const SQLITE_DEFAULT_PAGES = 1000;

// Plain CommonJS evaluated in the thread (no module file to locate from source or dist). The
// driver's path comes from the main thread, which resolved it.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.filename, { fileMustExist: true, timeout: 0 });
db.pragma('synchronous = ' + workerData.synchronous);
// A connection opens the WAL on its first read; until then a checkpoint reports -1 and does nothing.
db.prepare('SELECT count(*) FROM sqlite_schema').get();
const counter = new Int32Array(workerData.counter);
let seen = 0;
let timer;
function tick() {
  const commits = Atomics.load(counter, 0);
  if (commits !== seen) {
    seen = commits;
    try {
      const [result] = db.pragma('wal_checkpoint(PASSIVE)');
      Atomics.add(counter, 1, 1);
      Atomics.store(counter, 2, result.checkpointed);
    } catch {
      // A checkpoint that fails (the file busy in a way PASSIVE does not wait out) is retried
      // at the next commit; the store's fallback bounds the WAL meanwhile.
    }
  }
  timer = setTimeout(tick, workerData.intervalMs);
}
parentPort.on('message', (message) => {
  if (message !== 'stop') return;
  clearTimeout(timer);
  db.close();
  parentPort.close();
});
tick();
parentPort.postMessage('ready');
`;

/** The checkpoint thread of one SQLite store. */
export class CheckpointWorker {
  readonly #database: Database.Database;
  readonly #fallbackPages: number;
  /** [0] commits of the store, [1] checkpoints run by the worker, [2] pages of the last one. */
  readonly #counter = new Int32Array(new SharedArrayBuffer(3 * Int32Array.BYTES_PER_ELEMENT));
  readonly #worker: Worker;
  readonly #exited: Promise<void>;
  #running = false;

  constructor(options: CheckpointWorkerOptions) {
    this.#database = options.database;
    this.#fallbackPages = options.fallbackPages ?? 8000;
    workerThreads ??= createRequire(import.meta.url)(
      'node:worker_threads',
    ) as typeof import('node:worker_threads');
    this.#worker = new workerThreads.Worker(WORKER_SOURCE, {
      eval: true,
      workerData: {
        driver: createRequire(import.meta.url).resolve('better-sqlite3'),
        filename: options.filename,
        synchronous: options.synchronous,
        counter: this.#counter.buffer,
        intervalMs: options.intervalMs ?? 50,
      },
      // The thread keeps nothing of the application's: no inherited loaders or flags to slow it.
      execArgv: [],
      stdout: false,
      stderr: false,
    });
    // Never keeps the process alive; `stop` ends it on close (and refs it until then).
    this.#worker.unref();
    // Raised at once, not on the thread's first message: a caller committing in a loop of
    // resolved promises would not let the event loop deliver it. A thread that fails to start
    // puts the default back on exit.
    this.#database.pragma(`wal_autocheckpoint = ${this.#fallbackPages}`);
    this.#worker.on('message', (message) => {
      if (message === 'ready') this.#running = true;
    });
    this.#exited = new Promise((resolve) => {
      this.#worker.once('exit', () => {
        // Gone (stopped, or failed): the store's connection checkpoints by itself again.
        this.#running = false;
        if (this.#database.open)
          this.#database.pragma(`wal_autocheckpoint = ${SQLITE_DEFAULT_PAGES}`);
        resolve();
      });
    });
    // A failed thread (the driver not loadable there, ...) only costs the inline checkpoints.
    this.#worker.on('error', () => {});
  }

  /** Counts a commit of the store (the worker checkpoints when the count moved). */
  committed(): void {
    Atomics.add(this.#counter, 0, 1);
  }

  /** True once the thread has opened its connection, until it exits. */
  get running(): boolean {
    return this.#running;
  }

  /** Checkpoints the worker has run, and the WAL pages the last one had copied in all. */
  get checkpoints(): { count: number; lastCheckpointedPages: number } {
    return { count: Atomics.load(this.#counter, 1), lastCheckpointedPages: this.#counter[2]! };
  }

  /** Ends the thread (after its checkpoint in progress) and restores SQLite's threshold. */
  async stop(): Promise<void> {
    // Referenced while it stops: an unref'd thread does not keep the event loop alive, so a
    // process with nothing else to do would end before its exit event, and this promise (so the
    // store's close) would never settle.
    this.#worker.ref();
    this.#worker.postMessage('stop');
    await this.#exited;
  }
}
