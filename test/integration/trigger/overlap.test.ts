/**
 * The pulling contract in full, in real n8n poll contexts against the emulator: the trigger re-reads
 * the overlap the server announces (not a capped copy), so a late commit anywhere inside it is
 * delivered exactly once (the one integration test of late commits: the pure cursor's tests cover
 * every overlap and interleaving); static data stays small at large overlaps; an overlap above
 * MAX_OVERLAP is refused loudly, losing nothing.
 */
import { MAX_OVERLAP } from '../../../nodes/ImagePack/trigger/state';
import { emittedIds, expectOncePerPublication, range, storedBytes, useTrigger } from './helpers';

const { emu, host, publish } = useTrigger();

/** Publishes `count` for this account and returns their ids. */
async function ours(count: number): Promise<number[]> {
	const { firstId, lastId } = await emu.control.publishBulk({ count });
	return range(firstId, lastId);
}

describe('the overlap the server announces, in full', () => {
	it('overlap 1,000: a publication committed 900 ids below the newest, after a restart, is delivered once', async () => {
		await emu.control.setRereadOverlap(1000);
		const other = await emu.control.createAccount();
		const mine: number[] = [];
		for (let round = 0; round < 3; round++) {
			mine.push(...(await ours(400)));
			await emu.control.publishBulk({ accountId: other.accountId, count: 200 });
		}
		const poller = host({ startFrom: 'beginning', includeManifest: false });
		await poller.activate();
		while ((await poller.tick()).kind === 'emitted');
		const late = await publish(undefined, undefined, false);
		mine.push(late.id, ...(await ours(900 - 50)));
		await emu.control.publishBulk({ accountId: other.accountId, count: 50 });
		while ((await poller.tick()).kind === 'emitted');
		expect(emittedIds(poller.executions)).not.toContain(late.id);
		await emu.control.commitPublication(late.id); // 900 ids under the newest
		await poller.restart();
		while ((await poller.tick()).kind === 'emitted');
		expect(emittedIds(poller.executions)).toContain(late.id);
		expectOncePerPublication(emittedIds(poller.executions), mine);
		expect(storedBytes(poller.stored)).toBeLessThan(16 * 1024);
	});

	it('Start From "now" with overlap 1,000: the activation reads the whole overlap, page after page, as delivered', async () => {
		await emu.control.setRereadOverlap(1000);
		await emu.control.publishBulk({ count: 2400 });
		const poller = host({ startFrom: 'now', includeManifest: false });
		await emu.control.clearRequests();
		await poller.activate();
		const pages = await emu.control.requests({ route: 'listPublications' });
		expect(pages.filter((r) => r.query.limit === '200').length).toBeGreaterThanOrEqual(5);
		await emu.control.repeatPublication(2390); // listed again: the activation read it
		const next = await publish();
		await poller.tick();
		expect(emittedIds(poller.executions)).toEqual([next.id]);
	});

	it(`an overlap above ${MAX_OVERLAP} is refused: the poll fails saying so, delivers and stores nothing; nothing is lost after`, async () => {
		await emu.control.publishBulk({ count: 30 });
		const poller = host({ startFrom: 'beginning', includeManifest: false });
		await poller.activate();
		await emu.control.publishBulk({ count: 10 });
		await emu.control.setRereadOverlap(MAX_OVERLAP + 1);
		const stored = poller.stored;
		const outcome = await poller.tick();
		expect(outcome.kind).toBe('error');
		expect((outcome as { error: Error }).error.message).toMatch(
			new RegExp(`announced reread_overlap ${MAX_OVERLAP + 1}, more than this trigger honours`),
		);
		expect(poller.stored).toBe(stored);
		await emu.control.setRereadOverlap(MAX_OVERLAP);
		await poller.tick();
		expect(emittedIds(poller.executions)).toEqual(range(1, 40));
	});

	it('static data at the documented overlap and at 400 and 1,000, after a long history of two accounts', async () => {
		const sizes: Record<number, number> = {};
		for (const overlap of [50, 400, 1000]) {
			await emu.control.reset();
			await emu.control.setRereadOverlap(overlap);
			const other = await emu.control.createAccount();
			const poller = host({ startFrom: 'beginning', includeManifest: false, maxPerPoll: 1000 });
			await poller.activate();
			for (let round = 0; round < 8; round++) {
				await emu.control.publishBulk({ count: 300 });
				await emu.control.publishBulk({ accountId: other.accountId, count: 150 });
				await poller.tick();
			}
			while ((await poller.tick()).kind === 'emitted');
			expect(emittedIds(poller.executions)).toHaveLength(2400);
			sizes[overlap] = storedBytes(poller.stored);
		}
		expect(sizes[50]).toBeLessThan(16 * 1024);
		expect(sizes[400]).toBeLessThan(16 * 1024);
		expect(sizes[1000]).toBeLessThan(16 * 1024);
	});
});
