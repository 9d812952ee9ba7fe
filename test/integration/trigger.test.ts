/**
 * The Image Pack Trigger in real n8n poll contexts (n8n-core 2.41 PollContext, n8n-workflow
 * Workflow and ObservableObject static data) against the API emulator, with static data carried
 * and persisted the way n8n 2.41 does it (test/harness/polling.ts).
 */
import type { IDataObject, INodeExecutionData, INodeParameters } from 'n8n-workflow';
import { sleep } from 'n8n-workflow';

import { ImagePackTrigger, MAX_PAGES_PER_POLL } from '../../nodes/ImagePack/ImagePackTrigger.node';
import { hash53 } from '../../nodes/ImagePack/shared/cursor';
import type { PublicationView } from '../emulator';
import { useEmulator } from '../harness/emulator';
import { credentialReads } from '../harness/n8n';
import {
	DurablePollerHost,
	LegacyPollerHost,
	mulberry32,
	type PollOutcome,
} from '../harness/polling';

const nodeType = new ImagePackTrigger();
const OVERLAP = 50;

const emu = useEmulator({ backoffMs: 1, maxRetryAfterSeconds: 1 });

const credentials = () => ({ baseUrl: emu.baseUrl, apiKey: emu.apiKey });

function host(
	parameters: INodeParameters,
	extra: { stored?: string; nodeName?: string; budget?: number } = {},
) {
	return new LegacyPollerHost({
		nodeType,
		parameters,
		credentials: credentials(),
		stored: extra.stored,
		nodeName: extra.nodeName,
		getPollBudgetMs: extra.budget === undefined ? undefined : () => extra.budget!,
	});
}

const ids = (items: INodeExecutionData[]) => items.map((item) => item.json.id as number);
const emittedIds = (executions: INodeExecutionData[][]) => executions.flatMap(ids);
const listRequests = async () => (await emu.control.requests({ route: 'listPublications' })).length;
const storedBytes = (stored: string) => Buffer.byteLength(stored);

/** Publishes through the global sequence; `commit: false` keeps it pending (a late commit). */
async function publish(accountId?: string, packId?: string, commit = true) {
	return await emu.control.publish({ accountId, packId, commit });
}

function expectOrderedBatches(executions: INodeExecutionData[][]) {
	for (const items of executions) {
		const batch = ids(items);
		expect(batch).toEqual([...batch].sort((a, b) => a - b));
	}
}

/**
 * Every visible publication delivered exactly once: of the ids that list one publication
 * (`keyOf`; undefined = an id of its own), exactly one is delivered, and nothing else.
 */
function expectOncePerPublication(
	delivered: number[],
	visible: number[],
	keyOf: (id: number) => string | undefined,
) {
	const ids = new Map<string, number[]>();
	for (const id of visible) {
		const key = keyOf(id) ?? `#${id}`;
		ids.set(key, [...(ids.get(key) ?? []), id]);
	}
	const got = new Set(delivered);
	const problems = [...ids]
		.map(([key, list]) => [key, list.filter((id) => got.has(id))] as const)
		.filter(([, hits]) => hits.length !== 1)
		.map(([key, hits]) => `${key} delivered ${hits.length} times (ids ${hits.join(', ')})`);
	const visibleIds = new Set(visible);
	problems.push(
		...delivered.filter((id) => !visibleIds.has(id)).map((id) => `id ${id} not visible`),
	);
	if (got.size !== delivered.length) problems.push('an id delivered twice');
	expect(problems).toEqual([]);
}

describe('Fetch Test Event (manual mode)', () => {
	it('returns the newest publication with its manifest, in O(log max id) requests, touching no state', async () => {
		const other = await emu.control.createAccount();
		await emu.control.publishBulk({ count: 30_000 });
		await emu.control.publishBulk({ accountId: other.accountId, count: 5_000 });
		const newest = await publish(undefined, 'pk_newest');
		await emu.control.publishBulk({ accountId: other.accountId, count: 100 });
		const poller = host({ startFrom: 'now', includeManifest: true });
		poller.stored = JSON.stringify({ 'node:Image Pack Trigger': { v: 1, poison: true } });
		await emu.control.clearRequests();
		const { result, staticData } = await poller.fetchTestEvent();
		expect(result).toHaveLength(1);
		expect(result![0]).toHaveLength(1);
		const item = result![0][0].json;
		expect(item.id).toBe(newest.id);
		expect(item.pack_id).toBe('pk_newest');
		expect((item.manifest as IDataObject).schemaVersion).toBe(3);
		expect(staticData).toEqual({ 'node:Image Pack Trigger': { v: 1, poison: true } });
		const requests = await listRequests();
		expect(requests).toBeLessThanOrEqual(2 * Math.ceil(Math.log2(newest.id)) + 3);
		expect(
			(await emu.control.requests({ route: 'listPublications' })).every(
				(r) => r.query.limit === '1',
			),
		).toBe(true);
	});

	it('without manifest: the record only', async () => {
		await publish();
		const last = await publish();
		const { result } = await host({ includeManifest: false }).fetchTestEvent();
		expect(result![0][0].json).not.toHaveProperty('manifest');
		expect(result![0][0].json.id).toBe(last.id);
		expect(await emu.control.requests({ route: 'getPublication' })).toHaveLength(0);
	});

	it('a clear error when the account has no publications', async () => {
		const other = await emu.control.createAccount();
		await emu.control.publishBulk({ accountId: other.accountId, count: 10 });
		await expect(host({}).fetchTestEvent()).rejects.toThrow('This account has no publications yet');
	});
});

describe('start from "now"', () => {
	it('activation finds the high-water mark in O(log max id) requests, emits nothing, stores it', async () => {
		await emu.control.publishBulk({ count: 50_000 });
		const poller = host({ startFrom: 'now' });
		await emu.control.clearRequests();
		expect(await poller.activate()).toEqual({ kind: 'null' });
		expect(await listRequests()).toBeLessThanOrEqual(2 * Math.ceil(Math.log2(50_000)) + 4);
		expect(poller.executions).toEqual([]);
		// Saved at activation even though the poll returned null.
		expect(JSON.parse(poller.stored)['node:Image Pack Trigger']).toMatchObject({
			v: 2,
			cursor: 50_000,
		});

		const a = await publish();
		const b = await publish();
		const outcome = await poller.tick();
		expect(outcome.kind).toBe('emitted');
		expect(emittedIds(poller.executions)).toEqual([a.id, b.id]);
		expect((poller.executions[0][0].json.manifest as IDataObject).schemaVersion).toBe(3);
		expect(await poller.tick()).toEqual({ kind: 'null' });
	});

	it('a publication that commits late inside the window after activation is still delivered', async () => {
		await emu.control.publishBulk({ count: 100 });
		const late = await publish(undefined, undefined, false);
		await publish();
		const poller = host({ startFrom: 'now', includeManifest: false });
		await poller.activate();
		await emu.control.commitPublication(late.id);
		await poller.tick();
		expect(emittedIds(poller.executions)).toEqual([late.id]);
	});

	it('an empty account: the first publication after activation is delivered', async () => {
		const poller = host({ startFrom: 'now', includeManifest: false });
		await poller.activate();
		const first = await publish();
		await poller.tick();
		expect(emittedIds(poller.executions)).toEqual([first.id]);
	});
});

describe('start from the beginning / an id', () => {
	it('drains a 10,000-publication backlog at one list request per 200 records, static data < 16 KiB', async () => {
		await emu.control.publishBulk({ count: 10_000, packs: 500 });
		const poller = host({ startFrom: 'beginning', includeManifest: false });
		await poller.activate();
		for (let i = 0; i < 3; i++) await poller.tick();
		const got = emittedIds(poller.executions);
		expect(got).toHaveLength(10_000);
		expect(new Set(got).size).toBe(10_000);
		expectOrderedBatches(poller.executions);
		expect(await listRequests()).toBeLessThanOrEqual(Math.ceil(10_000 / 200) + 2 + 3);
		expect(storedBytes(poller.stored)).toBeLessThan(16 * 1024);
	});

	it('attaches manifests in order, one detail request per publication', async () => {
		const published = [];
		for (let i = 0; i < 9; i++) published.push(await publish(undefined, `pk_${i % 3}`));
		const poller = host({ startFrom: 'beginning' });
		await poller.activate();
		expect(ids(poller.executions[0])).toEqual(published.map((p) => p.id));
		for (const item of poller.executions[0]) {
			expect(item.json.manifest).toBeDefined();
			expect(item.json.version).toBeGreaterThanOrEqual(1);
		}
		expect(await emu.control.requests({ route: 'getPublication' })).toHaveLength(9);
	});

	it('start after an id: only later publications, never earlier ones re-read in the overlap', async () => {
		const all = [];
		for (let i = 0; i < 20; i++) all.push(await publish());
		const poller = host({ startFrom: 'id', startId: all[9].id, includeManifest: false });
		await poller.activate();
		await publish();
		await poller.tick();
		expect(emittedIds(poller.executions)).toEqual([
			...all.slice(10).map((p) => p.id),
			all[19].id + 1,
		]);
	});

	it('a huge backlog is drained over several polls when the poll budget runs out', async () => {
		await emu.control.publishBulk({ count: 3_000 });
		const poller = host({ startFrom: 'beginning', includeManifest: false }, { budget: 1 });
		await poller.activate();
		for (let i = 0; i < 40; i++) await poller.tick();
		expect(poller.executions.length).toBeGreaterThan(1);
		const got = emittedIds(poller.executions);
		expect(got).toEqual(Array.from({ length: 3_000 }, (_, i) => i + 1));
	});

	it('more than MAX_PAGES_PER_POLL pages wait for the next poll', async () => {
		await emu.control.publishBulk({ count: MAX_PAGES_PER_POLL * 200 + 300 });
		const poller = host({ startFrom: 'beginning', includeManifest: false });
		await poller.activate();
		expect(poller.executions[0]).toHaveLength(MAX_PAGES_PER_POLL * 200);
		await poller.tick();
		expect(emittedIds(poller.executions)).toHaveLength(MAX_PAGES_PER_POLL * 200 + 300);
	});
});

describe('faults', () => {
	async function failOnRequest(
		route: 'listPublications' | 'getPublication',
		okBefore: number,
		kind: 'status' | 'reset' = 'status',
	) {
		if (okBefore > 0)
			await emu.control.injectFault({
				route,
				kind: 'slow',
				when: 'before',
				delayMs: 1,
				count: okBefore,
			});
		await emu.control.injectFault({ route, kind, status: 500, count: kind === 'reset' ? 3 : 1 });
	}

	it.each([
		['a list page (500)', 'listPublications', 2, 'status'],
		['a list page (connection reset, retries exhausted)', 'listPublications', 1, 'reset'],
		['a manifest', 'getPublication', 250, 'status'],
	] as const)(
		'an error on %s mid-poll throws and leaves the state exactly as before',
		async (_name, route, okBefore, kind) => {
			await emu.control.publishBulk({ count: 100 });
			// Manifests are read page by page, so only the manifest case needs them.
			const poller = host({ startFrom: 'beginning', includeManifest: route === 'getPublication' });
			await poller.activate();
			const backlog = route === 'getPublication' ? 300 : 700;
			await emu.control.publishBulk({ count: backlog });
			const storedBefore = poller.stored;
			const memoryBefore = JSON.stringify(poller.memory());
			await failOnRequest(route, okBefore, kind);
			const outcome = await poller.tick();
			expect(outcome.kind).toBe('error');
			expect(poller.stored).toBe(storedBefore);
			expect(JSON.stringify(poller.memory())).toBe(memoryBefore);
			await poller.tick();
			expect(emittedIds(poller.executions)).toEqual(
				Array.from({ length: 100 + backlog }, (_, i) => i + 1),
			);
		},
		60_000,
	);

	it('a failing activation poll fails the activation and stores nothing', async () => {
		await publish();
		await emu.control.injectFault({ route: 'listPublications', kind: 'status', status: 500 });
		const poller = host({ startFrom: 'now' });
		await expect(poller.activate()).rejects.toThrow();
		expect(poller.stored).toBe('{}');
	});

	it('429 rate_limited is waited out (Retry-After) and the poll succeeds', async () => {
		await emu.control.publishBulk({ count: 5 });
		await emu.control.injectFault({
			route: 'listPublications',
			kind: 'status',
			status: 429,
			code: 'rate_limited',
			retryAfter: 0,
			count: 2,
		});
		const poller = host({ startFrom: 'beginning', includeManifest: false });
		await poller.activate();
		expect(emittedIds(poller.executions)).toEqual([1, 2, 3, 4, 5]);
	});
});

describe('overlap, restarts, parameters', () => {
	it('a poll that starts while the previous one is still running does not emit the same publications', async () => {
		await publish();
		const poller = host({ startFrom: 'beginning', includeManifest: false });
		await poller.activate();
		for (let i = 0; i < 30; i++) await publish();
		await emu.control.setLatency('listPublications', 100);
		const outcomes = await Promise.all([poller.tick(), poller.tick(), poller.tick()]);
		await emu.control.setLatency('listPublications', 0);
		expect(outcomes.filter((o) => o.kind === 'emitted')).toHaveLength(1);
		await poller.tick();
		expect(emittedIds(poller.executions)).toEqual(Array.from({ length: 31 }, (_, i) => i + 1));
	});

	it('a state saved by the previous release (version 1) continues: nothing lost, nothing again', async () => {
		const long = `pk_${'x'.repeat(30)}`; // its version 1 key was stored as a hash
		for (let id = 1; id <= 118; id++) await publish(undefined, id === 100 ? long : undefined);
		const late = await publish(undefined, undefined, false);
		await publish();
		// What e7dcad1's trigger saved after delivering 1..118 and 120 (window above 120 - 50).
		const seen: Record<string, number> = {};
		for (let id = 71; id <= 120; id++) {
			if (id === late.id) continue;
			const { pack_id, version } = await emu.control.getPublication(id);
			const key = `${pack_id}@${version}`;
			seen[key.length <= 24 ? key : `#${hash53(key)}`] = id;
		}
		const queryKey = `beginning|${hash53(emu.baseUrl.toLowerCase())}`;
		const v1 = { v: 1, queryKey, start: 70, cursor: 120, overlap: 50, seen, rev: 4 };
		const poller = host(
			{ startFrom: 'beginning', includeManifest: false },
			{ stored: JSON.stringify({ 'node:Image Pack Trigger': v1 }) },
		);
		await emu.control.commitPublication(late.id);
		await emu.control.repeatPublication(100); // the long-keyed publication listed again
		const next = await publish();
		await poller.activate();
		await poller.tick();
		expect(emittedIds(poller.executions)).toEqual([late.id, next.id]);
		expect(JSON.parse(poller.stored)['node:Image Pack Trigger']).toMatchObject({ v: 2 });
	});

	it('changes made by polls that returned null are not stored; a restart re-reads and dedupes', async () => {
		await emu.control.publishBulk({ count: 120 });
		const poller = host({ startFrom: 'beginning', includeManifest: false });
		await poller.activate();
		const storedAfterEmit = poller.stored;
		await poller.tick(); // null: nothing stored
		expect(poller.stored).toBe(storedAfterEmit);
		await poller.restart();
		await poller.tick();
		expect(emittedIds(poller.executions)).toEqual(Array.from({ length: 120 }, (_, i) => i + 1));
	});

	it('changing Start From (or Start ID) starts over; Include Manifest does not', async () => {
		for (let i = 0; i < 10; i++) await publish();
		const poller = host({ startFrom: 'beginning', includeManifest: false });
		await poller.activate();
		expect(emittedIds(poller.executions)).toHaveLength(10);
		await poller.update({ startFrom: 'beginning', includeManifest: true });
		await poller.tick();
		expect(emittedIds(poller.executions)).toHaveLength(10);
		await poller.update({ startFrom: 'id', startId: 7, includeManifest: false });
		expect(emittedIds(poller.executions).slice(10)).toEqual([8, 9, 10]);
		await poller.update({ startFrom: 'now', includeManifest: false });
		await publish();
		await poller.tick();
		expect(emittedIds(poller.executions).slice(13)).toEqual([11]);
	});

	it('state is kept per node name: a renamed node starts fresh ("now": no flood)', async () => {
		for (let i = 0; i < 10; i++) await publish();
		const poller = host({ startFrom: 'now', includeManifest: false });
		await poller.activate();
		await poller.update({ startFrom: 'now', includeManifest: false }, 'Renamed');
		await poller.tick();
		expect(poller.executions).toEqual([]);
		expect(Object.keys(JSON.parse(poller.stored))).toEqual(
			expect.arrayContaining(['node:Renamed']),
		);
	});

	it("n8n's durable-cursor path (staged copy per poll) delivers exactly once too", async () => {
		const durable = new DurablePollerHost({
			nodeType,
			parameters: { startFrom: 'beginning', includeManifest: false },
			credentials: credentials(),
		});
		await emu.control.publishBulk({ count: 30 });
		await durable.activate();
		const late = await publish(undefined, undefined, false);
		await publish();
		await durable.tick();
		await emu.control.commitPublication(late.id);
		await durable.tick();
		await durable.tick();
		const got = emittedIds(durable.executions);
		expect([...got].sort((a, b) => a - b)).toEqual(Array.from({ length: 32 }, (_, i) => i + 1));
		expect(new Set(got).size).toBe(32);
	});
});

describe('the same publication listed under two ids', () => {
	it('regression: read in one window, the first id leaves it, the second is re-read', async () => {
		// Ours: ids 1..100, where id 70 lists the publication of id 10 again.
		await publish();
		for (let id = 2; id <= 100; id++) {
			if (id === 70) await emu.control.repeatPublication(10);
			else await publish();
		}
		const poller = host({ startFrom: 'beginning', includeManifest: false });
		await poller.activate();
		await poller.restart();
		const last = await publish();
		await poller.tick();
		await poller.tick();
		const want = Array.from({ length: 100 }, (_, i) => i + 1).filter((id) => id !== 70);
		expect(emittedIds(poller.executions)).toEqual([...want, last.id]);
	});

	// Every distance in between is covered by the pure cursor's tests (test/unit/cursor.test.ts).
	const distances = [1, 50, 51, 201, 400];
	it.each(distances)(
		'distance %i: both visible or either committed late, with and without manifests, restarts',
		async (distance) => {
			for (const late of ['none', 'first', 'second'] as const) {
				await emu.control.reset();
				const includeManifest = late === 'second';
				const poller = host({ startFrom: 'beginning', includeManifest });
				const restart = distance % 2 === 1;
				const tick = async () => {
					if (restart) await poller.restart();
					await poller.tick();
				};
				await emu.control.publishBulk({ count: 20 });
				await poller.activate();
				const first = await publish(undefined, undefined, late !== 'first');
				// The contract: a pending id stays within the overlap of the newest visible id.
				const before = Math.min(distance - 1, OVERLAP - 10);
				if (before) await emu.control.publishBulk({ count: before });
				await tick();
				if (late === 'first') await emu.control.commitPublication(first.id);
				if (distance - 1 > before) await emu.control.publishBulk({ count: distance - 1 - before });
				const copy = await emu.control.repeatPublication(first.id, { commit: late !== 'second' });
				expect(copy.id - first.id).toBe(distance);
				await emu.control.publishBulk({ count: 30 });
				await tick();
				if (late === 'second') await emu.control.commitPublication(copy.id);
				await publish();
				for (let i = 0; i < 3; i++) await tick();
				const all = Array.from({ length: copy.id + 31 }, (_, i) => i + 1);
				const got = emittedIds(poller.executions);
				expectOncePerPublication(got, all, (id) => (id === copy.id ? `#${first.id}` : undefined));
				expectOrderedBatches(poller.executions);
			}
		},
		60_000,
	);
});

describe('two polls of one trigger at once (the poll guard)', () => {
	const durableHost = (budget = 400) =>
		new DurablePollerHost({
			nodeType,
			parameters: { startFrom: 'beginning', includeManifest: true },
			credentials: credentials(),
			getPollBudgetMs: () => budget,
		});
	const all = (count: number) => Array.from({ length: count }, (_, i) => i + 1);
	const expectOnce = (executions: INodeExecutionData[][], count: number) => {
		const got = emittedIds(executions);
		expect(got).toHaveLength(new Set(got).size);
		expect([...got].sort((a, b) => a - b)).toEqual(all(count));
	};
	/** Timed polls until `count` publications are delivered (or a bound on polls is reached). */
	async function drain(poller: DurablePollerHost, count: number) {
		for (let polls = 0; polls < 200 && emittedIds(poller.executions).length < count; polls++) {
			await poller.tick();
			await poller.settle();
		}
	}

	it('durable: two polls with their own state copies at once, one delivers, the other waits and skips', async () => {
		await emu.control.publishBulk({ count: 120 });
		await emu.control.setLatency('getPublication', 15);
		const poller = durableHost();
		const outcomes = await Promise.all([poller.tick(), poller.tick()]);
		await poller.settle();
		expect(outcomes.map((outcome) => outcome.kind).sort()).toEqual(['emitted', 'null']);
		await drain(poller, 120);
		await emu.control.setLatency('getPublication', 0);
		expectOnce(poller.executions, 120);
		expect(poller.executions.length).toBeGreaterThan(1); // the budget cut the backlog into polls
	});

	it('durable: a poll handed a cursor older than this process delivered skips until n8n commits it', async () => {
		await emu.control.publishBulk({ count: 40 });
		const poller = durableHost(60_000);
		let land = () => {};
		poller.commitDelay = async () => await new Promise<void>((resolve) => (land = resolve));
		expect((await poller.tick()).kind).toBe('emitted'); // its commit has not landed yet
		await emu.control.publishBulk({ count: 5 });
		const before = await listRequests();
		expect((await poller.tick()).kind).toBe('null'); // same old cursor: would re-deliver 40
		expect(await listRequests()).toBe(before); // skipped before any request
		land();
		poller.commitDelay = async () => {};
		await poller.settle();
		await drain(poller, 45);
		expectOnce(poller.executions, 45);
	});

	it('durable: after a restart, the retried poll and the next scheduled one (same cursor) deliver once', async () => {
		await emu.control.publishBulk({ count: 150 });
		await emu.control.setLatency('getPublication', 15);
		const poller = durableHost();
		const interrupted = poller.tick(); // the process dies while this poll runs
		await sleep(0);
		poller.restart();
		const [retried, scheduled] = await Promise.all([poller.tick(), poller.tick()]);
		expect([retried.kind, scheduled.kind].sort()).toEqual(['emitted', 'null']);
		expect((await interrupted).kind).toBe('null'); // its process is gone: never committed
		await poller.settle();
		await drain(poller, 150);
		await emu.control.setLatency('getPublication', 0);
		expectOnce(poller.executions, 150);
	});

	it('durable: a re-published (pack_id, version) and a late commit among overlapping polls, each once', async () => {
		await emu.control.publishBulk({ count: 60 });
		const first = await publish(undefined, 'pk_repub');
		const late = await publish(undefined, undefined, false);
		await emu.control.publishBulk({ count: 30 });
		await emu.control.setLatency('getPublication', 10);
		const poller = durableHost();
		await Promise.all([poller.tick(), poller.tick(), poller.tick()]);
		await poller.settle();
		await emu.control.repeatPublication(first.id); // same key, new id
		await emu.control.commitPublication(late.id);
		await Promise.all([poller.tick(), poller.tick()]);
		await poller.settle();
		await drain(poller, 92);
		for (let i = 0; i < 3; i++) await Promise.all([poller.tick(), poller.tick()]);
		await poller.settle();
		await emu.control.setLatency('getPublication', 0);
		const got = poller.executions
			.flat()
			.map((item) => `${item.json.pack_id as string}@${item.json.version as number}`);
		expect(got).toHaveLength(new Set(got).size); // (pack_id, version) delivered once
		expect(got.filter((key) => key.startsWith('pk_repub'))).toEqual(['pk_repub@1']);
		expect(got).toHaveLength(92); // 91 + the late one; the re-publication is not delivered again
		expect(emittedIds(poller.executions)).toContain(late.id);
	});

	it('legacy: polls fired during a running poll end after it, so they never take its expression engine', async () => {
		const poller = host({ startFrom: 'beginning', includeManifest: true });
		await poller.activate(); // an empty account: nothing yet
		await emu.control.publishBulk({ count: 80 });
		await emu.control.setLatency('getPublication', 10);
		const ended: string[] = [];
		const first = poller.tick().then((outcome) => ended.push(`first:${outcome.kind}`));
		await sleep(0);
		const second = poller.tick().then((outcome) => ended.push(`second:${outcome.kind}`));
		await Promise.all([first, second]);
		await emu.control.setLatency('getPublication', 0);
		expect(ended).toEqual(['first:emitted', 'second:null']);
		expect(emittedIds(poller.executions)).toEqual(all(80));
	});

	it('legacy: a poll whose expression engine n8n took away delivers what it completed, then reports it as such', async () => {
		const poller = host({ startFrom: 'beginning', includeManifest: true });
		await poller.activate();
		await emu.control.publishBulk({ count: 60 });
		let details = 0;
		await emu.control.setLatency('getPublication', 5);
		const watching = (async () => {
			while (details < 20)
				details = (await emu.control.requests({ route: 'getPublication' })).length;
			poller.releaseExpressionEngine();
		})();
		const outcome = await poller.tick();
		await watching;
		await emu.control.setLatency('getPublication', 0);
		expect(outcome.kind).toBe('emitted');
		const delivered = emittedIds(poller.executions);
		expect(delivered.length).toBeGreaterThanOrEqual(16);
		expect(delivered.length).toBeLessThan(60);
		expect(delivered).toEqual(all(delivered.length)); // a complete prefix, in order

		// Torn down before anything was complete: a clear error, not "the connection … failed".
		poller.releaseExpressionEngine();
		const failed = await poller.tick();
		expect(failed.kind).toBe('error');
		const error = (failed as { error: Error }).error;
		expect(error.message).toMatch(/n8n ended this poll before it finished/);
		expect(error.name).toBe('NodeOperationError'); // not the transport's NodeApiError
		expect(error.message).not.toMatch(/connection to the Image Pack API failed/);
		await poller.restart();
		await poller.tick();
		expect(emittedIds(poller.executions).sort((a, b) => a - b)).toEqual(all(60));
	});
});

describe('randomized: hundreds of polls against the emulator (seeded)', () => {
	/**
	 * Publishers allocate ids from the global sequence and commit them in random order, within the
	 * API's promise: an id still pending when a newer one becomes visible stays within
	 * reread_overlap of the newest visible id (older pending ids are committed first).
	 */
	class Publishers {
		readonly pending: number[] = [];
		readonly committed = new Map<number, string>(); // id -> account
		maxVisible = 0;

		constructor(private readonly random: () => number) {}

		readonly owner = new Map<number, string>();
		/** id -> `pack_id@version`: one publication may be listed under several ids. */
		readonly key = new Map<number, string>();

		async allocate(accountId: string, packId?: string): Promise<number> {
			return this.track(await emu.control.publish({ accountId, packId, commit: false }));
		}

		/** The publication `id` listed again under the next id (pending until committed). */
		async repeat(id: number): Promise<number> {
			return this.track(await emu.control.repeatPublication(id, { commit: false }));
		}

		private track(record: PublicationView): number {
			this.pending.push(record.id);
			this.owner.set(record.id, record.accountId);
			this.key.set(record.id, `${record.pack_id}@${record.version}`);
			return record.id;
		}

		async commit(id: number): Promise<void> {
			const floor = Math.max(this.maxVisible, id) - OVERLAP;
			for (const other of [...this.pending].sort((a, b) => a - b)) {
				if (other !== id && other <= floor) await this.reveal(other);
			}
			await this.reveal(id);
		}

		private async reveal(id: number): Promise<void> {
			const at = this.pending.indexOf(id);
			if (at === -1) return;
			this.pending.splice(at, 1);
			await emu.control.commitPublication(id);
			this.committed.set(id, this.owner.get(id)!);
			this.maxVisible = Math.max(this.maxVisible, id);
		}

		async commitRandom(): Promise<void> {
			if (this.pending.length)
				await this.commit(this.pending[Math.floor(this.random() * this.pending.length)]);
		}

		async commitAll(): Promise<void> {
			while (this.pending.length) await this.commit(this.pending[0]);
		}

		of(accountId: string): number[] {
			return [...this.committed]
				.filter(([, account]) => account === accountId)
				.map(([id]) => id)
				.sort((a, b) => a - b);
		}
	}

	/** A failed activation is retried by n8n later; here: once the faults are gone. */
	async function activateWithRetry(activate: () => Promise<PollOutcome>) {
		try {
			await activate();
		} catch {
			await emu.control.clearFaults();
			await activate();
		}
	}

	async function scenario(seed: number, polls: number) {
		const random = mulberry32(seed);
		const other = await emu.control.createAccount();
		const me = emu.accountId;
		const publishers = new Publishers(random);
		const packs = ['pk_repeat_a', 'pk_repeat_b', 'pk_repeat_c'];
		let includeManifest = random() < 0.5;
		const poller = host({ startFrom: 'beginning', includeManifest });
		await poller.activate();
		let maxStored = 0;
		let faults = 0;
		let restarts = 0;

		for (let step = 0; step < polls; step++) {
			const roll = random();
			const actions = roll < 0.3 ? 0 : Math.floor(random() * 5);
			for (let i = 0; i < actions; i++) {
				const what = random();
				if (what < 0.45) {
					const account = random() < 0.7 ? me : other.accountId;
					const pack =
						account === me && random() < 0.3
							? packs[Math.floor(random() * packs.length)]
							: undefined;
					const id = await publishers.allocate(account, pack);
					if (random() < 0.6) await publishers.commit(id);
				} else if (what < 0.75) {
					await publishers.commitRandom();
				} else if (what < 0.8) {
					// One of ours listed again under a new id, 1 to 400 ids after the first one.
					const span = [1, 3, 20, 50, 51, 120, 400][Math.floor(random() * 7)];
					const newest = Math.max(0, ...publishers.owner.keys());
					const near = [...publishers.owner]
						.filter(([id, account]) => account === me && id > newest - span)
						.map(([id]) => id);
					if (near.length) {
						const copy = await publishers.repeat(near[Math.floor(random() * near.length)]);
						if (random() < 0.6) await publishers.commit(copy);
					}
				} else if (what < 0.85) {
					// A burst from other accounts and ours (several pages).
					await publishers.commitAll();
					const account = random() < 0.5 ? me : other.accountId;
					const { firstId, lastId } = await emu.control.publishBulk({
						accountId: account,
						count: 1 + Math.floor(random() * 500),
					});
					for (let id = firstId; id <= lastId; id++) publishers.committed.set(id, account);
					publishers.maxVisible = lastId;
				}
			}
			const event = random();
			if (event < 0.06) {
				faults++;
				const route = includeManifest && random() < 0.5 ? 'getPublication' : 'listPublications';
				const okBefore = Math.floor(random() * 3);
				if (okBefore)
					await emu.control.injectFault({
						route,
						kind: 'slow',
						when: 'before',
						delayMs: 1,
						count: okBefore,
					});
				await emu.control.injectFault({
					route,
					kind: random() < 0.5 ? 'status' : 'reset',
					status: 500,
					count: 3,
				});
			} else if (event < 0.1) {
				restarts++;
				await activateWithRetry(() => poller.restart());
			} else if (event < 0.13) {
				includeManifest = !includeManifest;
				await activateWithRetry(() => poller.update({ startFrom: 'beginning', includeManifest }));
			}
			const outcome: PollOutcome = await poller.tick();
			if (outcome.kind === 'error') await emu.control.clearFaults();
			maxStored = Math.max(
				maxStored,
				storedBytes(poller.stored),
				storedBytes(JSON.stringify(poller.memory())),
			);
		}
		await emu.control.clearFaults();
		await publishers.commitAll();
		for (let i = 0; i < 5; i++) await poller.tick();

		const got = emittedIds(poller.executions);
		expectOncePerPublication(got, publishers.of(me), (id) => publishers.key.get(id));
		expectOrderedBatches(poller.executions);
		expect(maxStored).toBeLessThan(16 * 1024);
		return { delivered: got.length, faults, restarts, errors: poller.errors.length };
	}

	it.each([11, 12, 13])(
		'seed %i: every publication exactly once, in order, static data < 16 KiB',
		async (seed) => {
			const stats = await scenario(seed, 150);
			expect(stats.delivered).toBeGreaterThan(50);
			expect(stats.errors).toBeGreaterThan(0);
		},
		60_000,
	);
});

describe('cost per poll', () => {
	it('a poll reads the credential once, whatever it sends (n8n builds an isolate per read in a poll)', async () => {
		const poller = host({ startFrom: 'beginning', includeManifest: true });
		await emu.control.publishBulk({ count: 450 });
		await emu.control.clearRequests();
		credentialReads.count = 0;
		const outcome = await poller.activate();
		expect(outcome.kind === 'emitted' && outcome.items).toHaveLength(450);
		expect(await listRequests()).toBeGreaterThanOrEqual(3);
		expect(await emu.control.requests({ route: 'getPublication' })).toHaveLength(450);
		expect(credentialReads.count).toBe(1);
	});
});
