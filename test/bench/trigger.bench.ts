/**
 * Benchmarks 2 and 3: the trigger catching up on a backlog (requests, polls, wall time, static data
 * size), and "Fetch Test Event" / first activation on long histories (requests must grow with
 * log(max id), not with the number of publications).
 */
import type { IDataObject, INodeType } from 'n8n-workflow';
import { Agent, request } from 'undici';

import { PollingWorkflow } from '../harness/n8n';
import type { BenchEnv } from './env';
import type { Figure } from './figures';
import { figure } from './figures';

const LIST_PATH = '/api/v1/image-pack-publications';
const PAGE = 200;
const STATIC_DATA_LIMIT = 16 * 1024;

function triggerType(env: BenchEnv): INodeType {
	if (!env.nodes.ImagePackTrigger) throw new Error('the trigger node is not there');
	return new env.nodes.ImagePackTrigger();
}

function workflow(env: BenchEnv, parameters: IDataObject, mode: 'trigger' | 'manual' = 'trigger') {
	return new PollingWorkflow({
		nodeType: triggerType(env),
		parameters: parameters as never,
		credentials: env.credentials,
		mode,
		activation: mode === 'manual' ? 'manual' : 'activate',
	});
}

async function routeCounts(env: BenchEnv) {
	const [list, detail] = await Promise.all([
		env.control.requests({ route: 'listPublications' }),
		env.control.requests({ route: 'getPublication' }),
	]);
	return { list: list.length, detail: detail.length };
}

function staticDataBytes(pw: PollingWorkflow): number {
	return new TextEncoder().encode(JSON.stringify(pw.serializedStaticData())).length;
}

/** Polls until a poll returns nothing new (bounded); checks that every id arrives exactly once. */
async function catchUp(env: BenchEnv, pw: PollingWorkflow, expected: number, maxPolls: number) {
	const seen = new Set<number>();
	let duplicates = 0;
	let polls = 0;
	let emittingPolls = 0;
	let catchUpMs = 0;
	const started = env.clock.now();
	for (; polls < maxPolls; ) {
		polls++;
		const output = await pw.poll('trigger');
		if (!output) break;
		emittingPolls++;
		catchUpMs = env.clock.now() - started;
		for (const item of output[0]) {
			const id = Number(item.json.id);
			if (seen.has(id)) duplicates++;
			seen.add(id);
		}
	}
	if (seen.size !== expected || duplicates) {
		throw new Error(`catch-up delivered ${seen.size} distinct of ${expected} publications, ${duplicates} twice`);
	}
	return { polls, emittingPolls, catchUpMs };
}

/** The same reads by a bare HTTP client: list pages in sequence, details with `concurrency` in flight. */
async function bareCatchUp(env: BenchEnv, firstId: number, lastId: number, details: boolean, concurrency: number) {
	const { baseUrl, apiKey } = env.emulator;
	const dispatcher = new Agent({ connections: concurrency });
	const headers = { authorization: `Bearer ${apiKey}`, accept: 'application/json' };
	const started = env.clock.now();
	const ids: number[] = [];
	let since = firstId - 1;
	for (let guard = 0; guard < 10_000; guard++) {
		const res = await request(`${baseUrl}${LIST_PATH}?since_id=${since}&limit=${PAGE}`, { headers, dispatcher });
		const body = (await res.body.json()) as { items: Array<{ id: number }>; next_since_id: number };
		ids.push(...body.items.map((item) => item.id));
		since = body.next_since_id;
		if (body.items.length < PAGE || since >= lastId) break;
	}
	if (details) {
		let next = 0;
		const lane = async () => {
			while (next < ids.length) {
				const id = ids[next++];
				const res = await request(`${baseUrl}${LIST_PATH}/${id}`, { headers, dispatcher });
				await res.body.json();
			}
		};
		await Promise.all(Array.from({ length: concurrency }, lane));
	}
	const ms = env.clock.now() - started;
	await dispatcher.close();
	return ms;
}

/** Max Publications per Poll: the node's default, and the largest it allows. */
const CAPS = [100, 1_000];

export async function benchCatchUp(env: BenchEnv): Promise<Figure[]> {
	const figures: Figure[] = [];
	const backlog = env.quick ? 2_000 : 10_000;
	const total = env.quick ? 20_000 : 100_000;
	const idealList = Math.ceil(backlog / PAGE);
	const group = `2. Trigger catch-up of a ${backlog.toLocaleString('en-US')}-publication backlog (startFrom beginning, n8n's 5-min poll budget), Max Publications per Poll ${CAPS.join(' and ')}`;
	const wallNote =
		'Catch-up wall time: ideal = a bare HTTP client (undici) reading the same list pages in sequence and, with manifests, the same details 4 at a time (the trigger\'s MANIFEST_CONCURRENCY), against the same emulator with no latency. The trigger\'s time is that of its polls back to back (n8n spaces them by the poll times).';

	for (const includeManifest of [false, true]) {
		for (const cap of CAPS) {
			const label = `includeManifest ${includeManifest ? 'on' : 'off'}, ${cap} per poll`;
			env.log(`trigger catch-up: ${backlog} publications, ${label}`);
			await env.control.reset();
			const { firstId, lastId } = await env.control.publishBulk({ count: backlog });
			const pw = workflow(env, { startFrom: 'beginning', includeManifest, maxPerPoll: cap });
			await env.control.clearRequests();
			const run = await catchUp(env, pw, backlog, Math.ceil(backlog / cap) + 5);
			const counts = await routeCounts(env);
			const bareMs = await bareCatchUp(env, firstId, lastId, includeManifest, 4);
			figures.push(
				figure({
					group,
					figure: `${label}: list requests (${run.polls} polls, the last one finding nothing new)`,
					measured: counts.list,
					ideal: idealList,
					unit: '',
					maxValue: idealList + 2 * run.polls,
					target: `≤ ${idealList} + 2 per poll`,
				}),
				figure({
					group,
					figure: `${label}: detail requests`,
					measured: counts.detail,
					ideal: includeManifest ? backlog : 0,
					unit: '',
					maxRatio: 1,
					target: includeManifest ? '= new records' : '0',
					verdict: includeManifest ? undefined : counts.detail === 0 ? 'pass' : 'miss',
				}),
				figure({
					group,
					figure: `${label}: wall time of the catch-up`,
					measured: run.catchUpMs,
					ideal: bareMs,
					unit: 'ms',
					note: wallNote,
				}),
				figure({
					group,
					figure: `${label}: static data after catch-up (JSON)`,
					measured: staticDataBytes(pw),
					unit: 'bytes',
					maxValue: STATIC_DATA_LIMIT,
				}),
			);
			if (!includeManifest && cap === CAPS[CAPS.length - 1]) {
				figures.push(...(await thenMore(env, pw, { group, backlog, total, cap, wallNote })));
			}
		}
	}
	return figures;
}

/** The same trigger, then the account grows to `total` publications. */
async function thenMore(
	env: BenchEnv,
	pw: PollingWorkflow,
	{ group, backlog, total, cap, wallNote }: { group: string; backlog: number; total: number; cap: number; wallNote: string },
): Promise<Figure[]> {
	const more = total - backlog;
	env.log(`trigger catch-up: ${more} more publications (total ${total})`);
	const added = await env.control.publishBulk({ count: more });
	await env.control.clearRequests();
	const rest = await catchUp(env, pw, more, Math.ceil(more / cap) + 5);
	const restCounts = await routeCounts(env);
	const restBare = await bareCatchUp(env, added.firstId, added.lastId, false, 4);
	const ideal = Math.ceil(more / PAGE);
	return [
		figure({
			group,
			figure: `then +${more.toLocaleString('en-US')} (${total.toLocaleString('en-US')} in all), ${cap} per poll: list requests`,
			measured: restCounts.list,
			ideal,
			unit: '',
			maxValue: ideal + 2 * rest.polls,
			target: `≤ ${ideal} + 2 per poll`,
		}),
		figure({
			group,
			figure: `then +${more.toLocaleString('en-US')}: polls that delivered (≤ ${cap.toLocaleString('en-US')} records each)`,
			measured: rest.emittingPolls,
			ideal: Math.ceil(more / cap),
			unit: '',
		}),
		figure({ group, figure: `then +${more.toLocaleString('en-US')}: wall time`, measured: rest.catchUpMs, ideal: restBare, unit: 'ms', note: wallNote }),
		figure({
			group,
			figure: `static data after ${total.toLocaleString('en-US')} publications (JSON)`,
			measured: staticDataBytes(pw),
			unit: 'bytes',
			maxValue: STATIC_DATA_LIMIT,
		}),
	];
}

export async function benchNewest(env: BenchEnv): Promise<Figure[]> {
	const figures: Figure[] = [];
	const sizes = env.quick ? [1_000, 10_000] : [1_000, 10_000, 100_000];
	const group = '3. Fetch Test Event and first activation (startFrom now): requests by account size';
	const note =
		'Requests for the newest publication: ideal = ⌈log2(max id)⌉ list probes (a binary search that knew an upper bound) + 1 (the detail for the test event, the baseline page for activation); target: at most 2·⌈log2(max id)⌉ + 3, i.e. logarithmic growth (a scan would need max id / 200 pages: 500 at 100,000).';
	const series: Record<string, number[]> = { test: [], activation: [] };
	for (const size of sizes) {
		env.log(`trigger newest: ${size} publications`);
		await env.control.reset();
		const { lastId } = await env.control.publishBulk({ count: size });
		const log2 = Math.ceil(Math.log2(lastId));

		await env.control.clearRequests();
		const test = workflow(env, { includeManifest: true, startFrom: 'now' }, 'manual');
		const [[item]] = (await test.poll('manual')) ?? [[]];
		if (Number(item?.json.id) !== lastId) throw new Error(`Fetch Test Event returned ${String(item?.json.id)}, not ${lastId}`);
		const testCounts = await routeCounts(env);
		const testTotal = testCounts.list + testCounts.detail;

		await env.control.clearRequests();
		const active = workflow(env, { includeManifest: true, startFrom: 'now' });
		if ((await active.poll('trigger')) !== null) throw new Error('first activation emitted items');
		const activationCounts = await routeCounts(env);
		const activationTotal = activationCounts.list + activationCounts.detail;
		series.test.push(testTotal);
		series.activation.push(activationTotal);

		const label = `${size.toLocaleString('en-US')} publications (max id ${lastId.toLocaleString('en-US')})`;
		for (const [name, measured] of [
			['Fetch Test Event', testTotal],
			['first activation', activationTotal],
		] as const) {
			figures.push(
				figure({
					group,
					figure: `${label}: ${name} requests`,
					measured,
					ideal: log2 + 1,
					unit: '',
					maxValue: 2 * log2 + 3,
					target: `≤ 2·${log2} + 3`,
					note,
				}),
			);
		}
	}
	const first = sizes[0];
	const last = sizes[sizes.length - 1];
	const growthIdeal = Math.ceil(Math.log2(last / first));
	for (const [name, values] of [
		['Fetch Test Event', series.test],
		['first activation', series.activation],
	] as const) {
		const growth = values[values.length - 1] - values[0];
		figures.push(
			figure({
				group,
				figure: `${name}: series ${values.join(' → ')}; growth ${first.toLocaleString('en-US')} → ${last.toLocaleString('en-US')}`,
				measured: growth,
				ideal: growthIdeal,
				unit: '',
				maxValue: 2 * growthIdeal + 2,
				target: `≤ 2·log2(${last / first}) + 2`,
			}),
		);
	}
	return figures;
}

export async function benchTrigger(env: BenchEnv): Promise<Figure[]> {
	return [...(await benchCatchUp(env)), ...(await benchNewest(env))];
}
