/**
 * @module bench/workspaces
 * Workspace snapshot figures (issue 5): snapshot of a 10,000-file workspace, restore of it after
 * 1,000 changes, diff of two such snapshots. In-process (the service, not the wire), printed next
 * to their targets; never asserted. Run: `npm run bench:workspaces`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { buildServices } from '../src/daemon.js';

const FILES = 10_000;
const CHANGES = 1_000;
const RUNS = 5;

function ms(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e6;
}

/** CPU time (user + system, ms) this process used since `start`: on a shared machine, what the
 * operation itself cost, apart from waiting for a core. */
function cpuMs(start: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(start);
  return (d.user + d.system) / 1000;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-ws-'));
  const { fs, workspaces, store, mounts } = buildServices(dir, pino({ level: 'silent' }));
  try {
    const batch = 500;
    for (let i = 0; i < FILES; i += batch) {
      await Promise.all(Array.from({ length: Math.min(batch, FILES - i) }, (_, j) =>
        fs.write(`/ws/d${(i + j) % 50}/s${(i + j) % 7}/f${i + j}.txt`, Buffer.from(`file ${i + j}\n`.repeat(8)))));
    }
    await workspaces.register('/ws');

    const snapshotTimes: number[] = [];
    const restoreTimes: number[] = [];
    const diffTimes: number[] = [];
    const snapshotCpu: number[] = [];
    const restoreCpu: number[] = [];
    const diffCpu: number[] = [];
    let c: NodeJS.CpuUsage;
    for (let run = 0; run < RUNS; run++) {
      c = process.cpuUsage();
      let t = process.hrtime.bigint();
      const base = await workspaces.snapshot('/ws', { description: `base ${run}` });
      snapshotTimes.push(ms(t));
      snapshotCpu.push(cpuMs(c));
      // 1,000 changes: 600 modified, 200 deleted, 200 added
      const ops: Promise<unknown>[] = [];
      for (let k = 0; k < 600; k++) ops.push(fs.write(`/ws/d${k % 50}/s${k % 7}/f${k}.txt`, Buffer.from(`changed ${run} ${k}\n`)));
      for (let k = 600; k < 800; k++) ops.push(fs.delete(`/ws/d${k % 50}/s${k % 7}/f${k}.txt`));
      for (let k = 0; k < CHANGES - 800; k++) ops.push(fs.write(`/ws/new${run}/n${k}.txt`, Buffer.from(`new ${k}\n`)));
      await Promise.all(ops);
      const after = await workspaces.snapshot('/ws');
      c = process.cpuUsage();
      t = process.hrtime.bigint();
      const d = workspaces.diff('/ws', base.snapshot_number, after.snapshot_number);
      diffTimes.push(ms(t));
      diffCpu.push(cpuMs(c));
      if (d.summary.modified_count + d.summary.deleted_count + d.summary.added_count !== CHANGES) throw new Error('diff miscounted');
      c = process.cpuUsage();
      t = process.hrtime.bigint();
      const r = await workspaces.restore('/ws', base.snapshot_number);
      restoreTimes.push(ms(t));
      restoreCpu.push(cpuMs(c));
      if (r.files_restored + r.files_deleted !== CHANGES) throw new Error('restore miscounted');
    }
    const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const rows: [string, number, number, number][] = [
      [`snapshot of ${FILES.toLocaleString('en')} files`, med(snapshotTimes), med(snapshotCpu), 200],
      [`restore after ${CHANGES.toLocaleString('en')} changes`, med(restoreTimes), med(restoreCpu), 1000],
      ['diff of two snapshots', med(diffTimes), med(diffCpu), 100],
    ];
    const [load1] = loadavg();
    console.log(`workspaces (median of ${RUNS} runs, in-process, node ${process.version}, ${cpus().length} cores, load average ${load1!.toFixed(1)})`);
    console.log('operation'.padEnd(34) + 'wall ms'.padStart(10) + 'cpu ms'.padStart(10) + 'target'.padStart(12) + '  verdict (wall)');
    for (const [name, v, cpu, target] of rows) {
      console.log(name.padEnd(34) + v.toFixed(1).padStart(10) + cpu.toFixed(1).padStart(10) + `≤ ${target}`.padStart(12) + `  ${v <= target ? 'meets' : 'MISSES'}`);
    }
  } finally {
    await mounts.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
