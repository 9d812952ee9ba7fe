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

import { ensureN8n } from '../e2e/n8n-install.mjs';
import { createUserFolder, importCredential, importWorkflow, packPackage, publishWorkflow, runCommand, startN8n } from '../e2e/n8n.mjs';
import { figure } from './figures.ts';
import {
	CREDENTIAL,
	HEADER_AUTH,
	call,
	hostStats,
	imagePackTriggerWorkflow,
	procStatus,
	profiling,
	treeCpuMs,
	userPollWorkflow,
} from './n8n.bench.mjs';

const MIB = 2 ** 20;
/** The issue's bound on a catch-up's peak RSS growth. */
const MAX_GROWTH = 160 * MIB;

/**
 * Which runs the defaults make: 12-image manifests at every backlog and both caps; every other
 * image count, the capped heap and the user's build at 10,000 (the user's build at 1,000 too).
 */
export function drainRuns({ backlogs, caps, images, heapMiB, userBacklogs }) {
	const runs = [];
	const [first, ...others] = images;
	for (const backlog of backlogs) for (const cap of caps) runs.push({ approach: 'trigger', backlog, cap, images: first });
	const mid = backlogs.includes(10_000) ? 10_000 : backlogs[0];
	for (const count of others) for (const cap of caps) runs.push({ approach: 'trigger', backlog: mid, cap, images: count });
	if (heapMiB) for (const count of images) for (const cap of caps) runs.push({ approach: 'trigger', backlog: mid, cap, images: count, heapMiB });
	for (const backlog of userBacklogs) runs.push({ approach: 'user', backlog, images: first });
	return runs;
}

/** Poll gap for a cap: a poll of that many manifests fits in 80 % of it on this machine (1 s for 100, 5 s for 1,000). */
const pollSecondsFor = (cap) => Number(process.env.BENCH_DRAIN_POLL_SECONDS ?? Math.max(1, Math.ceil(cap / 200)));

/** BENCH_N8N_ENV='NAME=value,…': more environment for n8n (to try a setting). */
function extraEnv() {
	const pairs = (process.env.BENCH_N8N_ENV ?? '').split(',').filter(Boolean);
	return Object.fromEntries(pairs.map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]));
}

/**
 * The ids each execution of the workflow emitted (the output of `nodeName`), read row by row under
 * n8n's own Node with its sqlite3 and flatted, so 100,000 items with manifests never sit in one
 * string. Also counts executions by status.
 */
async function emittedIds(userFolder, workflowId, nodeName) {
	const paths = await ensureN8n('default');
	const script = `
		const sqlite3 = require('sqlite3');
		const { parse } = require('flatted');
		const [file, workflowId, nodeName] = JSON.parse(process.argv[1]);
		const db = new sqlite3.Database(file, sqlite3.OPEN_READONLY);
		const ids = [];
		const statuses = {};
		let lastStoppedAt = 0;
		db.each(
			'SELECT e.status, e.stoppedAt, d.data FROM execution_entity e LEFT JOIN execution_data d ON d.executionId = e.id WHERE e.workflowId = ? ORDER BY e.id',
			[workflowId],
			(error, row) => {
				if (error) throw error;
				statuses[row.status] = (statuses[row.status] ?? 0) + 1;
				const run = row.data ? parse(row.data) : null;
				const items = run?.resultData?.runData?.[nodeName]?.at(-1)?.data?.main?.[0] ?? [];
				if (items.length && row.stoppedAt) lastStoppedAt = Math.max(lastStoppedAt, Date.parse(String(row.stoppedAt).replace(' ', 'T') + (/Z|\\+/.test(String(row.stoppedAt)) ? '' : 'Z')));
				for (const item of items) ids.push(Number(item.json.id));
			},
			(error) => {
				if (error) throw error;
				process.stdout.write(JSON.stringify({ ids, statuses, lastStoppedAt }));
				db.close();
			},
		);`;
	const file = path.join(userFolder, '.n8n', 'database.sqlite');
	const result = await runCommand(paths.nodeBin, ['--max-old-space-size=4096', '-e', script, JSON.stringify([file, workflowId, nodeName])], {
		cwd: paths.dir,
		timeoutMs: 10 * 60_000,
	});
	if (result.code !== 0) throw new Error(`reading the executions failed (${result.code}): ${result.stderr.slice(0, 2000)}`);
	return JSON.parse(result.stdout);
}

/**
 * n8n's idle RSS: n8n holds about 300 MiB more for the first 10-15 s after it reports ready, then
 * gives it back. So: at least 30 s after the start, and the last five samples (3 s apart) within 2 %.
 */
async function idleRss(pid, startedAt) {
	const samples = [];
	for (;;) {
		await new Promise((resolve) => setTimeout(resolve, 3000));
		samples.push(procStatus(pid).rss);
		const last = samples.slice(-5);
		const settled = last.length === 5 && Math.max(...last) <= 1.02 * Math.min(...last);
		if ((settled && Date.now() - startedAt > 30_000) || Date.now() - startedAt > 180_000) return samples.at(-1);
	}
}

/** n8n's V8 figures from its /metrics (N8N_METRICS=true): heap total and in use, external memory. */
async function v8Memory(url) {
	try {
		const text = (await call(`${url}/metrics`)).text;
		const read = (name) => Number(new RegExp(`^\\w*${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
		return { heapTotal: read('nodejs_heap_size_total_bytes'), heapUsed: read('nodejs_heap_size_used_bytes'), external: read('nodejs_external_memory_bytes') };
	} catch {
		return { heapTotal: NaN, heapUsed: NaN, external: NaN };
	}
}

/** The highest of each V8 figure, sampled every 2 s until stop(). */
function watchV8(url) {
	const max = { heapTotal: 0, heapUsed: 0, external: 0 };
	let running = true;
	const loop = (async () => {
		while (running) {
			const now = await v8Memory(url);
			for (const key of Object.keys(max)) if (now[key] > max[key]) max[key] = now[key];
			await new Promise((resolve) => setTimeout(resolve, 2000));
		}
	})();
	return {
		async stop() {
			running = false;
			await loop;
			return max;
		},
	};
}

/** Peak RSS of a process from now on: the kernel's high-water mark (reset here when allowed) and samples. */
function watchRss(pid) {
	let resettable = true;
	try {
		fs.writeFileSync(`/proc/${pid}/clear_refs`, '5');
	} catch {
		resettable = false;
	}
	let sampled = procStatus(pid).rss;
	const timer = setInterval(() => {
		const { rss } = procStatus(pid);
		if (rss > sampled) sampled = rss;
	}, 100);
	return {
		stop() {
			clearInterval(timer);
			const { hwm } = procStatus(pid);
			return resettable && Number.isFinite(hwm) ? Math.max(hwm, sampled) : sampled;
		},
	};
}

/**
 * Waits until the backlog is drained: every manifest was read once at least, then nothing new was
 * read for `quietMs` (the user's build re-reads what it has, so detail requests alone do not tell),
 * or n8n exited (a crash), or `timeoutMs` passed.
 */
async function untilDrained({ baseUrl, n8n, backlog, quietMs, timeoutMs }) {
	const started = Date.now();
	let last = -1;
	let changed = Date.now();
	for (;;) {
		await new Promise((resolve) => setTimeout(resolve, 1000));
		if (n8n.process.exitCode !== null || n8n.process.signalCode !== null) return 'crashed';
		const { details } = await hostStats(baseUrl);
		if (details !== last) changed = Date.now();
		last = details;
		if (details >= backlog && Date.now() - changed > quietMs) return 'drained';
		if (Date.now() - started > timeoutMs) return 'timeout';
	}
}

async function drainRun(env, { endpoints, storage, tarball, run, timeoutMs, cpuProfDir }) {
	const log = env.log;
	const baseUrl = endpoints.realisticBaseUrl;
	const pollSeconds = run.approach === 'trigger' ? pollSecondsFor(run.cap) : undefined;
	const id = run.approach === 'trigger' ? 'benchDrainTrigger' : 'benchDrainUser';
	const workflow = run.approach === 'trigger' ? imagePackTriggerWorkflow(id, { pollSeconds, maxPerPoll: run.cap }) : userPollWorkflow(id, baseUrl);
	const label = run.approach === 'trigger' ? `Image Pack Trigger, ${run.cap} per poll every ${pollSeconds} s` : 'Schedule (15 s) + HTTP Request + Code';
	log(`n8n drain: ${label}, ${run.backlog} publications with ${run.images}-image manifests${run.heapMiB ? `, heap capped at ${run.heapMiB} MiB` : ''}`);
	await env.control.reset();
	const user = await createUserFolder({ tarball, dir: fs.mkdtempSync(path.join(storage, 'n8n-drain-')) });
	try {
		await importCredential(user.dir, [
			{ ...CREDENTIAL, type: 'imagePackApi', data: { baseUrl, apiKey: endpoints.apiKey } },
			{ ...HEADER_AUTH, type: 'httpHeaderAuth', data: { name: 'Authorization', value: `Bearer ${endpoints.apiKey}` } },
		]);
		await importWorkflow(user.dir, workflow);
		await publishWorkflow(user.dir, workflow.id);
		const profile = profiling(cpuProfDir).NODE_OPTIONS;
		const nodeOptions = [run.heapMiB ? `--max-old-space-size=${run.heapMiB}` : '', profile ?? ''].join(' ').trim();
		const startedAt = Date.now();
		const n8n = await startN8n({
			userFolder: user.dir,
			echo: Boolean(process.env.BENCH_N8N_ECHO),
			env: {
				N8N_LOG_LEVEL: process.env.BENCH_N8N_ECHO ? 'debug' : 'warn',
				N8N_METRICS: 'true',
				...(nodeOptions ? { NODE_OPTIONS: nodeOptions } : {}),
				...extraEnv(),
			},
		});
		const pid = n8n.process.pid;
		try {
			// Idle: activated, a few polls done (BENCH_DRAIN_WARMUP publications delivered first), RSS settled.
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
			const expectedFrom = firstId - warmup;
			const outcome = await untilDrained({ baseUrl, n8n, backlog: run.backlog, quietMs: run.approach === 'user' ? 50_000 : 10_000, timeoutMs });
			const peak = rss.stop();
			const peakV8 = await v8.stop();
			const cpuMs = treeCpuMs(pid) - cpuBefore;
			const host = await hostStats(baseUrl);
			// What stays once the drain is over: RSS settled again and the heap in use then.
			const settledAfter = outcome === 'crashed' ? NaN : await idleRss(pid, 0);
			const afterV8 = outcome === 'crashed' ? {} : await v8Memory(n8n.url);
			const exitCode = outcome === 'crashed' ? n8n.process.exitCode ?? n8n.process.signalCode : null;
			await n8n.stop();
			const nodeName = run.approach === 'trigger' ? 'Image Pack Trigger' : 'New records only';
			const read = await emittedIds(user.dir, workflow.id, nodeName);
			const counts = new Map();
			for (const emitted of read.ids) counts.set(emitted, (counts.get(emitted) ?? 0) + 1);
			let misses = 0;
			for (let expected = expectedFrom; expected <= lastId; expected++) if (!counts.has(expected)) misses++;
			const duplicates = [...counts.values()].reduce((sum, n) => sum + n - 1, 0);
			const result = {
				...run,
				label,
				pollSeconds,
				outcome,
				exitCode,
				idle,
				peak,
				growth: peak - idle,
				settledAfter,
				v8: { idle: idleV8, peak: peakV8, after: afterV8 },
				drainMs: (read.lastStoppedAt || Date.now()) - publishedAt,
				emitted: read.ids.length - warmup,
				warmup,
				misses,
				duplicates,
				statuses: read.statuses,
				executions: Object.values(read.statuses).reduce((sum, n) => sum + n, 0),
				lists: host.lists,
				details: host.details,
				cpuMs,
			};
			log(`  ${JSON.stringify({ ...result, label: undefined })}`);
			return result;
		} finally {
			await n8n.stop();
		}
	} finally {
		user.cleanup();
	}
}

/** Every run of the matrix, one n8n start each (about 50 minutes with the defaults on 2 cores). */
export async function benchN8nDrain(env, { endpoints, storage, backlogs, caps, images, heapMiB, userBacklogs, timeoutMs, cpuProfDir }) {
	const only = process.env.BENCH_N8N_ONLY;
	const runs = drainRuns({ backlogs, caps, images, heapMiB, userBacklogs }).filter((run) => !only || run.approach === only);
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
	// Flat in the backlog: the largest backlog's growth against the smallest's, per cap and image count.
	for (const r of results.filter((x) => x.approach === 'trigger' && !x.heapMiB)) {
		const series = results.filter((x) => x.approach === 'trigger' && !x.heapMiB && x.cap === r.cap && x.images === r.images);
		if (series.length < 2 || r !== series.at(-1)) continue;
		const largest = Math.max(...series.map((x) => x.growth));
		const smallest = Math.min(...series.map((x) => x.growth));
		figures.push(
			figure({
				group,
				figure: `Image Pack Trigger, ${r.cap} per poll, ${r.images} images: peak RSS growth at ${series.map((x) => x.backlog.toLocaleString('en-US')).join(' / ')} (${series.map((x) => (x.growth / MIB).toFixed(0)).join(' / ')} MiB)`,
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
