// `npm run bench -- --n8n --n8n-parts=credentials`: what reading the Image Pack credential per item
// (#44, transport/credential.ts `connectionsPerItem`) costs Generate in a real n8n 2.41.1, against
// the package that read it once per execution.
//
// Builds, each in its own n8n start on one user folder (the same package name cannot be installed
// twice), taking turns ABBA… over `--n8n-credentials-sessions` starts (default 4):
// - `now`: `--n8n-credentials-now=<tarball>`, or the work tree built and packed;
// - `before`: `--n8n-credentials-before=<tarball>`, or `--n8n-credentials-base=<commit>` (default
//   4b01bcc, the last commit that read the credential once) packed from a temporary git worktree.
// Credentials, each with its own workflow (Webhook → Split Out → Generate, concurrency c):
// - `plain`: Base URL and API Key as values;
// - `expression`: API Key `={{ $json.apiKey }}`, every item carrying the emulator's key (one account:
//   what is measured is the read and the expression, not a second account's requests).
// Every item also carries the key in both workflows, so that both get the same input.
// Generate runs without its downloads by default (`--n8n-credentials-downloads=1`: with them, as the
// batch does): the downloads' garbage collections move n8n's CPU per item by ±10 % from run to run
// (performance.md), far more than the 2 % asked. Before every run n8n's deduplication store is
// emptied (the durable record's row would otherwise grow run by run, and a store call costs more on a
// longer row), the profiler collects n8n's heap, and after it the bench waits until n8n is idle
// (the execution saved). In each session every c runs `--n8n-runs` (default 3) rounds, the two
// credentials taking turns going first. Beside n8n's CPU, credential-reads.cjs (preloaded) counts and
// times n8n's `_getCredentials` in each run: the reads per run and what each costs, measured directly.
// Sizes, concurrencies and latency: `--n8n-sizes` (default 200), `--n8n-concurrency` (1,8),
// `--n8n-latency` (100 ms: CPU per item hardly depends on it, and it keeps a session short).
import fs from 'node:fs';
import path from 'node:path';

import {
	createUserFolder,
	importCredential,
	importWorkflow,
	packPackage,
	publishWorkflow,
	querySqlite,
} from '../e2e/n8n.mjs';
import { git, packAt, startN8nRetrying } from './builds.mjs';
import { figure } from './figures.ts';
import {
	CREDENTIAL,
	call,
	hostStats,
	imagePackBatch,
	loadAverage,
	median,
	runProfiler,
	settleRss,
	threadCpuMs,
	threadsPerItem,
	treeCpuMs,
	waitFor,
	withNodeOptions,
} from './n8n.bench.mjs';

export const EXPRESSION_CREDENTIAL = {
	id: 'benchImagePackExpr',
	name: 'Image Pack (bench, API Key {{ $json.apiKey }})',
};
const KINDS = ['plain', 'expression'];

/** The batch workflow of n8n.bench.mjs with one of the two credentials; downloads on or off. */
function generateBatch(id, c, kind, downloads) {
	const workflow = imagePackBatch(id, c);
	workflow.name = `bench: Generate, ${kind} credential, c=${c}`;
	for (const n of workflow.nodes) {
		if (!n.credentials?.imagePackApi) continue;
		n.credentials = { imagePackApi: kind === 'expression' ? EXPRESSION_CREDENTIAL : CREDENTIAL };
		n.parameters.options.downloadImages = downloads;
	}
	return workflow;
}

/** Waits until n8n has used less than `quietMs` of CPU in 500 ms (the execution saved, timers done). */
async function idle(pid, quietMs = 20, limitMs = 30_000) {
	const started = Date.now();
	let before = treeCpuMs(pid);
	while (Date.now() - started < limitMs) {
		await new Promise((resolve) => setTimeout(resolve, 500));
		const now = treeCpuMs(pid);
		if (now - before <= quietMs) return;
		before = now;
	}
}

export async function benchN8nCredentials(
	env,
	{
		endpoints,
		storage,
		sizes,
		concurrencies,
		latencyMs,
		runs,
		sessions,
		base,
		beforeTarball,
		nowTarball,
		downloads,
		gcStatsDir,
	},
) {
	const log = env.log;
	const baseUrl = endpoints.realisticBaseUrl;
	const head = await git(['rev-parse', '--short', 'HEAD']);
	const tarballs = {
		now:
			nowTarball ??
			(log(`n8n credentials: build + pack the work tree (${head})`), await packPackage()),
		before: beforeTarball ?? (await packAt(base, storage, log, 'credentials')).tarball,
	};
	for (const [build, tarball] of Object.entries(tarballs))
		log(`n8n credentials: ${build} = ${tarball}`);
	const user = await createUserFolder({
		tarball: tarballs.now,
		dir: fs.mkdtempSync(path.join(storage, 'n8n-credentials-')),
	});
	const side = await createUserFolder({
		tarball: tarballs.before,
		dir: fs.mkdtempSync(path.join(storage, 'n8n-credentials-before-')),
	});
	// The builds' unpacked packages, moved in turn into the installed place (n8n loads it at start).
	const stash = path.join(user.dir, 'builds');
	fs.mkdirSync(stash, { recursive: true });
	fs.renameSync(user.packageDir, path.join(stash, 'now'));
	fs.renameSync(side.packageDir, path.join(stash, 'before'));
	side.cleanup();
	let installed = null;
	const install = (build) => {
		if (installed === build) return;
		if (installed) fs.renameSync(user.packageDir, path.join(stash, installed));
		fs.renameSync(path.join(stash, build), user.packageDir);
		installed = build;
	};

	await importCredential(user.dir, [
		{ ...CREDENTIAL, type: 'imagePackApi', data: { baseUrl, apiKey: endpoints.apiKey } },
		{
			...EXPRESSION_CREDENTIAL,
			type: 'imagePackApi',
			data: { baseUrl, apiKey: '={{ $json.apiKey }}' },
		},
	]);
	const workflowOf = (kind, c) => `benchCred${kind === 'plain' ? 'Plain' : 'Expr'}C${c}`;
	const workflows = concurrencies.flatMap((c) =>
		KINDS.map((kind) => generateBatch(workflowOf(kind, c), c, kind, downloads)),
	);
	await importWorkflow(user.dir, workflows);
	for (const workflow of workflows) await publishWorkflow(user.dir, workflow.id);

	const profiler = runProfiler(gcStatsDir ?? fs.mkdtempSync(path.join(storage, 'gc-')), true);
	const profDir = profiler.env.BENCH_N8N_PROF_DIR;
	const preload = {
		NODE_OPTIONS: `--require ${path.join(import.meta.dirname, 'credential-reads.cjs')}`,
	};
	const products = (count) =>
		Array.from({ length: count }, (_, i) => ({
			prompt: `Product ${i + 1}: a ceramic mug on an oak table, e-commerce photo`,
			apiKey: endpoints.apiKey,
		}));
	const order = Array.from({ length: sessions }, (_, s) =>
		s % 4 === 0 || s % 4 === 3 ? 'before' : 'now',
	);
	const results = [];
	try {
		for (const [session, build] of order.entries()) {
			install(build);
			log(`n8n credentials: session ${session + 1} of ${order.length}, package ${build}`);
			const n8n = await startN8nRetrying({
				userFolder: user.dir,
				echo: Boolean(process.env.BENCH_N8N_ECHO),
				env: {
					N8N_DEFAULT_BINARY_DATA_MODE: 'filesystem',
					N8N_LOG_LEVEL: 'warn',
					...withNodeOptions(profiler.env, preload),
				},
			});
			const pid = n8n.process.pid;
			try {
				await waitFor('the bench webhooks to be registered', async () => {
					const rows = await querySqlite(user.dir, 'SELECT webhookPath FROM webhook_entity');
					return workflows.every((workflow) => rows.some((row) => row.webhookPath === workflow.id));
				});
				await env.control.setLatency('generate', 0);
				for (const workflow of workflows) {
					const answer = await call(`${n8n.url}/webhook/${workflow.id}`, {
						method: 'POST',
						body: { items: products(20) },
					});
					if (answer.status !== 200)
						throw new Error(
							`warm-up of ${workflow.name}: HTTP ${answer.status} ${answer.text.slice(0, 500)}`,
						);
				}
				await settleRss(pid);
				await env.control.setLatency('generate', latencyMs);
				for (const count of sizes) {
					const items = products(count);
					for (const c of concurrencies) {
						for (let round = 0; round < runs; round++) {
							const kinds = round % 2 === session % 2 ? KINDS : [...KINDS].reverse();
							for (const kind of kinds) {
								const label = `cred-s${session + 1}-${build}-${kind}-n${count}-c${c}-run${round + 1}`;
								await querySqlite(user.dir, 'DELETE FROM processed_data');
								await env.control.clearRequests();
								await hostStats(baseUrl, true);
								await idle(pid);
								const loadBefore = loadAverage();
								const { response, wallMs, cpuMs, threads } = await profiler.around(
									label,
									pid,
									async () => {
										const cpuBefore = treeCpuMs(pid);
										const threadsBefore = threadCpuMs(pid);
										const started = performance.now();
										const response = await call(`${n8n.url}/webhook/${workflowOf(kind, c)}`, {
											method: 'POST',
											body: { items },
										});
										const wallMs = performance.now() - started;
										await idle(pid); // n8n saves the execution after answering: on this run's account
										const threadsAfter = threadCpuMs(pid);
										return {
											response,
											wallMs,
											cpuMs: treeCpuMs(pid) - cpuBefore,
											threads: Object.fromEntries(
												Object.entries(threadsAfter).map(([k, ms]) => [k, ms - threadsBefore[k]]),
											),
										};
									},
								);
								const load = [loadBefore, loadAverage()];
								const readsFile = path.join(profDir, `${label}.credentials.json`);
								await waitFor(
									'the credential reads of the run',
									() => fs.existsSync(readsFile),
									10_000,
								);
								const reads = JSON.parse(fs.readFileSync(readsFile, 'utf8'));
								const { gc } = profiler.stats(label);
								const generates = (await env.control.requests({ route: 'generate' })).length;
								const host = await hostStats(baseUrl);
								const result = {
									build,
									kind,
									count,
									c,
									session,
									round,
									wallMs,
									cpuMs,
									threads,
									load,
									reads,
									gc,
								};
								if (
									response.status !== 200 ||
									generates !== count ||
									host.signedFile !== (downloads ? count : 0)
								)
									result.problem = `HTTP ${response.status}, ${generates} generates, ${host.signedFile} signed-link downloads for ${count} items ${response.text.slice(0, 300)}`;
								log(
									`  ${label}: wall ${(wallMs / 1000).toFixed(2)} s, CPU ${(cpuMs / count).toFixed(2)} ms per item (${threadsPerItem(threads, count)}; load ${load.map((l) => l.toFixed(1)).join(' → ')}); ` +
										`credential reads ${reads.calls} (${(reads.wallMs / Math.max(1, reads.calls)).toFixed(2)} ms each, CPU ${(reads.cpuMs / Math.max(1, reads.calls)).toFixed(2)} ms); ` +
										`mark-compacts ${gc['major (mark-compact)']?.count ?? 0}` +
										(result.problem ? `; PROBLEM: ${result.problem}` : ''),
								);
								results.push(result);
							}
						}
					}
				}
			} finally {
				await env.control.setLatency('generate', 0);
				await n8n.stop();
			}
		}
	} finally {
		user.cleanup();
	}
	return credentialFigures(results, {
		sizes,
		concurrencies,
		latencyMs,
		downloads,
		sessions: order.length,
		head,
	});
}

/** The cell's runs (build, credential, N, c) over every session: medians, spread, reads. */
function cell(results, build, kind, count, c) {
	const runs = results.filter(
		(r) => r.build === build && r.kind === kind && r.count === count && r.c === c && !r.problem,
	);
	if (!runs.length) return undefined;
	const perItem = runs.map((r) => r.cpuMs / count).sort((a, b) => a - b);
	return {
		runs: runs.length,
		cpu: median(perItem),
		spread: [perItem[0], perItem.at(-1)],
		main: median(runs.map((r) => r.threads.main / count)),
		wall: median(runs.map((r) => r.wallMs)),
		reads: median(runs.map((r) => r.reads.calls)),
		readWallMs: median(runs.map((r) => r.reads.wallMs / Math.max(1, r.reads.calls))),
		readCpuMs: median(runs.map((r) => r.reads.cpuMs / Math.max(1, r.reads.calls))),
		readsCpuPerItem: median(runs.map((r) => r.reads.cpuMs / count)),
		majors:
			runs.reduce((sum, r) => sum + (r.gc['major (mark-compact)']?.count ?? 0), 0) /
			(runs.length * count),
		load: [Math.min(...runs.flatMap((r) => r.load)), Math.max(...runs.flatMap((r) => r.load))],
		sessions: median(
			[...new Set(runs.map((r) => r.session))].map((s) =>
				median(runs.filter((r) => r.session === s).map((r) => r.cpuMs / count)),
			),
		),
	};
}

export function credentialFigures(
	results,
	{ sizes, concurrencies, latencyMs, downloads, sessions, head },
) {
	const figures = [];
	const group = `N8N-4. The credential read per item (#44) in a real n8n 2.41.1: Generate (${downloads ? 'with' : 'without'} downloads, latency ${latencyMs} ms), the package now (${head}) vs the package that read it once per execution`;
	const note =
		`Credentials per item: the builds take turns over ${sessions} n8n starts (ABBA); in each, every N and c runs each credential the same number of times, taking turns going first, n8n's deduplication store emptied and its heap collected before each run. ` +
		"CPU = user + system time of the n8n process tree over the run and until n8n is idle again; reads = calls of n8n-core's _getCredentials in the run (credential-reads.cjs), their time from call to answer and the process's CPU over them.";
	const describe = (r) =>
		`${r.cpu.toFixed(2)} ms (${r.runs} runs, ${r.spread[0].toFixed(2)}–${r.spread[1].toFixed(2)}; JavaScript thread ${r.main.toFixed(2)}; ${r.reads} reads of ${r.readWallMs.toFixed(2)} ms, CPU ${r.readCpuMs.toFixed(2)} ms each; load ${r.load.map((l) => l.toFixed(1)).join('–')})`;
	for (const count of sizes) {
		for (const c of concurrencies) {
			const [beforePlain, nowPlain, beforeExpr, nowExpr] = [
				['before', 'plain'],
				['now', 'plain'],
				['before', 'expression'],
				['now', 'expression'],
			].map(([build, kind]) => cell(results, build, kind, count, c));
			const at = `N=${count}, c=${c}:`;
			if (nowPlain && beforePlain)
				figures.push(
					figure({
						group,
						figure: `${at} n8n CPU per item, plain credential, now ${describe(nowPlain)} vs before ${describe(beforePlain)}`,
						measured: nowPlain.cpu,
						ideal: beforePlain.cpu,
						unit: 'ms',
						maxRatio: 1.02,
						target: '≤ 1.02 × before',
						note,
					}),
				);
			if (nowExpr && beforeExpr)
				figures.push(
					figure({
						group,
						figure: `${at} n8n CPU per item, API Key {{ $json.apiKey }}, now ${describe(nowExpr)} vs before (read once, for item 0) ${describe(beforeExpr)}`,
						measured: nowExpr.cpu,
						ideal: beforeExpr.cpu,
						unit: 'ms',
						target: '—',
					}),
				);
			if (nowExpr && nowPlain)
				figures.push(
					figure({
						group,
						figure: `${at} now, expression credential vs plain: n8n CPU per item (the difference is what an expression credential costs per item)`,
						measured: nowExpr.cpu,
						ideal: nowPlain.cpu,
						unit: 'ms',
						target: '—',
					}),
				);
			for (const [label, r] of [
				['now, plain', nowPlain],
				['now, expression', nowExpr],
				['before, plain', beforePlain],
			])
				if (r)
					figures.push(
						figure({
							group,
							figure: `${at} ${label}: CPU of the credential reads per item (${r.reads} reads per run, ${r.readCpuMs.toFixed(2)} ms each)`,
							measured: r.readsCpuPerItem,
							ideal: null,
							unit: 'ms',
							target: '—',
						}),
					);
		}
	}
	return figures;
}
