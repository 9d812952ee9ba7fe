// `npm run bench -- --n8n --n8n-parts=durable`: what Generate's durable record of each paid send
// (generate/durable.ts: one `checkProcessedAndRecord` in n8n's deduplication store before every send)
// costs a real n8n 2.41.1 (SQLite), against the same batch without it: the package built from the
// commit before the record (`--n8n-durable-base=8a9ff14`: packed from a temporary git worktree, removed
// again), loaded into the same n8n user folder in its own n8n start. PRODUCT.md §7: at its bound, batch
// wall time within 2 % of the same batch without it, n8n's CPU per item shown beside it.
//
// The batch is the n8n bench's (Webhook → Split Out → Generate with downloads, n8n.bench.mjs). The
// node's row in `processed_data` (workflow, context `n:<node id>`) is set before every run, in n8n's own
// format (`{"mode":"entries","data":[base64 MD5, …]}`, what TypeORM's simple-json writes): *at its
// bound* 10,000 entries (the node's `maxEntries`), *empty* no row. Every run reads the row back: at the
// bound n8n must have appended the run's N sends and dropped the N oldest (so it read the row in that
// format), and the build without the record must have left it alone.
//
// Sessions: the two builds take turns in n8n starts (with, without, without, with, … for
// `--n8n-durable-sessions`), so that a load that drifts over the hour falls on both. In each session
// every N and c runs `roundsFor` times (`--n8n-runs`), the two row states taking turns going first.
// Figures are medians over all sessions. Inside n8n the preloaded profiler (n8n-profiler.cjs) times every
// call of n8n's store; once the batches are done it also makes `--n8n-durable-calls` store calls one
// after the other on rows of `--n8n-durable-fills` entries (the raw cost of one call).
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

import {
	REPO_ROOT,
	createUserFolder,
	ensureN8n,
	importCredential,
	importWorkflow,
	packPackage,
	publishWorkflow,
	querySqlite,
	runCommand,
	startN8n,
} from '../e2e/n8n.mjs';
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

/** The node's bound (DURABLE_LIMITS.maxEntries in generate/durable.ts). */
const MAX_ENTRIES = 10_000;
/** Generate's node id in the bench's batch workflow (`node('Generate images', …)`). */
const NODE_ID = 'generate-images';
const RAW_NODE_ID = 'bench-raw-calls';

const md5 = (value) => createHash('md5').update(value).digest('base64');

/** What fills a row: MD5s of values no send can have, as n8n stores any value. */
export function fillerValues(count, tag = 'bench filler') {
	return Array.from({ length: count }, (_, i) => md5(`${tag} ${i}`));
}

async function git(args, cwd = REPO_ROOT) {
	const result = await runCommand('git', args, { cwd });
	if (result.code !== 0) throw new Error(`git ${args.join(' ')}: ${result.stderr}`);
	return result.stdout.trim();
}

/** Builds and packs the package at `rev` from a temporary worktree (removed again; nothing committed). */
async function packAt(rev, storage, log) {
	const commit = await git(['rev-parse', '--short', `${rev}^{commit}`]);
	const dir = path.join(storage, `base-${commit}`);
	log(`n8n durable: build + pack ${commit} in a temporary worktree`);
	await git(['worktree', 'add', '--detach', dir, commit]);
	try {
		fs.symlinkSync(
			fs.realpathSync(path.join(REPO_ROOT, 'node_modules')),
			path.join(dir, 'node_modules'),
		);
		return { commit, tarball: await packPackage({ cwd: dir }) };
	} finally {
		await git(['worktree', 'remove', '--force', dir]);
	}
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
	const call = 'await helpers.checkProcessedAndRecord(all, SCOPE, OPTIONS)';
	const code = fs.readFileSync(file, 'utf8');
	if (code.split(call).length !== 2)
		throw new Error(`stubStore: ${file} no longer makes the call "${call}" once`);
	fs.writeFileSync(file, code.replace(call, '({ new: all, processed: [] })'));
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

/** `startN8n`, tried again when another process took its free port first (other n8n runs share the machine). */
async function startN8nRetrying(options, tries = 3) {
	for (let attempt = 1; ; attempt++) {
		try {
			return await startN8n(options);
		} catch (error) {
			if (attempt >= tries || !/already in use|EADDRINUSE/.test(String(error?.message)))
				throw error;
		}
	}
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
}) {
	const count = items.length;
	fs.rmSync(binaryDir, { recursive: true, force: true });
	await env.control.clearRequests();
	await hostStats(baseUrl, true);
	const loadBefore = loadAverage();
	const { response, peak, wallMs, cpuMs, threads } = await profiler.around(label, pid, async () => {
		const cpuBefore = treeCpuMs(pid);
		const threadsBefore = threadCpuMs(pid);
		const started = performance.now();
		const run = await peakRss(pid, () =>
			call(`${n8n.url}/webhook/${workflowId}`, { method: 'POST', body: { items } }),
		);
		const threadsAfter = threadCpuMs(pid);
		return {
			...run,
			response: run.value,
			wallMs: performance.now() - started,
			cpuMs: treeCpuMs(pid) - cpuBefore,
			threads: Object.fromEntries(
				Object.entries(threadsAfter).map(([kind, ms]) => [kind, ms - threadsBefore[kind]]),
			),
		};
	});
	const load = [loadBefore, loadAverage()];
	const { gc, store } = profiler.stats(label);
	await settleRss(pid); // n8n saves the execution after answering: not on the next run's account
	const host = await hostStats(baseUrl);
	const generates = (await env.control.requests({ route: 'generate' })).length;
	const result = { count, wallMs, cpuMs, threads, load, gc, store, peak };
	if (response.status !== 200 || generates !== count || host.signedFile !== count)
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
		builds = ['with', 'without', 'stubbed'],
		rawCalls,
		rawFills,
	},
) {
	const log = env.log;
	const baseUrl = endpoints.realisticBaseUrl;
	const profiler = runProfiler(gcStatsDir ?? fs.mkdtempSync(path.join(storage, 'gc-')), true);
	const fetchMs = {};
	const bareDir = fs.mkdtempSync(path.join(storage, 'bare-'));
	for (const c of concurrencies) {
		fetchMs[c] = (await bareFetchMs(baseUrl, endpoints.apiKey, bareDir, c)).ms;
		log(`n8n durable: a bare client's fetch of ${c} images at once ${fetchMs[c].toFixed(1)} ms`);
	}

	const head = await git(['rev-parse', '--short', 'HEAD']);
	log(`n8n durable: build + pack the package now (${head})`);
	const withTarball = await packPackage();
	const without = await packAt(base, storage, log);
	const user = await createUserFolder({
		tarball: withTarball,
		dir: fs.mkdtempSync(path.join(storage, 'n8n-durable-')),
	});
	const side = await createUserFolder({
		tarball: without.tarball,
		dir: fs.mkdtempSync(path.join(storage, 'n8n-durable-base-')),
	});
	const packages = { with: user.packageDir, without: side.packageDir };
	const sides = [side];
	if (builds.includes('stubbed')) {
		const stubbed = await createUserFolder({
			tarball: withTarball,
			dir: fs.mkdtempSync(path.join(storage, 'n8n-durable-stubbed-')),
		});
		stubStore(stubbed.packageDir);
		packages.stubbed = stubbed.packageDir;
		sides.push(stubbed);
	}
	for (const tarball of [withTarball, without.tarball])
		fs.rmSync(path.dirname(tarball), { recursive: true, force: true });
	const install = installer(user, packages);
	for (const folder of sides) folder.cleanup();

	await importCredential(user.dir, [
		{ ...CREDENTIAL, type: 'imagePackApi', data: { baseUrl, apiKey: endpoints.apiKey } },
	]);
	const FLOOR = 'benchDurableFloor';
	const workflowOfC = (c) => `benchDurableC${c}`;
	const workflows = [
		floorBatch(FLOOR),
		...concurrencies.map((c) => imagePackBatch(workflowOfC(c), c)),
	];
	await importWorkflow(user.dir, workflows);
	for (const workflow of workflows) await publishWorkflow(user.dir, workflow.id);

	const filler = fillerValues(MAX_ENTRIES);
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
				const states = build === 'with' ? ['bound', 'empty'] : ['bound'];
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
							for (const state of round % 2 ? [...states].reverse() : states) {
								const key = build === 'with' ? state : build;
								await writeRow(user.dir, {
									workflowId,
									context,
									value: state === 'bound' ? { mode: 'entries', data: filler } : null,
								});
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
								});
								// The row as n8n left it: the proof that it read the bench's row (or, without the record, never touched it).
								const row = await readRow(user.dir, workflowId, context);
								const expected =
									build !== 'with'
										? { entries: MAX_ENTRIES, first: filler[0] }
										: key === 'bound'
											? { entries: MAX_ENTRIES, first: filler[count] }
											: { entries: count };
								if (
									row.entries !== expected.entries ||
									(expected.first && row.first !== expected.first) ||
									row.mode !== 'entries'
								)
									result.problem = [
										result.problem,
										`the row after the run: ${row.entries} entries (mode ${row.mode}), first ${row.first}; expected ${expected.entries}${expected.first ? `, first ${expected.first}` : ''}`,
									]
										.filter(Boolean)
										.join('; ');
								Object.assign(result, { key, c, session, rowBytes: row.bytes });
								const calls = result.store.checkProcessedAndRecord;
								log(
									`  wall ${(result.wallMs / 1000).toFixed(2)} s, CPU ${(result.cpuMs / count).toFixed(1)} ms per item (${threadsPerItem(result.threads, count)}; load ${result.load.map((l) => l.toFixed(1)).join(' → ')}); ` +
										`store: ${calls.calls} records (median ${calls.medianMs.toFixed(1)} ms, p90 ${calls.p90Ms.toFixed(1)}, max ${calls.maxMs.toFixed(1)}), ${result.store.removeProcessed.calls} releases; row ${row.entries} entries, ${(row.bytes / 1024).toFixed(0)} KiB` +
										(result.problem ? `; PROBLEM: ${result.problem}` : ''),
								);
								results.push(result);
							}
						}
					}
				}
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
						maxEntries: MAX_ENTRIES,
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
				(r) => (r.store.checkProcessedAndRecord.totalMs + r.store.removeProcessed.totalMs) / count,
			),
		),
		load: [Math.min(...runs.flatMap((r) => r.load)), Math.max(...runs.flatMap((r) => r.load))],
		problem:
			runs
				.map((r) => r.problem)
				.filter(Boolean)
				.join('; ') || undefined,
	};
}

function durableFigures(
	results,
	raw,
	{ sizes, concurrencies, latencyMs, fetchMs, floors, imageBytes, head, base, sessions, rawCalls },
) {
	const figures = [];
	const mib = (imageBytes / 2 ** 20).toFixed(0);
	const group = `N8N-3. The durable record of each paid send in a real n8n 2.41.1 (SQLite): the batch (Generate + download of ${mib} MiB images, latency ${latencyMs} ms) with the package now (${head}) vs the package before the record (${base})`;
	const note =
		`Durable record: the same batch workflow and n8n user folder; the package now, the package built from ${base} (everything since then is missing from it, not only the record) and, where shown, the package now with n8n's store call answered in place (stubbed: the store's own share) take turns in ${sessions} n8n starts. ` +
		`"At its bound" = the node's processed_data row holds ${MAX_ENTRIES.toLocaleString('en-US')} entries before the run (written in n8n's format; after the run n8n has appended the N sends and dropped the N oldest, checked), "empty" = no row. ` +
		"Wall and CPU are medians over every run of a cell in every session; ideal = n8n's floor (webhook → Split Out → No Op) + ceil(N / c) × (latency + a bare client's fetch of c images at once). " +
		"CPU = the n8n process and its task runner; load = the lowest and highest 1-minute load average around the cell's runs. Store = each checkProcessedAndRecord / removeProcessed call timed inside n8n, call to answer.";
	const ms = (value) =>
		value >= 10_000 ? `${(value / 1000).toFixed(2)} s` : `${value.toFixed(0)} ms`;
	const runsOf = (r) => `${r.runs} run${r.runs === 1 ? '' : 's'}`;
	const perItem = (value, r) => (value / r.count).toFixed(0);
	const cpuOf = (r) =>
		`${perItem(r.cpuMs, r)} ms (${runsOf(r)}, ${perItem(r.cpuRange[0], r)}–${perItem(r.cpuRange[1], r)}; JavaScript thread ${perItem(r.threads.main, r)}, V8 workers ${perItem(r.threads.v8, r)}; mark-compacts ${r.majorsPerItem.toFixed(2)}/item; load ${r.load.map((l) => l.toFixed(1)).join('–')})`;
	for (const c of concurrencies) {
		for (const count of sizes) {
			const [off, empty, bound, stubbed] = ['without', 'empty', 'bound', 'stubbed'].map((key) =>
				cell(results, key, count, c),
			);
			if (!off || !bound) continue;
			const ideal = floors[count] + Math.ceil(count / c) * (latencyMs + fetchMs[c]);
			const broken = (r) => (r?.problem ? ` — FAILED: ${r.problem}` : '');
			const overIdeal = (r) => `${(r.wallMs / ideal).toFixed(3)} × ideal`;
			const cell_ = `N=${count}, c=${c}:`;
			figures.push(
				figure({
					group,
					figure: `${cell_} wall, without the record (${base}; ${runsOf(off)})${broken(off)}`,
					measured: off.wallMs,
					ideal,
					unit: 'ms',
					target: '—',
					note,
				}),
				figure({
					group,
					figure: `${cell_} wall, record at its bound (${MAX_ENTRIES.toLocaleString('en-US')} entries; ${runsOf(bound)}, ${overIdeal(bound)}; without ${overIdeal(off)}) vs without${broken(bound)}`,
					measured: bound.wallMs,
					ideal: off.wallMs,
					unit: 'ms',
					maxRatio: 1.02,
					target: '≤ 1.02 × without',
				}),
			);
			if (empty)
				figures.push(
					figure({
						group,
						figure: `${cell_} wall, record on an empty row (${runsOf(empty)}, ${overIdeal(empty)}) vs without${broken(empty)}`,
						measured: empty.wallMs,
						ideal: off.wallMs,
						unit: 'ms',
						maxRatio: 1.02,
						target: '≤ 1.02 × without',
					}),
				);
			if (stubbed)
				figures.push(
					figure({
						group,
						figure: `${cell_} wall, record at its bound vs the package now with n8n's store call answered in place (${runsOf(stubbed)}, ${overIdeal(stubbed)}): the store's own share${broken(stubbed)}`,
						measured: bound.wallMs,
						ideal: stubbed.wallMs,
						unit: 'ms',
						maxRatio: 1.02,
						target: '≤ 1.02 × stubbed',
					}),
				);
			figures.push(
				figure({
					group,
					figure: `${cell_} n8n CPU per item, record at its bound ${cpuOf(bound)} vs without ${cpuOf(off)}`,
					measured: bound.cpuMs / count,
					ideal: off.cpuMs / count,
					unit: 'ms',
					target: 'shown',
				}),
			);
			if (empty)
				figures.push(
					figure({
						group,
						figure: `${cell_} n8n CPU per item, record on an empty row ${cpuOf(empty)} vs without`,
						measured: empty.cpuMs / count,
						ideal: off.cpuMs / count,
						unit: 'ms',
						target: 'shown',
					}),
				);
			if (stubbed)
				figures.push(
					figure({
						group,
						figure: `${cell_} n8n CPU per item, record at its bound vs store call answered in place ${cpuOf(stubbed)}`,
						measured: bound.cpuMs / count,
						ideal: stubbed.cpuMs / count,
						unit: 'ms',
						target: 'shown',
					}),
				);
			figures.push(
				figure({
					group,
					figure: `${cell_} n8n's store in the run, one call at the bound vs on the empty row: median (p90 ${bound.storeP90Ms.toFixed(1)} / ${(empty?.storeP90Ms ?? 0).toFixed(1)} ms, max ${bound.storeMaxMs.toFixed(0)} / ${(empty?.storeMaxMs ?? 0).toFixed(0)} ms); ${(bound.storeCalls / count).toFixed(2)} calls per item, ${bound.storeMsPerItem.toFixed(1)} / ${(empty?.storeMsPerItem ?? 0).toFixed(1)} ms per item (${ms(bound.storeMsPerItem * count)} of the run's ${ms(bound.wallMs)} at the bound)`,
					measured: bound.storeMedianMs,
					ideal: empty?.storeMedianMs || null,
					unit: 'ms',
					target: '—',
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
				note: "Store calls: n8n's own DataDeduplicationService (DeduplicationHelper over TypeORM and SQLite) called from inside the running n8n (n8n-profiler.cjs, `storeCalls`) with the options Generate uses (scope node, mode entries, maxEntries 10,000); each call reads the row, parses it, adds the value, drops the oldest past the bound and writes the row back.",
			}),
		);
	}
	return figures;
}
