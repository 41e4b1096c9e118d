import { Worker } from 'node:worker_threads';

/**
 * SQLite: the write-ahead log is copied back into the database file (a checkpoint) by a worker
 * thread on a connection of its own, not by whichever commit happens to find the log long. A
 * checkpoint writes pages all over the file and syncs it; run by the main connection it made that
 * commit wait, and with it the event loop: 1,000-row inserts into a table with nine indexes spent
 * 55 to 60% of their time committing with SQLite's own checkpoints, 32 to 40% without them.
 *
 * The main connection keeps a checkpoint of its own as a backstop (database.ts), for a log that
 * grows past what the worker keeps up with. The worker starts on the first write and stops after
 * a while without any, so an idle service holds no thread for it.
 */

/** How soon after a write the worker checkpoints (writes in between are covered by the same one). */
const DELAY_MS = 200;
/** How long the worker stays without writes. */
const IDLE_MS = 10_000;

const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Sqlite = require(workerData.driver);
const db = new Sqlite(workerData.file);
parentPort.on('message', () => {
  try {
    // PASSIVE: copies what no reader still needs, waits for no one.
    db.pragma('wal_checkpoint(PASSIVE)');
    parentPort.postMessage({});
  } catch (err) {
    parentPort.postMessage({ error: String(err) });
  }
});
`;

export interface Checkpoints {
  /** A write statement ran on the main connection: a checkpoint is due. */
  wrote(): void;
  close(): Promise<void>;
}

export function backgroundCheckpoints(file: string, driver: () => string, onError: (err: unknown) => void): Checkpoints {
  let worker: Worker | null = null;
  let due = false;
  let timer: NodeJS.Timeout | undefined;
  let running = false;
  let closed = false;
  let idle: NodeJS.Timeout | undefined;

  const stop = () => {
    const w = worker;
    worker = null;
    void w?.terminate();
  };

  const run = () => {
    timer = undefined;
    if (closed || !due) return;
    due = false;
    running = true;
    clearTimeout(idle);
    worker ??= new Worker(WORKER_SOURCE, { eval: true, workerData: { file, driver: driver() } });
    const w = worker;
    const done = (message: { error?: string } | undefined) => {
      w.off('exit', exited);
      running = false;
      if (message?.error && !closed) onError(new Error(message.error));
      if (due) schedule();
      else {
        idle = setTimeout(stop, IDLE_MS);
        idle.unref();
      }
    };
    const exited = () => {
      // A worker that died answers nothing more: the next checkpoint starts another.
      if (worker === w) worker = null;
      done({ error: 'the checkpoint worker stopped' });
    };
    w.once('exit', exited);
    w.once('message', done);
    w.postMessage(null);
  };

  const schedule = () => {
    if (timer || running || closed) return;
    timer = setTimeout(run, DELAY_MS);
    timer.unref();
  };

  return {
    wrote() {
      due = true;
      schedule();
    },
    async close() {
      closed = true;
      clearTimeout(timer);
      clearTimeout(idle);
      const w = worker;
      worker = null;
      await w?.terminate();
    },
  };
}
