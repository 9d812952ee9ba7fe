// `npm run bench -- --n8n --n8n-parts=nightly`: the README's pattern for large nightly batches (issue 51)
// in the pinned n8n 2.41.1, one `n8n start` (regular mode, SQLite, filesystem binary data: n8n 2.x's
// default in regular mode), side by side with the same loop built from n8n's own nodes:
//
//   Webhook (stands in for the schedule; answers when the last node finished) → Split Out (N products)
//   → Loop Over Items (batches of B) → <build> → back into Loop Over Items; its done output → Done (No Op).
//
// Builds (`--n8n-nightly-builds=imagepack,http,lean,sub`):
// - imagepack: Image Pack Generate (Concurrency c, Download Images on, On Error: Continue, regular output).
// - lean: the same with Output Fields = Listing (only what a listing needs; see the README's option list).
// - sub: Execute Workflow (run once with all items, wait) → a sub-workflow per batch: Execute Workflow
//   Trigger → Generate (Idempotency Key = the product's SKU) → Edit Fields (sku, turn_id, image id,
//   error code; binary dropped). The parent keeps one small item per product.
// - http: HTTP Request POST /generate (Batching: c per batch, one latency apart) → Split Out images →
//   HTTP Request GET the file (Response Format File, Batching c) — the batch bench's HTTP Request build.
// Each with Save Execution Progress off and on (`--n8n-nightly-progress=off,on`). The file host serves
// images of `--image-mib` (default here 0.25 MiB, about a 1K product photo: 10,000 of them are 2.5 GiB).
//
// Ideal = batches × waves × latency (ceil(N / B) × ceil(B / c) × L): no download, no bookkeeping.
// Per run: wall, n8n's CPU per item (process + task runner; the JavaScript thread apart), peak RSS of the
// main process (kernel high-water mark) and V8's mark-compacts; from the saved execution: each batch's
// time (one Loop Over Items run to the next), its nodes' own time (executionTime) and the rest (n8n
// between nodes: progress saving, bookkeeping), in the first and the last 10 % of batches, with the
// RSS sampled (every 250 ms) over each; the saved execution's size; the package's own share: store
// calls per item (n8n's deduplication store, timed by n8n-profiler.cjs), output JSON and binary
// metadata bytes per item, binary data written.
import fs from 'node:fs';
import path from 'node:path';

import { createUserFolder, importCredential, importWorkflow, packPackage, publishWorkflow, querySqlite, withRunData } from '../e2e/n8n.mjs';
import { startN8nRetrying } from './builds.mjs';
import { figure } from './figures.ts';
import {
	CREDENTIAL,
	GENERATE,
	HEADER_AUTH,
	bareFetchMs,
	call,
	heapUsed,
	hostStats,
	loadAverage,
	node,
	procStatus,
	runProfiler,
	settleRss,
	threadCpuMs,
	treeCpuMs,
	waitFor,
	withNodeOptions,
} from './n8n.bench.mjs';

const IMAGEPACK = 'n8n-nodes-imagepack.imagePack';
const LOOP = 'Loop Over Items';
const to = (name) => [{ node: name, type: 'main', index: 0 }];
const MiB = 2 ** 20;

function webhook(id) {
	return node('Webhook', 'n8n-nodes-base.webhook', 2, { httpMethod: 'POST', path: id, responseMode: 'lastNode', responseData: 'noData', options: {} }, { webhookId: `${id}-hook` });
}

/** Webhook → Split Out → Loop Over Items (batch) → steps… → loop; done → Done. */
function loopWorkflow(id, name, { batch, progress, steps }) {
	const nodes = [
		webhook(id),
		node('Products', 'n8n-nodes-base.splitOut', 1, { fieldToSplitOut: 'body.items', include: 'noOtherFields', options: {} }),
		node(LOOP, 'n8n-nodes-base.splitInBatches', 3, { batchSize: batch, options: {} }),
		...steps,
		node('Done', 'n8n-nodes-base.noOp', 1, {}),
	].map((n, index) => ({ ...n, position: [index * 240, 0] }));
	const connections = { Webhook: { main: [to('Products')] }, Products: { main: [to(LOOP)] }, [LOOP]: { main: [to('Done'), to(steps[0].name)] } };
	steps.forEach((step, i) => (connections[step.name] = { main: [to(steps[i + 1]?.name ?? LOOP)] }));
	return { id, name, nodes, connections, settings: { executionOrder: 'v1', saveExecutionProgress: progress }, active: false };
}

function generateNode(c, extra = {}) {
	return node(
		'Generate images',
		IMAGEPACK,
		1,
		{ resource: 'image', operation: 'generate', prompt: '={{ $json.prompt }}', ...GENERATE, purpose: 'free', options: { concurrency: c, downloadImages: true, ...extra } },
		{ credentials: { imagePackApi: CREDENTIAL }, onError: 'continueRegularOutput' },
	);
}

/** The sub-workflow a batch runs in (`sub`): Generate with a key per product, then only what the parent needs. */
function subWorkflow(id, c) {
	const nodes = [
		node('Batch', 'n8n-nodes-base.executeWorkflowTrigger', 1, {}),
		generateNode(c, { idempotencyKey: '={{ $json.sku }}' }),
		node('Listing fields', 'n8n-nodes-base.set', 3.4, {
			mode: 'manual',
			assignments: {
				assignments: [
					{ id: 'sku', name: 'sku', type: 'string', value: "={{ $('Batch').item.json.sku }}" },
					{ id: 'turn', name: 'turn_id', type: 'string', value: '={{ $json.turn_id ?? null }}' },
					{ id: 'image', name: 'image_id', type: 'string', value: '={{ $json.images?.[0]?.id ?? null }}' },
					{ id: 'error', name: 'error', type: 'string', value: '={{ $json.error?.code ?? null }}' },
				],
			},
			includeOtherFields: false,
			options: { stripBinary: true },
		}),
	].map((n, index) => ({ ...n, position: [index * 240, 0] }));
	return {
		id,
		name: `bench nightly: one batch (sub-workflow), c=${c}`,
		nodes,
		connections: { Batch: { main: [to('Generate images')] }, 'Generate images': { main: [to('Listing fields')] } },
		settings: { executionOrder: 'v1' },
		active: false,
	};
}

function httpSteps(c, baseUrl, latencyMs, fetchIntervalMs) {
	const auth = { authentication: 'genericCredentialType', genericAuthType: 'httpHeaderAuth' };
	const credentials = { httpHeaderAuth: HEADER_AUTH };
	return [
		node(
			'Generate (HTTP Request)',
			'n8n-nodes-base.httpRequest',
			4.2,
			{
				method: 'POST',
				url: `${baseUrl}/api/v1/generate`,
				...auth,
				sendBody: true,
				specifyBody: 'json',
				jsonBody: `={{ JSON.stringify({ prompt: $json.prompt, ${Object.entries(GENERATE).map(([k, v]) => `${k}: ${JSON.stringify(v)}`).join(', ')} }) }}`,
				options: { batching: { batch: { batchSize: c, batchInterval: latencyMs } }, timeout: 300_000 },
			},
			{ credentials },
		),
		node('Images', 'n8n-nodes-base.splitOut', 1, { fieldToSplitOut: 'images', include: 'noOtherFields', options: {} }),
		node(
			'Download (HTTP Request)',
			'n8n-nodes-base.httpRequest',
			4.2,
			{
				method: 'GET',
				url: `={{ '${baseUrl}' + $json.url }}`,
				...auth,
				options: { batching: { batch: { batchSize: c, batchInterval: fetchIntervalMs } }, response: { response: { responseFormat: 'file' } }, timeout: 300_000 },
			},
			{ credentials },
		),
	];
}

export const NIGHTLY_BUILDS = {
	imagepack: { label: 'Image Pack Generate', nodes: ['Generate images'] },
	lean: { label: 'Image Pack Generate, Output Fields: Listing', nodes: ['Generate images'] },
	sub: { label: 'Image Pack in a sub-workflow per batch (key per product)', nodes: ['One batch'] },
	http: { label: "n8n's HTTP Request ×2 + Split Out", nodes: ['Generate (HTTP Request)', 'Images', 'Download (HTTP Request)'] },
};

const folderBytes = (dir) => {
	let total = 0;
	if (!fs.existsSync(dir)) return 0;
	for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
		const full = path.join(dir, entry.name);
		if (entry.isDirectory()) total += folderBytes(full);
		else if (entry.isFile()) total += fs.statSync(full).size;
	}
	return total;
};

const median = (values) => {
	const sorted = [...values].sort((a, b) => a - b);
	if (!sorted.length) return NaN;
	const middle = sorted.length >> 1;
	return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};

/** What a saved execution says about its batches: times, the build's own time, the output per item. */
export function readBatches(exec, buildNodes, sampled) {
	const runData = exec.run?.resultData?.runData ?? {};
	const loopRuns = runData[LOOP] ?? [];
	const starts = loopRuns.map((r) => r.startTime);
	const end = Math.max(...Object.values(runData).flat().map((r) => r.startTime + (r.executionTime ?? 0)));
	const batches = [];
	for (let i = 0; i < loopRuns.length - 1; i++) {
		const from = starts[i];
		const until = starts[i + 1] ?? end;
		const own = buildNodes.reduce((sum, name) => sum + (runData[name]?.[i]?.executionTime ?? 0), 0);
		const within = sampled.filter((s) => s.at >= from && s.at <= until);
		const rss = within.reduce((max, s) => Math.max(max, s.rss), 0);
		const heap = within.reduce((max, s) => Math.max(max, s.heap ?? 0), 0);
		batches.push({ ms: until - from, ownMs: own, loopMs: loopRuns[i].executionTime ?? 0, rss, heap });
	}
	// The build's output items: the JSON and the binary metadata n8n keeps for each.
	const last = buildNodes.at(-1);
	const items = (runData[last] ?? []).flatMap((r) => r.data?.main?.[0] ?? []);
	const jsonBytes = items.reduce((sum, item) => sum + Buffer.byteLength(JSON.stringify(item.json ?? {})), 0);
	const binaryBytes = items.reduce((sum, item) => sum + (item.binary ? Buffer.byteLength(JSON.stringify(item.binary)) : 0), 0);
	const withImage = items.filter((item) => item.binary && Object.keys(item.binary).length).length;
	const errors = items.filter((item) => item.json?.error).length;
	const done = runData.Done?.at(-1)?.data?.main?.[0]?.length ?? 0;
	return { batches, items: items.length, jsonBytes, binaryBytes, withImage, errors, done };
}

/** Median batch time, the build's own time and the highest RSS over the first / last tenth of batches. */
export function tenths(batches) {
	const k = Math.max(1, Math.ceil(batches.length / 10));
	const part = (list) => ({
		ms: median(list.map((b) => b.ms)),
		ownMs: median(list.map((b) => b.ownMs)),
		restMs: median(list.map((b) => b.ms - b.ownMs)),
		rss: Math.max(...list.map((b) => b.rss)),
		heap: Math.max(...list.map((b) => b.heap)),
	});
	return { first: part(batches.slice(0, k)), last: part(batches.slice(-k)), k };
}

/**
 * The nightly pattern at each size × build × progress, in one n8n start (per heap setting), the runs of a
 * size taking turns (builds and progress alternating, the order rotated on each repeat).
 */
/**
 * `split`: each size run as that many executions of the workflow one after the other (a night of
 * 10,000 products as 5 executions of 2,000, each with its own data), so that the last can be read
 * against the first in one n8n process.
 */
export async function benchN8nNightly(env, { endpoints, storage, sizes, concurrency, batch, latencyMs, builds, progress, heapMiB, runs, gcStatsDir, profDir, report, split: splitInto = 1, semiSpaceMiB = 0 }) {
	const log = env.log;
	const baseUrl = endpoints.realisticBaseUrl;
	// `--n8n-prof=<dir>`: each run's CPU profile and sampled allocations too (cpu-profile.mjs sums them by package).
	const profiler = runProfiler(profDir ?? gcStatsDir ?? fs.mkdtempSync(path.join(storage, 'nightly-gc-')), !profDir);
	const bareDir = fs.mkdtempSync(path.join(storage, 'nightly-bare-'));
	const fetch = await bareFetchMs(baseUrl, endpoints.apiKey, bareDir, concurrency);
	log(`n8n nightly: a bare client's fetch of ${concurrency} images at once ${fetch.ms.toFixed(1)} ms`);

	log('n8n nightly: build + pack, user folder, credentials, workflows');
	const tarball = await packPackage();
	const user = await createUserFolder({ tarball, dir: fs.mkdtempSync(path.join(storage, 'n8n-nightly-')) });
	fs.rmSync(path.dirname(tarball), { recursive: true, force: true });
	await importCredential(user.dir, [
		{ ...CREDENTIAL, type: 'imagePackApi', data: { baseUrl, apiKey: endpoints.apiKey } },
		{ ...HEADER_AUTH, type: 'httpHeaderAuth', data: { name: 'Authorization', value: `Bearer ${endpoints.apiKey}` } },
	]);
	const SUB = 'benchNightlySub';
	const cells = [];
	const workflows = [];
	if (builds.includes('sub')) workflows.push(subWorkflow(SUB, concurrency));
	for (const build of builds) {
		for (const on of progress) {
			const id = `benchNightly${build[0].toUpperCase()}${build.slice(1)}${on ? 'On' : 'Off'}`;
			const steps =
				build === 'http'
					? httpSteps(concurrency, baseUrl, latencyMs, Math.max(1, Math.ceil(fetch.ms)))
					: build === 'sub'
						? [node('One batch', 'n8n-nodes-base.executeWorkflow', 1, { source: 'database', workflowId: SUB, mode: 'once', options: { waitForSubWorkflow: true } })]
						: [generateNode(concurrency, build === 'lean' ? { outputFields: 'listing' } : {})];
			workflows.push(loopWorkflow(id, `bench nightly: ${NIGHTLY_BUILDS[build].label}, progress ${on ? 'on' : 'off'}`, { batch, progress: on, steps }));
			cells.push({ build, progress: on, id });
		}
	}
	await importWorkflow(user.dir, workflows);
	for (const workflow of workflows) await publishWorkflow(user.dir, workflow.id);

	// V8's young generation (`--max-semi-space-size`, MiB; 0: V8's default): at a 320 MB heap its default
	// leaves V8 marking n8n's heap without a pause (docs/large-batches.md, "The young generation").
	const nodeOptions = [heapMiB ? `--max-old-space-size=${heapMiB}` : '', semiSpaceMiB ? `--max-semi-space-size=${semiSpaceMiB}` : ''].filter(Boolean).join(' ');
	const heapEnv = nodeOptions ? { NODE_OPTIONS: nodeOptions } : {};
	const setting = heapSetting({ heapMiB, semiSpaceMiB });
	const n8n = await startN8nRetrying({
		userFolder: user.dir,
		echo: Boolean(process.env.BENCH_N8N_ECHO),
		env: { N8N_DEFAULT_BINARY_DATA_MODE: 'filesystem', N8N_METRICS: 'true', N8N_LOG_LEVEL: process.env.BENCH_N8N_ECHO ? 'debug' : 'warn', ...withNodeOptions(heapEnv, profiler.env) },
	});
	const pid = n8n.process.pid;
	const binaryDir = path.join(user.n8nDir, 'storage');
	const results = [];
	const products = (count, tag) => Array.from({ length: count }, (_, i) => ({ sku: `${tag}-${i + 1}`, prompt: `Product ${i + 1} (${tag}): a ceramic mug on an oak table, e-commerce photo` }));
	try {
		await waitFor('the bench webhooks to be registered', async () => {
			const rows = await querySqlite(user.dir, 'SELECT webhookPath FROM webhook_entity');
			return cells.every((cell) => rows.some((row) => row.webhookPath === cell.id));
		});
		for (const cell of cells) {
			const answer = await call(`${n8n.url}/webhook/${cell.id}`, { method: 'POST', body: { items: products(Math.min(batch, 20), `warm-${cell.id}`) } });
			if (answer.status !== 200) throw new Error(`warm-up of ${cell.id}: HTTP ${answer.status} ${answer.text.slice(0, 500)}`);
		}
		const idle = await settleRss(pid);
		log(`n8n nightly: after the warm-ups RSS ${(idle / MiB).toFixed(0)} MiB${setting.text ? `, ${setting.text}` : ''}`);
		await env.control.setLatency('generate', latencyMs);
		for (const total of sizes) {
			const count = Math.ceil(total / splitInto);
			for (let round = 0; round < runs; round++) {
				const order = [...cells.slice(round % cells.length), ...cells.slice(0, round % cells.length)];
				for (const cell of order) for (let part = 1; part <= splitInto; part++) {
					const partLabel = splitInto > 1 ? `-part${part}of${splitInto}` : '';
					const label = `nightly-${cell.build}-${cell.progress ? 'on' : 'off'}-n${count}${partLabel}-run${round + 1}${setting.label}`;
					log(`n8n nightly: N=${count}${splitInto > 1 ? ` (execution ${part} of ${splitInto}, ${total} in all)` : ''}, ${NIGHTLY_BUILDS[cell.build].label}, progress ${cell.progress ? 'on' : 'off'}, run ${round + 1}`);
					fs.rmSync(binaryDir, { recursive: true, force: true });
					await env.control.clearRequests();
					await hostStats(baseUrl, true);
					const items = products(count, `${label}-${Date.now()}`);
					const loadBefore = loadAverage();
					const before = procStatus(pid).rss;
					const sampled = [];
					// RSS every 250 ms; the V8 heap in use (n8n's /metrics) every 15 s: a read of /metrics costs n8n about 150 ms of CPU on a loaded machine (its PSS gauge reads /proc smaps; 3 % of the run's CPU at every 5 s).
					let ticks = 0;
					const sampler = setInterval(() => {
						sampled.push({ at: Date.now(), rss: procStatus(pid).rss });
						if (ticks++ % 60 === 0) heapUsed(n8n.url).then((heap) => sampled.push({ at: Date.now(), rss: 0, heap }));
					}, 250);
					let peak;
					let peakHeap;
					try {
						fs.writeFileSync(`/proc/${pid}/clear_refs`, '5');
					} catch {}
					const measured = await profiler.around(label, pid, async () => {
						const cpuBefore = treeCpuMs(pid);
						const threadsBefore = threadCpuMs(pid);
						const started = performance.now();
						const response = await call(`${n8n.url}/webhook/${cell.id}`, { method: 'POST', body: { items } });
						const wallMs = performance.now() - started;
						peak = Math.max(procStatus(pid).hwm, ...sampled.map((s) => s.rss));
						peakHeap = Math.max(0, ...sampled.map((s) => s.heap ?? 0));
						return { response, wallMs, cpuMs: treeCpuMs(pid) - cpuBefore, mainMs: threadCpuMs(pid).main - threadsBefore.main };
					});
					clearInterval(sampler);
					const load = [loadBefore, loadAverage()];
					const stats = profiler.stats(label);
					const heapAfter = await heapUsed(n8n.url);
					const host = await hostStats(baseUrl);
					const generates = (await env.control.requests({ route: 'generate' })).length;
					const binaryDataBytes = folderBytes(binaryDir);
					const [row] = await querySqlite(
						user.dir,
						'SELECT e.id, e.status, e.startedAt, e.stoppedAt, d.data, length(d.data) AS bytes FROM execution_entity e JOIN execution_data d ON d.executionId = e.id WHERE e.workflowId = ? ORDER BY e.id DESC LIMIT 1',
						[cell.id],
					);
					const exec = withRunData([row])[0];
					const read = readBatches(exec, NIGHTLY_BUILDS[cell.build].nodes, sampled);
					const split = tenths(read.batches);
					const store = stats.store ?? {};
					const storeCalls = ['checkProcessedAndRecord', 'removeProcessed', 'getProcessedDataCount'].reduce((sum, m) => sum + (store[m]?.calls ?? 0), 0);
					const storeMs = ['checkProcessedAndRecord', 'removeProcessed', 'getProcessedDataCount'].reduce((sum, m) => sum + (store[m]?.totalMs ?? 0), 0);
					const result = {
						build: cell.build,
						progress: cell.progress,
						count,
						part,
						parts: splitInto,
						heapMiB,
						wallMs: measured.wallMs,
						idealMs: Math.ceil(count / batch) * Math.ceil(batch / concurrency) * latencyMs,
						cpuMs: measured.cpuMs,
						mainMs: measured.mainMs,
						peak,
						peakHeap,
						before,
						heapAfter,
						load,
						majors: stats.gc?.['major (mark-compact)']?.count ?? 0,
						gcMs: Object.values(stats.gc ?? {}).reduce((sum, g) => sum + g.ms, 0),
						storeCalls,
						storeMs,
						generates,
						requests: host.requests,
						executionBytes: row.bytes,
						status: row.status,
						...read,
						binaryDataBytes,
						batches: read.batches.length,
						batchList: read.batches.map((b) => [Math.round(b.ms), Math.round(b.ownMs), Math.round(b.rss / MiB), Math.round(b.heap / MiB), Math.round(b.loopMs)]),
						split,
					};
					if (measured.response.status !== 200 || row.status !== 'success' || read.done !== count || generates !== count) {
						result.problem = `HTTP ${measured.response.status}, execution ${row.status}, ${read.done} items done, ${generates} generates for ${count}`;
						log(`n8n nightly: ${result.problem}`);
					}
					log(`  ${summaryLine(result)}`);
					results.push(result);
					// `--n8n-nightly-report=<file>`: every run's numbers, appended as they come (a long run may be cut short).
					if (report) {
						const kept = fs.existsSync(report) ? JSON.parse(fs.readFileSync(report, 'utf8')) : [];
						fs.writeFileSync(report, JSON.stringify([...kept, { ...result, at: new Date().toISOString(), loadavg: loadAverage() }], null, 1));
					}
					// The executions stay: n8n's pruning is not what is measured. Their binary folders do not.
					await querySqlite(user.dir, 'DELETE FROM execution_entity WHERE workflowId = ? AND id < ?', [cell.id, row.id]);
				}
			}
		}
	} finally {
		await env.control.setLatency('generate', 0);
		await n8n.stop();
		user.cleanup();
		fs.rmSync(bareDir, { recursive: true, force: true });
	}
	return nightlyFigures(results, { batch, concurrency, latencyMs, setting });
}

const f0 = (n) => n.toFixed(0);
const f1 = (n) => n.toFixed(1);

export function summaryLine(r) {
	const { first, last } = r.split;
	return (
		`wall ${f1(r.wallMs / 1000)} s = ${(r.wallMs / r.idealMs).toFixed(2)} × ideal ${f1(r.idealMs / 1000)} s; CPU ${f1(r.cpuMs / r.count)} ms per item (JavaScript thread ${f1(r.mainMs / r.count)}; load ${r.load.map(f1).join(' → ')}); ` +
		`peak RSS ${f0(r.peak / MiB)} MiB (before ${f0(r.before / MiB)}), heap in use after ${f0(r.heapAfter / MiB)} MiB, ${r.majors} mark-compacts (GC ${f0(r.gcMs)} ms); ` +
		`batch first/last 10 %: ${f0(first.ms)} / ${f0(last.ms)} ms (build's own ${f0(first.ownMs)} / ${f0(last.ownMs)}, n8n between ${f0(first.restMs)} / ${f0(last.restMs)}), RSS ${f0(first.rss / MiB)} / ${f0(last.rss / MiB)} MiB, heap in use ${f0(first.heap / MiB)} / ${f0(last.heap / MiB)} MiB (peak ${f0(r.peakHeap / MiB)}); ` +
		`execution saved ${f1(r.executionBytes / MiB)} MiB (${f0(r.executionBytes / r.count)} B per item); output ${f0(r.jsonBytes / Math.max(1, r.items))} B JSON + ${f0(r.binaryBytes / Math.max(1, r.items))} B binary metadata per item; ` +
		`store calls ${(r.storeCalls / r.count).toFixed(3)} per item (${f1(r.storeMs / r.count)} ms); ${r.generates} generates, ${r.requests} host requests, binary data written ${f0(r.binaryDataBytes / MiB)} MiB; done ${r.done}, errors ${r.errors}`
	);
}

/** n8n's heap settings of a run, as its labels and the table's heading name them. */
function heapSetting({ heapMiB, semiSpaceMiB }) {
	const parts = [heapMiB ? [`-heap${heapMiB}`, `heap ${heapMiB} MB`] : undefined, semiSpaceMiB ? [`-semi${semiSpaceMiB}`, `semi-space ${semiSpaceMiB} MiB`] : undefined].filter(Boolean);
	return { label: parts.map(([label]) => label).join(''), text: parts.map(([, text]) => text).join(', ') };
}

function nightlyFigures(results, { batch, concurrency, latencyMs, setting }) {
	const group = `N8N-6. The nightly pattern in n8n 2.41.1${setting.text ? ` (${setting.text})` : ''}: Loop Over Items of ${batch}, Concurrency ${concurrency}, generate latency ${latencyMs} ms, downloads`;
	const note = `Ideal = batches × waves × latency (ceil(N / ${batch}) × ceil(${batch} / ${concurrency}) × ${latencyMs} ms). First / last 10 %: the median batch time (Loop Over Items run to the next) and the highest RSS of n8n's main process over those batches. Store calls: n8n's deduplication store (n8n-profiler.cjs).`;
	const figures = [];
	for (const r of results) {
		const part = r.parts > 1 ? ` (execution ${r.part} of ${r.parts})` : '';
		const name = `N=${r.count}${part}, ${NIGHTLY_BUILDS[r.build].label}, progress ${r.progress ? 'on' : 'off'}`;
		const { first, last } = r.split;
		const broken = r.problem ? ` — FAILED: ${r.problem}` : '';
		figures.push(
			figure({ group, figure: `${name}: wall${broken}`, measured: r.wallMs, ideal: r.idealMs, unit: 'ms', target: '—', note }),
			figure({ group, figure: `${name}: batch time, last 10 % vs first 10 % (${f0(last.ms)} / ${f0(first.ms)} ms; build's own ${f0(last.ownMs)} / ${f0(first.ownMs)} ms)`, measured: last.ms, ideal: first.ms, unit: 'ms', maxRatio: 1.1, target: 'flat (≤ 1.1)' }),
			figure({ group, figure: `${name}: RSS of n8n's main process, last 10 % vs first 10 % of batches`, measured: last.rss, ideal: first.rss, unit: 'bytes', maxRatio: 1.1, target: 'flat (≤ 1.1)' }),
			figure({ group, figure: `${name}: peak RSS of n8n's main process (load ${r.load.map(f1).join('–')})`, measured: r.peak, ideal: null, unit: 'bytes', target: '—' }),
			figure({ group, figure: `${name}: n8n's CPU per item (JavaScript thread ${f1(r.mainMs / r.count)} ms)`, measured: r.cpuMs / r.count, ideal: null, unit: 'ms', target: '—' }),
			figure({ group, figure: `${name}: execution as saved, per item (${f1(r.executionBytes / MiB)} MiB)`, measured: r.executionBytes / r.count, ideal: null, unit: 'bytes', target: '—' }),
			figure({ group, figure: `${name}: the build's output per item, JSON + binary metadata`, measured: (r.jsonBytes + r.binaryBytes) / Math.max(1, r.items), ideal: null, unit: 'bytes', target: '—' }),
			figure({ group, figure: `${name}: store calls per item`, measured: r.storeCalls / r.count, ideal: null, unit: '', target: '—' }),
		);
	}
	// A night split into executions: the last one against the first, in the same n8n process.
	for (const r of results.filter((x) => x.parts > 1 && x.part === x.parts)) {
		const first = results.find((x) => x.build === r.build && x.progress === r.progress && x.count === r.count && x.part === 1);
		if (!first) continue;
		const name = `${r.parts} executions of N=${r.count}, ${NIGHTLY_BUILDS[r.build].label}, progress ${r.progress ? 'on' : 'off'}`;
		figures.push(
			figure({ group, figure: `${name}: wall of the last execution against the first`, measured: r.wallMs, ideal: first.wallMs, unit: 'ms', maxRatio: 1.1, target: 'flat (≤ 1.1)' }),
			figure({ group, figure: `${name}: peak RSS of n8n's main process, last execution against the first`, measured: r.peak, ideal: first.peak, unit: 'bytes', maxRatio: 1.1, target: 'flat (≤ 1.1)' }),
		);
	}
	return figures;
}
