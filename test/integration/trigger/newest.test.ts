/**
 * The trigger's newest-publication search (Fetch Test Event and the first "now" activation) against
 * hostile servers, in real n8n poll contexts: a server that ignores since_id, one that answers ids
 * past 2^53, one that is too slow for the poll budget. Every search ends, within MAX_SEARCH_PROBES
 * requests, with an English error that names the server's fault, and stores nothing.
 */
import type { FastifyRequest } from 'fastify';
import { sleep } from 'n8n-workflow';

import { ImagePackTrigger } from '../../../nodes/ImagePack/ImagePackTrigger.node';
import { MAX_SEARCH_PROBES } from '../../../nodes/ImagePack/shared/publications';
import { retryPolicy } from '../../../nodes/ImagePack/transport/limits';
import { LegacyPollerHost } from '../../harness/polling';
import { startScriptedServer, type ScriptedServer } from '../../harness/scripted-server';

const LIST = 'GET /api/v1/image-pack-publications';
const nodeType = new ImagePackTrigger();
const saved = { ...retryPolicy };

let api: ScriptedServer;

beforeAll(async () => {
	api = await startScriptedServer();
	retryPolicy.backoffMs = 1;
});

afterAll(async () => {
	Object.assign(retryPolicy, saved);
	await api.close();
});

beforeEach(() => {
	api.seen.length = 0;
});

const record = (id: number) => ({ id, pack_id: `pk_${id}`, version: 1 });
const sinceOf = (request: FastifyRequest) =>
	Number((request.query as Record<string, string>).since_id ?? 0);
const page = (items: unknown[], since: number) => ({
	items,
	next_since_id: items.length ? (items[items.length - 1] as { id: number }).id : since,
	reread_overlap: 50,
	dedupe_by: ['pack_id', 'version'],
});

function host(budget?: number) {
	return new LegacyPollerHost({
		nodeType,
		parameters: { startFrom: 'now', includeManifest: false },
		credentials: { baseUrl: api.url, apiKey: 'sk_test_hostile' },
		getPollBudgetMs: budget === undefined ? undefined : () => budget,
	});
}

const listRequests = () =>
	api.seen.filter((r) => r.url.startsWith('/api/v1/image-pack-publications'));

describe('newest-publication search against hostile servers', () => {
	const servers: Array<[string, (since: number) => unknown[], RegExp]> = [
		['always returns the same record (ignores since_id)', () => [record(7)], /ignores since_id/],
		[
			'always returns the record just above since_id',
			(since) => [record(since + 1)],
			/ignores since_id/,
		],
		['returns ids past 2^53', (since) => [record(since * 8 + 1)], /ignores since_id/],
		[
			'returns a record at since_id itself',
			(since) => [record(Math.max(1, since))],
			/ignores since_id/,
		],
	];

	it.each(servers)(
		'a server that %s: Fetch Test Event and the "now" activation stop with a server-fault error',
		async (_name, answer, message) => {
			api.script(LIST, (request) => page(answer(sinceOf(request)), sinceOf(request)));
			const poller = host();
			await expect(poller.fetchTestEvent()).rejects.toThrow(message);
			expect(listRequests().length).toBeLessThanOrEqual(MAX_SEARCH_PROBES);
			api.seen.length = 0;
			const activation = poller.activate();
			await expect(activation).rejects.toThrow(/fault of the server/);
			expect(listRequests().length).toBeLessThanOrEqual(MAX_SEARCH_PROBES);
			expect(poller.stored).toBe('{}'); // a failed activation stores nothing
		},
	);

	it('a server too slow for the poll budget: the activation search ends by the poll deadline', async () => {
		let answered = 0;
		api.script(LIST, async (request) => {
			answered++;
			await sleep(120);
			const since = sinceOf(request);
			return page(since < 1_000_000_000 ? [record(since + 1)] : [], since);
		});
		const started = Date.now();
		// It stops between requests once the time is up, or its last request is cut at the deadline.
		await expect(host(500).activate()).rejects.toThrow(
			/ran out of the poll's time after \d requests|did not answer within 0\.\d seconds/,
		);
		expect(Date.now() - started).toBeLessThan(800); // the budget, and the activation around the poll
		expect(answered).toBeLessThanOrEqual(4);
	});

	it('a well-behaved server with ids near 2^53: the newest is found', async () => {
		const newest = Number.MAX_SAFE_INTEGER - 3;
		api.script(LIST, (request) => {
			const since = sinceOf(request);
			return page(since < newest ? [record(since < 5 ? 5 : newest)] : [], since);
		});
		const { result } = await host().fetchTestEvent();
		expect(result![0][0].json.id).toBe(newest);
		expect(listRequests().length).toBeLessThanOrEqual(MAX_SEARCH_PROBES);
	});
});
