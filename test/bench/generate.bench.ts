/**
 * Benchmarks 1 and 5: a batch of Generate items at each concurrency, and the node's own cost per
 * generate call (wall time minus the time the emulator spent "generating").
 */
import type { IDataObject, INodeExecutionData, INodeParameters } from 'n8n-workflow';
import { request } from 'undici';

import { storeCalls } from '../harness/deduplication';
import { runNode } from '../harness/n8n';
import type { BenchEnv } from './env';
import { timed } from './env';
import type { Figure } from './figures';
import { figure } from './figures';

const PROMPT = 'A white sneaker on a marble pedestal, soft studio light';

function generateParameters(options: IDataObject): INodeParameters {
	return {
		resource: 'image',
		operation: 'generate',
		prompt: PROMPT,
		model: 'nano-banana-2',
		resolution: '1K',
		n: 1,
		options: options as INodeParameters,
	};
}

function items(count: number): INodeExecutionData[] {
	return Array.from({ length: count }, (_, index) => ({ json: { index } }));
}

async function runGenerate(env: BenchEnv, count: number, options: IDataObject) {
	const { ms, value } = await timed(env.clock, async () =>
		runNode({
			nodeType: new env.nodes.ImagePack(),
			parameters: generateParameters(options),
			items: items(count),
			credentials: env.credentials,
		}),
	);
	const output = value[0];
	if (output.length !== count || output.some((item) => item.json.ok !== true)) {
		throw new Error(`Generate returned ${output.length} items, expected ${count} successful ones`);
	}
	const emulatorMs = output.reduce((sum, item) => sum + Number(item.json.duration_ms ?? 0), 0);
	return { ms, output, emulatorMs };
}

async function requestCounts(env: BenchEnv) {
	const log = await env.control.requests();
	const count = (route: string) => log.filter((entry) => entry.route === route).length;
	return { total: log.length, generate: count('generate'), file: count('file'), signedFile: count('signedFile') };
}

/** One generate (and its download) by a bare HTTP client: the floor any client pays on this machine. */
async function bareGenerate(env: BenchEnv, download: boolean): Promise<number> {
	const { baseUrl, apiKey } = env.emulator;
	const res = await request(`${baseUrl}/api/v1/generate`, {
		method: 'POST',
		headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', accept: 'application/json' },
		body: JSON.stringify({ prompt: PROMPT, model: 'nano-banana-2', resolution: '1K', n: 1 }),
	});
	const body = (await res.body.json()) as { duration_ms: number; images: Array<{ url: string }> };
	if (res.statusCode !== 200) throw new Error(`bare generate answered ${res.statusCode}`);
	if (download) {
		for (const image of body.images) {
			const redirect = await request(`${baseUrl}${image.url}`, { headers: { authorization: `Bearer ${apiKey}` } });
			await redirect.body.dump();
			const location = redirect.headers.location;
			if (redirect.statusCode !== 302 || typeof location !== 'string') throw new Error('bare download: no redirect');
			const file = await request(location);
			await file.body.arrayBuffer();
		}
	}
	return body.duration_ms;
}

async function bareSequence(env: BenchEnv, calls: number, download: boolean) {
	let emulatorMs = 0;
	const { ms } = await timed(env.clock, async () => {
		for (let i = 0; i < calls; i++) emulatorMs += await bareGenerate(env, download);
	});
	return { ms, emulatorMs };
}

export async function benchGenerate(env: BenchEnv): Promise<Figure[]> {
	const figures: Figure[] = [];
	const count = 20;
	const latency = env.quick ? 200 : 500;
	const group = `1. Batch generate: ${count} items, generate latency ${latency} ms, downloadImages off`;
	await env.control.reset();
	// Warm-up: loads the code paths and opens the connection pool outside the measurement.
	await runGenerate(env, 2, { concurrency: 2, downloadImages: true });
	await env.control.setLatency('generate', latency);

	for (const concurrency of [1, 2, 4, 8]) {
		env.log(`batch generate: concurrency ${concurrency}`);
		await env.control.clearRequests();
		const before = { ...storeCalls };
		const { ms } = await runGenerate(env, count, { concurrency, downloadImages: false });
		const requests = await requestCounts(env);
		const store = {
			record: storeCalls.record - before.record,
			remove: storeCalls.remove - before.remove,
		};
		const ideal = Math.ceil(count / concurrency) * latency;
		figures.push(
			figure({ group, figure: `c=${concurrency}: wall time`, measured: ms, ideal, unit: 'ms', maxRatio: 1.1 }),
			figure({
				group,
				figure: `c=${concurrency}: API requests (all routes)`,
				measured: requests.total,
				ideal: count,
				unit: '',
				maxRatio: 1,
				target: 'no extra calls',
			}),
		);
		// The durable record's round trips (durable.ts): one record per send, no release when generated.
		// Counted at the harness's stand-in of n8n's store: calls, not what they cost a database.
		if (concurrency === 1 || concurrency === 8) {
			figures.push(
				figure({
					group,
					figure: `c=${concurrency}: durable record, n8n store calls per generated item (record ${store.record}, release ${store.remove})`,
					measured: (store.record + store.remove) / count,
					ideal: 1,
					unit: '',
					maxRatio: 1,
					target: 'one record per send',
					note: "Store calls: checkProcessedAndRecord (record) and removeProcessed (release) made by Generate's durable record (generate/durable.ts), counted at the harness's stand-in of n8n's deduplication store (test/harness/deduplication.ts). A count of round trips only; what each costs n8n's database is measured in a real n8n (`--n8n --n8n-parts=durable`).",
				}),
			);
		}
	}

	// The same batch with the node's default downloadImages: one file request + one signed link each.
	// Its ideal adds, per round, what a bare client needs to fetch one 1K PNG (302 + signed link).
	await env.control.setLatency('generate', 0);
	const bareWith = await bareSequence(env, 10, true);
	const bareWithout = await bareSequence(env, 10, false);
	const fetchMs = Math.max(0, (bareWith.ms - bareWithout.ms) / 10);
	await env.control.setLatency('generate', latency);
	const concurrency = 4;
	env.log(`batch generate: concurrency ${concurrency}, downloadImages on`);
	await env.control.clearRequests();
	const withDownload = await runGenerate(env, count, { concurrency, downloadImages: true });
	const requests = await requestCounts(env);
	figures.push(
		figure({
			group,
			figure: `c=${concurrency}, downloadImages on (1K PNGs): wall time (ideal + ${fetchMs.toFixed(1)} ms fetch per round)`,
			measured: withDownload.ms,
			ideal: Math.ceil(count / concurrency) * (latency + fetchMs),
			unit: 'ms',
			maxRatio: 1.1,
		}),
		figure({
			group,
			figure: `c=${concurrency}, downloadImages on: requests (generate + file + signed link)`,
			measured: requests.total,
			ideal: count * 3,
			unit: '',
			maxRatio: 1,
			target: 'no extra calls',
		}),
	);
	await env.control.setLatency('generate', 0);
	return figures;
}

export async function benchOverhead(env: BenchEnv): Promise<Figure[]> {
	const figures: Figure[] = [];
	const calls = 20;
	const latency = env.quick ? 200 : 500;
	const group = `5. Node overhead per generate call (${calls} sequential calls, node defaults: concurrency 1, downloadImages on)`;
	const note =
		'Overhead = (wall − time the emulator spent in its simulated generation) / calls; the ideal is the same figure for a bare HTTP client (undici: one POST, plus the file request and the signed-link GET when downloading) against the same emulator process.';
	await env.control.reset();
	await runGenerate(env, 2, {});
	await bareSequence(env, 2, true);

	const cases: Array<{ label: string; latency: number; options: IDataObject; download: boolean }> = [
		{ label: 'latency 0, defaults (download on)', latency: 0, options: {}, download: true },
		{ label: `latency ${latency} ms, defaults (download on)`, latency, options: {}, download: true },
		{ label: 'latency 0, downloadImages off', latency: 0, options: { downloadImages: false }, download: false },
	];
	for (const c of cases) {
		env.log(`overhead: ${c.label}`);
		await env.control.setLatency('generate', c.latency);
		const node = await runGenerate(env, calls, c.options);
		const bare = await bareSequence(env, calls, c.download);
		const nodePerCall = (node.ms - node.emulatorMs) / calls;
		const barePerCall = (bare.ms - bare.emulatorMs) / calls;
		figures.push(
			figure({
				group,
				figure: `${c.label}: (wall − emulator) per call`,
				measured: nodePerCall,
				ideal: Math.max(barePerCall, 0.01),
				unit: 'ms',
				note,
			}),
		);
		if (c.latency > 0) {
			figures.push(
				figure({
					group,
					figure: `${c.label}: wall time of ${calls} calls`,
					measured: node.ms,
					ideal: calls * c.latency,
					unit: 'ms',
					maxRatio: 1.1,
					target: 'ratio ≤ 1.1 (as the batch at c=1)',
				}),
			);
		}
	}
	await env.control.setLatency('generate', 0);
	return figures;
}
