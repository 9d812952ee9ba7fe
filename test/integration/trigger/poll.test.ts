/**
 * The Image Pack Trigger in real n8n poll contexts (n8n-core 2.41 PollContext, n8n-workflow
 * Workflow and ObservableObject static data) against the API emulator, with static data carried
 * and persisted the way n8n 2.41 does it (test/harness/polling.ts): Fetch Test Event, the start options, faults and the cost of a poll.
 */
import type { IDataObject } from 'n8n-workflow';

import { STATE_VERSION } from '../../../nodes/ImagePack/trigger/state';
import { credentialReads } from '../../harness/n8n';
import { emittedIds, ids, storedBytes, useTrigger } from './helpers';

const { emu, host, listRequests, publish, faultAfter } = useTrigger();

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
			v: STATE_VERSION,
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

	it('an empty account: the first publication after activation is delivered', async () => {
		const poller = host({ startFrom: 'now', includeManifest: false });
		await poller.activate();
		const first = await publish();
		await poller.tick();
		expect(emittedIds(poller.executions)).toEqual([first.id]);
	});
});

describe('start from the beginning / an id', () => {
	it('drains a 10,000-publication backlog 100 per poll by default, one list request per poll, static data < 16 KiB', async () => {
		await emu.control.publishBulk({ count: 10_000, packs: 500 });
		const poller = host({ startFrom: 'beginning', includeManifest: false });
		await poller.activate();
		while ((await poller.tick()).kind === 'emitted');
		const got = emittedIds(poller.executions);
		expect(got).toEqual(Array.from({ length: 10_000 }, (_, i) => i + 1));
		expect(poller.executions.map((items) => items.length)).toEqual(Array(100).fill(100));
		expect(await listRequests()).toBeLessThanOrEqual(100 + 2);
		expect(storedBytes(poller.stored)).toBeLessThan(16 * 1024);
	});

	it('Max Publications per Poll 1,000: 10 executions, one list request per 200 records and one per poll', async () => {
		await emu.control.publishBulk({ count: 10_000, packs: 500 });
		const poller = host({ startFrom: 'beginning', includeManifest: false, maxPerPoll: 1000 });
		await poller.activate();
		while ((await poller.tick()).kind === 'emitted');
		expect(emittedIds(poller.executions)).toEqual(Array.from({ length: 10_000 }, (_, i) => i + 1));
		expect(poller.executions.map((items) => items.length)).toEqual(Array(10).fill(1000));
		expect(await listRequests()).toBeLessThanOrEqual(10_000 / 200 + 10 + 2);
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

	it('a backlog is drained over several polls when the poll time runs out first', async () => {
		await emu.control.publishBulk({ count: 300 });
		await emu.control.setLatency('getPublication', 40);
		const poller = host({ startFrom: 'beginning', maxPerPoll: 1000 }, { budget: 1000 });
		await poller.activate();
		while ((await poller.tick()).kind === 'emitted');
		await emu.control.setLatency('getPublication', 0);
		expect(poller.executions.length).toBeGreaterThan(2);
		expect(emittedIds(poller.executions)).toEqual(Array.from({ length: 300 }, (_, i) => i + 1));
	});
});

describe('faults', () => {
	async function failOnRequest(
		route: 'listPublications' | 'getPublication',
		okBefore: number,
		kind: 'status' | 'reset' = 'status',
	) {
		await faultAfter(route, okBefore, { kind, status: 500, count: kind === 'reset' ? 3 : 1 });
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
			const poller = host({
				startFrom: 'beginning',
				includeManifest: route === 'getPublication',
				maxPerPoll: 1000,
			});
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

describe('cost per poll', () => {
	it('a poll reads the credential once, whatever it sends (n8n builds an isolate per read in a poll)', async () => {
		const poller = host({ startFrom: 'beginning', includeManifest: true, maxPerPoll: 1000 });
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
