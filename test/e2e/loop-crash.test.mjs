/**
 * Loop Over Items killed and retried (issue 43, item 1 and "a stop costs at most the batch in flight"), in a
 * running n8n 2.41.1 (regular mode, SQLite, n8n's heap at 320 MB):
 *
 *   Webhook → Split Out (N products) → Loop Over Items (v3, batch size B) → Generate (Concurrency 8,
 *   Download Images on, On Error: Continue, regular output) → back into Loop Over Items;
 *   Loop Over Items' *done* output → "All products" (No Operation).
 *
 * Why "All products" fires once: Generate has one output wired back into the loop. On Error "Continue"
 * (regular output) puts a refused item (`interrupted_send` …) on the same output as a generated one, so
 * every batch reaches Loop Over Items once, with all its items, and the done output fires once with every
 * product. With both of Generate's outputs (success and error) wired back into Loop Over Items, the loop
 * runs twice for a batch that has both kinds, and its done output fires two or three times, the first
 * times with part of the items (issue 43; not re-measured here);
 * with only the success output wired back, a batch whose items were all refused would give the loop no
 * input and end it early (reasoned, not measured).
 *
 * Five workflows side by side, one per case: Save Execution Progress off / on × batches of 10 / of 1, and
 * `on-sub10` (progress on, batches of 10, each batch in a sub-workflow; below). The
 * emulator holds the generations of one batch (the one at ~30 % of the products) once they ran and were
 * charged, so that each workflow is stopped with a batch in flight; then:
 *
 *   1. n8n SIGKILLed, restarted: the execution is `crashed`;
 *   2. Executions → Retry (with original workflow) over REST, held again at the batch at ~65 %, n8n killed
 *      again during the retry, restarted: the retry is `crashed`;
 *   3. the crashed retry retried: it finishes;
 *   4. the ORIGINAL execution retried again, after everything finished: nothing may be sent.
 *
 * After each step: at most one generate request per product at the emulator (every prompt is unique to its
 * product and case). After step 3: every product requested, "All products" ran once with every product,
 * and with progress on a stop cost at most the batch in flight (refused `interrupted_send`: at most the
 * generations held at the two kills). Delivered images (paid and returned) and `interrupted_send` are
 * counted and printed, with the run indexes of Generate's runs in each execution.
 *
 *   LOOP_CRASH_PRODUCTS   products per case (default 80: the file took 168 s on a busy 2-core machine, three
 *                         n8n starts of 35–40 s each included). At 2,000 the case on-b10 alone took 17 min
 *                         (n8n's main process 630–711 MiB RSS); two cases at once spent over half of n8n's
 *                         CPU in garbage collection at the 320 MB heap
 *   LOOP_CRASH_LATENCY_MS generation time at the emulator (default 20 ms)
 *   LOOP_CRASH_HEAP_MB    n8n's --max-old-space-size (default 320)
 *   LOOP_CRASH_CASES      some of the cases only, e.g. `off-b10,on-b10` (default: off-b10, off-b1, on-b10, on-b1,
 *                         on-sub10; `plain` only when named)
 *   LOOP_CRASH_REPORT     a file to write every number to (JSON)
 *   LOOP_CRASH_NODE_OPTIONS more options for n8n's Node, e.g. `--cpu-prof --cpu-prof-dir=<dir>` (a profile per n8n
 *                         start that ends by itself: the last; the killed ones write none), or
 *                         `--max-semi-space-size=8` (the README's setting for a small instance: at the 320 MB heap
 *                         V8's default young generation keeps it marking n8n's heap without a pause, docs/large-batches.md)
 *
 *   IMAGEPACK_TARBALL=<tgz> node --import tsx --test test/e2e/loop-crash.test.mjs
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { startTestEmulator, waitFor } from './fixtures.mjs';
import { crashableN8n } from './crash-kit.mjs';
import { createUserFolder, packPackage, querySqlite, startN8n, withRunData } from './n8n.mjs';

const OWNER = { email: 'owner@example.com', password: 'Loop-Crash-Password-1' };
const PRODUCTS = Number(process.env.LOOP_CRASH_PRODUCTS ?? 80);
const LATENCY_MS = Number(process.env.LOOP_CRASH_LATENCY_MS ?? 20);
const HEAP_MB = Number(process.env.LOOP_CRASH_HEAP_MB ?? 320);
const CONCURRENCY = 8;
/** Where the two kills land: the batch holding the product at this share of the list. */
const FIRST_STOP = 0.3;
const SECOND_STOP = 0.65;
/** How long n8n may take for one product of one step (all four cases run at once). */
const STEP_TIMEOUT_MS = 120_000 + PRODUCTS * 600;

const GENERATE = 'Generate';
const LOOP = 'Loop Over Items';
const ALL = 'All products';

/** `plain` (only when named in LOOP_CRASH_CASES): no loop, Split Out → Generate → "All products"; its "batch" is the 8 lanes. */
const CASES = [
	{ key: 'off-b10', progress: false, batch: 10 },
	{ key: 'off-b1', progress: false, batch: 1 },
	{ key: 'on-b10', progress: true, batch: 10 },
	{ key: 'on-b1', progress: true, batch: 1 },
	// The README's variant for a 640 MiB n8n (issue 51): each batch in a sub-workflow (Execute Workflow,
	// Idempotency Key = the SKU) that hands back one small item per product, no binary.
	{ key: 'on-sub10', progress: true, batch: 10, sub: true },
	{ key: 'plain', progress: false, batch: CONCURRENCY, plain: true, optIn: true },
].filter((c) => (process.env.LOOP_CRASH_CASES ? process.env.LOOP_CRASH_CASES.split(',').includes(c.key) : !c.optIn));

for (const c of CASES) {
	c.list = Array.from({ length: PRODUCTS }, (_, i) => ({ sku: `P${i + 1}`, prompt: `${c.key} product [${i + 1}]` }));
	c.batches = Math.ceil(PRODUCTS / c.batch);
	c.label = c.plain ? 'no loop, progress off' : `progress ${c.progress ? 'on' : 'off'}, batches of ${c.batch}${c.sub ? ' in a sub-workflow, a key per product' : ''}`;
	/** The products (0-based indexes) of a batch. */
	c.batchOf = (share) => {
		const batch = Math.min(c.batches - 1, Math.floor(c.batches * share));
		const from = batch * c.batch;
		return { batch, indexes: Array.from({ length: Math.min(PRODUCTS, from + c.batch) - from }, (_, i) => from + i) };
	};
	c.stops = [c.batchOf(FIRST_STOP), c.batchOf(SECOND_STOP)];
	/** Held at each kill: the lanes of the batch in flight. */
	c.inFlight = c.stops.map((stop) => Math.min(CONCURRENCY, stop.indexes.length));
}

const to = (name) => [{ node: name, type: 'main', index: 0 }];

/** The sub-workflow of `sub` cases: Execute Workflow Trigger → Generate (key = SKU) → Edit Fields (what a listing keeps). */
function batchWorkflow(c, credential) {
	const generate = loopWorkflow({ ...c, sub: false }, credential).nodes.find((n) => n.name === GENERATE);
	generate.parameters.options.idempotencyKey = '={{ $json.sku }}';
	return {
		name: `loop crash: ${c.key} (one batch)`,
		nodes: [
			{ id: 'batch', name: 'Batch', type: 'n8n-nodes-base.executeWorkflowTrigger', typeVersion: 1, position: [0, 0], parameters: {} },
			{ ...generate, position: [220, 0] },
			{
				id: 'listing',
				name: 'Listing fields',
				type: 'n8n-nodes-base.set',
				typeVersion: 3.4,
				position: [440, 0],
				parameters: {
					mode: 'manual',
					assignments: {
						assignments: [
							{ id: 'sku', name: 'sku', type: 'string', value: "={{ $('Batch').item.json.sku }}" },
							{ id: 'turn', name: 'turn_id', type: 'string', value: '={{ $json.turn_id ?? null }}' },
							{ id: 'image', name: 'image_id', type: 'string', value: '={{ $binary.image_0 ? $json.images[0].id : null }}' },
							{ id: 'error', name: 'error', type: 'string', value: '={{ $json.error?.code ?? null }}' },
						],
					},
					includeOtherFields: false,
					options: { stripBinary: true },
				},
			},
		],
		connections: { Batch: { main: [to(GENERATE)] }, [GENERATE]: { main: [to('Listing fields')] } },
		settings: { executionOrder: 'v1', saveManualExecutions: true },
	};
}

function loopWorkflow(c, credential) {
	const nodes = [
		{ id: 'webhook', name: 'Webhook', type: 'n8n-nodes-base.webhook', typeVersion: 2, position: [0, 0], webhookId: `loop-${c.key}-hook`, parameters: { httpMethod: 'POST', path: `loop-${c.key}`, responseMode: 'onReceived', options: {} } },
		{ id: 'split', name: 'Split Out', type: 'n8n-nodes-base.splitOut', typeVersion: 1, position: [220, 0], parameters: { fieldToSplitOut: 'body.products', options: {} } },
		{ id: 'loop', name: LOOP, type: 'n8n-nodes-base.splitInBatches', typeVersion: 3, position: [440, 0], parameters: { batchSize: c.batch, options: {} } },
		{
			id: 'generate',
			name: GENERATE,
			type: 'n8n-nodes-imagepack.imagePack',
			typeVersion: 1,
			position: [660, 100],
			parameters: {
				resource: 'image',
				operation: 'generate',
				prompt: '={{ $json.prompt }}',
				model: 'nano-banana-2',
				ratio: '1:1',
				resolution: '1K',
				options: { downloadImages: true, concurrency: CONCURRENCY },
			},
			credentials: { imagePackApi: { id: credential.id, name: credential.name } },
			onError: 'continueRegularOutput',
		},
		{ id: 'all', name: ALL, type: 'n8n-nodes-base.noOp', typeVersion: 1, position: [660, -100], parameters: {} },
	];
	if (c.sub) {
		const call = { id: 'batch', name: GENERATE, type: 'n8n-nodes-base.executeWorkflow', typeVersion: 1, position: [660, 100], parameters: { source: 'database', workflowId: c.subWorkflowId, mode: 'once', options: { waitForSubWorkflow: true } } };
		return { ...loopWorkflowOf(c, nodes.map((n) => (n.name === GENERATE ? call : n))) };
	}
	if (c.plain) {
		return {
			name: `loop crash: ${c.key}`,
			nodes: nodes.filter((n) => n.name !== LOOP),
			connections: { Webhook: { main: [to('Split Out')] }, 'Split Out': { main: [to(GENERATE)] }, [GENERATE]: { main: [to(ALL)] } },
			settings: { executionOrder: 'v1', saveManualExecutions: true, saveExecutionProgress: c.progress },
		};
	}
	return loopWorkflowOf(c, nodes);
}

function loopWorkflowOf(c, nodes) {
	return {
		name: `loop crash: ${c.key}`,
		nodes,
		connections: {
			Webhook: { main: [to('Split Out')] },
			'Split Out': { main: [to(LOOP)] },
			[LOOP]: { main: [to(ALL), to(GENERATE)] },
			[GENERATE]: { main: [to(LOOP)] },
		},
		settings: { executionOrder: 'v1', saveManualExecutions: true, saveExecutionProgress: c.progress },
	};
}

/** 1-based product numbers as ranges: [1,2,3,7] → "P1–P3, P7". */
function ranges(indexes) {
	const sorted = [...indexes].sort((a, b) => a - b);
	const parts = [];
	for (let i = 0; i < sorted.length; ) {
		let j = i;
		while (j + 1 < sorted.length && sorted[j + 1] === sorted[j] + 1) j++;
		parts.push(i === j ? `P${sorted[i] + 1}` : `P${sorted[i] + 1}–P${sorted[j] + 1}`);
		i = j + 1;
	}
	return parts.join(', ') || 'none';
}

const productOfPrompt = (prompt) => Number(/\[(\d+)\]$/.exec(prompt ?? '')?.[1]) - 1;

describe(`Loop Over Items killed and retried in n8n 2.41.1 (${PRODUCTS} products a case, Concurrency ${CONCURRENCY}, heap ${HEAP_MB} MB)`, () => {
	let emulator;
	let userFolder;
	let n8n;
	let packed;
	const report = { products: PRODUCTS, latencyMs: LATENCY_MS, heapMb: HEAP_MB, concurrency: CONCURRENCY, phases: [], peakRssMiB: [], cases: {} };
	const started = Date.now();
	let sampler;

	const phase = (name) => {
		report.phases.push({ name, atS: Math.round((Date.now() - started) / 100) / 10 });
		if (!process.env.E2E_QUIET) process.stderr.write(`[loop-crash] ${((Date.now() - started) / 1000).toFixed(1)} s: ${name}\n`);
	};

	/** Starts n8n (again) and samples its main process' RSS. */
	async function start() {
		await n8n.start();
		const pid = n8n.n8n.process.pid;
		const entry = { start: report.peakRssMiB.length + 1, peak: 0 };
		report.peakRssMiB.push(entry);
		clearInterval(sampler);
		sampler = setInterval(() => {
			try {
				const kb = Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
				if (kb) entry.peak = Math.max(entry.peak, Math.round(kb / 1024));
			} catch {}
		}, 1000);
		sampler.unref();
	}

	/** Every case's executions, without their data: { id, status, retryOf, stoppedAt, bytes }. */
	async function rows() {
		const list = await querySqlite(
			userFolder.dir,
			`SELECT e.id, e.workflowId, e.mode, e.status, e.retryOf, e.retrySuccessId, e.startedAt, e.stoppedAt, length(d.data) AS bytes
			   FROM execution_entity e LEFT JOIN execution_data d ON d.executionId = e.id
			  WHERE e.workflowId IN (${CASES.map(() => '?').join(',')}) ORDER BY e.id`,
			CASES.map((c) => c.workflowId),
		);
		return list.map((row) => ({ ...row, id: String(row.id), retryOf: row.retryOf == null ? null : String(row.retryOf) }));
	}

	/** One execution with its run data (parsed with n8n's flatted). */
	async function execution(id) {
		const [row] = await querySqlite(
			userFolder.dir,
			`SELECT e.id, e.workflowId, e.mode, e.status, e.retryOf, e.retrySuccessId, e.startedAt, e.stoppedAt, d.data
			   FROM execution_entity e LEFT JOIN execution_data d ON d.executionId = e.id WHERE e.id = ?`,
			[id],
		);
		return row && withRunData([row])[0];
	}

	const FINAL = new Set(['success', 'error', 'canceled', 'crashed']);
	const done = (row) => row && FINAL.has(row.status) && (row.stoppedAt != null || row.status === 'crashed') && row.bytes > 0;

	/** Executions → Retry as the editor sends it, without waiting for n8n's answer (it comes when the retry ends). */
	function retry(c, id) {
		const answer = { status: null };
		n8n.session
			.request('POST', `/rest/executions/${id}/retry`, { loadWorkflow: false })
			.then((response) => Object.assign(answer, { status: response.status, body: response.body }))
			.catch((error) => Object.assign(answer, { status: 'no answer', error: error.message }));
		c.answers.push({ of: id, answer });
		return answer;
	}

	/** Waits for the (newest) execution retrying `of` that is newer than `after` to be finished. */
	async function retried(c, of, after, answer) {
		return waitFor(
			async () => {
				if (answer.status !== null && answer.status !== 200 && answer.status !== 'no answer')
					throw new Error(`${c.key}: retry of ${of} answered ${answer.status} ${JSON.stringify(answer.body).slice(0, 400)}`);
				const found = (await rows()).filter((e) => e.retryOf === String(of) && Number(e.id) > Number(after)).at(-1);
				return done(found) && found;
			},
			{ timeoutMs: STEP_TIMEOUT_MS, intervalMs: 2000, what: `${c.key}: the retry of execution ${of} to finish` },
		).catch((error) => {
			if (/answered/.test(error.message)) throw error;
			throw new Error(`${error.message} (n8n's answer: ${JSON.stringify(answer).slice(0, 300)})`);
		});
	}

	/** Generate requests and credits charged per product of each case, as the emulator saw them. */
	async function counts() {
		const log = await emulator.control.requests({ route: 'generate' });
		const turns = await emulator.control.turns();
		const result = {};
		for (const c of CASES) {
			const requests = Array(PRODUCTS).fill(0);
			const paid = Array(PRODUCTS).fill(0);
			for (const entry of log) if (entry.prompt?.startsWith(`${c.key} `)) requests[productOfPrompt(entry.prompt)]++;
			for (const turn of turns) if (turn.prompt?.startsWith(`${c.key} `) && turn.charged > 0) paid[productOfPrompt(turn.prompt)]++;
			result[c.key] = { requests, paid, turns };
		}
		result.turnProduct = new Map(turns.map((t) => [t.id, t.prompt]));
		return result;
	}

	/** "36 of 80 products requested twice (P1–P36)" etc. */
	function requestsLine({ requests, paid }) {
		const by = new Map();
		requests.forEach((count, i) => by.set(count, [...(by.get(count) ?? []), i]));
		const parts = [...by.keys()].sort((a, b) => a - b).map((count) => `${by.get(count).length} × ${count} request${count === 1 ? '' : 's'}${count === 1 ? '' : ` (${ranges(by.get(count))})`}`);
		const paidTwice = paid.filter((n) => n > 1).length;
		return `${parts.join('; ')}; paid twice or more: ${paidTwice}; total requests ${requests.reduce((a, b) => a + b, 0)}`;
	}

	/** Generate's runs in an execution, grouped: "runs 0–23 P1–P240 generated" … */
	function generateRuns(exec, turnProduct, c) {
		const runData = exec?.run?.resultData?.runData ?? {};
		const loopRuns = runData[LOOP] ?? [];
		const runs = (runData[GENERATE] ?? []).map((run, index) => {
			const source = run.source?.[0];
			const batch = source ? (loopRuns[source.previousNodeRun ?? 0]?.data?.main?.[1] ?? []) : [];
			const inputs = batch.map((item) => Number(String(item.json.sku).slice(1)) - 1).filter((n) => n >= 0);
			const out = run.data?.main?.[0] ?? [];
			const kinds = {};
			for (const item of out) {
				const kind = item.json.turn_id ? 'generated' : (item.json.error?.code ?? 'other');
				kinds[kind] = (kinds[kind] ?? 0) + 1;
			}
			const outputs = out.filter((item) => item.json.turn_id).map((item) => productOfPrompt(turnProduct.get(item.json.turn_id)));
			return { index, status: run.executionStatus ?? '?', inputs, kinds, outputs };
		});
		const groups = [];
		for (const run of runs) {
			const signature = `${run.status} ${Object.keys(run.kinds).sort().join('+') || 'no output'}`;
			const last = groups.at(-1);
			if (last && last.signature === signature && last.to === run.index - 1) {
				last.to = run.index;
				last.inputs.push(...run.inputs);
				for (const [k, n] of Object.entries(run.kinds)) last.kinds[k] = (last.kinds[k] ?? 0) + n;
			} else groups.push({ signature, from: run.index, to: run.index, status: run.status, inputs: [...run.inputs], kinds: { ...run.kinds } });
		}
		return {
			count: runs.length,
			line: groups
				.map((g) => `run${g.from === g.to ? ` ${g.from}` : `s ${g.from}–${g.to}`} [${g.status}] input ${ranges(g.inputs)}: ${Object.entries(g.kinds).map(([k, n]) => `${n} ${k}`).join(', ') || 'no output'}`)
				.join('; '),
			runs,
			caseKey: c.key,
		};
	}

	/** What reached "All products" in an execution: its runs, items, delivered and refused products. */
	function allProducts(exec, turnProduct) {
		const runs = exec?.run?.resultData?.runData?.[ALL] ?? [];
		const items = runs.flatMap((run) => run.data?.main?.[0] ?? []);
		const delivered = new Set();
		const codes = {};
		let deliveredItems = 0;
		for (const item of items) {
			// A sub-workflow's batch hands back the image's id, not the image (it stays in the sub-workflow).
			if (item.json.turn_id && (item.binary?.image_0 || item.json.image_id)) {
				deliveredItems++;
				delivered.add(productOfPrompt(turnProduct.get(item.json.turn_id)));
			} else {
				const code = item.json.turn_id ? 'generated without image' : (item.json.error?.code ?? item.json.error ?? 'other');
				codes[code] = (codes[code] ?? 0) + 1;
			}
		}
		return { runs: runs.length, runSizes: runs.map((run) => run.data?.main?.[0]?.length ?? 0), items: items.length, deliveredItems, delivered, codes };
	}

	/** Records a step of a case: requests per product and the executions' runs. */
	async function record(c, step, execs) {
		const seen = await counts();
		const entry = { step, requests: requestsLine(seen[c.key]), maxRequests: Math.max(...seen[c.key].requests), executions: [] };
		for (const [name, row] of Object.entries(execs)) {
			const exec = row && (await execution(row.id));
			const runs = generateRuns(exec, seen.turnProduct, c);
			const all = allProducts(exec, seen.turnProduct);
			entry.executions.push({
				name,
				id: row?.id,
				status: exec?.status,
				retryOf: row?.retryOf,
				generateRuns: runs.count,
				runs: runs.line,
				loopRuns: exec?.run?.resultData?.runData?.[LOOP]?.length ?? 0,
				allProducts: { runs: all.runs, runSizes: all.runSizes.join('+'), items: all.items, delivered: all.delivered.size, deliveredItems: all.deliveredItems, refused: all.codes },
				error: exec?.run?.resultData?.error?.message,
			});
			if (name === 'final') c.final = { exec, all };
		}
		c.steps.push(entry);
		report.cases[c.key] = { ...report.cases[c.key], label: c.label, stops: c.stops.map((s) => ({ batch: s.batch, products: ranges(s.indexes) })), steps: c.steps };
		if (!process.env.E2E_QUIET) process.stderr.write(`[loop-crash] ${c.key} ${step}: ${JSON.stringify(entry, null, 1)}\n`);
		return { seen: seen[c.key], entry };
	}

	/**
	 * The wall of a retry against the ideal for what it sent (issue 51): the execution's start to stop
	 * and Generate's own time (its runs' executionTime), against Σ over batches of ceil(sent in the
	 * batch / 8) × the latency (no loop: ceil(sent / 8) × the latency). Reported products cost no
	 * generation, so they are not in the ideal.
	 */
	async function retryTiming(c, row, before, after) {
		const exec = await execution(row.id);
		const at = (value) => Date.parse(`${value}`.replace(' ', 'T') + (/Z|\+/.test(`${value}`) ? '' : 'Z'));
		const wallS = (at(exec.stoppedAt) - at(exec.startedAt)) / 1000;
		// Its own runs only: with progress on, the runs it resumed from are in its run data too.
		const ownRuns = (exec.run?.resultData?.runData?.[GENERATE] ?? []).filter((run) => run.startTime >= at(exec.startedAt));
		const generateS = ownRuns.reduce((sum, run) => sum + (run.executionTime ?? 0), 0) / 1000;
		const sentIn = after.map((n, i) => n - before[i]);
		const size = c.plain ? PRODUCTS : c.batch;
		let idealS = 0;
		for (let from = 0; from < PRODUCTS; from += size) {
			const sent = sentIn.slice(from, from + size).reduce((a, b) => a + b, 0);
			idealS += (Math.ceil(sent / CONCURRENCY) * LATENCY_MS) / 1000;
		}
		const sent = sentIn.reduce((a, b) => a + b, 0);
		// When its first and last generate requests of this case reached the emulator: before the first,
		// the retry only reported (no loop: the products that left come first in the list).
		const sends = (await emulator.control.requests({ route: 'generate' }))
			.filter((r) => r.prompt?.startsWith(`${c.key} `) && r.at >= at(exec.startedAt))
			.map((r) => r.at);
		const firstSendS = sends.length ? (Math.min(...sends) - at(exec.startedAt)) / 1000 : null;
		const lastSendS = sends.length ? (Math.max(...sends) - at(exec.startedAt)) / 1000 : null;
		const timing = { execution: row.id, sent, reported: PRODUCTS - sent, wallS, generateS, idealS, ratio: wallS / idealS, generateRatio: generateS / idealS, firstSendS, lastSendS };
		phase(
			`${c.key}: the last retry sent ${sent} and reported ${PRODUCTS - sent}: wall ${wallS.toFixed(1)} s, Generate ${generateS.toFixed(1)} s, ideal for what it sent ${idealS.toFixed(1)} s: ${timing.ratio.toFixed(2)} × (Generate ${timing.generateRatio.toFixed(2)} ×); first send at +${firstSendS?.toFixed(1)} s, last at +${lastSendS?.toFixed(1)} s`,
		);
		report.cases[c.key] = { ...report.cases[c.key], lastRetry: timing };
		return timing;
	}

	/** Holds the generations of each case's batch at that stop once they ran and were charged. */
	async function holdBatches(stop) {
		for (const c of CASES) {
			for (const i of c.stops[stop].indexes) {
				await emulator.control.injectFault({ route: 'generate', kind: 'hold', when: 'after', promptIncludes: c.list[i].prompt });
			}
		}
	}

	/** Waits until each case holds its batch in flight (or its execution ended first), then SIGKILLs n8n. */
	async function killWhenHeld(stop, ended) {
		const timing = Date.now();
		await waitFor(
			async () => {
				const held = await emulator.control.held();
				const holding = (c) => held.filter((h) => h.prompt?.startsWith(`${c.key} `)).length >= c.inFlight[stop];
				if (CASES.every(holding)) return true;
				const list = await rows();
				return CASES.every((c) => holding(c) || ended(c, list));
			},
			{ timeoutMs: STEP_TIMEOUT_MS, intervalMs: 250, what: `every case to hold the batch at stop ${stop + 1}` },
		);
		const held = await emulator.control.held();
		for (const c of CASES) c.heldAtKill[stop] = held.filter((h) => h.prompt?.startsWith(`${c.key} `)).map((h) => productOfPrompt(h.prompt));
		phase(`stop ${stop + 1}: held ${CASES.map((c) => `${c.key} ${ranges(c.heldAtKill[stop])}`).join('; ')} (reached in ${((Date.now() - timing) / 1000).toFixed(1)} s); SIGKILL`);
		await n8n.kill();
		await waitFor(async () => (await emulator.control.held()).length === 0, { timeoutMs: 30_000, what: 'the held connections to close' });
		// The faults of products that never reached a lane must not hold the next run.
		await emulator.control.clearFaults();
	}

	before(async () => {
		emulator = await startTestEmulator({ requestLogLimit: 1_000_000 });
		await emulator.control.setLatency('generate', LATENCY_MS);
		const tarball = process.env.IMAGEPACK_TARBALL ?? (packed = await packPackage());
		userFolder = await createUserFolder({ tarball });
		n8n = crashableN8n({ userFolder: userFolder.dir, profile: 'default', owner: OWNER, startN8n, env: { NODE_OPTIONS: `--max-old-space-size=${HEAP_MB} ${process.env.LOOP_CRASH_NODE_OPTIONS ?? ''}`.trim() } });
		await start();
		phase('n8n started');
		const credential = await n8n.createCredential({ name: 'Image Pack (emulator)', type: 'imagePackApi', data: { baseUrl: emulator.baseUrl, apiKey: emulator.apiKey } });
		for (const c of CASES) {
			if (c.sub) c.subWorkflowId = await n8n.publish(batchWorkflow(c, credential));
			c.workflowId = await n8n.publish(loopWorkflow(c, credential));
			c.steps = [];
			c.answers = [];
			c.heldAtKill = [];
		}
	});

	after(async () => {
		clearInterval(sampler);
		report.totalS = Math.round((Date.now() - started) / 1000);
		for (const c of CASES) {
			const all = c.final?.all;
			const seen = c.steps.at(-1);
			report.cases[c.key] = { ...report.cases[c.key], summary: all && { delivered: all.delivered.size, interrupted_send: all.codes.interrupted_send ?? 0, refused: all.codes, doneOutputRuns: all.runSizes, requests: seen?.requests } };
			if (all) phase(`${c.key} (${c.label}): delivered ${all.delivered.size}, interrupted_send ${all.codes.interrupted_send ?? 0} of ${PRODUCTS}; requests ${seen?.requests}`);
		}
		phase(`done; n8n main process peak RSS per start (MiB): ${report.peakRssMiB.map((e) => e.peak).join(', ')}`);
		if (process.env.LOOP_CRASH_REPORT) fs.writeFileSync(process.env.LOOP_CRASH_REPORT, JSON.stringify(report, null, 2));
		await n8n?.stop();
		await emulator?.close();
		userFolder?.cleanup();
		if (packed) fs.rmSync(path.dirname(packed), { recursive: true, force: true });
	});

	describe('1. killed with a batch in flight at ~30 %', () => {
		before(async () => {
			await holdBatches(0);
			for (const c of CASES) await n8n.call(`loop-${c.key}`, { products: c.list });
			phase('webhooks called');
			await killWhenHeld(0, () => false);
			await start();
			phase('n8n restarted');
			for (const c of CASES) {
				c.original = await waitFor(async () => (await rows()).find((e) => e.workflowId === c.workflowId && !e.retryOf && done(e)), {
					timeoutMs: 120_000,
					what: `${c.key}: n8n to mark the execution crashed`,
				});
			}
		});

		for (const c of CASES) {
			it(`${c.label}: the crashed execution requested each product at most once`, async () => {
				const { seen, entry } = await record(c, '1 crashed', { original: c.original });
				assert.equal(c.original.status, 'crashed', JSON.stringify(entry));
				assert.ok(seen.requests.every((n) => n <= 1), `${c.key}: ${entry.requests}`);
			});
		}
	});

	describe('2. Executions → Retry, killed again with a batch in flight at ~65 %', () => {
		before(async () => {
			await holdBatches(1);
			for (const c of CASES) c.firstRetryAnswer = retry(c, c.original.id);
			const ended = (c, list) => done(list.find((e) => e.retryOf === c.original.id));
			await killWhenHeld(1, ended);
			await start();
			phase('n8n restarted');
			for (const c of CASES) {
				c.firstRetry = await waitFor(async () => (await rows()).find((e) => e.retryOf === c.original.id && done(e)), {
					timeoutMs: 120_000,
					what: `${c.key}: the retry to be marked crashed (answer ${JSON.stringify(c.firstRetryAnswer)})`,
				});
			}
		});

		for (const c of CASES) {
			it(`${c.label}: the crashed run and its crashed retry requested each product at most once`, async () => {
				const { seen, entry } = await record(c, '2 retry crashed', { original: c.original, firstRetry: c.firstRetry });
				assert.equal(c.firstRetry.status, 'crashed', `the retry was still running at the second kill — ${JSON.stringify(entry)}`);
				assert.ok(seen.requests.every((n) => n <= 1), `${c.key}: ${entry.requests}`);
			});
		}
	});

	describe('3. the crashed retry retried', () => {
		before(async () => {
			const sentBefore = await counts();
			await Promise.all(
				CASES.map(async (c) => {
					const answer = retry(c, c.firstRetry.id);
					c.secondRetry = await retried(c, c.firstRetry.id, c.firstRetry.id, answer);
				}),
			);
			phase('retries of the crashed retries finished');
			const sentAfter = await counts();
			for (const c of CASES) c.lastRetry3 = await retryTiming(c, c.secondRetry, sentBefore[c.key].requests, sentAfter[c.key].requests);
		});

		for (const c of CASES) {
			it(`${c.label}: at most one generate request per product across the three executions`, async () => {
				const { seen, entry } = await record(c, '3 retry of the crashed retry', { final: c.secondRetry });
				assert.ok(seen.requests.every((n) => n <= 1), `${c.key}: ${entry.requests}; ${JSON.stringify(entry.executions)}`);
			});

			it(`${c.label}: the retry of the retry succeeds, every product was sent, "All products" ran once with every product`, async () => {
				const { all } = c.final;
				const seen = (await counts())[c.key];
				const facts = `${c.key}: ${requestsLine(seen)}; "All products" ran ${all.runs} time(s) with ${all.runSizes.join('+') || 'no'} items`;
				assert.equal(c.secondRetry.status, 'success', facts);
				assert.ok(seen.requests.every((n) => n >= 1), `every product sent (what never left is generated) — ${facts}`);
				assert.equal(all.runs, 1, `"All products" ran once — ${facts}`);
				assert.equal(all.items, PRODUCTS, `"All products" got every product — ${facts}`);
			});

			if (c.progress) {
				it(`${c.label}: a stop costs at most the batch in flight (images delivered for every product but those held at the kills)`, async () => {
					const { all } = c.final;
					const held = new Set([...c.heldAtKill[0], ...c.heldAtKill[1]]);
					const lost = c.list.map((_, i) => i).filter((i) => !all.delivered.has(i));
					const facts = `${c.key}: delivered ${all.delivered.size} of ${PRODUCTS} (${all.deliveredItems} items), refused ${JSON.stringify(all.codes)}; held at the kills ${ranges([...held])}; not delivered ${ranges(lost)}`;
					assert.ok(lost.every((i) => held.has(i)), facts);
					assert.equal(all.codes.interrupted_send ?? 0, lost.length, facts);
				});
			}
		}
	});

	describe('4. the ORIGINAL execution retried again after everything finished', () => {
		before(async () => {
			for (const c of CASES) c.beforeLast = (await counts())[c.key].requests.reduce((a, b) => a + b, 0);
			await Promise.all(
				CASES.map(async (c) => {
					const answer = retry(c, c.original.id);
					c.lastRetry = await retried(c, c.original.id, c.secondRetry.id, answer);
				}),
			);
			phase('second retries of the originals finished');
		});

		for (const c of CASES) {
			it(`${c.label}: sends nothing`, async () => {
				const { seen, entry } = await record(c, '4 original retried again', { lastRetry: c.lastRetry });
				const total = seen.requests.reduce((a, b) => a + b, 0);
				assert.equal(total - c.beforeLast, 0, `nothing sent — ${c.key}: ${total - c.beforeLast} new requests; ${entry.requests}; ${JSON.stringify(entry.executions)}`);
			});

			it(`${c.label}: at most one generate request per product in all`, async () => {
				const seen = (await counts())[c.key];
				assert.ok(seen.requests.every((n) => n <= 1), `${c.key}: ${requestsLine(seen)}`);
			});
		}
	});
});
