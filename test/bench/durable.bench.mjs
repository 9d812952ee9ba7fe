// `npm run bench -- --n8n --n8n-parts=durable`: what Generate's durable record of each paid send
// (generate/durable.ts: one `checkProcessedAndRecord` in n8n's deduplication store before every send)
// costs a real n8n 2.41.1 (SQLite). The target: at its bound, batch wall time within 2 % of the same
// batch without it, n8n's CPU per item shown beside it.
//
// The batch is the n8n bench's (Webhook → Split Out → Generate with downloads, n8n.bench.mjs). Builds:
// - `with`: the package now. The node's row in `processed_data` (workflow, context `n:<node id>`) is set
//   before every run in n8n's own format (`{"mode":"entries","data":[base64 MD5, …]}`, what TypeORM's
//   simple-json writes): `bound`, the node's row at its cap (`RECORD_LIMITS.sends`); `empty`, no row; `off`, the
//   row at the bound but n8n's store answering in place (n8n-profiler.cjs, `store-off`): the node's code
//   unchanged without the database round trip, in the same n8n start as the other two, run by run.
// - `without`: the package built from the commit before the record (`--n8n-durable-base=8a9ff14`,
//   packed from a temporary git worktree, removed again), in its own n8n start on the same user folder.
//   It also lacks everything else since that commit.
// - `stubbed` (only with `--n8n-durable-builds=…,stubbed`): the package now with the store call
//   answered in place in its code (durable.js patched in an unpacked copy), in its own n8n start.
// `--n8n-durable-states=bound,off` runs only those row states (`with` build); `--n8n-durable-builds=with`
// leaves the package before the record out (nothing packed from the old commit);
// `--n8n-durable-downloads=0` runs Generate without its downloads (a batch of 10,000 in minutes; the
// store's share is then read against the smallest batch). Each run also reads what the n8n process
// wrote (`/proc/<pid>/io`: to storage, and through write calls), paired with the store answered in
// place: the bytes the record writes per batch, next to the row's size × its record calls.
// Every run reads the row back: at the bound n8n must have appended the run's N sends and dropped the
// N oldest (so it read the row in that format); `off` and the other builds must have left it alone.
//
// Sessions: the builds take turns in n8n starts (with, without, without, with, … for
// `--n8n-durable-sessions`), so that a load that drifts over the hour falls on all. In each session
// every N and c runs `roundsFor` times (`--n8n-runs`), the row states taking turns going first.
// Figures are medians over all sessions. Inside n8n the preloaded profiler times every call of n8n's
// store; once the batches are done it also makes `--n8n-durable-calls` store calls one after the other
// on rows of `--n8n-durable-fills` entries (the raw cost of one call).
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

import {
	createUserFolder,
	ensureN8n,
	importCredential,
	importWorkflow,
	packPackage,
	publishWorkflow,
	querySqlite,
	runCommand,
} from '../e2e/n8n.mjs';
import { RECORD_LIMITS } from '../../nodes/ImagePack/actions/image/generate/durable.ts';
import { git, packAt, startN8nRetrying } from './builds.mjs';
import { figure } from './figures.ts';
import {
	CREDENTIAL,
	bareFetchMs,
	call,
	floorBatch,
	hostStats,
	imagePackBatch,
	loadAverage,
	median,
	peakRss,
	roundsFor,
	runProfiler,
	settleRss,
	threadCpuMs,
	threadsPerItem,
	treeCpuMs,
	waitFor,
	withNodeOptions,
} from './n8n.bench.mjs';

/** The cap of the node's row, whatever the batch (generate/durable.ts). */
const boundFor = () => RECORD_LIMITS.sends;
/** Generate's node id in the bench's batch workflow (`node('Generate images', …)`). */
const NODE_ID = 'generate-images';
const RAW_NODE_ID = 'bench-raw-calls';

const md5 = (value) => createHash('md5').update(value).digest('base64');

/** What fills a row: MD5s of values no send can have, as n8n stores any value. */
export function fillerValues(count, tag = 'bench filler') {
	return Array.from({ length: count }, (_, i) => md5(`${tag} ${i}`));
}

/**
 * Writes (or with `value` null deletes) one row of `processed_data` in the user folder's database, with
 * the sqlite3 driver of the pinned n8n, while n8n runs (SQLite's WAL lets a second writer wait its turn).
 * The row comes on stdin: 10,000 entries are ~270 KB, more than one command-line argument may hold.
 */
async function writeRow(userFolder, { workflowId, context, value }) {
	const paths = await ensureN8n();
	const script = `
		const sqlite3 = require('sqlite3');
		let input = '';
		process.stdin.on('data', (chunk) => (input += chunk));
		process.stdin.on('end', () => {
			const { file, workflowId, context, value } = JSON.parse(input);
			const db = new sqlite3.Database(file, sqlite3.OPEN_READWRITE, (error) => {
				if (error) { console.error(error.message); process.exit(2); }
				db.configure('busyTimeout', 10000);
				const done = (error) => {
					if (error) { console.error(error.message); process.exit(3); }
					db.close();
				};
				if (value === null)
					db.run('DELETE FROM processed_data WHERE workflowId = ? AND context = ?', [workflowId, context], done);
				else
					db.run(
						"INSERT OR REPLACE INTO processed_data (workflowId, context, value, createdAt, updatedAt) " +
							"VALUES (?, ?, ?, STRFTIME('%Y-%m-%d %H:%M:%f', 'NOW'), STRFTIME('%Y-%m-%d %H:%M:%f', 'NOW'))",
						[workflowId, context, value],
						done,
					);
			});
		});`;
	const file = path.join(userFolder, '.n8n', 'database.sqlite');
	const result = await runCommand(paths.nodeBin, ['-e', script], {
		cwd: paths.dir,
		timeoutMs: 60_000,
		input: JSON.stringify({
			file,
			workflowId,
			context,
			value: value === null ? null : JSON.stringify(value),
		}),
	});
	if (result.code !== 0)
		throw new Error(`writing processed_data failed (${result.code}): ${result.stderr}`);
}

/** The row as n8n left it: its mode, entries and first entry (SQLite's JSON functions; nothing large read). */
async function readRow(userFolder, workflowId, context) {
	const [row] = await querySqlite(
		userFolder,
		"SELECT json_extract(value, '$.mode') AS mode, json_array_length(value, '$.data') AS entries, json_extract(value, '$.data[0]') AS first, length(value) AS bytes FROM processed_data WHERE workflowId = ? AND context = ?",
		[workflowId, context],
	);
	return row ?? { mode: null, entries: 0, first: null, bytes: 0 };
}

/**
 * The package now with n8n's store call answered in place (`{ new: all, processed: [] }`): the same
 * code, its line per node (`inTurn`) included, without the round trip to n8n's database. Patched in an
 * unpacked copy of the built package; nothing in the repository changes.
 */
function stubStore(packageDir) {
	const file = path.join(
		packageDir,
		'dist',
		'nodes',
		'ImagePack',
		'actions',
		'image',
		'generate',
		'durable.js',
	);
	const call =
		/await helpers\.checkProcessedAndRecord\((\w+), 'workflow', this\.options\.workflow\)/g;
	const code = fs.readFileSync(file, 'utf8');
	if ((code.match(call) ?? []).length !== 1)
		throw new Error(`stubStore: ${file} no longer makes the call "${call.source}" once`);
	fs.writeFileSync(file, code.replace(call, '({ new: $1, processed: [] })'));
}

/** What a process wrote (`/proc/<pid>/io`): to the storage layer (`write_bytes`) and through write calls (`wchar`). */
function ioBytes(pid) {
	try {
		const text = fs.readFileSync(`/proc/${pid}/io`, 'utf8');
		const field = (key) => Number(new RegExp(`^${key}: (\\d+)`, 'm').exec(text)?.[1] ?? NaN);
		return { storage: field('write_bytes'), calls: field('wchar') };
	} catch {
		return { storage: NaN, calls: NaN };
	}
}

/** Moves one build's unpacked package into the user folder's installed place (n8n loads it at start). */
function installer(user, builds) {
	const stash = path.join(user.dir, 'builds');
	fs.mkdirSync(stash, { recursive: true });
	let current = null;
	for (const [key, dir] of Object.entries(builds)) fs.renameSync(dir, path.join(stash, key));
	return (key) => {
		if (current === key) return;
		if (current) fs.renameSync(user.packageDir, path.join(stash, current));
		fs.renameSync(path.join(stash, key), user.packageDir);
		current = key;
	};
}

/** One measured batch run (as benchN8nBatch measures it): wall, CPU by thread, V8's collections, n8n's store. */
async function measureRun({
	env,
	n8n,
	pid,
	profiler,
	label,
	workflowId,
	items,
	baseUrl,
	binaryDir,
	downloads,
}) {
	const count = items.length;
	fs.rmSync(binaryDir, { recursive: true, force: true });
	await env.control.clearRequests();
	await hostStats(baseUrl, true);
	const loadBefore = loadAverage();
	const { response, peak, wallMs, cpuMs, threads, written } = await profiler.around(
		label,
		pid,
		async () => {
			const cpuBefore = treeCpuMs(pid);
			const threadsBefore = threadCpuMs(pid);
			const ioBefore = ioBytes(pid);
			const started = performance.now();
			const run = await peakRss(pid, () =>
				call(`${n8n.url}/webhook/${workflowId}`, { method: 'POST', body: { items } }),
			);
			const threadsAfter = threadCpuMs(pid);
			const ioAfter = ioBytes(pid);
			return {
				...run,
				response: run.value,
				wallMs: performance.now() - started,
				written: {
					storage: ioAfter.storage - ioBefore.storage,
					calls: ioAfter.calls - ioBefore.calls,
				},
				cpuMs: treeCpuMs(pid) - cpuBefore,
				threads: Object.fromEntries(
					Object.entries(threadsAfter).map(([kind, ms]) => [kind, ms - threadsBefore[kind]]),
				),
			};
		},
	);
	const load = [loadBefore, loadAverage()];
	const { gc, store } = profiler.stats(label);
	await settleRss(pid); // n8n saves the execution after answering: not on the next run's account
	const host = await hostStats(baseUrl);
	const generates = (await env.control.requests({ route: 'generate' })).length;
	const result = { count, wallMs, cpuMs, threads, written, load, gc, store, peak };
	if (response.status !== 200 || generates !== count || host.signedFile !== (downloads ? count : 0))
		result.problem = `HTTP ${response.status}, ${generates} generates and ${host.signedFile} signed-link downloads for ${count} items ${response.text.slice(0, 300)}`;
	return result;
}

/**
 * The durable record's cost in a real n8n: the batch with the package now (its row at the bound and
 * empty) and with the package before the record, in alternating n8n starts; then the raw cost of one
 * store call on rows of each fill.
 */
export async function benchN8nDurable(
	env,
	{
		endpoints,
		storage,
		imageBytes,
		sizes,
		concurrencies,
		latencyMs,
		gcStatsDir,
		runs,
		sessions,
		base,
		builds = ['with', 'without'],
		rawCalls,
		rawFills,
		states: withStates = ['bound', 'empty', 'off'],
		downloads = true,
	},
) {
	const log = env.log;
	const baseUrl = endpoints.realisticBaseUrl;
	const profiler = runProfiler(gcStatsDir ?? fs.mkdtempSync(path.join(storage, 'gc-')), true);
	const fetchMs = {};
	const bareDir = fs.mkdtempSync(path.join(storage, 'bare-'));
	for (const c of concurrencies) {
		fetchMs[c] = downloads ? (await bareFetchMs(baseUrl, endpoints.apiKey, bareDir, c)).ms : 0;
		if (downloads)
			log(`n8n durable: a bare client's fetch of ${c} images at once ${fetchMs[c].toFixed(1)} ms`);
	}

	const head = await git(['rev-parse', '--short', 'HEAD']);
	log(`n8n durable: build + pack the package now (${head})`);
	const withTarball = await packPackage();
	// The package before the record only when it runs (`--n8n-durable-builds=with`: the row states only).
	const without = builds.includes('without')
		? await packAt(base, storage, log, 'durable')
		: { commit: base, tarball: undefined };
	const user = await createUserFolder({
		tarball: withTarball,
		dir: fs.mkdtempSync(path.join(storage, 'n8n-durable-')),
	});
	const packages = { with: user.packageDir };
	const sides = [];
	if (without.tarball) {
		const side = await createUserFolder({
			tarball: without.tarball,
			dir: fs.mkdtempSync(path.join(storage, 'n8n-durable-base-')),
		});
		packages.without = side.packageDir;
		sides.push(side);
	}
	if (builds.includes('stubbed')) {
		const stubbed = await createUserFolder({
			tarball: withTarball,
			dir: fs.mkdtempSync(path.join(storage, 'n8n-durable-stubbed-')),
		});
		stubStore(stubbed.packageDir);
		packages.stubbed = stubbed.packageDir;
		sides.push(stubbed);
	}
	for (const tarball of [withTarball, without.tarball].filter(Boolean))
		fs.rmSync(path.dirname(tarball), { recursive: true, force: true });
	const install = installer(user, packages);
	for (const folder of sides) folder.cleanup();

	await importCredential(user.dir, [
		{ ...CREDENTIAL, type: 'imagePackApi', data: { baseUrl, apiKey: endpoints.apiKey } },
	]);
	const FLOOR = 'benchDurableFloor';
	const workflowOfC = (c) => `benchDurableC${c}`;
	// `--n8n-durable-downloads=0`: Generate without its downloads, so that a batch of 10,000 runs in
	// minutes and the store's share is read against the smallest batch (downloads only add to it).
	const batchOf = (c) => {
		const workflow = imagePackBatch(workflowOfC(c), c);
		if (!downloads)
			for (const n of workflow.nodes)
				if (n.parameters?.options?.downloadImages) n.parameters.options.downloadImages = false;
		return workflow;
	};
	const workflows = [floorBatch(FLOOR), ...concurrencies.map(batchOf)];
	await importWorkflow(user.dir, workflows);
	for (const workflow of workflows) await publishWorkflow(user.dir, workflow.id);

	const fillers = new Map(sizes.map((count) => [count, fillerValues(boundFor(count))]));
	const context = `n:${NODE_ID}`;
	const products = (count) =>
		Array.from({ length: count }, (_, i) => ({
			prompt: `Product ${i + 1}: a ceramic mug on an oak table, e-commerce photo`,
		}));
	const results = [];
	const floorRuns = {}; // N → ms[]
	const raw = []; // { build, fill, record, remove }
	const order = Array.from({ length: sessions }, (_, s) =>
		s % 2 === 0 ? builds : [...builds].reverse(),
	).flat();
	const described = {
		with: `now (${head})`,
		without: `before the record (${without.commit})`,
		stubbed: `now (${head}), n8n's store call answered in place`,
	};
	try {
		for (const [session, build] of order.entries()) {
			install(build);
			log(
				`n8n durable: session ${session + 1} of ${order.length}, the package ${described[build]}`,
			);
			const n8n = await startN8nRetrying({
				userFolder: user.dir,
				echo: Boolean(process.env.BENCH_N8N_ECHO),
				env: {
					N8N_DEFAULT_BINARY_DATA_MODE: 'filesystem',
					N8N_LOG_LEVEL: process.env.BENCH_N8N_ECHO ? 'debug' : 'warn',
					...withNodeOptions(profiler.env),
				},
			});
			const pid = n8n.process.pid;
			const binaryDir = path.join(user.n8nDir, 'storage');
			try {
				await waitFor('the bench webhooks to be registered', async () => {
					const rows = await querySqlite(user.dir, 'SELECT webhookPath FROM webhook_entity');
					return workflows.every((w) => rows.some((row) => row.webhookPath === w.id));
				});
				await env.control.setLatency('generate', 0);
				for (const workflow of workflows) {
					const answer = await call(`${n8n.url}/webhook/${workflow.id}`, {
						method: 'POST',
						body: { items: products(Math.min(20, sizes[0])) },
					});
					if (answer.status !== 200)
						throw new Error(
							`warm-up of ${workflow.name}: HTTP ${answer.status} ${answer.text.slice(0, 500)}`,
						);
				}
				await settleRss(pid);
				await env.control.setLatency('generate', latencyMs);
				// The package now: its row at the bound, empty, or n8n's store answered in place (row untouched).
				const states = build === 'with' ? withStates : ['bound'];
				for (const count of sizes) {
					const items = products(count);
					for (let run = 0; run < 3; run++) {
						const started = performance.now();
						await call(`${n8n.url}/webhook/${FLOOR}`, { method: 'POST', body: { items } });
						(floorRuns[count] ??= []).push(performance.now() - started);
					}
					for (const c of concurrencies) {
						const workflowId = workflowOfC(c);
						for (let round = 0; round < roundsFor(count, runs); round++) {
							const turn = round % states.length;
							for (const state of [...states.slice(turn), ...states.slice(0, turn)]) {
								const key = build === 'with' ? state : build;
								await writeRow(user.dir, {
									workflowId,
									context,
									value: state === 'empty' ? null : { mode: 'entries', data: fillers.get(count) },
								});
								// In place, a count of the row answers the bound: the node takes the path it takes on it.
								profiler.storeOff(state === 'off', boundFor(count));
								const label = `durable-s${session + 1}-${key}-n${count}-c${c}-run${round + 1}`;
								log(
									`n8n durable: N=${count}, c=${c}, ${key}, session ${session + 1}, run ${round + 1}`,
								);
								const result = await measureRun({
									env,
									n8n,
									pid,
									profiler,
									label,
									workflowId,
									items,
									baseUrl,
									binaryDir,
									downloads,
								});
								// The node's row as n8n left it: the proof that it read the bench's row (or, without the
								// record, never touched it). The package appends its run's 'began' value and the paid sends
								// it moved there (groups of RECORD_LIMITS.moveAt, across runs of one n8n start: a group can
								// hold an earlier run's), dropping as many of the oldest: at most N + 1 + moveAt.
								const row = await readRow(user.dir, workflowId, context);
								const fill = fillers.get(count);
								const dropped = row.first ? fill.indexOf(row.first) : -1;
								const expected =
									build !== 'with' || key === 'off'
										? { entries: boundFor(count), first: fill[0] }
										: key === 'bound'
											? {
													entries: boundFor(count),
													first: `one of the first ${count + 2 + RECORD_LIMITS.moveAt} fillers`,
												}
											: { entries: `1 to ${count + 1}` };
								const fine =
									row.mode === 'entries' &&
									(build !== 'with' || key === 'off'
										? row.entries === boundFor(count) && row.first === fill[0]
										: key === 'bound'
											? row.entries === boundFor(count) &&
												dropped >= 1 &&
												dropped <= count + 1 + RECORD_LIMITS.moveAt
											: row.entries >= 1 && row.entries <= count + 1);
								if (!fine)
									result.problem = [
										result.problem,
										`the row after the run: ${row.entries} entries (mode ${row.mode}), first ${row.first}; expected ${expected.entries}${expected.first ? `, first ${expected.first}` : ''}`,
									]
										.filter(Boolean)
										.join('; ');
								Object.assign(result, { key, c, session, round, rowBytes: row.bytes });
								const calls = result.store.checkProcessedAndRecord;
								const counts = result.store.getProcessedDataCount ?? { calls: 0, totalMs: 0 };
								log(
									`  wall ${(result.wallMs / 1000).toFixed(2)} s, CPU ${(result.cpuMs / count).toFixed(1)} ms per item (${threadsPerItem(result.threads, count)}; load ${result.load.map((l) => l.toFixed(1)).join(' → ')}); ` +
										`store: ${calls.calls} records (median ${calls.medianMs.toFixed(1)} ms, p90 ${calls.p90Ms.toFixed(1)}, max ${calls.maxMs.toFixed(1)}, total ${(calls.totalMs / 1000).toFixed(2)} s; process CPU while in the store ${((result.store.cpuMs ?? 0) / count).toFixed(2)} ms per item), ${result.store.removeProcessed.calls} releases, ${counts.calls} counts (${counts.totalMs.toFixed(0)} ms), ${result.store.answeredInPlace ?? 0} answered in place; row ${row.entries} entries, ${(row.bytes / 1024).toFixed(0)} KiB; n8n wrote ${(result.written.storage / 2 ** 20).toFixed(1)} MiB to storage, ${(result.written.calls / 2 ** 20).toFixed(1)} MiB through write calls` +
										(result.problem ? `; PROBLEM: ${result.problem}` : ''),
								);
								results.push(result);
							}
						}
					}
				}
				profiler.storeOff(false);
				await env.control.setLatency('generate', 0);
				// The raw cost of one call, n8n idle: the store is n8n's, whichever build is loaded.
				for (const fill of rawFills) {
					const rawContext = { workflowId: FLOOR, context: `n:${RAW_NODE_ID}` };
					await writeRow(user.dir, {
						...rawContext,
						value: fill
							? { mode: 'entries', data: fillerValues(fill, `raw filler ${session}`) }
							: null,
					});
					await settleRss(pid);
					const threadsBefore = threadCpuMs(pid);
					const stats = await profiler.command(pid, `durable-raw-s${session + 1}-fill${fill}`, {
						command: 'storeCalls',
						workflowId: FLOOR,
						nodeId: RAW_NODE_ID,
						calls: rawCalls,
						maxEntries: Math.max(fill, rawCalls),
					});
					const threadsAfter = threadCpuMs(pid);
					const mainMs = threadsAfter.main - threadsBefore.main;
					raw.push({ build, fill, ...stats, mainMs, load: loadAverage() });
					log(
						`n8n durable: ${rawCalls} store calls on a ${fill}-entry row: record median ${stats.record.medianMs.toFixed(2)} ms (p90 ${stats.record.p90Ms.toFixed(2)}), CPU ${(stats.record.cpuMs / rawCalls).toFixed(2)} ms per call; release median ${stats.remove.medianMs.toFixed(2)} ms; n8n's JavaScript thread ${(mainMs / rawCalls / 2).toFixed(2)} ms per call (both)`,
					);
				}
			} finally {
				await env.control.setLatency('generate', 0);
				await n8n.stop();
			}
		}
	} finally {
		user.cleanup();
	}
	const floors = Object.fromEntries(Object.entries(floorRuns).map(([n, ms]) => [n, median(ms)]));
	if (gcStatsDir)
		fs.writeFileSync(
			path.join(gcStatsDir, 'durable-runs.json'),
			JSON.stringify({ results, raw, floors, fetchMs, head, base: without.commit }, null, 1),
		);
	return durableFigures(results, raw, {
		sizes,
		concurrencies,
		latencyMs,
		fetchMs,
		floors,
		imageBytes,
		head,
		base: without.commit,
		sessions: order.length,
		rawCalls,
		downloads,
	});
}

/** The runs of one cell (build or row state, N, c) as medians, with the spread of the CPU. */
function cell(results, key, count, c) {
	const runs = results.filter((r) => r.key === key && r.count === count && r.c === c);
	if (!runs.length) return undefined;
	const cpu = runs.map((r) => r.cpuMs).sort((a, b) => a - b);
	const records = runs.flatMap((r) =>
		r.store.checkProcessedAndRecord.calls ? [r.store.checkProcessedAndRecord] : [],
	);
	return {
		runs: runs.length,
		count,
		wallMs: median(runs.map((r) => r.wallMs)),
		cpuMs: median(cpu),
		cpuRange: [cpu[0], cpu.at(-1)],
		threads: Object.fromEntries(
			Object.keys(runs[0].threads).map((kind) => [kind, median(runs.map((r) => r.threads[kind]))]),
		),
		majorsPerItem:
			runs.reduce((sum, r) => sum + (r.gc['major (mark-compact)']?.count ?? 0), 0) /
			(runs.length * count),
		storeCalls: median(
			runs.map((r) => r.store.checkProcessedAndRecord.calls + r.store.removeProcessed.calls),
		),
		storeMedianMs: records.length ? median(records.map((s) => s.medianMs)) : 0,
		storeP90Ms: records.length ? median(records.map((s) => s.p90Ms)) : 0,
		storeMaxMs: records.length ? Math.max(...records.map((s) => s.maxMs)) : 0,
		storeMsPerItem: median(
			runs.map(
				(r) =>
					(r.store.checkProcessedAndRecord.totalMs +
						r.store.removeProcessed.totalMs +
						(r.store.getProcessedDataCount?.totalMs ?? 0)) /
					count,
			),
		),
		recordCalls: median(runs.map((r) => r.store.checkProcessedAndRecord.calls)),
		rowBytes: median(runs.map((r) => r.rowBytes)),
		writtenStorage: median(runs.map((r) => r.written?.storage ?? NaN)),
		writtenCalls: median(runs.map((r) => r.written?.calls ?? NaN)),
		load: [Math.min(...runs.flatMap((r) => r.load)), Math.max(...runs.flatMap((r) => r.load))],
		problem:
			runs
				.map((r) => r.problem)
				.filter(Boolean)
				.join('; ') || undefined,
	};
}

export function durableFigures(
	results,
	raw,
	{
		sizes,
		concurrencies,
		latencyMs,
		fetchMs,
		floors,
		imageBytes,
		head,
		base,
		sessions,
		rawCalls,
		downloads = true,
	},
) {
	const figures = [];
	const mib = (imageBytes / 2 ** 20).toFixed(0);
	const job = downloads ? `Generate + download of ${mib} MiB images` : 'Generate, no downloads';
	const group = `N8N-3. The durable record of each paid send in a real n8n 2.41.1 (SQLite): the batch (${job}, latency ${latencyMs} ms), the package now (${head}) with its row at the bound, empty, or n8n's store answered in place, vs the package before the record (${base})`;
	const note =
		`Durable record: one batch workflow and n8n user folder. The package now runs with its processed_data row at its bound (${RECORD_LIMITS.sends.toLocaleString('en-US')} entries before the run, written in n8n's format; after it n8n has appended the N sends and dropped the N oldest, checked), with no row ("empty"), and with n8n's store answering in place ("in place": the same code without the database round trip), run by run in the same n8n start. ` +
		`The package built from ${base} (the commit before the record; everything since is missing from it too) runs in its own n8n starts; the builds take turns over ${sessions} starts. ` +
		'Wall and CPU are medians over every run of a cell; "paired" = the median of at-bound ÷ in-place ratios of runs made one after the other. Ideal = n8n\'s floor (webhook → Split Out → No Op) + ceil(N / c) × (latency + a bare client\'s fetch of c images at once). ' +
		"CPU = the n8n process and its task runner; load = the lowest and highest 1-minute load average around the cell's runs. Store = each checkProcessedAndRecord / removeProcessed call timed inside n8n, call to answer.";
	const ms = (value) =>
		value >= 10_000 ? `${(value / 1000).toFixed(2)} s` : `${value.toFixed(0)} ms`;
	const runsOf = (r) => `${r.runs} run${r.runs === 1 ? '' : 's'}`;
	const perItem = (value, r) => (value / r.count).toFixed(0);
	const cpuOf = (r) =>
		`${perItem(r.cpuMs, r)} ms (${runsOf(r)}, ${perItem(r.cpuRange[0], r)}–${perItem(r.cpuRange[1], r)}; JavaScript thread ${perItem(r.threads.main, r)}, V8 workers ${perItem(r.threads.v8, r)}; mark-compacts ${r.majorsPerItem.toFixed(2)}/item; load ${r.load.map((l) => l.toFixed(1)).join('–')})`;
	/** The median ratio a ÷ b of runs made one after the other (same session and round). */
	const paired = (a, b, count, c) => {
		const ratios = results
			.filter((r) => r.key === a && r.count === count && r.c === c)
			.map((r) => {
				const other = results.find(
					(o) =>
						o.key === b &&
						o.count === count &&
						o.c === c &&
						o.session === r.session &&
						o.round === r.round,
				);
				return other ? r.wallMs / other.wallMs : undefined;
			})
			.filter((ratio) => ratio !== undefined);
		return ratios.length ? median(ratios) : undefined;
	};
	/** The median difference pick(a) − pick(b) of runs made one after the other (same session and round). */
	const pairedDelta = (a, b, count, c, pick) => {
		const deltas = results
			.filter((r) => r.key === a && r.count === count && r.c === c)
			.map((r) => {
				const other = results.find(
					(o) =>
						o.key === b &&
						o.count === count &&
						o.c === c &&
						o.session === r.session &&
						o.round === r.round,
				);
				return other ? pick(r) - pick(other) : undefined;
			})
			.filter((delta) => delta !== undefined);
		return deltas.length ? median(deltas) : undefined;
	};
	for (const c of concurrencies) {
		for (const count of sizes) {
			const [before, empty, bound, inPlace, stubbed] = [
				'without',
				'empty',
				'bound',
				'off',
				'stubbed',
			].map((key) => cell(results, key, count, c));
			if (!bound) continue;
			const ideal = floors[count] + Math.ceil(count / c) * (latencyMs + fetchMs[c]);
			const broken = (r) => (r?.problem ? ` — FAILED: ${r.problem}` : '');
			const overIdeal = (r) => `${(r.wallMs / ideal).toFixed(3)} × ideal`;
			const at = `N=${count}, c=${c}:`;
			const wallFigure = (label, r, reference, referenceName, extra = '') =>
				figure({
					group,
					figure: `${at} wall, ${label} (${runsOf(r)}, ${overIdeal(r)}${extra}) vs ${referenceName}${broken(r)}`,
					measured: r.wallMs,
					ideal: reference.wallMs,
					unit: 'ms',
					maxRatio: 1.02,
					target: `≤ 1.02 × ${referenceName}`,
				});
			const cpuFigure = (label, r, reference, referenceName) =>
				figure({
					group,
					figure: `${at} n8n CPU per item, ${label} ${cpuOf(r)} vs ${referenceName}${reference === before ? ` ${cpuOf(reference)}` : ''}`,
					measured: r.cpuMs / count,
					ideal: reference.cpuMs / count,
					unit: 'ms',
					target: 'shown',
				});
			if (inPlace) {
				const pairs = [paired('bound', 'off', count, c), paired('empty', 'off', count, c)];
				figures.push(
					figure({
						group,
						figure: `${at} wall, n8n's store answered in place (${runsOf(inPlace)})${broken(inPlace)}`,
						measured: inPlace.wallMs,
						ideal,
						unit: 'ms',
						target: '—',
						note,
					}),
					wallFigure(
						`record at its bound`,
						bound,
						inPlace,
						'in place',
						pairs[0] === undefined ? '' : `; paired ${pairs[0].toFixed(3)}`,
					),
				);
				if (empty)
					figures.push(
						wallFigure(
							'record on an empty row',
							empty,
							inPlace,
							'in place',
							pairs[1] === undefined ? '' : `; paired ${pairs[1].toFixed(3)}`,
						),
					);
			}
			if (before) {
				figures.push(
					figure({
						group,
						figure: `${at} wall, the package before the record (${base}; ${runsOf(before)})${broken(before)}`,
						measured: before.wallMs,
						ideal,
						unit: 'ms',
						target: '—',
						note,
					}),
					wallFigure(
						`record at its bound (${boundFor(count).toLocaleString('en-US')} entries)`,
						bound,
						before,
						'without',
					),
				);
				if (empty) figures.push(wallFigure('record on an empty row', empty, before, 'without'));
			}
			if (stubbed)
				figures.push(
					wallFigure(
						'record at its bound',
						bound,
						stubbed,
						`stubbed (${runsOf(stubbed)}, ${overIdeal(stubbed)})`,
					),
				);
			if (inPlace) {
				// What the record adds per generated item, paired run by run with the store answered in place.
				const perItem = (pick) => pairedDelta('bound', 'off', count, c, (r) => pick(r) / count);
				const wall = perItem((r) => r.wallMs);
				const cpu = perItem((r) => r.cpuMs);
				const main = perItem((r) => r.threads.main);
				const storage = pairedDelta('bound', 'off', count, c, (r) => r.written.storage);
				figures.push(
					figure({
						group,
						figure: `${at} what the record at its bound adds per item, paired with the store answered in place: wall (n8n CPU ${cpu?.toFixed(2)} ms, of it the JavaScript thread ${main?.toFixed(2)} ms; time in n8n's store ${bound.storeMsPerItem.toFixed(2)} ms per item, ${(bound.recordCalls / count).toFixed(3)} record calls per item)`,
						measured: wall ?? NaN,
						ideal: null,
						unit: 'ms',
						target: '—',
					}),
					figure({
						group,
						figure: `${at} bytes written per batch with the record at its bound: the row (${(bound.rowBytes / 1024).toFixed(0)} KiB) × ${bound.recordCalls} record calls; n8n's writes to storage, paired − in place: ${storage === undefined ? '?' : `${(storage / 2 ** 20).toFixed(1)} MiB`}`,
						measured: bound.rowBytes * bound.recordCalls,
						ideal: null,
						unit: 'bytes',
						target: '—',
					}),
				);
			}
			if (before) figures.push(cpuFigure('record at its bound', bound, before, 'without'));
			if (inPlace) figures.push(cpuFigure('record at its bound', bound, inPlace, 'in place'));
			if (empty && inPlace)
				figures.push(cpuFigure('record on an empty row', empty, inPlace, 'in place'));
			if (inPlace && before)
				figures.push(cpuFigure("n8n's store answered in place", inPlace, before, 'without'));
			figures.push(
				figure({
					group,
					figure: `${at} n8n's store in the run, one call at the bound vs on the empty row: median (p90 ${bound.storeP90Ms.toFixed(1)} / ${(empty?.storeP90Ms ?? 0).toFixed(1)} ms, max ${bound.storeMaxMs.toFixed(0)} / ${(empty?.storeMaxMs ?? 0).toFixed(0)} ms); ${(bound.storeCalls / count).toFixed(2)} calls per item, ${bound.storeMsPerItem.toFixed(1)} / ${(empty?.storeMsPerItem ?? 0).toFixed(1)} ms per item`,
					measured: bound.storeMedianMs,
					ideal: empty?.storeMedianMs || null,
					unit: 'ms',
					target: '—',
				}),
			);
			// Each item's claim is written just before its send, so at c = 1 the time in the store is
			// what the record adds to the wall time; with more lanes the others' sends overlap it.
			const onPath = c === 1;
			const reference = inPlace ?? before;
			if (reference)
				figures.push(
					figure({
						group,
						figure: `${at} time in n8n's store over the run at the bound (${ms(bound.storeMsPerItem * count)}; empty row ${ms((empty?.storeMsPerItem ?? 0) * count)}) vs 2 % of the batch ${reference === inPlace ? 'with the store answered in place' : 'without the record'}${onPath ? ' (c = 1: all of it on the path)' : ' (lanes overlap it)'}`,
						measured: bound.storeMsPerItem * count,
						ideal: 0.02 * reference.wallMs,
						unit: 'ms',
						...(onPath ? { maxRatio: 1, target: '≤ 2 % of the batch' } : { target: '—' }),
					}),
				);
		}
	}
	// The raw cost of one call, n8n idle, by the row's size: medians over the sessions.
	const fills = [...new Set(raw.map((r) => r.fill))].sort((a, b) => a - b);
	const rawOf = (fill) => {
		const rows = raw.filter((r) => r.fill === fill);
		return {
			sessions: rows.length,
			record: median(rows.map((r) => r.record.medianMs)),
			recordP90: median(rows.map((r) => r.record.p90Ms)),
			recordCpu: median(rows.map((r) => r.record.cpuMs / r.record.calls)),
			remove: median(rows.map((r) => r.remove.medianMs)),
			removeCpu: median(rows.map((r) => r.remove.cpuMs / r.remove.calls)),
			main: median(rows.map((r) => r.mainMs / (r.record.calls + r.remove.calls))),
			load: [Math.min(...rows.map((r) => r.load)), Math.max(...rows.map((r) => r.load))],
		};
	};
	const smallest = fills.length ? rawOf(fills[0]) : undefined;
	for (const fill of fills) {
		const r = rawOf(fill);
		const rowNote = fill
			? `a ${fill.toLocaleString('en-US')}-entry row`
			: `an empty row (growing to ${rawCalls})`;
		figures.push(
			figure({
				group,
				figure: `One checkProcessedAndRecord call on ${rowNote}, n8n idle (${rawCalls} calls one after the other, one new value each; median of ${r.sessions} sessions): wall per call, median (p90 ${r.recordP90.toFixed(2)} ms; CPU of the process ${r.recordCpu.toFixed(2)} ms per call; removeProcessed ${r.remove.toFixed(2)} ms, CPU ${r.removeCpu.toFixed(2)} ms; JavaScript thread ${r.main.toFixed(2)} ms per call; load ${r.load.map((l) => l.toFixed(1)).join('–')}) vs ${fills[0] ? `${fills[0]} entries` : 'the empty row'}`,
				measured: r.record,
				ideal: smallest.record,
				unit: 'ms',
				target: '—',
				note: "Store calls: n8n's own DataDeduplicationService (DeduplicationHelper over TypeORM and SQLite) called from inside the running n8n (n8n-profiler.cjs, `storeCalls`) with the options Generate uses (scope node, mode entries, maxEntries the row's size or the calls made); each call reads the row, parses it, adds the value, drops the oldest past the bound and writes the row back.",
			}),
		);
	}
	return figures;
}
