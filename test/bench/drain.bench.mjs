// `npm run bench -- --n8n --n8n-parts=drain`: what draining a backlog costs a running n8n 2.41.1
// (legacy scheduler, the trigger alone, n8n's default execution saving): the n8n process's peak RSS
// over its idle baseline, the drain rate and whether every publication arrived once, for the Image
// Pack Trigger at its default and a larger Max Publications per Poll, with manifests of 12 and 40
// images, with n8n's heap uncapped and capped like a small instance, next to the Schedule + HTTP
// Request + Code build a user would make. Each run is its own n8n start on an empty account: the
// idle RSS is read once the activation poll is done and RSS has settled, then the backlog is
// published and drained.
import fs from 'node:fs';
import path from 'node:path';

import { createUserFolder, importCredential, importWorkflow, packPackage, publishWorkflow, startN8n } from '../e2e/n8n.mjs';
import { emittedIds, idleRss, untilDrained, v8Memory, watchV8 } from './drain-measure.mjs';
import { figure } from './figures.ts';
import { CREDENTIAL, HEADER_AUTH, hostStats, imagePackTriggerWorkflow, profiling, treeCpuMs, userPollWorkflow, watchRss } from './n8n.bench.mjs';

const MIB = 2 ** 20;
/** The issue's bound on a catch-up's peak RSS growth. */
const MAX_GROWTH = 160 * MIB;

/**
 * Which runs the defaults make: 12-image manifests at every backlog and both caps; every other
 * image count, the capped heap and the user's build at 10,000 (the user's build at 1,000 too).
 */
export function drainRuns({ backlogs, caps, images, heapMiB, userBacklogs, pollSeconds }) {
	const runs = [];
	const [first, ...others] = images;
	// BENCH_DRAIN_HEAP_ALL=320: the main series with the heap capped too (is it flat there?).
	const all = Number(process.env.BENCH_DRAIN_HEAP_ALL ?? 0) || undefined;
	for (const backlog of backlogs) for (const cap of caps) runs.push({ approach: 'trigger', backlog, cap, images: first, heapMiB: all });
	const mid = backlogs.includes(10_000) ? 10_000 : backlogs[0];
	for (const count of others) for (const cap of caps) runs.push({ approach: 'trigger', backlog: mid, cap, images: count, heapMiB: all });
	if (heapMiB) for (const count of images) for (const cap of caps) runs.push({ approach: 'trigger', backlog: mid, cap, images: count, heapMiB });
	for (const run of runs) if (pollSeconds) run.pollSeconds = pollSeconds;
	for (const backlog of userBacklogs) runs.push({ approach: 'user', backlog, images: first });
	return runs;
}

/**
 * Poll gap of a run: `--n8n-drain-poll=<seconds>` when given, else the fastest a cap allows: a poll of
 * that many manifests fits in 80 % of it on this machine (1 s for 100, 5 s for 1,000).
 */
const pollSecondsFor = (run) =>
	run.pollSeconds ?? Number(process.env.BENCH_DRAIN_POLL_SECONDS ?? Math.max(1, Math.ceil(run.cap / 200)));

/** BENCH_N8N_ENV='NAME=value,…': more environment for n8n (to try a setting). */
function extraEnv() {
	const pairs = (process.env.BENCH_N8N_ENV ?? '').split(',').filter(Boolean);
	return Object.fromEntries(pairs.map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]));
}

/** The workflow of a run, in a new n8n user folder with both credentials. */
async function prepareRun(env, { endpoints, storage, tarball, run }) {
	const baseUrl = endpoints.realisticBaseUrl;
	const pollSeconds = run.approach === 'trigger' ? pollSecondsFor(run) : undefined;
	const id = run.approach === 'trigger' ? 'benchDrainTrigger' : 'benchDrainUser';
	const workflow =
		run.approach === 'trigger' ? imagePackTriggerWorkflow(id, { pollSeconds, maxPerPoll: run.cap }) : userPollWorkflow(id, baseUrl);
	const label = run.approach === 'trigger' ? `Image Pack Trigger, ${run.cap} per poll every ${pollSeconds} s` : 'Schedule (15 s) + HTTP Request + Code';
	const user = await createUserFolder({ tarball, dir: fs.mkdtempSync(path.join(storage, 'n8n-drain-')) });
	await importCredential(user.dir, [
		{ ...CREDENTIAL, type: 'imagePackApi', data: { baseUrl, apiKey: endpoints.apiKey } },
		{ ...HEADER_AUTH, type: 'httpHeaderAuth', data: { name: 'Authorization', value: `Bearer ${endpoints.apiKey}` } },
	]);
	await importWorkflow(user.dir, workflow);
	await publishWorkflow(user.dir, workflow.id);
	return { user, workflow, label, pollSeconds };
}

function startFor(user, run, cpuProfDir) {
	const profile = profiling(cpuProfDir).NODE_OPTIONS;
	const nodeOptions = [run.heapMiB ? `--max-old-space-size=${run.heapMiB}` : '', profile ?? ''].join(' ').trim();
	return startN8n({
		userFolder: user.dir,
		echo: Boolean(process.env.BENCH_N8N_ECHO),
		env: {
			N8N_LOG_LEVEL: process.env.BENCH_N8N_ECHO ? 'debug' : 'warn',
			N8N_METRICS: 'true',
			...(nodeOptions ? { NODE_OPTIONS: nodeOptions } : {}),
			...extraEnv(),
		},
	});
}

/**
 * Idle (activated, a few empty polls done, RSS settled; BENCH_DRAIN_WARMUP publications delivered
 * first), then the backlog published and drained: RSS, V8 heap, CPU and requests over the drain, and
 * what stays once it is over.
 */
async function measureDrain(env, { n8n, startedAt, run, baseUrl, timeoutMs }) {
	const pid = n8n.process.pid;
	const warmup = Number(process.env.BENCH_DRAIN_WARMUP ?? 0);
	if (warmup) await env.control.publishBulk({ count: warmup, images: run.images });
	const idle = await idleRss(pid, startedAt);
	const idleV8 = await v8Memory(n8n.url);
	await hostStats(baseUrl, true);
	const cpuBefore = treeCpuMs(pid);
	const rss = watchRss(pid);
	const v8 = watchV8(n8n.url);
	const publishedAt = Date.now();
	const { firstId, lastId } = await env.control.publishBulk({ count: run.backlog, images: run.images });
	const quietMs = run.approach === 'user' ? 50_000 : 10_000;
	const outcome = await untilDrained({ baseUrl, n8n, backlog: run.backlog, quietMs, timeoutMs });
	const peak = rss.stop();
	const peakV8 = await v8.stop();
	const cpuMs = treeCpuMs(pid) - cpuBefore;
	const { lists, details } = await hostStats(baseUrl);
	const crashed = outcome === 'crashed';
	const settledAfter = crashed ? NaN : await idleRss(pid, 0);
	const afterV8 = crashed ? {} : await v8Memory(n8n.url);
	const exitCode = crashed ? (n8n.process.exitCode ?? n8n.process.signalCode) : null;
	const v8Figures = { idle: idleV8, peak: peakV8, after: afterV8 };
	return { outcome, exitCode, idle, peak, growth: peak - idle, settledAfter, v8: v8Figures, publishedAt, cpuMs, lists, details, warmup, ids: [firstId - warmup, lastId] };
}

/** Whether every publication from `from` to `to` was emitted once, from what n8n stored. */
async function verifyDrain(user, workflow, approach, [from, to]) {
	const nodeName = approach === 'trigger' ? 'Image Pack Trigger' : 'New records only';
	const read = await emittedIds(user.dir, workflow.id, nodeName);
	const counts = new Map();
	for (const emitted of read.ids) counts.set(emitted, (counts.get(emitted) ?? 0) + 1);
	let misses = 0;
	for (let expected = from; expected <= to; expected++) if (!counts.has(expected)) misses++;
	const duplicates = [...counts.values()].reduce((sum, n) => sum + n - 1, 0);
	const executions = Object.values(read.statuses).reduce((sum, n) => sum + n, 0);
	return { emittedAll: read.ids.length, misses, duplicates, statuses: read.statuses, executions, lastStoppedAt: read.lastStoppedAt };
}

async function drainRun(env, { endpoints, storage, tarball, run, timeoutMs, cpuProfDir }) {
	await env.control.reset();
	const { user, workflow, label, pollSeconds } = await prepareRun(env, { endpoints, storage, tarball, run });
	const heap = run.heapMiB ? `, heap capped at ${run.heapMiB} MiB` : '';
	env.log(`n8n drain: ${label}, ${run.backlog} publications with ${run.images}-image manifests${heap}`);
	try {
		const startedAt = Date.now();
		const n8n = await startFor(user, run, cpuProfDir);
		let measured;
		try {
			measured = await measureDrain(env, { n8n, startedAt, run, baseUrl: endpoints.realisticBaseUrl, timeoutMs });
		} finally {
			await n8n.stop();
		}
		const verified = await verifyDrain(user, workflow, run.approach, measured.ids);
		const result = {
			...run,
			label,
			pollSeconds,
			...measured,
			...verified,
			emitted: verified.emittedAll - measured.warmup,
			drainMs: (verified.lastStoppedAt || Date.now()) - measured.publishedAt,
		};
		env.log(`  ${JSON.stringify({ ...result, label: undefined })}`);
		return result;
	} finally {
		user.cleanup();
	}
}

/** Every run of the matrix, one n8n start each (about 50 minutes with the defaults on 2 cores). */
export async function benchN8nDrain(env, { endpoints, storage, backlogs, caps, images, heapMiB, userBacklogs, pollSeconds, timeoutMs, cpuProfDir }) {
	const only = process.env.BENCH_N8N_ONLY;
	const runs = drainRuns({ backlogs, caps, images, heapMiB, userBacklogs, pollSeconds }).filter((run) => !only || run.approach === only);
	const tarball = await packPackage();
	const results = [];
	try {
		for (const run of runs) results.push(await drainRun(env, { endpoints, storage, tarball, run, timeoutMs, cpuProfDir }));
	} finally {
		fs.rmSync(path.dirname(tarball), { recursive: true, force: true });
		await env.control.reset();
	}
	return drainFigures(results);
}

function drainFigures(results) {
	const group =
		'N8N-3. Draining a backlog in a running n8n 2.41.1 (legacy scheduler, the trigger alone, default execution saving): peak RSS over idle, drain rate, each publication once';
	const note =
		'Drain: peak RSS = the n8n process\'s kernel high-water mark from the publication of the backlog to the last execution (reset before), minus its settled RSS while idle. ' +
		'Rate = publications delivered per second from the publication of the backlog to the end of the last execution that emitted. Heap 320 MiB = NODE_OPTIONS=--max-old-space-size=320 (a 640 MiB instance).';
	const figures = [];
	for (const r of results) {
		const heap = r.heapMiB ? `, heap ${r.heapMiB} MiB` : '';
		const name = `${r.label}, ${r.backlog.toLocaleString('en-US')} × ${r.images} images${heap}`;
		const failed = r.outcome !== 'drained' ? ` — ${r.outcome.toUpperCase()}${r.exitCode !== null ? ` (${r.exitCode})` : ''}` : '';
		figures.push(
			figure({
				group,
				figure: `${name}: peak RSS growth (idle ${(r.idle / MIB).toFixed(0)} → peak ${(r.peak / MIB).toFixed(0)} MiB)${failed}`,
				measured: r.growth,
				ideal: null,
				unit: 'bytes',
				...(r.approach === 'trigger' ? { maxValue: MAX_GROWTH } : { target: '—' }),
				note,
			}),
			figure({
				group,
				figure: `${name}: RSS that stays once settled after the drain, over idle (V8 heap in use idle → peak → after: ${[r.v8.idle.heapUsed, r.v8.peak.heapUsed, r.v8.after.heapUsed].map((v) => (v / MIB).toFixed(0)).join(' → ')} MiB)`,
				measured: r.settledAfter - r.idle,
				ideal: null,
				unit: 'bytes',
				target: '—',
			}),
			figure({
				group,
				figure: `${name}: drain rate (${r.executions} executions, ${r.lists} list / ${r.details} detail requests)`,
				measured: r.emitted / Math.max(0.001, r.drainMs / 1000),
				ideal: null,
				unit: '/s',
				target: '—',
			}),
			figure({
				group,
				figure: `${name}: misses / duplicates (${r.misses} / ${r.duplicates})`,
				measured: r.misses + r.duplicates,
				ideal: 0,
				unit: '',
				maxValue: 0,
			}),
		);
	}
	// Flat in the backlog: the largest backlog's growth against the smallest's, per cap, image count and heap.
	for (const r of results.filter((x) => x.approach === 'trigger')) {
		const series = results.filter((x) => x.approach === 'trigger' && x.heapMiB === r.heapMiB && x.cap === r.cap && x.pollSeconds === r.pollSeconds && x.images === r.images);
		if (series.length < 2 || r !== series.at(-1)) continue;
		const largest = Math.max(...series.map((x) => x.growth));
		const smallest = Math.min(...series.map((x) => x.growth));
		figures.push(
			figure({
				group,
				figure: `Image Pack Trigger, ${r.cap} per poll every ${r.pollSeconds} s, ${r.images} images${r.heapMiB ? `, heap ${r.heapMiB} MiB` : ''}: peak RSS growth at ${series.map((x) => x.backlog.toLocaleString('en-US')).join(' / ')} (${series.map((x) => (x.growth / MIB).toFixed(0)).join(' / ')} MiB)`,
				measured: largest,
				ideal: smallest,
				unit: 'bytes',
				// Flat: garbage awaiting collection varies by a few tens of MiB between runs.
				verdict: largest <= Math.max(1.5 * smallest, smallest + 32 * MIB) ? 'pass' : 'miss',
				target: 'flat: ≤ 1.5 × or + 32 MiB over the least',
			}),
		);
	}
	return figures;
}
