/**
 * What one poll of the Image Pack Trigger may cost, in real n8n poll contexts against the emulator:
 * at most Max Publications per Poll and MAX_POLL_CHARS of JSON (at least one publication however
 * large), and no request or Retry-After wait outlasting the poll's deadline. What a cut poll
 * completed is delivered, the rest follows on the next polls, each publication once.
 */
import { MANIFEST_CONCURRENCY, MAX_POLL_CHARS } from '../../../nodes/ImagePack/trigger/read';
import { emittedIds, expectOrderedBatches, range, useTrigger } from './helpers';

// Retry-After waits up to 60 s are allowed here: only the poll's own time may cut them.
const { emu, host, listRequests, publish, faultAfter } = useTrigger({
	backoffMs: 1,
	maxRetryAfterSeconds: 60,
});

const detailRequests = async () => await emu.control.requests({ route: 'getPublication' });

describe('Max Publications per Poll', () => {
	it('each poll delivers at most that many, oldest first; the rest follow, each once, manifests read once', async () => {
		await emu.control.publishBulk({ count: 61 });
		const poller = host({ startFrom: 'beginning', maxPerPoll: 25 });
		await poller.activate();
		while ((await poller.tick()).kind === 'emitted');
		expect(poller.executions.map((items) => items.length)).toEqual([25, 25, 11]);
		expect(emittedIds(poller.executions)).toEqual(range(1, 61));
		expectOrderedBatches(poller.executions);
		expect(poller.executions.flat().every((item) => item.json.manifest)).toBe(true);
		expect(await detailRequests()).toHaveLength(61);
		expect(await listRequests()).toBeLessThanOrEqual(3 + 2);
	});

	it('without manifests too; a value outside 1–1,000 fails the poll naming it, before any request', async () => {
		await emu.control.publishBulk({ count: 30 });
		const refused = host({ startFrom: 'beginning', includeManifest: false, maxPerPoll: 0 });
		await emu.control.clearRequests();
		await expect(refused.activate()).rejects.toThrow(
			'Max Publications per Poll "0" is not allowed. Allowed values: whole numbers from 1 to 1000',
		);
		expect(await emu.control.requests()).toEqual([]);
		const poller = host({ startFrom: 'beginning', includeManifest: false, maxPerPoll: 7 });
		await poller.activate();
		while ((await poller.tick()).kind === 'emitted');
		expect(poller.executions.map((items) => items.length)).toEqual([7, 7, 7, 7, 2]);
		expect(emittedIds(poller.executions)).toEqual(range(1, 30));
	});
});

describe('the size of a poll', () => {
	it(`at most ${MAX_POLL_CHARS} characters of JSON per poll, and a larger publication alone`, async () => {
		// About 1.5 M characters each: two fit in a poll.
		await emu.control.publishBulk({ count: 5, images: 12, noteChars: 1_500_000 });
		// More than the bound on its own: delivered alone, never stuck.
		await emu.control.publishBulk({ count: 1, images: 12, noteChars: MAX_POLL_CHARS + 1000 });
		await emu.control.publishBulk({ count: 3, images: 12 });
		const poller = host({ startFrom: 'beginning' });
		await poller.activate();
		while ((await poller.tick()).kind === 'emitted');
		expect(poller.executions.map((items) => items.length)).toEqual([2, 2, 1, 1, 3]);
		expect(emittedIds(poller.executions)).toEqual(range(1, 9));
		for (const items of poller.executions) {
			const chars = items.reduce((sum, item) => sum + JSON.stringify(item.json).length, 0);
			expect(items.length === 1 || chars <= MAX_POLL_CHARS).toBe(true);
		}
	});
});

describe('every wait of a poll ends by its deadline', () => {
	// n8n's poll budget: the poll stops starting requests at 80 % and cuts what runs at 95 %.
	const BUDGET = 1500;

	it('a manifest request that hangs is cut at the deadline; what was complete is delivered, the rest next poll', async () => {
		await emu.control.publishBulk({ count: 40 });
		await faultAfter('getPublication', 8, {
			kind: 'slow',
			when: 'before',
			delayMs: 20_000,
		});
		const poller = host({ startFrom: 'beginning', maxPerPoll: 1000 }, { budget: BUDGET });
		const started = Date.now();
		await poller.activate();
		expect(Date.now() - started).toBeLessThan(BUDGET + 500);
		expect(emittedIds(poller.executions)).toEqual(range(1, 8));
		await poller.tick();
		expect(emittedIds(poller.executions)).toEqual(range(1, 40));
		// Only the cut request's batch is read again.
		const details = (await detailRequests()).map((request) => request.path.split('/').pop());
		expect(details.filter((id) => id === '9')).toHaveLength(2);
		expect(details.length).toBeLessThanOrEqual(40 + MANIFEST_CONCURRENCY);
	});

	it('a Retry-After longer than the poll has left is not waited for; what was complete is delivered', async () => {
		await emu.control.publishBulk({ count: 20 });
		await faultAfter('getPublication', 8, {
			kind: 'status',
			status: 429,
			code: 'rate_limited',
			retryAfter: 5,
		});
		const poller = host({ startFrom: 'beginning', maxPerPoll: 1000 }, { budget: BUDGET });
		const started = Date.now();
		await poller.activate();
		expect(Date.now() - started).toBeLessThan(BUDGET + 500);
		expect(emittedIds(poller.executions)).toEqual(range(1, 8));
		await poller.tick();
		expect(emittedIds(poller.executions)).toEqual(range(1, 20));
	});

	it('a list request that hangs with nothing complete: the poll returns nothing by its deadline, stores nothing, the next one goes on', async () => {
		await emu.control.publishBulk({ count: 10 });
		const poller = host({ startFrom: 'beginning' }, { budget: BUDGET });
		await poller.activate();
		await publish();
		const stored = poller.stored;
		await faultAfter('listPublications', 0, {
			kind: 'slow',
			when: 'before',
			delayMs: 20_000,
		});
		const started = Date.now();
		const outcome = await poller.tick();
		expect(Date.now() - started).toBeLessThan(BUDGET + 500);
		expect(outcome.kind).toBe('null'); // a poll that ran out of time does not fail (#40)
		expect(poller.stored).toBe(stored);
		await poller.tick();
		expect(emittedIds(poller.executions)).toEqual(range(1, 11));
	});
});
