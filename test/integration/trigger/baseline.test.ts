/**
 * The "now" baseline (the first activation with Start From "now") when the poll's time runs out
 * before it has read the whole overlap below the newest publication, in real n8n poll contexts
 * against the emulator: publications from before the activation are never delivered, and a
 * publication committed after it is never lost.
 */
import { emittedIds, useTrigger } from './helpers';

const { emu, host, publish, faultAfter, listRequestsArrived } = useTrigger();

describe('a "now" baseline cut short by the poll\'s time', () => {
	it('overlap 1,000, slow list pages: the activation fails saying so and stores nothing; the next one starts "now" right', async () => {
		await emu.control.setRereadOverlap(1000);
		await emu.control.publishBulk({ count: 2500 });
		const late = await publish(undefined, undefined, false); // pending at activation
		await emu.control.publishBulk({ count: 499 }); // the newest: 3000
		const parameters = { startFrom: 'now', includeManifest: false };
		// The newest-publication search (limit=1) and the first page are answered at once; while the
		// second page is in the emulator's hands, the poll's time runs out (the clock jumps 50 s
		// ahead: past the 48 s after which a poll of a 60 s budget starts no request, before the
		// 57 s that cut one), so the baseline stops after two of its five pages.
		const probe = host(parameters);
		await emu.control.clearRequests();
		await probe.fetchTestEvent();
		const probes = (await emu.control.requests({ route: 'listPublications' })).length;
		await emu.control.clearRequests();
		await faultAfter('listPublications', probes + 1, {
			kind: 'slow',
			when: 'before',
			delayMs: 300,
		});
		const poller = host(parameters, { budget: 60_000 });
		const realNow = Date.now;
		const activation = poller.activate().then(
			() => undefined,
			(error: Error) => error,
		);
		let failed: Error | undefined;
		try {
			await listRequestsArrived(probes + 2);
			const jump = 50_000;
			Date.now = () => realNow() + jump;
			failed = await activation;
		} finally {
			Date.now = realNow;
		}
		// Before the fix the activation stored the two pages as the baseline, and the next polls
		// delivered ids 2401..3000, all from before the activation, as new.
		expect(failed?.message).toMatch(
			/could not read where "now" is within one poll: of the 1000 ids below the newest publication \(3000\) it had read 2001 to 2400/,
		);
		expect(poller.stored).toBe('{}');
		await emu.control.clearFaults();
		expect(await poller.activate()).toEqual({ kind: 'null' });
		await emu.control.commitPublication(late.id); // committed after the activation
		const after = await publish();
		for (let polls = 0; polls < 3; polls++) await poller.tick();
		expect(emittedIds(poller.executions)).toEqual([late.id, after.id]);
	});
});
