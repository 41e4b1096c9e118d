// File attachments benchmark: one large file through the service's local storage, against a plain
// copy of the same file on the same disk. The service is `rowhouse serve` on a fresh data directory
// (ROWHOUSE_STORAGE left at its default, file:<data dir>/files). A source file of deterministic
// pseudo-random bytes is written to a temp directory; then, per round: the floor (a stream pipeline
// read → write of the file, fsynced at the end as the service's write is), the upload (PUT of the
// upload URL streamed from disk with a Content-Length, attached to a row), and the download (GET of
// the row's signed URL streamed to a file, fsynced too), checked byte for byte by sha256. Reports
// MB/s (10^6 bytes) of each, best of the rounds, with the CPU time of the service and of this
// script, and the service's peak RSS growth while it moves the bytes (VmRSS sampled every 50 ms, and
// VmHWM, over the RSS after a small warm-up file): it must stay under 64 MiB, whatever the file's size.
// The script is the client, so on a small machine its own work (hashing, writing the download)
// competes with the service's for the cores.
//   npm run build && node --import tsx bench/files.ts [megabytes=500] [rounds=3]
import { createCipheriv, createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { api } from './support/dataset.ts';
import { ROOT, cpuMs, memory, sampled, startService } from './support/processes.ts';

const MEGABYTES = Number(process.argv[2] ?? 500);
const ROUNDS = Number(process.argv[3] ?? 3);
if (!(MEGABYTES > 0) || !(Number.isInteger(ROUNDS) && ROUNDS >= 1)) throw new Error('usage: bench/files.ts [megabytes=500] [rounds=3]');
const SIZE = Math.round(MEGABYTES * 1e6);
const RSS_BUDGET_MIB = 64;
const SAMPLE_MS = 50;
const CONTENT_TYPE = 'application/octet-stream';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rowhouse-bench-files-'));
const dataDir = path.join(dir, 'data');
const sourceFile = path.join(dir, 'source.bin');

/** Whether `rowhouse serve` runs the build or src/ through tsx (bin/rowhouse.mjs's own test, simplified). */
function runsBuild(): boolean {
  const built = fs.statSync(path.join(ROOT, 'dist/cli.js'), { throwIfNoEntry: false });
  if (!built) return false;
  return fs
    .readdirSync(path.join(ROOT, 'src'), { recursive: true, withFileTypes: true })
    .every((e) => !e.isFile() || !e.name.endsWith('.ts') || fs.statSync(path.join(e.parentPath, e.name)).mtimeMs <= built.mtimeMs);
}

/**
 * Writes `size` deterministic pseudo-random bytes to `file` in 1 MiB chunks (the AES-128-CTR key
 * stream of a fixed key: fast, and the same bytes every run); answers their sha256.
 */
async function writeSource(file: string, size: number): Promise<string> {
  const cipher = createCipheriv('aes-128-ctr', Buffer.from('rowhouse-bench-f'), Buffer.alloc(16));
  const hash = createHash('sha256');
  const zeros = Buffer.alloc(1 << 20);
  let left = size;
  async function* chunks() {
    while (left > 0) {
      const n = Math.min(left, zeros.length);
      const chunk = cipher.update(n === zeros.length ? zeros : zeros.subarray(0, n));
      hash.update(chunk);
      left -= n;
      yield chunk;
    }
  }
  await pipeline(chunks, fs.createWriteStream(file, { flush: true }));
  return hash.digest('hex');
}

/** Passes bytes through, hashing them. */
function hashing(hash: ReturnType<typeof createHash>): Transform {
  return new Transform({
    transform(chunk: Buffer, _enc, callback) {
      hash.update(chunk);
      callback(null, chunk);
    },
  });
}

/** Collects a response's body as text. */
async function text(res: http.IncomingMessage): Promise<string> {
  let out = '';
  res.setEncoding('utf8');
  for await (const chunk of res) out += chunk;
  return out;
}

/** PUT of `file` to an upload URL, streamed from disk with its Content-Length; answers the service's {id, size}. */
function upload(url: string, file: string, size: number): Promise<{ id: string; size: number }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'PUT', agent: false, headers: { 'content-type': CONTENT_TYPE, 'content-length': size } }, (res) => {
      text(res).then((body) => {
        if (res.statusCode !== 200) reject(new Error(`PUT upload URL → ${res.statusCode}: ${body.slice(0, 300)}`));
        else resolve(JSON.parse(body));
      }, reject);
    });
    req.on('error', reject);
    pipeline(fs.createReadStream(file), req).catch(reject);
  });
}

/** GET of a download URL, streamed to `file` (fsynced at the end) and hashed on the way; answers the sha256. */
function download(url: string, file: string, size: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent: false }, (res) => {
      if (res.statusCode !== 200) {
        text(res).then((body) => reject(new Error(`GET download URL → ${res.statusCode}: ${body.slice(0, 300)}`)), reject);
        return;
      }
      if (res.headers['content-length'] !== String(size)) reject(new Error(`download Content-Length ${res.headers['content-length']}, expected ${size}`));
      if (res.headers['content-type'] !== CONTENT_TYPE) reject(new Error(`download Content-Type ${res.headers['content-type']}, expected ${CONTENT_TYPE}`));
      const hash = createHash('sha256');
      pipeline(res, hashing(hash), fs.createWriteStream(file, { flush: true })).then(() => resolve(hash.digest('hex')), reject);
    });
    req.on('error', reject);
  });
}

const seconds = (t0: bigint) => Number(process.hrtime.bigint() - t0) / 1e9;

/** Regular files under the storage root, apart from writes in progress (.partial). */
function storedFiles(root: string): string[] {
  if (!fs.existsSync(root)) return [];
  return fs
    .readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && !path.relative(root, path.join(e.parentPath, e.name)).startsWith('.partial'))
    .map((e) => path.join(e.parentPath, e.name));
}

const build = runsBuild();
const service = await startService({ ROWHOUSE_DATA_DIR: dataDir, ROWHOUSE_MAX_FILE_BYTES: String(Math.max(2 ** 30, SIZE)) }).catch((err) => {
  fs.rmSync(dir, { recursive: true, force: true });
  throw err;
});
const pid = service.child.pid as number;
const storageRoot = path.join(dataDir, 'files');

/** The whole cycle for one row: upload URL, upload, attach, read the row, download, verify, delete the row. */
async function cycle(rowId: string, file: string, size: number, sha256: string, measure: (phase: 'upload' | 'download', work: () => Promise<unknown>) => Promise<void>) {
  const urls = await api(service.url, 'POST', `/api/tables/files/rows/${rowId}/file-upload-url`, { count: 1 });
  const { id, url } = urls.data[0] as { id: string; url: string };
  await measure('upload', async () => {
    const answer = await upload(url, file, size);
    if (answer.id !== id || answer.size !== size) throw new Error(`upload answered ${JSON.stringify(answer)}, expected id ${id} and size ${size}`);
  });
  await api(service.url, 'POST', '/api/tables/files/rows', { id: rowId, values: { title: rowId, attachment: { id, name: `${rowId}.bin` } } });
  const row = await api(service.url, 'GET', `/api/tables/files/rows/${rowId}`);
  const value = row.values.attachment as { id: string; size: number; mimeType: string; url: string };
  if (value.id !== id || value.size !== size || value.mimeType !== CONTENT_TYPE) throw new Error(`the row reads ${JSON.stringify(value)}`);
  const target = path.join(dir, `${rowId}.download`);
  await measure('download', async () => {
    const got = await download(value.url, target, size);
    if (got !== sha256) throw new Error(`downloaded bytes differ from the source: sha256 ${got}, expected ${sha256}`);
  });
  fs.rmSync(target);
  // Deleting the row lets go of the file: its bytes are deleted after the commit (and the disk freed for the next round).
  await api(service.url, 'DELETE', `/api/tables/files/rows/${rowId}`);
  const deadline = Date.now() + 10_000;
  while (storedFiles(storageRoot).length > 0) {
    if (Date.now() > deadline) throw new Error(`bytes of deleted row ${rowId} still stored after 10 s: ${storedFiles(storageRoot).join(', ')}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

type Workload = 'floor' | 'upload' | 'download' | 'pipelineNoSync' | 'copyFile';
/** One timed run: wall seconds, CPU ms of this process and (upload, download) of the service, the service's peak VmRSS. */
interface Run {
  seconds: number;
  benchCpuMs: number;
  /** The service's user and system CPU: its code runs in the first, the kernel's copying and page cache in the second. */
  serviceCpuMs?: { user: number; system: number };
  peakRss?: number;
}
const runs: Record<Workload, Run[]> = { floor: [], upload: [], download: [], pipelineNoSync: [], copyFile: [] };
let baseline = { rss: 0, hwm: 0 };
let samples = 0;
let maxGapMs = 0;
let sourceSha = '';
let hwmAfter = NaN;

async function measured(workload: Workload, work: () => Promise<unknown>, ofService: boolean): Promise<void> {
  const cpu0 = process.cpuUsage();
  const service0 = ofService ? cpuMs(pid) : null;
  const t0 = process.hrtime.bigint();
  const s = ofService ? await sampled(pid, work, SAMPLE_MS) : { peak: undefined, samples: 0, maxGapMs: 0, result: await work() };
  const wall = seconds(t0);
  const cpu = process.cpuUsage(cpu0);
  runs[workload].push({ seconds: wall, benchCpuMs: (cpu.user + cpu.system) / 1000, serviceCpuMs: service0 ? { user: cpuMs(pid).user - service0.user, system: cpuMs(pid).system - service0.system } : undefined, peakRss: s.peak });
  samples += s.samples;
  maxGapMs = Math.max(maxGapMs, s.maxGapMs);
}

try {
  console.log(`writing ${MEGABYTES} MB of pseudo-random bytes to ${sourceFile}`);
  sourceSha = await writeSource(sourceFile, SIZE);
  await api(service.url, 'POST', '/api/tables', { code: 'files', name: 'Files', fields: [{ code: 'title', type: 'text' }, { code: 'attachment', type: 'file' }] });

  // Warm-up: the whole cycle once on 1 MB, so the baseline counts the code paths' own memory.
  const small = path.join(dir, 'warmup.bin');
  const smallSha = await writeSource(small, 1e6);
  await cycle('warmup', small, 1e6, smallSha, async (_phase, work) => void (await work()));
  fs.rmSync(small);
  await new Promise((r) => setTimeout(r, 1000));
  baseline = memory(pid);

  for (let round = 1; round <= ROUNDS; round++) {
    const copy = path.join(dir, 'floor.bin');
    await measured('floor', () => pipeline(fs.createReadStream(sourceFile), fs.createWriteStream(copy, { flush: true })), false);
    fs.rmSync(copy);
    await measured('pipelineNoSync', () => pipeline(fs.createReadStream(sourceFile), fs.createWriteStream(copy)), false);
    fs.rmSync(copy);
    await measured('copyFile', () => fs.promises.copyFile(sourceFile, copy), false);
    fs.rmSync(copy);
    await cycle(`r${round}`, sourceFile, SIZE, sourceSha, (phase, work) => measured(phase, work, true));
  }
} finally {
  if (service.child.exitCode === null) hwmAfter = memory(pid).hwm;
  await service.stop();
  fs.rmSync(dir, { recursive: true, force: true });
}

/** The fastest run of a workload. */
const best = (w: Workload) => runs[w].reduce((a, b) => (b.seconds < a.seconds ? b : a));
const mbps = (r: Run) => SIZE / 1e6 / r.seconds;
const floor = mbps(best('floor'));
console.log(
  `\n${MEGABYTES} MB file, ${ROUNDS === 1 ? '1 round' : `best of ${ROUNDS} rounds`}; service: node bin/rowhouse.mjs serve (${build ? 'the build in dist/' : 'src/ through tsx: npm run build for the compiled start'}), local storage in ${os.tmpdir()}\n`,
);
console.log(`${'workload'.padEnd(48)} ${'seconds'.padStart(8)} ${'MB/s'.padStart(6)} ${'of floor'.padStart(9)} ${'service CPU s user+sys'.padStart(23)} ${'bench CPU s'.padStart(12)}`);
const line = (name: string, w: Workload) => {
  const r = best(w);
  const ratio = w === 'upload' || w === 'download' ? (mbps(r) / floor).toFixed(2) : '';
  const service = r.serviceCpuMs ? `${(r.serviceCpuMs.user / 1000).toFixed(2)}+${(r.serviceCpuMs.system / 1000).toFixed(2)}` : '';
  console.log(`${name.padEnd(48)} ${r.seconds.toFixed(2).padStart(8)} ${mbps(r).toFixed(0).padStart(6)} ${ratio.padStart(9)} ${service.padStart(23)} ${(r.benchCpuMs / 1000).toFixed(2).padStart(12)}`);
};
line('floor: fs stream pipeline read → write, fsync', 'floor');
line('upload: PUT streamed from disk (service fsyncs)', 'upload');
line('download: GET streamed to disk, sha256, fsync', 'download');
line('reference: fs stream pipeline, no fsync', 'pipelineNoSync');
line('reference: fs.promises.copyFile, no fsync', 'copyFile');
if (ROUNDS > 1) {
  const all = (w: Workload) => runs[w].map((r) => mbps(r).toFixed(0)).join(' ');
  console.log(`MB/s of every round: floor ${all('floor')}; upload ${all('upload')}; download ${all('download')}`);
}
console.log(`\nsha256 of the source and of every download: ${sourceSha}`);

const peak = (w: Workload) => Math.max(...runs[w].map((r) => r.peakRss as number));
// VmHWM catches a peak between two samples, when it rose past its level after warm-up (only the measured cycles ran since).
const growth = Math.max(peak('upload'), peak('download'), hwmAfter > baseline.hwm ? hwmAfter : 0) - baseline.rss;
console.log(
  `service VmRSS ${baseline.rss.toFixed(1)} MiB after warm-up; peak ${peak('upload').toFixed(1)} MiB during uploads, ${peak('download').toFixed(1)} MiB during downloads (${samples} samples, longest gap ${maxGapMs.toFixed(0)} ms); VmHWM ${baseline.hwm.toFixed(1)} MiB after warm-up, ${hwmAfter.toFixed(1)} MiB at the end`,
);
const budgets: [string, boolean][] = [[`service peak RSS growth while moving the file under ${RSS_BUDGET_MIB} MiB (${growth.toFixed(1)} MiB)`, growth < RSS_BUDGET_MIB]];
console.log('\nbudgets:');
for (const [what, ok] of budgets) console.log(`  ${ok ? 'PASS' : 'FAIL'}  ${what}`);
process.exit(budgets.every(([, ok]) => ok) ? 0 : 1);
