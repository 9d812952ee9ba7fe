// `npm run bench -- --n8n`: the package inside the pinned, real n8n 2.41.1 (one `n8n start` process,
// filesystem binary data), side by side with what a user would build instead from n8n's own nodes,
// against the emulator behind the bench's realistic file host (servers.mjs). Plain ESM like the
// launcher: it owns processes, the clock and /proc, which the linted TypeScript may not touch.
//
// Batch: Webhook (standing in for the schedule: it answers when the last node finishes, so the bench
// can time it) → Split Out → either Image Pack Generate (concurrency c, downloadImages) or HTTP Request
// POST /generate (batching: c per batch, one generate latency apart) → Split Out images → HTTP Request
// GET the file (response format File, the same batching).
// Trigger: a backlog drained by the active Image Pack Trigger vs Schedule Trigger + Code + HTTP Request
// (pagination) + Code (dedupe in static data) + HTTP Request (details), in a running n8n.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';

import { createUserFolder, importCredential, importWorkflow, packPackage, publishWorkflow, querySqlite, startN8n } from '../e2e/n8n.mjs';
import { figure } from './figures.ts';

const IMAGEPACK = 'n8n-nodes-imagepack.imagePack';
export const IMAGEPACK_TRIGGER = 'n8n-nodes-imagepack.imagePackTrigger';
export const CREDENTIAL = { id: 'benchImagePack', name: 'Image Pack (bench)' };
export const HEADER_AUTH = { id: 'benchHeaderAuth', name: 'Image Pack key as header (bench)' };

/** A plain HTTP call without client timeouts (a batch of 500 at concurrency 1 takes minutes); one connection each. */
export function call(url, { method = 'GET', body } = {}) {
	return new Promise((resolve, reject) => {
		const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
		const req = http.request(
			url,
			{ method, agent: false, headers: payload ? { 'content-type': 'application/json', 'content-length': payload.length } : {} },
			(res) => {
				const chunks = [];
				res.on('data', (chunk) => chunks.push(chunk));
				res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
				res.on('error', reject);
			},
		);
		req.on('error', reject);
		req.end(payload);
	});
}

/** The realistic host's counters (servers.mjs); `reset` zeroes them after reading. */
export async function hostStats(baseUrl, reset = false) {
	return JSON.parse((await call(`${baseUrl}/_bench/stats${reset ? '?reset' : ''}`)).text);
}

export function procStatus(pid) {
	try {
		const text = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
		const kib = (key) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN) * 1024;
		return { rss: kib('VmRSS'), hwm: kib('VmHWM') };
	} catch {
		return { rss: NaN, hwm: NaN };
	}
}

/**
 * Peak RSS of a process from now on: the kernel's high-water mark (reset here through
 * /proc/<pid>/clear_refs, Linux ≥ 4.0) and, as a cross-check where that reset is not allowed, samples
 * every `everyMs`. stop() returns the peak.
 */
export function watchRss(pid, everyMs = 100) {
	let resettable = true;
	try {
		fs.writeFileSync(`/proc/${pid}/clear_refs`, '5');
	} catch {
		resettable = false;
	}
	const before = procStatus(pid).rss;
	let sampled = before;
	const timer = setInterval(() => {
		const { rss } = procStatus(pid);
		if (rss > sampled) sampled = rss;
	}, everyMs);
	return {
		before,
		resettable,
		stop() {
			clearInterval(timer);
			const { hwm, rss } = procStatus(pid);
			return resettable && Number.isFinite(hwm) ? Math.max(hwm, sampled) : Math.max(sampled, rss);
		},
	};
}

/** Peak RSS of one process over a piece of work (see watchRss). */
export async function peakRss(pid, work) {
	const watch = watchRss(pid, 50);
	let peak;
	try {
		const value = await work();
		peak = watch.stop();
		return { value, before: watch.before, peak, resettable: watch.resettable };
	} finally {
		if (peak === undefined) watch.stop();
	}
}

/** V8 heap in use of a running n8n, from its Prometheus endpoint (N8N_METRICS=true); NaN if unreadable. */
export async function heapUsed(n8nUrl) {
	try {
		const text = (await call(`${n8nUrl}/metrics`)).text;
		return Number(/^\w*nodejs_heap_size_used_bytes (\S+)$/m.exec(text)?.[1] ?? NaN);
	} catch {
		return NaN;
	}
}

/** Waits (at most `limitMs`) until a process's RSS has stayed within 2 % for three samples 2 s apart. */
export async function settleRss(pid, limitMs = 30_000) {
	const started = Date.now();
	const samples = [procStatus(pid).rss];
	while (Date.now() - started < limitMs) {
		await new Promise((resolve) => setTimeout(resolve, 2000));
		samples.push(procStatus(pid).rss);
		const last = samples.slice(-3);
		if (last.length === 3 && Math.max(...last) <= 1.02 * Math.min(...last)) break;
	}
	return samples.at(-1);
}

export async function waitFor(what, check, timeoutMs = 120_000) {
	const started = Date.now();
	while (!(await check())) {
		if (Date.now() - started > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
		await new Promise((resolve) => setTimeout(resolve, 500));
	}
}

function folderBytes(dir) {
	let total = 0;
	if (!fs.existsSync(dir)) return 0;
	for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
		const full = path.join(dir, entry.name);
		if (entry.isDirectory()) total += folderBytes(full);
		else if (entry.isFile()) total += fs.statSync(full).size;
	}
	return total;
}

/**
 * `parallel` fetches of an image at once, the way a bare client does it: the 302 from the file
 * endpoint, then the signed link. Median of `samples` rounds, after one warm-up round. With c lanes a
 * batch's downloads overlap, and on a machine of few cores c files take longer than one: the ideal
 * at concurrency c is measured at c, not assumed to be one fetch.
 */
export async function bareFetchMs(baseUrl, apiKey, dir, parallel = 1, samples = 5) {
	const get = (url, headers, file) =>
		new Promise((resolve, reject) => {
			http
				.get(url, { headers, agent: false }, (res) => {
					const sink = file ? fs.createWriteStream(file) : null;
					if (sink) res.pipe(sink).on('finish', () => resolve(res)).on('error', reject);
					else res.on('data', () => {}).on('end', () => resolve(res));
					res.on('error', reject);
				})
				.on('error', reject);
		});
	// Piped to disk, as n8n's filesystem binary mode stores them.
	const fetchOne = async (name) => {
		const redirect = await get(`${baseUrl}/api/file/${name}.png`, { authorization: `Bearer ${apiKey}` });
		await get(new URL(redirect.headers.location, baseUrl).href, {}, path.join(dir, name));
	};
	const times = [];
	let cpu;
	for (let round = 0; round < samples + 1; round++) {
		const started = performance.now();
		if (round === 1) cpu = process.cpuUsage();
		await Promise.all(Array.from({ length: parallel }, (_, i) => fetchOne(`bare-fetch-${round}-${i}`)));
		if (round > 0) times.push(performance.now() - started); // the first round warms up
		for (const name of fs.readdirSync(dir)) fs.rmSync(path.join(dir, name));
	}
	const used = process.cpuUsage(cpu);
	times.sort((a, b) => a - b);
	return { ms: times[Math.floor(times.length / 2)], cpuMsPerFile: (used.user + used.system) / 1000 / (samples * parallel) };
}

export const node = (name, type, typeVersion, parameters, extra = {}) => ({
	id: `${name.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`,
	name,
	type,
	typeVersion,
	position: [0, 0],
	parameters,
	...extra,
});

export function workflowOf(id, name, nodes) {
	const positioned = nodes.map((n, index) => ({ ...n, position: [index * 240, 0] }));
	const connections = {};
	for (let i = 0; i < positioned.length - 1; i++) connections[positioned[i].name] = { main: [[{ node: positioned[i + 1].name, type: 'main', index: 0 }]] };
	return { id, name, nodes: positioned, connections, settings: { executionOrder: 'v1' }, active: false };
}

export const GENERATE = { model: 'nano-banana-2', ratio: '1:1', resolution: '2K', n: 1 };

/** The batch as this package does it: Generate with concurrency c and the node's downloads. */
export function imagePackBatch(id, c) {
	return workflowOf(id, `bench: Image Pack Generate, c=${c}`, [
		node('Webhook', 'n8n-nodes-base.webhook', 2, { httpMethod: 'POST', path: id, responseMode: 'lastNode', responseData: 'noData', options: {} }, { webhookId: `${id}-hook` }),
		node('Products', 'n8n-nodes-base.splitOut', 1, { fieldToSplitOut: 'body.items', include: 'noOtherFields', options: {} }),
		node(
			'Generate images',
			IMAGEPACK,
			1,
			{
				resource: 'image',
				operation: 'generate',
				prompt: '={{ $json.prompt }}',
				...GENERATE,
				purpose: 'free',
				options: { concurrency: c, downloadImages: true },
			},
			{ credentials: { imagePackApi: CREDENTIAL } },
		),
	]);
}

/** n8n's own floor for a batch: the same webhook and Split Out, then a No Op: no request, no file. */
export function floorBatch(id) {
	return workflowOf(id, 'bench: n8n floor (no requests)', [
		node('Webhook', 'n8n-nodes-base.webhook', 2, { httpMethod: 'POST', path: id, responseMode: 'lastNode', responseData: 'noData', options: {} }, { webhookId: `${id}-hook` }),
		node('Products', 'n8n-nodes-base.splitOut', 1, { fieldToSplitOut: 'body.items', include: 'noOtherFields', options: {} }),
		node('Nothing', 'n8n-nodes-base.noOp', 1, {}),
	]);
}

/**
 * The same job from n8n's HTTP Request node, set up as a capable user would: a header credential,
 * the JSON body, and its Batching option (c requests per batch, the next batch one generate latency
 * later; HTTP Request does not wait for a batch to finish, it paces). Downloads: a second HTTP
 * Request with Response Format = File (it follows the 302), paced by the measured fetch time.
 */
function httpRequestBatch(id, c, baseUrl, latencyMs, fetchIntervalMs) {
	const auth = { authentication: 'genericCredentialType', genericAuthType: 'httpHeaderAuth' };
	const credentials = { httpHeaderAuth: HEADER_AUTH };
	return workflowOf(id, `bench: HTTP Request, c=${c}`, [
		node('Webhook', 'n8n-nodes-base.webhook', 2, { httpMethod: 'POST', path: id, responseMode: 'lastNode', responseData: 'noData', options: {} }, { webhookId: `${id}-hook` }),
		node('Products', 'n8n-nodes-base.splitOut', 1, { fieldToSplitOut: 'body.items', include: 'noOtherFields', options: {} }),
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
				options: {
					batching: { batch: { batchSize: c, batchInterval: fetchIntervalMs } },
					response: { response: { responseFormat: 'file' } },
					timeout: 300_000,
				},
			},
			{ credentials },
		),
	]);
}

/**
 * The same requests in Generate's order: Loop Over Items hands c items at a time to HTTP Request POST
 * /generate, Split Out images and HTTP Request GET (Response Format File), then loops.
 */
function httpRequestLoop(id, c, baseUrl) {
	const batch = httpRequestBatch(id, c, baseUrl, 0, 0);
	const [webhook, products, generate, images, download] = batch.nodes;
	for (const step of [generate, download]) delete step.parameters.options.batching;
	const loop = node('Loop Over Items', 'n8n-nodes-base.splitInBatches', 3, { batchSize: c, options: {} });
	const done = node('Done', 'n8n-nodes-base.noOp', 1, {});
	const nodes = [webhook, products, loop, generate, images, download, done].map((n, index) => ({ ...n, position: [index * 240, 0] }));
	const to = (name) => [{ node: name, type: 'main', index: 0 }];
	const connections = {
		[webhook.name]: { main: [to(products.name)] },
		[products.name]: { main: [to(loop.name)] },
		// Loop Over Items: output 0 when every batch is done, output 1 for the next batch.
		[loop.name]: { main: [to(done.name), to(generate.name)] },
		[generate.name]: { main: [to(images.name)] },
		[images.name]: { main: [to(download.name)] },
		[download.name]: { main: [to(loop.name)] },
	};
	return { ...batch, name: `bench: HTTP Request in Loop Over Items, c=${c}`, nodes, connections };
}

/** `--n8n-cpu-prof=<dir>`: n8n (and its task runner) write V8 CPU profiles there when they exit; read them with cpu-profile.mjs. */
export function profiling(cpuProfDir) {
	if (!cpuProfDir) return {};
	fs.mkdirSync(cpuProfDir, { recursive: true });
	return { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${path.resolve(cpuProfDir)}` };
}

/** Environments merged, their NODE_OPTIONS joined. */
export function withNodeOptions(...envs) {
	const options = envs.map((e) => e.NODE_OPTIONS).filter(Boolean);
	return Object.assign({}, ...envs, options.length ? { NODE_OPTIONS: options.join(' ') } : {});
}

/**
 * `--n8n-prof=<dir>`: each measured batch run profiled on its own (n8n-profiler.cjs, preloaded into
 * n8n): a CPU profile, sampled allocations (garbage included) and V8's collections by kind.
 * Otherwise (`--n8n-gc-stats=<dir>` keeps its files) only the collections and the process's CPU,
 * without profiling: every batch run goes through it.
 */
export function runProfiler(profDir, gcOnly = false) {
	const dir = path.resolve(profDir);
	fs.mkdirSync(dir, { recursive: true });
	const signal = async (pid, label, marker) => {
		// A marker left by an earlier bench in the same folder would end the wait at once.
		fs.rmSync(path.join(dir, `${label}.${marker}`), { force: true });
		process.kill(pid, 'SIGUSR2');
		await waitFor(`n8n's profiler (${marker})`, () => fs.existsSync(path.join(dir, `${label}.${marker}`)), 60_000);
	};
	return {
		env: {
			BENCH_N8N_PROF_DIR: dir,
			...(gcOnly ? { BENCH_N8N_PROF_GC_ONLY: '1' } : {}),
			NODE_OPTIONS: `--require ${path.join(import.meta.dirname, 'n8n-profiler.cjs')}`,
		},
		/** V8's collections over a run: { 'major (mark-compact)': { count, ms }, … }. */
		gc: (label) => JSON.parse(fs.readFileSync(path.join(dir, `${label}.json`), 'utf8')).gc,
		/** Everything the profiler wrote for a run or a command (its <label>.json). */
		stats: (label) => JSON.parse(fs.readFileSync(path.join(dir, `${label}.json`), 'utf8')),
		/**
		 * From the next run on, n8n's deduplication store answers in place (every value new; a count of
		 * the row answers `count`) or not.
		 */
		storeOff(off, count = 0) {
			const flag = path.join(dir, 'store-off');
			if (off) fs.writeFileSync(flag, String(count));
			else fs.rmSync(flag, { force: true });
		},
		/** Runs a command of the profiler inside n8n (n8n-profiler.cjs, `command.json`). */
		async command(pid, label, order) {
			fs.rmSync(path.join(dir, `${label}.done`), { force: true });
			fs.writeFileSync(path.join(dir, 'command.json'), JSON.stringify({ ...order, label }));
			process.kill(pid, 'SIGUSR2');
			await waitFor(
				`n8n's profiler (${label})`,
				() => fs.existsSync(path.join(dir, `${label}.done`)),
				300_000,
			);
			return JSON.parse(fs.readFileSync(path.join(dir, `${label}.json`), 'utf8'));
		},
		async around(label, pid, work) {
			fs.writeFileSync(path.join(dir, 'next-label'), label);
			await signal(pid, label, 'started');
			try {
				return await work();
			} finally {
				await signal(pid, label, 'done');
			}
		},
	};
}

const APPROACHES = [
	{ key: 'imagepack', label: 'Image Pack node', workflow: (c) => `benchImagePackC${c}` },
	{ key: 'http', label: 'HTTP Request node', workflow: (c) => `benchHttpRequestC${c}` },
	// n8n's own nodes in Generate's order: each batch of c items generated, then downloaded, then the
	// next (Loop Over Items). n8n runs a node over all its items before the next node, so the plain
	// HTTP Request build stores its files back to back at the end; this one stores them spread out, one
	// batch per generate latency, as Generate does: n8n's cost per item in that order.
	{ key: 'loop', label: 'HTTP Request node in Loop Over Items', workflow: (c) => `benchHttpLoopC${c}`, floor: true },
];

/** BENCH_N8N_ONLY=imagepack,http: only these approaches (all when unset). */
const wantedApproach = (key) => !process.env.BENCH_N8N_ONLY || process.env.BENCH_N8N_ONLY.split(',').includes(key);

/** The 1-minute load average, to print beside a CPU figure taken on a shared machine. */
export const loadAverage = () => os.loadavg()[0];

/**
 * Scheduled batch in a running n8n: N items × concurrency c × both approaches, interleaved so that
 * the machine's load falls on both alike.
 */
export async function benchN8nBatch(env, { endpoints, storage, sizes, concurrencies, latencyMs, imageBytes, cpuProfDir, profDir, gcStatsDir, runs = 3 }) {
	const log = env.log;
	// Always preloaded: every run starts from a collected heap and counts V8's collections.
	const profiler = runProfiler(profDir ?? gcStatsDir ?? fs.mkdtempSync(path.join(storage, 'gc-')), !profDir);
	const baseUrl = endpoints.realisticBaseUrl;
	const fetchMs = {};
	const bareCpuMs = {};
	const bareDir = fs.mkdtempSync(path.join(storage, 'bare-'));
	for (const c of concurrencies) {
		const bare = await bareFetchMs(baseUrl, endpoints.apiKey, bareDir, c);
		fetchMs[c] = bare.ms;
		bareCpuMs[c] = bare.cpuMsPerFile;
		log(`n8n batch: a bare client's fetch of ${c} × ${(imageBytes / 2 ** 20).toFixed(0)} MiB images at once (302 + signed link) ${fetchMs[c].toFixed(1)} ms`);
	}

	log('n8n batch: build + pack, user folder, credentials, workflows');
	const tarball = await packPackage();
	const user = await createUserFolder({ tarball, dir: fs.mkdtempSync(path.join(storage, 'n8n-user-')) });
	fs.rmSync(path.dirname(tarball), { recursive: true, force: true });
	await importCredential(user.dir, [
		{ ...CREDENTIAL, type: 'imagePackApi', data: { baseUrl, apiKey: endpoints.apiKey } },
		{ ...HEADER_AUTH, type: 'httpHeaderAuth', data: { name: 'Authorization', value: `Bearer ${endpoints.apiKey}` } },
	]);
	const FLOOR = 'benchFloor';
	const workflows = [floorBatch(FLOOR)];
	for (const c of concurrencies) {
		workflows.push(
			imagePackBatch(`benchImagePackC${c}`, c),
			httpRequestBatch(`benchHttpRequestC${c}`, c, baseUrl, latencyMs, Math.max(1, Math.ceil(fetchMs[c]))),
			httpRequestLoop(`benchHttpLoopC${c}`, c, baseUrl),
		);
	}
	await importWorkflow(user.dir, workflows);
	for (const workflow of workflows) await publishWorkflow(user.dir, workflow.id);

	const n8n = await startN8n({
		userFolder: user.dir,
		echo: Boolean(process.env.BENCH_N8N_ECHO),
		// N8N_METRICS: the V8 heap in use after each run (RSS also counts garbage not yet collected).
		env: { N8N_DEFAULT_BINARY_DATA_MODE: 'filesystem', N8N_METRICS: 'true', N8N_LOG_LEVEL: process.env.BENCH_N8N_ECHO ? 'debug' : 'warn', ...withNodeOptions(profiling(cpuProfDir), profiler.env) },
	});
	const pid = n8n.process.pid;
	const binaryDir = path.join(user.n8nDir, 'storage');
	const results = [];
	const floors = {}; // N → ms
	try {
		// n8n activates published workflows after it reports ready: wait for every webhook.
		await waitFor('the bench webhooks to be registered', async () => {
			const rows = await querySqlite(user.dir, 'SELECT webhookPath FROM webhook_entity');
			return workflows.every((workflow) => rows.some((row) => row.webhookPath === workflow.id));
		});
		// A warm-up batch per workflow (no latency): n8n loads node types and compiles on first use, and
		// the memory of its start is released only once it has run for a while; then RSS must settle.
		const products = (count) => Array.from({ length: count }, (_, i) => ({ prompt: `Product ${i + 1}: a ceramic mug on an oak table, e-commerce photo` }));
		for (const workflow of workflows) {
			const answer = await call(`${n8n.url}/webhook/${workflow.id}`, { method: 'POST', body: { items: products(Math.min(20, sizes[0])) } });
			if (answer.status !== 200) throw new Error(`warm-up of ${workflow.name}: HTTP ${answer.status} ${answer.text.slice(0, 500)}`);
		}
		const settled = await settleRss(pid);
		log(`n8n batch: after the warm-ups RSS ${(settled / 2 ** 20).toFixed(0)} MiB`);
		await env.control.setLatency('generate', latencyMs);
		for (const count of sizes) {
			const items = products(count);
			const floorRuns = [];
			for (let run = 0; run < 3; run++) {
				const floorStarted = performance.now();
				await call(`${n8n.url}/webhook/${FLOOR}`, { method: 'POST', body: { items } });
				floorRuns.push(performance.now() - floorStarted);
			}
			floors[count] = floorRuns.sort((a, b) => a - b)[1]; // the median of three
			log(`n8n batch: N=${count}, n8n's floor (webhook → Split Out → No Op) ${floors[count].toFixed(0)} ms`);
			for (const c of concurrencies) {
				for (let round = 0; round < roundsFor(count, runs); round++) {
					// The builds take turns going first; n8n's own nodes in Loop Over Items (a reference) run once.
					const wanted = APPROACHES.filter((a) => wantedApproach(a.key) && (round === 0 || !a.floor));
					for (const approach of [...wanted.slice(round % wanted.length), ...wanted.slice(0, round % wanted.length)]) {
						const id = approach.workflow(c);
						log(`n8n batch: N=${count}, c=${c}, ${approach.label}, run ${round + 1}`);
						fs.rmSync(binaryDir, { recursive: true, force: true });
						await env.control.clearRequests();
						await hostStats(baseUrl, true);
						const startedAt = Date.now();
						const loadBefore = loadAverage();
						const label = `${approach.key}-n${count}-c${c}-run${round + 1}`;
						const { response, peak, before, wallMs, cpuMs, threads } = await profiler.around(label, pid, async () => {
							const cpuBefore = treeCpuMs(pid);
							const threadsBefore = threadCpuMs(pid);
							const started = performance.now();
							const run = await peakRss(pid, () => call(`${n8n.url}/webhook/${id}`, { method: 'POST', body: { items } }));
							const threadsAfter = threadCpuMs(pid);
							const threads = Object.fromEntries(Object.entries(threadsAfter).map(([kind, ms]) => [kind, ms - threadsBefore[kind]]));
							return { ...run, response: run.value, wallMs: performance.now() - started, cpuMs: treeCpuMs(pid) - cpuBefore, threads };
						});
						const load = [loadBefore, loadAverage()];
						const gc = profiler.gc(label);
						// What the run left behind: RSS once it stops changing, and the heap in use then.
						const settled = await settleRss(pid);
						const heapAfter = await heapUsed(n8n.url);
						const host = await hostStats(baseUrl);
						const generateLog = await env.control.requests({ route: 'generate' });
						const generates = generateLog.length;
						if (process.env.BENCH_N8N_TIMELINE) {
							// When each generation reached the emulator, in ms after the webhook call: gaps between rounds show where the time goes.
							const offsets = generateLog.map((r) => r.at - startedAt).sort((a, b) => a - b);
							log(`  generations arrived at +${offsets.join(', +')} ms; the webhook answered at +${Math.round(wallMs)} ms`);
						}
						const binaryBytes = folderBytes(binaryDir);
						const result = { approach: approach.key, count, c, wallMs, cpuMs, threads, load, gc, peak, before, settled, heapAfter, host, generates, binaryBytes, status: response.status };
						if (response.status !== 200 || generates !== count || host.signedFile !== count) {
							result.problem = `HTTP ${response.status}, ${generates} generates and ${host.signedFile} signed-link downloads for ${count} items ${response.text.slice(0, 300)}`;
							log(`n8n batch: ${result.problem}`);
						}
						log(
							`  wall ${(wallMs / 1000).toFixed(1)} s, CPU ${(cpuMs / count).toFixed(1)} ms per item (${threadsPerItem(threads, count)}; load average ${load.map((l) => l.toFixed(1)).join(' → ')}), peak RSS ${(peak / 2 ** 20).toFixed(0)} MiB (before ${(before / 2 ** 20).toFixed(0)}, settled after ${(settled / 2 ** 20).toFixed(0)}), ` +
								`heap in use after ${(heapAfter / 2 ** 20).toFixed(0)} MiB, ` +
								`${host.requests} requests on ${host.connections} connections, ${(binaryBytes / 2 ** 20).toFixed(0)} MiB binary data` +
								`; V8 collections: ${Object.entries(gc).map(([kind, { count: n, ms }]) => `${n} ${kind} (${ms.toFixed(0)} ms)`).join(', ')}`,
						);
						results.push(result);
					}
				}
			}
		}
	} finally {
		await env.control.setLatency('generate', 0);
		await n8n.stop();
		user.cleanup();
	}
	return batchFigures(medianOfRuns(results), { sizes, concurrencies, latencyMs, fetchMs, bareCpuMs, imageBytes, floors, runs });
}

/** n8n's CPU per item by thread (the task runner is the rest of the total). */
export const threadsPerItem = (threads, count) =>
	`JavaScript thread ${(threads.main / count).toFixed(1)}, V8 workers ${(threads.v8 / count).toFixed(1)}, libuv workers ${(threads.libuv / count).toFixed(1)}, other ${(threads.other / count).toFixed(1)}`;

/**
 * How many times a cell (build, N, c) runs: until it has measured ~1,000 items, at most `runs`
 * (`--n8n-runs`, default 3): one run of a small batch moves by a collection more or less (a full
 * collection of n8n's heap is 200-300 ms: 10-15 ms per item at N = 20).
 */
export const roundsFor = (count, runs) => Math.max(1, Math.min(runs, Math.ceil(1000 / count)));

export const median = (values) => {
	const sorted = [...values].sort((a, b) => a - b);
	const middle = sorted.length >> 1;
	return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};

/** One record per build, N and c: the median of its runs, the spread of its CPU, V8's mark-compacts per item over all of them. */
function medianOfRuns(results) {
	const cells = new Map();
	for (const r of results) {
		const key = `${r.approach} ${r.count} ${r.c}`;
		cells.set(key, [...(cells.get(key) ?? []), r]);
	}
	return [...cells.values()].map((runs) => {
		const byCpu = [...runs].sort((a, b) => a.cpuMs - b.cpuMs);
		const items = runs.length * runs[0].count;
		const majors = runs.reduce((sum, r) => sum + (r.gc['major (mark-compact)']?.count ?? 0), 0);
		return {
			...byCpu[(byCpu.length - 1) >> 1],
			runs: runs.length,
			cpuMs: median(runs.map((r) => r.cpuMs)),
			cpuRange: [byCpu[0].cpuMs, byCpu.at(-1).cpuMs],
			threads: Object.fromEntries(Object.keys(runs[0].threads).map((kind) => [kind, median(runs.map((r) => r.threads[kind]))])),
			wallMs: median(runs.map((r) => r.wallMs)),
			peak: median(runs.map((r) => r.peak)),
			heapAfter: median(runs.map((r) => r.heapAfter)),
			majorsPerItem: majors / items,
			load: [Math.min(...runs.flatMap((r) => r.load)), Math.max(...runs.flatMap((r) => r.load))],
			problem: runs.map((r) => r.problem).filter(Boolean).join('; ') || undefined,
		};
	});
}

function batchFigures(results, { sizes, concurrencies, latencyMs, fetchMs, bareCpuMs, imageBytes, floors, runs }) {
	const figures = [];
	const mib = (imageBytes / 2 ** 20).toFixed(0);
	const group = `N8N-1. Scheduled batch in a real n8n 2.41.1 (one process, filesystem binary data): Generate + download ${mib} MiB images, generate latency ${latencyMs} ms`;
	const note =
		"Batch in n8n: ideal = n8n's floor for N items (the same webhook and Split Out into a No Op, measured in the same run) + " +
		`ceil(N / c) × (generate latency + a bare client's 302 + signed-link fetch of c ${mib} MiB images at once, piped to disk: ${concurrencies.map((c) => `${fetchMs[c].toFixed(1)} ms at c = ${c}`).join(', ')}). ` +
		'HTTP Request = Split Out → HTTP Request POST /generate (Batching: c per batch, interval = the generate latency) → Split Out images → HTTP Request GET (Response Format File, Batching c per batch). ' +
		"Loop Over Items = n8n's own nodes in Generate's order: Loop Over Items (c per batch) → HTTP Request POST /generate → Split Out images → HTTP Request GET (File) → loop; each batch's files are stored before the next batch is generated. " +
		'CPU = user + system time of the n8n process and its task runner over the run; load = the lowest and highest 1-minute load average at the start and end of its runs (a shared machine inflates CPU time). ' +
		`Each build runs each N and c until it has measured ~1,000 items, at most ${runs} times (--n8n-runs), taking turns going first; figures are the medians of those runs, and every run starts after a full collection of n8n's heap. ` +
		'Peak RSS = the n8n process\'s kernel high-water mark over the run (reset before it). Requests and TCP connections are counted at the file host in front of the emulator.';
	const find = (approach, count, c) => results.find((r) => r.approach === approach && r.count === count && r.c === c);
	for (const count of sizes) {
		figures.push(figure({ group, figure: `N=${count}: n8n's floor (webhook → Split Out → No Op, no request)`, measured: floors[count], ideal: null, unit: 'ms', target: '—', note }));
	}
	for (const c of concurrencies) {
		for (const count of sizes) {
			const ideal = floors[count] + Math.ceil(count / c) * (latencyMs + fetchMs[c]);
			for (const { key, label, floor } of APPROACHES) {
				const r = find(key, count, c);
				if (!r) continue;
				const broken = r.problem ? ` — FAILED: ${r.problem}` : '';
				const target = floor ? { target: '—' } : { maxRatio: 1.1 };
				figures.push(figure({ group, figure: `N=${count}, c=${c}, ${label}: wall time${broken}`, measured: r.wallMs, ideal, unit: 'ms', ...target, note }));
			}
		}
	}
	// n8n's CPU per item, both builds side by side (and n8n's own nodes in Generate's order), with the load.
	const perItem = (ms, r) => (ms / r.count).toFixed(0);
	const cpuOf = (r) =>
		`${perItem(r.cpuMs, r)} ms (${r.runs > 1 ? `median of ${r.runs} runs, ${perItem(r.cpuRange[0], r)}–${perItem(r.cpuRange[1], r)}; ` : ''}load ${r.load.map((l) => l.toFixed(1)).join('–')})`;
	for (const c of concurrencies) {
		for (const count of sizes) {
			const [own, http, loop] = ['imagepack', 'http', 'loop'].map((key) => find(key, count, c));
			if (!own) continue;
			if (http) {
				figures.push(
					figure({
						group,
						figure: `N=${count}, c=${c}: CPU of n8n per item, Image Pack ${cpuOf(own)} vs HTTP Request build ${cpuOf(http)}`,
						measured: own.cpuMs / count,
						ideal: http.cpuMs / count,
						unit: 'ms',
						maxRatio: 1,
						target: '≤ HTTP Request build',
					}),
				);
			}
			if (http) {
				figures.push(
					figure({
						group,
						figure: `N=${count}, c=${c}: V8 mark-compact collections of n8n's heap per item, Image Pack vs HTTP Request build${loop ? ` (Loop Over Items: ${loop.majorsPerItem.toFixed(2)})` : ''}`,
						measured: own.majorsPerItem,
						ideal: http.majorsPerItem,
						unit: '',
						target: '—',
					}),
				);
			}
			if (http) {
				figures.push(
					figure({
						group,
						figure: `N=${count}, c=${c}: n8n's CPU per item by thread (medians), Image Pack ${threadsPerItem(own.threads, count)} vs HTTP Request build ${threadsPerItem(http.threads, count)} ms; Image Pack's JavaScript thread vs the HTTP Request build's`,
						measured: own.threads.main / count,
						ideal: http.threads.main / count,
						unit: 'ms',
						target: '—',
					}),
				);
			}
			if (loop) {
				figures.push(
					figure({
						group,
						figure: `N=${count}, c=${c}: CPU of n8n per item, Image Pack vs n8n's own nodes in Generate's order (Loop Over Items) ${cpuOf(loop)}`,
						measured: own.cpuMs / count,
						ideal: loop.cpuMs / count,
						unit: 'ms',
						target: '—',
					}),
				);
			}
		}
	}
	for (const { key, label, floor } of APPROACHES) {
		for (const c of concurrencies) {
			const series = sizes.map((count) => find(key, count, c)).filter(Boolean);
			if (!series.length || floor) continue;
			const first = series[0];
			const last = series.at(-1);
			figures.push(
				figure({
					group,
					figure: `${label}, c=${c}: peak RSS at N=${series.map((r) => r.count).join(' / ')} (${series.map((r) => `${(r.peak / 2 ** 20).toFixed(0)}`).join(' / ')} MiB), N=${last.count} vs N=${first.count}`,
					measured: last.peak,
					ideal: first.peak,
					unit: 'bytes',
					maxRatio: 1.1,
					target: 'flat in N (≤ 1.1)',
				}),
				figure({
					group,
					figure: `${label}, c=${c}: V8 heap in use once the run is over, N=${series.map((r) => r.count).join(' / ')} (${series.map((r) => `${(r.heapAfter / 2 ** 20).toFixed(0)}`).join(' / ')} MiB), N=${last.count} vs N=${first.count}`,
					measured: last.heapAfter,
					ideal: first.heapAfter,
					unit: 'bytes',
					maxRatio: 1.1,
					target: 'flat in N (≤ 1.1)',
				}),
			);
			figures.push(
				figure({
					group,
					figure: `${label}, c=${c}, N=${last.count}: requests (generate + file + signed link)`,
					measured: last.host.requests,
					ideal: last.count * 3,
					unit: '',
					maxRatio: 1,
					target: 'no extra calls',
					note: undefined,
				}),
				figure({
					group,
					figure: `${label}, c=${c}, N=${last.count}: CPU of n8n per item (generate + download + store; ideal: a bare client's download, Node ${process.versions.node})`,
					measured: last.cpuMs / last.count,
					ideal: bareCpuMs[c],
					unit: 'ms',
					target: '—',
				}),
				figure({
					group,
					figure: `${label}, c=${c}, N=${last.count}: TCP connections per request`,
					measured: last.host.connections / Math.max(1, last.host.requests),
					ideal: null,
					unit: '',
					target: '—',
				}),
				figure({
					group,
					figure: `${label}, c=${c}, N=${last.count}: binary data written`,
					measured: last.binaryBytes,
					ideal: last.count * imageBytes,
					unit: 'bytes',
					target: '—',
				}),
			);
		}
	}
	return figures;
}

/**
 * Everything `--n8n` measures. Options: quick (N = 20, 100), sizes / latencyMs overrides
 * (`--n8n-sizes=20,100`, `--n8n-latency=500`).
 */
export async function benchN8n(
	env,
	{
		endpoints,
		storage,
		quick,
		imageBytes,
		sizes,
		concurrencies,
		latencyMs,
		backlog,
		triggerTimeoutMs,
		parts = ['batch', 'trigger', 'drain'],
		cpuProfDir,
		profDir,
		gcStatsDir,
		runs,
		drain = {},
		durable = {},
		credentials = {},
		nightly = {},
	},
) {
	const figures = [];
	if (parts.includes('nightly')) {
		const { benchN8nNightly } = await import('./nightly.bench.mjs');
		// One n8n start per heap setting (0: V8's default).
		for (const heapMiB of nightly.heaps ?? [0]) {
			figures.push(
				...(await benchN8nNightly(env, {
					endpoints,
					storage,
					sizes: sizes ?? (quick ? [200] : [1_000]),
					concurrency: concurrencies?.[0] ?? 8,
					batch: nightly.batch ?? 50,
					latencyMs: latencyMs ?? 300,
					builds: nightly.builds ?? ['imagepack', 'http'],
					progress: nightly.progress ?? [false, true],
					heapMiB,
					runs: runs ?? 1,
					gcStatsDir,
					profDir,
					report: nightly.report,
					split: nightly.split ?? 1,
					semiSpaceMiB: nightly.semiSpace ?? 0,
				})),
			);
		}
	}
	if (parts.includes('credentials')) {
		const { benchN8nCredentials } = await import('./credentials.bench.mjs');
		figures.push(
			...(await benchN8nCredentials(env, {
				endpoints,
				storage,
				sizes: sizes ?? [200],
				concurrencies: concurrencies ?? [1, 8],
				latencyMs: latencyMs ?? 100,
				runs: runs ?? (quick ? 1 : 3),
				sessions: credentials.sessions ?? (quick ? 2 : 4),
				base: credentials.base ?? '4b01bcc',
				beforeTarball: credentials.before,
				nowTarball: credentials.now,
				downloads: credentials.downloads ?? false,
				gcStatsDir,
			})),
		);
	}
	if (parts.includes('durable')) {
		const { benchN8nDurable } = await import('./durable.bench.mjs');
		figures.push(
			...(await benchN8nDurable(env, {
				endpoints,
				storage,
				imageBytes,
				sizes: sizes ?? [20, 100],
				concurrencies: concurrencies ?? [1, 8],
				latencyMs: latencyMs ?? 500,
				gcStatsDir,
				runs: runs ?? (quick ? 1 : 3),
				sessions: durable.sessions ?? (quick ? 1 : 2),
				base: durable.base ?? '8a9ff14',
				builds: durable.builds ?? ['with', 'without'],
				rawCalls: durable.rawCalls ?? 100,
				rawFills: durable.rawFills ?? [0, 1_000, 10_000],
				states: durable.states ?? ['bound', 'empty', 'off'],
				downloads: durable.downloads ?? true,
			})),
		);
	}
	if (parts.includes('drain')) {
		const { benchN8nDrain } = await import('./drain.bench.mjs');
		figures.push(
			...(await benchN8nDrain(env, {
				endpoints,
				storage,
				backlogs: drain.backlogs ?? (quick ? [1_000, 10_000] : [1_000, 10_000, 100_000]),
				caps: drain.caps ?? [100, 1_000],
				images: drain.images ?? [12, 40],
				heapMiB: drain.heapMiB ?? 320,
				userBacklogs: drain.userBacklogs ?? (quick ? [1_000] : [1_000, 10_000]),
				pollSeconds: drain.pollSeconds,
				timeoutMs: triggerTimeoutMs ?? 40 * 60_000,
				cpuProfDir,
			})),
		);
	}
	if (parts.includes('trigger')) {
		figures.push(
			...(await benchN8nTrigger(env, { endpoints, storage, backlog: backlog ?? (quick ? 2_000 : 10_000), timeoutMs: triggerTimeoutMs ?? 30 * 60_000, cpuProfDir })),
		);
	}
	if (parts.includes('batch')) figures.push(
		...(await benchN8nBatch(env, {
			endpoints,
			storage,
			imageBytes,
			sizes: sizes ?? (quick ? [20, 100] : [20, 100, 500]),
			concurrencies: concurrencies ?? [1, 8],
			latencyMs: latencyMs ?? 500,
			cpuProfDir,
			profDir,
			gcStatsDir,
			runs: runs ?? (quick ? 1 : 3),
		})),
	);
	return figures;
}

/** CPU time (user + system) of a process and its descendants (n8n's task runner), in ms. */
export function treeCpuMs(rootPid) {
	const stats = [];
	for (const entry of fs.readdirSync('/proc')) {
		if (!/^\d+$/.test(entry)) continue;
		try {
			const { fields, cpuMs } = procStat(`/proc/${entry}/stat`);
			stats.push({ pid: Number(entry), ppid: Number(fields[1]), cpuMs });
		} catch {}
	}
	const tree = new Set([rootPid]);
	for (let grew = true; grew; ) {
		grew = false;
		for (const s of stats) if (!tree.has(s.pid) && tree.has(s.ppid)) grew = tree.add(s.pid) && true;
	}
	return stats.filter((s) => tree.has(s.pid)).reduce((sum, s) => sum + s.cpuMs, 0);
}

/** A /proc/<pid>[/task/<tid>]/stat: its name, the fields after it, and its user + system CPU in ms. */
function procStat(file) {
	const text = fs.readFileSync(file, 'utf8');
	const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
	const name = text.slice(text.indexOf('(') + 1, text.lastIndexOf(')'));
	return { name, fields, cpuMs: (Number(fields[11]) + Number(fields[12])) * 10 }; // USER_HZ = 100
}

/**
 * CPU time (user + system, ms) of one process by kind of thread, from /proc/<pid>/task/*: n8n's
 * JavaScript thread, V8's workers (concurrent marking and sweeping of the garbage collector, the
 * compiler), libuv's workers (file writes). Node 24 names them MainThread, V8Worker, libuv-worker.
 */
export function threadCpuMs(pid) {
	const kinds = { main: 0, v8: 0, libuv: 0, other: 0 };
	for (const task of fs.readdirSync(`/proc/${pid}/task`)) {
		try {
			const { name, cpuMs } = procStat(`/proc/${pid}/task/${task}/stat`);
			const kind = Number(task) === pid ? 'main' : name.startsWith('V8') ? 'v8' : name.startsWith('libuv') ? 'libuv' : 'other';
			kinds[kind] += cpuMs;
		} catch {}
	}
	return kinds;
}

const TRIGGER_PAGE = 200;
/** The user's Schedule Trigger runs every 15 s. */
export const USER_INTERVAL_S = 15;

/** Poll Times firing every `gapSeconds` s (n8n refuses one cron more often than a minute, but takes several fixed seconds). */
export function everySeconds(gapSeconds) {
	const times = Array.from({ length: Math.ceil(60 / gapSeconds) }, (_, i) => i * gapSeconds);
	return { item: times.map((second) => ({ mode: 'custom', cronExpression: `${second} * * * * *` })) };
}

/**
 * The package's trigger alone (Start From: Beginning, Include Manifest): polls every `pollSeconds`
 * (every second: the most n8n accepts), `maxPerPoll` per poll (the node's default when undefined).
 */
export function imagePackTriggerWorkflow(id, { pollSeconds = 1, maxPerPoll } = {}) {
	const parameters = { pollTimes: everySeconds(pollSeconds), includeManifest: true, startFrom: 'beginning' };
	if (maxPerPoll !== undefined) parameters.maxPerPoll = maxPerPoll;
	return workflowOf(id, `bench: Image Pack Trigger (beginning, manifests, ${maxPerPoll ?? 'default'} per poll, every ${pollSeconds} s)`, [
		node('Image Pack Trigger', IMAGEPACK_TRIGGER, 1, parameters, { credentials: { imagePackApi: CREDENTIAL } }),
	]);
}

/**
 * What a careful user builds instead, following the API's incremental pulling contract: every 15 s a
 * Code node turns the saved cursor into since_id (minus reread_overlap), HTTP Request reads the pages
 * (its Pagination option: since_id = next_since_id until a short page), a Code node drops keys seen
 * before (pack_id:version, kept in the workflow's static data) and moves the cursor, HTTP Request reads
 * each new record's detail (manifest), 4 per batch.
 */
export function userPollWorkflow(id, baseUrl) {
	const auth = { authentication: 'genericCredentialType', genericAuthType: 'httpHeaderAuth' };
	const credentials = { httpHeaderAuth: HEADER_AUTH };
	const cursorCode = [
		"const state = $getWorkflowStaticData('global');",
		'return [{ json: { since_id: Math.max(0, (state.next ?? 0) - (state.overlap ?? 50)) } }];',
	].join('\n');
	const dedupeCode = [
		"const state = $getWorkflowStaticData('global');",
		'const seen = new Set(state.seen ?? []);',
		'let next = state.next ?? 0;',
		'let overlap = state.overlap ?? 50;',
		'const fresh = [];',
		'for (const page of $input.all()) {',
		'  for (const record of page.json.items ?? []) {',
		'    const key = `${record.pack_id}:${record.version}`;',
		'    if (seen.has(key)) continue;',
		'    seen.add(key);',
		'    fresh.push({ json: record });',
		'  }',
		'  next = Math.max(next, page.json.next_since_id ?? 0);',
		'  overlap = page.json.reread_overlap ?? overlap;',
		'}',
		'state.seen = [...seen];',
		'state.next = next;',
		'state.overlap = overlap;',
		'return fresh;',
	].join('\n');
	return workflowOf(id, 'bench: Schedule + HTTP Request + Code (poll and dedupe)', [
		node('Every 15 seconds', 'n8n-nodes-base.scheduleTrigger', 1.2, { rule: { interval: [{ field: 'seconds', secondsInterval: USER_INTERVAL_S }] } }),
		node('Cursor', 'n8n-nodes-base.code', 2, { jsCode: cursorCode }),
		node(
			'List publications',
			'n8n-nodes-base.httpRequest',
			4.2,
			{
				method: 'GET',
				url: `${baseUrl}/api/v1/image-pack-publications`,
				...auth,
				sendQuery: true,
				queryParameters: {
					parameters: [
						{ name: 'since_id', value: '={{ $json.since_id }}' },
						{ name: 'limit', value: String(TRIGGER_PAGE) },
					],
				},
				options: {
					pagination: {
						pagination: {
							paginationMode: 'updateAParameterInEachRequest',
							parameters: { parameters: [{ type: 'qs', name: 'since_id', value: '={{ $response.body.next_since_id }}' }] },
							paginationCompleteWhen: 'other',
							completeExpression: `={{ $response.body.items.length < ${TRIGGER_PAGE} }}`,
						},
					},
				},
			},
			{ credentials },
		),
		node('New records only', 'n8n-nodes-base.code', 2, { jsCode: dedupeCode }),
		node(
			'Get publication',
			'n8n-nodes-base.httpRequest',
			4.2,
			{
				method: 'GET',
				url: `={{ '${baseUrl}/api/v1/image-pack-publications/' + $json.id }}`,
				...auth,
				options: { batching: { batch: { batchSize: 4, batchInterval: 10 } } },
			},
			{ credentials },
		),
	]);
}

/** A bare client's catch-up on the same host: list pages in sequence, details 4 at a time (keep-alive). */
async function bareCatchUpMs(baseUrl, apiKey, firstId, count) {
	const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
	const get = (url) =>
		new Promise((resolve, reject) => {
			http
				.get(url, { agent, headers: { authorization: `Bearer ${apiKey}`, accept: 'application/json' } }, (res) => {
					const chunks = [];
					res.on('data', (c) => chunks.push(c));
					res.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString('utf8'))));
					res.on('error', reject);
				})
				.on('error', reject);
		});
	const started = performance.now();
	const ids = [];
	for (let since = firstId - 1; ; ) {
		const page = await get(`${baseUrl}/api/v1/image-pack-publications?since_id=${since}&limit=${TRIGGER_PAGE}`);
		ids.push(...page.items.map((r) => r.id));
		since = page.next_since_id;
		if (page.items.length < TRIGGER_PAGE) break;
	}
	let next = 0;
	await Promise.all(
		Array.from({ length: 4 }, async () => {
			while (next < ids.length) await get(`${baseUrl}/api/v1/image-pack-publications/${ids[next++]}`);
		}),
	);
	agent.destroy();
	if (ids.length < count) throw new Error(`bare catch-up read ${ids.length} of ${count}`);
	return performance.now() - started;
}

/**
 * Trigger in a running n8n: a backlog of `backlog` publications plus three injected records — one
 * committed late (its id allocated before the last page is read, committed after), one ordinary, one
 * repeating an existing (pack_id, version) — drained by each approach in its own n8n start.
 */
export async function benchN8nTrigger(env, { endpoints, storage, backlog, timeoutMs, cpuProfDir }) {
	const log = env.log;
	const baseUrl = endpoints.realisticBaseUrl;
	const approaches = [
		{ key: 'trigger', label: 'Image Pack Trigger', workflow: imagePackTriggerWorkflow('benchImagePackTrigger'), intervalS: 1 },
		{ key: 'user', label: 'Schedule + HTTP Request + Code', workflow: userPollWorkflow('benchUserPoll', baseUrl), intervalS: USER_INTERVAL_S },
	];
	const tarball = await packPackage();
	const results = [];
	for (const approach of approaches.filter((a) => !process.env.BENCH_N8N_ONLY || a.key === process.env.BENCH_N8N_ONLY)) {
		log(`n8n trigger: ${approach.label}, backlog ${backlog}`);
		await env.control.reset();
		const { firstId } = await env.control.publishBulk({ count: backlog });
		const late = await env.control.publish({ commit: false });
		const plain = await env.control.publish();
		const original = await env.control.publish();
		const repeat = await env.control.repeatPublication(original.id);
		const expected = new Map(); // id → key, every publication that must be emitted once
		const user = await createUserFolder({ tarball, dir: fs.mkdtempSync(path.join(storage, 'n8n-trigger-')) });
		try {
			await importCredential(user.dir, [
				{ ...CREDENTIAL, type: 'imagePackApi', data: { baseUrl, apiKey: endpoints.apiKey } },
				{ ...HEADER_AUTH, type: 'httpHeaderAuth', data: { name: 'Authorization', value: `Bearer ${endpoints.apiKey}` } },
			]);
			await importWorkflow(user.dir, approach.workflow);
			await publishWorkflow(user.dir, approach.workflow.id);
			await env.control.clearRequests();
			await hostStats(baseUrl, true);
			const n8n = await startN8n({
				userFolder: user.dir,
				echo: Boolean(process.env.BENCH_N8N_ECHO),
				env: { N8N_LOG_LEVEL: process.env.BENCH_N8N_ECHO ? 'debug' : 'warn', ...profiling(cpuProfDir) },
			});
			const pid = n8n.process.pid;
			const cpuBefore = treeCpuMs(pid);
			let peak = procStatus(pid).rss;
			const sampler = setInterval(() => (peak = Math.max(peak, procStatus(pid).rss)), 200);
			let committedLate = false;
			let lastChange = Date.now();
			let lastProgress = -1;
			const started = Date.now();
			try {
				for (;;) {
					await new Promise((resolve) => setTimeout(resolve, 2000));
					const lists = await env.control.requests({ route: 'listPublications' });
					// Commit the late record once the page holding its id has been answered (without it): a client
					// that does not re-read the overlap misses it.
					if (!committedLate && lists.some((r) => r.status === 200 && Number(r.query.since_id) >= late.id - TRIGGER_PAGE)) {
						await env.control.commitPublication(late.id);
						committedLate = true;
						log(`n8n trigger: committed the late publication ${late.id}`);
					}
					// Settled: no new detail request for three poll intervals (the user's workflow runs every 15 s
					// whether or not there is anything new, so executions are no sign of progress).
					const progress = (await hostStats(baseUrl)).details;
					if (progress !== lastProgress) lastChange = Date.now();
					lastProgress = progress;
					if (committedLate && progress > 0 && Date.now() - lastChange > 50_000) break;
					if (Date.now() - started > timeoutMs) {
						log(`n8n trigger: ${approach.label} did not settle within ${timeoutMs / 1000} s`);
						break;
					}
				}
			} finally {
				clearInterval(sampler);
			}
			const cpuMs = treeCpuMs(pid) - cpuBefore;
			const host = await hostStats(baseUrl);
			const listLog = await env.control.requests({ route: 'listPublications' });
			const detailLog = await env.control.requests({ route: 'getPublication' });
			const lists = listLog.length;
			const detailRequests = detailLog.length;
			// The catch-up: from the first request to the last detail read. Every poll in it ends on a short page.
			// (reduce, not Math.min(...): a run of the user's workflow logs over 100,000 requests)
			const firstAt = listLog.reduce((min, r) => Math.min(min, r.at), Infinity);
			const catchUpEnd = detailLog.reduce((max, r) => Math.max(max, r.at), firstAt);
			const catchUpLists = listLog.filter((r) => r.at <= catchUpEnd).length;
			const catchUpPolls = Math.floor((catchUpEnd - firstAt) / (approach.intervalS * 1000)) + 1;
			await n8n.stop();
			const executions = await readEmitted(user.dir, approach.workflow.id, approach.key === 'trigger' ? 'Image Pack Trigger' : 'Get publication');
			const staticData = await querySqlite(user.dir, 'SELECT staticData FROM workflow_entity WHERE id = ?', [approach.workflow.id]);
			for (let id = firstId; id < firstId + backlog; id++) expected.set(id, true);
			for (const record of [late, plain, original]) expected.set(record.id, true);
			const emitted = executions.ids;
			const counts = new Map();
			for (const id of emitted) counts.set(id, (counts.get(id) ?? 0) + 1);
			const misses = [...expected.keys()].filter((id) => !counts.has(id));
			const duplicates = [...counts.values()].reduce((sum, n) => sum + n - 1, 0) + (counts.has(repeat.id) ? 1 : 0);
			const wallMs = executions.lastStoppedAt - host.firstAt;
			const result = {
				approach: approach.key,
				label: approach.label,
				wallMs,
				lists,
				catchUpLists,
				catchUpPolls,
				details: detailRequests,
				requests: host.requests,
				connections: host.connections,
				executions: executions.count,
				emitted: emitted.length,
				misses: misses.length,
				missedLate: misses.includes(late.id),
				duplicates,
				repeatEmitted: counts.has(repeat.id),
				staticBytes: Buffer.byteLength(staticData[0]?.staticData ?? ''),
				peak,
				cpuMs,
			};
			log(`  ${JSON.stringify(result)}`);
			results.push(result);
		} finally {
			user.cleanup();
		}
	}
	fs.rmSync(path.dirname(tarball), { recursive: true, force: true });
	await env.control.reset();
	const { firstId } = await env.control.publishBulk({ count: backlog });
	const bareMs = await bareCatchUpMs(baseUrl, endpoints.apiKey, firstId, backlog);
	return triggerFigures(results, { backlog, bareMs });
}

/** The ids a workflow emitted, over all its executions (the output of `nodeName`), and when the last one stopped. */
async function readEmitted(userFolder, workflowId, nodeName) {
	const { readExecutions } = await import('../e2e/n8n.mjs');
	const executions = await readExecutions(userFolder, workflowId);
	const ids = [];
	let lastStoppedAt = 0;
	for (const execution of executions) {
		const items = execution.nodeOutput(nodeName);
		if (items.length) lastStoppedAt = Math.max(lastStoppedAt, Date.parse(`${execution.stoppedAt}`.replace(' ', 'T') + (/Z|\+/.test(`${execution.stoppedAt}`) ? '' : 'Z')));
		for (const item of items) ids.push(Number(item.json.id));
	}
	return { ids, count: executions.length, lastStoppedAt };
}

function triggerFigures(results, { backlog, bareMs }) {
	const group = `N8N-2. Trigger in a running n8n: a backlog of ${backlog.toLocaleString('en-US')} publications with manifests + 1 late commit + 1 repeated (pack_id, version); the trigger polls every second (its default Max Publications per Poll), the user's schedule runs every ${USER_INTERVAL_S} s`;
	const note =
		'Trigger in n8n: wall = first API request to the end of the last execution that emitted records; ideal = a bare keep-alive client reading the same pages in sequence and details 4 at a time. ' +
		'Misses count publications never emitted (the late commit included); duplicates count records emitted more than once, the repeated key included. CPU = n8n and its task runner.';
	const figures = [];
	for (const r of results) {
		const prefix = `${r.label}:`;
		figures.push(
			figure({ group, figure: `${prefix} wall time (${r.executions} executions)`, measured: r.wallMs, ideal: bareMs, unit: 'ms', target: '—', note }),
			figure({
				group,
				figure: `${prefix} list requests during the catch-up (${r.catchUpPolls} poll times; ${r.lists} in the whole run)`,
				measured: r.catchUpLists,
				ideal: Math.ceil(backlog / TRIGGER_PAGE),
				unit: '',
				maxValue: Math.ceil(backlog / TRIGGER_PAGE) + 2 + r.catchUpPolls,
				target: 'pages + 2 + 1 per poll',
			}),
			figure({ group, figure: `${prefix} detail (manifest) requests`, measured: r.details, ideal: backlog + 3, unit: '', maxRatio: 1, target: '= new records' }),
			figure({ group, figure: `${prefix} misses (late commit missed: ${r.missedLate ? 'yes' : 'no'})`, measured: r.misses, ideal: 0, unit: '', maxValue: 0 }),
			figure({ group, figure: `${prefix} duplicates (repeated key emitted: ${r.repeatEmitted ? 'yes' : 'no'})`, measured: r.duplicates, ideal: 0, unit: '', maxValue: 0 }),
			figure({ group, figure: `${prefix} static data`, measured: r.staticBytes, ideal: null, unit: 'bytes', maxValue: 16 * 1024 }),
			figure({ group, figure: `${prefix} CPU per request`, measured: r.cpuMs / Math.max(1, r.requests), ideal: null, unit: 'ms', target: '—' }),
			figure({ group, figure: `${prefix} TCP connections per request`, measured: r.connections / Math.max(1, r.requests), ideal: null, unit: '', target: '—' }),
			figure({ group, figure: `${prefix} peak RSS of the n8n process`, measured: r.peak, ideal: null, unit: 'bytes', target: '—' }),
		);
	}
	return figures;
}
